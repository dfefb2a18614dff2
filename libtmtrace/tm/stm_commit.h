/*
 * stm_commit.h - the STM's update commit as inline code (stm.c's, see
 * stm.h for the contract of stm_commit and stm_commit_finish), so that the
 * life cycle's commits (tx_life.c) run it in their own frame: no call, no
 * second set of saved registers, no reload of the descriptor for a commit
 * of a few words; a traced one takes the small commit in two halves
 * (stm_commit_small_locked, stm_commit_small_release) around its stamp.
 *
 * Owns: the update commit's fast path (lock, clock, write-back, release)
 * on tx->stm and the stripe table (stm_barrier.h); stm_commit.c holds the
 * traced commit's two steps made of it. Never: included outside the STM
 * and the life cycle; never grows: what is not on every commit's path (a
 * larger lock array, a busy stripe, validation, partial words) stays out
 * of line in stm.c (stm.h declares it).
 */
#ifndef TMT_STM_COMMIT_H
#define TMT_STM_COMMIT_H

#include "stm.h"
#include "stm_barrier.h"

/* Asks for the line holding p in a writable state without waiting for it
 * (PREFETCHW: the CPU must have it, stm_prefetchw). A read prefetch
 * (PREFETCHT0) in its place gained nothing measurable on ssca2. */
static inline void stm_prefetch_w(const void *p)
{
    __asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
}

/* Unlocks every stripe this commit locked with the new version. */
static inline void stm_release_new(struct tx_stm *s, uintptr_t word)
{
    for (const struct tx_lockrec *r = s->locks, *end = r + s->nlocked; r != end; r++)
        __atomic_store_n(r->stripe, word, __ATOMIC_RELEASE);
    s->nlocked = 0;
}

/* Stores the redo log's words. */
static inline __attribute__((always_inline)) void stm_writeback(const struct tx_stm *s)
{
    for (const struct tx_wentry *e = s->wset, *end = e + s->wn; e != end; e++) {
        if (TX_LIKELY(e->mask == 0xffu))
            tx_mem_store(e->addr, e->value, 8);
        else
            stm_writeback_part(e);
    }
}

/* Locks the stripe of every redo-log entry (lcap >= wn, nothing locked
 * yet). The loop makes no call, so it needs no saved registers: a stripe
 * found locked by another, or a lost race for one, hands the rest of the log
 * to stm_lock_rest. A stripe this loop already locked (two words of one
 * block, or a hash collision) is passed over here: with stripes wider than a
 * word, neighbouring fields written together make that common. */
static inline __attribute__((always_inline)) void stm_lock_all(struct tmt_tx *tx)
{
    struct tx_stm *s = &tx->stm;
    uint64_t held = stm_holder_of(tx);
    struct tx_lockrec *r = s->locks;
    const struct tx_wentry *e = s->wset, *end = e + s->wn;
    /* The table in registers: the compare-and-swap, a compiler barrier,
     * would otherwise reload it for every entry. */
    const struct stm_table t = stm_table_now();
    for (; e != end; e++) {
        uintptr_t *stripe = stm_table_stripe(&t, e->addr);
        uintptr_t v = __atomic_load_n(stripe, __ATOMIC_ACQUIRE);
        if (TX_UNLIKELY(v & 1)) {
            const struct tx_lockrec *held = (const struct tx_lockrec *)(v & ~(uintptr_t)1);
            if (held >= s->locks && held < r)
                continue;
            break;
        }
        r->stripe = stripe;
        r->old = v;
        __atomic_store_n(&r->held, held, __ATOMIC_RELAXED);
        /* Release as well as acquire: see stm_lock_one. */
        if (TX_UNLIKELY(!__atomic_compare_exchange_n(stripe, &v, (uintptr_t)r | 1, 0, __ATOMIC_ACQ_REL,
                                                     __ATOMIC_RELAXED)))
            break;
        r++;
    }
    s->nlocked = (uint32_t)(r - s->locks);
    if (TX_UNLIKELY(e != end))
        stm_lock_rest(tx, e);
}

/* An attempt that wrote nothing commits where it stands: every read was
 * consistent at rv when it was made. */
static inline int stm_commit_read_only(struct tx_stm *s)
{
    if (s->wn != 0)
        return 0;
    stm_idle(s, s->rv);
    return 1;
}

/* Every lock held: the commit's write version, from the global clock. */
static inline __attribute__((always_inline)) uint64_t stm_commit_version(struct tmt_tx *tx)
{
#ifdef TMT_TEST_HOOKS
    if (stm_test_locked_hook)
        stm_test_locked_hook(tx);
#else
    (void)tx;
#endif
    return __atomic_add_fetch(&stm_clock.now, 1, __ATOMIC_ACQ_REL);
}

/* stm_commit's body for an update attempt, inlined into both commits:
 * returns the write version (never 0) with the locks held. */
static inline __attribute__((always_inline)) uint64_t stm_commit_locked(struct tmt_tx *tx)
{
    struct tx_stm *s = &tx->stm;
    if (TX_UNLIKELY(s->lcap < s->wn))
        stm_lgrow(s);
    stm_lock_all(tx);
    uint64_t wv = stm_commit_version(tx);
    /* wv == rv + 1: no other update committed since the start, the reads
     * cannot have been overwritten. */
    if (wv != s->rv + 1)
        stm_commit_validate(tx);
    return wv;
}

/* stm_commit_finish's body for an update attempt (wv != 0). */
static inline __attribute__((always_inline)) void stm_commit_release(struct tmt_tx *tx, uint64_t wv)
{
    struct tx_stm *s = &tx->stm;
    stm_writeback(s);
    stm_release_new(s, (uintptr_t)wv << 1);
    stm_idle(s, wv);
}

/* Locks `stripe` with record `r`: 1, or 0 when it is busy or the race for
 * it was lost (the general way takes over). */
static inline __attribute__((always_inline)) int stm_lock_fresh(uintptr_t *stripe, struct tx_lockrec *r, uint64_t held)
{
    uintptr_t v = __atomic_load_n(stripe, __ATOMIC_ACQUIRE);
    if (TX_UNLIKELY(v & 1))
        return 0;
    r->stripe = stripe;
    r->old = v;
    __atomic_store_n(&r->held, held, __ATOMIC_RELAXED);
    /* Release as well as acquire: see stm_lock_one. */
    return __atomic_compare_exchange_n(stripe, &v, (uintptr_t)r | 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* What stm_commit_try returns when it leaves the commit to stm_commit_rest
 * (a write version is below 2^62): REST alone, nothing done yet; REST | 1,
 * the first nlocked stripes locked; REST | TAKEN | wv, every stripe locked
 * and the write version wv taken, the reads to validate. */
#define STM_COMMIT_REST (1ull << 63)
#define STM_COMMIT_TAKEN (1ull << 62)

/* The first step of a commit of one or two whole words (lcap >= 2:
 * stm_thread_enter; `two`: wn == 2) on stripes `st0` and `st1` (st0 again
 * for one word) that meets no lock and no newer commit: stm_commit_locked
 * without its loop, no call. Returns the write version with both stripes
 * locked, or a value with STM_COMMIT_REST set (what is done so far) for
 * stm_commit_rest or stm_commit_rest_locked to go on from. */
static inline __attribute__((always_inline)) uint64_t stm_commit_small_locked(struct tmt_tx *tx, uintptr_t *st0,
                                                                              uintptr_t *st1, int two)
{
    struct tx_stm *s = &tx->stm;
    const struct tx_wentry *e = s->wset;
    uint64_t held = stm_holder_of(tx);
    /* Both stripes and both data lines are fetched for writing at once: the
     * compare-and-swap below is a full barrier, so without this the second
     * stripe's miss and the data's misses would each wait for the one
     * before (ssca2 writes two words at random places; docs/design.md). */
    if (TX_LIKELY(stm_prefetchw)) {
        stm_prefetch_w(st1);
        stm_prefetch_w((const void *)e[0].addr);
        if (two)
            stm_prefetch_w((const void *)e[1].addr);
    }
    if (TX_UNLIKELY(!stm_lock_fresh(st0, &s->locks[0], held))) {
        s->nlocked = 0;
        return STM_COMMIT_REST | 1;
    }
    if (st1 != st0 && TX_UNLIKELY(!stm_lock_fresh(st1, &s->locks[1], held))) {
        s->nlocked = 1;
        return STM_COMMIT_REST | 1;
    }
    s->nlocked = 1u + (st1 != st0);
    uint64_t wv = stm_commit_version(tx);
    if (TX_UNLIKELY(wv != s->rv + 1))
        return STM_COMMIT_REST | STM_COMMIT_TAKEN | wv;
    return wv;
}

/* The second step of stm_commit_small_locked's commit (it returned `wv`):
 * the one or two words stored and their stripes released, no loop. Each
 * stripe is released once: once st0 is free, another commit may lock it at
 * once, and a second store to it (st1 when it is st0: one word, or two on
 * one stripe) would wipe out that commit's lock, letting a third lock the
 * stripe beside it and write over its words (lost updates, seen under
 * TSan's slow atomics). */
static inline __attribute__((always_inline)) void stm_commit_small_release(struct tmt_tx *tx, uintptr_t *st0,
                                                                           uintptr_t *st1, int two, uint64_t wv)
{
    struct tx_stm *s = &tx->stm;
    const struct tx_wentry *e = s->wset;
    tx_mem_store(e[0].addr, e[0].value, 8);
    if (two)
        tx_mem_store(e[1].addr, e[1].value, 8);
    if (st1 != st0)
        __atomic_store_n(st1, (uintptr_t)wv << 1, __ATOMIC_RELEASE);
    __atomic_store_n(st0, (uintptr_t)wv << 1, __ATOMIC_RELEASE);
#ifdef TMT_TEST_HOOKS
    if (stm_test_released_hook)
        stm_test_released_hook(st0);
#endif
    s->nlocked = 0;
    stm_idle(s, wv);
}

/* Both steps with nothing in between (an untraced commit): the stripes
 * kept in registers from lock to release, and no call: anything else is
 * left to stm_commit_rest with what is done so far, so that the caller's
 * frame saves no register for this path. */
static inline __attribute__((always_inline)) uint64_t stm_commit_small(struct tmt_tx *tx)
{
    const struct tx_wentry *e = tx->stm.wset;
    int two = tx->stm.wn == 2;
    uintptr_t *st0 = stm_stripe(e[0].addr);
    uintptr_t *st1 = two ? stm_stripe(e[1].addr) : st0;
    uint64_t wv = stm_commit_small_locked(tx, st0, st1, two);
    if (TX_LIKELY(!(wv & STM_COMMIT_REST)))
        stm_commit_small_release(tx, st0, st1, two, wv);
    return wv;
}

/* Whether stm_commit_small may take the commit: one or two whole words. */
static inline int stm_commit_is_small(const struct tx_stm *s)
{
    return s->wn <= 2 && (s->wset[0].mask & s->wset[s->wn - 1].mask) == 0xffu;
}

/* Both steps of a commit that records nothing in between, as far as they
 * go without a call: the write version (done), 0 (nothing was written,
 * done), or a value with STM_COMMIT_REST set, which stm_commit_rest
 * (stm_commit.c) takes to finish the commit. */
static inline __attribute__((always_inline)) uint64_t stm_commit_try(struct tmt_tx *tx)
{
    struct tx_stm *s = &tx->stm;
    if (stm_commit_read_only(s))
        return 0;
    if (TX_LIKELY(stm_commit_is_small(s)))
        return stm_commit_small(tx);
    return STM_COMMIT_REST;
}

/* Finishes what stm_commit_try left (any value it returns: one without
 * STM_COMMIT_REST is returned as it is); returns the write version. */
uint64_t stm_commit_rest(struct tmt_tx *tx, uint64_t code);
/* stm_commit from what stm_commit_small_locked left (a value with
 * STM_COMMIT_REST set): the write version, every lock held and the reads
 * validated, for stm_commit_finish after the COMMIT record. */
uint64_t stm_commit_rest_locked(struct tmt_tx *tx, uint64_t code);

#endif
