/*
 * test_clock_floor.c - a measuring build (meson -Dclock_floor, clock.h):
 * it refuses to trace, naming the variable and the build, and runs
 * untraced transactions as a normal build does. Linked against the runtime
 * compiled with TMT_CLOCK_FLOOR=2 (libtmtrace_clock_floor).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmtrace.h"
#include "test_util.h"

static void test_a_measuring_build_refuses_every_level_that_records(void **s)
{
    (void)s;
    setenv("TMTRACE_FILE", tu_path("trace.bin"), 1);
    setenv("TMTRACE_EVENTS", "all", 1);
    assert_int_equal(tmt_init(), -1);
    assert_non_null(strstr(tmt_error(), "TMTRACE_EVENTS=all"));
    assert_non_null(strstr(tmt_error(), "-Dclock_floor=all"));
    assert_null(strchr(tmt_error(), '\n'));
    unsetenv("TMTRACE_EVENTS"); /* the default level, tx, records */
    assert_int_equal(tmt_init(), -1);
    assert_non_null(strstr(tmt_error(), "TMTRACE_EVENTS=tx"));
    assert_null(tmt_thread_enter());
    assert_int_not_equal(access(tu_path("trace.bin"), F_OK), 0);
}

static void test_a_measuring_build_runs_untraced_transactions(void **s)
{
    (void)s;
    setenv("TMTRACE_FILE", tu_path("trace.bin"), 1);
    setenv("TMTRACE_EVENTS", "off", 1);
    assert_int_equal(tmt_init(), 0);
    tmt_tx *tx = tmt_thread_enter();
    assert_non_null(tx);
    static long cells[64];
    tmt_stats before, after;
    tmt_stats_get(&before);
    for (int round = 0; round < 100; round++) {
        TMT_ATOMIC(tx, "floor") {
            for (int i = 0; i < 64; i++)
                tmt_write_long(tx, &cells[i], tmt_read_long(tx, &cells[i]) + i);
        } TMT_END;
    }
    tmt_stats_get(&after);
    for (int i = 0; i < 64; i++)
        assert_int_equal(cells[i], 100L * i);
    assert_int_equal(after.commits - before.commits, 100);
    assert_int_equal(after.events_recorded, 0);
    tmt_thread_exit();
    tmt_shutdown();
    assert_int_not_equal(access(tu_path("trace.bin"), F_OK), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_measuring_build_refuses_every_level_that_records),
        cmocka_unit_test(test_a_measuring_build_runs_untraced_transactions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
