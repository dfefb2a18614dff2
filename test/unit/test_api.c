/*
 * test_api.c - the public API's rules: initialisation and its errors, user
 * retry and cancel, flat nesting, thread descriptor reuse, statistics, a
 * thread alone running in place, the header's inline reads and its
 * allocation flag.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "tmtrace.h"
#include "test_util.h"
#include "tx.h"
#include "tx_life.h"
#include "tx_registry.h"

/* Runs first: nothing has initialised the runtime yet. */
static void test_bad_tmtrace_value_makes_init_fail_naming_the_variable(void **s)
{
    (void)s;
    setenv("TMTRACE_FILE", tu_path("trace.bin"), 1); /* not in the working directory */
    setenv("TMTRACE_HTM", "sometimes", 1);
    assert_int_equal(tmt_init(), -1);
    assert_non_null(strstr(tmt_error(), "TMTRACE_HTM"));
    assert_non_null(strstr(tmt_error(), "sometimes"));
    assert_null(tmt_thread_enter());
    unsetenv("TMTRACE_HTM");

    setenv("TMTRACE_STRIPE", "12", 1); /* misspelt */
    assert_int_equal(tmt_init(), -1);
    assert_non_null(strstr(tmt_error(), "TMTRACE_STRIPE"));
    unsetenv("TMTRACE_STRIPE");

    /* Fixed environment: init succeeds and stays done. */
    setenv("TMTRACE_HTM", "off", 1);
    assert_int_equal(tmt_init(), 0);
    assert_int_equal(tmt_init(), 0);
    assert_int_equal(config.htm, CONFIG_HTM_OFF);
    unsetenv("TMTRACE_HTM");
}

static void test_thread_enter_twice_returns_the_same_descriptor(void **s)
{
    (void)s;
    tmt_tx *a = tmt_thread_enter();
    assert_non_null(a);
    assert_ptr_equal(tmt_thread_enter(), a);
    assert_ptr_equal(tmt_self(), a);
    assert_int_equal(tmt_tx_depth(a), 0);
    tmt_thread_exit();
}

static void test_user_retry_discards_the_attempt_and_runs_again(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    static long cell;
    static long trail;
    cell = 0;
    trail = 0;
    tmt_stats before, after;
    tmt_stats_get(&before);
    volatile int runs = 0;
    TMT_ATOMIC(tx, "retry-three-times") {
        runs++;
        tmt_write_long(tx, &trail, tmt_read_long(tx, &trail) + 100); /* discarded on retry */
        if (runs < 3)
            tmt_tx_retry(tx);
        tmt_write_long(tx, &cell, runs);
    } TMT_END;
    tmt_stats_get(&after);
    assert_int_equal(runs, 3);
    assert_int_equal(cell, 3);
    assert_int_equal(trail, 100);
    assert_int_equal(after.aborts_by_reason[TMT_ABORT_USER_RETRY] - before.aborts_by_reason[TMT_ABORT_USER_RETRY], 2);
    assert_int_equal(after.commits - before.commits, 1);
    tmt_thread_exit();
}

static void test_cancel_discards_the_effects_and_skips_the_block(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    static long cell = 5;
    volatile int after_cancel = 0, runs = 0;
    tmt_stats before, after;
    tmt_stats_get(&before);
    TMT_ATOMIC(tx, "cancel") {
        runs++;
        tmt_write_long(tx, &cell, 99);
        tmt_tx_cancel(tx);
        after_cancel = 1;
    } TMT_END;
    tmt_stats_get(&after);
    assert_int_equal(cell, 5);
    assert_int_equal(runs, 1);
    assert_int_equal(after_cancel, 0);
    assert_int_equal(tmt_tx_depth(tx), 0);
    assert_int_equal(after.aborts_by_reason[TMT_ABORT_USER_CANCEL] - before.aborts_by_reason[TMT_ABORT_USER_CANCEL], 1);
    assert_int_equal(after.commits, before.commits);
    /* The descriptor works normally afterwards. */
    TMT_ATOMIC(tx, "after-cancel") {
        tmt_write_long(tx, &cell, 6);
    } TMT_END;
    assert_int_equal(cell, 6);
    tmt_thread_exit();
}

static void inner_increment(tmt_tx *tx, long *p, volatile int *inner_depth)
{
    TMT_ATOMIC(tx, "inner") {
        *inner_depth = tmt_tx_depth(tx);
        tmt_write_long(tx, p, tmt_read_long(tx, p) + 1);
    } TMT_END;
}

static void test_nested_blocks_are_flattened_into_the_outer_one(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    static long a, b;
    a = b = 0;
    volatile int inner_depth = 0, depth_after_inner = 0;
    tmt_stats before, after;
    tmt_stats_get(&before);
    TMT_ATOMIC(tx, "outer") {
        inner_increment(tx, &a, &inner_depth);
        depth_after_inner = tmt_tx_depth(tx);
        tmt_write_long(tx, &b, tmt_read_long(tx, &a) * 10);
    } TMT_END;
    tmt_stats_get(&after);
    assert_int_equal(inner_depth, 2);
    assert_int_equal(depth_after_inner, 1);
    assert_int_equal(a, 1);
    assert_int_equal(b, 10);
    assert_int_equal(after.commits - before.commits, 1); /* one transaction, not two */
    tmt_thread_exit();
}

static void test_retry_in_a_nested_block_restarts_the_outer_block(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    static long cell;
    cell = 0;
    volatile int outer_runs = 0, inner_runs = 0;
    TMT_ATOMIC(tx, "outer-r") {
        outer_runs++;
        tmt_write_long(tx, &cell, tmt_read_long(tx, &cell) + 1);
        TMT_ATOMIC(tx, "inner-r") {
            inner_runs++;
            if (inner_runs == 1)
                tmt_tx_retry(tx);
        } TMT_END;
    } TMT_END;
    assert_int_equal(outer_runs, 2);
    assert_int_equal(inner_runs, 2);
    assert_int_equal(cell, 1);
    tmt_thread_exit();
}

struct reuse {
    long counter;
    tmt_tx *seen[64];
    int nseen;
    pthread_mutex_t lock;
};

static void *reuse_thread(void *arg)
{
    struct reuse *r = arg;
    tmt_tx *tx = tmt_thread_enter();
    assert_non_null(tx);
    pthread_mutex_lock(&r->lock);
    int known = 0;
    for (int i = 0; i < r->nseen; i++)
        known |= r->seen[i] == tx;
    if (!known && r->nseen < 64)
        r->seen[r->nseen++] = tx;
    pthread_mutex_unlock(&r->lock);
    for (int i = 0; i < 20; i++) {
        TMT_ATOMIC(tx, "reuse") {
            tmt_write_long(tx, &r->counter, tmt_read_long(tx, &r->counter) + 1);
        } TMT_END;
    }
    tmt_thread_exit();
    return NULL;
}

static void test_thread_descriptors_are_reused_across_many_enters_and_exits(void **s)
{
    (void)s;
    static struct reuse r;
    memset(&r, 0, sizeof r);
    pthread_mutex_init(&r.lock, NULL);
    tmt_stats before, after;
    tmt_stats_get(&before);
    enum { ROUNDS = 40, THREADS = 4 };
    for (int round = 0; round < ROUNDS; round++) {
        assert_int_equal(tu_run_threads(THREADS, reuse_thread, &r), 0);
    }
    tmt_stats_get(&after);
    assert_int_equal(r.counter, ROUNDS * THREADS * 20);
    /* Statistics of exited threads are kept. */
    assert_int_equal(after.commits - before.commits, (uint64_t)ROUNDS * THREADS * 20);
    /* At most THREADS descriptors live at once, and exited ones are reused
     * (the main thread's from earlier tests counts too). */
    assert_true(r.nseen <= THREADS + 1);
    pthread_mutex_destroy(&r.lock);
}

struct leaver {
    int entered, left;
    long cell;
};

static void *leaver(void *arg)
{
    struct leaver *l = arg;
    tmt_tx *tx = tmt_thread_enter();
    assert_non_null(tx);
    __atomic_store_n(&l->entered, 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&l->entered, __ATOMIC_ACQUIRE) != 2)
        sched_yield();
    TMT_ATOMIC(tx, "leaver") {
        tmt_write_long(tx, &l->cell, tmt_read_long(tx, &l->cell) + 1);
    } TMT_END;
    tmt_thread_exit();
    __atomic_store_n(&l->left, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* A leaving thread does not take the registry's lock: two threads that
 * leave together must not make one of them sleep on it. The lock is held
 * here (as a sum of the statistics would) while the thread leaves. */
static void test_a_thread_leaves_while_the_registry_lock_is_held_and_its_counts_stay(void **s)
{
    (void)s;
    static struct leaver l;
    memset(&l, 0, sizeof l);
    tmt_stats before, after;
    tmt_stats_get(&before);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, leaver, &l), 0);
    while (!__atomic_load_n(&l.entered, __ATOMIC_ACQUIRE))
        sched_yield();
    txreg_lock();
    __atomic_store_n(&l.entered, 2, __ATOMIC_RELEASE);
    time_t give_up = time(NULL) + 5;
    while (!__atomic_load_n(&l.left, __ATOMIC_ACQUIRE) && time(NULL) < give_up)
        usleep(100);
    int left_while_held = __atomic_load_n(&l.left, __ATOMIC_ACQUIRE);
    txreg_unlock();
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_true(left_while_held);
    tmt_stats_get(&after);
    assert_int_equal(l.cell, 1);
    assert_int_equal(after.commits - before.commits, 1);
}

static void test_site_statistics_name_the_site_and_count_its_outcomes(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    static long cell;
    tmt_stats before, live, exited;
    tmt_stats_get(&before);
    for (int i = 0; i < 7; i++) {
        volatile int runs = 0;
        TMT_ATOMIC(tx, "counted-site") {
            if (runs++ == 0)
                tmt_tx_retry(tx);
            tmt_write_long(tx, &cell, i);
        } TMT_END;
    }
    tmt_site_stats st[128];
    size_t n = tmt_stats_sites(st, 128);
    assert_true(n >= 1 && n <= 128);
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(st[i].id, i + 1);
        if (strcmp(st[i].label, "counted-site") == 0) {
            found++;
            assert_non_null(strstr(st[i].file, "test_api.c"));
            assert_true(st[i].line > 0);
            assert_int_equal(st[i].commits, 7);
            assert_int_equal(st[i].aborts, 7);
            assert_int_equal(st[i].aborts_by_reason[TMT_ABORT_USER_RETRY], 7);
        }
    }
    assert_int_equal(found, 1);
    /* The totals are the sites' sums, for a live thread and an exited one. */
    tmt_stats_get(&live);
    tmt_thread_exit();
    tmt_stats_get(&exited);
    for (const tmt_stats *t = &live; t; t = t == &live ? &exited : NULL) {
        assert_int_equal(t->commits - before.commits, 7);
        assert_int_equal(t->aborts - before.aborts, 7);
        assert_int_equal(t->aborts_by_reason[TMT_ABORT_USER_RETRY] - before.aborts_by_reason[TMT_ABORT_USER_RETRY], 7);
    }
}

static void test_abort_reasons_have_distinct_names(void **s)
{
    (void)s;
    assert_string_equal(tmt_abort_reason_name(TMT_ABORT_READ_LOCKED), "read-locked");
    assert_string_equal(tmt_abort_reason_name(TMT_ABORT_COMMIT_VALIDATE), "commit-validate");
    assert_string_equal(tmt_abort_reason_name(TMT_ABORT_REASONS + 3), "unknown");
    for (unsigned a = 0; a < TMT_ABORT_REASONS; a++)
        for (unsigned b = a + 1; b < TMT_ABORT_REASONS; b++)
            assert_string_not_equal(tmt_abort_reason_name(a), tmt_abort_reason_name(b));
}

static void test_typed_accessors_round_trip_every_type(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    static struct {
        uintptr_t w;
        long l;
        void *p;
        int64_t i64;
        int32_t i32;
        uint8_t u8;
        float f;
        double d;
    } v;
    volatile int ok = 0;
    TMT_ATOMIC(tx, "types") {
        tmt_write_word(tx, &v.w, (uintptr_t)-3);
        tmt_write_long(tx, &v.l, -123456789L);
        tmt_write_ptr(tx, &v.p, &v);
        tmt_write_i64(tx, &v.i64, INT64_MIN);
        tmt_write_i32(tx, &v.i32, -7);
        tmt_write_u8(tx, &v.u8, 250);
        tmt_write_float(tx, &v.f, 0.75f);
        tmt_write_double(tx, &v.d, -1e300);
        ok = tmt_read_word(tx, &v.w) == (uintptr_t)-3 && tmt_read_long(tx, &v.l) == -123456789L &&
             tmt_read_ptr(tx, &v.p) == (void *)&v && tmt_read_i64(tx, &v.i64) == INT64_MIN &&
             tmt_read_i32(tx, &v.i32) == -7 && tmt_read_u8(tx, &v.u8) == 250 &&
             tmt_read_float(tx, &v.f) == 0.75f && tmt_read_double(tx, &v.d) == -1e300;
    } TMT_END;
    assert_true(ok);
    assert_true(v.w == (uintptr_t)-3 && v.l == -123456789L && v.p == (void *)&v);
    assert_true(v.i64 == INT64_MIN && v.i32 == -7 && v.u8 == 250 && v.f == 0.75f && v.d == -1e300);
    tmt_thread_exit();
}

/* ---- a thread alone runs in place -------------------------------------------- */

/* The tests of the in-place paths start them at a thread's first
 * transaction alone; how a thread settles before its first is tested on
 * its own (lone_settling). */
static uint32_t lone_after_default;

static int lone_at_once(void **s)
{
    (void)s;
    lone_after_default = txreg_lone_after;
    txreg_lone_after = 0;
    return 0;
}

static int lone_after_again(void **s)
{
    (void)s;
    txreg_lone_after = lone_after_default;
    return 0;
}

#define LONE_AT_ONCE(test) cmocka_unit_test_setup_teardown(test, lone_at_once, lone_after_again)

/* Writes, through the accessors, a frame of its own that is dead once it
 * returns: first plain ones (1), then transactional (2). A rollback that
 * put the 1s back would overwrite the frames of the cancel that follows,
 * which lie where this one was. */
__attribute__((noinline)) static long lone_scribble(tmt_tx *tx)
{
    volatile long frame[512];
    for (int i = 0; i < 512; i++)
        frame[i] = 1;
    for (int i = 0; i < 512; i++)
        tmt_write_long(tx, &frame[i], 2);
    return frame[7];
}

__attribute__((noinline)) static void lone_cancel(tmt_tx *tx) { tmt_tx_cancel(tx); }

static void test_a_lone_threads_cancel_and_retry_restore_memory_in_place(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    static long cells[3];
    cells[0] = 10;
    cells[1] = 20;
    cells[2] = 30;
    volatile int in_place = 0, runs = 0;
    TMT_ATOMIC(tx, "lone-cancel") {
        in_place = tx->mode == TX_MODE_SERIAL;
        tmt_write_long(tx, &cells[0], 11);
        tmt_write_long(tx, &cells[0], 12); /* twice: the older value is what comes back */
        tmt_write_long(tx, &cells[1], tmt_read_long(tx, &cells[0]) + 1);
        (void)lone_scribble(tx);
        lone_cancel(tx);
    } TMT_END;
    assert_int_equal(in_place, 1);
    assert_int_equal(cells[0], 10);
    assert_int_equal(cells[1], 20);
    TMT_ATOMIC(tx, "lone-retry") {
        runs++;
        assert_int_equal(tmt_read_long(tx, &cells[2]), 30); /* the first attempt's write undone */
        tmt_write_long(tx, &cells[2], 31);
        (void)lone_scribble(tx);
        if (runs < 2)
            tmt_tx_retry(tx);
    } TMT_END;
    assert_int_equal(runs, 2);
    assert_int_equal(cells[2], 31);
    tmt_stats st;
    tmt_stats_get(&st);
    assert_true(st.serial >= 3);
    tmt_thread_exit();
}

static long lone_cell;
static int lone_b_started, lone_b_inside;
static long lone_b_saw;

static void *lone_second(void *arg)
{
    (void)arg;
    tmt_tx *tx = tmt_thread_enter();
    __atomic_store_n(&lone_b_started, 1, __ATOMIC_SEQ_CST);
    TMT_ATOMIC(tx, "lone-second") {
        __atomic_store_n(&lone_b_inside, 1, __ATOMIC_SEQ_CST);
        lone_b_saw = tmt_read_long(tx, &lone_cell);
    } TMT_END;
    tmt_thread_exit();
    return NULL;
}

/* The lone thread's attempt in flight starts a second thread, whose
 * transaction must wait for that attempt's end and then see its outcome:
 * the committed value, or after a cancel the value from before. The
 * thread's first transaction takes the serial lock; a later one (`warm`)
 * only marks itself (stm_lone_mark), and the thread that joins must still
 * wait. */
static void arriving_beside_lone(int cancel, int warm)
{
    tmt_tx *tx = tmt_thread_enter();
    lone_cell = 0;
    lone_b_started = lone_b_inside = 0;
    lone_b_saw = -1;
    pthread_t b;
    volatile int in_place = 0, inside_during = -1;
    if (warm) {
        TMT_ATOMIC(tx, "lone-warm") {
            tmt_write_long(tx, &lone_cell, 0);
        } TMT_END;
    }
    TMT_ATOMIC(tx, "lone-first") {
        in_place = tx->mode == TX_MODE_SERIAL;
        tmt_write_long(tx, &lone_cell, 1);
        assert_int_equal(pthread_create(&b, NULL, lone_second, NULL), 0);
        while (!__atomic_load_n(&lone_b_started, __ATOMIC_SEQ_CST))
            sched_yield();
        nanosleep(&(struct timespec){ 0, 50 * 1000 * 1000 }, NULL); /* time for it to reach its begin */
        inside_during = __atomic_load_n(&lone_b_inside, __ATOMIC_SEQ_CST);
        tmt_write_long(tx, &lone_cell, 2);
        if (cancel)
            tmt_tx_cancel(tx);
    } TMT_END;
    assert_int_equal(pthread_join(b, NULL), 0);
    assert_int_equal(in_place, 1);
    assert_int_equal(inside_during, 0);
    assert_int_equal(lone_b_saw, cancel ? 0 : 2);
    assert_int_equal(lone_cell, cancel ? 0 : 2);
    tmt_thread_exit();
}

static void test_a_thread_arriving_waits_for_the_lone_in_place_attempt(void **s)
{
    (void)s;
    for (int way = 0; way < 4; way++)
        arriving_beside_lone(way & 1, way >> 1);
}

/* ---- a thread alone settles before it runs in place (lone_settling) --------- */

static int settle_b_done;
static long settle_cells[2];

static void *settle_second(void *arg)
{
    (void)arg;
    tmt_tx *tx = tmt_thread_enter();
    TMT_ATOMIC(tx, "settle-second") {
        tmt_write_long(tx, &settle_cells[1], tmt_read_long(tx, &settle_cells[1]) + 1);
    } TMT_END;
    __atomic_store_n(&settle_b_done, 1, __ATOMIC_SEQ_CST);
    tmt_thread_exit();
    return NULL;
}

/* Runs `n` transactions; bit i of the result: the i-th ran in place. */
static uint32_t settle_run(tmt_tx *tx, int n)
{
    volatile uint32_t in_place = 0;
    for (int i = 0; i < n; i++) {
        volatile int here = 0;
        TMT_ATOMIC(tx, "settle") {
            here = tx->mode == TX_MODE_SERIAL;
            tmt_write_long(tx, &settle_cells[0], i);
        } TMT_END;
        in_place |= (uint32_t)here << i;
    }
    return in_place;
}

/* A thread alone runs its transactions in the STM until it has started
 * txreg_lone_after of them alone, then in place; once another thread has
 * joined and left, it settles again. */
static void test_a_lone_thread_runs_in_place_from_its_settling_start_and_settles_again_after_a_change(void **s)
{
    (void)s;
    uint32_t after = txreg_lone_after;
    assert_true(after >= 1 && after <= 24);
    tmt_tx *tx = tmt_thread_enter();
    uint32_t settled = ~(((uint32_t)1 << after) - 1) & (((uint32_t)1 << (after + 4)) - 1);
    assert_int_equal(settle_run(tx, (int)after + 4), settled);
    pthread_t b;
    settle_b_done = 0;
    assert_int_equal(pthread_create(&b, NULL, settle_second, NULL), 0);
    assert_int_equal(pthread_join(b, NULL), 0);
    assert_int_equal(settle_run(tx, (int)after + 4), settled);
    tmt_thread_exit();
}

/* A thread that joins while a thread alone runs its first transactions
 * (a program's main thread that has just released its workers) starts and
 * commits beside them: it does not wait for the attempt in flight, as it
 * waits for an in-place one. */
static void test_a_thread_arriving_beside_a_lone_thread_that_has_not_settled_starts_at_once(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    settle_b_done = 0;
    settle_cells[1] = 0;
    pthread_t b;
    volatile int created = 0, in_place = -1, done_inside = 0;
    TMT_ATOMIC(tx, "settle-first") {
        in_place = tx->mode == TX_MODE_SERIAL;
        if (!created) {
            assert_int_equal(pthread_create(&b, NULL, settle_second, NULL), 0);
            created = 1;
        }
        /* Up to 2 s for the other thread's commit: it never comes while this
         * attempt holds it back. */
        for (int i = 0; i < 2000 && !done_inside; i++) {
            nanosleep(&(struct timespec){ 0, 1000 * 1000 }, NULL);
            done_inside = __atomic_load_n(&settle_b_done, __ATOMIC_SEQ_CST);
        }
    } TMT_END;
    assert_int_equal(pthread_join(b, NULL), 0);
    assert_int_equal(in_place, 0);
    assert_int_equal(done_inside, 1);
    assert_int_equal(settle_cells[1], 1);
    tmt_thread_exit();
}

/* ---- the public header's inline reads -------------------------------------- */

static long inl_cells[4];
enum { INL_MANY = 4096 };
static long inl_many[INL_MANY];

/* An untraced lone thread reads in place inline (the head's flag is set
 * only inside its attempt); those reads see the attempt's own writes, and
 * after a cancel (its undo log grown, dead frames in it) or a retry the
 * values from before. */
static void test_inline_reads_in_place_see_the_attempts_writes_and_their_undo(void **s)
{
    (void)s;
    tmt_tx *tx = tu_enter_at(CONFIG_EVENTS_OFF);
    const struct tmt_tx_head *head = (const struct tmt_tx_head *)(const void *)tx;
    inl_cells[0] = 5;
    volatile int flag_inside = -1, runs = 0;
    volatile long seen = -1, seen_again = -1;
    assert_int_equal(head->in_place, 0);
    TMT_ATOMIC(tx, "inline-cancel") {
        flag_inside = (int)head->in_place;
        tmt_write_long(tx, &inl_cells[0], 6);
        seen = tmt_read_long(tx, &inl_cells[0]);
        for (int i = 0; i < INL_MANY; i++) /* more than the undo log held: it grows */
            tmt_write_long(tx, &inl_many[i], i + 1);
        (void)lone_scribble(tx);
        lone_cancel(tx);
    } TMT_END;
    for (int i = 0; i < INL_MANY; i++)
        assert_int_equal(inl_many[i], 0);
    assert_int_equal(flag_inside, 1);
    assert_int_equal(seen, 6);
    assert_int_equal(head->in_place, 0);
    assert_int_equal(inl_cells[0], 5);
    TMT_ATOMIC(tx, "inline-retry") {
        runs++;
        seen_again = tmt_read_long(tx, &inl_cells[0]); /* 5 each time: the retry undid the 7 */
        tmt_write_long(tx, &inl_cells[0], 7);
        if (runs < 2)
            tmt_tx_retry(tx);
    } TMT_END;
    assert_int_equal(runs, 2);
    assert_int_equal(seen_again, 5);
    assert_int_equal(inl_cells[0], 7);
    assert_int_equal(head->in_place, 0);
    tmt_thread_exit();
}

static int inl_b_joined, inl_b_may_leave;

/* Starts a transaction, then stays (a thread that leaves no longer
 * counts) until told to go. */
static void *inl_second(void *arg)
{
    (void)arg;
    tmt_tx *tx = tu_enter_at(CONFIG_EVENTS_OFF);
    TMT_ATOMIC(tx, "inline-second") {
        tmt_write_long(tx, &inl_cells[1], tmt_read_long(tx, &inl_cells[1]) + 1);
    } TMT_END;
    __atomic_store_n(&inl_b_joined, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&inl_b_may_leave, __ATOMIC_SEQ_CST))
        sched_yield();
    tmt_thread_exit();
    return NULL;
}

/* Once a second thread has started a transaction, the first one's attempts
 * run the STM and its reads take the barrier: a read of a word the attempt
 * wrote finds the value in the redo log, where a plain load would find the
 * stale one in memory. */
static void test_inline_reads_take_the_barrier_once_a_second_thread_joined(void **s)
{
    (void)s;
    tmt_tx *tx = tu_enter_at(CONFIG_EVENTS_OFF);
    const struct tmt_tx_head *head = (const struct tmt_tx_head *)(const void *)tx;
    inl_cells[1] = 0;
    inl_cells[2] = 100;
    TMT_ATOMIC(tx, "inline-lone") {
        tmt_write_long(tx, &inl_cells[2], tmt_read_long(tx, &inl_cells[2]) + 1);
    } TMT_END;
    inl_b_joined = inl_b_may_leave = 0;
    pthread_t b;
    assert_int_equal(pthread_create(&b, NULL, inl_second, NULL), 0);
    while (!__atomic_load_n(&inl_b_joined, __ATOMIC_SEQ_CST))
        sched_yield();
    volatile int mode = -1, flag_inside = -1;
    volatile long seen = -1;
    TMT_ATOMIC(tx, "inline-shared") {
        mode = tx->mode;
        flag_inside = (int)head->in_place;
        tmt_write_long(tx, &inl_cells[2], 200);
        seen = tmt_read_long(tx, &inl_cells[2]);
    } TMT_END;
    __atomic_store_n(&inl_b_may_leave, 1, __ATOMIC_SEQ_CST);
    assert_int_equal(pthread_join(b, NULL), 0);
    assert_int_equal(seen, 200);
    assert_int_equal(mode, TX_MODE_STM);
    assert_int_equal(flag_inside, 0);
    assert_int_equal(inl_cells[1], 1);
    assert_int_equal(inl_cells[2], 200);
    tmt_thread_exit();
}

/* A lone thread traced at `all` runs in place too, but records every read:
 * its head's flag stays clear, so no read is a bare load. */
static void test_a_lone_thread_traced_at_all_records_every_in_place_read(void **s)
{
    (void)s;
    enum { READS = 64 };
    static long words[READS];
    tmt_stats before, after;
    assert_int_equal(tmt_stats_get(&before), 0);
    tmt_tx *tx = tu_enter_at(CONFIG_EVENTS_ALL);
    volatile int in_place = 0;
    volatile long sum = 0;
    TMT_ATOMIC(tx, "inline-traced") {
        in_place = tx->mode == TX_MODE_SERIAL;
        long acc = 0;
        for (int i = 0; i < READS; i++)
            acc += tmt_read_long(tx, &words[i]);
        sum = acc;
    } TMT_END;
    tmt_thread_exit(); /* hands the thread's records over: they count from here */
    assert_int_equal(tmt_stats_get(&after), 0);
    assert_int_equal(in_place, 1);
    assert_int_equal(sum, 0);
    assert_true(after.events_recorded - before.events_recorded >= READS);
}

/* The head's alloc_watch, read at each point of a transaction's life: [0]
 * before, [1] in the first attempt, [2] in the outer block after a nested
 * block committed, [3] in the retried attempt, [4] after the commit, [5] in
 * the next transaction's first attempt (a thread among others starts it
 * inline), [6] after that one was cancelled. */
enum { AW_POINTS = 7 };
static void alloc_watch_through_a_life(tmt_tx *tx, int seen[AW_POINTS])
{
    const struct tmt_tx_head *head = (const struct tmt_tx_head *)(const void *)tx;
    volatile int runs = 0;
    seen[0] = (int)head->alloc_watch;
    TMT_ATOMIC(tx, "watch-life") {
        if (runs++ == 0)
            seen[1] = (int)head->alloc_watch;
        TMT_ATOMIC(tx, "watch-nested") {
            tmt_write_long(tx, &inl_cells[3], 1);
        } TMT_END;
        if (runs == 1) {
            seen[2] = (int)head->alloc_watch;
            tmt_tx_retry(tx);
        }
        seen[3] = (int)head->alloc_watch;
    } TMT_END;
    seen[4] = (int)head->alloc_watch;
    TMT_ATOMIC(tx, "watch-cancel") {
        seen[5] = (int)head->alloc_watch;
        tmt_write_long(tx, &inl_cells[3], 2);
        lone_cancel(tx);
    } TMT_END;
    seen[6] = (int)head->alloc_watch;
}

/* A second thread that has joined the threads in transactions, until
 * second_leaves. */
static void second_joins(pthread_t *b)
{
    inl_b_joined = inl_b_may_leave = 0;
    assert_int_equal(pthread_create(b, NULL, inl_second, NULL), 0);
    while (!__atomic_load_n(&inl_b_joined, __ATOMIC_SEQ_CST))
        sched_yield();
}

static void second_leaves(pthread_t b)
{
    __atomic_store_n(&inl_b_may_leave, 1, __ATOMIC_SEQ_CST);
    assert_int_equal(pthread_join(b, NULL), 0);
}

/* ---- a descriptor taken over ---- */

enum { HEIR_LEFT = 8 };
static pthread_barrier_t heir_barrier;
static tmt_tx *heir_left[HEIR_LEFT];
static int heir_next, heir_retried, heir_joined;
static tmt_tx *heir_tx;
static long heir_cells[3];

/* A thread whose only transaction aborted once before it committed, and
 * which exits after the others like it entered: its descriptor is left
 * with the marks of that abort. */
static void *heir_leaver(void *arg)
{
    (void)arg;
    tmt_tx *tx = tmt_thread_enter(); /* at the configured level: tu_enter_at sets it for a moment, and all enter at once */
    volatile int runs = 0;
    TMT_ATOMIC(tx, "heir-abort") {
        tmt_write_long(tx, &heir_cells[0], tmt_read_long(tx, &heir_cells[0]) + 1);
        if (runs++ == 0)
            tmt_tx_retry(tx);
    } TMT_END;
    heir_left[__atomic_fetch_add(&heir_next, 1, __ATOMIC_SEQ_CST)] = tx;
    if (tx->retried)
        __atomic_add_fetch(&heir_retried, 1, __ATOMIC_SEQ_CST);
    pthread_barrier_wait(&heir_barrier); /* all at once: each left its own descriptor */
    tmt_thread_exit();
    return NULL;
}

static void *heir(void *arg)
{
    (void)arg;
    tmt_tx *tx = tu_enter_at(CONFIG_EVENTS_OFF);
    heir_tx = tx;
    TMT_ATOMIC(tx, "heir-first") {
        tmt_write_long(tx, &heir_cells[1], tmt_read_long(tx, &heir_cells[1]) + 1);
    } TMT_END;
    heir_joined = tx->joined;
    tmt_thread_exit();
    return NULL;
}

/* A thread that enters on the descriptor of one whose last transaction
 * aborted still joins the threads in transactions at its first one, also
 * when two others have joined already (its start takes the inline way):
 * else it would run transactions uncounted, and a thread that believed
 * itself alone would write in place beside them. */
static void test_a_thread_on_the_descriptor_of_one_whose_last_transaction_aborted_joins_at_its_first(void **s)
{
    (void)s;
    pthread_t t[HEIR_LEFT], b, h;
    heir_next = heir_retried = heir_joined = 0;
    assert_int_equal(pthread_barrier_init(&heir_barrier, NULL, HEIR_LEFT), 0);
    for (int i = 0; i < HEIR_LEFT; i++)
        assert_int_equal(pthread_create(&t[i], NULL, heir_leaver, NULL), 0);
    for (int i = 0; i < HEIR_LEFT; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    pthread_barrier_destroy(&heir_barrier);
    assert_int_equal(heir_retried, HEIR_LEFT);
    /* Two threads in transactions: the second thread and this one. Both
     * take descriptors the leavers left (the first free ones). */
    second_joins(&b);
    tmt_tx *tx = tu_enter_at(CONFIG_EVENTS_OFF);
    TMT_ATOMIC(tx, "heir-main") {
        tmt_write_long(tx, &heir_cells[2], 1);
    } TMT_END;
    assert_int_equal(pthread_create(&h, NULL, heir, NULL), 0);
    assert_int_equal(pthread_join(h, NULL), 0);
    tmt_thread_exit();
    second_leaves(b);
    int inherited = 0;
    for (int i = 0; i < HEIR_LEFT; i++)
        inherited |= heir_left[i] == heir_tx;
    assert_true(inherited);
    assert_int_equal(heir_joined, 1);
}

/* Runs `check` on a thread entered at each level (untraced, then tx),
 * first alone (`among` 0), then beside a second thread that has joined the
 * threads in transactions (the STM's own starts). */
static void at_each_setting(void (*check)(tmt_tx *tx, int among, int level))
{
    static const int levels[2] = { CONFIG_EVENTS_OFF, CONFIG_EVENTS_TX };
    for (int among = 0; among <= 1; among++) {
        pthread_t b;
        if (among)
            second_joins(&b);
        for (int l = 0; l < 2; l++) {
            tmt_tx *tx = tu_enter_at(levels[l]);
            check(tx, among, levels[l]);
            tmt_thread_exit();
        }
        if (among)
            second_leaves(b);
    }
}

static void alloc_watch_is_exact(tmt_tx *tx, int among, int level)
{
    enum { TX = TMT_ALLOC_WATCH_TX };
    static const int want[AW_POINTS] = { 0, TX, TX, TX, 0, TX, 0 };
    int traced = level != CONFIG_EVENTS_OFF ? TMT_ALLOC_WATCH_TRACED : 0;
    int seen[AW_POINTS];
    memset(seen, -1, sizeof seen);
    alloc_watch_through_a_life(tx, seen);
    for (int i = 0; i < AW_POINTS; i++)
        if (seen[i] != (want[i] | traced))
            fail_msg("among=%d traced=%d: alloc_watch at point %d is %d, not %d", among, traced, i, seen[i],
                     want[i] | traced);
}

/* compat/tl2's malloc calls malloc itself unless the head's alloc_watch
 * says traced and outside a transaction, and tmt_malloc does while it is
 * 0, so its bits must be exact: TX inside a transaction (in place or not,
 * nested blocks, retries) and clear again after a commit, an abort or a
 * cancel; TRACED at all times on a traced thread (whose allocations
 * outside transactions are recorded with their sites). */
static void test_head_alloc_watch_is_set_exactly_in_transactions_or_when_traced(void **s)
{
    (void)s;
    at_each_setting(alloc_watch_is_exact);
}

/* One transaction as compat/tl2's STM_BEGIN runs it: tmt_tx_begin, the
 * checkpoint, tmt_tx_start unless the head's alloc_watch says the attempt
 * started; `t` == 2 retries its first attempt once. A nested begin inside
 * is started by tmt_tx_begin itself. by_begin[a]: whether attempt a was
 * started by tmt_tx_begin. Returns whether the last attempt ran in place. */
static int begin_as_tl2(tmt_tx *tx, int t, int by_begin[2])
{
    static tmt_site site = TMT_SITE_INIT("tl2-begin");
    static tmt_site inner = TMT_SITE_INIT("tl2-begin-inner");
    static long cell;
    const struct tmt_tx_head *head = (const struct tmt_tx_head *)(const void *)tx;
    volatile int attempts = 0;
    setjmp(*tmt_tx_begin(tx, &site, 0));
    int started = (head->alloc_watch & TMT_ALLOC_WATCH_TX) != 0;
    by_begin[attempts] = started;
    if (!started)
        assert_int_equal(tmt_tx_start(tx), 1);
    tmt_write_long(tx, &cell, t);
    if (t == 2 && attempts++ == 0)
        tmt_tx_retry(tx);
    setjmp(*tmt_tx_begin(tx, &inner, 0));
    assert_int_equal(tmt_tx_depth(tx), 2);
    int in_place = head->in_place != 0;
    tmt_tx_commit(tx);
    tmt_tx_commit(tx);
    assert_int_equal(tmt_tx_depth(tx), 0);
    assert_int_equal(cell, t);
    return in_place;
}

/* tmt_tx_begin starts an attempt itself for a transaction after the
 * thread's first (which joins the threads in transactions): a software
 * attempt among others, traced or not, in place when an untraced thread is
 * alone; never a retry, nor a traced thread's alone (tmt_tx_start starts
 * that one, in place too at `tx`, which records no access). */
static void begins_start_only_plain_first_attempts(tmt_tx *tx, int among, int level)
{
    for (int t = 0; t < 3; t++) {
        int by_begin[2] = { -1, -1 };
        int in_place = begin_as_tl2(tx, t, by_begin);
        int plain = t > 0 && (among || level == CONFIG_EVENTS_OFF);
        if (in_place != !among)
            fail_msg("among=%d level=%d transaction %d: in place %d", among, level, t, in_place);
        if (by_begin[0] != plain || (t == 2 && by_begin[1] != 0))
            fail_msg("among=%d level=%d transaction %d: started by tmt_tx_begin %d then %d, not %d then 0", among,
                     level, t, by_begin[0], by_begin[1], plain);
    }
}

static void test_tx_begin_starts_first_attempts_traced_or_not_and_leaves_retries_to_tx_start(void **s)
{
    (void)s;
    at_each_setting(begins_start_only_plain_first_attempts);
}

/* ---- threads that come and go ---- */

enum { CHURN_ACCOUNTS = 32, CHURN_ROUNDS = 12, CHURN_MAX_THREADS = 5, CHURN_OPS = 1500 };
static long churn_acct[CHURN_ACCOUNTS]; /* adjacent: two share a stripe */
static long churn_bad_audits;

static void churn_transfer(tmt_tx *tx, int from, int to, long amount)
{
    TMT_ATOMIC(tx, "churn-transfer") {
        tmt_write_long(tx, &churn_acct[from], tmt_read_long(tx, &churn_acct[from]) - amount);
        tmt_write_long(tx, &churn_acct[to], tmt_read_long(tx, &churn_acct[to]) + amount);
    } TMT_END;
}

static void churn_audit(tmt_tx *tx)
{
    volatile long sum = 0;
    TMT_ATOMIC_FLAGS(tx, "churn-audit", TMT_TX_READ_ONLY) {
        long acc = 0;
        for (int i = 0; i < CHURN_ACCOUNTS; i++)
            acc += tmt_read_long(tx, &churn_acct[i]);
        sum = acc;
    } TMT_END;
    if (sum != 0)
        __atomic_add_fetch(&churn_bad_audits, 1, __ATOMIC_RELAXED);
}

/* Transfers and audits; now and then the thread exits and enters again,
 * so that descriptors change hands and the count of threads in
 * transactions goes up and down under the others. */
static void *churner(void *arg)
{
    uint64_t r = (uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15ull | 1;
    tmt_tx *tx = tmt_thread_enter();
    for (int i = 0; i < CHURN_OPS; i++) {
        tu_xorshift(&r);
        if (r % 211 == 0) {
            tmt_thread_exit();
            sched_yield();
            tx = tmt_thread_enter();
        }
        if (r % 8 == 0)
            churn_audit(tx);
        else
            churn_transfer(tx, (int)((r >> 8) % CHURN_ACCOUNTS), (int)((r >> 20) % CHURN_ACCOUNTS),
                           (long)((r >> 40) % 50));
    }
    tmt_thread_exit();
    return NULL;
}

/* Rounds of 1 to 5 threads that come and go: a thread alone runs in place,
 * the others the STM, and the hand-over between them, both ways, loses no
 * money and shows no audit a partial transfer. */
static void test_money_is_conserved_while_threads_come_and_go_beside_a_lone_thread_in_place(void **s)
{
    (void)s;
    memset(churn_acct, 0, sizeof churn_acct);
    churn_bad_audits = 0;
    for (int round = 0; round < CHURN_ROUNDS; round++) {
        pthread_t t[CHURN_MAX_THREADS];
        int n = 1 + round % CHURN_MAX_THREADS;
        for (int i = 0; i < n; i++)
            assert_int_equal(pthread_create(&t[i], NULL, churner, (void *)(uintptr_t)(round * 8 + i + 1)), 0);
        for (int i = 0; i < n; i++)
            assert_int_equal(pthread_join(t[i], NULL), 0);
        long total = 0;
        for (int i = 0; i < CHURN_ACCOUNTS; i++)
            total += churn_acct[i];
        assert_int_equal(total, 0);
    }
    assert_int_equal(churn_bad_audits, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_tmtrace_value_makes_init_fail_naming_the_variable),
        cmocka_unit_test(test_thread_enter_twice_returns_the_same_descriptor),
        cmocka_unit_test(test_user_retry_discards_the_attempt_and_runs_again),
        cmocka_unit_test(test_cancel_discards_the_effects_and_skips_the_block),
        cmocka_unit_test(test_nested_blocks_are_flattened_into_the_outer_one),
        cmocka_unit_test(test_retry_in_a_nested_block_restarts_the_outer_block),
        cmocka_unit_test(test_thread_descriptors_are_reused_across_many_enters_and_exits),
        cmocka_unit_test(test_a_thread_leaves_while_the_registry_lock_is_held_and_its_counts_stay),
        cmocka_unit_test(test_site_statistics_name_the_site_and_count_its_outcomes),
        cmocka_unit_test(test_abort_reasons_have_distinct_names),
        cmocka_unit_test(test_typed_accessors_round_trip_every_type),
        LONE_AT_ONCE(test_a_lone_threads_cancel_and_retry_restore_memory_in_place),
        LONE_AT_ONCE(test_a_thread_arriving_waits_for_the_lone_in_place_attempt),
        LONE_AT_ONCE(test_inline_reads_in_place_see_the_attempts_writes_and_their_undo),
        cmocka_unit_test(test_a_lone_thread_runs_in_place_from_its_settling_start_and_settles_again_after_a_change),
        cmocka_unit_test(test_a_thread_arriving_beside_a_lone_thread_that_has_not_settled_starts_at_once),
        cmocka_unit_test(test_inline_reads_take_the_barrier_once_a_second_thread_joined),
        cmocka_unit_test(test_a_thread_on_the_descriptor_of_one_whose_last_transaction_aborted_joins_at_its_first),
        LONE_AT_ONCE(test_a_lone_thread_traced_at_all_records_every_in_place_read),
        cmocka_unit_test(test_head_alloc_watch_is_set_exactly_in_transactions_or_when_traced),
        LONE_AT_ONCE(test_tx_begin_starts_first_attempts_traced_or_not_and_leaves_retries_to_tx_start),
        cmocka_unit_test(test_money_is_conserved_while_threads_come_and_go_beside_a_lone_thread_in_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
