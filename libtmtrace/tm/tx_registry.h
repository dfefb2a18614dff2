/*
 * tx_registry.h - every thread's transaction descriptor, and what is
 * computed over all of them.
 *
 * Owns: the list of descriptors (live ones and exited ones kept for reuse;
 * never freed, so other threads may walk it without the lock), the lock that
 * guards membership, thread ids and the per-site counter arrays, the calling
 * thread's own descriptor (txreg_self), the sums of the statistics over all
 * descriptors, the oldest running software start version and
 * the wait for other threads' software attempts to end.
 * Never: writes another thread's attempt state (it only reads its
 * stm.active_rv and statistics, with atomic loads), records trace events,
 * or runs on the transactional fast path (txreg_self aside).
 */
#ifndef TMT_TX_REGISTRY_H
#define TMT_TX_REGISTRY_H

#include <stdint.h>

#include "tx.h"
#include "tx_util.h"

/* The calling thread's descriptor (NULL before tmt_thread_enter). */
extern __thread struct tmt_tx *txreg_self_tx __attribute__((tls_model("initial-exec")));
static inline struct tmt_tx *txreg_self(void) { return txreg_self_tx; }

/* A descriptor for the calling thread, zeroed but for the registry's fields
 * (thread_id, live, next) and stm.active_rv = UINT64_MAX; reuses one of an
 * exited thread. NULL with error_set() when out of memory. Does not make it
 * the calling thread's own: txreg_set_self does, once it is ready. */
struct tmt_tx *txreg_enter(void);
void txreg_set_self(struct tmt_tx *tx);
/* The thread leaves, without the lock: the descriptor becomes reusable
 * (its logs and statistics are kept; the next thread counts on). */
void txreg_exit(struct tmt_tx *tx);
/* Marks a descriptor that txreg_enter returned reusable again (its thread
 * could not attach). */
void txreg_abandon(struct tmt_tx *tx);

/* Grows tx->site_stats to hold site `id` (off the hot path: the first
 * transaction of a thread at a new site). Aborts the process when out of
 * memory: the transaction about to run could not be counted. */
void txreg_grow_sites(struct tmt_tx *tx, uint32_t id);

/* The oldest start version among software attempts running now (UINT64_MAX
 * if none): memory unlinked by a commit with a write version <= it can no
 * longer be reached by any transaction. */
uint64_t tx_oldest_active_rv(void);
/* The oldest start version announced by another live thread than `self`,
 * as this thread sees the others now, without fencing them (UINT64_MAX if
 * there is none). A thread that shows no attempt gives its idle floor
 * (tx.h, TX_IDLE; 0 before its first attempt): it may have begun one whose
 * announcement is not visible yet, but that one starts at or above the
 * floor. A shown version is a lower bound all the same: a later attempt of
 * that thread read the clock after it. The caller fences first; a thread it does not see as live
 * registers (a sequentially consistent read-modify-write) after that fence,
 * so its attempts begin after everything the caller did before it.
 * Lock-free: descriptors are never freed. */
uint64_t txreg_oldest_seen_rv(const struct tmt_tx *self);
/* Waits until every software attempt of another thread than `self` has
 * ended (serial mode and fork: the caller has already stopped new ones). */
void txreg_drain_others(const struct tmt_tx *self);
/* Privatization safety (the libitm ABI's): waits until no other thread
 * runs a software attempt whose start version is below `time` (the caller's
 * commit, or the clock read after it). Such an attempt may have read, before
 * that commit, a pointer to memory the caller may now free or use without
 * a transaction. Sound only while begins are fenced (stm_fence_begins): an
 * attempt this does not see announced has not read anything yet. */
void txreg_wait_older(const struct tmt_tx *self, uint64_t time);
/* The thread starts its first transaction (tx_life.c, before that
 * attempt begins): it counts for txreg_alone_self until it exits. A registered
 * thread that never starts one (a program's main thread waiting for its
 * workers) leaves the others alone. */
void txreg_join(struct tmt_tx *tx);
/* Threads that have started a transaction and not exited (txreg_join). */
extern uint32_t txreg_ntx __attribute__((visibility("hidden")));
/* No thread but `self`, the caller's own descriptor, has started a
 * transaction (self may have, or not yet). Read after taking the serial
 * lock, it proves that no other attempt is announced and that a thread
 * joining later sees the lock when it begins: the join's read-modify-write
 * and this load are both sequentially consistent. Inline, with the
 * descriptor passed: a lone thread's every transaction asks. */
static inline int txreg_alone_self(const struct tmt_tx *self)
{
    return __atomic_load_n(&txreg_ntx, __ATOMIC_SEQ_CST) <= (self->joined ? 1u : 0u);
}
/* The same question without ordering, for tx_start's one test of it (a
 * hint: a lone attempt asks txreg_alone_self again under the serial lock). */
static inline int txreg_lone_hint(void) { return __atomic_load_n(&txreg_ntx, __ATOMIC_RELAXED) <= 1; }

/* Joins and leaves (and forks) so far: a hint, read without ordering. */
extern uint32_t txreg_changes __attribute__((visibility("hidden")));
/* Starts alone a thread makes after the registry changed before it runs
 * in place (txreg_lone_settled); tests of the in-place paths set it to 0. */
extern uint32_t txreg_lone_after __attribute__((visibility("hidden")));
/* Whether a thread that finds itself alone at the start of a transaction
 * (txreg_lone_hint) has settled there: 0 for its first txreg_lone_after
 * starts alone since a thread last joined or left (each counted here, its
 * joining start too), 1 from then on. A thread that joins waits for a lone
 * attempt in flight (tx_life.h), and at a program's start that is the main
 * thread's first transactions while the workers it has just released are
 * still on their way to theirs: in STAMP's labyrinth at 2 threads the
 * worker waited 2.3 ms of an 85 ms phase for the main thread's first
 * routing transaction. Those first attempts run the STM instead, beside
 * which a newcomer starts at once. */
static inline int txreg_lone_settled(struct tmt_tx *self)
{
    uint32_t now = __atomic_load_n(&txreg_changes, __ATOMIC_RELAXED);
    if (TX_LIKELY(self->lone_changes == now && self->lone_starts > txreg_lone_after))
        return 1;
    if (self->lone_changes != now) {
        self->lone_changes = now;
        self->lone_starts = 0;
    }
    self->lone_starts++;
    return self->lone_starts > txreg_lone_after;
}
/* The same without counting a start (the general start path, after
 * txreg_lone_settled counted this one, or for a retry). */
static inline int txreg_lone_ready(const struct tmt_tx *self)
{
    uint32_t starts = self->lone_changes == __atomic_load_n(&txreg_changes, __ATOMIC_RELAXED) ? self->lone_starts : 0;
    return starts > txreg_lone_after;
}

/* Sums of every thread's statistics (exited ones included), and of one
 * site's counters. */
void txreg_sum(struct tx_stats *out);
void txreg_sum_site(uint32_t id, struct tx_counts *out);

/* fork(): the lock around it, and the child's registry, where only `self`
 * (may be NULL) still has a thread. */
void txreg_lock(void);
void txreg_unlock(void);
void txreg_fork_child(const struct tmt_tx *self);

#endif
