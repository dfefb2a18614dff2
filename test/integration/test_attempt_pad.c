/*
 * test_attempt_pad.c - a measuring build that pads every attempt (meson
 * -Dattempt_pad, tx_life.c's tx_pad): it refuses to trace, naming the
 * variable and the build, and spins inside each attempt, between its start
 * and its body, whether the thread runs alone (in place) or beside another
 * (the STM). Linked against the runtime compiled with TMT_ATTEMPT_PAD=2
 * (inside) and 2,000,000 spins (libtmtrace_pad): at least one cycle each, so
 * at least 0.2 ms on any CPU below 10 GHz, against a few microseconds for
 * an attempt that is not padded.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmtrace.h"
#include "test_util.h"

#define PAD_MIN_NS 200000.0

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static void test_a_padded_build_refuses_every_level_that_records(void **s)
{
    (void)s;
    setenv("TMTRACE_FILE", tu_path("trace.bin"), 1);
    setenv("TMTRACE_EVENTS", "all", 1);
    assert_int_equal(tmt_init(), -1);
    assert_non_null(strstr(tmt_error(), "TMTRACE_EVENTS=all"));
    assert_non_null(strstr(tmt_error(), "-Dattempt_pad=inside"));
    assert_null(strchr(tmt_error(), '\n'));
    unsetenv("TMTRACE_EVENTS"); /* the default level records */
    assert_int_equal(tmt_init(), -1);
    assert_non_null(strstr(tmt_error(), "TMTRACE_EVENTS=tx"));
    assert_int_not_equal(access(tu_path("trace.bin"), F_OK), 0);
}

/* The shortest time from before an attempt's start to its body's first
 * statement over `rounds` transactions, each of which adds one to `cell`. */
static double shortest_start_ns(tmt_tx *tx, long *cell, int rounds)
{
    volatile double least = 1e18;
    for (int round = 0; round < rounds; round++) {
        double t0 = now_ns();
        volatile double t1 = 0;
        TMT_ATOMIC(tx, "pad") {
            t1 = now_ns();
            tmt_write_long(tx, cell, tmt_read_long(tx, cell) + 1);
        } TMT_END;
        if (t1 - t0 < least)
            least = t1 - t0;
    }
    return least;
}

/* The runtime untraced, initialised once for the tests that run it (a
 * process shuts it down once, in the group's teardown). */
static tmt_tx *untraced_tx;
static tmt_tx *start_untraced(void)
{
    if (untraced_tx != NULL)
        return untraced_tx;
    setenv("TMTRACE_FILE", tu_path("trace.bin"), 1);
    setenv("TMTRACE_EVENTS", "off", 1);
    if (tmt_init() != 0)
        fail_msg("tmt_init: %s", tmt_error());
    untraced_tx = tmt_thread_enter();
    assert_non_null(untraced_tx);
    return untraced_tx;
}

static int shut_down(void **s)
{
    (void)s;
    if (untraced_tx != NULL) {
        tmt_thread_exit();
        tmt_shutdown();
    }
    return 0;
}

static void test_a_lone_threads_attempts_spin_between_their_start_and_their_body(void **s)
{
    (void)s;
    tmt_tx *tx = start_untraced();
    static long cell;
    assert_true(shortest_start_ns(tx, &cell, 5) >= PAD_MIN_NS);
    assert_int_equal(cell, 5);
}

/* A second thread that has run a transaction and stays until told. */
static volatile int beside_joined, beside_leave;
static void *beside(void *arg)
{
    (void)arg;
    tmt_tx *tx = tmt_thread_enter();
    static long own;
    TMT_ATOMIC(tx, "beside") {
        tmt_write_long(tx, &own, 1);
    } TMT_END;
    __atomic_store_n(&beside_joined, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&beside_leave, __ATOMIC_ACQUIRE))
        usleep(1000);
    tmt_thread_exit();
    return NULL;
}

static void test_software_attempts_beside_another_thread_spin_between_their_start_and_their_body(void **s)
{
    (void)s;
    tmt_tx *tx = start_untraced();
    pthread_t other;
    beside_joined = beside_leave = 0;
    assert_int_equal(pthread_create(&other, NULL, beside, NULL), 0);
    while (!__atomic_load_n(&beside_joined, __ATOMIC_ACQUIRE))
        usleep(1000);
    static long cell;
    tmt_stats before, after;
    tmt_stats_get(&before);
    assert_true(shortest_start_ns(tx, &cell, 5) >= PAD_MIN_NS);
    tmt_stats_get(&after);
    assert_int_equal(cell, 5);
    assert_int_equal(after.commits - before.commits, 5);
    __atomic_store_n(&beside_leave, 1, __ATOMIC_RELEASE);
    assert_int_equal(pthread_join(other, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_padded_build_refuses_every_level_that_records),
        cmocka_unit_test(test_a_lone_threads_attempts_spin_between_their_start_and_their_body),
        cmocka_unit_test(test_software_attempts_beside_another_thread_spin_between_their_start_and_their_body),
    };
    return cmocka_run_group_tests(tests, NULL, shut_down);
}
