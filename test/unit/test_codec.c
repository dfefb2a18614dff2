/*
 * test_codec.c - the event row encoding and the block codecs: exact round
 * trips on ordinary and extreme values, and damaged payloads rejected
 * without reading out of bounds. Prints the codec benchmark figures.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "codec.h"
#include "error.h"
#include "test_util.h"
#include "trace_gen.h"
#include "trace_file.h"

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint64_t rnd(void) { return tu_xorshift(&rng); }

/* Values that stress the deltas: extremes, sign changes, small numbers,
 * and every bit length (varints of every size from 1 to 10 bytes). */
static uint64_t wild(void)
{
    static const uint64_t edge[] = { 0, 1, 127, 128, 0x7fffffffffffffffull, 0x8000000000000000ull,
                                     UINT64_MAX, UINT64_MAX - 1, 0xffffffffull, 0x100000000ull,
                                     0x3fff, 0x4000, 0xffffffffffffffull, 0x100000000000000ull };
    switch (rnd() % 5) {
    case 0: return edge[rnd() % (sizeof edge / sizeof edge[0])];
    case 1: return rnd() % 300;
    case 2: return rnd() >> (rnd() % 64);
    default: return rnd();
    }
}

static void fill_records(struct tf_record *r, uint64_t *truth, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        r[i].tsc = wild();
        r[i].aux = (uint32_t)wild();
        /* every kind, those past the tag's 3 bits (escaped) too */
        r[i].kind = (uint8_t)(1 + rnd() % (TF_EV_KINDS - 1));
        r[i].reason = (uint8_t)wild();
        r[i].site = (uint16_t)wild();
        r[i].addr = wild();
        r[i].value = wild();
        truth[i] = wild();
    }
}

static void test_records_round_trip_exactly_even_with_extreme_values(void **s)
{
    (void)s;
    enum { N = 20000 };
    struct tf_record *r = malloc(N * sizeof *r);
    uint64_t *truth = malloc(N * sizeof *truth);
    uint8_t *buf = malloc(codec_events_bound(N));
    struct tf_event *ev = malloc(N * sizeof *ev);
    assert_true(r && truth && buf && ev);
    fill_records(r, truth, N);
    for (int with_truth = 0; with_truth < 2; with_truth++) {
        unsigned fl;
        size_t len = codec_encode_records(buf, r, with_truth ? truth : NULL, N, 12345, UINT64_MAX, &fl);
        assert_true(len <= codec_events_bound(N));
        assert_int_equal(fl & CODEC_EV_TRUTH, with_truth ? CODEC_EV_TRUTH : 0);
        assert_int_equal(codec_decode_events(buf, len, fl, 42, ev, N), 0);
        uint64_t inst = UINT64_MAX;
        for (size_t i = 0; i < N; i++) {
            if (r[i].kind == TF_EV_START)
                inst = r[i].addr;
            assert_int_equal(ev[i].ts, r[i].tsc);
            assert_int_equal(ev[i].cpu, tf_aux_cpu(r[i].aux));
            assert_int_equal(ev[i].kind, r[i].kind);
            assert_int_equal(ev[i].reason, r[i].reason);
            assert_int_equal(ev[i].site, r[i].site);
            assert_int_equal(ev[i].addr, r[i].addr);
            assert_int_equal(ev[i].value, r[i].value);
            assert_int_equal(ev[i].thread, 42);
            assert_int_equal(ev[i].seq, 12345 + i);
            assert_int_equal(ev[i].instance, inst);
            assert_int_equal(ev[i].truth, with_truth ? truth[i] : 0);
        }
    }
    free(r), free(truth), free(buf), free(ev);
}

/* A slot stream as the event path fills it: full records (two slots) with
 * wild fields, and compact accesses, STARTs and COMMITs (one slot) between
 * them, each with a random step. Returns the slots used (at most cap). */
static size_t fill_slots(struct tf_slot *sl, uint64_t *truth, size_t cap)
{
    size_t i = 0;
    struct tf_record last = { 0 }; /* the last full record, when the slot before is its */
    int after_full = 0;
    while (i + 2 <= cap) {
        unsigned pick = (unsigned)(rnd() % 8);
        if (i == 0 || pick == 0) {
            struct tf_record r = { 0 };
            r.kind = (uint8_t)(1 + rnd() % (TF_EV_KINDS - 1));
            r.reason = (uint8_t)rnd();
            r.site = (uint16_t)rnd();
            r.aux = (uint32_t)rnd();
            r.tsc = wild();
            r.addr = wild();
            r.value = wild();
            size_t words = 0;
            if (r.kind == TF_EV_WSET && after_full && rnd() % 2) { /* a commit's: its stamp, site and CPU */
                r.tsc = last.tsc;
                r.site = last.site;
                r.aux = last.aux;
                r.reason = 0;
            }
            after_full = r.kind != TF_EV_WSET;
            last = r;
            /* A packed write set of a few words, room allowing: in the first
             * form (value 0, any word) or in runs (value: the entries, each
             * of one word or more). */
            uint64_t packed[16] = { 0 }, entries = 0;
            if (r.kind == TF_EV_WSET) {
                words = 1 + rnd() % 9;
                int runs = rnd() % 2;
                for (size_t w = 0; w < words;) {
                    uint32_t extra = runs ? (uint32_t)(rnd() % 4) : 0;
                    if (extra > words - w - 1)
                        extra = (uint32_t)(words - w - 1);
                    uint64_t word = runs ? wild() % TF_WSET_RUN_WORDS & ~(uint64_t)7 : wild();
                    packed[entries++] = runs ? tf_wset_pack_run(word, (uint32_t)rnd(), extra)
                                             : tf_wset_pack(word, (uint32_t)rnd());
                    w += 1 + extra;
                }
                if (i + 2 + tf_wset_slots(entries) > cap)
                    r.kind = TF_EV_ALLOC;
                r.addr = words;
                r.value = runs ? entries : 0;
            }
            memcpy(&sl[i], &r, sizeof r);
            truth[i] = wild();
            truth[i + 1] = 0;
            i += 2;
            for (size_t k = 0; r.kind == TF_EV_WSET && k < tf_wset_slots(entries); k++, i++) {
                sl[i].head = packed[2 * k];
                sl[i].value = packed[2 * k + 1];
                truth[i] = 0;
            }
            continue;
        }
        uint64_t head, addr = rnd() >> 17;
        if (pick == 7 && rnd() % 2) {
            /* A COMMIT that carries its write set: runs of words below
             * 2^47, as many entries as room and TF_COMMIT_CARRY_MAX allow. */
            uint64_t packed[TF_COMMIT_CARRY_MAX + 1] = { 0 }, words = 0, entries = 1 + rnd() % TF_COMMIT_CARRY_MAX;
            if (i + 1 + tf_wset_slots(entries) > cap)
                continue;
            for (uint64_t e = 0; e < entries; e++) {
                uint32_t extra = (uint32_t)(rnd() % 4 ? 0 : rnd() % 4);
                packed[e] = tf_wset_pack_run(wild() % TF_WSET_RUN_WORDS & ~(uint64_t)7, (uint32_t)rnd(), extra);
                words += 1 + extra;
            }
            sl[i].head = tf_commit_carry(tf_commit_head(rnd() % (TF_BOUNDARY_STEP_MAX + 1),
                                                        (uint32_t)(rnd() % 65536), (uint32_t)words),
                                         (uint32_t)entries);
            sl[i].value = wild();
            truth[i] = wild();
            for (size_t k = 0; k < tf_wset_slots(entries); k++) {
                sl[i + 1 + k].head = packed[2 * k];
                sl[i + 1 + k].value = packed[2 * k + 1];
                truth[i + 1 + k] = 0;
            }
            i += 1 + tf_wset_slots(entries);
            after_full = 0;
            continue;
        }
        if (pick <= 5)
            head = tf_access_head(pick & 1, 1u << (rnd() % 4), rnd() % (TF_ACCESS_STEP_MAX + 1), addr);
        else if (pick == 6) /* half of them at one of three sites, as a program's STARTs mostly repeat one */
            head = tf_start_head((unsigned)(rnd() % 128), rnd() % (TF_BOUNDARY_STEP_MAX + 1),
                                 (unsigned)(rnd() % 2 ? rnd() % 3 : rnd() % 65536), (unsigned)(rnd() % 16384));
        else
            head = tf_commit_head(rnd() % (TF_BOUNDARY_STEP_MAX + 1), (uint32_t)(rnd() % 65536),
                                  (uint32_t)(rnd() % 65536));
        sl[i].head = head;
        sl[i].value = wild();
        /* A START's instance is below 2^63; with that bit, the START holds
         * its read-only COMMIT (its instance the one before it plus one) */
        if (pick == 6)
            sl[i].value = rnd() % 2 ? tf_start_fold(rnd() % (TF_BOUNDARY_STEP_MAX + 1), (uint32_t)(rnd() % 65536))
                                    : sl[i].value & ~TF_START_FOLDED;
        truth[i] = wild();
        after_full = 0;
        i++;
    }
    return i;
}

/* The writer encodes the slots straight away; what it writes must be what
 * encoding their expansion writes, piece for piece: every byte the same,
 * with the previous record, sequence number and instance carried across. */
static void test_slots_encode_to_the_bytes_of_their_expanded_records(void **s)
{
    (void)s;
    enum { N = 30000 };
    struct tf_slot *sl = malloc(N * sizeof *sl);
    uint64_t *truth = malloc(N * sizeof *truth), *rtruth = malloc(N * sizeof *rtruth);
    struct tf_record *rec = malloc(N * sizeof *rec);
    uint8_t *a = malloc(codec_events_bound(N)), *b = malloc(codec_events_bound(N));
    assert_true(sl && truth && rtruth && rec && a && b);
    size_t n = fill_slots(sl, truth, N);
    for (int with_truth = 0; with_truth < 2; with_truth++) {
        struct tf_slot_stream ss = { .s = sl, .truth = with_truth ? truth : NULL, .left = n, .seq = 77,
                                     .instance = 5 };
        struct tf_record ref;
        size_t i = 0, pieces = 0;
        uint64_t seq = 77, inst = 5;
        while (i < n) {
            size_t max = 128 + rnd() % 3000, used, got; /* room for the largest write set fill_slots makes */
            long m = tg_slots_expand(sl + i, n - i, truth + i, i ? &ref : NULL, inst, rec, rtruth, max, &used);
            assert_true(m > 0);
            unsigned fa, fb;
            size_t la = codec_encode_records(a, rec, with_truth ? rtruth : NULL, (size_t)m, seq, inst, &fa);
            long lb = codec_encode_slots(b, &ss, max, &got, &fb);
            assert_int_equal(got, (size_t)m);
            assert_int_equal(lb, (long)la);
            assert_int_equal(fb, fa);
            assert_memory_equal(a, b, la);
            for (long k = 0; k < m; k++)
                if (rec[k].kind == TF_EV_START)
                    inst = rec[k].addr;
            ref = rec[m - 1];
            seq += (uint64_t)m;
            i += used;
            assert_int_equal(ss.left, n - i);
            assert_int_equal(ss.seq, seq);
            assert_int_equal(ss.instance, inst);
            pieces++;
        }
        assert_true(pieces > 5);
    }
    /* A compact record first, a full record cut short, a kind 0: refused. */
    struct tf_slot bad[2] = { { tf_commit_head(1, 2, 3), 9 }, { 0, 0 } };
    struct tf_slot_stream ss = { .s = bad, .left = 1 };
    size_t got = 1;
    unsigned fl;
    assert_int_equal(codec_encode_slots(b, &ss, 10, &got, &fl), -1);
    assert_int_equal(got, 0);
    assert_int_equal(ss.left, 1); /* not advanced */
    memcpy(bad, &rec[0], sizeof rec[0]);
    bad[0].head = (bad[0].head & ~(uint64_t)0xff) | TF_EV_READ;
    ss = (struct tf_slot_stream){ .s = bad, .left = 1 };
    assert_int_equal(codec_encode_slots(b, &ss, 10, &got, &fl), -1);
    bad[0].head &= ~(uint64_t)0xff;
    ss = (struct tf_slot_stream){ .s = bad, .left = 2 };
    assert_int_equal(codec_encode_slots(b, &ss, 10, &got, &fl), -1);
    bad[0].head |= TF_EV_READ;
    ss = (struct tf_slot_stream){ .s = bad, .left = 2 };
    assert_true(codec_encode_slots(b, &ss, 10, &got, &fl) > 0);
    assert_int_equal(got, 1);
    free(sl), free(truth), free(rtruth), free(rec), free(a), free(b);
}

static void test_decoded_events_round_trip_merged_or_per_thread(void **s)
{
    (void)s;
    enum { N = 5000 };
    struct tf_event *in = calloc(N, sizeof *in), *ev = calloc(N, sizeof *ev);
    uint8_t *buf = malloc(codec_events_bound(N));
    assert_true(in && ev && buf);
    for (int merged = 0; merged < 2; merged++) {
        for (size_t i = 0; i < N; i++) {
            in[i] = (struct tf_event){ wild(), rnd() % 3 ? 0 : wild(), wild(), wild(), wild(), wild(),
                                       merged ? (uint32_t)(rnd() % 3000) : 5, (uint32_t)wild(),
                                       (uint16_t)wild(), (uint8_t)(1 + rnd() % (TF_EV_KINDS - 1)), (uint8_t)wild() };
        }
        unsigned fl;
        size_t len = codec_encode_events(buf, in, N, merged ? 0 : 5, &fl);
        assert_true(len > 0 && len <= codec_events_bound(N));
        assert_int_equal(!!(fl & CODEC_EV_MERGED), merged);
        assert_int_equal(codec_decode_events(buf, len, fl, merged ? 0 : 5, ev, N), 0);
        assert_int_equal(tg_first_event_diff(ev, in, N), N);
    }
    free(in), free(ev), free(buf);
}

/* A chunk's flags are those of all its events, not of the first: a truth
 * or another thread that appears late still makes it TRUTH or MERGED, and
 * a bad kind anywhere is refused. */
static void test_decoded_events_flags_come_from_every_event(void **s)
{
    (void)s;
    enum { N = 200 };
    struct tf_event in[N], ev[N];
    uint8_t buf[codec_events_bound(N)];
    for (int late = 0; late < 4; late++) {
        for (size_t i = 0; i < N; i++)
            in[i] = (struct tf_event){ .ts = 100 + 3 * i, .addr = 4096 + 8 * i, .seq = i, .thread = 5, .site = 1,
                                       .kind = (uint8_t)(i % 2 ? TF_EV_READ : TF_EV_WRITE), .reason = 8 };
        if (late == 0)
            in[N - 1].truth = 7;
        else if (late == 1)
            in[N - 1].thread = 6;
        else
            in[N - 1].kind = late == 2 ? TF_EV_KINDS : 0;
        unsigned fl = 0;
        size_t len = codec_encode_events(buf, in, N, 5, &fl);
        if (late >= 2) {
            assert_int_equal(len, 0);
            continue;
        }
        assert_true(len > 0);
        assert_int_equal(!!(fl & CODEC_EV_TRUTH), late == 0);
        assert_int_equal(!!(fl & CODEC_EV_MERGED), late == 1);
        assert_int_equal(codec_decode_events(buf, len, fl, 5, ev, N), 0);
        assert_int_equal(tg_first_event_diff(ev, in, N), N);
    }
}

/* tmsync's chunks: runs of one thread (its id only where it changes), seq
 * and instance as predicted except after a gap (dropped events) or a START
 * whose instance is not its address, every kind. */
static void test_merged_runs_round_trip_with_their_gaps(void **s)
{
    (void)s;
    enum { N = 20000 };
    struct tf_event *in = calloc(N, sizeof *in), *ev = calloc(N, sizeof *ev);
    uint8_t *buf = malloc(codec_events_bound(N));
    assert_true(in && ev && buf);
    uint64_t seq[4] = { 0 }, inst[4] = { 0 }, ts = 1000;
    uint32_t t = 1;
    for (size_t i = 0; i < N; i++) {
        if (rnd() % 8 == 0)
            t = 1 + (uint32_t)(rnd() % 3);
        unsigned kind = 1 + (unsigned)(rnd() % (TF_EV_KINDS - 1));
        seq[t] += rnd() % 50 == 0 ? 2 + rnd() % 9 : 1;   /* a gap now and then */
        uint64_t addr = wild();
        if (kind == TF_EV_START)
            inst[t] = rnd() % 20 == 0 ? wild() : (addr = inst[t] + 1);
        else if (rnd() % 100 == 0)
            inst[t] = wild();
        in[i] = (struct tf_event){ ts += rnd() % 300, rnd() % 2 ? 0 : ts + rnd() % 40, addr, wild(), inst[t],
                                   seq[t], t, (uint32_t)(rnd() % 5), (uint16_t)(rnd() % 4), (uint8_t)kind,
                                   (uint8_t)(rnd() % 9) };
    }
    unsigned fl;
    size_t len = codec_encode_events(buf, in, N, 0, &fl);
    assert_true(fl & CODEC_EV_THREADED);
    assert_int_equal(codec_decode_events(buf, len, fl, 0, ev, N), 0);
    assert_int_equal(tg_first_event_diff(ev, in, N), N);
    /* a payload cut short is refused */
    for (size_t cut = 1; cut < 64; cut++)
        assert_int_not_equal(codec_decode_events(buf, len - cut, fl, 0, ev, N), 0);
    free(in), free(ev), free(buf);
}

/* A payload of exactly `len` heap bytes, so that ASan sees any overread. */
static int decode_copy(const uint8_t *src, size_t len, unsigned fl, struct tf_event *ev, size_t n)
{
    uint8_t *p = malloc(len ? len : 1);
    assert_non_null(p);
    memcpy(p, src, len);
    int rc = codec_decode_events(p, len, fl, 1, ev, n);
    free(p);
    return rc;
}

static void test_every_truncated_or_padded_payload_is_rejected(void **s)
{
    (void)s;
    enum { N = 300 };
    struct tf_record r[N];
    uint64_t truth[N];
    struct tf_event ev[N];
    uint8_t buf[codec_events_bound(N) + 1];
    fill_records(r, truth, N);
    unsigned fl;
    size_t len = codec_encode_records(buf, r, truth, N, 0, 0, &fl);
    for (size_t cut = 0; cut < len; cut++) {
        assert_int_equal(decode_copy(buf, cut, fl, ev, N), -1);
        assert_non_null(strstr(error_get(), "corrupt event payload"));
    }
    buf[len] = 0;
    assert_int_equal(decode_copy(buf, len + 1, fl, ev, N), -1);
    assert_non_null(strstr(error_get(), "after its"));
    assert_int_equal(decode_copy(buf, len, fl, ev, N), 0);
}

static void test_corrupted_payloads_never_read_out_of_bounds(void **s)
{
    (void)s;
    enum { N = 200 };
    struct tf_record r[N];
    uint64_t truth[N];
    struct tf_event ev[N];
    uint8_t buf[codec_events_bound(N)], bad[codec_events_bound(N)];
    fill_records(r, truth, N);
    unsigned fl;
    size_t len = codec_encode_records(buf, r, truth, N, 0, 0, &fl);
    int rejected = 0;
    for (int trial = 0; trial < 3000; trial++) {
        memcpy(bad, buf, len);
        for (int k = 0; k < 1 + trial % 5; k++)
            bad[rnd() % len] = (uint8_t)rnd();
        unsigned f = trial % 7 == 0 ? (unsigned)(rnd() % 8) : fl;
        int rc = decode_copy(bad, len, f, ev, N);
        assert_true(rc == 0 || rc == -1);
        rejected += rc == -1;
    }
    assert_true(rejected > 0);
}

static void test_block_codecs_round_trip_and_refuse_wrong_lengths(void **s)
{
    (void)s;
    enum { N = 100000 };
    uint8_t *in = malloc(N), *out = malloc(N + 1);
    assert_true(in && out);
    for (size_t i = 0; i < N; i++)
        in[i] = (uint8_t)(i % 251 < 200 ? i % 7 : rnd());
    const int codecs[] = { TF_CODEC_ZLIB, TF_CODEC_LZ4 };
    for (size_t k = 0; k < 2; k++) {
        int c = codecs[k];
        if (!codec_available(c))
            continue;
        size_t cap = codec_compress_bound(c, N);
        uint8_t *z = malloc(cap);
        assert_non_null(z);
        size_t zn = codec_compress(c, 6, in, N, z, cap);
        assert_true(zn > 0 && zn < N);
        assert_int_equal(codec_decompress(c, z, zn, out, N), 0);
        assert_memory_equal(in, out, N);
        assert_int_equal(codec_decompress(c, z, zn, out, N - 1), -1);
        assert_int_equal(codec_decompress(c, z, zn / 2, out, N), -1);
        free(z);
    }
    /* Incompressible data is reported as "store it plainly". */
    for (size_t i = 0; i < N; i++)
        in[i] = (uint8_t)rnd();
    size_t cap = codec_compress_bound(TF_CODEC_ZLIB, N);
    uint8_t *z = malloc(cap);
    assert_non_null(z);
    assert_int_equal(codec_compress(TF_CODEC_ZLIB, 1, in, N, z, cap), 0);
    free(z);
    assert_int_equal(codec_decompress(TF_CODEC_NONE, in, N, out, N), 0);
    assert_int_equal(codec_decompress(TF_CODEC_NONE, in, N, out, N - 1), -1);
    assert_int_equal(codec_decompress(9, in, N, out, N), -1);
    free(in), free(out);
}

/* The format's varints are LEB128 (docs/format.md): 7 bits a byte, low
 * group first, bit 7 set on every byte but the last; the encoder's short,
 * wide and byte-loop paths must all write exactly that. A row whose last
 * field is its value (an ALLOC's) ends with the value's bytes. */
static size_t leb128(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    do {
        out[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        out[n] |= v ? 0x80 : 0;
        n++;
    } while (v);
    return n;
}

static void test_a_rows_varints_are_leb128_at_every_length(void **s)
{
    (void)s;
    uint8_t out[64], ref[16];
    for (unsigned bits = 1; bits <= 64; bits++) {
        for (int k = 0; k < 20; k++) {
            uint64_t low = bits == 1 ? 0 : rnd() & (((uint64_t)1 << (bits - 1)) - 1);
            struct tf_record r = { .kind = TF_EV_ALLOC, .value = (uint64_t)1 << (bits - 1) | low };
            unsigned fl;
            size_t len = codec_encode_records(out, &r, NULL, 1, 0, 0, &fl);
            size_t n = leb128(ref, r.value);
            assert_int_equal(n, (bits + 6) / 7);
            assert_true(len > n);
            assert_memory_equal(out + len - n, ref, n);
        }
    }
}

static void test_realistic_stream_encodes_far_below_the_record_size(void **s)
{
    (void)s;
    /* Figures for the report; the assertion is only the format's point:
     * an event costs a fraction of its 32-byte record. */
    const int codecs[] = { TF_CODEC_NONE, TF_CODEC_LZ4, TF_CODEC_ZLIB };
    for (size_t k = 0; k < 3; k++) {
        if (!codec_available(codecs[k]))
            continue;
        double eps, bpe;
        assert_int_equal(codec_bench(codecs[k], 1, 1u << 20, &eps, &bpe), 0);
        printf("codec %s: %.1f M events/s encode+compress, %.2f bytes/event\n",
               tf_codec_name((unsigned)codecs[k]), eps / 1e6, bpe);
        assert_true(eps > 0);
        assert_true(bpe > 1.0 && bpe < 16.0);
    }
}

/* The CRC every chunk carries is zlib's CRC-32 whatever path computes it
 * (the carry-less multiplication folds 64 and 16 bytes at a time, zlib
 * takes the tail): every length across those steps, at three alignments. */
static void test_crc32_is_zlibs_at_every_length_and_alignment(void **st)
{
    (void)st;
    enum { N = 4200 };
    unsigned char *b = malloc(N + 3);
    assert_non_null(b);
    uint32_t x = 12345;
    for (size_t i = 0; i < N + 3; i++) {
        x = x * 1103515245u + 12345u;
        b[i] = (unsigned char)(x >> 16);
    }
    for (size_t n = 0; n <= N; n++)
        for (size_t a = 0; a < 3; a++)
            if (codec_crc32(b + a, n) != (uint32_t)crc32(0L, b + a, (uInt)n))
                fail_msg("codec_crc32 differs from zlib's crc32 at %zu bytes, offset %zu", n, a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_records_round_trip_exactly_even_with_extreme_values),
        cmocka_unit_test(test_slots_encode_to_the_bytes_of_their_expanded_records),
        cmocka_unit_test(test_decoded_events_round_trip_merged_or_per_thread),
        cmocka_unit_test(test_decoded_events_flags_come_from_every_event),
        cmocka_unit_test(test_merged_runs_round_trip_with_their_gaps),
        cmocka_unit_test(test_every_truncated_or_padded_payload_is_rejected),
        cmocka_unit_test(test_corrupted_payloads_never_read_out_of_bounds),
        cmocka_unit_test(test_block_codecs_round_trip_and_refuse_wrong_lengths),
        cmocka_unit_test(test_a_rows_varints_are_leb128_at_every_length),
        cmocka_unit_test(test_realistic_stream_encodes_far_below_the_record_size),
        cmocka_unit_test(test_crc32_is_zlibs_at_every_length_and_alignment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
