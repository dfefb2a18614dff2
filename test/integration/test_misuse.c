/*
 * test_misuse.c - API misuse gets one line naming the call and the fix, not
 * a bare crash or a silent loss: accessors in a thread that never entered,
 * a TMT_ATOMIC left by return or break (the debug scope check, on here),
 * tmt_thread_exit inside a transaction, tmt_tx_retry/cancel outside one, a
 * NULL descriptor, tmt_init after tmt_shutdown, a TMTRACE_FILE that cannot
 * be created.
 */
#define TMT_SCOPE_CHECK 1
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmtrace.h"
#include "test_util.h"

static long cell;

/* Runs `body` in a child whose stderr goes to a file; expects it to die of
 * SIGABRT after exactly one line that contains every `needles` (NULL-ended). */
static void expect_one_line_and_abort(void (*body)(void), const char *name, const char *const *needles)
{
    const char *log = tu_path(name);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (freopen(log, "w", stderr) == NULL)
            _exit(70);
        setenv("TMTRACE_FILE", tu_path("misuse.bin"), 1);
        setenv("TMTRACE_SAMPLE_MS", "2", 1);
        setenv("TMTRACE_HTM", "off", 1);
        setenv("TMT_KEEP_TMP", "1", 1);
        if (tmt_init() != 0)
            _exit(71);
        body();
        _exit(0); /* the misuse went unnoticed */
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    char *text = tu_read_file(log, NULL);
    assert_non_null(text);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
        fail_msg("%s: child status %#x, stderr: %s", name, status, text);
    int lines = 0;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    if (lines != 1)
        fail_msg("%s: %d lines: %s", name, lines, text);
    assert_non_null(strstr(text, "libtmtrace: "));
    for (; *needles; needles++)
        if (strstr(text, *needles) == NULL)
            fail_msg("%s: no \"%s\" in: %s", name, *needles, text);
    free(text);
}

static int returns_from_inside(tmt_tx *tx)
{
    TMT_ATOMIC(tx, "left-by-return") {
        if (tmt_read_long(tx, &cell) == 0)
            return 1;
    } TMT_END;
    return 0;
}

static void body_return(void)
{
    tmt_tx *tx = tmt_thread_enter();
    (void)returns_from_inside(tx);
}

static void a_return_out_of_a_block_is_named_with_its_site(void **state)
{
    (void)state;
    const char *n[] = { "TMT_ATOMIC at ", "test_misuse.c:", "left-by-return", "return, break or goto", NULL };
    expect_one_line_and_abort(body_return, "return.log", n);
}

static void body_break(void)
{
    tmt_tx *tx = tmt_thread_enter();
    for (int i = 0; i < 3; i++) {
        TMT_ATOMIC(tx, "left-by-break") {
            tmt_write_long(tx, &cell, i);
            break;
        } TMT_END;
    }
}

static void a_break_out_of_a_block_is_named_with_its_site(void **state)
{
    (void)state;
    const char *n[] = { "left-by-break", "TMT_END", NULL };
    expect_one_line_and_abort(body_break, "break.log", n);
}

static void body_exit_inside(void)
{
    tmt_tx *tx = tmt_thread_enter();
    TMT_ATOMIC(tx, "exit-inside") {
        tmt_write_long(tx, &cell, 1);
        tmt_thread_exit();
    } TMT_END;
}

static void thread_exit_inside_a_transaction_is_said(void **state)
{
    (void)state;
    const char *n[] = { "tmt_thread_exit", "inside a transaction", NULL };
    expect_one_line_and_abort(body_exit_inside, "exit.log", n);
}

static void body_retry_outside(void) { tmt_tx_retry(tmt_thread_enter()); }
static void body_cancel_outside(void) { tmt_tx_cancel(tmt_thread_enter()); }

static void retry_and_cancel_outside_a_transaction_are_said(void **state)
{
    (void)state;
    const char *r[] = { "tmt_tx_retry", "outside a transaction", NULL };
    expect_one_line_and_abort(body_retry_outside, "retry.log", r);
    const char *c[] = { "tmt_tx_cancel", "outside a transaction", NULL };
    expect_one_line_and_abort(body_cancel_outside, "cancel.log", c);
}

static void body_null_descriptor(void)
{
    tmt_tx *volatile none = NULL;
    TMT_ATOMIC(none, "null") {
        tmt_write_long(none, &cell, 1);
    } TMT_END;
}

static void a_null_descriptor_is_said_with_the_fix(void **state)
{
    (void)state;
    const char *n[] = { "NULL", "tmt_thread_enter()", NULL };
    expect_one_line_and_abort(body_null_descriptor, "null.log", n);
}

/* ---- recoverable misuse: a result, not a crash ----------------------------- */

static void *never_entered(void *arg)
{
    (void)arg;
    tmt_tx *tx = tmt_self(); /* this thread never called tmt_thread_enter */
    if (tx == NULL)
        return (void *)1;
    TMT_ATOMIC(tx, "implicit") {
        tmt_write_long(tx, &cell, tmt_read_long(tx, &cell) + 1);
    } TMT_END;
    tmt_thread_exit();
    return NULL;
}

static void a_thread_that_never_entered_is_entered_by_tmt_self(void **state)
{
    (void)state;
    setenv("TMTRACE_FILE", tu_path("implicit.bin"), 1);
    setenv("TMTRACE_SAMPLE_MS", "2", 1);
    assert_int_equal(tmt_init(), 0);
    cell = 0;
    pthread_t th;
    void *rc;
    assert_int_equal(pthread_create(&th, NULL, never_entered, NULL), 0);
    assert_int_equal(pthread_join(th, &rc), 0);
    assert_null(rc);
    assert_int_equal(cell, 1);
}

static int init_after_shutdown(void)
{
    if (tmt_init() != 0)
        return 10;
    if (tmt_shutdown() != 0)
        return 11;
    if (tmt_init() != -1)
        return 12; /* pretends to trace again */
    if (strstr(tmt_error(), "tmt_shutdown") == NULL)
        return 13;
    return 0;
}

static void init_after_shutdown_fails_and_says_why(void **state)
{
    (void)state;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("TMTRACE_FILE", tu_path("shut.bin"), 1);
        setenv("TMT_KEEP_TMP", "1", 1);
        _exit(init_after_shutdown());
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* A trace that can never be written fails tmt_init, naming the variable and
 * the path; nothing is created. */
static void an_uncreatable_trace_file_fails_init_naming_variable_and_path(void **state)
{
    (void)state;
    const char *bad[] = { tu_path("no-such-dir/t.bin"), tu_tmpdir() };
    for (size_t i = 0; i < 2; i++) {
        int fds[2];
        pid_t pid = tu_fork_piped(fds);
        assert_true(pid >= 0);
        if (pid == 0) {
            setenv("TMTRACE_FILE", bad[i], 1);
            setenv("TMTRACE_SAMPLE_MS", "2", 1);
            setenv("TMT_KEEP_TMP", "1", 1);
            int rc = tmt_init();
            const char *msg = tmt_error();
            if (write(fds[1], msg, strlen(msg)) < 0)
                _exit(3);
            _exit(rc == -1 && tmt_thread_enter() == NULL ? 0 : 1);
        }
        char msg[1024];
        ssize_t n = read(fds[0], msg, sizeof msg - 1);
        close(fds[0]);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(n > 0);
        msg[n] = '\0';
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fail_msg("%s: status %#x: %s", bad[i], status, msg);
        assert_non_null(strstr(msg, "TMTRACE_FILE"));
        assert_non_null(strstr(msg, bad[i]));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_return_out_of_a_block_is_named_with_its_site),
        cmocka_unit_test(a_break_out_of_a_block_is_named_with_its_site),
        cmocka_unit_test(thread_exit_inside_a_transaction_is_said),
        cmocka_unit_test(retry_and_cancel_outside_a_transaction_are_said),
        cmocka_unit_test(a_null_descriptor_is_said_with_the_fix),
        cmocka_unit_test(init_after_shutdown_fails_and_says_why),
        cmocka_unit_test(an_uncreatable_trace_file_fails_init_naming_variable_and_path),
        cmocka_unit_test(a_thread_that_never_entered_is_entered_by_tmt_self),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
