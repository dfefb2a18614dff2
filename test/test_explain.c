/*
 * test_explain.c - tmcheck explains the aborts of a real traced run: two
 * threads increment one static word, so every abort is on that word, is
 * attributed by identity to the other thread's transaction, and the report
 * names the word by its symbol (the trace's load map, libdw).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "test_util.h"
#include "tmtrace.h"
#include "trace_gen.h"

long explain_hot_word; /* the hot word: global, so that its symbol is in the table */

static void *bump(void *arg)
{
    (void)arg;
    tmt_tx *tx = tmt_thread_enter();
    for (int i = 0; i < 50000; i++) {
        TMT_ATOMIC(tx, "bump") {
            long v = tmt_read_long(tx, &explain_hot_word);
            tmt_write_long(tx, &explain_hot_word, v + 1);
        } TMT_END;
    }
    tmt_thread_exit();
    return NULL;
}

static char out[1 << 17];

static void aborts_on_a_hot_global_are_named_by_symbol_and_attributed_by_identity(void **st)
{
    (void)st;
    const char *trace = tu_path("explain.bin"), *synced = tu_path("explain.sync.bin");
    setenv("TMTRACE_FILE", trace, 1);
    setenv("TMTRACE_EVENTS", "all", 1);
    assert_int_equal(tmt_init(), 0);
    tmt_stats s = { 0 };
    /* Until the threads have collided a few times (on a loaded machine
     * they may run one after the other for a while). */
    for (int round = 0; round < 200 && s.aborts < 5; round++) {
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
            assert_int_equal(pthread_create(&t[i], NULL, bump, NULL), 0);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        assert_int_equal(tmt_stats_get(&s), 0);
    }
    assert_true(s.aborts >= 5);
    assert_int_equal(tmt_shutdown(), 0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s '%s' -o '%s' >/dev/null 2>&1 && %s --json '%s'", tu_build("tools/tmsync"),
             trace, synced, tu_build("tools/tmcheck"), synced);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    assert_true(tg_json_num(out, NULL, "conflict_free_aborts") == 0);
    const char *top = strstr(out, "\"top_addresses\":[{");
    assert_non_null(top);
    assert_true(strncmp(strstr(top, "\"name\":"), "\"name\":\"explain_hot_word\"", 25) == 0);
    const char *a = strstr(out, "\"attribution\":");
    assert_non_null(a);
    assert_true(tg_json_num(out, a, "by_identity") > 0);
    assert_non_null(strstr(out, "bump (test_explain.c:"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(aborts_on_a_hot_global_are_named_by_symbol_and_attributed_by_identity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
