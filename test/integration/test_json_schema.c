/*
 * test_json_schema.c - docs/json.md names every key the tools write: tmcheck
 * --json, tmsync --json, tmexport's Chrome trace and tmbench's line for every
 * workload, each run on a real traced run (tmsync and tmcheck also on that
 * trace cut before its END chunk); a key the tool writes that its section
 * of the document does not name (as `key`) fails the test.
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

#define OUT_CAP (16u << 20)

static char *doc;     /* docs/json.md */
static char *out;     /* a tool's standard output */

/* The text of the section whose heading starts with `title` (up to the next
 * heading), copied; the caller frees it. */
static char *section(const char *title)
{
    char head[128];
    snprintf(head, sizeof head, "\n## %s", title);
    const char *s = strstr(doc, head);
    if (!s)
        fail_msg("docs/json.md has no section \"## %s\"", title);
    s += strlen(head);
    const char *e = strstr(s, "\n## ");
    size_t n = e ? (size_t)(e - s) : strlen(s);
    char *t = malloc(n + 1);
    assert_non_null(t);
    memcpy(t, s, n);
    t[n] = '\0';
    return t;
}

/* Every member name in the JSON text `json` must appear as `name` in `sec`;
 * returns how many names were checked. */
static int check_keys(const char *tool, const char *json, const char *sec)
{
    int checked = 0;
    for (const char *p = json; *p; p++) {
        if (*p != '"')
            continue;
        const char *start = ++p;
        while (*p && *p != '"')
            p += *p == '\\' && p[1] ? 2 : 1;
        if (!*p)
            break;
        if (p[1] != ':')
            continue;   /* a string value, not a member name */
        char want[160];
        int n = snprintf(want, sizeof want, "`%.*s`", (int)(p - start), start);
        assert_true(n > 0 && (size_t)n < sizeof want);
        if (!strstr(sec, want))
            fail_msg("%s writes the key %s, which docs/json.md does not document in its section", tool, want);
        checked++;
    }
    return checked;
}

static int run(const char *cmd)
{
    return tu_run(cmd, out, OUT_CAP);
}

static int setup(void **st)
{
    (void)st;
    doc = tu_read_in(TMT_SOURCE_ROOT, "docs/json.md", NULL);
    out = malloc(OUT_CAP);
    return doc && out ? 0 : -1;
}

static int teardown(void **st)
{
    (void)st;
    free(doc);
    free(out);
    return 0;
}

/* A traced bank run with injected skew and emulated hardware transactions,
 * synchronised: the keys that depend on the trace's content all appear. */
static void traced_run(const char *raw, const char *synced)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "TMTRACE_FILE='%s' TMTRACE_EVENTS=all TMTRACE_SKEW=1:20000:50 TMTRACE_HTM=emulate "
             "TMTRACE_SAMPLE_MS=5 %s bank --threads 2 --ops 2000 >/dev/null 2>&1",
             raw, tu_build("tmbench/tmbench"));
    assert_int_equal(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s --json -o '%s' '%s' 2>&1", tu_build("tools/tmsync"), synced, raw);
    assert_int_equal(run(cmd), 0);
}

/* Runs `cmd`, expecting exit status `rc`, and checks every key it prints
 * against the section `title` of docs/json.md; the keys checked. */
static int keys_documented(const char *title, const char *cmd, int rc)
{
    assert_int_equal(run(cmd), rc);
    char *sec = section(title);
    int n = check_keys(title, out, sec);
    free(sec);
    return n;
}

static void every_key_of_tmcheck_tmsync_and_tmexport_is_documented(void **st)
{
    (void)st;
    const char *raw = tu_path("schema.bin"), *synced = tu_path("schema.sync.bin");
    traced_run(raw, synced);
    char sync_cmd[4096], check_cmd[4096], cmd[4096];
    snprintf(sync_cmd, sizeof sync_cmd, "%s --json -o '%s' '%s' 2>/dev/null", tu_build("tools/tmsync"), synced, raw);
    snprintf(check_cmd, sizeof check_cmd, "%s --json '%s' 2>/dev/null", tu_build("tools/tmcheck"), synced);
    assert_true(keys_documented("tmsync --json", sync_cmd, 0) >= 12);
    assert_true(keys_documented("tmcheck --json", check_cmd, 0) >= 40);
    assert_non_null(strstr(out, "\"clock_error_ns\":"));

    /* the keys of an incomplete trace: the same run, cut before its END chunk */
    assert_int_equal(tg_end_as_killed(raw, 0), 0);
    keys_documented("tmsync --json", sync_cmd, 4);
    assert_non_null(strstr(out, "\"incomplete\":"));
    keys_documented("tmcheck --json", check_cmd, 4);
    assert_non_null(strstr(out, "\"incomplete\":"));

    snprintf(cmd, sizeof cmd, "%s '%s' 2>&1", tu_build("tools/tmexport"), synced);
    assert_true(keys_documented("tmexport", cmd, 0) >= 20);
}

static void every_key_of_every_tmbench_workload_is_documented(void **st)
{
    (void)st;
    char cmd[4096], names[1024];
    snprintf(cmd, sizeof cmd, "%s list-workloads", tu_build("tmbench/tmbench"));
    assert_int_equal(run(cmd), 0);
    snprintf(names, sizeof names, "%s", out);
    char *sec = section("tmbench");
    int workloads = 0;
    for (char *w = strtok(names, " \n"); w; w = strtok(NULL, " \n")) {
        snprintf(cmd, sizeof cmd, "cd '%s' && TMTRACE_EVENTS=off %s %s --ops 200 2>/dev/null", tu_tmpdir(),
                 tu_build("tmbench/tmbench"), w);
        assert_int_equal(run(cmd), 0);
        assert_true(check_keys(w, out, sec) >= 15);
        workloads++;
    }
    assert_true(workloads >= 10);
    free(sec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_key_of_tmcheck_tmsync_and_tmexport_is_documented),
        cmocka_unit_test(every_key_of_every_tmbench_workload_is_documented),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
