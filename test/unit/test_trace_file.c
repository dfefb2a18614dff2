/*
 * test_trace_file.c - the trace file format: every chunk kind round-trips
 * through the file with every codec, and damage (truncation, flipped bits)
 * gives a clear error naming the file and offset, or with salvage exactly
 * the undamaged chunks.
 */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "codec.h"
#include "error.h"
#include "test_util.h"
#include "trace_gen.h"
#include "trace_file.h"

/* ---- fixtures ---------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) { return tu_xorshift(&rng_state); }

/* A plausible run of one thread's records: START, accesses, COMMIT or
 * ABORT, sometimes FALLBACK, with some wild values mixed in. */
static void make_records(struct tf_record *r, uint64_t *truth, size_t n, uint64_t *inst)
{
    uint64_t tsc = 1000 + rnd() % 1000;
    for (size_t i = 0; i < n; i++) {
        unsigned k = (i % 7 == 0) ? TF_EV_START : 1 + (unsigned)(rnd() % (TF_EV_KINDS - 1));
        tsc += 20 + rnd() % 400;
        r[i].tsc = tsc;
        r[i].aux = (uint32_t)(rnd() % 3) | (rnd() % 5 == 0 ? 1u << 12 : 0);
        r[i].kind = (uint8_t)k;
        r[i].reason = (uint8_t)(k == TF_EV_READ || k == TF_EV_WRITE ? 1u << (rnd() % 4) : rnd() % 8);
        r[i].site = (uint16_t)(rnd() % 4);
        r[i].addr = k == TF_EV_START ? ++*inst : (rnd() % 3 == 0 ? rnd() : 0x7f0000001000ull + 8 * (rnd() % 999));
        r[i].value = rnd() % 2 ? rnd() : rnd() % 1000;
        if (k == TF_EV_WSET) { /* what a write set can hold: a word and a byte mask */
            r[i].addr &= ((UINT64_C(1) << 56) - 1) & ~UINT64_C(7);
            r[i].value &= 0xff;
        }
        if (truth)
            truth[i] = tsc - 500 + rnd() % 1000;
    }
}

/* The tf_event a reader must produce for record i. */
static void expect_record(const struct tf_event *e, const struct tf_record *r, const uint64_t *truth,
                          uint32_t thread, uint64_t seq, uint64_t instance)
{
    assert_int_equal(e->ts, r->tsc);
    assert_int_equal(e->kind, r->kind);
    assert_int_equal(e->reason, r->reason);
    assert_int_equal(e->site, r->site);
    assert_int_equal(e->addr, r->addr);
    assert_int_equal(e->value, r->value);
    assert_int_equal(e->cpu, tf_aux_cpu(r->aux));
    assert_int_equal(e->thread, thread);
    assert_int_equal(e->seq, seq);
    assert_int_equal(e->instance, instance);
    assert_int_equal(e->truth, truth ? truth[0] : 0);
}

static void make_events(struct tf_event *e, size_t n, int merged)
{
    uint64_t ts = 5000, seq[4] = { 0, 10, 20, 30 }, inst[4] = { 0, 100, 200, 300 };
    for (size_t i = 0; i < n; i++) {
        uint32_t t = merged ? 1 + (uint32_t)(rnd() % 3) : 2;
        memset(&e[i], 0, sizeof e[i]);
        e[i].kind = (uint8_t)(1 + rnd() % (TF_EV_KINDS - 1));
        if (e[i].kind == TF_EV_START)
            inst[t] += 1 + rnd() % 2;
        ts += rnd() % 100;
        e[i].ts = ts;
        e[i].truth = rnd() % 2 ? ts + rnd() % 50 : 0;
        e[i].addr = e[i].kind == TF_EV_START ? inst[t] : rnd();
        e[i].value = rnd() % 100;
        e[i].instance = inst[t];
        e[i].seq = seq[t]++;
        e[i].thread = t;
        e[i].site = (uint32_t)(rnd() % 70000);
        e[i].cpu = (uint16_t)(rnd() % 5000);
        e[i].reason = (uint8_t)rnd();
    }
}

static void assert_events_equal(const struct tf_event *a, const struct tf_event *b, size_t n)
{
    assert_int_equal(tg_first_event_diff(a, b, n), n);
}

static struct tf_header make_header(void)
{
    struct tf_header h;
    memset(&h, 0, sizeof h);
    h.version = TF_VERSION;
    h.flags = TF_HDR_INJECTED;
    h.tsc_hz = 2994373000ull;
    h.ref_clock = 1;
    h.ncpus = 2;
    h.pid = 4242;
    h.events_level = 2;
    h.stripes_log2 = 17;
    h.stripe_shift = 6;
    h.wall_start_ns = -12345;
    snprintf(h.cmdline, sizeof h.cmdline, "tmbench --threads 2 rbtree");
    return h;
}

/* A file of `nchunks` EVENTS chunks of `per` records (threads alternate),
 * then an END chunk. Offsets of every chunk go to offs[] (nchunks + 1 of
 * them, plus the file size). */
static void write_event_file_with(const char *path, int codec, size_t nchunks, size_t per, uint64_t *offs,
                                  unsigned flags);
/* write_event_file_with's codec: every third chunk LZ4, the others stored. */
#define CODEC_MIXED (-1)

static void write_event_file(const char *path, int codec, size_t nchunks, size_t per, uint64_t *offs)
{
    write_event_file_with(path, codec, nchunks, per, offs, 0);
}

/* The same with tf_create's `flags`. */
static void write_event_file_with(const char *path, int codec, size_t nchunks, size_t per, uint64_t *offs,
                                  unsigned flags)
{
    struct tf_header h = make_header();
    struct tf_writer *w = tf_create(path, &h, flags);
    assert_non_null(w);
    struct tf_record *r = malloc(per * sizeof *r);
    assert_non_null(r);
    uint64_t inst = 0;
    for (size_t c = 0; c < nchunks; c++) {
        make_records(r, NULL, per, &inst);
        offs[c] = tf_writer_bytes(w);
        int cc = codec != CODEC_MIXED ? codec : c % 3 == 2 ? TF_CODEC_LZ4 : TF_CODEC_NONE;
        assert_int_equal(tg_write_records(w, 1 + (uint32_t)(c % 2), c * per, inst, r, NULL, per, cc, 1), 0);
    }
    struct tf_thread_info ti[2] = { { 1, 11, 100, 0, 0, 0 }, { 2, 12, 100, 3, 0, 0 } };
    offs[nchunks] = tf_writer_bytes(w);
    assert_int_equal(tf_write_end(w, ti, 2, 0, 0), 0);
    offs[nchunks + 1] = tf_writer_bytes(w);
    assert_int_equal(tf_finish(w, 0), 0);
    free(r);
}

/* Reads a file to its end; returns the events seen and sets *chunks and
 * *rc (the last tf_next result). */
static size_t read_all(const char *path, unsigned flags, size_t *chunks, int *rc, uint64_t *skipped)
{
    struct tf_reader *rd = tf_open(path, flags);
    if (!rd) {
        *rc = -2;
        *chunks = 0;
        return 0;
    }
    struct tf_chunk c;
    size_t ev = 0, n = 0;
    while ((*rc = tf_next(rd, &c)) == 1) {
        n++;
        if (c.kind == TF_CHUNK_EVENTS)
            ev += c.count;
    }
    if (skipped)
        *skipped = tf_reader_skipped(rd);
    tf_close(rd);
    *chunks = n;
    return ev;
}

static void copy_prefix(const char *from, const char *to, size_t len, long flip_at, unsigned bit)
{
    size_t n;
    char *buf = tu_read_file(from, &n);
    assert_non_null(buf);
    assert_true(len <= n);
    if (flip_at >= 0)
        buf[flip_at] ^= (char)(1u << bit);
    FILE *f = fopen(to, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    fclose(f);
    free(buf);
}

static void assert_msg_names(const char *path, uint64_t off, const char *what)
{
    const char *m = error_get();
    char want[64];
    assert_non_null(strstr(m, path));
    snprintf(want, sizeof want, "offset %llu:", (unsigned long long)off);
    if (!strstr(m, want) || !strstr(m, what))
        fail_msg("message '%s' lacks '%s' or '%s'", m, want, what);
}

/* The damaged copy `bad` reads k good chunks, then fails naming `off` and
 * `what`; with salvage it reads to the end, skipping one region, with
 * `events` events in `chunks` chunks. */
static void expect_damage(const char *bad, int k, uint64_t off, const char *what, size_t events,
                          size_t chunks)
{
    struct tf_reader *rd = tf_open(bad, 0);
    assert_non_null(rd);
    struct tf_chunk c;
    for (int i = 0; i < k; i++)
        assert_int_equal(tf_next(rd, &c), 1);
    assert_int_equal(tf_next(rd, &c), -1);
    assert_msg_names(bad, off, what);
    tf_close(rd);

    size_t got_chunks;
    int rc;
    uint64_t skipped;
    size_t ev = read_all(bad, TF_SALVAGE, &got_chunks, &rc, &skipped);
    assert_int_equal(rc, 0);
    assert_int_equal(ev, events);
    assert_int_equal(got_chunks, chunks);
    assert_int_equal(skipped, 1);
}

/* ---- round trips ------------------------------------------------------- */

static void round_trip_all_kinds(int codec)
{
    const char *path = tu_path("all.bin");
    struct tf_header h = make_header();
    struct tf_writer *w = tf_create(path, &h, TF_WRITE_ATOMIC);
    assert_non_null(w);

    struct tf_site sites[3] = { { 1, 10, "a.c", "insert" }, { 2, -1, "", "" }, { 77, 99999, "dir/b.c", "x" } };
    memset(sites[2].file, 'f', 255);
    sites[2].file[255] = '\0';
    struct tf_thread_info threads[2] = { { 1, 100, 0, 0, 0, 0 }, { 2, 101, 0, 0, 0x7f0000001000, 0x7f0000801000 } };
    struct tf_skew skews[2] = { { 0, 0, 0.0, -1, 0.0 }, { 1, -5000000, 12.5, 250, -3.25 } };
    struct tf_sample samples[300];
    for (size_t i = 0; i < 300; i++)
        samples[i] = (struct tf_sample){ rnd(), rnd(), rnd(), (uint32_t)rnd(), (uint16_t)rnd(),
                                         (uint8_t)(i % 3), 0, (uint32_t)(i % 4) };
    static struct tf_cpu_model models[2];
    memset(models, 0, sizeof models);
    models[0] = (struct tf_cpu_model){ 0, 500, 3, 2, 1.5, -20.0, 3.25, 11.0, { { 0, 0.33, 7.0 } } };
    models[0].seg[1] = (struct tf_model_segment){ 123456789, 0.334, -9.5 };
    models[1].cpu = 1;
    models[1].nseg = 256;
    for (int k = 0; k < 256; k++)
        models[1].seg[k] = (struct tf_model_segment){ (uint64_t)k * 1000, 1.0 / (k + 1), k * 2.0 };

    enum { N1 = 5000, N2 = 777, NE = 3000 };
    static struct tf_record r1[N1], r2[N2];
    static uint64_t t1[N1];
    uint64_t inst = 40;
    make_records(r1, t1, N1, &inst);
    uint64_t inst2 = 7;
    make_records(r2, NULL, N2, &inst2);
    static struct tf_event merged[NE], single[NE];
    make_events(merged, NE, 1);
    make_events(single, NE, 0);

    assert_int_equal(tf_write_sites(w, sites, 3), 0);
    assert_int_equal(tf_write_threads(w, threads, 2), 0);
    assert_int_equal(tf_write_skews(w, skews, 2), 0);
    assert_int_equal(tf_write_samples(w, samples, 300), 0);
    assert_int_equal(tg_write_records(w, 1, 1000, 40, r1, t1, N1, codec, 1), 0);
    assert_int_equal(tg_write_records(w, 2, 0, 7, r2, NULL, N2, codec, 9), 0);
    assert_int_equal(tg_write_events(w, 0, merged, NE, codec, 1), 0);
    assert_int_equal(tg_write_events(w, 2, single, NE, codec, 1), 0);
    assert_int_equal(tf_write_models(w, models, 2), 0);
    threads[0].events = N1;
    threads[1].dropped = 9;
    assert_int_equal(tf_write_end(w, threads, 2, 3, 0), 0);
    assert_int_equal(tf_finish(w, 1), 0);

    struct tf_reader *rd = tf_open(path, 0);
    assert_non_null(rd);
    const struct tf_header *rh = tf_reader_header(rd);
    assert_int_equal(rh->version, TF_VERSION);
    assert_int_equal(rh->flags, h.flags);
    assert_int_equal(rh->tsc_hz, h.tsc_hz);
    assert_int_equal(rh->ref_clock, h.ref_clock);
    assert_int_equal(rh->ncpus, h.ncpus);
    assert_int_equal(rh->pid, h.pid);
    assert_int_equal(rh->events_level, h.events_level);
    assert_int_equal(rh->stripes_log2, h.stripes_log2);
    assert_int_equal(rh->stripe_shift, h.stripe_shift);
    assert_int_equal(rh->wall_start_ns, h.wall_start_ns);
    assert_string_equal(rh->cmdline, h.cmdline);

    struct tf_chunk c;
    uint64_t events_off = 0;
    int kinds_seen = 0;
    for (int step = 0; step < 10; step++) {
        assert_int_equal(tf_next(rd, &c), 1);
        kinds_seen |= 1 << c.kind;
        /* the record streams (steps 4 and 5) compress well; the chunks of
         * random events are stored as is when the codec cannot shrink them */
        if (codec != TF_CODEC_NONE && (step == 4 || step == 5) && codec_available(codec))
            assert_int_equal(c.codec, codec);
        switch (step) {
        case 0:
            assert_int_equal(c.kind, TF_CHUNK_META_SITES);
            assert_int_equal(c.count, 3);
            for (int i = 0; i < 3; i++) {
                assert_int_equal(c.sites[i].id, sites[i].id);
                assert_int_equal(c.sites[i].line, sites[i].line);
                assert_string_equal(c.sites[i].file, sites[i].file);
                assert_string_equal(c.sites[i].label, sites[i].label);
            }
            break;
        case 1:
            assert_int_equal(c.kind, TF_CHUNK_META_THREADS);
            assert_int_equal(c.count, 2);
            assert_int_equal(c.threads[1].id, 2);
            assert_int_equal(c.threads[1].os_tid, 101);
            /* each thread's stack, so that tools tell its words from the heap */
            assert_int_equal(c.threads[0].stack_hi, 0);
            assert_int_equal(c.threads[1].stack_lo, 0x7f0000001000);
            assert_int_equal(c.threads[1].stack_hi, 0x7f0000801000);
            break;
        case 2:
            assert_int_equal(c.kind, TF_CHUNK_META_SKEW);
            assert_int_equal(c.count, 2);
            assert_int_equal(c.skews[1].cpu, 1);
            assert_int_equal(c.skews[1].offset_ns, -5000000);
            assert_true(c.skews[1].drift_ppm == 12.5);
            assert_int_equal(c.skews[1].change_ms, 250);
            assert_true(c.skews[1].drift2_ppm == -3.25);
            assert_int_equal(c.skews[0].change_ms, -1);
            break;
        case 3:
            assert_int_equal(c.kind, TF_CHUNK_SAMPLES);
            assert_int_equal(c.count, 300);
            for (int i = 0; i < 300; i++) {
                assert_int_equal(c.samples[i].tsc, samples[i].tsc);
                assert_int_equal(c.samples[i].ref_ns, samples[i].ref_ns);
                assert_int_equal(c.samples[i].truth_tsc, samples[i].truth_tsc);
                assert_int_equal(c.samples[i].width, samples[i].width);
                assert_int_equal(c.samples[i].cpu, samples[i].cpu);
                assert_int_equal(c.samples[i].phase, samples[i].phase);
                assert_int_equal(c.samples[i].thread, samples[i].thread);
            }
            break;
        case 4: {
            assert_int_equal(c.kind, TF_CHUNK_EVENTS);
            assert_int_equal(c.thread, 1);
            assert_int_equal(c.count, N1);
            events_off = c.offset;
            uint64_t cur = 40;
            for (size_t i = 0; i < N1; i++) {
                if (r1[i].kind == TF_EV_START)
                    cur = r1[i].addr;
                expect_record(&c.events[i], &r1[i], &t1[i], 1, 1000 + i, cur);
            }
            break;
        }
        case 5: {
            assert_int_equal(c.thread, 2);
            assert_int_equal(c.count, N2);
            uint64_t cur = 7;
            for (size_t i = 0; i < N2; i++) {
                if (r2[i].kind == TF_EV_START)
                    cur = r2[i].addr;
                expect_record(&c.events[i], &r2[i], NULL, 2, i, cur);
            }
            break;
        }
        case 6:
            assert_int_equal(c.kind, TF_CHUNK_EVENTS);
            assert_int_equal(c.thread, 0);
            assert_int_equal(c.count, NE);
            assert_events_equal(c.events, merged, NE);
            break;
        case 7:
            assert_int_equal(c.thread, 2);
            assert_events_equal(c.events, single, NE);
            break;
        case 8:
            assert_int_equal(c.kind, TF_CHUNK_MODEL);
            assert_int_equal(c.count, 2);
            assert_int_equal(c.models[0].used, 500);
            assert_int_equal(c.models[0].rejected, 3);
            assert_int_equal(c.models[0].nseg, 2);
            assert_true(c.models[0].seg[1].a == 0.334 && c.models[0].seg[1].b == -9.5);
            assert_int_equal(c.models[0].seg[1].tsc_from, 123456789);
            assert_true(c.models[0].rms_ns == 3.25 && c.models[0].max_ns == 11.0);
            assert_int_equal(c.models[1].nseg, 256);
            for (int k = 0; k < 256; k++)
                assert_true(c.models[1].seg[k].a == 1.0 / (k + 1));
            break;
        case 9:
            assert_int_equal(c.kind, TF_CHUNK_END);
            assert_int_equal(c.writer_errors, 3);
            assert_int_equal(c.threads[0].events, N1);
            assert_int_equal(c.threads[1].dropped, 9);
            break;
        }
    }
    assert_int_equal(kinds_seen, 0xfe); /* kinds 1..7 */
    assert_int_equal(tf_next(rd, &c), 0);
    assert_int_equal(tf_reader_skipped(rd), 0);

    /* Random access gives the same chunk again. */
    assert_int_equal(tf_read_at(rd, events_off, &c), 1);
    assert_int_equal(c.count, N1);
    assert_int_equal(c.events[N1 - 1].ts, r1[N1 - 1].tsc);
    tf_close(rd);
}

static void test_every_chunk_kind_round_trips_uncompressed(void **s)
{
    (void)s;
    round_trip_all_kinds(TF_CODEC_NONE);
}

static void test_every_chunk_kind_round_trips_with_zlib(void **s)
{
    (void)s;
    round_trip_all_kinds(TF_CODEC_ZLIB);
}

static void test_every_chunk_kind_round_trips_with_lz4(void **s)
{
    (void)s;
    round_trip_all_kinds(TF_CODEC_LZ4); /* falls back to zlib in a build without liblz4 */
}

static void test_long_runs_are_split_and_keep_seq_and_instance(void **s)
{
    (void)s;
    const char *path = tu_path("long.bin");
    size_t n = 2 * TF_SLOTS_PIECE + 1234;
    struct tf_record *r = malloc(n * sizeof *r);
    assert_non_null(r);
    uint64_t inst = 0;
    make_records(r, NULL, n, &inst);
    r[n - 1].kind = TF_EV_COMMIT;
    /* not STARTs: the instance of each piece's first record comes from the piece before */
    r[TF_SLOTS_PIECE].kind = TF_EV_READ;
    r[2 * TF_SLOTS_PIECE].kind = TF_EV_READ;
    struct tf_header h = make_header();
    struct tf_writer *w = tf_create(path, &h, 0);
    assert_non_null(w);
    assert_int_equal(tg_write_records(w, 3, 5, 0, r, NULL, n, TF_CODEC_LZ4, 1), 0);
    assert_int_equal(tf_finish(w, 0), 0);
    struct tf_reader *rd = tf_open(path, 0);
    assert_non_null(rd);
    struct tf_chunk c;
    size_t seen = 0, chunks = 0;
    uint64_t cur = 0;
    while (tf_next(rd, &c) == 1) {
        chunks++;
        for (size_t i = 0; i < c.count; i++, seen++) {
            if (r[seen].kind == TF_EV_START)
                cur = r[seen].addr;
            expect_record(&c.events[i], &r[seen], NULL, 3, 5 + seen, cur);
        }
    }
    assert_int_equal(chunks, 3);
    assert_int_equal(seen, n);
    tf_close(rd);
    free(r);
}

/* A write set in runs takes a few slots for thousands of words: a short
 * stream of them expands to many more records than it has slots, and the
 * writer's buffer, sized for the records a piece may hold, must hold them
 * all (under ASan an undersized buffer is an overflow; without, a crash or
 * damaged records). */
static void test_a_short_stream_of_long_write_set_runs_fits_the_writers_buffer(void **s)
{
    (void)s;
    enum { SETS = 8, PER = 3 }; /* a full WSET record (two slots), its one entry (one slot) */
    const char *path = tu_path("runs.bin");
    struct tf_slot sl[SETS * PER];
    memset(sl, 0, sizeof sl);
    for (size_t k = 0; k < SETS; k++) {
        struct tf_record h = { .tsc = 1000 + k, .kind = TF_EV_WSET, .site = 1, .addr = TF_WSET_MAX, .value = 1 };
        memcpy(&sl[k * PER], &h, sizeof h);
        uint64_t entry = tf_wset_pack_run(0x10000 + k * 0x100000, 0xff, TF_WSET_MAX - 1);
        memcpy(&sl[k * PER + 2], &entry, sizeof entry);
    }
    struct tf_header h = make_header();
    struct tf_writer *w = tf_create(path, &h, 0);
    assert_non_null(w);
    struct tf_slot_stream ss = { .s = sl, .left = SETS * PER, .seq = 1 };
    assert_int_equal(tf_write_slots(w, 2, &ss, TF_CODEC_NONE, 1), 0);
    assert_int_equal(tf_finish(w, 0), 0);
    struct tf_reader *rd = tf_open(path, 0);
    assert_non_null(rd);
    struct tf_chunk c;
    size_t seen = 0;
    while (tf_next(rd, &c) == 1) {
        for (size_t i = 0; i < c.count; i++, seen++) {
            size_t set = seen / TF_WSET_MAX, word = seen % TF_WSET_MAX;
            assert_int_equal(c.events[i].kind, TF_EV_WSET);
            assert_int_equal(c.events[i].ts, 1000 + set);
            assert_int_equal(c.events[i].addr, 0x10000 + set * 0x100000 + 8 * word);
            assert_int_equal(c.events[i].value, 0xff);
        }
    }
    assert_int_equal(seen, (size_t)SETS * TF_WSET_MAX);
    tf_close(rd);
}

/* The library's writer stores metadata chunks as they are, but the format
 * lets any chunk be compressed: a SAMPLES chunk rewritten with zlib reads
 * as the samples it holds. */
static void test_a_compressed_metadata_chunk_reads_as_the_records_it_holds(void **s)
{
    (void)s;
    enum { NS = 200, CH = 40 /* the chunk header's bytes */ };
    const char *path = tu_path("meta_z.bin");
    struct tf_header h = make_header();
    struct tf_writer *w = tf_create(path, &h, 0);
    assert_non_null(w);
    struct tf_sample smp[NS];
    for (uint32_t i = 0; i < NS; i++)
        smp[i] = (struct tf_sample){ 1000 + i, 5000 + 2 * i, 1000 + i, 30, (uint16_t)(i % 2), TF_PHASE_PRE, 0, 1 };
    uint64_t at = tf_writer_bytes(w);
    assert_int_equal(tf_write_samples(w, smp, NS), 0);
    assert_int_equal(tf_finish(w, 0), 0);
    size_t n;
    unsigned char *b = (unsigned char *)tu_read_file(path, &n);
    assert_non_null(b);
    assert_int_equal(b[at + 5], TF_CODEC_NONE);
    size_t raw = codec_get_u32(b + at + 16), cap = codec_compress_bound(TF_CODEC_ZLIB, raw);
    unsigned char *z = malloc(cap);
    assert_non_null(z);
    size_t zn = codec_compress(TF_CODEC_ZLIB, 6, b + at + CH, raw, z, cap);
    assert_true(zn > 0 && zn < raw);
    b[at + 5] = TF_CODEC_ZLIB;
    codec_put_u32(b + at + 20, (uint32_t)zn);
    codec_put_u32(b + at + 32, codec_crc32(z, zn));
    codec_put_u32(b + at + 36, codec_crc32(b + at, 36));
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, at + CH, f), at + CH);
    assert_int_equal(fwrite(z, 1, zn, f), zn);
    assert_int_equal(fwrite(b + at + CH + raw, 1, n - at - CH - raw, f), n - at - CH - raw);
    fclose(f);
    free(b);
    free(z);
    struct tf_reader *rd = tf_open(path, 0);
    assert_non_null(rd);
    struct tf_chunk c;
    assert_int_equal(tf_next(rd, &c), 1);
    assert_int_equal(c.kind, TF_CHUNK_SAMPLES);
    assert_int_equal(c.codec, TF_CODEC_ZLIB);
    assert_int_equal(c.count, NS);
    for (size_t i = 0; i < NS; i++) {
        assert_int_equal(c.samples[i].tsc, smp[i].tsc);
        assert_int_equal(c.samples[i].ref_ns, smp[i].ref_ns);
        assert_int_equal(c.samples[i].cpu, smp[i].cpu);
        assert_int_equal(c.samples[i].thread, smp[i].thread);
    }
    assert_int_equal(tf_next(rd, &c), 0);
    tf_close(rd);
}

static void test_skip_events_gives_counts_without_payloads(void **s)
{
    (void)s;
    const char *path = tu_path("skip.bin");
    uint64_t offs[8];
    write_event_file(path, TF_CODEC_ZLIB, 5, 300, offs);
    struct tf_reader *rd = tf_open(path, TF_SKIP_EVENTS);
    assert_non_null(rd);
    struct tf_chunk c;
    for (int i = 0; i < 5; i++) {
        assert_int_equal(tf_next(rd, &c), 1);
        assert_int_equal(c.kind, TF_CHUNK_EVENTS);
        assert_int_equal(c.count, 300);
        assert_int_equal(c.offset, offs[i]);
        assert_null(c.events);
    }
    assert_int_equal(tf_next(rd, &c), 1);
    assert_int_equal(c.kind, TF_CHUNK_END);
    assert_int_equal(c.threads[1].dropped, 3);
    tf_close(rd);
}

/* ---- damage ---------------------------------------------------------------- */

static void test_truncation_at_a_chunk_boundary_reads_every_complete_chunk(void **s)
{
    (void)s;
    const char *path = tu_path("cut.bin"), *cut = tu_path("cut-part.bin");
    uint64_t offs[8];
    write_event_file(path, TF_CODEC_LZ4, 6, 200, offs);
    for (int k = 0; k <= 7; k++) {
        copy_prefix(path, cut, offs[k], -1, 0);
        size_t chunks;
        int rc;
        size_t ev = read_all(cut, 0, &chunks, &rc, NULL);
        assert_int_equal(rc, 0);
        assert_int_equal(chunks, (size_t)k);
        assert_int_equal(ev, (size_t)(k < 6 ? k : 6) * 200);
    }
}

static void test_torn_tail_is_an_error_or_skipped_bytes_with_salvage(void **s)
{
    (void)s;
    const char *path = tu_path("torn.bin"), *cut = tu_path("torn-part.bin");
    uint64_t offs[8];
    write_event_file(path, TF_CODEC_ZLIB, 6, 200, offs);
    for (int trial = 0; trial < 60; trial++) {
        int k = (int)(rnd() % 6); /* tear inside chunk k */
        uint64_t len = offs[k] + 1 + rnd() % (offs[k + 1] - offs[k] - 1);
        copy_prefix(path, cut, len, -1, 0);
        expect_damage(cut, k, offs[k], "truncated chunk", (size_t)k * 200, (size_t)k);
        struct tf_reader *rd = tf_open(cut, TF_SALVAGE);
        assert_non_null(rd);
        struct tf_chunk c;
        while (tf_next(rd, &c) == 1)
            ;
        assert_int_equal(tf_reader_skipped_bytes(rd), len - offs[k]);
        tf_close(rd);
    }
}

static void test_truncated_or_foreign_header_is_refused(void **s)
{
    (void)s;
    const char *path = tu_path("hdr.bin"), *cut = tu_path("hdr-part.bin");
    uint64_t offs[4];
    write_event_file(path, TF_CODEC_NONE, 1, 10, offs);
    copy_prefix(path, cut, 100, -1, 0);
    assert_null(tf_open(cut, 0));
    assert_msg_names(cut, 0, "truncated header");
    copy_prefix(path, cut, 5, -1, 0);
    assert_null(tf_open(cut, TF_SALVAGE));
    assert_msg_names(cut, 0, "not a trace file (bad magic)");
    assert_null(tf_open(tu_path("missing.bin"), 0));
    assert_non_null(strstr(error_get(), "missing.bin"));
}

static void test_newer_format_version_is_refused(void **s)
{
    (void)s;
    const char *path = tu_path("ver.bin"), *bumped = tu_path("ver2.bin");
    uint64_t offs[4];
    write_event_file(path, TF_CODEC_NONE, 1, 10, offs);
    size_t n;
    char *buf = tu_read_file(path, &n);
    assert_non_null(buf);
    buf[8] = TF_VERSION + 1; /* little-endian u32 at offset 8 */
    FILE *f = fopen(bumped, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, n, f), n);
    fclose(f);
    free(buf);
    assert_null(tf_open(bumped, TF_SALVAGE));
    char want[200];
    snprintf(want, sizeof want, "%s: format version %d is newer than this tool's %d", bumped,
             TF_VERSION + 1, TF_VERSION);
    assert_string_equal(error_get(), want);
}

/* An END chunk says whether a signal terminated the program: with a signal
 * it carries TF_END_SIGNAL and a 16-byte fixed part; without one it keeps
 * the bytes every earlier reader knows (flags 0, 8-byte fixed part). An END
 * flag this reader does not know is refused, not guessed at. */
static void test_an_end_chunk_records_the_terminating_signal_and_a_plain_end_keeps_its_bytes(void **s)
{
    (void)s;
    struct tf_thread_info ti[2] = { { 1, 101, 10, 0, 0, 0 }, { 2, 102, 20, 4, 0, 0 } };
    for (uint32_t sig = 0; sig <= 11; sig += 11) {
        const char *path = tu_path(sig ? "end_sig.bin" : "end_plain.bin");
        struct tf_header h = make_header();
        struct tf_writer *w = tf_create(path, &h, 0);
        assert_non_null(w);
        assert_int_equal(tf_write_end(w, ti, 2, 5, sig), 0);
        assert_int_equal(tf_finish(w, 0), 0);
        size_t n;
        unsigned char *b = (unsigned char *)tu_read_file(path, &n);
        assert_non_null(b);
        const size_t at = n - (sig ? 16 : 8) - 2 * 24 - 40; /* the END chunk's header */
        assert_int_equal(codec_get_u16(b + at + 6), sig ? TF_END_SIGNAL : 0);
        assert_int_equal(codec_get_u32(b + at + 16), (sig ? 16 : 8) + 2 * 24);
        struct tf_reader *rd = tf_open(path, 0);
        assert_non_null(rd);
        struct tf_chunk c;
        assert_int_equal(tf_next(rd, &c), 1);
        assert_int_equal(c.kind, TF_CHUNK_END);
        assert_int_equal(c.end_signal, sig);
        assert_int_equal(c.writer_errors, 5);
        assert_int_equal(c.threads[1].events, 20);
        assert_int_equal(c.threads[1].dropped, 4);
        tf_close(rd);
        /* A flag from a later writer: the header's CRC made right again. */
        b[at + 6] |= 2;
        codec_put_u32(b + at + 36, codec_crc32(b + at, 36));
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(b, 1, n, f), n);
        fclose(f);
        free(b);
        rd = tf_open(path, 0);
        assert_non_null(rd);
        assert_int_equal(tf_next(rd, &c), -1);
        assert_non_null(strstr(error_get(), "unknown END flags"));
        tf_close(rd);
    }
}

/* Version 3 gave the stripe width a byte of its own (offset 45, beside the
 * stripe count's log2); a version 2 file has none there, and its stripes
 * were 8-byte words. */
static void test_a_version_2_header_reads_as_word_stripes_and_version_3_keeps_its_width(void **s)
{
    (void)s;
    for (uint32_t version = 2; version <= 3; version++) {
        const char *path = tu_path(version == 2 ? "v2.bin" : "v3.bin");
        struct tf_header h = make_header();
        h.version = version;
        struct tf_writer *w = tf_create(path, &h, 0);
        assert_non_null(w);
        assert_int_equal(tf_finish(w, 0), 0);
        size_t n;
        unsigned char *buf = (unsigned char *)tu_read_file(path, &n);
        assert_non_null(buf);
        assert_int_equal(buf[44], 17);
        assert_int_equal(buf[45], version == 2 ? 0 : 6);
        free(buf);
        struct tf_reader *rd = tf_open(path, 0);
        assert_non_null(rd);
        const struct tf_header *rh = tf_reader_header(rd);
        assert_int_equal(rh->version, version);
        assert_int_equal(rh->stripes_log2, 17);
        assert_int_equal(rh->stripe_shift, version == 2 ? TF_STRIPE_SHIFT_V2 : 6);
        tf_close(rd);
    }
}

static void test_flipped_bit_in_file_header_is_detected(void **s)
{
    (void)s;
    const char *path = tu_path("fh.bin"), *bad = tu_path("fh-bad.bin");
    uint64_t offs[8];
    write_event_file(path, TF_CODEC_LZ4, 3, 100, offs);
    for (long at = 0; at < 576; at += 7) {
        copy_prefix(path, bad, offs[4], at, (unsigned)(at % 8));
        struct tf_reader *rd = tf_open(bad, 0);
        assert_null(rd);
        assert_non_null(strstr(error_get(), bad));
        /* Salvage keeps every chunk when the header is merely damaged. */
        size_t chunks;
        int rc;
        size_t ev = read_all(bad, TF_SALVAGE, &chunks, &rc, NULL);
        if (at >= 12) {
            assert_int_equal(rc, 0);
            assert_int_equal(ev, 300);
        }
    }
}

static void test_flipped_bit_in_chunk_header_skips_exactly_that_chunk(void **s)
{
    (void)s;
    const char *path = tu_path("ch.bin"), *bad = tu_path("ch-bad.bin");
    uint64_t offs[8];
    write_event_file(path, TF_CODEC_ZLIB, 5, 150, offs);
    for (int k = 0; k < 5; k++) {
        for (int byte = 0; byte < 40; byte += 3) {
            copy_prefix(path, bad, offs[6], (long)(offs[k] + (uint64_t)byte), (unsigned)(byte % 8));
            expect_damage(bad, k, offs[k], "chunk", 4 * 150, 5); /* 4 EVENTS + END */
        }
    }
}

static void test_flipped_bit_in_payload_is_a_crc_mismatch(void **s)
{
    (void)s;
    const char *path = tu_path("pl.bin"), *bad = tu_path("pl-bad.bin");
    uint64_t offs[8];
    for (int codec = 0; codec < 3; codec++) {
        write_event_file(path, codec, 5, 150, offs);
        for (int trial = 0; trial < 40; trial++) {
            int k = (int)(rnd() % 6); /* 5 = the END chunk */
            uint64_t at = offs[k] + 40 + rnd() % (offs[k + 1] - offs[k] - 40);
            copy_prefix(path, bad, offs[6], (long)at, (unsigned)(rnd() % 8));
            expect_damage(bad, k, offs[k], "chunk CRC mismatch", (size_t)(k < 5 ? 4 : 5) * 150, 5);
        }
    }
}

static void test_garbage_between_chunks_is_skipped_by_salvage(void **s)
{
    (void)s;
    const char *path = tu_path("gb.bin"), *bad = tu_path("gb-bad.bin");
    uint64_t offs[8];
    write_event_file(path, TF_CODEC_NONE, 4, 100, offs);
    size_t n;
    char *buf = tu_read_file(path, &n);
    assert_non_null(buf);
    FILE *f = fopen(bad, "wb");
    assert_non_null(f);
    fwrite(buf, 1, offs[2], f);
    char junk[333];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = i % 50 == 0 ? 'C' : (char)rnd(); /* with false starts of the magic */
    memcpy(junk + 100, "CHNK", 4);
    fwrite(junk, 1, sizeof junk, f);
    fwrite(buf + offs[2], 1, n - offs[2], f);
    fclose(f);
    free(buf);
    size_t chunks;
    int rc;
    uint64_t skipped;
    assert_int_equal(read_all(bad, TF_SALVAGE, &chunks, &rc, &skipped), 400);
    assert_int_equal(rc, 0);
    assert_int_equal(skipped, 1);
    read_all(bad, 0, &chunks, &rc, NULL);
    assert_int_equal(rc, -1);
    assert_int_equal(chunks, 2);
    assert_msg_names(bad, offs[2], "bad chunk magic");
}

static void test_random_damage_never_crashes(void **s)
{
    (void)s;
    const char *path = tu_path("rd.bin"), *bad = tu_path("rd-bad.bin");
    uint64_t offs[8];
    write_event_file(path, TF_CODEC_LZ4, 5, 100, offs);
    size_t n;
    char *orig = tu_read_file(path, &n);
    assert_non_null(orig);
    for (int trial = 0; trial < 200; trial++) {
        char *buf = malloc(n);
        assert_non_null(buf);
        memcpy(buf, orig, n);
        int flips = 1 + (int)(rnd() % 20);
        for (int i = 0; i < flips; i++)
            buf[576 + rnd() % (n - 576)] = (char)rnd();
        size_t len = 576 + rnd() % (n - 575);
        FILE *f = fopen(bad, "wb");
        assert_non_null(f);
        fwrite(buf, 1, len, f);
        fclose(f);
        free(buf);
        size_t chunks;
        int rc;
        size_t ev = read_all(bad, TF_SALVAGE, &chunks, &rc, NULL);
        assert_int_equal(rc, 0);
        assert_true(ev <= 500);
        read_all(bad, 0, &chunks, &rc, NULL);
        assert_true(rc == 0 || rc == -1);
    }
    free(orig);
}

/* ---- writer ------------------------------------------------------------------ */

static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static void test_atomic_writer_leaves_no_temporary_behind(void **s)
{
    (void)s;
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tu_path("atomic"));
    assert_int_equal(mkdir(dir, 0755), 0);
    char path[600];
    snprintf(path, sizeof path, "%s/out.bin", dir);
    struct tf_header h = make_header();

    struct tf_writer *w = tf_create(path, &h, TF_WRITE_ATOMIC);
    assert_non_null(w);
    struct tf_thread_info t = { 1, 2, 3, 4, 0, 0 };
    assert_int_equal(tf_write_threads(w, &t, 1), 0);
    assert_int_equal(dir_entries(dir), 1); /* the temporary */
    assert_int_equal(access(path, F_OK), -1);
    tf_abandon(w);
    assert_int_equal(dir_entries(dir), 0);

    w = tf_create(path, &h, TF_WRITE_ATOMIC);
    assert_non_null(w);
    assert_int_equal(tf_write_threads(w, &t, 1), 0);
    uint64_t bytes = tf_writer_bytes(w);
    assert_int_equal(tf_finish(w, 1), 0);
    assert_int_equal(dir_entries(dir), 1);
    size_t n;
    char *buf = tu_read_file(path, &n);
    assert_non_null(buf);
    assert_int_equal(n, bytes);
    free(buf);
}

static void test_writer_refuses_invalid_records_and_unwritable_paths(void **s)
{
    (void)s;
    struct tf_header h = make_header();
    assert_null(tf_create(tu_path("no/such/dir/x.bin"), &h, 0));
    assert_non_null(strstr(error_get(), "no/such/dir/x.bin"));
    struct tf_writer *w = tf_create(tu_path("inv.bin"), &h, 0);
    assert_non_null(w);
    struct tf_record r[2] = { { .tsc = 1, .kind = TF_EV_START, .addr = 1 }, { .tsc = 2, .kind = TF_EV_KINDS } };
    assert_int_equal(tg_write_records(w, 1, 0, 0, r, NULL, 2, TF_CODEC_NONE, 0), -1);
    assert_non_null(strstr(error_get(), "inv.bin: thread 1: records from 0 on are damaged"));
    assert_int_equal(tf_finish(w, 0), 0);
}

/* Whether the file system of the test directory takes O_DIRECT. */
static int dir_takes_o_direct(void)
{
    int fd = open(tu_path("odirect.probe"), O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
    if (fd < 0)
        return 0;
    close(fd);
    unlink(tu_path("odirect.probe"));
    return 1;
}

/* How many of the first `bytes` of a file's pages the page cache holds. */
static size_t cached_pages(const char *path, size_t bytes)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    void *p = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
    assert_true(p != MAP_FAILED);
    size_t pages = bytes / 4096, n = 0;
    unsigned char *vec = calloc(pages, 1);
    assert_non_null(vec);
    assert_int_equal(mincore(p, bytes, vec), 0);
    for (size_t i = 0; i < pages; i++)
        n += vec[i] & 1;
    free(vec);
    munmap(p, bytes);
    close(fd);
    return n;
}

/* 120 chunks of 3001 uncompressed records: about 6 MiB, so several writes
 * of the direct writer's 2 MiB stage and a tail that is not whole blocks. */
#define DIRECT_CHUNKS 120
#define DIRECT_PER 3001

/* Writes DIRECT_CHUNKS chunks with `codec` through the page cache and
 * directly, and checks that the two files are the same bytes, chunk offsets
 * and tail included, and that the direct one's first 512 KiB went around
 * the page cache where the file system allows it. */
static void direct_matches_cached(int codec)
{
    uint64_t offs_c[DIRECT_CHUNKS + 2], offs_d[DIRECT_CHUNKS + 2];
    rng_state = 0x1234567;
    write_event_file_with(tu_path("cached.bin"), codec, DIRECT_CHUNKS, DIRECT_PER, offs_c, 0);
    rng_state = 0x1234567;
    write_event_file_with(tu_path("direct.bin"), codec, DIRECT_CHUNKS, DIRECT_PER, offs_d, TF_WRITE_DIRECT);
    const size_t head = 512u << 10;
    assert_int_equal(cached_pages(tu_path("cached.bin"), head), head / 4096);
    assert_int_equal(cached_pages(tu_path("direct.bin"), head), dir_takes_o_direct() ? 0 : head / 4096);
    size_t nc, nd;
    char *c = tu_read_file(tu_path("cached.bin"), &nc);
    char *d = tu_read_file(tu_path("direct.bin"), &nd);
    assert_non_null(c);
    assert_non_null(d);
    assert_true(nc > 2 * (2u << 20) && nc % 4096 != 0);
    assert_int_equal(nd, nc);
    assert_memory_equal(d, c, nc);
    assert_memory_equal(offs_d, offs_c, sizeof offs_c);
    free(c);
    free(d);
}

/* TF_WRITE_DIRECT (the library's writer) bypasses the page cache where the
 * file system allows it (a stored chunk is encoded in its stage), and the
 * file is byte for byte the one written through the page cache. */
static void test_a_direct_writer_writes_the_same_bytes_as_one_through_the_page_cache(void **s)
{
    (void)s;
    direct_matches_cached(TF_CODEC_NONE);
}

/* Compressed chunks, built aside and copied into the stage, between stored
 * ones encoded in it, still make the same file as through the page cache. */
static void test_a_direct_writer_mixing_stored_and_compressed_chunks_writes_the_same_bytes(void **s)
{
    (void)s;
    direct_matches_cached(CODEC_MIXED);
}

/* The descriptor open on `path` in this process, or -1. */
static int fd_of(const char *path)
{
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    int found = -1;
    for (struct dirent *e; found < 0 && (e = readdir(d)) != NULL;) {
        char link[300], target[600];
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n > 0) {
            target[n] = 0;
            if (strcmp(target, path) == 0)
                found = atoi(e->d_name);
        }
    }
    closedir(d);
    return found;
}

/* A direct write the device refuses (here: the file offset moved off a
 * block, as a device with larger blocks than 4 KiB would refuse it) hands
 * that stage and the rest of the file to the page cache: every byte
 * follows in order, the call succeeds. (Where the file system has no
 * O_DIRECT, the writer was on the page cache from the start, and the
 * same holds.) */
static void test_a_refused_direct_write_hands_the_rest_to_the_page_cache_in_order(void **s)
{
    (void)s;
    uint64_t offs[DIRECT_CHUNKS + 2];
    rng_state = 0xabcdef;
    write_event_file_with(tu_path("ref.bin"), TF_CODEC_NONE, DIRECT_CHUNKS, DIRECT_PER, offs, 0);
    struct tf_header h = make_header();
    struct tf_writer *w = tf_create(tu_path("moved.bin"), &h, TF_WRITE_DIRECT);
    assert_non_null(w);
    int fd = fd_of(tu_path("moved.bin"));
    assert_true(fd >= 0);
    struct tf_record *r = malloc(DIRECT_PER * sizeof *r);
    assert_non_null(r);
    rng_state = 0xabcdef;
    uint64_t inst = 0, moved_at = 0;
    for (size_t i = 0; i < DIRECT_CHUNKS; i++) {
        make_records(r, NULL, DIRECT_PER, &inst);
        assert_int_equal(tg_write_records(w, 1 + (uint32_t)(i % 2), i * DIRECT_PER, inst, r, NULL, DIRECT_PER,
                                          TF_CODEC_NONE, 1), 0);
        if (moved_at == 0 && tf_writer_durable(w) > 0) { /* one write out: the next is refused */
            moved_at = tf_writer_durable(w);
            assert_int_equal(lseek(fd, 1, SEEK_CUR), (off_t)moved_at + 1);
        }
    }
    struct tf_thread_info ti[2] = { { 1, 11, 100, 0, 0, 0 }, { 2, 12, 100, 3, 0, 0 } };
    assert_int_equal(tf_write_end(w, ti, 2, 0, 0), 0);
    assert_int_equal(tf_finish(w, 0), 0);
    free(r);
    size_t nr, nm;
    char *ref = tu_read_file(tu_path("ref.bin"), &nr);
    char *moved = tu_read_file(tu_path("moved.bin"), &nm);
    assert_non_null(ref);
    assert_non_null(moved);
    assert_true(moved_at > 0 && moved_at < nr);
    assert_int_equal(nm, nr + 1); /* the byte skipped reads as 0 */
    assert_memory_equal(moved, ref, moved_at);
    assert_int_equal(moved[moved_at], 0);
    assert_memory_equal(moved + moved_at + 1, ref + moved_at, nr - moved_at);
    free(ref);
    free(moved);
}

/* A direct write that the file size limit cuts short hands the rest to
 * the page cache: the writer fails with the system's reason, refuses the
 * next chunk saying so, and the file holds every byte up to the limit. Run
 * in a child (the limit is its). */
static void test_a_direct_writer_cut_by_a_file_size_limit_keeps_every_byte_before_it(void **s)
{
    (void)s;
    uint64_t offs[DIRECT_CHUNKS + 2];
    rng_state = 0x7654321;
    write_event_file_with(tu_path("whole.bin"), TF_CODEC_NONE, DIRECT_CHUNKS, DIRECT_PER, offs, 0);
    const rlim_t limit = (2600u << 10) + 123; /* not a whole block, past the first direct write */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit lim = { limit, limit };
        if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
            _exit(10);
        rng_state = 0x7654321;
        struct tf_header h = make_header();
        struct tf_writer *w = tf_create(tu_path("cut.bin"), &h, TF_WRITE_DIRECT);
        if (w == NULL)
            _exit(11);
        struct tf_record *r = malloc(DIRECT_PER * sizeof *r);
        uint64_t inst = 0;
        int rc = 0;
        for (size_t i = 0; i < DIRECT_CHUNKS && rc == 0; i++) {
            make_records(r, NULL, DIRECT_PER, &inst);
            rc = tg_write_records(w, 1 + (uint32_t)(i % 2), i * DIRECT_PER, inst, r, NULL, DIRECT_PER,
                                  TF_CODEC_NONE, 1);
        }
        if (rc == 0)
            _exit(12);
        if (strstr(error_get(), "cut.bin: offset ") == NULL || strstr(error_get(), "File too large") == NULL)
            _exit(13);
        /* Another chunk after it is refused, naming the file and why. */
        make_records(r, NULL, DIRECT_PER, &inst);
        if (tg_write_records(w, 1, 0, inst, r, NULL, DIRECT_PER, TF_CODEC_NONE, 1) == 0 ||
            strstr(error_get(), "cut.bin: an earlier write failed") == NULL)
            _exit(14);
        tf_abandon(w);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    size_t nw, nc;
    char *whole = tu_read_file(tu_path("whole.bin"), &nw);
    char *cut = tu_read_file(tu_path("cut.bin"), &nc);
    assert_non_null(whole);
    assert_non_null(cut);
    assert_int_equal(nc, limit);
    assert_memory_equal(cut, whole, nc);
    free(whole);
    free(cut);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_chunk_kind_round_trips_uncompressed),
        cmocka_unit_test(test_every_chunk_kind_round_trips_with_zlib),
        cmocka_unit_test(test_every_chunk_kind_round_trips_with_lz4),
        cmocka_unit_test(test_long_runs_are_split_and_keep_seq_and_instance),
        cmocka_unit_test(test_a_short_stream_of_long_write_set_runs_fits_the_writers_buffer),
        cmocka_unit_test(test_a_compressed_metadata_chunk_reads_as_the_records_it_holds),
        cmocka_unit_test(test_skip_events_gives_counts_without_payloads),
        cmocka_unit_test(test_truncation_at_a_chunk_boundary_reads_every_complete_chunk),
        cmocka_unit_test(test_torn_tail_is_an_error_or_skipped_bytes_with_salvage),
        cmocka_unit_test(test_truncated_or_foreign_header_is_refused),
        cmocka_unit_test(test_newer_format_version_is_refused),
        cmocka_unit_test(test_an_end_chunk_records_the_terminating_signal_and_a_plain_end_keeps_its_bytes),
        cmocka_unit_test(test_a_version_2_header_reads_as_word_stripes_and_version_3_keeps_its_width),
        cmocka_unit_test(test_flipped_bit_in_file_header_is_detected),
        cmocka_unit_test(test_flipped_bit_in_chunk_header_skips_exactly_that_chunk),
        cmocka_unit_test(test_flipped_bit_in_payload_is_a_crc_mismatch),
        cmocka_unit_test(test_garbage_between_chunks_is_skipped_by_salvage),
        cmocka_unit_test(test_random_damage_never_crashes),
        cmocka_unit_test(test_atomic_writer_leaves_no_temporary_behind),
        cmocka_unit_test(test_writer_refuses_invalid_records_and_unwritable_paths),
        cmocka_unit_test(test_a_direct_writer_writes_the_same_bytes_as_one_through_the_page_cache),
        cmocka_unit_test(test_a_direct_writer_mixing_stored_and_compressed_chunks_writes_the_same_bytes),
        cmocka_unit_test(test_a_direct_writer_cut_by_a_file_size_limit_keeps_every_byte_before_it),
        cmocka_unit_test(test_a_refused_direct_write_hands_the_rest_to_the_page_cache_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
