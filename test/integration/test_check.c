/*
 * test_check.c - tmcheck on hand-built traces whose every count is known:
 * one test per metric, attribution cases, bad input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_util.h"
#include "tmtrace.h"
#include "trace_gen.h"

#define HZ 1000000000ull   /* 1 tick = 1 ns: stamps read as nanoseconds */
#define A1 0x10000ull      /* an address */

static char out[1 << 16];

/* Writes threads th[0..n) as a raw trace and runs tmcheck --json on it. */
static unsigned level = 2;   /* TMTRACE_EVENTS of the generated traces */
/* Format version of the generated traces: the attribution tests below the
 * version 2 ones check that version 1 traces (no identity in the abort
 * records) are still attributed by time. */
static unsigned fmt = 1;
static uint8_t access_stamp; /* header stamp_access of the generated traces (enum tf_stamp) */
static uint8_t commit_stamp; /* header stamp_commit of the generated traces (enum tf_stamp) */
static unsigned stripe_shift; /* header stripe_shift of the generated traces; 0 = tg_header's */

static const char *write_trace(const char *name, struct tg_thread *th, size_t n, uint64_t dropped)
{
    struct tf_header h = tg_header(HZ, level, 0);
    h.version = fmt;
    h.stamp_access = access_stamp;
    h.stamp_commit = commit_stamp;
    if (stripe_shift)
        h.stripe_shift = stripe_shift;
    const char *path = tu_path(name);
    assert_int_equal(tg_write(path, &h, th, n, NULL, 0, dropped, 1000), 0);
    for (size_t i = 0; i < n; i++)
        tg_free(&th[i]);
    return path;
}

/* tmcheck [--json] EXTRA PATH, its stdout and stderr in `out`. */
static int run_check(const char *path, int json, const char *extra)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s %s '%s' 2>&1", tu_build("tools/tmcheck"), json ? "--json" : "",
             extra ? extra : "", path);
    return tu_run(cmd, out, sizeof out);
}

/* `want` is in the tool's output; else the output is shown with the failure. */
static void expect_out(const char *want)
{
    if (!strstr(out, want))
        fail_msg("expected \"%s\" in tmcheck's output:\n%s", want, out);
}

static int check(const char *name, struct tg_thread *th, size_t n, uint64_t dropped, const char *extra)
{
    return run_check(write_trace(name, th, n, dropped), 1, extra);
}

static double J(const char *key) { return tg_json_num(out, NULL, key); }

/* S (R W) C repeated: a consistent thread of `k` transactions from t0. */
static void good_txs(struct tg_thread *t, uint64_t t0, int k, unsigned site)
{
    for (int i = 0; i < k; i++) {
        uint64_t b = t0 + (uint64_t)i * 100;
        tg_ev(t, b, TF_EV_START, 0, site, (uint64_t)i + 1, 0);
        tg_ev(t, b + 10, TF_EV_READ, 8, site, A1 + 64 * (uint64_t)i, 0);
        tg_ev(t, b + 20, TF_EV_WRITE, 8, site, A1 + 64 * (uint64_t)i, 1);
        tg_ev(t, b + 30, TF_EV_COMMIT, 0, site, 1, 1 | (1ull << 32));
    }
}

static void consistent_trace_counts_and_exit_0(void **st)
{
    (void)st;
    struct tg_thread th[2] = { 0 };
    good_txs(&th[0], 1000, 5, 1);
    good_txs(&th[1], 1050, 3, 2);
    assert_int_equal(check("ok.bin", th, 2, 0, NULL), 0);
    assert_true(J("events") == 32);
    assert_true(J("transactions") == 8);
    assert_true(J("commits") == 8);
    assert_true(J("aborts") == 0);
    assert_true(J("temporal_inconsistencies") == 0);
    assert_true(J("grammar_violations") == 0);
    assert_true(J("dropped_events") == 0);
    assert_non_null(strstr(out, "\"consistent\":true"));
}

static void temporal_inconsistency_is_a_backward_or_equal_step_in_program_order(void **st)
{
    (void)st;
    struct tg_thread th[1] = { 0 };
    tg_ev(&th[0], 10, TF_EV_START, 0, 1, 1, 0);
    tg_ev(&th[0], 20, TF_EV_READ, 8, 1, A1, 0);
    tg_ev(&th[0], 20, TF_EV_READ, 8, 1, A1 + 8, 0);   /* equal: 1 */
    tg_ev(&th[0], 15, TF_EV_WRITE, 8, 1, A1, 0);      /* backwards: 2 */
    tg_ev(&th[0], 30, TF_EV_COMMIT, 0, 1, 1, 0);
    assert_int_equal(check("temporal.bin", th, 1, 0, NULL), 1);
    assert_true(J("temporal_inconsistencies") == 2);
    assert_true(J("grammar_violations") == 0);
}

/* TMTRACE_STAMP=boundary: a read or write repeats the stamp before it, so
 * an equal stamp there is by design; anything else equal, or any step back,
 * still counts. */
static void with_repeated_access_stamps_only_reads_and_writes_may_equal_the_stamp_before(void **st)
{
    (void)st;
    struct tg_thread th[1] = { 0 };
    tg_ev(&th[0], 10, TF_EV_START, 0, 1, 1, 0);
    tg_ev(&th[0], 10, TF_EV_READ, 8, 1, A1, 0);       /* repeated: fine */
    tg_ev(&th[0], 10, TF_EV_WRITE, 8, 1, A1, 0);      /* repeated: fine */
    tg_ev(&th[0], 10, TF_EV_COMMIT, 0, 1, 1, 0);      /* equal commit: 1 */
    tg_ev(&th[0], 20, TF_EV_START, 0, 1, 2, 0);
    tg_ev(&th[0], 15, TF_EV_READ, 8, 1, A1, 0);       /* backwards: 2 */
    tg_ev(&th[0], 30, TF_EV_COMMIT, 0, 1, 1, 0);
    access_stamp = TF_STAMP_REPEATED;
    fmt = 2;
    int rc = check("repeated.bin", th, 1, 0, NULL);
    fmt = 1;
    access_stamp = TF_STAMP_UNKNOWN;
    assert_int_equal(rc, 1);
    assert_true(J("temporal_inconsistencies") == 2);
}

static void grammar_counts_each_break_and_resynchronises_at_start(void **st)
{
    (void)st;
    struct tg_thread th[1] = { 0 };
    tg_ev(&th[0], 10, TF_EV_START, 0, 1, 1, 0);
    tg_ev(&th[0], 20, TF_EV_READ, 8, 1, A1, 0);
    tg_ev(&th[0], 30, TF_EV_COMMIT, 0, 1, 1, 0);
    tg_ev(&th[0], 40, TF_EV_READ, 8, 1, A1, 0);     /* op outside a transaction: break 1 */
    tg_ev(&th[0], 45, TF_EV_WRITE, 8, 1, A1, 0);    /* same break, not counted again */
    tg_ev(&th[0], 50, TF_EV_START, 0, 1, 2, 0);
    tg_ev(&th[0], 60, TF_EV_WRITE, 8, 1, A1, 0);
    tg_ev(&th[0], 70, TF_EV_START, 0, 1, 3, 0);     /* start inside a transaction: break 2 */
    tg_ev(&th[0], 75, TF_EV_FALLBACK, 3, 1, 0, 0);  /* ignored by the grammar */
    tg_ev(&th[0], 80, TF_EV_ABORT, 2, 1, A1, 0);
    tg_ev(&th[0], 90, TF_EV_START, 0, 1, 4, 0);
    tg_ev(&th[0], 95, TF_EV_COMMIT, 0, 1, 4, 0);
    assert_int_equal(check("grammar.bin", th, 1, 0, NULL), 1);
    assert_true(J("grammar_violations") == 2);
    assert_true(J("temporal_inconsistencies") == 0);
}

static void out_of_place_events_are_those_whose_timestamp_rank_differs(void **st)
{
    (void)st;
    struct tg_thread th[1] = { 0 };
    tg_ev(&th[0], 10, TF_EV_START, 0, 1, 1, 0);
    tg_ev(&th[0], 20, TF_EV_READ, 8, 1, A1, 0);
    tg_ev(&th[0], 40, TF_EV_READ, 8, 1, A1 + 8, 0);   /* rank 3 in time, 2 in program */
    tg_ev(&th[0], 30, TF_EV_WRITE, 8, 1, A1, 0);      /* rank 2 in time, 3 in program */
    tg_ev(&th[0], 50, TF_EV_COMMIT, 0, 1, 1, 0);
    assert_int_equal(check("oop.bin", th, 1, 0, NULL), 1);
    assert_true(J("count") == 2);                     /* out_of_place_events.count */
    assert_true(fabs(J("percent") - 40.0) < 1e-9);
    assert_true(J("temporal_inconsistencies") == 1);
    assert_true(J("grammar_violations") == 0);
}

static void late_start_is_an_operation_stamped_before_its_start(void **st)
{
    (void)st;
    struct tg_thread th[1] = { 0 };
    tg_ev(&th[0], 20, TF_EV_START, 0, 1, 1, 0);
    tg_ev(&th[0], 10, TF_EV_READ, 8, 1, A1, 0);
    tg_ev(&th[0], 30, TF_EV_COMMIT, 0, 1, 1, 0);
    good_txs(&th[0], 100, 2, 1);
    assert_int_equal(check("late.bin", th, 1, 0, NULL), 1);
    assert_true(J("late_starts") == 1);
    assert_true(J("premature_ends") == 0);
}

static void premature_end_is_an_operation_stamped_after_its_commit_or_abort(void **st)
{
    (void)st;
    struct tg_thread th[1] = { 0 };
    tg_ev(&th[0], 10, TF_EV_START, 0, 1, 1, 0);
    tg_ev(&th[0], 50, TF_EV_WRITE, 8, 1, A1, 0);
    tg_ev(&th[0], 40, TF_EV_COMMIT, 0, 1, 1, 0);
    tg_ev(&th[0], 60, TF_EV_START, 0, 1, 2, 0);
    tg_ev(&th[0], 90, TF_EV_READ, 8, 1, A1, 0);
    tg_ev(&th[0], 80, TF_EV_ABORT, 1, 1, A1, 0);
    tg_ev(&th[0], 100, TF_EV_START, 0, 1, 3, 0);
    tg_ev(&th[0], 110, TF_EV_COMMIT, 0, 1, 3, 0);
    assert_int_equal(check("premature.bin", th, 1, 0, NULL), 1);
    assert_true(J("premature_ends") == 2);
    assert_true(J("late_starts") == 0);
}

/* Victim (thread 1, site 1) reads `vaddr` in [100, 200] and aborts for
 * `reason`; thread 2 (site 2) writes `caddr` and commits at `commit`. */
static int conflict_case(const char *name, uint64_t vaddr, uint64_t caddr, uint64_t commit, const char *extra)
{
    struct tg_thread th[2] = { 0 };
    tg_ev(&th[0], 100, TF_EV_START, 0, 1, 1, 0);
    tg_ev(&th[0], 110, TF_EV_READ, 8, 1, vaddr, 0);
    tg_ev(&th[0], 200, TF_EV_ABORT, 2, 1, vaddr, 0);
    tg_ev(&th[0], 210, TF_EV_START, 0, 1, 2, TF_START_RETRY);
    tg_ev(&th[0], 220, TF_EV_READ, 8, 1, vaddr, 0);
    tg_ev(&th[0], 230, TF_EV_COMMIT, 0, 1, 3, 1);
    tg_ev(&th[1], commit - 20, TF_EV_START, 0, 2, 7, 0);
    tg_ev(&th[1], commit - 10, TF_EV_WRITE, 8, 2, caddr, 5);
    tg_ev(&th[1], commit, TF_EV_COMMIT, 0, 2, 9, 1ull << 32);
    return check(name, th, 2, 0, extra);
}

/* The stripe width tmcheck reads from a generated trace: recorded from
 * version 3 on, 8-byte words before. */
static unsigned gen_shift(void) { return fmt >= 3 ? TG_STRIPE_SHIFT : TF_STRIPE_SHIFT_V2; }

/* The stripe of `a` in the generated trace, by its version's hash. */
static uint64_t gen_stripe(uint64_t a)
{
    return fmt <= 4 ? tf_stripe_index_v4(a, TG_STRIPES_LOG2, gen_shift())
                    : tf_stripe_index(a, TG_STRIPES_LOG2, gen_shift());
}

/* An address on the same stripe as `a` (the generated trace's stripes), in
 * the next group of blocks, so another word: its place in the group is a's
 * stripe XORed with what that group's number adds, which is the stripe of
 * the group's first block. */
static uint64_t same_stripe_other_word(uint64_t a)
{
    uint64_t mask = (1ull << TG_STRIPES_LOG2) - 1, g = (a >> gen_shift() >> TG_STRIPES_LOG2) + 1;
    uint64_t add = gen_stripe(g << TG_STRIPES_LOG2 << gen_shift());
    uint64_t other = (g << TG_STRIPES_LOG2 | ((gen_stripe(a) ^ add) & mask)) << gen_shift();
    assert_true(gen_stripe(other) == gen_stripe(a));
    return other;
}

/* The word next to A1 shares its 16-byte stripe in a version 3 trace (a
 * false conflict) but not the 8-byte one of a version 2 trace (no conflict):
 * tmcheck hashes with the width the trace records. */
static void a_neighbouring_word_conflicts_falsely_only_within_the_recorded_stripe_width(void **st)
{
    (void)st;
    fmt = 3;
    int rc3 = conflict_case("width3.bin", A1, A1 + 8, 150, NULL);
    double false3 = J("false_conflicts"), free3 = J("conflict_free_aborts");
    fmt = 2;
    int rc2 = conflict_case("width2.bin", A1, A1 + 8, 150, NULL);
    fmt = 1;
    assert_int_equal(rc3, 0);
    assert_true(false3 == 1 && free3 == 0);
    assert_int_equal(rc2, 0);
    assert_true(J("false_conflicts") == 0);
    assert_true(J("conflict_free_aborts") == 1);
}

/* From version 5 the runtime mixes a block's group into its stripe
 * (tf_stripe_index): tmcheck attributes a version 5 trace with that hash and
 * an older one with the fold it was recorded with, so the partner that
 * shares A1's stripe under one hash is a different stripe under the other. */
static void stripes_are_attributed_with_the_hash_of_the_traces_version(void **st)
{
    (void)st;
    fmt = 3;
    uint64_t partner_v4 = same_stripe_other_word(A1);
    fmt = TF_VERSION;
    uint64_t partner = same_stripe_other_word(A1);
    int rc_mix = conflict_case("hash-mix.bin", A1, partner, 150, NULL);
    double mix_false = J("false_conflicts");
    int rc_old = conflict_case("hash-old.bin", A1, partner_v4, 150, NULL);
    double old_false = J("false_conflicts"), old_free = J("conflict_free_aborts");
    fmt = 3;
    int rc_v3 = conflict_case("hash-v3.bin", A1, partner_v4, 150, NULL);
    fmt = 1;
    assert_true(partner != partner_v4);
    assert_int_equal(rc_mix, 0);
    assert_true(mix_false == 1);
    assert_int_equal(rc_old, 0);
    assert_true(old_false == 0 && old_free == 1);
    assert_int_equal(rc_v3, 0);
    assert_true(J("false_conflicts") == 1);
}

/* A width no runtime writes (a crafted header, CRC and all) is analysed and
 * reported as the runtime's default, never used to shift by. */
static void a_recorded_stripe_width_out_of_range_is_the_default_in_analysis_and_report(void **st)
{
    (void)st;
    fmt = 3;
    stripe_shift = 200;
    int rc = conflict_case("width-bad.bin", A1, A1 + 8, 150, NULL);
    stripe_shift = 0;
    fmt = 1;
    assert_int_equal(rc, 0);
    assert_true(J("stripe_shift") == TG_STRIPE_SHIFT);
    assert_true(J("false_conflicts") == 1);
}

static void attribution_true_conflict_names_the_culprit(void **st)
{
    (void)st;
    char extra[600];
    snprintf(extra, sizeof extra, "--csv '%s'", tu_path("attr"));
    assert_int_equal(conflict_case("true.bin", A1, A1, 150, extra), 0);
    assert_true(J("stm_aborts") == 1);
    assert_true(J("true_conflicts") == 1);
    assert_true(J("false_conflicts") == 0);
    assert_true(J("conflict_free_aborts") == 0);
    const char *c = strstr(out, "\"conflicts\":[");
    assert_non_null(c);
    assert_true(tg_json_num(out, c, "victim_site") == 1);
    assert_true(tg_json_num(out, c, "culprit_site") == 2);
    assert_true(tg_json_num(out, c, "wasted_ns") == 100);
    /* the culprit: thread 2, site 2, instance 7, committed at 150 */
    char *csv = tu_read_in(tu_path("attr"), "aborts.csv", NULL);
    assert_non_null(csv);
    assert_non_null(strstr(csv, "\n1,1,1,100,200,read-version,true,2,2,7,150,0x10000,true-conflict,0,"
                                "site1 (gen.c:10),site2 (gen.c:20),heap or stack\n"));
    free(csv);
}

/* A count of one abort reads "1 abort" in every line of the text report
 * that counts aborts: the totals, the site, the data and the triage. */
static void the_text_report_says_one_abort_in_the_singular(void **st)
{
    (void)st;
    assert_int_equal(conflict_case("one.bin", A1, A1, 150, NULL), 0);
    assert_true(J("stm_aborts") == 1);
    run_check(tu_path("one.bin"), 0, NULL);
    assert_null(strstr(out, " 1 aborts"));
    expect_out("in 1 abort)");
    expect_out(": 1 abort of ");
    expect_out(": 1 abort, ");
    expect_out("time, 1 abort: ");
}

/* A word in a thread's recorded stack is named as that stack, one name in
 * the text, the JSON and the CSV; one outside every stack as the heap. */
static void a_word_in_a_threads_stack_is_named_as_that_stack_everywhere(void **st)
{
    (void)st;
    static const uint64_t stacks[2][2] = { { 0x40000, 0x48000 }, { A1 - 0x1000, A1 + 0x7000 } };
    const char *want = "stack of thread 2 (+0x1000)";
    char extra[600];
    snprintf(extra, sizeof extra, "--csv '%s'", tu_path("stack"));
    tg_stacks = stacks;
    int rc = conflict_case("stack.bin", A1, A1, 150, extra);
    tg_stacks = NULL;
    assert_int_equal(rc, 0);
    expect_out(want);
    char *csv = tu_read_in(tu_path("stack"), "aborts.csv", NULL);
    assert_non_null(csv);
    if (!strstr(csv, want))
        fail_msg("aborts.csv does not name the stack:\n%s", csv);
    free(csv);
    assert_int_equal(run_check(tu_path("stack.bin"), 0, NULL), 0);
    expect_out(want);
    /* the stack is one data object, the word its field */
    expect_out("stack of thread 2 (");
    /* the same conflict on a word in no thread's stack: the heap */
    tg_stacks = stacks;
    rc = conflict_case("heap.bin", A1 + 0x100000, A1 + 0x100000, 150, NULL);
    tg_stacks = NULL;
    assert_int_equal(rc, 0);
    assert_null(strstr(out, "heap or stack"));
    expect_out("\"heap\"");
}

static void attribution_false_conflict_is_same_stripe_other_address(void **st)
{
    (void)st;
    assert_int_equal(conflict_case("false.bin", A1, same_stripe_other_word(A1), 150, NULL), 0);
    assert_true(J("true_conflicts") == 0);
    assert_true(J("false_conflicts") == 1);
    assert_true(J("conflict_free_aborts") == 0);
}

/* Commit-time validation records only the stripe that changed: thread 1
 * reads A1 and fails validation on A1's stripe at 200; thread 2 wrote
 * `caddr` and committed at 150. */
static int validate_case(const char *name, uint64_t caddr)
{
    struct tg_thread th[2] = { 0 };
    tg_ev(&th[0], 100, TF_EV_START, 0, 1, 1, 0);
    tg_ev(&th[0], 110, TF_EV_READ, 8, 1, A1, 0);
    tg_ev(&th[0], 200, TF_EV_ABORT, TMT_ABORT_COMMIT_VALIDATE, 1, gen_stripe(A1), 0);
    tg_ev(&th[0], 210, TF_EV_START, 0, 1, 2, TF_START_RETRY);
    tg_ev(&th[0], 230, TF_EV_COMMIT, 0, 1, 3, 0);
    tg_ev(&th[1], 130, TF_EV_START, 0, 2, 7, 0);
    tg_ev(&th[1], 140, TF_EV_WRITE, 8, 2, caddr, 5);
    tg_ev(&th[1], 150, TF_EV_COMMIT, 0, 2, 9, 1ull << 32);
    return check(name, th, 2, 0, NULL);
}

static void a_failed_validation_is_true_when_the_culprit_wrote_the_word_read(void **st)
{
    (void)st;
    assert_int_equal(validate_case("validate-true.bin", A1), 0);
    assert_true(J("true_conflicts") == 1);
    assert_true(J("false_conflicts") == 0);
    assert_true(J("conflict_free_aborts") == 0);
    assert_int_equal(validate_case("validate-false.bin", same_stripe_other_word(A1)), 0);
    assert_true(J("true_conflicts") == 0);
    assert_true(J("false_conflicts") == 1);
    assert_true(J("conflict_free_aborts") == 0);
}

static void abort_without_conflicting_commit_in_window_is_conflict_free(void **st)
{
    (void)st;
    /* a different stripe inside the window */
    assert_int_equal(conflict_case("free1.bin", A1, A1 + 4096, 150, NULL), 0);
    assert_true(J("conflict_free_aborts") == 1);
    /* the same address, but committed before the attempt started */
    assert_int_equal(conflict_case("free2.bin", A1, A1, 60, NULL), 0);
    assert_true(J("conflict_free_aborts") == 1);
    assert_true(J("true_conflicts") == 0);
}

/* Thread 1 reads A1 and aborts read-locked at 200, naming thread 2 as the
 * holder; thread 2 started at 150 and ends at 260 with `outcome`, and runs
 * again from 300 to 400 writing A1 and committing. */
static int locked_case(const char *name, unsigned outcome)
{
    struct tg_thread th[2] = { 0 };
    tg_ev(&th[0], 100, TF_EV_START, 0, 1, 1, 0);
    tg_ev(&th[0], 110, TF_EV_READ, 8, 1, A1, 0);
    tg_ev(&th[0], 200, TF_EV_ABORT, TMT_ABORT_READ_LOCKED, 1, A1, 2);
    tg_ev(&th[0], 500, TF_EV_START, 0, 1, 2, TF_START_RETRY);
    tg_ev(&th[0], 510, TF_EV_COMMIT, 0, 1, 0, 0);
    tg_ev(&th[1], 150, TF_EV_START, 0, 2, 7, 0);
    tg_ev(&th[1], 160, TF_EV_WRITE, 8, 2, A1, 5);
    if (outcome == TF_EV_COMMIT)
        tg_ev(&th[1], 260, TF_EV_COMMIT, 0, 2, 9, 1ull << 32);
    else
        tg_ev(&th[1], 260, TF_EV_ABORT, TMT_ABORT_COMMIT_VALIDATE, 2, A1, 0);
    tg_ev(&th[1], 300, TF_EV_START, 0, 2, 8, TF_START_RETRY);
    tg_ev(&th[1], 310, TF_EV_WRITE, 8, 2, A1, 6);
    tg_ev(&th[1], 400, TF_EV_COMMIT, 0, 2, 10, 1ull << 32);
    return check(name, th, 2, 0, NULL);
}

static void a_read_locked_abort_is_caused_by_the_holder_committing_after_it(void **st)
{
    (void)st;
    /* The holder's COMMIT is stamped after the victim's abort (it was
     * writing back while holding the lock): it is still the culprit. */
    assert_int_equal(locked_case("locked-commit.bin", TF_EV_COMMIT), 0);
    assert_true(J("stm_aborts") == 1);
    assert_true(J("true_conflicts") == 1);
    assert_true(J("conflict_free_aborts") == 0);
}

static void a_read_locked_abort_whose_holder_aborted_is_conflict_free(void **st)
{
    (void)st;
    /* The holder gave its locks back without committing; its later retry
     * started after the victim's abort and cannot have held the lock. */
    assert_int_equal(locked_case("locked-abort.bin", TF_EV_ABORT), 0);
    assert_true(J("stm_aborts") == 2);          /* the victim's and the holder's */
    assert_true(J("conflict_free_aborts") == 2);
    assert_true(J("true_conflicts") == 0);
}

static void without_reads_and_writes_conflict_freedom_is_not_claimed(void **st)
{
    (void)st;
    level = 1;
    struct tg_thread th[2] = { 0 };
    tg_ev(&th[0], 100, TF_EV_START, 0, 1, 1, 0);
    tg_ev(&th[0], 200, TF_EV_ABORT, 2, 1, A1, 0);
    tg_ev(&th[0], 210, TF_EV_START, 0, 1, 2, TF_START_RETRY);
    tg_ev(&th[0], 230, TF_EV_COMMIT, 0, 1, 3, 1);
    tg_ev(&th[1], 130, TF_EV_START, 0, 2, 7, 0);
    tg_ev(&th[1], 150, TF_EV_COMMIT, 0, 2, 9, 1ull << 32);
    int rc = check("level1.bin", th, 2, 0, NULL);
    level = 2;
    assert_int_equal(rc, 0);
    assert_true(J("stm_aborts") == 1);
    assert_non_null(strstr(out, "\"conflict_free_aborts\":null"));
}

/* Time in serial mode runs from the SERIAL record to the attempt's end. */
static void serial_attempts_and_their_time_alone_are_reported(void **st)
{
    (void)st;
    struct tg_thread th[1] = { 0 };
    tg_ev(&th[0], 0, TF_EV_START, 0, 3, 1, 0);
    tg_ev(&th[0], 10, TF_EV_ABORT, 2, 3, 0, 0);
    tg_ev(&th[0], 20, TF_EV_START, 0, 3, 2, TF_START_RETRY | TF_START_SERIAL);
    tg_ev(&th[0], 25, TF_EV_SERIAL, TF_SERIAL_CONTENTION, 3, 1, 0);
    tg_ev(&th[0], 65, TF_EV_COMMIT, 0, 3, 3, 1);
    tg_ev(&th[0], 70, TF_EV_START, 0, 3, 3, TF_START_SERIAL);
    tg_ev(&th[0], 72, TF_EV_SERIAL, TF_SERIAL_REQUESTED, 3, 0, 0);
    tg_ev(&th[0], 80, TF_EV_ABORT, 6, 3, 0, 0);
    assert_int_equal(check("serial.bin", th, 1, 0, NULL), 0);
    assert_true(J("serial_attempts") == 2);
    assert_true(J("serial_ns") == 40 + 8);
    assert_true(J("grammar_violations") == 0);
    assert_true(J("commits") == 1);
    /* each by its reason; a lone thread kept nobody waiting */
    assert_true(J("serial_requested") == 1);
    assert_true(J("serial_contention") == 1);
    assert_true(J("serial_overlapped") == 0);
    assert_int_equal(run_check(tu_path("serial.bin"), 0, NULL), 0);
    expect_out("the program's request 1, the runtime's policy after repeated conflicts 1");
    expect_out("nothing waited");
    assert_null(strstr(out, "every other transaction waited"));
}

/* A serial attempt that another thread's transaction met kept it waiting. */
static void a_serial_attempt_met_by_another_transaction_made_it_wait(void **st)
{
    (void)st;
    struct tg_thread th[2] = { 0 };
    tg_ev(&th[0], 0, TF_EV_START, 0, 3, 1, TF_START_SERIAL);
    tg_ev(&th[0], 5, TF_EV_SERIAL, TF_SERIAL_REQUESTED, 3, 0, 0);
    tg_ev(&th[0], 50, TF_EV_COMMIT, 0, 3, 1, 1);
    tg_ev(&th[1], 10, TF_EV_START, 0, 4, 1, 0);
    tg_ev(&th[1], 60, TF_EV_COMMIT, 0, 4, 1, 1);
    assert_int_equal(check("serial2.bin", th, 2, 0, NULL), 0);
    assert_true(J("serial_overlapped") == 1);
}

/* ---- version 2: attribution by identity --------------------------------- */

/* Victim (thread 1, site 1) reads `vaddr`, aborts at 200 with `reason`,
 * `found` in the record; thread 2 (site 2, instance 7) writes `c2addr` and
 * commits version 9 at 150; thread 3 (site 3, instance 4) writes A1 and
 * commits version 10 at 180, later, on the same word. */
static int identity_case(const char *name, unsigned reason, uint64_t vaddr, uint64_t c2addr, uint64_t found,
                         const char *extra)
{
    struct tg_thread th[3] = { 0 };
    tg_ev(&th[0], 100, TF_EV_START, 0, 1, 1, 0);
    tg_ev(&th[0], 110, TF_EV_READ, 8, 1, vaddr, 0);
    tg_ev(&th[0], 200, TF_EV_ABORT, reason, 1, vaddr, found);
    tg_ev(&th[0], 210, TF_EV_START, 0, 1, 2, TF_START_RETRY);
    tg_ev(&th[0], 230, TF_EV_COMMIT, 0, 1, 0, 1);
    tg_ev(&th[1], 130, TF_EV_START, 0, 2, 7, 0);
    tg_ev(&th[1], 140, TF_EV_WRITE, 8, 2, c2addr, 5);
    tg_ev(&th[1], 150, TF_EV_COMMIT, 0, 2, 9, 1ull << 32);
    tg_ev(&th[2], 160, TF_EV_START, 0, 3, 4, 0);
    tg_ev(&th[2], 170, TF_EV_WRITE, 8, 3, A1, 6);
    tg_ev(&th[2], 180, TF_EV_COMMIT, 0, 3, 10, 1ull << 32);
    fmt = 2;
    int rc = check(name, th, 3, 0, extra);
    fmt = 1;
    return rc;
}

static char *abort_rows(const char *dir)
{
    return tu_read_in(tu_path(dir), "aborts.csv", NULL);
}

static void a_version_found_names_the_commit_that_wrote_it_not_the_latest(void **st)
{
    (void)st;
    char extra[600];
    snprintf(extra, sizeof extra, "--csv '%s'", tu_path("id-version"));
    assert_int_equal(identity_case("id-version.bin", TMT_ABORT_READ_VERSION, A1, A1, 9, extra), 0);
    assert_true(J("true_conflicts") == 1);
    assert_true(J("conflict_free_aborts") == 0);
    char *csv = abort_rows("id-version");
    assert_non_null(csv);
    /* version 9 is thread 2's commit, although thread 3 committed on the word later */
    assert_non_null(strstr(csv, "\n1,1,1,100,200,read-version,true,2,2,7,150,0x10000,true-conflict,1,"
                                "site1 (gen.c:10),site2 (gen.c:20),heap or stack\n"));
    free(csv);
}

static void a_version_written_on_another_word_of_the_stripe_is_a_false_conflict(void **st)
{
    (void)st;
    char extra[600];
    snprintf(extra, sizeof extra, "--csv '%s'", tu_path("id-false"));
    uint64_t other = same_stripe_other_word(A1);
    assert_int_equal(identity_case("id-false.bin", TMT_ABORT_COMMIT_VALIDATE, A1, other, 9, extra), 0);
    assert_true(J("false_conflicts") == 1);
    assert_true(J("true_conflicts") == 0);
    char *csv = abort_rows("id-false");
    assert_non_null(csv);
    assert_non_null(strstr(csv, ",commit-validate,false,2,2,7,150,0x10000,false-conflict,1,"));
    free(csv);
}

/* Thread 1 finds A1 locked at 200 by thread 2's attempt 7 (started at 150);
 * that attempt ends at `end` with `outcome`, on CPU `cpu2` at its end. */
static int holder_case(const char *name, uint64_t end, unsigned outcome, unsigned cpu2)
{
    struct tg_thread th[2] = { 0 };
    tg_ev(&th[0], 100, TF_EV_START, 0, 1, 1, 0);
    tg_ev(&th[0], 110, TF_EV_READ, 8, 1, A1, 0);
    tg_ev(&th[0], 200, TF_EV_ABORT, TMT_ABORT_READ_LOCKED, 1, A1, tf_abort_held(2, 7));
    tg_ev(&th[0], end + 100, TF_EV_START, 0, 1, 2, TF_START_RETRY);
    tg_ev(&th[0], end + 110, TF_EV_COMMIT, 0, 1, 0, 0);
    tg_ev(&th[1], 150, TF_EV_START, 0, 2, 7, 0);
    tg_ev(&th[1], 160, TF_EV_WRITE, 8, 2, A1, 5);
    if (outcome == TF_EV_COMMIT)
        tg_add(&th[1], end, end, cpu2, TF_EV_COMMIT, 0, 2, 9, 1ull << 32);
    else
        tg_add(&th[1], end, end, cpu2, TF_EV_ABORT, TMT_ABORT_READ_VERSION, 2, A1 + 8, 3);
    fmt = 2;
    int rc = check(name, th, 2, 0, NULL);
    fmt = 1;
    return rc;
}

static double class_count(const char *cls)
{
    const char *c = strstr(out, "\"classes\":{");
    assert_non_null(c);
    const char *k = strstr(c, cls);
    assert_non_null(k);
    return tg_json_num(out, k, "count");
}

static void a_lock_holder_that_commits_soon_after_is_a_running_holder(void **st)
{
    (void)st;
    assert_int_equal(holder_case("holder-running.bin", 260, TF_EV_COMMIT, 0), 0);
    assert_true(class_count("\"holder-running\"") == 1);
    assert_true(J("conflict_free_aborts") == 0);
}

static void a_lock_holder_descheduled_for_milliseconds_is_a_preempted_holder(void **st)
{
    (void)st;
    /* 5 ms between its write and its commit: longer than any commit path */
    assert_int_equal(holder_case("holder-gap.bin", 5000160, TF_EV_COMMIT, 0), 0);
    assert_true(class_count("\"holder-preempted\"") == 1);
    assert_true(J("conflict_free_aborts") == 0);
}

static void a_lock_holder_that_moved_to_another_core_is_a_preempted_holder(void **st)
{
    (void)st;
    assert_int_equal(holder_case("holder-moved.bin", 260, TF_EV_COMMIT, 1), 0);
    assert_true(class_count("\"holder-preempted\"") == 1);
}

static void a_lock_holder_that_never_commits_is_an_aborted_holder_not_conflict_free(void **st)
{
    (void)st;
    assert_int_equal(holder_case("holder-aborted.bin", 260, TF_EV_ABORT, 0), 0);
    /* the victim's abort; the holder's own abort found version 3, which no commit in the trace wrote */
    assert_true(class_count("\"holder-aborted\"") == 1);
    assert_true(class_count("\"conflict-free\"") == 1);
}

/* Thread 2's attempt 7 writes A1 and commits version 9 at 170, then ends
 * two hundred more attempts `apart` units apart from `first`; thread 1,
 * which read A1 at 110, records its abort on the lock held by attempt 7
 * only after them all. The holder must still be named, and running. */
static void holder_named_after_two_hundred_attempts(const char *name, uint64_t first, uint64_t apart)
{
    struct tg_thread th[2] = { 0 };
    tg_ev(&th[1], 150, TF_EV_START, 0, 2, 7, 0);
    tg_ev(&th[1], 160, TF_EV_WRITE, 8, 2, A1, 5);
    tg_ev(&th[1], 170, TF_EV_COMMIT, 0, 2, 9, 1ull << 32);
    uint64_t ts = first;
    for (uint64_t inst = 8; inst < 208; inst++, ts += apart) {
        tg_ev(&th[1], ts, TF_EV_START, 0, 2, inst, 0);
        tg_ev(&th[1], ts + 5, TF_EV_COMMIT, 0, 2, 0, 0);
    }
    tg_ev(&th[0], 100, TF_EV_START, 0, 1, 1, 0);
    tg_ev(&th[0], 110, TF_EV_READ, 8, 1, A1, 0);
    tg_ev(&th[0], ts, TF_EV_ABORT, TMT_ABORT_READ_LOCKED, 1, A1, tf_abort_held(2, 7));
    tg_ev(&th[0], ts + 10, TF_EV_START, 0, 1, 2, TF_START_RETRY);
    tg_ev(&th[0], ts + 20, TF_EV_COMMIT, 0, 1, 0, 0);
    fmt = 2;
    int rc = check(name, th, 2, 0, NULL);
    fmt = 1;
    assert_int_equal(rc, 0);
    assert_true(J("holder_unknown") == 0);
    assert_true(J("conflict_free_aborts") == 0);
    assert_true(class_count("\"holder-running\"") == 1);
}

/* A holder whose attempts take nanoseconds ends two hundred more between
 * the lock the victim found and the victim's ABORT record (its rollback, a
 * chunk handed over): the holder is still named, not unknown. */
static void a_lock_holder_that_ended_hundreds_of_attempts_before_the_abort_record_is_still_named(void **st)
{
    (void)st;
    holder_named_after_two_hundred_attempts("holder-long-ago.bin", 180, 10);
}

/* The victim is descheduled between reading the lock and recording its
 * abort, 10 ms, while the holder's attempts end 50 us apart: more than its
 * ring of ended attempts keeps (those of the last 100 us, at least 64).
 * The holder's commit is found by its version all the same. */
static void a_lock_holder_that_committed_long_before_a_descheduled_victims_abort_record_is_still_named(void **st)
{
    (void)st;
    holder_named_after_two_hundred_attempts("holder-before-desched.bin", 50000, 50000);
}

/* The victim (thread 1) aborts at 200 on version 9, retries at 300 and
 * commits at 3000; thread 2's commit of version 9 is stamped at
 * `commit_at`. */
static int late_commit_case(const char *name, uint8_t stamp, uint64_t commit_at)
{
    struct tg_thread th[2] = { 0 };
    tg_ev(&th[0], 100, TF_EV_START, 0, 1, 1, 0);
    tg_ev(&th[0], 110, TF_EV_READ, 8, 1, A1, 0);
    tg_ev(&th[0], 200, TF_EV_ABORT, TMT_ABORT_READ_VERSION, 1, A1, 9);
    tg_ev(&th[0], 300, TF_EV_START, 0, 1, 2, TF_START_RETRY);
    tg_ev(&th[0], 3000, TF_EV_COMMIT, 0, 1, 0, 1);
    tg_ev(&th[1], 130, TF_EV_START, 0, 2, 7, 0);
    tg_ev(&th[1], 140, TF_EV_WRITE, 8, 2, A1, 5);
    tg_ev(&th[1], commit_at, TF_EV_COMMIT, 0, 2, 9, 1ull << 32);
    fmt = 2;
    commit_stamp = stamp;
    int rc = check(name, th, 2, 0, NULL);
    fmt = 1;
    commit_stamp = 0;
    return rc;
}

static void an_unordered_commit_stamp_may_follow_the_abort_it_caused_by_the_reorder_window(void **st)
{
    (void)st;
    /* rdtsc may execute late by the reorder window: 1.5 us late still names the culprit */
    assert_int_equal(late_commit_case("late-unordered.bin", TF_STAMP_UNORDERED, 1700), 0);
    assert_true(J("true_conflicts") == 1);
    assert_true(J("conflict_free_aborts") == 0);
    /* ordered commit stamps (rdtscp) leave no such slack */
    assert_int_equal(late_commit_case("late-ordered.bin", TF_STAMP_ORDERED, 1700), 0);
    assert_true(J("conflict_free_aborts") == 1);
    /* beyond the slack the commit cannot have caused it */
    assert_int_equal(late_commit_case("late-far.bin", TF_STAMP_UNORDERED, 4000), 0);
    assert_true(J("conflict_free_aborts") == 1);
}

static void version_2_attributes_without_reads_and_writes(void **st)
{
    (void)st;
    level = 1;
    struct tg_thread th[2] = { 0 };
    tg_ev(&th[0], 100, TF_EV_START, 0, 1, 1, 0);
    tg_ev(&th[0], 200, TF_EV_ABORT, TMT_ABORT_READ_VERSION, 1, A1, 9);
    tg_ev(&th[0], 210, TF_EV_START, 0, 1, 2, TF_START_RETRY);
    tg_ev(&th[0], 230, TF_EV_COMMIT, 0, 1, 0, 1);
    tg_ev(&th[1], 130, TF_EV_START, 0, 2, 7, 0);
    tg_ev(&th[1], 150, TF_EV_COMMIT, 0, 2, 9, 1ull << 32);
    fmt = 2;
    int rc = check("level1-v2.bin", th, 2, 0, NULL);
    fmt = 1;
    level = 2;
    assert_int_equal(rc, 0);
    assert_true(J("conflict_free_aborts") == 0);
    assert_true(tg_json_num(out, strstr(out, "\"attribution\""), "by_identity") == 1);
    /* Which word the culprit wrote, a version 2 trace at tx does not say:
     * unknown at this level, never a guess. */
    assert_true(J("true_conflicts") == 0);
    assert_true(tg_json_num(out, strstr(out, "\"word-unknown\""), "count") == 1);
}

/* A version 4 trace at tx (`lvl` 1), or at all (2) with the culprit's
 * attempt shed (TF_START_SHED): the culprit's commit with its write set,
 * the word `wrote` (0: none recorded). Returns tmcheck's status. */
static int wset_case_at(const char *name, unsigned lvl, uint64_t wrote)
{
    level = lvl;
    struct tg_thread th[2] = { 0 };
    tg_ev(&th[0], 100, TF_EV_START, 0, 1, 1, 0);
    if (lvl == 2)
        tg_ev(&th[0], 120, TF_EV_READ, 8, 1, A1, 0);
    tg_ev(&th[0], 200, TF_EV_ABORT, TMT_ABORT_READ_VERSION, 1, A1, 9);
    tg_ev(&th[0], 210, TF_EV_START, 0, 1, 2, TF_START_RETRY);
    tg_ev(&th[0], 230, TF_EV_COMMIT, 0, 1, 0, 1);
    tg_ev(&th[1], 130, TF_EV_START, 0, 2, 7, lvl == 2 ? TF_START_SHED : 0);
    tg_ev(&th[1], 150, TF_EV_COMMIT, 0, 2, 9, 1ull << 32);
    if (wrote)
        tg_ev(&th[1], 150, TF_EV_WSET, 0, 2, wrote, 0xff);
    fmt = 4;
    int rc = check(name, th, 2, 0, NULL);
    fmt = 1;
    level = 2;
    return rc;
}
static int wset_case(const char *name, uint64_t wrote) { return wset_case_at(name, 1, wrote); }

static void version_4_at_tx_classifies_by_the_culprits_write_set(void **st)
{
    (void)st;
    assert_int_equal(wset_case("wset-true.bin", A1), 0);
    assert_true(J("true_conflicts") == 1);
    assert_true(J("false_conflicts") == 0);
    /* another word of the stripe (16 bytes): false sharing */
    assert_int_equal(wset_case("wset-false.bin", A1 + 8), 0);
    assert_true(J("true_conflicts") == 0);
    assert_true(J("false_conflicts") == 1);
    /* no write set (lost): unknown, not guessed */
    assert_int_equal(wset_case("wset-none.bin", 0), 0);
    assert_true(J("true_conflicts") == 0);
    assert_true(tg_json_num(out, strstr(out, "\"word-unknown\""), "count") == 1);
}

/* Level all with an attempt the tracer shed (recorded as at tx while its
 * buffers ran short): its write set classifies the aborts it caused, and
 * the report counts it. */
static void a_shed_attempt_at_level_all_classifies_by_its_write_set_and_is_counted(void **st)
{
    (void)st;
    assert_int_equal(wset_case_at("shed-true.bin", 2, A1), 0);
    assert_true(J("true_conflicts") == 1);
    assert_true(J("shed_attempts") == 1);
    assert_int_equal(wset_case_at("shed-false.bin", 2, A1 + 8), 0);
    assert_true(J("true_conflicts") == 0);
    assert_true(J("false_conflicts") == 1);
    assert_int_equal(run_check(tu_path("shed-false.bin"), 0, NULL), 0);
    expect_out("shed: 1 of 3 attempts recorded as at level tx");
}

static void a_missing_object_file_degrades_names_to_object_offsets_with_a_note(void **st)
{
    (void)st;
    const uint64_t A = 0x400010;
    struct tg_thread th[2] = { 0 };
    tg_ev(&th[0], 100, TF_EV_START, 0, 1, 1, 0);
    tg_ev(&th[0], 110, TF_EV_READ, 8, 1, A, 0);
    tg_ev(&th[0], 200, TF_EV_ABORT, TMT_ABORT_READ_VERSION, 1, A, 9);
    tg_ev(&th[0], 210, TF_EV_START, 0, 1, 2, TF_START_RETRY);
    tg_ev(&th[0], 230, TF_EV_COMMIT, 0, 1, 0, 0);
    tg_ev(&th[1], 130, TF_EV_START, 0, 2, 7, 0);
    tg_ev(&th[1], 140, TF_EV_WRITE, 8, 2, A, 5);
    tg_ev(&th[1], 150, TF_EV_COMMIT, 0, 2, 9, 1ull << 32);
    struct tf_header h = tg_header(HZ, 2, 0);
    const char *path = tu_path("noobject.bin");
    struct tf_thread_info ti[2];
    uint64_t evn[2] = { th[0].n, th[1].n };
    struct tf_writer *w = tg_begin(path, &h, 2, evn, NULL, 0, ti);
    assert_non_null(w);
    struct tf_object ob = { .base = 0x400000, .start = 0x400000, .end = 0x500000 };
    strcpy(ob.path, "/nonexistent/explain-prog");
    assert_int_equal(tf_write_objects(w, &ob, 1), 0);
    for (uint32_t i = 0; i < 2; i++) {
        uint64_t inst = 0;
        assert_int_equal(tg_records(w, i + 1, 0, &inst, &th[i], 1000), 0);
    }
    assert_int_equal(tg_end(w, ti, 2), 0);
    tg_free(&th[0]);
    tg_free(&th[1]);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s '%s' 2>&1", tu_build("tools/tmcheck"), path);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "explain-prog+0x10 (0x400010)"));   /* the offset from its load bias */
    assert_non_null(strstr(out, "symbol notes:\n/nonexistent/explain-prog: cannot be read"));
}

static void the_time_breakdown_splits_the_wall_time_into_its_parts(void **st)
{
    (void)st;
    struct tg_thread th[1] = { 0 };
    tg_ev(&th[0], 1000, TF_EV_START, 0, 1, 1, 0);
    tg_ev(&th[0], 1100, TF_EV_ABORT, TMT_ABORT_READ_VERSION, 1, A1, 0);
    tg_ev(&th[0], 1150, TF_EV_START, 0, 1, 2, TF_START_RETRY);          /* 50 of back-off */
    tg_ev(&th[0], 1300, TF_EV_COMMIT, 0, 1, 0, 0);
    tg_ev(&th[0], 1400, TF_EV_START, 0, 2, 3, 0);                       /* 100 outside */
    tg_ev(&th[0], 1450, TF_EV_COMMIT, 0, 2, 0, 0);
    fmt = 2;
    int rc = check("time.bin", th, 1, 0, NULL);
    fmt = 1;
    assert_int_equal(rc, 0);
    const char *t = strstr(out, "\"time\":{");
    assert_non_null(t);
    const char *t1 = strstr(t, "\"thread\":1");
    assert_non_null(t1);
    assert_true(tg_json_num(out, t1, "wall_ns") == 450);
    assert_true(tg_json_num(out, t1, "committed_ns") == 150 + 50);
    assert_true(tg_json_num(out, t1, "wasted_ns") == 100);
    assert_true(tg_json_num(out, t1, "backoff_ns") == 50);
    assert_true(tg_json_num(out, t1, "outside_ns") == 100);
    assert_true(tg_json_num(out, t1, "committed_attempts") == 2);
    assert_true(tg_json_num(out, t1, "aborted_attempts") == 1);
    /* per site: site 1 had the abort, the back-off and one commit */
    const char *s1 = strstr(t, "\"site\":1,");
    assert_non_null(s1);
    assert_true(tg_json_num(out, s1, "committed_ns") == 150);
    assert_true(tg_json_num(out, s1, "backoff_ns") == 50);
}

static void per_site_table_counts_attempts_wasted_time_retries_and_sets(void **st)
{
    (void)st;
    struct tg_thread th[1] = { 0 };
    tg_ev(&th[0], 0, TF_EV_START, 0, 3, 1, 0);
    tg_ev(&th[0], 10, TF_EV_ABORT, 2, 3, 0, 0);
    tg_ev(&th[0], 20, TF_EV_START, 0, 3, 2, TF_START_RETRY);
    tg_ev(&th[0], 40, TF_EV_ABORT, 4, 3, 0, 0);
    tg_ev(&th[0], 50, TF_EV_START, 0, 3, 3, TF_START_RETRY);
    tg_ev(&th[0], 60, TF_EV_COMMIT, 0, 3, 3, 3 | (2ull << 32));
    tg_ev(&th[0], 70, TF_EV_START, 0, 3, 4, 0);
    tg_ev(&th[0], 80, TF_EV_COMMIT, 0, 3, 4, 5 | (0ull << 32));
    assert_int_equal(check("site.bin", th, 1, 0, NULL), 0);
    const char *s = strstr(out, "\"sites\":[");
    assert_non_null(s);
    assert_true(tg_json_num(out, s, "site") == 3);
    assert_true(tg_json_num(out, s, "attempts") == 4);
    assert_true(tg_json_num(out, s, "commits") == 2);
    assert_true(tg_json_num(out, s, "aborts") == 2);
    assert_true(tg_json_num(out, s, "read-version") == 1);
    assert_true(tg_json_num(out, s, "commit-validate") == 1);
    assert_true(fabs(tg_json_num(out, s, "abort_rate") - 0.5) < 1e-9);
    assert_true(tg_json_num(out, s, "wasted_ns") == 30);
    assert_true(tg_json_num(out, s, "retries_per_commit_mean") == 1.0);
    assert_true(tg_json_num(out, s, "retries_per_commit_max") == 2);
    assert_true(tg_json_num(out, s, "read_set_mean") == 4.0);
    assert_true(tg_json_num(out, s, "read_set_max") == 5);
    assert_true(tg_json_num(out, s, "write_set_max") == 2);
}

/* A serial attempt whose SERIAL says TF_SERIAL_UNCOUNTED (in place, reads
 * not counted) has a 0 for its reads, not a read-set size: it is left out
 * of the read-set figures, and its writes are not. A serial attempt that
 * counted its reads is in them. */
static void a_serial_attempt_that_counted_no_reads_is_left_out_of_the_read_set_figures(void **st)
{
    (void)st;
    struct tg_thread th[1] = { 0 };
    tg_ev(&th[0], 0, TF_EV_START, 0, 3, 1, 0);
    tg_ev(&th[0], 10, TF_EV_COMMIT, 0, 3, 1, 3 | (1ull << 32));
    tg_ev(&th[0], 20, TF_EV_START, 0, 3, 2, TF_START_SERIAL);
    tg_ev(&th[0], 21, TF_EV_SERIAL, TF_SERIAL_ALONE, 3, 0, TF_SERIAL_UNCOUNTED);
    tg_ev(&th[0], 30, TF_EV_COMMIT, 0, 3, 2, 0 | (4ull << 32));
    tg_ev(&th[0], 40, TF_EV_START, 0, 3, 3, TF_START_SERIAL);
    tg_ev(&th[0], 41, TF_EV_SERIAL, TF_SERIAL_ALONE, 3, 0, 0);
    tg_ev(&th[0], 50, TF_EV_COMMIT, 0, 3, 3, 7 | (1ull << 32));
    assert_int_equal(check("uncounted.bin", th, 1, 0, NULL), 0);
    const char *s = strstr(out, "\"sites\":[");
    assert_non_null(s);
    assert_true(tg_json_num(out, s, "commits") == 3);
    assert_true(tg_json_num(out, s, "read_set_counted") == 2);
    assert_true(tg_json_num(out, s, "read_set_mean") == 5.0);
    assert_true(tg_json_num(out, s, "read_set_max") == 7);
    assert_true(tg_json_num(out, s, "write_set_mean") == 2.0);
    assert_true(tg_json_num(out, s, "write_set_max") == 4);
}

static void hardware_aborts_are_classified_by_status_bits(void **st)
{
    (void)st;
    struct tg_thread th[1] = { 0 };
    const uint64_t status[] = { 4 | 2, 8, 1 | (0xffu << 24), 1 | (3u << 24), 2, 0 };
    uint64_t t = 10;
    for (size_t i = 0; i < 6; i++, t += 10) {
        tg_ev(&th[0], t, TF_EV_START, 0, 1, i + 1, TF_START_HTM_EMU);
        tg_ev(&th[0], t + 5, TF_EV_ABORT, 7, 1, 0, status[i]);
    }
    tg_ev(&th[0], t, TF_EV_FALLBACK, 3, 1, 0, 0);
    tg_ev(&th[0], t + 1, TF_EV_START, 0, 1, 9, 0);
    tg_ev(&th[0], t + 2, TF_EV_COMMIT, 0, 1, 9, 0);
    assert_int_equal(check("htm.bin", th, 1, 0, NULL), 0);
    assert_true(J("htm_aborts") == 6);
    assert_true(J("htm_injected") == 6);   /* emulated attempts: injected, not hardware's */
    assert_true(J("stm_aborts") == 0);
    assert_true(J("fallbacks") == 1);
    const char *c = strstr(out, "\"htm_abort_classes\":");
    assert_non_null(c);
    const char *names[] = { "conflict", "capacity", "stm-active", "explicit", "retry-only", "unexplained" };
    for (size_t i = 0; i < 6; i++)
        assert_true(tg_json_num(out, c, names[i]) == 1);
}

/* Dropped events make the trace incomplete: exit 4 (never 0), one line on
 * stderr with the count, `complete` false in the JSON. */
static void dropped_events_make_the_trace_incomplete_with_the_checks_they_affect(void **st)
{
    (void)st;
    struct tg_thread th[1] = { 0 };
    good_txs(&th[0], 0, 2, 1);
    assert_int_equal(check("dropped.bin", th, 1, 7, NULL), 4);
    assert_true(J("dropped_events") == 7);
    expect_out("dropped_note");
    expect_out("tmcheck: warning: ");
    expect_out("incomplete trace: the tracer dropped events; last record at 0.000000130 s");
    expect_out("events dropped: 7\n");
    expect_out("\"complete\":false");
    assert_true(tg_json_num(out, strstr(out, "\"incomplete\":"), "dropped_events") == 7);
}

/* A hole in thread th[thread]'s program order: `dropped` events before its
 * record `at` (the tracer numbers what it drops: the records after a hole
 * carry sequence numbers past it). */
struct hole {
    size_t thread, at;
    uint64_t dropped;
};

/* Threads th[0..n) as a raw trace (version 2) with `holes` (in each
 * thread's order), each thread's END record counting its own; tmcheck
 * --json on it. */
static int check_with_holes(const char *name, struct tg_thread *th, size_t n, const struct hole *holes, size_t nholes)
{
    struct tf_header h = tg_header(HZ, level, 0);
    h.version = 2;
    const char *path = tu_path(name);
    struct tf_thread_info ti[4];
    uint64_t ev[4];
    assert_true(n <= 4);
    for (size_t i = 0; i < n; i++)
        ev[i] = th[i].n;
    struct tf_writer *w = tg_begin(path, &h, n, ev, NULL, 0, ti);
    assert_non_null(w);
    for (size_t i = 0; i < n; i++) {
        uint64_t inst = 0, seq = 0, lost = 0;
        for (size_t k = 0, from = 0; k <= nholes; k++) {
            if (k < nholes && holes[k].thread != i)
                continue;
            size_t to = k < nholes ? holes[k].at : th[i].n;
            assert_int_equal(tg_write_records(w, (uint32_t)(i + 1), seq, inst, th[i].r + from, th[i].truth + from,
                                              to - from, TF_CODEC_NONE, 0), 0);
            for (size_t j = from; j < to; j++)
                if (th[i].r[j].kind == TF_EV_START)
                    inst = th[i].r[j].addr;
            seq += to - from + (k < nholes ? holes[k].dropped : 0);
            lost += k < nholes ? holes[k].dropped : 0;
            from = to;
        }
        ti[i].dropped = lost;
    }
    assert_int_equal(tg_end(w, ti, n), 0);
    for (size_t i = 0; i < n; i++)
        tg_free(&th[i]);
    return run_check(path, 1, NULL);
}

/* Dropped events leave holes in their thread's program order: the attempt
 * open at a hole lost its end, one whose events follow a hole lost its
 * START. They are cut attempts, not breaks of the grammar nor attempts
 * without an end, and the time from the first hole to the next START is
 * the dropped events', not a deschedule of the attempt it cut. */
static void holes_left_by_dropped_events_cut_attempts_without_a_violation_or_a_deschedule(void **st)
{
    (void)st;
    const uint64_t far = 50000000; /* 50 ms */
    struct tg_thread th[1] = { 0 };
    tg_ev(&th[0], 1000, TF_EV_START, 0, 1, 1, 0);
    tg_ev(&th[0], 1010, TF_EV_READ, 8, 1, A1, 0);
    tg_ev(&th[0], 1030, TF_EV_COMMIT, 0, 1, 0, 1);
    tg_ev(&th[0], 1100, TF_EV_START, 0, 1, 2, 0);                        /* its end is dropped */
    tg_ev(&th[0], 1104, TF_EV_SERIAL, TF_SERIAL_CONTENTION, 1, 0, 0);    /* alone until 1110, not past the hole */
    tg_ev(&th[0], 1110, TF_EV_READ, 8, 1, A1, 0);
    tg_ev(&th[0], far, TF_EV_READ, 8, 1, A1 + 8, 0);                     /* hole 1: START 4 dropped */
    tg_ev(&th[0], far + 10, TF_EV_ABORT, TMT_ABORT_READ_VERSION, 1, A1 + 8, 7);
    tg_ev(&th[0], 2 * far, TF_EV_WRITE, 8, 1, A1, 1);                    /* hole 2: START 6 dropped */
    tg_ev(&th[0], 2 * far + 10, TF_EV_COMMIT, 0, 1, 9, 1);
    tg_ev(&th[0], 2 * far + 100, TF_EV_START, 0, 2, 8, 0);
    tg_ev(&th[0], 2 * far + 110, TF_EV_READ, 8, 2, A1, 0);
    tg_ev(&th[0], 2 * far + 130, TF_EV_COMMIT, 0, 2, 0, 1);
    const struct hole holes[2] = { { 0, 6, 6 }, { 0, 8, 3 } };
    assert_int_equal(check_with_holes("hole.bin", th, 1, holes, 2), 4); /* incomplete, nothing violated */
    assert_true(J("grammar_violations") == 0);
    assert_true(J("temporal_inconsistencies") == 0);
    assert_true(J("cut_attempts") == 3);
    assert_true(J("open_attempts") == 0);
    assert_true(J("commits") == 2);
    assert_true(J("aborts") == 0);
    assert_true(J("dropped_events") == 9);
    assert_true(J("serial_ns") == 6);
    const char *t1 = strstr(out, "\"thread\":1");
    assert_non_null(t1 = strstr(t1, "\"wall_ns\""));
    assert_true(tg_json_num(out, t1, "descheduled_attempts") == 0);
    const char *th1 = strstr(out, "\"threads\":[{\"thread\":1");
    assert_non_null(th1);
    assert_true(tg_json_num(out, th1, "cut_attempts") == 3);
    assert_true(tg_json_num(out, t1, "dropped_ns") == (double)(2 * far + 100 - 1100));
    assert_true(tg_json_num(out, t1, "outside_ns") == 70);
    assert_true(tg_json_num(out, t1, "committed_ns") == 30 + 30);
    assert_true(tg_json_num(out, t1, "wall_ns") == (double)(2 * far + 130 - 1000));
    /* the text says what the holes cut, and the time table has their column */
    assert_int_equal(run_check(tu_path("hole.bin"), 0, NULL), 4);
    expect_out("cut attempts 3 (");
    expect_out("    dropped ");
}

/* An abort no commit in the trace explains is conflict-free only when no
 * other thread's events were missing while it ran. Thread 2's END counts
 * drops and its order has a hole from 950 ns to 40 ms: thread 1's abort at
 * 1 us is settled while thread 2 is silent (the hole not found yet), the
 * one at 35 ms after the hole is found; both may have their culprit among
 * the dropped events (culprit-dropped). At 50 ms, thread 2's events all
 * there, the same abort is conflict-free. */
static void an_unexplained_abort_during_another_threads_hole_may_have_a_dropped_culprit(void **st)
{
    (void)st;
    struct tg_thread th[2] = { 0 };
    tg_ev(&th[0], 1000, TF_EV_START, 0, 1, 1, 0);
    tg_ev(&th[0], 1010, TF_EV_READ, 8, 1, A1, 0);
    tg_ev(&th[0], 1050, TF_EV_ABORT, TMT_ABORT_READ_VERSION, 1, A1, 0);    /* thread 2 silent */
    tg_ev(&th[0], 20000000, TF_EV_START, 0, 1, 2, 0);
    tg_ev(&th[0], 20000100, TF_EV_COMMIT, 0, 1, 0, 0);
    tg_ev(&th[0], 34999000, TF_EV_START, 0, 1, 3, 0);
    tg_ev(&th[0], 34999010, TF_EV_READ, 8, 1, A1, 0);
    tg_ev(&th[0], 35000000, TF_EV_ABORT, TMT_ABORT_READ_VERSION, 1, A1, 0); /* inside the hole found later */
    tg_ev(&th[0], 50000000, TF_EV_START, 0, 1, 4, 0);
    tg_ev(&th[0], 50000010, TF_EV_READ, 8, 1, A1, 0);
    tg_ev(&th[0], 50000050, TF_EV_ABORT, TMT_ABORT_READ_VERSION, 1, A1, 0); /* thread 2 all there */
    tg_ev(&th[1], 900, TF_EV_START, 0, 2, 1, 0);
    tg_ev(&th[1], 950, TF_EV_COMMIT, 0, 2, 0, 0);
    tg_ev(&th[1], 40000000, TF_EV_START, 0, 2, 9, 0);                      /* after 5 dropped events */
    tg_ev(&th[1], 40000100, TF_EV_COMMIT, 0, 2, 0, 0);
    tg_ev(&th[1], 49999000, TF_EV_START, 0, 2, 10, 0);
    tg_ev(&th[1], 50000500, TF_EV_COMMIT, 0, 2, 0, 0);
    const struct hole hole = { 1, 2, 5 };
    assert_int_equal(check_with_holes("dropped-culprit.bin", th, 2, &hole, 1), 4);
    const char *cls = strstr(out, "\"classes\":{");
    assert_non_null(cls);
    assert_true(tg_json_num(out, strstr(cls, "\"culprit-dropped\""), "count") == 2);
    assert_true(tg_json_num(out, strstr(cls, "\"conflict-free\""), "count") == 1);
    assert_true(J("conflict_free_aborts") == 1);
    assert_int_equal(run_check(tu_path("dropped-culprit.bin"), 0, NULL), 4);
    expect_out("its culprit may be among the events another thread dropped meanwhile");
}

/* A trace cut before its END chunk (the writer died) or whose END names
 * the signal that killed the program lost records: tmcheck says which in
 * one line on stderr, in the report and in the JSON, and exits 4 however
 * consistent the records it has are. */
static void a_truncated_or_killed_trace_is_incomplete_exit_4_saying_why(void **st)
{
    (void)st;
    for (uint32_t sig = 0; sig <= 11; sig += 11) {
        struct tg_thread th[2] = { 0 };
        good_txs(&th[0], 1000, 3, 1);
        good_txs(&th[1], 1050, 2, 2);
        const char *path = write_trace(sig ? "killed.bin" : "noend.bin", th, 2, 0);
        assert_int_equal(tg_end_as_killed(path, sig), 0);
        const char *why = sig ? "incomplete trace: the program was terminated by signal 11 (SIGSEGV); "
                                "last record at 0.000000230 s after the first; events dropped: 0"
                              : "incomplete trace: no END chunk (the run never finished its trace); "
                                "last record at 0.000000230 s after the first; events dropped: unknown";
        assert_int_equal(run_check(path, 1, NULL), 4);
        expect_out("tmcheck: warning: ");
        expect_out(why);
        assert_true(J("events") == 20);
        expect_out("\"complete\":false");
        assert_true(tg_json_num(out, strstr(out, "\"incomplete\":"), "signal") == sig);
        assert_int_equal(run_check(path, 0, NULL), 4);
        expect_out("\nINCOMPLETE: ");
        assert_null(strstr(out, "\nconsistent"));
        char line[600];
        snprintf(line, sizeof line, "\n%s", why);   /* the report's own line, beside stderr's */
        expect_out(line);
    }
}

/* Violations (1) outrank an incomplete trace (4), which outranks --salvage
 * (3); the incomplete line is printed whatever the status. */
static void violations_outrank_incompleteness_which_is_still_said(void **st)
{
    (void)st;
    struct tg_thread th[1] = { 0 };
    tg_ev(&th[0], 100, TF_EV_START, 0, 1, 1, 0);
    tg_ev(&th[0], 90, TF_EV_COMMIT, 0, 1, 1, 0);   /* stamped before its start: temporal */
    const char *path = write_trace("violent.bin", th, 1, 0);
    assert_int_equal(tg_end_as_killed(path, 6), 0);
    assert_int_equal(run_check(path, 1, NULL), 1);
    expect_out("incomplete trace: the program was terminated by signal 6 (SIGABRT)");
    assert_true(J("temporal_inconsistencies") >= 1);
}

static void csv_files_hold_sites_conflicts_and_threads(void **st)
{
    (void)st;
    struct tg_thread th[2] = { 0 };
    good_txs(&th[0], 1000, 3, 1);
    good_txs(&th[1], 1050, 2, 2);
    const char *dir = tu_path("csv");
    char extra[600];
    snprintf(extra, sizeof extra, "--csv '%s'", dir);
    assert_int_equal(check("csv.bin", th, 2, 0, extra), 0);
    char *s = tu_read_in(dir, "sites.csv", NULL);
    assert_non_null(s);
    assert_non_null(strstr(s, "\n1,site1 (gen.c:10),3,3,0,"));
    assert_non_null(strstr(s, "\n2,site2 (gen.c:20),2,2,0,"));
    free(s);
    s = tu_read_in(dir, "threads.csv", NULL);
    assert_non_null(s);
    assert_non_null(strstr(s, "\n1,12,0,0,0,0,0,3,3,0,0"));
    free(s);
    s = tu_read_in(dir, "conflicts.csv", NULL);
    assert_non_null(s);
    assert_non_null(strstr(s, "victim_site,"));
    free(s);
}

static void tables_option_gives_each_growing_tables_size_and_their_sum(void **st)
{
    (void)st;
    struct tg_thread th[2] = { 0 };
    good_txs(&th[0], 1000, 3, 1);
    good_txs(&th[1], 1050, 2, 2);
    const char *path = write_trace("tables.bin", th, 2, 0);
    assert_int_equal(run_check(path, 0, "--tables"), 0);
    expect_out("tmcheck: table threads ");
    expect_out("tmcheck: table order views ");
    expect_out("tmcheck: table commit store ");
    expect_out("tmcheck: table allocated blocks ");
    expect_out("tmcheck: tables in all ");
    expect_out("events");   /* the report follows on stdout */
}

/* Runs tmcheck expecting exit 2 and one line that contains `what`. */
static void expect_bad(const char *args, const char *what)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1 >/dev/null", tu_build("tools/tmcheck"), args);
    assert_int_equal(tu_run(cmd, out, sizeof out), 2);
    assert_non_null(strstr(out, what));
    char *nl = strchr(out, '\n');
    assert_true(nl == NULL || nl[1] == '\0');
}

static void bad_input_gives_one_line_and_exit_2(void **st)
{
    (void)st;
    FILE *f = fopen(tu_path("junk.bin"), "wb");
    assert_non_null(f);
    fputs("this is not a trace at all, just some text that is long enough", f);
    fclose(f);
    char a[600];
    snprintf(a, sizeof a, "'%s'", tu_path("junk.bin"));
    expect_bad(a, "junk.bin");
    snprintf(a, sizeof a, "'%s'", tu_path("missing.bin"));
    expect_bad(a, "missing.bin");
    expect_bad("--bogus x", "--bogus");
    expect_bad("", "TRACE");
    /* a truncated trace: the error names the file and an offset */
    struct tg_thread th[1] = { 0 };
    good_txs(&th[0], 0, 50, 1);
    struct tf_header h = tg_header(HZ, 2, 0);
    assert_int_equal(tg_write(tu_path("trunc.bin"), &h, th, 1, NULL, 0, 0, 40), 0);
    tg_free(&th[0]);
    struct stat sb;
    assert_int_equal(stat(tu_path("trunc.bin"), &sb), 0);
    assert_int_equal(truncate(tu_path("trunc.bin"), sb.st_size - 100), 0);
    snprintf(a, sizeof a, "'%s'", tu_path("trunc.bin"));
    expect_bad(a, "trunc.bin");
    assert_non_null(strstr(out, "offset"));
    /* --salvage reads the good chunks and says so; the END chunk is gone
     * with the torn tail, so the trace is incomplete: 4 outranks 3 */
    assert_int_equal(run_check(tu_path("trunc.bin"), 1, "--salvage"), 4);
    assert_true(J("events") > 0 && J("events") < 200);
    assert_non_null(strstr(out, "--salvage skipped 1 damaged chunks"));
    assert_non_null(strstr(out, "incomplete trace: no END chunk"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(consistent_trace_counts_and_exit_0),
        cmocka_unit_test(temporal_inconsistency_is_a_backward_or_equal_step_in_program_order),
        cmocka_unit_test(with_repeated_access_stamps_only_reads_and_writes_may_equal_the_stamp_before),
        cmocka_unit_test(grammar_counts_each_break_and_resynchronises_at_start),
        cmocka_unit_test(out_of_place_events_are_those_whose_timestamp_rank_differs),
        cmocka_unit_test(late_start_is_an_operation_stamped_before_its_start),
        cmocka_unit_test(premature_end_is_an_operation_stamped_after_its_commit_or_abort),
        cmocka_unit_test(attribution_true_conflict_names_the_culprit),
        cmocka_unit_test(the_text_report_says_one_abort_in_the_singular),
        cmocka_unit_test(a_word_in_a_threads_stack_is_named_as_that_stack_everywhere),
        cmocka_unit_test(attribution_false_conflict_is_same_stripe_other_address),
        cmocka_unit_test(a_failed_validation_is_true_when_the_culprit_wrote_the_word_read),
        cmocka_unit_test(a_neighbouring_word_conflicts_falsely_only_within_the_recorded_stripe_width),
        cmocka_unit_test(stripes_are_attributed_with_the_hash_of_the_traces_version),
        cmocka_unit_test(a_recorded_stripe_width_out_of_range_is_the_default_in_analysis_and_report),
        cmocka_unit_test(abort_without_conflicting_commit_in_window_is_conflict_free),
        cmocka_unit_test(a_read_locked_abort_is_caused_by_the_holder_committing_after_it),
        cmocka_unit_test(a_read_locked_abort_whose_holder_aborted_is_conflict_free),
        cmocka_unit_test(without_reads_and_writes_conflict_freedom_is_not_claimed),
        cmocka_unit_test(a_version_found_names_the_commit_that_wrote_it_not_the_latest),
        cmocka_unit_test(a_version_written_on_another_word_of_the_stripe_is_a_false_conflict),
        cmocka_unit_test(a_lock_holder_that_commits_soon_after_is_a_running_holder),
        cmocka_unit_test(a_lock_holder_descheduled_for_milliseconds_is_a_preempted_holder),
        cmocka_unit_test(a_lock_holder_that_moved_to_another_core_is_a_preempted_holder),
        cmocka_unit_test(a_lock_holder_that_never_commits_is_an_aborted_holder_not_conflict_free),
        cmocka_unit_test(a_lock_holder_that_ended_hundreds_of_attempts_before_the_abort_record_is_still_named),
        cmocka_unit_test(a_lock_holder_that_committed_long_before_a_descheduled_victims_abort_record_is_still_named),
        cmocka_unit_test(an_unordered_commit_stamp_may_follow_the_abort_it_caused_by_the_reorder_window),
        cmocka_unit_test(version_2_attributes_without_reads_and_writes),
        cmocka_unit_test(version_4_at_tx_classifies_by_the_culprits_write_set),
        cmocka_unit_test(a_shed_attempt_at_level_all_classifies_by_its_write_set_and_is_counted),
        cmocka_unit_test(the_time_breakdown_splits_the_wall_time_into_its_parts),
        cmocka_unit_test(a_missing_object_file_degrades_names_to_object_offsets_with_a_note),
        cmocka_unit_test(per_site_table_counts_attempts_wasted_time_retries_and_sets),
        cmocka_unit_test(a_serial_attempt_that_counted_no_reads_is_left_out_of_the_read_set_figures),
        cmocka_unit_test(serial_attempts_and_their_time_alone_are_reported),
        cmocka_unit_test(a_serial_attempt_met_by_another_transaction_made_it_wait),
        cmocka_unit_test(hardware_aborts_are_classified_by_status_bits),
        cmocka_unit_test(dropped_events_make_the_trace_incomplete_with_the_checks_they_affect),
        cmocka_unit_test(holes_left_by_dropped_events_cut_attempts_without_a_violation_or_a_deschedule),
        cmocka_unit_test(an_unexplained_abort_during_another_threads_hole_may_have_a_dropped_culprit),
        cmocka_unit_test(a_truncated_or_killed_trace_is_incomplete_exit_4_saying_why),
        cmocka_unit_test(violations_outrank_incompleteness_which_is_still_said),
        cmocka_unit_test(csv_files_hold_sites_conflicts_and_threads),
        cmocka_unit_test(tables_option_gives_each_growing_tables_size_and_their_sum),
        cmocka_unit_test(bad_input_gives_one_line_and_exit_2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
