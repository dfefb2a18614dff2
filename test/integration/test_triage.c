/*
 * test_triage.c - tmcheck's triage of a traced program whose aborts have
 * known causes (test/support/triage_prog.c: a hot word written by
 * count_event, a 16-byte struct whose two fields note_side's two threads
 * write, one count_event attempt that sleeps 200 ms; more threads than
 * this machine's 2 CPUs):
 *   - at level all: the hot word leads the triage with its writer as the
 *     culprit; the struct is named false sharing with both fields by their
 *     DWARF names; the sleep is on the "descheduled" line and in no site's
 *     on-CPU time; no line names a culprit that did not write its data;
 *   - at level tx: no line claims a true conflict on the struct's words
 *     (which word the culprit wrote is not in such a trace);
 *   - tmcheck --compare of the program before and after padding the struct:
 *     the struct's false sharing is gone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"
#include "trace_gen.h"

static char out[1 << 18], json[1 << 20];

/* Traces triage_prog at `level` (with `args`) into name.sync.bin. */
static const char *trace_prog(const char *name, const char *level, const char *args)
{
    char raw[600], cmd[4096];
    snprintf(raw, sizeof raw, "%s", tu_path(name));
    const char *synced = tu_path(name[0] == 'b' ? "before.sync.bin" : name[0] == 'a' ? "after.sync.bin" : "t.sync.bin");
    snprintf(cmd, sizeof cmd,
             "TMTRACE_FILE='%s' TMTRACE_EVENTS=%s TMTRACE_HTM=off %s %s && %s '%s' -o '%s' >/dev/null 2>&1", raw,
             level, tu_build("test/triage_prog"), args, tu_build("tools/tmsync"), raw, synced);
    assert_int_equal(tu_run(cmd, NULL, 0), 0);
    return synced;
}

/* The text report's triage lines (NUL-separated in place), *n of them. */
static char **triage_lines(char *text, size_t *n)
{
    static char *lines[64];
    *n = 0;
    char *p = strstr(text, "\ntriage (");
    assert_non_null(p);
    p = strchr(p + 1, '\n');
    while (p && p[1] == ' ' && p[2] == ' ' && *n < 64) {
        char *e = strchr(p + 1, '\n');
        if (e)
            *e = 0;
        lines[(*n)++] = p + 1;
        p = e;
    }
    return lines;
}

/* Every line on `object` that names a culprit names `writer`. */
static void culprits_wrote_their_data(char **l, size_t n, const char *object, const char *writer)
{
    for (size_t i = 0; i < n; i++)
        if (strstr(l[i], object) && !strstr(l[i], "no culprit found"))
            assert_non_null(strstr(l[i], writer));
}

/* tmcheck's text report of `trace` into out (with --json: into json). */
static void report(const char *trace, int as_json)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s '%s'", tu_build("tools/tmcheck"), as_json ? "--json" : "", trace);
    assert_int_equal(tu_run(cmd, as_json ? json : out, as_json ? sizeof json : sizeof out), 0);
}

static void at_all_the_hot_word_leads_and_the_struct_is_false_sharing_with_both_fields(void **st)
{
    (void)st;
    const char *t = trace_prog("all.bin", "all", "--nap-ms 200");
    report(t, 1);
    report(t, 0);
    /* the sleep: on its own line, at least 200 ms of wall time */
    const char *d = strstr(out, "\ndescheduled: ");
    assert_non_null(d);
    assert_true(strtoul(d + 14, NULL, 10) >= 1);
    assert_true(tg_json_num(json, NULL, "descheduled_wall_ns") >= 200e6);
    /* ... and in no site's on-CPU wasted time, though in its wall time */
    const char *cs = strstr(json, "\"name\":\"count_event (triage_prog.c:");
    assert_non_null(cs);
    assert_true(tg_json_num(json, cs, "wasted_ns") - tg_json_num(json, cs, "oncpu_wasted_ns") >= 190e6);
    size_t n;
    char **l = triage_lines(out, &n);
    assert_true(n >= 2);
    if (!strstr(l[0], "count_event (triage_prog.c:") || !strstr(l[0], "on triage_hot, ") ||
        !strstr(l[0], " by count_event (triage_prog.c:"))
        fail_msg("the first triage line is not the hot word's:\n%s", l[0]);
    int pair = 0;
    for (size_t i = 0; i < n; i++)
        if (strstr(l[i], "false sharing") && strstr(l[i], "on triage_pair (") && strstr(l[i], ".evens ") &&
            strstr(l[i], ".odds "))
            pair = 1;
    assert_true(pair);
    culprits_wrote_their_data(l, n, "on triage_hot", "by count_event (");
    culprits_wrote_their_data(l, n, "on triage_pair", "by note_side (");
    /* tmexport's arrows and abort instants name the data as tmcheck does */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s '%s' -o '%s'", tu_build("tools/tmexport"), t, tu_path("all.json"));
    assert_int_equal(tu_run(cmd, NULL, 0), 0);
    char *doc = tu_read_file(tu_path("all.json"), NULL);
    assert_non_null(doc);
    assert_non_null(strstr(doc, "\"data\":\"triage_hot\""));
    assert_non_null(strstr(doc, "\"data\":\"triage_pair.evens\""));
    free(doc);
}

static void at_tx_no_line_claims_a_true_conflict_on_the_struct(void **st)
{
    (void)st;
    report(trace_prog("tx.bin", "tx", "--nap-ms 50"), 0);
    assert_non_null(strstr(out, "\ndescheduled: "));
    size_t n;
    char **l = triage_lines(out, &n);
    assert_true(n >= 1);
    for (size_t i = 0; i < n; i++)
        assert_null(strstr(l[i], "true-conflict on triage_pair"));
    culprits_wrote_their_data(l, n, "on triage_hot", "by count_event (");
    culprits_wrote_their_data(l, n, "on triage_pair", "by note_side (");
}

static void compare_after_padding_shows_the_false_sharing_gone(void **st)
{
    (void)st;
    char before[600], cmd[2048];
    snprintf(before, sizeof before, "%s", trace_prog("before.bin", "all", ""));
    const char *after = trace_prog("after.bin", "all", "--padded");
    snprintf(cmd, sizeof cmd, "%s --compare '%s' '%s'", tu_build("tools/tmcheck"), before, after);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    const char *g = strstr(out, "\ngroups (");
    assert_non_null(g);
    const char *fs = strstr(g, "note_side (triage_prog.c), false sharing on triage_pair, culprit note_side (triage_prog.c) (gone): ");
    if (!fs)
        fail_msg("no false-sharing group gone:\n%s", out);
    assert_non_null(strstr(out, "  triage_pair (gone): "));
    /* padded, its fields share no stripe: no false sharing on it */
    assert_null(strstr(out, "false sharing on triage_padded"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(at_all_the_hot_word_leads_and_the_struct_is_false_sharing_with_both_fields),
        cmocka_unit_test(at_tx_no_line_claims_a_true_conflict_on_the_struct),
        cmocka_unit_test(compare_after_padding_shows_the_false_sharing_gone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
