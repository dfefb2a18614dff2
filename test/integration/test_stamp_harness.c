/*
 * test_stamp_harness.c - tmbench/stamp/run refuses what it cannot use with
 * one line that names it, before building anything. The harness itself
 * needs STAMP's and TinySTM's sources, which the suite does not have: only
 * its argument checking is tested here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "test_util.h"

/* Runs the harness with ARGS; returns its exit status, output in out. */
static int harness(const char *args, char *out, size_t cap)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s/tmbench/stamp/run' %s --build '%s' 2>&1", TMT_SOURCE_ROOT, args,
             tu_build(""));
    return tu_run(cmd, out, cap);
}

static int lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* A directory with the files the harness looks for in a STAMP tree (empty). */
static const char *fake_stamp(void)
{
    static const char *apps[] = { "bayes", "genome", "intruder", "kmeans", "labyrinth", "ssca2",
                                  "vacation", "yada", "lib", "common" };
    char cmd[4096];
    int n = snprintf(cmd, sizeof cmd, "cd '%s' && mkdir -p", tu_tmpdir());
    for (size_t i = 0; i < sizeof apps / sizeof *apps; i++)
        n += snprintf(cmd + n, sizeof cmd - n, " fake/%s", apps[i]);
    n += snprintf(cmd + n, sizeof cmd - n, " && touch fake/lib/tm.h fake/common/Makefile.stm");
    for (size_t i = 0; i < 8; i++)
        n += snprintf(cmd + n, sizeof cmd - n, " fake/%s/Makefile.stm", apps[i]);
    assert_int_equal(tu_run(cmd, NULL, 0), 0);
    return tu_path("fake");
}

static void help_names_both_source_directories(void **state)
{
    (void)state;
    char out[8192];
    assert_int_equal(harness("--help", out, sizeof out), 0);
    assert_non_null(strstr(out, "STAMP_DIR"));
    assert_non_null(strstr(out, "TINYSTM_DIR"));
}

static void a_missing_stamp_dir_is_one_line_naming_it(void **state)
{
    (void)state;
    char out[4096];
    assert_int_equal(harness("/nonexistent/stamp", out, sizeof out), 2);
    assert_non_null(strstr(out, "STAMP_DIR /nonexistent/stamp: no such directory"));
    assert_int_equal(lines(out), 1);
}

static void a_directory_that_is_not_stamp_is_refused(void **state)
{
    (void)state;
    char out[4096], args[1024];
    snprintf(args, sizeof args, "'%s'", tu_tmpdir());
    assert_int_equal(harness(args, out, sizeof out), 2);
    assert_non_null(strstr(out, "not a STAMP source tree (no lib/tm.h)"));
    assert_int_equal(lines(out), 1);
}

static void a_directory_that_is_not_tinystm_is_refused(void **state)
{
    (void)state;
    char out[4096], args[2048];
    snprintf(args, sizeof args, "'%s' '%s'", fake_stamp(), tu_tmpdir());
    assert_int_equal(harness(args, out, sizeof out), 2);
    assert_non_null(strstr(out, "TINYSTM_DIR"));
    assert_non_null(strstr(out, "not a TinySTM source tree (no Makefile)"));
    assert_int_equal(lines(out), 1);
}

/* Runs the harness on a fake STAMP tree with OPTIONS and checks that it
 * refuses them in one line (exit 2) that holds each of the NULL-ended
 * strings that follow. */
static void refused_in_one_line(const char *options, ...)
{
    char out[4096], args[2048];
    snprintf(args, sizeof args, "'%s' %s", fake_stamp(), options);
    assert_int_equal(harness(args, out, sizeof out), 2);
    va_list ap;
    va_start(ap, options);
    for (const char *want; (want = va_arg(ap, const char *)) != NULL;)
        assert_non_null(strstr(out, want));
    va_end(ap);
    assert_int_equal(lines(out), 1);
}

static void an_unknown_application_is_refused(void **state)
{
    (void)state;
    refused_in_one_line("--apps vacation,nope", "--apps", "'vacation,nope'", NULL);
}

/* Levels: tx, all and all/boundary, each at most once; anything else is one
 * line naming them. */
static void an_unknown_level_is_refused_naming_the_levels(void **state)
{
    (void)state;
    refused_in_one_line("--levels all,all/bogus", "--levels", "'all,all/bogus'", "all/boundary", NULL);
    refused_in_one_line("--levels all,all", "--levels", "'all,all'", NULL);
}

static void arguments_that_set_the_thread_count_are_refused(void **state)
{
    (void)state;
    refused_in_one_line("--args 'vacation=-n4 -c8'", "the thread option is set by --threads", NULL);
}

/* --floor-build takes only a measuring build (meson -Dclock_floor=tx|all|records):
 * this suite's own build is not one, and a directory that is no build at
 * all is named as such. */
static void a_floor_build_that_measures_nothing_is_refused(void **state)
{
    (void)state;
    char opt[2048];
    snprintf(opt, sizeof opt, "--floor-build '%s'", tu_build(""));
    refused_in_one_line(opt, "not a measuring build", "-Dclock_floor", NULL);
    refused_in_one_line("--floor-build /nonexistent/build", "/nonexistent/build", "not a configured meson build tree",
                        NULL);
}

/* --baseline takes a build of the project: a directory without its
 * compat/tl2 library is named in one line. */
static void a_baseline_without_the_tl2_library_is_refused(void **state)
{
    (void)state;
    refused_in_one_line("--baseline /nonexistent/build", "/nonexistent/build/compat/tl2", "libtl2.a", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(help_names_both_source_directories),
        cmocka_unit_test(a_missing_stamp_dir_is_one_line_naming_it),
        cmocka_unit_test(a_directory_that_is_not_stamp_is_refused),
        cmocka_unit_test(a_directory_that_is_not_tinystm_is_refused),
        cmocka_unit_test(an_unknown_application_is_refused),
        cmocka_unit_test(an_unknown_level_is_refused_naming_the_levels),
        cmocka_unit_test(arguments_that_set_the_thread_count_are_refused),
        cmocka_unit_test(a_floor_build_that_measures_nothing_is_refused),
        cmocka_unit_test(a_baseline_without_the_tl2_library_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
