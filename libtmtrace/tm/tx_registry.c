/*
 * tx_registry.c - every thread's transaction descriptor (see tx_registry.h).
 *
 * Owns: the descriptor list and its lock, thread ids, the counts of live
 * threads and of those that have started a transaction. Never frees a
 * descriptor (the serial drain, the abort records of other threads and the
 * sums read them without the lock, or after their thread left); never takes
 * its lock on the transactional fast path or when a thread leaves.
 */
#include "tx_registry.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tx_util.h"

static pthread_mutex_t txreg_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct tmt_tx *txreg_all; /* every descriptor ever made, live or not */
/* Live descriptors. Nothing reads the count: txreg_enter's sequentially
 * consistent increment is the registration's fence, after which a thread
 * that txreg_oldest_seen_rv did not see as live begins its attempts. */
static uint32_t txreg_nlive;
/* Live descriptors that have started a transaction (txreg_join): changed
 * with sequentially consistent read-modify-writes, read by txreg_alone_self and
 * txreg_lone_hint. */
uint32_t txreg_ntx;
/* Joins and leaves so far (txreg_lone_settled). */
uint32_t txreg_changes;
uint32_t txreg_lone_after = 16;
static uint32_t txreg_next_thread;

__thread struct tmt_tx *txreg_self_tx __attribute__((tls_model("initial-exec")));

void txreg_lock(void) { pthread_mutex_lock(&txreg_mutex); }
void txreg_unlock(void) { pthread_mutex_unlock(&txreg_mutex); }

/* ---- statistics ------------------------------------------------------------- */

static inline uint64_t txreg_load(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

static void txreg_add_counts(struct tx_counts *to, const struct tx_counts *from)
{
    to->commits += txreg_load(&from->commits);
    to->aborts += txreg_load(&from->aborts);
    for (unsigned r = 0; r < TMT_ABORT_REASONS; r++)
        to->aborts_by_reason[r] += txreg_load(&from->aborts_by_reason[r]);
}

static void txreg_add_stats(struct tx_stats *to, const struct tx_stats *from)
{
    txreg_add_counts(&to->all, &from->all);
    to->htm_commits += txreg_load(&from->htm_commits);
    to->htm_aborts += txreg_load(&from->htm_aborts);
    to->fallbacks += txreg_load(&from->fallbacks);
    to->serial += txreg_load(&from->serial);
}

/* A descriptor's counters: those of every thread that has had it (a
 * leaving thread keeps them there, and the next one counts on). Its totals
 * (`all`, never counted themselves) are the sums of its per-site counts,
 * which the life cycle keeps, once per commit or abort. */
static void txreg_add_thread(struct tx_stats *to, const struct tmt_tx *t)
{
    txreg_add_stats(to, &t->stats);
    for (uint32_t i = 0; i < t->nsite_stats; i++)
        txreg_add_counts(&to->all, &t->site_stats[i]);
}

/* Grows a per-site array to hold `id`; caller holds the lock. 0 or -1. */
static int txreg_grow(struct tx_counts **arr, uint32_t *n, uint32_t id)
{
    if (id < *n)
        return 0;
    uint32_t want = *n ? *n : 16;
    while (want <= id)
        want *= 2;
    struct tx_counts *p = calloc(want, sizeof *p);
    if (p == NULL)
        return -1;
    if (*arr)
        memcpy(p, *arr, (size_t)*n * sizeof *p);
    free(*arr);
    *arr = p;
    *n = want;
    return 0;
}

/* The owner writes its counters without the lock; readers hold the lock,
 * and the array is swapped under it. */
__attribute__((noinline)) void txreg_grow_sites(struct tmt_tx *tx, uint32_t id)
{
    txreg_lock();
    if (txreg_grow(&tx->site_stats, &tx->nsite_stats, id) != 0) {
        txreg_unlock();
        /* cannot count the transaction that is about to run */
        tx_out_of_memory("a thread's per-site counters", ((size_t)id + 1) * sizeof *tx->site_stats);
    }
    txreg_unlock();
}

void txreg_sum(struct tx_stats *out)
{
    memset(out, 0, sizeof *out);
    txreg_lock();
    for (struct tmt_tx *t = txreg_all; t; t = t->next)
        txreg_add_thread(out, t);
    txreg_unlock();
}

void txreg_sum_site(uint32_t id, struct tx_counts *out)
{
    memset(out, 0, sizeof *out);
    txreg_lock();
    for (struct tmt_tx *t = txreg_all; t; t = t->next)
        if (id < t->nsite_stats)
            txreg_add_counts(out, &t->site_stats[id]);
    txreg_unlock();
}

/* ---- software attempts of all threads ------------------------------------------ */

uint64_t tx_oldest_active_rv(void)
{
    uint64_t oldest = UINT64_MAX;
    txreg_lock();
    for (struct tmt_tx *t = txreg_all; t; t = t->next) {
        uint64_t rv = __atomic_load_n(&t->stm.active_rv, __ATOMIC_SEQ_CST);
        if (!(rv & TX_IDLE) && rv < oldest)
            oldest = rv;
    }
    txreg_unlock();
    return oldest;
}

uint64_t txreg_oldest_seen_rv(const struct tmt_tx *self)
{
    uint64_t oldest = UINT64_MAX;
    for (struct tmt_tx *t = __atomic_load_n(&txreg_all, __ATOMIC_ACQUIRE); t; t = t->next) {
        if (t == self || !__atomic_load_n(&t->live, __ATOMIC_SEQ_CST))
            continue;
        /* Idle, or an attempt whose announcement is not visible yet: either
         * way its floor, which no attempt of that thread since starts below. */
        uint64_t rv = __atomic_load_n(&t->stm.active_rv, __ATOMIC_SEQ_CST) & ~TX_IDLE;
        if (rv < oldest)
            oldest = rv;
    }
    return oldest;
}

static uint64_t txreg_order; /* only ever the target of a fencing no-op */

void txreg_wait_older(const struct tmt_tx *self, uint64_t time)
{
    /* Pairs with a begin's sequentially consistent announcement (the
     * begins are fenced, stm_fence_begins): this thread's commit is
     * visible before it looks (a locked read-modify-write is the full
     * fence; the thread sanitizer does not model stand-alone fences), so
     * an attempt it does not see announced reads that commit. */
    __atomic_fetch_add(&txreg_order, 0, __ATOMIC_SEQ_CST);
    for (struct tmt_tx *t = __atomic_load_n(&txreg_all, __ATOMIC_ACQUIRE); t; t = t->next) {
        if (t == self)
            continue;
        for (unsigned spins = 1; __atomic_load_n(&t->stm.active_rv, __ATOMIC_SEQ_CST) < time; spins++) {
            tx_pause();
            if ((spins & 255) == 0)
                sched_yield(); /* the attempt we wait for may need this core */
        }
    }
}

void txreg_drain_others(const struct tmt_tx *self)
{
    for (struct tmt_tx *t = __atomic_load_n(&txreg_all, __ATOMIC_ACQUIRE); t; t = t->next) {
        if (t == self)
            continue;
        for (unsigned spins = 1; !(__atomic_load_n(&t->stm.active_rv, __ATOMIC_SEQ_CST) & TX_IDLE); spins++) {
            tx_pause();
            if ((spins & 255) == 0)
                sched_yield(); /* the attempt we wait for may need this core */
        }
    }
}

/* ---- threads ------------------------------------------------------------------ */

struct tmt_tx *txreg_enter(void)
{
    txreg_lock();
    struct tmt_tx *tx = txreg_all;
    /* Acquire: pairs with the release by which a leaving thread gave it up
     * (txreg_leave), after its last write to it. */
    while (tx && __atomic_load_n(&tx->live, __ATOMIC_ACQUIRE))
        tx = tx->next;
    if (tx == NULL) {
        tx = aligned_alloc(64, (sizeof *tx + 63) & ~(size_t)63);
        if (tx == NULL) {
            txreg_unlock();
            error_set("tmt_thread_enter: out of memory for a thread descriptor");
            return NULL;
        }
        memset(tx, 0, sizeof *tx);
        tx->stm.active_rv = TX_IDLE; /* floor 0: its first attempt may start anywhere */
        tx->next = txreg_all;
        /* Published with release: the serial drain walks the list without
         * the lock (descriptors are never freed). */
        __atomic_store_n(&txreg_all, tx, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&tx->live, 1, __ATOMIC_RELAXED);
    (void)__atomic_add_fetch(&txreg_nlive, 1, __ATOMIC_SEQ_CST);
    tx->thread_id = ++txreg_next_thread;
    txreg_unlock();
    return tx;
}

void txreg_set_self(struct tmt_tx *tx) { txreg_self_tx = tx; }

void txreg_join(struct tmt_tx *tx)
{
    tx->joined = 1;
    (void)__atomic_add_fetch(&txreg_ntx, 1, __ATOMIC_SEQ_CST);
    (void)__atomic_add_fetch(&txreg_changes, 1, __ATOMIC_RELAXED);
}

/* The thread leaves (exit, or it could not attach): no longer counted, and
 * its descriptor, statistics kept, free for the next thread that enters.
 * Without the lock: in STAMP's kmeans both threads leave at the end of each
 * of its phases, and the one that found the lock taken slept on it (10 of
 * a 2-thread run's 200 futex calls were there). Giving the descriptor up
 * is the last write to it. */
static void txreg_leave(struct tmt_tx *tx)
{
    if (tx->joined) {
        tx->joined = 0;
        (void)__atomic_sub_fetch(&txreg_ntx, 1, __ATOMIC_SEQ_CST);
        (void)__atomic_add_fetch(&txreg_changes, 1, __ATOMIC_RELAXED);
    }
    (void)__atomic_sub_fetch(&txreg_nlive, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&tx->live, 0, __ATOMIC_RELEASE);
}

void txreg_abandon(struct tmt_tx *tx) { txreg_leave(tx); }

void txreg_exit(struct tmt_tx *tx)
{
    if (txreg_self_tx == tx)
        txreg_self_tx = NULL;
    txreg_leave(tx);
}

/* The child has one thread: every other descriptor's thread is gone. Called
 * with the lock held (taken before the fork). */
void txreg_fork_child(const struct tmt_tx *self)
{
    for (struct tmt_tx *t = txreg_all; t; t = t->next) {
        if (t == self)
            continue;
        __atomic_store_n(&t->live, 0, __ATOMIC_RELAXED); /* reusable by the child's own threads */
        t->joined = 0;
        __atomic_store_n(&t->stm.active_rv, TX_IDLE, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&txreg_nlive, self && self->live ? 1u : 0u, __ATOMIC_SEQ_CST);
    __atomic_store_n(&txreg_ntx, self && self->live && self->joined ? 1u : 0u, __ATOMIC_SEQ_CST);
    (void)__atomic_add_fetch(&txreg_changes, 1, __ATOMIC_RELAXED);
}
