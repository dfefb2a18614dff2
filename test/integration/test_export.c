/*
 * test_export.c - tmexport: the Chrome trace-event JSON it writes parses,
 * has one complete slice per transaction attempt, one instant per abort and
 * an arrow from each abort's culprit commit; raw traces are refused unless
 * --raw. Hand-built traces (written with the format module) give known
 * answers; a traced tmbench run checks the counts against tmcheck's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "test_util.h"
#include "tmtrace.h"
#include "trace_file.h"
#include "trace_gen.h"

#define ADDR_A 0x7f0000001000ull
#define ADDR_B 0x7f0000002000ull

/* The counts a JSON reader finds in tmexport's output. */
struct counts {
    int x, x_commit, x_abort, inst, flow_s, flow_f, meta;
    int flow_from, flow_to; /* tid of the last arrow's ends */
    char site[128];         /* name of the first slice */
};

static const char count_py[] =
    "import json,sys\n"
    "d=json.load(open(sys.argv[1]))\n"
    "e=d['traceEvents']\n"
    "X=[v for v in e if v['ph']=='X']\n"
    "s=[v for v in e if v['ph']=='s']; f=[v for v in e if v['ph']=='f']\n"
    "c=sum(1 for v in X if v['args']['outcome']=='commit')\n"
    "print(len(X),c,len(X)-c,sum(1 for v in e if v['ph']=='i'),len(s),len(f),"
    "sum(1 for v in e if v['ph']=='M'),s[-1]['tid'] if s else 0,f[-1]['tid'] if f else 0)\n"
    "print(X[0]['name'] if X else '')\n";

static int parse_json(const char *json_path, struct counts *c)
{
    static int written;
    const char *py = tu_path("count.py");
    if (!written) {
        FILE *f = fopen(py, "w");
        assert_non_null(f);
        fputs(count_py, f);
        fclose(f);
        written = 1;
    }
    char cmd[1200], out[1024];
    snprintf(cmd, sizeof cmd, "python3 '%s' '%s' 2>&1", py, json_path);
    int rc = tu_run(cmd, out, sizeof out);
    if (rc != 0) {
        print_message("json parse failed: %s\n", out);
        return rc;
    }
    memset(c, 0, sizeof *c);
    int n = sscanf(out, "%d %d %d %d %d %d %d %d %d", &c->x, &c->x_commit, &c->x_abort, &c->inst,
                   &c->flow_s, &c->flow_f, &c->meta, &c->flow_from, &c->flow_to);
    assert_int_equal(n, 9);
    char *nl = strchr(out, '\n');
    if (nl) {
        snprintf(c->site, sizeof c->site, "%s", nl + 1);
        c->site[strcspn(c->site, "\n")] = '\0';
    }
    return 0;
}

static struct tf_event ev(uint64_t ts, uint32_t thread, uint8_t kind, uint32_t site, uint64_t inst,
                          uint64_t addr, uint64_t value, uint8_t reason)
{
    struct tf_event e = { .ts = ts, .thread = thread, .kind = kind, .site = site, .instance = inst,
                          .addr = addr, .value = value, .reason = reason, .cpu = (uint16_t)(thread - 1) };
    return e;
}

/* Numbers events (threads 1 and 2) in their thread's program order, as a
 * trace's sequence numbers are: a number skipped is a hole (dropped
 * events). */
static void number_in_program_order(struct tf_event *e, size_t n)
{
    uint64_t next[3] = { 0 };
    for (size_t i = 0; i < n; i++)
        e[i].seq = next[e[i].thread]++;
}

/* A merged, synchronised trace: thread 1 commits a write to A; thread 2's
 * attempt that read A aborts at A (culprit: thread 1); thread 2 retries and
 * commits; thread 1 runs a hardware attempt that aborts, falls back and
 * commits in software; an attempt cut off by the end of the trace. */
static const struct tf_event *demo_events(size_t *n)
{
    static struct tf_event e[32];
    size_t k = 0;
    e[k++] = ev(1000, 1, TF_EV_START, 1, 1, 0, 0, 0);
    e[k++] = ev(1100, 2, TF_EV_START, 2, 1, 0, 0, 0);
    e[k++] = ev(1150, 2, TF_EV_READ, 2, 1, ADDR_A, 5, 8);
    e[k++] = ev(1200, 1, TF_EV_WRITE, 1, 1, ADDR_A, 6, 8);
    e[k++] = ev(1300, 1, TF_EV_COMMIT, 1, 1, 7, 0 | (1ull << 32), 0);
    e[k++] = ev(1400, 2, TF_EV_ABORT, 2, 1, ADDR_A, 0, TMT_ABORT_COMMIT_VALIDATE);
    e[k++] = ev(1500, 2, TF_EV_START, 2, 2, 0, TF_START_RETRY | (1u << 16), 0);
    e[k++] = ev(1550, 2, TF_EV_READ, 2, 2, ADDR_A, 6, 8);
    e[k++] = ev(1560, 2, TF_EV_WRITE, 2, 2, ADDR_B, 1, 8);
    e[k++] = ev(1600, 2, TF_EV_COMMIT, 2, 2, 8, 1 | (1ull << 32), 0);
    e[k++] = ev(2000, 1, TF_EV_START, 1, 2, 0, TF_START_HTM_EMU, 0);
    e[k++] = ev(2100, 1, TF_EV_ABORT, 1, 2, 0, TMT_HTM_CONFLICT | TMT_HTM_RETRY, TMT_ABORT_HTM);
    e[k++] = ev(2110, 1, TF_EV_FALLBACK, 1, 2, 0, TMT_HTM_CONFLICT, TF_FB_ATTEMPTS);
    e[k++] = ev(2200, 1, TF_EV_START, 1, 3, 0, TF_START_RETRY, 0);
    e[k++] = ev(2300, 1, TF_EV_WRITE, 1, 3, ADDR_B, 2, 8);
    e[k++] = ev(2400, 1, TF_EV_COMMIT, 1, 3, 9, 0 | (1ull << 32), 0);
    e[k++] = ev(2500, 2, TF_EV_START, 2, 3, 0, 0, 0); /* no end: cut off */
    number_in_program_order(e, k);
    *n = k;
    return e;
}

static void write_trace(const char *path, unsigned flags, const struct tf_event *e, size_t n)
{
    struct tf_header h = { .version = TF_VERSION, .flags = flags, .tsc_hz = 1000000000ull,
                           .ncpus = 2, .pid = 4242, .events_level = 2 };
    snprintf(h.cmdline, sizeof h.cmdline, "bank \"demo\"");
    struct tf_writer *w = tf_create(path, &h, 0);
    assert_non_null(w);
    struct tf_site s[2] = { { .id = 1, .line = 10 }, { .id = 2, .line = 20 } };
    snprintf(s[0].file, sizeof s[0].file, "bank.c");
    snprintf(s[0].label, sizeof s[0].label, "transfer");
    snprintf(s[1].file, sizeof s[1].file, "bank.c");
    snprintf(s[1].label, sizeof s[1].label, "audit \"all\" \\ accounts");
    struct tf_thread_info t[2] = { { .id = 1, .os_tid = 100 }, { .id = 2, .os_tid = 101 } };
    assert_int_equal(tf_write_sites(w, s, 2), 0);
    assert_int_equal(tf_write_threads(w, t, 2), 0);
    if (n)
        assert_int_equal(tg_write_events(w, 0, e, n, TF_CODEC_NONE, 0), 0);
    assert_int_equal(tf_finish(w, 0), 0);
}

static int export(const char *trace, const char *json, const char *extra, char *err, size_t cap)
{
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "'%s' --chrome %s '%s' -o '%s' 2>&1", tu_build("tools/tmexport"), extra,
             trace, json);
    return tu_run(cmd, err, cap);
}

static size_t count_kind(const struct tf_event *e, size_t n, unsigned kind)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += e[i].kind == kind;
    return c;
}

static void one_slice_per_finished_attempt_and_valid_json(void **state)
{
    (void)state;
    size_t n;
    const struct tf_event *e = demo_events(&n);
    const char *trace = tu_path("demo.sync.bin"), *json = tu_path("demo.json");
    write_trace(trace, TF_HDR_SYNCED, e, n);
    char err[512];
    assert_int_equal(export(trace, json, "", err, sizeof err), 0);
    struct counts c;
    assert_int_equal(parse_json(json, &c), 0);
    assert_int_equal(c.x_commit, (int)count_kind(e, n, TF_EV_COMMIT));
    assert_int_equal(c.x_abort, (int)count_kind(e, n, TF_EV_ABORT));
    /* the START without an end is not a slice */
    assert_int_equal(c.x, (int)count_kind(e, n, TF_EV_START) - 1);
    /* one instant per abort and one per fallback */
    assert_int_equal(c.inst, (int)(count_kind(e, n, TF_EV_ABORT) + count_kind(e, n, TF_EV_FALLBACK)));
    /* site names are the labels, escaped and still valid JSON */
    assert_string_equal(c.site, "transfer (bank.c:10)");
    /* thread names and sort order per thread, plus the process name */
    assert_int_equal(c.meta, 2 * 2 + 1);
}

/* Events dropped between an attempt's START and the end of a later one
 * (its START dropped too) leave no slice spanning the hole: the end is
 * another attempt's. */
static void an_end_after_dropped_events_closes_no_other_attempts_slice(void **state)
{
    (void)state;
    struct tf_event e[5];
    e[0] = ev(1000, 1, TF_EV_START, 1, 1, 0, 0, 0);
    e[1] = ev(1100, 1, TF_EV_READ, 1, 1, ADDR_A, 5, 8);
    e[2] = ev(50000000, 1, TF_EV_COMMIT, 1, 3, 7, 0, 0); /* attempt 3's: 1's end and 3's START dropped */
    e[3] = ev(50000100, 1, TF_EV_START, 1, 4, 0, 0, 0);
    e[4] = ev(50000200, 1, TF_EV_COMMIT, 1, 4, 8, 0, 0);
    for (size_t i = 0; i < 5; i++)
        e[i].seq = i < 2 ? i : i + 4;
    const char *trace = tu_path("hole.sync.bin"), *json = tu_path("hole.json");
    write_trace(trace, TF_HDR_SYNCED, e, 5);
    char err[512];
    assert_int_equal(export(trace, json, "", err, sizeof err), 0);
    struct counts c;
    assert_int_equal(parse_json(json, &c), 0);
    assert_int_equal(c.x, 1);
    assert_int_equal(c.x_commit, 1);
}

static void abort_gets_arrow_from_the_commit_that_wrote_its_address(void **state)
{
    (void)state;
    size_t n;
    const struct tf_event *e = demo_events(&n);
    const char *trace = tu_path("flow.sync.bin"), *json = tu_path("flow.json");
    write_trace(trace, TF_HDR_SYNCED, e, n);
    char err[512];
    assert_int_equal(export(trace, json, "", err, sizeof err), 0);
    struct counts c;
    assert_int_equal(parse_json(json, &c), 0);
    /* only the STM abort at ADDR_A has a known culprit: thread 1's commit */
    assert_int_equal(c.flow_s, 1);
    assert_int_equal(c.flow_f, 1);
    assert_int_equal(c.flow_from, 1);
    assert_int_equal(c.flow_to, 2);

    /* --no-flows leaves the arrows out and nothing else */
    const char *json2 = tu_path("flow2.json");
    assert_int_equal(export(trace, json2, "--no-flows", err, sizeof err), 0);
    struct counts c2;
    assert_int_equal(parse_json(json2, &c2), 0);
    assert_int_equal(c2.flow_s + c2.flow_f, 0);
    assert_int_equal(c2.x, c.x);
}

static void no_arrow_when_the_writer_committed_after_the_abort(void **state)
{
    (void)state;
    struct tf_event e[6];
    e[0] = ev(100, 2, TF_EV_START, 2, 1, 0, 0, 0);
    e[1] = ev(150, 2, TF_EV_ABORT, 2, 1, ADDR_A, 0, TMT_ABORT_READ_LOCKED);
    e[2] = ev(200, 1, TF_EV_START, 1, 1, 0, 0, 0);
    e[3] = ev(250, 1, TF_EV_WRITE, 1, 1, ADDR_A, 1, 8);
    e[4] = ev(300, 1, TF_EV_COMMIT, 1, 1, 3, 1ull << 32, 0);
    number_in_program_order(e, 5);
    const char *trace = tu_path("late.sync.bin"), *json = tu_path("late.json");
    write_trace(trace, TF_HDR_SYNCED, e, 5);
    char err[512];
    assert_int_equal(export(trace, json, "", err, sizeof err), 0);
    struct counts c;
    assert_int_equal(parse_json(json, &c), 0);
    assert_int_equal(c.x, 2);
    assert_int_equal(c.flow_s, 0);
}

static void empty_trace_is_still_valid_json(void **state)
{
    (void)state;
    const char *trace = tu_path("empty.sync.bin"), *json = tu_path("empty.json");
    write_trace(trace, TF_HDR_SYNCED, NULL, 0);
    char err[512];
    assert_int_equal(export(trace, json, "", err, sizeof err), 0);
    struct counts c;
    assert_int_equal(parse_json(json, &c), 0);
    assert_int_equal(c.x, 0);
}

static void raw_trace_refused_unless_raw_flag(void **state)
{
    (void)state;
    size_t n;
    const struct tf_event *e = demo_events(&n);
    const char *trace = tu_path("raw.bin"), *json = tu_path("raw.json");
    write_trace(trace, 0, e, n);
    char err[512];
    assert_int_equal(export(trace, json, "", err, sizeof err), 2);
    assert_non_null(strstr(err, "not synchronised"));
    assert_non_null(strstr(err, "raw.bin"));
    assert_int_equal(strchr(err, '\n'), err + strlen(err) - 1); /* one line */
    struct stat st;
    assert_int_not_equal(stat(json, &st), 0); /* no output left behind */

    assert_int_equal(export(trace, json, "--raw", err, sizeof err), 0);
    struct counts c;
    assert_int_equal(parse_json(json, &c), 0);
    assert_int_equal(c.x, (int)(count_kind(e, n, TF_EV_COMMIT) + count_kind(e, n, TF_EV_ABORT)));
}

static void bad_input_gives_one_line_and_exit_2(void **state)
{
    (void)state;
    const char *bogus = tu_path("bogus.bin");
    FILE *f = fopen(bogus, "w");
    assert_non_null(f);
    fputs("this is not a trace\n", f);
    fclose(f);
    char cmd[1200], out[512];
    const char *cases[] = { "'%s' --chrome '%s' 2>&1 >/dev/null", "'%s' --bogus '%s' 2>&1 >/dev/null",
                            "'%s' --chrome '%s' /nonexistent 2>&1 >/dev/null",
                            "'%s' --chrome 2>&1 >/dev/null" };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(cmd, sizeof cmd, cases[i], tu_build("tools/tmexport"), bogus);
        assert_int_equal(tu_run(cmd, out, sizeof out), 2);
        assert_true(strlen(out) > 0);
        assert_int_equal(strchr(out, '\n'), out + strlen(out) - 1);
    }
    snprintf(cmd, sizeof cmd, "'%s' --chrome '%s' 2>&1 >/dev/null", tu_build("tools/tmexport"), bogus);
    tu_run(cmd, out, sizeof out);
    assert_non_null(strstr(out, "bogus.bin"));
}

/* A real run: every attempt tmcheck counts (commits + aborts) is one slice. */
static long json_key(const char *text, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(text, pat);
    return p ? strtol(p + strlen(pat), NULL, 10) : -1;
}

static void traced_workload_has_one_slice_per_attempt_tmcheck_counts(void **state)
{
    (void)state;
    const char *raw = tu_path("bank.bin"), *synced = tu_path("bank.sync.bin"), *json = tu_path("bank.json");
    char cmd[2000], out[1 << 16];
    snprintf(cmd, sizeof cmd,
             "TMTRACE_FILE='%s' TMTRACE_SKEW='1:200000:50' TMTRACE_MIGRATE=3 '%s' bank --threads 2 "
             "--duration 0.3 >/dev/null && '%s' -o '%s' '%s' >/dev/null",
             raw, tu_build("tmbench/tmbench"), tu_build("tools/tmsync"), synced, raw);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_int_equal(export(synced, json, "", out, sizeof out), 0);
    struct counts c;
    assert_int_equal(parse_json(json, &c), 0);
    snprintf(cmd, sizeof cmd, "'%s' --json '%s'", tu_build("tools/tmcheck"), synced);
    int rc = tu_run(cmd, out, sizeof out);
    assert_true(rc == 0 || rc == 1);
    long commits = json_key(out, "commits"), aborts = json_key(out, "aborts");
    assert_true(commits > 0);
    assert_true(aborts >= 0);
    assert_int_equal(c.x_commit, commits);
    assert_int_equal(c.x_abort, aborts);
    assert_int_equal(c.inst - c.x_abort >= 0, 1);
}

/* Thread 2 finds A locked by thread 1's attempt 1 at 1200; thread 1
 * commits only 1 ms later (it was descheduled while holding the lock). */
static const struct tf_event *held_events(size_t *n)
{
    static struct tf_event e[8];
    size_t k = 0;
    e[k++] = ev(1000, 1, TF_EV_START, 1, 1, 1, 0, 0);
    e[k++] = ev(1050, 2, TF_EV_START, 2, 1, 1, 0, 0);
    e[k++] = ev(1100, 1, TF_EV_WRITE, 1, 1, ADDR_A, 6, 8);
    e[k++] = ev(1150, 2, TF_EV_READ, 2, 1, ADDR_A, 5, 8);
    e[k++] = ev(1200, 2, TF_EV_ABORT, 2, 1, ADDR_A, tf_abort_held(1, 1), TMT_ABORT_READ_LOCKED);
    e[k++] = ev(1001100, 1, TF_EV_COMMIT, 1, 1, 7, 1ull << 32, 0);
    number_in_program_order(e, k);
    *n = k;
    return e;
}

static void an_arrow_from_a_lock_holder_never_ends_before_it_starts(void **st)
{
    (void)st;
    size_t n;
    const struct tf_event *e = held_events(&n);
    const char *trace = tu_path("held.bin"), *json = tu_path("held.json");
    write_trace(trace, TF_HDR_SYNCED, e, n);
    char err[512];
    assert_int_equal(export(trace, json, "", err, sizeof err), 0);
    char cmd[1200], out[256];
    snprintf(cmd, sizeof cmd, "python3 -c \"import json; e=json.load(open('%s'))['traceEvents']; "
             "s=[v for v in e if v['ph']=='s']; f=[v for v in e if v['ph']=='f']; "
             "print(len(s), len(f), s[0]['tid'], float(s[0]['ts']) <= float(f[0]['ts']), f[0]['args']['class'])\"",
             json);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_string_equal(out, "1 1 1 True holder-preempted\n");
}

static void a_time_window_keeps_only_what_overlaps_it(void **st)
{
    (void)st;
    size_t n;
    const struct tf_event *e = held_events(&n);
    const char *trace = tu_path("window.bin"), *json = tu_path("window.json");
    write_trace(trace, TF_HDR_SYNCED, e, n);
    char err[512];
    struct counts c;
    /* from 3 us after the first event: only thread 1's long attempt overlaps */
    assert_int_equal(export(trace, json, "--from 0.000003", err, sizeof err), 0);
    assert_int_equal(parse_json(json, &c), 0);
    assert_int_equal(c.x, 1);
    assert_int_equal(c.flow_s, 0);
    /* around the first (and only) abort, 10 ns each side: both attempts and the arrow */
    assert_int_equal(export(trace, json, "--abort 1 --window 0.00001", err, sizeof err), 0);
    assert_int_equal(parse_json(json, &c), 0);
    assert_int_equal(c.x, 2);
    assert_int_equal(c.flow_s, 1);
    assert_int_not_equal(export(trace, json, "--abort 2", err, sizeof err), 0);
    assert_non_null(strstr(err, "--abort 2: the trace has 1 aborts"));
}

/* An option that would do nothing is refused in one line, exit 2, rather
 * than ignored: --window without --abort, --samples-csv with a window. */
static void an_option_that_would_be_ignored_is_an_error(void **st)
{
    (void)st;
    size_t n;
    const struct tf_event *e = held_events(&n);
    const char *trace = tu_path("ignored.bin");
    write_trace(trace, TF_HDR_SYNCED, e, n);
    static const struct {
        const char *args, *said;
    } cases[] = {
        { "--chrome --window 5", "--window is the half-width around --abort N" },
        { "--samples-csv --abort 1", "--samples-csv writes every sample" },
        { "--samples-csv --abort 1 --window 2", "--samples-csv writes every sample" },
        { "--samples-csv --from 0.5", "--samples-csv writes every sample" },
    };
    char cmd[1200], out[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(cmd, sizeof cmd, "'%s' %s '%s' 2>&1 >/dev/null", tu_build("tools/tmexport"), cases[i].args, trace);
        assert_int_equal(tu_run(cmd, out, sizeof out), 2);
        assert_non_null(strstr(out, cases[i].said));
        assert_int_equal(strchr(out, '\n'), out + strlen(out) - 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_slice_per_finished_attempt_and_valid_json),
        cmocka_unit_test(an_end_after_dropped_events_closes_no_other_attempts_slice),
        cmocka_unit_test(abort_gets_arrow_from_the_commit_that_wrote_its_address),
        cmocka_unit_test(no_arrow_when_the_writer_committed_after_the_abort),
        cmocka_unit_test(empty_trace_is_still_valid_json),
        cmocka_unit_test(raw_trace_refused_unless_raw_flag),
        cmocka_unit_test(bad_input_gives_one_line_and_exit_2),
        cmocka_unit_test(traced_workload_has_one_slice_per_attempt_tmcheck_counts),
        cmocka_unit_test(an_arrow_from_a_lock_holder_never_ends_before_it_starts),
        cmocka_unit_test(a_time_window_keeps_only_what_overlaps_it),
        cmocka_unit_test(an_option_that_would_be_ignored_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
