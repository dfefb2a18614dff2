/*
 * test_records_only.c - the record-only measuring build (meson
 * -Dclock_floor=records, TMT_STAMP_COUNTER in clock.h): it records what a
 * normal build records, reads no clock for a record (each thread's stamps
 * are consecutive, on CPU 0), and marks its trace so that it cannot pass
 * for a real one. Linked against the runtime compiled with
 * TMT_STAMP_COUNTER=1 (libtmtrace_records).
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_util.h"
#include "tmtrace.h"
#include "trace_file.h"
#include "trace_format.h"

enum { ROUNDS = 100, CELLS = 16, MAX_THREADS = 8 };

/* Runs ROUNDS transactions traced at `events` writing trace.bin, in a child
 * (a process initialises the runtime once): 0 when they ran and committed
 * what they should, else 1 (a line on stderr says why). */
static int run_transactions(const char *events)
{
    setenv("TMTRACE_FILE", tu_path("trace.bin"), 1); /* the folder is the parent's */
    pid_t pid = fork();
    if (pid == 0) {
        setenv("TMTRACE_EVENTS", events, 1);
        if (tmt_init() != 0) {
            fprintf(stderr, "tmt_init: %s\n", tmt_error());
            _exit(1);
        }
        tmt_tx *tx = tmt_thread_enter();
        static long cells[CELLS];
        for (int round = 0; tx != NULL && round < ROUNDS; round++) {
            TMT_ATOMIC(tx, "records") {
                for (int i = 0; i < CELLS; i++)
                    tmt_write_long(tx, &cells[i], tmt_read_long(tx, &cells[i]) + i);
            } TMT_END;
        }
        int bad = tx == NULL;
        for (int i = 0; i < CELLS; i++)
            bad |= cells[i] != (long)ROUNDS * i;
        tmt_thread_exit();
        tmt_shutdown();
        _exit(bad);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return 1;
    return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Reads the trace: every thread's stamps must be 1, 2, 3, ... on CPU 0,
 * a record that takes no stamp of its own repeating the one before it.
 * Returns the records and counts the commits into *commits. */
static uint64_t check_counted_stamps(uint64_t *commits)
{
    struct tf_reader *r = tf_open(tu_path("trace.bin"), 0);
    assert_non_null(r);
    assert_true(tf_reader_header(r)->flags & TF_HDR_COUNTED);
    uint64_t last[MAX_THREADS] = { 0 }, records = 0;
    *commits = 0;
    struct tf_chunk c;
    int rc;
    while ((rc = tf_next(r, &c)) == 1) {
        if (c.kind != TF_CHUNK_EVENTS)
            continue;
        for (size_t i = 0; i < c.count; i++) {
            const struct tf_event *e = &c.events[i];
            assert_true(e->thread < MAX_THREADS);
            /* a record that repeats the previous stamp (TMTRACE_STAMP=boundary's
             * accesses, WSET, ABORT_PC) reads no clock in any build */
            uint64_t step = e->ts - last[e->thread];
            assert_true(step == 1 || (step == 0 && e->kind != TF_EV_START && e->kind != TF_EV_COMMIT));
            assert_int_equal(e->cpu, 0);
            last[e->thread] = e->ts;
            *commits += e->kind == TF_EV_COMMIT;
            records++;
        }
    }
    assert_int_equal(rc, 0);
    tf_close(r);
    return records;
}

static void test_every_level_records_with_consecutive_stamps_and_no_clock(void **s)
{
    (void)s;
    static const char *levels[] = { "tx", "all" };
    for (size_t l = 0; l < 2; l++) {
        assert_int_equal(run_transactions(levels[l]), 0);
        uint64_t commits;
        uint64_t records = check_counted_stamps(&commits);
        assert_int_equal(commits, ROUNDS);
        /* all: a START, a COMMIT and each read and write per transaction */
        assert_true(records >= (l == 0 ? 2u : 2u + 2u * CELLS) * ROUNDS);
    }
}

static void test_tmsync_refuses_a_record_only_trace(void **s)
{
    (void)s;
    if (access(tu_build("tools/tmsync"), X_OK) != 0)
        skip(); /* a -Dsanitize_only build has no tools */
    assert_int_equal(run_transactions("tx"), 0);
    char cmd[4096], out[4096];
    snprintf(cmd, sizeof cmd, "%s %s -o %s 2>&1", tu_build("tools/tmsync"), tu_path("trace.bin"),
             tu_path("synced.bin"));
    assert_int_not_equal(tu_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "record-only measuring build"));
    assert_non_null(strstr(out, tu_path("trace.bin")));
    char *nl = strchr(out, '\n');
    assert_true(nl == NULL || nl[1] == '\0');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_level_records_with_consecutive_stamps_and_no_clock),
        cmocka_unit_test(test_tmsync_refuses_a_record_only_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
