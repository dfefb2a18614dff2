/*
 * txmem.c - transactional malloc and free (see txmem.h).
 *
 * Owns tx->mem. A software transaction's free is deferred twice: to its
 * commit (an abort must not have freed anything), and then until no software
 * attempt that started before that commit is still running (such an attempt
 * may still hold the pointer it read before the block was unlinked; TL2 lets
 * it read on until it aborts). Hardware attempts exclude software ones, so
 * their frees need only the first deferral. Never records events.
 */
#include "txmem.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "stm.h"
#include "tx_registry.h"
#include "tx_util.h"

/* Limbo entries that trigger a reclamation pass. Each pass fences every CPU
 * that runs a thread of the process (membarrier: an IPI to each, a VM exit
 * under KVM) while the commit that triggered it waits, so the batch is large
 * (what a small one cost: docs/design.md, "Transactional allocation"). The
 * price is at most this many freed blocks per thread held a little longer. */
#define TXMEM_LIMBO_SCAN 1024

/* Limbo entries between passes that fence no other CPU (txmem_reclaim_seen):
 * they free what the other threads' visible start versions already allow,
 * so a block goes back to malloc while it is still in the cache. */
#define TXMEM_SEEN_SCAN 32

static uint64_t txmem_order; /* only ever the target of a fencing no-op */

/* A full log: grows it (out of line, so that txmem_log saves nothing). */
__attribute__((noinline, cold)) static void txmem_log_grow(void ***log, uint32_t *cap)
{
    *log = tx_grow(*log, cap, sizeof **log, 16);
}

static inline void txmem_log(void ***log, uint32_t *n, uint32_t *cap, void *p)
{
    if (TX_UNLIKELY(*n == *cap))
        txmem_log_grow(log, cap);
    (*log)[(*n)++] = p;
}

void *txmem_malloc(struct tmt_tx *tx, size_t size)
{
    void *p = malloc(size);
    /* Real hardware attempts roll the allocator's own state back on abort,
     * so only software and emulated attempts need the log. */
    if (p != NULL && (tx->mode == TX_MODE_STM || tx->mode == TX_MODE_HTM_EMU))
        txmem_log(&tx->mem.allocs, &tx->mem.nallocs, &tx->mem.acap, p);
    return p;
}

void txmem_free(struct tmt_tx *tx, void *ptr)
{
    if (ptr == NULL)
        return;
    if (tx->mode == TX_MODE_STM || tx->mode == TX_MODE_HTM_EMU)
        txmem_log(&tx->mem.frees, &tx->mem.nfrees, &tx->mem.fcap, ptr);
    else
        free(ptr); /* outside transactions, and inside real hardware ones */
}

/* Frees the limbo's entries stamped at or below `oldest`. The limbo is in
 * stamp order (a thread's commits take increasing write versions), so they
 * are a prefix; the rest moves to the front. */
static void txmem_release_upto(struct tx_mem *m, uint64_t oldest)
{
    uint32_t n = 0;
    while (n < m->nlimbo && m->limbo[n].stamp <= oldest)
        free(m->limbo[n++].ptr);
    if (n == 0)
        return;
    m->nlimbo -= n;
    memmove(m->limbo, m->limbo + n, (size_t)m->nlimbo * sizeof *m->limbo);
}

/* The pass without membarrier: after a fence of its own, this thread frees
 * what is older than every start version it sees the others announce, an
 * idle thread's floor standing for the attempt it may have begun unseen
 * (see txreg_oldest_seen_rv). */
static void txmem_reclaim_seen(struct tmt_tx *tx)
{
    __atomic_fetch_add(&txmem_order, 0, __ATOMIC_SEQ_CST);
    txmem_release_upto(&tx->mem, txreg_oldest_seen_rv(tx));
}

/* Frees every limbo entry no running attempt can reach; keeps the rest. */
static void txmem_reclaim(struct tx_mem *m)
{
    /* Pairs with the announcement in stm_begin(): the commit's stores are
     * visible before the running attempts are looked at (a locked
     * read-modify-write is the full fence; the thread sanitizer does not
     * model stand-alone fences), and stm_fence_others() makes the others'
     * announcements visible before the look. */
    __atomic_fetch_add(&txmem_order, 0, __ATOMIC_SEQ_CST);
    stm_fence_others();
    txmem_release_upto(m, tx_oldest_active_rv());
}

/* Whether this thread is the only one registered, after its commit's stores.
 * Then no other attempt can hold a pointer into what the commit unlinked: a
 * thread registers (a sequentially consistent read-modify-write) before its
 * first attempt begins, so either the fence here orders this commit's
 * stores before the look and the look sees it registered, or its attempts
 * begin after this commit and never reach the unlinked blocks. The answer
 * "not alone" needs no fence. */
static int txmem_alone_after_commit(const struct tmt_tx *tx)
{
    if (!txreg_alone_self(tx))
        return 0;
    __atomic_fetch_add(&txmem_order, 0, __ATOMIC_SEQ_CST);
    return txreg_alone_self(tx);
}

static void txmem_free_all(void **ptrs, uint32_t *n)
{
    for (uint32_t i = 0; i < *n; i++)
        free(ptrs[i]);
    *n = 0;
}

void txmem_commit_frees(struct tmt_tx *tx, uint64_t wv)
{
    struct tx_mem *m = &tx->mem;
    if (tx->mode != TX_MODE_STM) {
        txmem_free_all(m->frees, &m->nfrees);
        return;
    }
    /* A lone thread frees at once: a block freed and allocated again soon
     * is still in the cache. What the limbo holds was held back for threads
     * that have gone, and goes too. */
    if (txmem_alone_after_commit(tx)) {
        txmem_free_all(m->frees, &m->nfrees);
        txmem_release_upto(m, UINT64_MAX);
        return;
    }
    /* A transaction that wrote nothing unlinked nothing: wait for every
     * attempt running now (their rv <= the clock) instead. */
    uint64_t stamp = wv ? wv : stm_clock_now() + 1;
    for (uint32_t i = 0; i < m->nfrees; i++) {
        if (m->nlimbo == m->limbocap)
            m->limbo = tx_grow(m->limbo, &m->limbocap, sizeof *m->limbo, 64);
        m->limbo[m->nlimbo].ptr = m->frees[i];
        m->limbo[m->nlimbo].stamp = stamp;
        m->nlimbo++;
    }
    m->nfrees = 0;
    if (m->nlimbo >= (m->limbo_scan_at ? m->limbo_scan_at : TXMEM_LIMBO_SCAN)) {
        txmem_reclaim(m);
        /* What a long-running attempt holds back is not rescanned at every
         * commit: the next pass waits for another batch. */
        m->limbo_scan_at = m->nlimbo + TXMEM_LIMBO_SCAN;
        m->seen_scan_at = m->nlimbo + TXMEM_SEEN_SCAN;
    } else if (m->nlimbo >= m->seen_scan_at) {
        txmem_reclaim_seen(tx);
        m->seen_scan_at = m->nlimbo + TXMEM_SEEN_SCAN;
    }
}

void txmem_abort(struct tmt_tx *tx)
{
    struct tx_mem *m = &tx->mem;
    txmem_free_all(m->allocs, &m->nallocs);
    m->nfrees = 0;
}

/* Polls between two looks of a leaving thread at the attempts that hold its
 * limbo back: each look reads every descriptor's announcement, a line its
 * owner writes on every read, so it is not taken from the owner more often
 * than that. */
#define TXMEM_EXIT_POLL_PAUSES 256

void txmem_thread_exit(struct tmt_tx *tx)
{
    struct tx_mem *m = &tx->mem;
    m->limbo_scan_at = TXMEM_LIMBO_SCAN;
    m->seen_scan_at = 0;
    /* Nothing held back, no pass: a pass fences every CPU that runs a
     * thread of the process, which an exit of a thread that freed nothing
     * need not pay. */
    if (m->nlimbo == 0)
        return;
    txmem_reclaim(m);
    /* One fence is enough: an attempt that the pass did not see announced
     * makes its reads after that fence, so it reads the commits that
     * unlinked the limbo's blocks (and aborts on them, or extends past
     * them); what remains waits only for the attempts seen running then,
     * so the looks that follow read the announcements without fencing the
     * other CPUs again (a fence per look interrupted those attempts, a
     * leaving thread's many times over). */
    while (m->nlimbo != 0) {
        for (unsigned i = 0; i < TXMEM_EXIT_POLL_PAUSES; i++)
            tx_pause();
        sched_yield(); /* only other threads' running attempts hold it back; they end */
        txmem_release_upto(m, tx_oldest_active_rv());
    }
}
