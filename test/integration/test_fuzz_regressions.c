/*
 * test_fuzz_regressions.c - every input a fuzzer ever found a problem with
 * (test/fuzz/regressions/<target>/) and every seed (test/fuzz/corpus/<target>/)
 * goes through the same entry point as the fuzzer, without libFuzzer: the
 * replay_<target> drivers built in every configuration. A target aborts on
 * any broken promise, and under ASan/UBSan on any memory or undefined-
 * behaviour error, so a fixed bug that comes back fails here.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

static char out[8192];

/* Regular files in dir (0 if it does not exist). */
static long count_inputs(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    long n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

/* Replays test/fuzz/<kind>/<target> through replay_<target>; asserts a clean
 * exit and that every file was fed. Returns the number of inputs. */
static long replay(const char *target, const char *kind)
{
    char dir[2048], exe[64], cmd[4096];
    snprintf(dir, sizeof dir, "%s/test/fuzz/%s/%s", TMT_SOURCE_ROOT, kind, target);
    long n = count_inputs(dir);
    if (n == 0)
        return 0;
    snprintf(exe, sizeof exe, "test/fuzz/replay_%s", target);
    snprintf(cmd, sizeof cmd, "'%s' '%s' 2>&1", tu_build(exe), dir);
    int rc = tu_run(cmd, out, sizeof out);
    if (rc != 0)
        print_error("replay_%s over %s exited %d:\n%s\n", target, dir, rc, out);
    assert_int_equal(rc, 0);
    char want[64];
    snprintf(want, sizeof want, "%ld inputs", n);
    assert_non_null(strstr(out, want));
    return n;
}

static void reader_survives_seeds_and_regressions(void **state)
{
    (void)state;
    assert_true(replay("reader", "corpus") > 0);
    replay("reader", "regressions");
}

static void sync_model_survives_seeds_and_regressions(void **state)
{
    (void)state;
    assert_true(replay("sync_model", "corpus") > 0);
    replay("sync_model", "regressions");
}

static void check_survives_seeds_and_regressions(void **state)
{
    (void)state;
    assert_true(replay("check", "corpus") > 0);
    replay("check", "regressions");
}

static void env_survives_seeds_and_regressions(void **state)
{
    (void)state;
    assert_true(replay("env", "corpus") > 0);
    replay("env", "regressions");
}

/* The drivers themselves: a missing input is a usage error, not a pass. */
static void replay_refuses_a_missing_input(void **state)
{
    (void)state;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' '%s' 2>&1", tu_build("test/fuzz/replay_reader"), tu_path("no-such-input"));
    int rc = tu_run(cmd, out, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "no-such-input"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reader_survives_seeds_and_regressions),
        cmocka_unit_test(sync_model_survives_seeds_and_regressions),
        cmocka_unit_test(check_survives_seeds_and_regressions),
        cmocka_unit_test(env_survives_seeds_and_regressions),
        cmocka_unit_test(replay_refuses_a_missing_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
