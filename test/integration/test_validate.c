/*
 * test_validate.c - `validate/run --quick` end to end: it runs every cell of
 * its matrix, and its CSV shows the method working: with the clock model
 * that fits the scenario, a corrected trace has no temporal or grammar
 * violations; where injected skew and migrations make the raw trace
 * inconsistent, the raw counts are above zero; the piecewise model beats the
 * linear one when the drift changes mid-run.
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

#define MAX_ROWS 256
#define MAX_COLS 32

struct table {
    char *buf;
    int ncols, nrows;
    char *head[MAX_COLS];
    char *cell[MAX_ROWS][MAX_COLS];
};

/* Splits one CSV line in place (RFC 4180 quoting, as Python's csv writes). */
static int split_csv(char *line, char **out, int max)
{
    int n = 0;
    char *p = line;
    while (n < max) {
        char *w = p;
        out[n++] = w;
        if (*p == '"') {
            p++;
            for (;;) {
                if (*p == '"' && p[1] == '"') {
                    *w++ = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else if (!*p) {
                    break;
                } else {
                    *w++ = *p++;
                }
            }
        } else {
            while (*p && *p != ',')
                *w++ = *p++;
        }
        int more = *p == ',';
        *w = '\0';
        if (!more)
            break;
        p++;
    }
    return n;
}

static void read_table(const char *path, struct table *t)
{
    size_t len;
    memset(t, 0, sizeof *t);
    t->buf = tu_read_file(path, &len);
    if (!t->buf)
        fail_msg("missing %s", path);
    char *save = NULL;
    char *line = strtok_r(t->buf, "\r\n", &save);
    assert_non_null(line);
    t->ncols = split_csv(line, t->head, MAX_COLS);
    while ((line = strtok_r(NULL, "\r\n", &save)) && t->nrows < MAX_ROWS) {
        int n = split_csv(line, t->cell[t->nrows], MAX_COLS);
        assert_int_equal(n, t->ncols);
        t->nrows++;
    }
}

static const char *get(const struct table *t, int row, const char *col)
{
    for (int c = 0; c < t->ncols; c++)
        if (strcmp(t->head[c], col) == 0)
            return t->cell[row][c];
    fail_msg("no column %s", col);
    return NULL;
}

static double num(const struct table *t, int row, const char *col)
{
    const char *v = get(t, row, col);
    if (!*v)
        fail_msg("row %d (%s t=%s %s %s): empty %s", row, get(t, row, "workload"), get(t, row, "threads"),
                 get(t, row, "scenario"), get(t, row, "model"), col);
    return strtod(v, NULL);
}

static int is(const struct table *t, int row, const char *col, const char *val)
{
    return strcmp(get(t, row, col), val) == 0;
}

static struct table results, intrusion;
static char out_dir[512];

/* One run of the quick matrix serves every test below. */
static int run_quick(void **state)
{
    (void)state;
    snprintf(out_dir, sizeof out_dir, "%s", tu_path("validate"));
    const char *src = getenv("TMT_SOURCE_ROOT");
    const char *build = getenv("TMT_BUILD_ROOT");
    char cmd[2048], out[8192];
    snprintf(cmd, sizeof cmd, "'%s/validate/run' --quick --build '%s' --out '%s' 2>&1 | tail -5",
             src ? src : TMT_SOURCE_ROOT, build ? build : TMT_BUILD_ROOT, out_dir);
    tu_run(cmd, out, sizeof out);
    char path[700];
    snprintf(path, sizeof path, "%s/results.csv", out_dir);
    char *csv = tu_read_file(path, NULL);
    if (!csv) {
        fprintf(stderr, "validate/run wrote no results: %s\n", out);
        return -1;
    }
    free(csv);
    read_table(path, &results);
    snprintf(path, sizeof path, "%s/intrusion.csv", out_dir);
    read_table(path, &intrusion);
    return 0;
}

static void every_cell_ran_with_both_models(void **state)
{
    (void)state;
    assert_true(results.nrows >= 2 * 2 * 5 * 2);
    for (int r = 0; r < results.nrows; r++) {
        if (get(&results, r, "error")[0])
            fail_msg("row %d failed: %s", r, get(&results, r, "error"));
        assert_true(num(&results, r, "events") > 0);
        /* the other model's row of the same cell follows or precedes */
        int partner = r ^ 1;
        assert_true(partner < results.nrows);
        assert_string_equal(get(&results, r, "scenario"), get(&results, partner, "scenario"));
        assert_string_not_equal(get(&results, r, "model"), get(&results, partner, "model"));
    }
}

static void fitting_model_leaves_no_violations_under_injected_skew(void **state)
{
    (void)state;
    int checked = 0;
    for (int r = 0; r < results.nrows; r++) {
        if (is(&results, r, "scenario", "native") || !is(&results, r, "right_model", "1"))
            continue;
        if (num(&results, r, "temporal_after") != 0 || num(&results, r, "grammar_after") != 0)
            fail_msg("%s t=%s %s %s: %g temporal, %g grammar after correction", get(&results, r, "workload"),
                     get(&results, r, "threads"), get(&results, r, "scenario"), get(&results, r, "model"),
                     num(&results, r, "temporal_after"), num(&results, r, "grammar_after"));
        /* and the corrected stamps are close to the truth: far closer than
         * the injected offsets (a quarter of a millisecond) */
        assert_true(num(&results, r, "err_p99_ns") < 20000.0);
        assert_true(num(&results, r, "err_p99_ns") * 10 < num(&results, r, "err_raw_p99_ns") ||
                    num(&results, r, "err_raw_p99_ns") == 0);
        checked++;
    }
    assert_true(checked >= 2 * 2 * 4);
}

/* Every cell's raw stamps are far off; inversions need a forced migration
 * that completes within the skew between the two CPUs. On a loaded machine a
 * thread that moves can wait in the target CPU's run queue for longer than
 * that (a starved cell of --quick ran 0.7 % of a CPU: every migration took
 * ms), so a single cell may show none; each scenario, over its cells, must. */
static void migrations_across_skewed_cpus_make_raw_traces_inconsistent(void **state)
{
    (void)state;
    int checked = 0;
    double temporal[2] = { 0, 0 }, oop[2] = { 0, 0 };
    for (int r = 0; r < results.nrows; r++) {
        int drift = is(&results, r, "scenario", "drift-change");
        if (is(&results, r, "scenario", "migrate") || drift) {
            temporal[drift] += num(&results, r, "temporal_before");
            oop[drift] += num(&results, r, "out_of_place_pct_before");
            assert_true(num(&results, r, "err_raw_p99_ns") > 100000.0);
            checked++;
        }
        if (is(&results, r, "scenario", "native"))
            assert_true(num(&results, r, "temporal_before") == 0);
    }
    assert_true(checked >= 2 * 2 * 2 * 2);
    for (int k = 0; k < 2; k++) {
        assert_true(temporal[k] > 0);
        assert_true(oop[k] > 0);
    }
}

static void piecewise_beats_linear_when_drift_changes(void **state)
{
    (void)state;
    int checked = 0;
    for (int r = 0; r + 1 < results.nrows; r += 2) {
        if (!is(&results, r, "scenario", "drift-change"))
            continue;
        int lin = is(&results, r, "model", "linear") ? r : r + 1, pw = lin ^ 1;
        assert_true(num(&results, pw, "err_p99_ns") < num(&results, lin, "err_p99_ns"));
        assert_true(num(&results, pw, "temporal_after") <= num(&results, lin, "temporal_after"));
        checked++;
    }
    assert_true(checked >= 4);
}

static void intrusion_has_every_level_and_summary_and_figures_exist(void **state)
{
    (void)state;
    int levels[3] = { 0, 0, 0 };
    for (int r = 0; r < intrusion.nrows; r++) {
        const char *lv = get(&intrusion, r, "level");
        levels[0] += !strcmp(lv, "off");
        levels[1] += !strcmp(lv, "tx");
        levels[2] += !strcmp(lv, "all");
        assert_true(num(&intrusion, r, "ns_per_op") > 0);
    }
    assert_true(levels[0] > 0 && levels[0] == levels[1] && levels[1] == levels[2]);
    char *md = tu_read_in(out_dir, "summary.md", NULL);
    assert_non_null(md);
    assert_non_null(strstr(md, "| workload | thr | scenario |"));
    assert_non_null(strstr(md, "## Tracing intrusion"));
    free(md);
    size_t len = 0;
    char *png = tu_read_in(out_dir, "figures/inconsistencies.png", &len);
    assert_non_null(png);
    assert_true(len > 1000);
    free(png);
}

static void missing_tool_is_named_exit_2(void **state)
{
    (void)state;
    const char *src = getenv("TMT_SOURCE_ROOT");
    char cmd[1200], out[1024];
    snprintf(cmd, sizeof cmd, "'%s/validate/run' --quick --build /nonexistent --out '%s' 2>&1",
             src ? src : TMT_SOURCE_ROOT, tu_path("nothing"));
    assert_int_equal(tu_run(cmd, out, sizeof out), 2);
    assert_non_null(strstr(out, "tmbench"));
    assert_int_equal(strchr(out, '\n'), out + strlen(out) - 1);
    snprintf(cmd, sizeof cmd, "'%s/validate/run' --threads x 2>&1", src ? src : TMT_SOURCE_ROOT);
    assert_int_equal(tu_run(cmd, out, sizeof out), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_cell_ran_with_both_models),
        cmocka_unit_test(fitting_model_leaves_no_violations_under_injected_skew),
        cmocka_unit_test(migrations_across_skewed_cpus_make_raw_traces_inconsistent),
        cmocka_unit_test(piecewise_beats_linear_when_drift_changes),
        cmocka_unit_test(intrusion_has_every_level_and_summary_and_figures_exist),
        cmocka_unit_test(missing_tool_is_named_exit_2),
    };
    return cmocka_run_group_tests(tests, run_quick, NULL);
}
