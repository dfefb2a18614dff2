/*
 * test_stress.c - the soak workload (tmbench stress) run briefly: at 2, 4, 8
 * and 16 threads, with tracing off, at transaction level and with every
 * access, on the emulated hardware path, every invariant holds (the
 * workload's check), the program's own count of committed transactions
 * equals the runtime's, and the trace holds exactly that many commits
 * (tmcheck --json), with no dropped events and no grammar violations.
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

static char out[65536];
static char rep[1 << 20];

/* The integer value of "key" in text, or -1 if absent. */
static long long json_int(const char *text, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(text, pat);
    return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

static void soak_once(int threads, const char *level)
{
    const char *trace = tu_path("stress.bin");
    remove(trace);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "TMTRACE_EVENTS=%s TMTRACE_HTM=emulate TMTRACE_FILE='%s' '%s' stress --threads %d "
             "--duration 0.25 --seed %d 2>&1",
             level, trace, tu_build("tmbench/tmbench"), threads, threads);
    int rc = tu_run(cmd, out, sizeof out);
    if (rc != 0 || !strstr(out, "\"check\":\"ok\""))
        print_error("stress at %d threads, events=%s exited %d: %s\n", threads, level, rc, out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "\"check\":\"ok\""));
    assert_int_equal(json_int(out, "threads"), threads);
    long long commits = json_int(out, "commits");
    assert_true(commits > 0);
    assert_int_equal(json_int(out, "tx_counted"), commits);
    assert_int_equal(json_int(out, "opacity_violations"), 0);
    assert_int_equal(json_int(out, "bad_audits"), 0);
    assert_true(json_int(out, "invariant_checks") > 0);
    if (strcmp(level, "off") == 0)
        return;
    snprintf(cmd, sizeof cmd, "'%s' --json '%s' 2>&1", tu_build("tools/tmcheck"), trace);
    rc = tu_run(cmd, rep, sizeof rep);
    if (rc != 0)
        print_error("tmcheck on the stress trace exited %d: %.2000s\n", rc, rep);
    assert_int_equal(rc, 0);
    long long traced = json_int(rep, "commits");
    if (traced != commits)
        print_error("trace has %lld commits, program counted %lld (events=%s, %d threads)\n", traced,
                    commits, level, threads);
    assert_int_equal(traced, commits);
    assert_int_equal(json_int(rep, "transactions"), commits);
    assert_int_equal(json_int(rep, "dropped_events"), 0);
    assert_int_equal(json_int(rep, "grammar_violations"), 0);
    assert_int_equal(json_int(rep, "open_attempts"), 0);
}

static void soak_at_every_level(int threads)
{
    static const char *const levels[] = {"off", "tx", "all"};
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
        soak_once(threads, levels[i]);
}

static void invariants_hold_and_trace_counts_every_commit_at_2_threads(void **state)
{
    (void)state;
    soak_at_every_level(2);
}

static void invariants_hold_and_trace_counts_every_commit_at_4_threads(void **state)
{
    (void)state;
    soak_at_every_level(4);
}

static void invariants_hold_and_trace_counts_every_commit_at_8_threads(void **state)
{
    (void)state;
    soak_at_every_level(8);
}

static void invariants_hold_and_trace_counts_every_commit_at_16_threads(void **state)
{
    (void)state;
    soak_at_every_level(16);
}

static void bad_workload_option_is_refused(void **state)
{
    (void)state;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' stress --accounts 1 --ops 10 2>&1", tu_build("tmbench/tmbench"));
    int rc = tu_run(cmd, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "accounts"));
}

/* tmbench/soak, briefly: its runs pass, each trace's commits are compared
 * with the program's count, and it ends with the summary line. */
static void soak_script_checks_every_traced_run_and_summarises(void **state)
{
    (void)state;
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "'%s/tmbench/soak' --build '%s' --minutes 0.01 --run-seconds 0.2 --all-seconds 0.2 "
             "--threads 2 --levels tx,all 2>&1",
             TMT_SOURCE_ROOT, tu_build(""));
    int rc = tu_run(cmd, rep, sizeof rep);
    if (rc != 0 || !strstr(rep, " passed, 0 failed"))
        print_error("soak exited %d: %.2000s\n", rc, rep);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(rep, "events=tx"));
    assert_non_null(strstr(rep, "commits in traces"));
    assert_null(strstr(rep, "FAILED"));
    assert_null(strstr(rep, "\n0 passed"));
    /* a bad option is one line and exit 2 */
    snprintf(cmd, sizeof cmd, "'%s/tmbench/soak' --levels nope 2>&1", TMT_SOURCE_ROOT);
    assert_int_equal(tu_run(cmd, rep, sizeof rep), 2);
    assert_non_null(strstr(rep, "--levels"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(invariants_hold_and_trace_counts_every_commit_at_2_threads),
        cmocka_unit_test(invariants_hold_and_trace_counts_every_commit_at_4_threads),
        cmocka_unit_test(invariants_hold_and_trace_counts_every_commit_at_8_threads),
        cmocka_unit_test(invariants_hold_and_trace_counts_every_commit_at_16_threads),
        cmocka_unit_test(bad_workload_option_is_refused),
        cmocka_unit_test(soak_script_checks_every_traced_run_and_summarises),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
