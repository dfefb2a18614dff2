/*
 * test_explain.c - tmcheck explains the aborts of a real traced run:
 *   - two threads increment one global word: the aborts are on that word,
 *     named by its symbol, true conflicts or lock holders, attributed by
 *     identity, none conflict-free;
 *   - two threads increment two different words of one lock stripe (a
 *     false-sharing pair): false conflicts only, never true ones;
 *   - two threads increment a field of a block from tmt_malloc: the address
 *     is named by the block's allocation site;
 *   - a lock holder sleeps inside its commit path with its locks held (the
 *     runtime's test-build hook, stm_test_locked_hook) while another thread
 *     reads the word it writes: those aborts are "holder-preempted", blamed
 *     on the holder's thread and attempt, on the word named by its symbol.
 * The same hot word and pair at the default level (tx, no access recorded,
 * each commit's write set) get the same classes, none with its word unknown.
 * Sites are named `label (file:line)`.
 */
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "test_util.h"
#include "stm.h"
#include "tmtrace.h"
#include "trace_file.h"
#include "trace_gen.h"

#define STRIPES_LOG2 10            /* small, so that a global array has a false-sharing pair */
#define STRIPE_SHIFT 4             /* the default, set so that find_pair hashes as the runtime does */

long explain_hot_word;             /* global, so that its symbol is in the table */
long explain_pair[4096];
static long *explain_pair_a, *explain_pair_b;
static long *volatile explain_node;

long explain_preempt_word;         /* written by the preempted holder, read by its victim */

enum { HOT, PAIR, NODE };

static void *bump(void *arg)
{
    int which = (int)((intptr_t)arg >> 1), second = (int)((intptr_t)arg & 1);
    tmt_tx *tx = tmt_thread_enter();
    for (int i = 0; i < 20000; i++) {
        if (which == HOT) {
            TMT_ATOMIC(tx, "hot") {
                tmt_write_long(tx, &explain_hot_word, tmt_read_long(tx, &explain_hot_word) + 1);
            } TMT_END;
        } else if (which == PAIR) {
            long *w = second ? explain_pair_b : explain_pair_a;
            TMT_ATOMIC(tx, "pair") {
                tmt_write_long(tx, w, tmt_read_long(tx, w) + 1);
            } TMT_END;
        } else {
            TMT_ATOMIC(tx, "node") {
                tmt_write_long(tx, &explain_node[3], tmt_read_long(tx, &explain_node[3]) + 1);
            } TMT_END;
        }
    }
    tmt_thread_exit();
    return NULL;
}

/* Two threads on `which` until they have collided a few times (on a loaded
 * machine they may run one after the other for a while). */
static void run_until_aborts(int which, const char *label)
{
    for (int round = 0; round < 300 && tu_site_aborts(label) < 5; round++) {
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
            assert_int_equal(pthread_create(&t[i], NULL, bump, (void *)(intptr_t)(which << 1 | i)), 0);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
    }
    assert_true(tu_site_aborts(label) >= 5);
}

/* Two words of explain_pair on one stripe. */
static void find_pair(void)
{
    for (size_t j = 1; j < 4096; j++)
        if (tf_stripe_index((uintptr_t)&explain_pair[j], STRIPES_LOG2, STRIPE_SHIFT) ==
            tf_stripe_index((uintptr_t)&explain_pair[0], STRIPES_LOG2, STRIPE_SHIFT)) {
            explain_pair_a = &explain_pair[0];
            explain_pair_b = &explain_pair[j];
            return;
        }
    fail_msg("no two words of a 32 KiB array share one of 1024 stripes");
}

/* ---- a preempted lock holder ---- */

static struct {
    uint32_t thread, victim;   /* trace thread ids of the holder and the victim */
    uint64_t instance;         /* the holder's attempt that sleeps with its locks */
    int locked;                /* the holder is asleep with its locks held */
    int victim_runs;           /* executions of the victim's body (1 + its aborts) */
} held;
static __thread int sleep_in_commit;

static void nap_us(long us)
{
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
    nanosleep(&ts, NULL);
}

/* stm_test_locked_hook: the holder's commit, every lock held, sleeps until
 * the victim has aborted three times (at most 3 s). */
static void hold_and_sleep(const struct tmt_tx *tx)
{
    if (!sleep_in_commit)
        return;
    sleep_in_commit = 0;
    held.thread = tx->trace.thread_id;
    held.instance = tx->instance;
    __atomic_store_n(&held.locked, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 3000; i++) {
        nap_us(1000);
        if (__atomic_load_n(&held.victim_runs, __ATOMIC_ACQUIRE) >= 4)
            break;
    }
}

static void *preempt_holder(void *arg)
{
    (void)arg;
    tmt_tx *tx = tmt_thread_enter();
    sleep_in_commit = 1;
    TMT_ATOMIC(tx, "preempt-holder") {
        tmt_write_long(tx, &explain_preempt_word, tmt_read_long(tx, &explain_preempt_word) + 1);
    } TMT_END;
    tmt_thread_exit();
    return NULL;
}

static void *preempt_victim(void *arg)
{
    (void)arg;
    tmt_tx *tx = tmt_thread_enter();
    held.victim = tx->trace.thread_id;
    for (int i = 0; i < 50000 && !__atomic_load_n(&held.locked, __ATOMIC_ACQUIRE); i++)
        nap_us(100); /* at most 5 s: without the hook the holder never sleeps */
    TMT_ATOMIC(tx, "preempt-victim") {
        __atomic_add_fetch(&held.victim_runs, 1, __ATOMIC_RELEASE);
        (void)tmt_read_long(tx, &explain_preempt_word);
    } TMT_END;
    tmt_thread_exit();
    return NULL;
}

static void run_preempted_holder(void)
{
    pthread_t h, v;
    stm_test_locked_hook = hold_and_sleep;
    assert_int_equal(pthread_create(&v, NULL, preempt_victim, NULL), 0);
    assert_int_equal(pthread_create(&h, NULL, preempt_holder, NULL), 0);
    pthread_join(h, NULL);
    pthread_join(v, NULL);
    stm_test_locked_hook = NULL;
    assert_true(held.victim_runs >= 4);
}

/* Splits one aborts.csv line (no quoted fields here) into at most n fields. */
static int csv_fields(char *line, char **f, int n)
{
    int k = 0;
    line[strcspn(line, "\r\n")] = 0;
    while (k < n) {
        f[k++] = line;
        char *c = strchr(line, ',');
        if (!c)
            break;
        *c = 0;
        line = c + 1;
    }
    return k;
}

/* aborts.csv: every abort of the victim is blamed on the holder's attempt;
 * at least the three it waited for are "holder-preempted" on the word named
 * by its symbol; none is conflict-free. */
static void victim_aborts_blame_the_preempted_holder(const char *dir)
{
    char path[1024], line[4096];
    snprintf(path, sizeof path, "%s/aborts.csv", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    unsigned preempted = 0, rows = 0;
    while (fgets(line, sizeof line, f)) {
        char *c[17];
        if (csv_fields(line, c, 17) != 17 || strtoul(c[0], NULL, 10) != held.victim ||
            strncmp(c[14], "preempt-victim (test_explain.c:", 31) != 0)
            continue;
        rows++;
        assert_int_equal(strtoul(c[7], NULL, 10), held.thread);
        assert_int_equal(strtoull(c[9], NULL, 10), held.instance);
        assert_string_not_equal(c[12], "conflict-free");
        if (strcmp(c[12], "holder-preempted") == 0) {
            preempted++;
            assert_string_equal(c[16], "explain_preempt_word");
            assert_string_equal(c[13], "1");
        }
    }
    fclose(f);
    assert_true(rows >= 3);
    assert_true(preempted >= 3);
}

static char out[1 << 18];

/* The `classes` object of the top_sites entry named `name`. */
static const char *site_classes(const char *name)
{
    const char *p = strstr(out, "\"top_sites\":[");
    assert_non_null(p);
    p = strstr(p, name);
    assert_non_null(p);
    p = strstr(p, "\"classes\":{");
    assert_non_null(p);
    return p;
}

static double class_count(const char *classes, const char *cls)
{
    const char *k = strstr(classes, cls);
    assert_non_null(k);
    return tg_json_num(out, k, "count");
}

/* Runs the workloads in a child traced at `level` (NULL: the default, no
 * TMTRACE_EVENTS or TMTRACE_STAMP set), with the preempted holder when
 * `preempt`; then tmsync, and tmcheck --json (--csv into `csv`) into out. */
static void record_and_check(const char *level, int preempt, const char *csv)
{
    const char *trace = tu_path("explain.bin"), *synced = tu_path("explain.sync.bin");
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char stripes[8], shift[8];
        snprintf(stripes, sizeof stripes, "%d", STRIPES_LOG2);
        snprintf(shift, sizeof shift, "%d", STRIPE_SHIFT);
        setenv("TMT_KEEP_TMP", "1", 1); /* the parent's temporary directory outlives this exit() */
        setenv("TMTRACE_FILE", trace, 1);
        unsetenv("TMTRACE_EVENTS");
        unsetenv("TMTRACE_STAMP");
        if (level) {
            setenv("TMTRACE_EVENTS", level, 1);
            setenv("TMTRACE_STAMP", "each", 1);
        }
        setenv("TMTRACE_STRIPES", stripes, 1);
        setenv("TMTRACE_STRIPE_SHIFT", shift, 1);
        setenv("TMTRACE_HTM", "off", 1);
        find_pair();
        tmt_tx *tx = tmt_thread_enter();
        assert_non_null(tx);
        TMT_ATOMIC(tx, "make-node") {
            explain_node = tmt_malloc(tx, 8 * sizeof(long));
        } TMT_END;
        memset(explain_node, 0, 8 * sizeof(long));
        run_until_aborts(HOT, "hot");
        run_until_aborts(PAIR, "pair");
        run_until_aborts(NODE, "node");
        if (preempt)
            run_preempted_holder();
        tmt_thread_exit();
        FILE *f = fopen(tu_path("held"), "wb"); /* for the parent's checks */
        int ok = f && fwrite(&held, sizeof held, 1, f) == 1;
        ok = f && fclose(f) == 0 && ok;
        exit(tmt_shutdown() == 0 && ok ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    FILE *f = fopen(tu_path("held"), "rb");
    assert_non_null(f);
    assert_int_equal(fread(&held, sizeof held, 1, f), 1);
    fclose(f);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s '%s' -o '%s' >/dev/null 2>&1 && %s --json --csv '%s' '%s'",
             tu_build("tools/tmsync"), trace, synced, tu_build("tools/tmcheck"), csv, synced);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
}

/* What both levels must say: the hot word's conflicts are true ones, the
 * pair's false ones, every STM abort has its culprit and its class. */
static void hot_word_true_and_pair_false(void)
{
    assert_true(tg_json_num(out, NULL, "conflict_free_aborts") == 0);
    assert_true(tg_json_num(out, strstr(out, "\"attribution\":"), "by_identity") > 0);
    /* the hot word: by its symbol; conflicts on it are true ones */
    const char *hot = site_classes("\"name\":\"hot (test_explain.c:");
    assert_true(class_count(hot, "\"false-conflict\"") == 0);
    assert_true(class_count(hot, "\"conflict-free\"") == 0);
    /* the pair: different words, one stripe: never a true conflict, and
     * every culprit whose writes are known wrote only the other word */
    const char *pair = site_classes("\"name\":\"pair (test_explain.c:");
    assert_true(class_count(pair, "\"true-conflict\"") == 0);
    assert_true(class_count(pair, "\"conflict-free\"") == 0);
    const char *pa = strstr(out, "\"name\":\"explain_pair");
    assert_non_null(pa);
    assert_true(tg_json_num(out, pa, "true") == 0);
    assert_true(tg_json_num(out, pa, "false") > 0);
    const char *ha = strstr(out, "\"name\":\"explain_hot_word\"");
    assert_true(tg_json_num(out, ha, "false") == 0);
    assert_true(tg_json_num(out, ha, "true") > 0);
}

static void aborts_are_named_by_symbol_and_allocation_site_and_classified_by_identity(void **st)
{
    (void)st;
    const char *csv = tu_path("explain.csv");
    record_and_check("all", 1, csv);
    victim_aborts_blame_the_preempted_holder(csv);
    /* the tracer's cost per event was measured at init and kept by tmsync */
    assert_non_null(strstr(out, "\"event_cost_measured\":true"));
    hot_word_true_and_pair_false();
    /* the node's field: named by where its block was allocated */
    assert_non_null(strstr(out, "\"name\":\"block+0x18 from "));
}

/* The default level records no access, but each commit's write set: every
 * STM abort gets the class and word it gets at all, none is left with its
 * word unknown, and every word's writer is the culprit. */
static void at_the_default_level_every_abort_is_classified_as_at_all(void **st)
{
    (void)st;
    record_and_check(NULL, 0, tu_path("default.csv"));
    struct tf_reader *r = tf_open(tu_path("explain.bin"), 0);
    assert_non_null(r);
    assert_int_equal(tf_reader_header(r)->events_level, 1); /* tx: no read or write recorded */
    tf_close(r);
    assert_true(tg_json_num(out, NULL, "stm_aborts") > 0);
    hot_word_true_and_pair_false();
    const char *all = strstr(out, "\"classes\":{");
    assert_non_null(all);
    assert_true(class_count(all, "\"word-unknown\"") == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(aborts_are_named_by_symbol_and_allocation_site_and_classified_by_identity),
        cmocka_unit_test(at_the_default_level_every_abort_is_classified_as_at_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
