/*
 * test_txmem.c - transactional malloc/free: aborted attempts release their
 * allocations, frees take effect only at commit (at once when no other
 * thread is registered), outside transactions they are malloc/free, and
 * memory freed by a commit is never released while a concurrent
 * transaction may still read it (ASan turns that into a failure).
 */
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "tmtrace.h"
#include "test_util.h"
#include "tx.h"
#include "tx_life.h"

static int setup(void **state)
{
    (void)state;
    setenv("TMTRACE_FILE", tu_path("trace.bin"), 1); /* not in the working directory */
    /* Untraced: the tracer's writer thread allocates on its own (mmapped
     * blocks among them), which heap_in_use, counting the whole process's
     * mmapped blocks, would see as this thread's. */
    setenv("TMTRACE_EVENTS", "off", 1);
    assert_int_equal(tmt_init(), 0);
    config.htm = CONFIG_HTM_OFF;
    return 0;
}

/* Bytes the allocator has handed out (mmapped blocks included). */
static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static void test_allocations_of_aborted_attempts_are_released(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    enum { BLOCK = 256 * 1024, ATTEMPTS = 20 };
    static void *volatile kept;
    volatile int runs = 0;
    volatile uint32_t logged = 0;
    size_t before = heap_in_use();
    TMT_ATOMIC(tx, "alloc-and-retry") {
        char *p = tmt_malloc(tx, BLOCK);
        assert_non_null(p);
        memset(p, 0x5a, BLOCK);
        logged = tx->mem.nallocs;
        kept = p;
        if (++runs < ATTEMPTS)
            tmt_tx_retry(tx);
    } TMT_END;
    size_t after = heap_in_use();
    assert_int_equal(runs, ATTEMPTS);
    assert_int_equal(logged, 1);
    assert_int_equal(tx->mem.nallocs, 0);
    /* One block survives, not twenty (allocator metadata is small). */
    assert_true(after - before < 2 * BLOCK);
    assert_int_equal(((char *)kept)[BLOCK - 1], 0x5a);
    free(kept);
    tmt_thread_exit();
}

static void test_free_takes_effect_only_when_the_transaction_commits(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    enum { N = 64 };
    unsigned char *p = malloc(N); /* allocated outside any transaction */
    assert_non_null(p);
    memset(p, 0xc3, N);
    volatile int runs = 0, intact = 1;
    TMT_ATOMIC(tx, "free-then-retry") {
        /* On the rerun the aborted free must not have happened: the block
         * still holds its bytes (ASan would also report a use after free). */
        for (int i = 0; i < N; i++)
            intact &= p[i] == 0xc3;
        tmt_free(tx, p);
        if (++runs == 1)
            tmt_tx_retry(tx);
    } TMT_END;
    assert_int_equal(runs, 2);
    assert_true(intact);
    /* Committed by the only registered thread: freed at once (a block kept
     * would be an ASan leak, one freed twice an ASan error). */
    assert_int_equal(tx->mem.nfrees, 0);
    assert_int_equal(tx->mem.nlimbo, 0);
    tmt_thread_exit();
}

/* A second thread that has run one transaction (so it counts among the
 * threads in transactions) and runs nothing more until told to leave. */
struct idle_thread {
    pthread_barrier_t entered, leave;
};

static void *idle_thread_main(void *arg)
{
    struct idle_thread *it = arg;
    tmt_tx *tx = tmt_thread_enter();
    TMT_ATOMIC(tx, "idle-once") {
    } TMT_END;
    pthread_barrier_wait(&it->entered);
    pthread_barrier_wait(&it->leave);
    tmt_thread_exit();
    return NULL;
}

static void test_with_another_thread_registered_a_committed_free_waits_for_reclamation(void **s)
{
    (void)s;
    struct idle_thread it;
    pthread_barrier_init(&it.entered, NULL, 2);
    pthread_barrier_init(&it.leave, NULL, 2);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, idle_thread_main, &it), 0);
    pthread_barrier_wait(&it.entered);
    tmt_tx *tx = tmt_thread_enter();
    void *p = malloc(64);
    assert_non_null(p);
    TMT_ATOMIC(tx, "free-beside-another-thread") {
        tmt_free(tx, p);
    } TMT_END;
    /* The other thread might be reading it: handed to reclamation, released
     * at the latest when this thread leaves. */
    assert_int_equal(tx->mem.nfrees, 0);
    assert_int_equal(tx->mem.nlimbo, 1);
    pthread_barrier_wait(&it.leave);
    assert_int_equal(pthread_join(th, NULL), 0);
    tmt_thread_exit();
    assert_int_equal(tx->mem.nlimbo, 0);
    pthread_barrier_destroy(&it.entered);
    pthread_barrier_destroy(&it.leave);
}

static void test_cancel_releases_allocations_and_forgets_frees(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    long *outside = malloc(sizeof *outside);
    assert_non_null(outside);
    *outside = 77;
    size_t before = heap_in_use();
    TMT_ATOMIC(tx, "alloc-free-cancel") {
        void *big = tmt_malloc(tx, 512 * 1024);
        assert_non_null(big);
        tmt_free(tx, outside);
        tmt_tx_cancel(tx);
    } TMT_END;
    assert_true(heap_in_use() - before < 64 * 1024);
    assert_int_equal(*outside, 77); /* not freed */
    assert_int_equal(tx->mem.nallocs + tx->mem.nfrees + tx->mem.nlimbo, 0);
    free(outside);
    tmt_thread_exit();
}

static void test_outside_a_transaction_they_are_malloc_and_free(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    long *p = tmt_malloc(tx, 16 * sizeof *p);
    assert_non_null(p);
    p[15] = 3;
    assert_int_equal(tx->mem.nallocs, 0);
    tmt_free(tx, p);
    assert_int_equal(tx->mem.nfrees + tx->mem.nlimbo, 0);
    tmt_free(tx, NULL);
    tmt_thread_exit();
}

/* A thread that holds an attempt open at each of two barriers. */
struct holder {
    pthread_barrier_t in1, go1, in2, go2;
    long x;
};

static void *holder_main(void *arg)
{
    struct holder *h = arg;
    tmt_tx *tx = tmt_thread_enter();
    TMT_ATOMIC(tx, "hold-first") {
        (void)tmt_read_long(tx, &h->x);
        pthread_barrier_wait(&h->in1);
        pthread_barrier_wait(&h->go1);
    } TMT_END;
    TMT_ATOMIC(tx, "hold-second") {
        (void)tmt_read_long(tx, &h->x);
        pthread_barrier_wait(&h->in2);
        pthread_barrier_wait(&h->go2);
    } TMT_END;
    tmt_thread_exit();
    return NULL;
}

/* Commits `n` transactions that each write a word and free a block. */
static void commit_frees(tmt_tx *tx, long *word, int n)
{
    for (int i = 0; i < n; i++) {
        void *p = malloc(32);
        assert_non_null(p);
        TMT_ATOMIC(tx, "write-and-free") {
            tmt_write_long(tx, word, i);
            tmt_free(tx, p);
        } TMT_END;
    }
}

static void test_a_free_is_released_without_fencing_others_once_every_other_attempt_began_after_it(void **s)
{
    (void)s;
    static struct holder h;
    pthread_barrier_init(&h.in1, NULL, 2);
    pthread_barrier_init(&h.go1, NULL, 2);
    pthread_barrier_init(&h.in2, NULL, 2);
    pthread_barrier_init(&h.go2, NULL, 2);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, holder_main, &h), 0);
    tmt_tx *tx = tmt_thread_enter();
    long word = 0;
    pthread_barrier_wait(&h.in1);
    /* The other attempt began before every one of these commits: it may
     * hold any of the blocks, so none is released. */
    commit_frees(tx, &word, 64);
    uint32_t held = tx->mem.nlimbo;
    pthread_barrier_wait(&h.go1);
    pthread_barrier_wait(&h.in2);
    /* Its next attempt began after them: the next pass (at most 32 frees
     * on, far below the 1024 of the pass that fences every CPU) releases
     * those 64 and keeps the ones committed since. */
    commit_frees(tx, &word, 32);
    uint32_t left = tx->mem.nlimbo;
    pthread_barrier_wait(&h.go2);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(held, 64);
    assert_true(left <= 32);
    tmt_thread_exit();
    assert_int_equal(tx->mem.nlimbo, 0);
    pthread_barrier_destroy(&h.in1);
    pthread_barrier_destroy(&h.go1);
    pthread_barrier_destroy(&h.in2);
    pthread_barrier_destroy(&h.go2);
}

/* ---- concurrent unlink + free against readers ------------------------------ */

struct node {
    long value;
    struct node *next;
};

struct list {
    struct node *head;
    int len;
    int ops;
    int next_id;
    long bad_sums;
};

static void *list_thread(void *arg)
{
    struct list *l = arg;
    int me = __atomic_fetch_add(&l->next_id, 1, __ATOMIC_RELAXED);
    tmt_tx *tx = tmt_thread_enter();
    for (int i = 0; i < l->ops; i++) {
        if (me == 0) {
            /* Replace the first node with a fresh one at the end. */
            TMT_ATOMIC(tx, "list-rotate") {
                struct node *first = tmt_read_ptr(tx, (void **)&l->head);
                struct node *n = tmt_malloc(tx, sizeof *n);
                tmt_write_long(tx, &n->value, 1);
                tmt_write_ptr(tx, (void **)&n->next, NULL);
                struct node *rest = tmt_read_ptr(tx, (void **)&first->next);
                tmt_write_ptr(tx, (void **)&l->head, rest);
                struct node *last = rest;
                for (struct node *nx; (nx = tmt_read_ptr(tx, (void **)&last->next)) != NULL;)
                    last = nx;
                tmt_write_ptr(tx, (void **)&last->next, n);
                tmt_free(tx, first);
            } TMT_END;
        } else {
            volatile long sum = 0;
            TMT_ATOMIC_FLAGS(tx, "list-sum", TMT_TX_READ_ONLY) {
                sum = 0;
                for (struct node *n = tmt_read_ptr(tx, (void **)&l->head); n;
                     n = tmt_read_ptr(tx, (void **)&n->next))
                    sum += tmt_read_long(tx, &n->value);
            } TMT_END;
            if (sum != l->len)
                __atomic_add_fetch(&l->bad_sums, 1, __ATOMIC_RELAXED);
        }
    }
    tmt_thread_exit();
    return NULL;
}

static void test_freed_nodes_stay_readable_until_concurrent_readers_finish(void **s)
{
    (void)s;
    static struct list l;
    memset(&l, 0, sizeof l);
    l.len = 8;
    l.ops = 10000;
    for (int i = 0; i < l.len; i++) {
        struct node *n = malloc(sizeof *n);
        assert_non_null(n);
        n->value = 1;
        n->next = l.head;
        l.head = n;
    }
    assert_int_equal(tu_run_threads(3, list_thread, &l), 0);
    assert_int_equal(l.bad_sums, 0);
    int len = 0;
    for (struct node *n = l.head, *nx; n; n = nx) {
        nx = n->next;
        len++;
        free(n);
    }
    assert_int_equal(len, 8);
}

int main(void)
{
    tx_lone_in_place = 0; /* one thread's transactions too run the paths under test */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allocations_of_aborted_attempts_are_released),
        cmocka_unit_test(test_free_takes_effect_only_when_the_transaction_commits),
        cmocka_unit_test(test_with_another_thread_registered_a_committed_free_waits_for_reclamation),
        cmocka_unit_test(test_a_free_is_released_without_fencing_others_once_every_other_attempt_began_after_it),
        cmocka_unit_test(test_cancel_releases_allocations_and_forgets_frees),
        cmocka_unit_test(test_outside_a_transaction_they_are_malloc_and_free),
        cmocka_unit_test(test_freed_nodes_stay_readable_until_concurrent_readers_finish),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
