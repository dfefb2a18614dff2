/*
 * test_tmdump.c - tmdump's output on a hand-built trace: the line format,
 * per-thread order, the filters, the summary, and one-line errors with
 * exit status 2.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"
#include "tmtrace.h"
#include "trace_file.h"
#include "trace_gen.h"

/* A record written positionally, in the order tmdump prints its fields. */
#define REC(tsc_, aux_, kind_, reason_, site_, addr_, value_)                                            \
    { .kind = (kind_), .reason = (reason_), .site = (site_), .aux = (aux_), .tsc = (tsc_), .addr = (addr_), \
      .value = (value_) }

static char out[1 << 16];

/* Runs tmdump with `args`; stderr joins stdout when `with_stderr`. */
static int dump(const char *args, int with_stderr)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s %s", tu_build("tools/tmdump"), args,
             with_stderr ? "2>&1" : "2>/dev/null");
    return tu_run(cmd, out, sizeof out);
}

/* tmdump with options on a trace file. */
static int dump_opts(const char *opts, const char *path, int with_stderr)
{
    char args[1024];
    snprintf(args, sizeof args, "%s %s", opts, path);
    return dump(args, with_stderr);
}

/* The last output contains `want`; a failure shows both. */
static void assert_out_has(const char *want)
{
    if (!strstr(out, want))
        fail_msg("output lacks '%s'; it was:\n%s", want, out);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Thread 2's first chunk, then thread 1's, then thread 2's second chunk:
 * tmdump must print T1 first, then T2 in chunk order. */
static const char *build_trace(void)
{
    const char *path = tu_path("hand.bin");
    struct tf_header h;
    memset(&h, 0, sizeof h);
    h.tsc_hz = 3000000000ull;
    h.ncpus = 2;
    h.pid = 77;
    h.events_level = 2;
    snprintf(h.cmdline, sizeof h.cmdline, "bench --hand");
    struct tf_writer *w = tf_create(path, &h, 0);
    assert_non_null(w);
    struct tf_site sites[2] = { { 1, 12, "list.c", "insert" }, { 2, 40, "list.c", "lookup" } };
    assert_int_equal(tf_write_sites(w, sites, 2), 0);
    struct tf_sample smp[3] = { { 100, 5000, 100, 30, 0, TF_PHASE_PRE, 0, 0 },
                                { 110, 5010, 110, 40, 1, TF_PHASE_PRE, 0, 0 },
                                { 900, 9000, 900, 35, 1, TF_PHASE_POST, 0, 0 } };
    assert_int_equal(tf_write_samples(w, smp, 3), 0);
    struct tf_record t2a[3] = { REC(1000, 1, TF_EV_START, 0, 2, 7, TF_START_HTM_EMU),
                                REC(1040, 1, TF_EV_READ, 8, 2, 0x5000, 3),
                                REC(1090, 1, TF_EV_ABORT, TMT_ABORT_HTM, 2, 0x5000, 0x6) };
    struct tf_record t1[4] = { REC(1010, 0, TF_EV_START, 0, 1, 3, 0),
                               REC(1020, 0, TF_EV_WRITE, 8, 1, 0x6008, 9),
                               REC(1030, 0, TF_EV_COMMIT, 0, 1, 4, 1ull << 32),
                               REC(1035, 0, TF_EV_FALLBACK, TF_FB_CAPACITY, 1, 0, 0) };
    struct tf_record t2b[2] = { REC(1200, 0, TF_EV_START, 0, 2, 8, TF_START_RETRY),
                                REC(1300, 0, TF_EV_COMMIT, 0, 2, 0, 1) };
    assert_int_equal(tg_write_records(w, 2, 0, 0, t2a, NULL, 3, TF_CODEC_LZ4, 1), 0);
    assert_int_equal(tg_write_records(w, 1, 0, 0, t1, NULL, 4, TF_CODEC_ZLIB, 1), 0);
    assert_int_equal(tg_write_records(w, 2, 3, 7, t2b, NULL, 2, TF_CODEC_NONE, 0), 0);
    struct tf_thread_info ti[2] = { { 1, 501, 4, 0, 0, 0 }, { 2, 502, 5, 6, 0, 0 } };
    assert_int_equal(tf_write_end(w, ti, 2, 0, 0), 0);
    assert_int_equal(tf_finish(w, 0), 0);
    return path;
}

static void test_events_print_one_per_line_in_thread_order(void **s)
{
    (void)s;
    const char *path = build_trace();
    assert_int_equal(dump(path, 0), 0);
    /* units, the site's name, and what each kind of record carries */
    const char *want =
        "1010 ticks start T1 site=1 insert tx=3 core=0\n"
        "1020 ticks write T1 site=1 insert tx=3 addr=0x6008 size=8 value=0x9 core=0\n"
        "1030 ticks commit T1 site=1 insert tx=3 read_set=0 write_set=1 version=4 core=0\n"
        "1035 ticks fallback T1 site=1 insert tx=3 why=capacity status=0x00000000 core=0\n"
        "1000 ticks start T2 site=2 lookup tx=7 core=1\n"
        "1040 ticks read T2 site=2 lookup tx=7 addr=0x5000 size=8 value=0x3 core=1\n"
        "1090 ticks abort T2 site=2 lookup tx=7 reason=htm addr=0x5000 status=0x00000006 core=1\n"
        "1200 ticks start T2 site=2 lookup tx=8 core=0\n"
        "1300 ticks commit T2 site=2 lookup tx=8 read_set=1 write_set=0 version=0 core=0\n";
    assert_string_equal(out, want);
}

/* One thread's software aborts in a trace of format `version`: a lock held
 * by thread 2's attempt 9, a newer version 42, a user retry. */
static const char *build_abort_trace(unsigned version)
{
    const char *path = tu_path(version == 1 ? "aborts1.bin" : "aborts2.bin");
    struct tf_header h;
    memset(&h, 0, sizeof h);
    h.version = version;
    h.tsc_hz = 3000000000ull;
    h.ncpus = 1;
    h.events_level = 2;
    struct tf_writer *w = tf_create(path, &h, 0);
    assert_non_null(w);
    uint64_t held = version == 1 ? 2 : tf_abort_held(2, 9), found = version == 1 ? 0 : 42;
    struct tf_record r[6] = { REC(100, 0, TF_EV_START, 0, 0, 5, 0),
                              REC(110, 0, TF_EV_ABORT, TMT_ABORT_READ_LOCKED, 0, 0x7000, held),
                              REC(120, 0, TF_EV_START, 0, 0, 6, TF_START_RETRY),
                              REC(130, 0, TF_EV_ABORT, TMT_ABORT_READ_VERSION, 0, 0x7008, found),
                              REC(140, 0, TF_EV_START, 0, 0, 7, TF_START_RETRY),
                              REC(150, 0, TF_EV_ABORT, TMT_ABORT_USER_RETRY, 0, 0, 0) };
    assert_int_equal(tg_write_records(w, 1, 0, 0, r, NULL, 6, TF_CODEC_NONE, 0), 0);
    struct tf_thread_info ti[1] = { { 1, 501, 6, 0, 0, 0 } };
    assert_int_equal(tf_write_end(w, ti, 1, 0, 0), 0);
    assert_int_equal(tf_finish(w, 0), 0);
    return path;
}

static void test_abort_prints_the_holder_or_the_version_found(void **s)
{
    (void)s;
    assert_int_equal(dump(build_abort_trace(2), 0), 0);
    assert_out_has("110 ticks abort T1 site=0 - tx=5 reason=read-locked addr=0x7000 holder=T2 holder_tx=9 core=0\n");
    assert_out_has("130 ticks abort T1 site=0 - tx=6 reason=read-version addr=0x7008 found_version=42 core=0\n");
    assert_out_has("150 ticks abort T1 site=0 - tx=7 reason=user-retry addr=0x0 core=0\n");
    /* version 1 recorded only the holder's thread, of a lock abort */
    assert_int_equal(dump(build_abort_trace(1), 0), 0);
    assert_out_has("110 ticks abort T1 site=0 - tx=5 reason=read-locked addr=0x7000 holder=T2 core=0\n");
    assert_out_has("130 ticks abort T1 site=0 - tx=6 reason=read-version addr=0x7008 core=0\n");
}

static void test_filters_select_thread_site_and_limit(void **s)
{
    (void)s;
    const char *path = build_trace();
    assert_int_equal(dump_opts("--thread 2", path, 0), 0);
    assert_int_equal(count_lines(out), 5);
    assert_null(strstr(out, "T1"));
    assert_int_equal(dump_opts("--site 1", path, 0), 0);
    assert_int_equal(count_lines(out), 4);
    assert_null(strstr(out, "T2"));
    assert_int_equal(dump_opts("--thread 2 --limit 2", path, 0), 0);
    assert_string_equal(out, "1000 ticks start T2 site=2 lookup tx=7 core=1\n"
                             "1040 ticks read T2 site=2 lookup tx=7 addr=0x5000 size=8 value=0x3 core=1\n");
    /* a thread or site the trace does not have: one line, exit 2 */
    assert_int_equal(dump_opts("-t 9", path, 1), 2);
    assert_int_equal(count_lines(out), 1);
    assert_out_has("--thread 9: the trace has no such thread");
    assert_int_equal(dump_opts("--site 3", path, 1), 2);
    assert_int_equal(count_lines(out), 1);
    assert_out_has("--site 3: the trace has no such site");
}

static void test_summary_lists_header_sites_threads_and_phases(void **s)
{
    (void)s;
    const char *path = build_trace();
    assert_int_equal(dump_opts("--summary", path, 0), 0);
    assert_out_has("tsc frequency: 3000000000 Hz\n");
    assert_out_has("pid: 77\n");
    assert_out_has("command line: bench --hand\n");
    assert_out_has("site 1: list.c:12 insert\n");
    assert_out_has("site 2: list.c:40 lookup\n");
    assert_out_has("thread T1: os tid 501, 4 events, 0 dropped, 4 in file\n");
    assert_out_has("thread T2: os tid 502, 5 events, 6 dropped, 5 in file\n");
    assert_out_has("samples cpu 0: pre 1, post 0, in-run 0");
    assert_out_has("samples cpu 1: pre 1, post 1, in-run 0, bracket width 35..40 ticks");
    assert_out_has("end chunk: present");
}

static void test_damage_is_one_line_with_offset_and_salvage_goes_on(void **s)
{
    (void)s;
    const char *path = build_trace();
    size_t n;
    char *buf = tu_read_file(path, &n);
    assert_non_null(buf);
    /* Damage thread 1's chunk (the second EVENTS chunk in the file). */
    struct tf_reader *r = tf_open(path, 0);
    assert_non_null(r);
    struct tf_chunk c;
    uint64_t off = 0;
    int k = 0;
    while (tf_next(r, &c) == 1)
        if (c.kind == TF_CHUNK_EVENTS && ++k == 2)
            off = c.offset;
    tf_close(r);
    assert_true(off > 0);
    buf[off + 44] ^= 0x10; /* inside thread 1's payload */
    const char *bad = tu_path("hand-bad.bin");
    FILE *f = fopen(bad, "wb");
    assert_non_null(f);
    fwrite(buf, 1, n, f);
    fclose(f);
    free(buf);

    char want[700];
    assert_int_equal(dump(bad, 1), 2);
    snprintf(want, sizeof want, "tmdump: %s: offset %llu: chunk CRC mismatch\n", bad,
             (unsigned long long)off);
    assert_out_has(want);
    assert_int_equal(dump_opts("--salvage", bad, 0), 3); /* printed what was readable, skipped damage */
    assert_int_equal(count_lines(out), 5); /* thread 2's events only */
    assert_null(strstr(out, " T1 "));
    assert_int_equal(dump_opts("--salvage", bad, 1), 3);
    assert_out_has("tmdump: warning: skipped damage");
}

/* A synchronised trace at `path` holding `ev`, still open for more chunks. */
static struct tf_writer *synced_with(const char *path, const struct tf_event *ev, size_t n, int codec, int level)
{
    struct tf_header h;
    memset(&h, 0, sizeof h);
    h.flags = TF_HDR_SYNCED;
    struct tf_writer *w = tf_create(path, &h, TF_WRITE_ATOMIC);
    assert_non_null(w);
    assert_int_equal(tg_write_events(w, 0, ev, n, codec, level), 0);
    return w;
}

static void test_synced_trace_prints_merged_order_and_models(void **s)
{
    (void)s;
    const char *path = tu_path("synced.bin");
    struct tf_event ev[4] = {
        { .ts = 500, .instance = 4, .seq = 0, .thread = 2, .site = 1, .cpu = 1, .kind = TF_EV_START, .addr = 4 },
        { .ts = 510, .instance = 9, .seq = 0, .thread = 1, .site = 3, .cpu = 0, .kind = TF_EV_START, .addr = 9 },
        { .ts = 520, .instance = 4, .seq = 1, .thread = 2, .site = 1, .cpu = 1, .kind = TF_EV_READ, .addr = 0x40 },
        { .ts = 530, .instance = 4, .seq = 2, .thread = 2, .site = 1, .cpu = 1, .kind = TF_EV_ALLOC, .addr = 0x9000,
          .value = (UINT64_C(48) << 48) | 0x401234 },
    };
    struct tf_writer *w = synced_with(path, ev, 4, TF_CODEC_ZLIB, 1);
    static struct tf_cpu_model m;
    m.cpu = 1;
    m.nseg = 1;
    m.used = 90;
    m.rejected = 2;
    m.drift_ppm = 3.5;
    m.rms_ns = 12.0;
    m.seg[0] = (struct tf_model_segment){ 0, 0.5, 100.0 };
    assert_int_equal(tf_write_models(w, &m, 1), 0);
    assert_int_equal(tf_finish(w, 0), 0);

    assert_int_equal(dump(path, 0), 0);
    assert_string_equal(out, "500 ns start T2 site=1 - tx=4 core=1\n510 ns start T1 site=3 - tx=9 core=0\n"
                             "520 ns read T2 site=1 - tx=4 addr=0x40 size=0 value=0x0 core=1\n"
                             "530 ns alloc T2 site=1 - tx=4 addr=0x9000 size=48 pc=0x401234 core=1\n");
    assert_int_equal(dump_opts("--summary", path, 0), 0);
    assert_out_has("flags: synced");
    assert_out_has("model cpu 1: drift 3.500 ppm");
    assert_out_has("rms 12.0 ns, max 0.0 ns, 1 segments, 90 samples used, 2 rejected");
    assert_out_has("end chunk: missing");
}

/* Events the tracer dropped leave a hole in their thread's program order
 * (their numbers are skipped): a line says how many are missing there, for
 * the threads printed, whatever the site filter; the limit counts events. */
static void test_a_hole_in_a_threads_order_is_a_line_before_its_next_event(void **s)
{
    (void)s;
    const char *path = tu_path("hole.bin");
    struct tf_event ev[4] = {
        { .ts = 500, .instance = 4, .seq = 0, .thread = 2, .site = 1, .cpu = 1, .kind = TF_EV_START, .addr = 4 },
        { .ts = 510, .instance = 9, .seq = 3, .thread = 1, .site = 3, .cpu = 0, .kind = TF_EV_START, .addr = 9 },
        { .ts = 520, .instance = 7, .seq = 9, .thread = 2, .site = 2, .cpu = 1, .kind = TF_EV_START, .addr = 7 },
        { .ts = 530, .instance = 7, .seq = 10, .thread = 2, .site = 1, .cpu = 1, .kind = TF_EV_READ, .addr = 0x40 },
    };
    assert_int_equal(tf_finish(synced_with(path, ev, 4, TF_CODEC_NONE, 0), 0), 0);
    const char *hole1 = "# T1: 3 events missing here (dropped by the tracer, lost by its writer, or in a chunk "
                        "--salvage skipped)\n";
    const char *hole2 = "# T2: 8 events missing here (dropped by the tracer, lost by its writer, or in a chunk "
                        "--salvage skipped)\n";
    assert_int_equal(dump(path, 0), 0);
    assert_int_equal(count_lines(out), 6);
    assert_out_has(hole1);
    assert_out_has(hole2);
    assert_true(strstr(out, hole2) < strstr(out, "520 ns start T2"));
    assert_int_equal(dump_opts("--thread 2 --site 1", path, 0), 0);
    assert_int_equal(count_lines(out), 3); /* the hole before site 2's START, and the two events of site 1 */
    assert_null(strstr(out, "T1"));
    assert_out_has(hole2);
    assert_int_equal(dump_opts("--limit 2", path, 0), 0);
    assert_int_equal(count_lines(out), 3);
}

static void test_bad_usage_is_one_line_and_exit_2(void **s)
{
    (void)s;
    assert_int_equal(dump("--no-such-option x", 1), 2);
    assert_int_equal(count_lines(out), 1);
    assert_out_has("tmdump: ");
    assert_int_equal(dump("--limit -3 x", 1), 2);
    assert_int_equal(count_lines(out), 1);
    assert_out_has("--limit");
    assert_int_equal(dump(tu_path("absent.bin"), 1), 2);
    assert_int_equal(count_lines(out), 1);
    assert_out_has("absent.bin");
    assert_int_equal(dump("", 1), 2);
    assert_int_equal(count_lines(out), 1);
    assert_int_equal(dump("--help", 0), 0);
    assert_out_has("--summary");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events_print_one_per_line_in_thread_order),
        cmocka_unit_test(test_abort_prints_the_holder_or_the_version_found),
        cmocka_unit_test(test_filters_select_thread_site_and_limit),
        cmocka_unit_test(test_summary_lists_header_sites_threads_and_phases),
        cmocka_unit_test(test_damage_is_one_line_with_offset_and_salvage_goes_on),
        cmocka_unit_test(test_synced_trace_prints_merged_order_and_models),
        cmocka_unit_test(test_a_hole_in_a_threads_order_is_a_line_before_its_next_event),
        cmocka_unit_test(test_bad_usage_is_one_line_and_exit_2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
