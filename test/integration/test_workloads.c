/*
 * test_workloads.c - the application workloads of tmbench (vacation,
 * intruder, kmeans, labyrinth, ssca2) run through the real tmbench binary:
 * at 1, 2 and 4 threads each ends with its correctness check passing and
 * real transactions committed; with the hidden --sabotage option (one
 * element corrupted before the check) each check fails, which proves it can.
 * And the driver's --pin puts each worker on its CPU of the affinity mask.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity */
#endif
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

/* Small sizes: the whole file runs in a few seconds on two cores. */
static const char *const vacation_low = "vacation --relations 256 --ops 6000";
static const char *const vacation_high = "vacation --preset high --relations 256 --ops 6000";
static const char *const intruder = "intruder --flows 600 --attack 20 --max-fragments 6 --ops 1000";
static const char *const kmeans = "kmeans --points 1024 --dims 4 --clusters 6 --iterations 30 --ops 1000";
static const char *const labyrinth = "labyrinth --x 16 --y 16 --z 3 --paths 24 --ops 1000";
static const char *const ssca2 = "ssca2 --vertices 256 --edges 4096 --ops 20000";

static char out[16384];

/* Runs tmbench with args at the given thread count; returns the exit status
 * and leaves the output in out. */
static int run(const char *args, int threads, const char *extra)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s --threads %d %s 2>&1", tu_build("tmbench/tmbench"), args, threads,
             extra ? extra : "");
    return tu_run(cmd, out, sizeof out);
}

/* The integer value of "key": in the JSON line, or -1 if absent. */
static long long json_int(const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(out, pat);
    return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

static void passes_its_check_at_1_2_and_4_threads(const char *args)
{
    static const int threads[] = {1, 2, 4};
    for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
        int rc = run(args, threads[i], NULL);
        if (rc != 0 || !strstr(out, "\"check\":\"ok\""))
            print_error("tmbench %s --threads %d exited %d: %s\n", args, threads[i], rc, out);
        assert_int_equal(rc, 0);
        assert_non_null(strstr(out, "\"check\":\"ok\""));
        assert_int_equal(json_int("threads"), threads[i]);
        assert_true(json_int("commits") > 0);
        assert_true(json_int("ops") > 0);
    }
}

static void fails_its_check_when_sabotaged(const char *args)
{
    int rc = run(args, 2, "--sabotage 1");
    if (rc != 1)
        print_error("sabotaged tmbench %s exited %d: %s\n", args, rc, out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "\"check\":"));
    assert_null(strstr(out, "\"check\":\"ok\""));
}

static void vacation_tables_stay_consistent(void **state)
{
    (void)state;
    passes_its_check_at_1_2_and_4_threads(vacation_low);
    passes_its_check_at_1_2_and_4_threads(vacation_high);
    assert_true(json_int("reservations") > 0);
}

static void vacation_check_catches_a_miscounted_item(void **state)
{
    (void)state;
    fails_its_check_when_sabotaged(vacation_low);
}

static void vacation_rejects_an_unknown_preset(void **state)
{
    (void)state;
    assert_int_equal(run("vacation --preset medium --ops 10", 1, NULL), 2);
}

static void intruder_finds_exactly_the_planted_attacks(void **state)
{
    (void)state;
    passes_its_check_at_1_2_and_4_threads(intruder);
    long long planted = json_int("planted");
    assert_true(planted > 0);
    assert_int_equal(json_int("detected"), planted);
    assert_int_equal(json_int("ops"), json_int("fragments"));
}

static void intruder_check_catches_a_wrong_detection(void **state)
{
    (void)state;
    fails_its_check_when_sabotaged(intruder);
}

static void kmeans_matches_the_sequential_run(void **state)
{
    (void)state;
    passes_its_check_at_1_2_and_4_threads(kmeans);
    assert_true(json_int("iterations") >= 1);
}

static void kmeans_check_catches_a_moved_centre(void **state)
{
    (void)state;
    fails_its_check_when_sabotaged(kmeans);
}

static void labyrinth_paths_are_connected_and_disjoint(void **state)
{
    (void)state;
    passes_its_check_at_1_2_and_4_threads(labyrinth);
    assert_true(json_int("routed") > 0);
    assert_int_equal(json_int("routed") + json_int("failed"), 24);
}

static void labyrinth_check_catches_a_lost_cell(void **state)
{
    (void)state;
    fails_its_check_when_sabotaged(labyrinth);
}

static void ssca2_graph_holds_exactly_the_added_edges(void **state)
{
    (void)state;
    passes_its_check_at_1_2_and_4_threads(ssca2);
    assert_true(json_int("edges_added") > 0);
}

static void ssca2_check_catches_a_changed_edge(void **state)
{
    (void)state;
    fails_its_check_when_sabotaged(ssca2);
}

/* The CPUs this process may use (which tmbench inherits), in order. */
static int allowed_cpus(int *cpus, int cap)
{
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < cap; c++)
        if (CPU_ISSET(c, &set))
            cpus[n++] = c;
    return n;
}

/* With --pin, worker i begins and ends its work on the i-th allowed CPU
 * (modulo their count); more workers than CPUs, so that an unpinned run
 * could hardly put every one where it belongs both times by chance. */
static void pin_puts_worker_i_on_the_ith_cpu_of_the_affinity_mask(void **state)
{
    (void)state;
    int cpus[CPU_SETSIZE];
    int ncpu = allowed_cpus(cpus, CPU_SETSIZE);
    if (ncpu < 2)
        skip();
    enum { WORKERS = 6 };
    int rc = run("bank --ops 600000 --pin", WORKERS, NULL);
    if (rc != 0)
        print_error("tmbench bank --pin exited %d: %s\n", rc, out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "\"pin\":true"));
    const char *p = strstr(out, "\"workers\":[");
    assert_non_null(p);
    for (int i = 0; i < WORKERS; i++) {
        long long first, last;
        p = strstr(p, "\"cpu_first\":");
        assert_non_null(p);
        assert_int_equal(sscanf(p, "\"cpu_first\":%lld,\"cpu_last\":%lld", &first, &last), 2);
        if (first != cpus[i % ncpu] || last != cpus[i % ncpu])
            print_error("worker %d ran on CPUs %lld..%lld, pinned to %d: %s\n", i, first, last, cpus[i % ncpu], out);
        assert_int_equal(first, cpus[i % ncpu]);
        assert_int_equal(last, cpus[i % ncpu]);
        p++;
    }
    assert_null(strstr(p, "\"cpu_first\":"));
}

/* Without --pin the line says so, and still has one entry per worker. */
static void an_unpinned_run_says_so_and_lists_every_worker(void **state)
{
    (void)state;
    assert_int_equal(run("bank --ops 2000", 3, NULL), 0);
    assert_non_null(strstr(out, "\"pin\":false"));
    int n = 0;
    for (const char *p = strstr(out, "\"cpu_first\":"); p; p = strstr(p + 1, "\"cpu_first\":"))
        n++;
    assert_int_equal(n, 3);
}

/* --pin is a flag: a value given to it is a one-line error naming it. */
static void a_value_given_to_pin_is_an_error_naming_the_option(void **state)
{
    (void)state;
    assert_int_equal(run("bank --ops 10 --pin=1", 2, NULL), 2);
    assert_non_null(strstr(out, "--pin takes no value"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(vacation_tables_stay_consistent),
        cmocka_unit_test(vacation_check_catches_a_miscounted_item),
        cmocka_unit_test(vacation_rejects_an_unknown_preset),
        cmocka_unit_test(intruder_finds_exactly_the_planted_attacks),
        cmocka_unit_test(intruder_check_catches_a_wrong_detection),
        cmocka_unit_test(kmeans_matches_the_sequential_run),
        cmocka_unit_test(kmeans_check_catches_a_moved_centre),
        cmocka_unit_test(labyrinth_paths_are_connected_and_disjoint),
        cmocka_unit_test(labyrinth_check_catches_a_lost_cell),
        cmocka_unit_test(ssca2_graph_holds_exactly_the_added_edges),
        cmocka_unit_test(ssca2_check_catches_a_changed_edge),
        cmocka_unit_test(pin_puts_worker_i_on_the_ith_cpu_of_the_affinity_mask),
        cmocka_unit_test(an_unpinned_run_says_so_and_lists_every_worker),
        cmocka_unit_test(a_value_given_to_pin_is_an_error_naming_the_option),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
