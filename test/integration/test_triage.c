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
 *   - at the default level (no TMTRACE_EVENTS): the same as at all;
 *   - with TMTRACE_DETAIL sampling (at tx): the same as at all, and the
 *     figure scaled from the samples is marked as an estimate;
 *   - at level tx: no line claims a true conflict on the struct's words,
 *     and the hot site's aborts found at its read name that read's line
 *     (the program links libtmtrace statically);
 *   - with TMTRACE_ABORT_STACK: the hot read's aborts list its stack out
 *     through the thread's function;
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
    /* "default": no TMTRACE_EVENTS at all, what a user gets */
    char events[128] = "";
    if (strcmp(level, "default") != 0)
        snprintf(events, sizeof events, "TMTRACE_EVENTS=%s", level);
    snprintf(cmd, sizeof cmd, "env -u TMTRACE_EVENTS TMTRACE_FILE='%s' %s TMTRACE_HTM=off %s %s && %s '%s' -o '%s' >/dev/null 2>&1",
             raw, events, tu_build("test/triage_prog"), args, tu_build("tools/tmsync"), raw, synced);
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

/* What must hold of the report on `t` (a run with --nap-ms 200) at level
 * all and with sampled detail: the sleep on its own line and in no site's
 * on-CPU time; the hot word leading the triage with its writer as culprit;
 * the struct named false sharing with both fields; no culprit that did not
 * write its data. Leaves the text in out, the JSON in json. */
static void the_triage_names_the_known_causes(const char *t)
{
    report(t, 1);
    report(t, 0);
    /* the sleep: on its own line, at least 200 ms of wall time */
    const char *d = strstr(out, "\ndescheduled: ");
    assert_non_null(d);
    assert_true(strtoul(d + 14, NULL, 10) >= 1);
    assert_true(tg_json_num(json, NULL, "descheduled_wall_ns") >= 200e6);
    /* ... and in no site's on-CPU wasted time (whether the napping attempt
     * aborted depends on the schedule: another thread that turned serial
     * waits for it instead of overtaking it) */
    const char *cs = strstr(json, "\"name\":\"count_event (triage_prog.c:");
    assert_non_null(cs);
    assert_true(tg_json_num(json, cs, "oncpu_wasted_ns") < 190e6);
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
}

static void at_all_the_hot_word_leads_and_the_struct_is_false_sharing_with_both_fields(void **st)
{
    (void)st;
    const char *t = trace_prog("all.bin", "all", "--nap-ms 200");
    the_triage_names_the_known_causes(t);
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

/* With no TMTRACE_* setting but the file (the default level: attempts
 * with their write sets, no per-access records) the triage holds as at
 * all: the write sets tell the struct's false sharing from the hot word's
 * true conflicts. */
static void at_the_default_level_the_triage_holds_as_at_all(void **st)
{
    (void)st;
    the_triage_names_the_known_causes(trace_prog("default.bin", "default", "--nap-ms 200"));
    assert_non_null(strstr(out, "\nlevel tx with write sets: "));
}

/* With TMTRACE_DETAIL sampling (one attempt in 8 recorded with its
 * accesses) the triage holds as at all, and the one figure scaled from the
 * samples, the run's accesses, says it is an estimate: in the text's
 * "sampled detail" line and as the JSON's detail.accesses_estimated, both
 * the sampled accesses times attempts over sampled attempts. */
static void with_sampled_detail_the_triage_holds_and_scaled_figures_say_they_are_estimates(void **st)
{
    (void)st;
    the_triage_names_the_known_causes(trace_prog("detail.bin", "tx TMTRACE_DETAIL=8", "--nap-ms 200"));
    const char *line = strstr(out, "\nsampled detail (TMTRACE_DETAIL=8): ");
    if (!line)
        fail_msg("no sampled-detail line:\n%.600s", out);
    unsigned long long detailed, attempts, accesses;
    double estimated;
    if (sscanf(line + strlen("\nsampled detail (TMTRACE_DETAIL=8): "), "%llu of %llu attempts recorded with their reads and writes; their %llu accesses scale "
               "to an estimated %lf for the run", &detailed, &attempts, &accesses, &estimated) != 4)
        fail_msg("the sampled-detail line does not mark its scaled figure as an estimate:\n%.300s", line + 1);
    assert_true(detailed > 0 && detailed < attempts && accesses > 0);
    double expect = (double)accesses * (double)attempts / (double)detailed;
    assert_true(estimated > expect - 1 && estimated < expect + 1);
    const char *d = strstr(json, "\"detail\":{");
    assert_non_null(d);
    assert_true(tg_json_num(json, d, "period") == 8);
    assert_true(tg_json_num(json, d, "detailed_attempts") == (double)detailed);
    double je = tg_json_num(json, d, "accesses_estimated");
    assert_true(je > expect - 1 && je < expect + 1);
}

/* The line of triage_prog.c that holds `text`. */
static int prog_line(const char *text)
{
    char path[600];
    snprintf(path, sizeof path, "%s/test/support/triage_prog.c", TMT_SOURCE_ROOT);
    char *src = tu_read_file(path, NULL);
    assert_non_null(src);
    const char *at = strstr(src, text);
    assert_non_null(at);
    int line = 1;
    for (const char *p = src; p < at; p++)
        line += *p == '\n';
    free(src);
    return line;
}

/* count_event's aborts found at its read of the hot word (read-locked or
 * read-version) are listed first among its places, at that read's line;
 * those found at commit on the line after. The program links libtmtrace
 * statically, so the address comes without a stack walk. */
static void the_hot_reads_aborts_name_the_read_line(void)
{
    const char *site = strstr(out, "\nsites (by wasted time)\n");
    assert_non_null(site);
    site = strstr(site, "\n  count_event (triage_prog.c:");
    assert_non_null(site);
    const char *end = strstr(site + 1, "\n  note_side (");
    const char *rd = strstr(site, "\n      read-");
    if (rd == NULL || (end && rd > end))
        return; /* no abort at the read in this run: nothing to place */
    char want[160];
    snprintf(want, sizeof want, "\n      found at count_event (triage_prog.c:%d) ",
             prog_line("tmt_read_long(tx, &triage_hot)"));
    const char *at = strstr(site, "\n      found at ");
    if (at == NULL || (end && at > end) || strncmp(at, want, strlen(want)) != 0)
        fail_msg("count_event's first abort location is not its read (%s):\n%.1500s", want + 16, site);
}

static void at_tx_no_line_claims_a_true_conflict_on_the_struct_and_aborts_at_the_hot_read_name_its_line(void **st)
{
    (void)st;
    report(trace_prog("tx.bin", "tx", "--nap-ms 50"), 0);
    the_hot_reads_aborts_name_the_read_line();
    assert_null(strstr(out, "\n      stack ")); /* no TMTRACE_ABORT_STACK: no stacks */
    assert_non_null(strstr(out, "\ndescheduled: "));
    size_t n;
    char **l = triage_lines(out, &n);
    assert_true(n >= 1);
    for (size_t i = 0; i < n; i++)
        assert_null(strstr(l[i], "true-conflict on triage_pair"));
    culprits_wrote_their_data(l, n, "on triage_hot", "by count_event (");
    culprits_wrote_their_data(l, n, "on triage_pair", "by note_side (");
}

/* With TMTRACE_ABORT_STACK=4, count_event's aborts at its read list, in
 * the text and the JSON, the stack from that read out through worker, the
 * thread's function that calls count_event. */
static void abort_stacks_name_the_read_and_its_callers(void **st)
{
    (void)st;
    int line = prog_line("tmt_read_long(tx, &triage_hot)");
    char found[100];
    snprintf(found, sizeof found, "found at count_event (triage_prog.c:%d)", line);
    /* A stack is taken for an abort found at a read. Slowed down (a
     * sanitizer, a loaded machine), count_event's conflicts may all be
     * found at its commit's validation instead: such a run has nothing to
     * show, and the program is run again, up to three times. */
    const char *t = NULL;
    for (int run = 0; run < 3; run++) {
        t = trace_prog("stack.bin", "tx TMTRACE_ABORT_STACK=4", "");
        report(t, 0);
        if (strstr(out, found) != NULL)
            break;
    }
    const char *rd = strstr(out, "\n      read-");
    if (rd == NULL || strstr(out, found) == NULL)
        skip(); /* three runs without an abort at count_event's read: no stack */
    char want[200];
    snprintf(want, sizeof want, ": count_event (triage_prog.c:%d) < worker (triage_prog.c:", line);
    /* any site's stack line: under load another site may rank first */
    const char *sl = strstr(out, "\n      stack ");
    while (sl && (!strstr(sl, want) || strstr(sl, want) > strchr(sl + 1, '\n')))
        sl = strstr(sl + 1, "\n      stack ");
    if (sl == NULL)
        fail_msg("no stack from count_event's read through worker (%s):\n%.3000s", want, rd);
    report(t, 1);
    snprintf(want, sizeof want, "\"abort_stacks\":[{\"frames\":[\"count_event (triage_prog.c:%d)\",\"worker (",
             line);
    assert_non_null(strstr(json, want));
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
        cmocka_unit_test(at_the_default_level_the_triage_holds_as_at_all),
        cmocka_unit_test(with_sampled_detail_the_triage_holds_and_scaled_figures_say_they_are_estimates),
        cmocka_unit_test(at_tx_no_line_claims_a_true_conflict_on_the_struct_and_aborts_at_the_hot_read_name_its_line),
        cmocka_unit_test(abort_stacks_name_the_read_and_its_callers),
        cmocka_unit_test(compare_after_padding_shows_the_false_sharing_gone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
