/*
 * stm.h - the word-based TL2 software transactional memory.
 *
 * Owns: the global version clock, the table of versioned write-lock stripes,
 * and the software half of a descriptor (tx->stm): read set, redo log, commit.
 * A conflict is undone here and ends in tx_restart() (the single restart
 * path, tx_upcall.h: the one call into tx_life.c), never in a return code.
 * Never records trace events (tx_life.c and the accessors do, around these
 * calls) and never allocates in steady state: the sets grow geometrically
 * and are kept across transactions.
 */
#ifndef TMT_STM_H
#define TMT_STM_H

#include <stdint.h>

#include "tx.h"
#include "tx_util.h"

/* Allocates the stripe table (2^config.stripes_log2 words). 0 or -1. */
int stm_init(void);
/* Orders every other thread's earlier stores (a begin's announced start
 * version) before this thread's later loads: a full fence on every CPU
 * running the process (membarrier), or nothing when begins fence themselves.
 * For the threads that scan the announcements (reclamation, serial drain). */
void stm_fence_others(void);
/* From now on every begin fences its announcement itself, so that a thread
 * can see all running attempts without fencing the others (the libitm ABI's
 * privatization safety looks after every commit: txreg_wait_older). Called
 * before any transaction runs; stm_init keeps it. */
void stm_fence_begins(void);
#ifdef TMT_TEST_HOOKS
/* Test builds only: log2 of the stripe count in force, log2 of the bytes a
 * stripe covers, the stripe an address maps to, and the stripe word itself
 * (tests lock stripes by hand through it). */
unsigned stm_stripes_log2(void);
unsigned stm_stripe_shift(void);
uint64_t stm_stripe_index(uintptr_t addr);
uintptr_t *stm_stripe_word(uintptr_t addr);
#endif
/* The global version clock now (reclamation stamps what a commit that
 * wrote nothing frees with it). */
uint64_t stm_clock_now(void);

/* A thread takes the descriptor: the accessors' gate closed (tx_stm.gate),
 * the read set and the redo log's index allocated, so that stm_begin tests
 * for neither. */
void stm_thread_enter(struct tmt_tx *tx);

#define STM_WLINEAR 16 /* redo logs up to this size are searched linearly */

/* stm.c's state that every begin reads: stm_begin is inline (in the life
 * cycle's start, which then makes no call for it). Hidden: loaded
 * PC-relative, not through the GOT. */
/* The clock has its own cache line: every update commit increments it. */
struct stm_clock_line {
    uint64_t now;
    char pad[56];
} __attribute__((aligned(64)));
/* The serial lock: trace thread id of the serial attempt, 0 when none. Read
 * by every software begin, written twice per serial attempt. `lone`: 1
 * while a lone thread's attempt runs in place without the lock
 * (stm_lone_mark). */
struct stm_serial_line {
    uint32_t owner;
    uint32_t lone;
    char pad[56];
} __attribute__((aligned(64)));
extern struct stm_clock_line stm_clock __attribute__((visibility("hidden")));
extern struct stm_serial_line stm_serial __attribute__((visibility("hidden")));
/* 1 once membarrier(2) is registered (stm.c, stm_fence_others). */
extern int stm_asym_fence __attribute__((visibility("hidden")));

static inline uint32_t stm_serial_owner(int order) { return __atomic_load_n(&stm_serial.owner, order); }
/* A lone thread's attempt in place (tx_life.h, "A thread alone") excludes
 * the others without the lock's locked instruction, a seventh of its time
 * in tmbench bank at 1 thread, where membarrier is registered: it marks
 * `lone` with a plain store, then looks (the caller's test: no other thread
 * joined, no one holds the lock). A thread that joins, or that takes the
 * lock to fork, makes itself seen first and then fences every CPU
 * (stm_lone_wait_out), so either the lone thread sees it and takes the
 * lock's way, or it sees the mark and waits for its release: the Dekker of
 * stm_announce, with the fence on the rare side. Without membarrier the lone
 * attempt takes the lock. */
static inline void stm_lone_mark(uint32_t on)
{
    __atomic_store_n(&stm_serial.lone, on, on ? __ATOMIC_RELAXED : __ATOMIC_RELEASE);
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* the caller's look comes after the mark */
}
/* Fences every CPU, then waits until no lone attempt holds the mark. */
void stm_lone_wait_out(void);
/* fork()'s child: the mark is the forking thread's own (`mine`: it forked
 * inside its lone attempt) or nobody's. Another thread may have marked for
 * an instant before it saw the fork's lock and cleared it; the child
 * inherits that instant, and the thread that would clear it is gone. */
static inline void stm_lone_fork_child(int mine)
{
    __atomic_store_n(&stm_serial.lone, mine ? 1u : 0u, __ATOMIC_RELAXED);
}
/* A serial attempt holds the lock: stm_begin's wait, out of line. */
__attribute__((noinline, cold)) void stm_serial_wait(struct tx_stm *s);

/* Two 32-bit fields that follow each other (first, second) as one 64-bit
 * word, whatever the byte order. */
static inline uint64_t stm_pair(uint32_t first, uint32_t second)
{
    union {
        uint32_t half[2];
        uint64_t word;
    } u = { .half = { first, second } };
    return u.word;
}

/* Announces the attempt's start version `rv` (s->active_rv) to memory
 * reclamation (txmem.c) and the serial drain. It must be ordered before the
 * loads that follow (a full fence): either a reclaiming thread sees this
 * attempt running, or this attempt's reads see the commit that unlinked
 * what the reclaimer frees (and abort on it). With membarrier those threads
 * fence every CPU (stm_fence_others) before they look, so a store the
 * compiler keeps in place is enough here: a sequentially consistent store
 * (an xchg) also waits for every store before it, a trace record's among
 * them. */
static inline void stm_announce(struct tx_stm *s, uint64_t rv)
{
    if (TX_LIKELY(stm_asym_fence)) {
        __atomic_store_n(&s->active_rv, rv, __ATOMIC_RELEASE);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
    } else {
        __atomic_store_n(&s->active_rv, rv, __ATOMIC_SEQ_CST);
    }
}

/* Starts a software attempt: takes the start version, empties the sets.
 * `fast`: the accessors' inline paths serve the attempt (opens the gate);
 * 0 when the tracer records accesses, whose path runs stm_read/stm_write.
 * The sets are allocated (stm_thread_enter) and no lock is held (every
 * commit and rollback released its locks). */
static inline void stm_begin(struct tmt_tx *tx, int read_only, int fast)
{
    struct tx_stm *s = &tx->stm;
    /* rinc, ro and wn, wlimit: constants either way. */
    s->rmode = read_only ? stm_pair(0, 1) : stm_pair(1, 0);
    s->wmode = read_only ? stm_pair(0, 0) : stm_pair(0, STM_WLINEAR);
    s->rn = 0;
    s->bloom = 0;
    s->gate = fast ? 0 : UINT64_MAX;
    s->rv = __atomic_load_n(&stm_clock.now, __ATOMIC_ACQUIRE);
    stm_announce(s, s->rv);
    /* Dekker with the serial drain: announce (above), then look at the lock;
     * the drain takes the lock, fences, then waits for announced attempts. */
    if (TX_UNLIKELY(stm_serial_owner(__ATOMIC_SEQ_CST) != 0))
        stm_serial_wait(s);
}

/* Transactional accesses (stm_read, stm_write) are static inline in
 * stm_barrier.h, which the accessors include. */

/* Commits in two steps around the linearisation point. stm_commit locks the
 * write set, takes the write version and validates; it returns the write
 * version (0 when the attempt wrote nothing: then it is already done) with
 * the locks still held, so that the caller records the commit before any
 * other thread can see its writes. On a conflict it rolls back and restarts
 * through tx_restart() and does not return. stm_commit_finish writes back and
 * releases the locks with the new version. */
uint64_t stm_commit(struct tmt_tx *tx);
#ifdef TMT_TEST_HOOKS
/* Test builds only (libtmtrace_testhooks): called by stm_commit with every
 * lock of the commit held, before the write version is taken, so that a test
 * can deschedule a lock holder inside its commit path. */
extern void (*stm_test_locked_hook)(const struct tmt_tx *tx);
/* Test builds only: called on each poll (0, 1, ...) that finds locked the
 * stripe a read met locked, while the read or its retry waits for the
 * release. */
extern void (*stm_test_busy_hook)(uintptr_t *stripe, unsigned poll);
/* Test builds only: called by a commit of one or two whole words right
 * after it released the stripe of its first word, so that a test can take
 * that stripe as another commit would. */
extern void (*stm_test_released_hook)(uintptr_t *stripe);
/* Nonzero: the redo log's index and the commit's lock array fail to grow
 * as if memory had run out. */
extern int stm_test_fail_allocs;
/* Calls of stm_fence_others so far (each fences every CPU of the process). */
extern unsigned long stm_test_fences;
#endif
/* Polls of a busy stripe before a commit gives up on it, before a read that
 * met it aborts, and before that read's retry starts anyway. */
#define STM_LOCK_SPINS 256
void stm_commit_finish(struct tmt_tx *tx, uint64_t wv);
/* Both steps at once, for a commit that records nothing in between (an
 * untraced one): stm_commit_inline (stm_commit.h), in the caller's frame. */
/* The commit's out-of-line parts (stm.c), for stm_commit.h's inline
 * commit: a lock array grown to the write set, the rest of the log locked
 * the general way once a stripe was busy (aborts if it stays so), the
 * reads validated when another update committed meanwhile (aborts if one
 * no longer holds), a word only partly written stored byte by byte. */
__attribute__((noinline, cold)) void stm_lgrow(struct tx_stm *s);
__attribute__((noinline)) void stm_lock_rest(struct tmt_tx *tx, const struct tx_wentry *e);
__attribute__((noinline)) void stm_commit_validate(struct tmt_tx *tx);
__attribute__((noinline)) void stm_writeback_part(const struct tx_wentry *e);
/* What this attempt's lock records say about it. */
static inline uint64_t stm_holder_of(const struct tmt_tx *tx)
{
    return tf_abort_held(tx_trace_thread(tx), tx->instance);
}

/* The attempt is over; `seen`: the latest clock value this thread has
 * seen (tx.h, TX_IDLE). consecutive_aborts is left alone: an abort marks
 * the transaction retried, and the next prepare clears it (stm_prepare). */
static inline void stm_idle(struct tx_stm *s, uint64_t seen)
{
    s->gate = UINT64_MAX;
    __atomic_store_n(&s->active_rv, TX_IDLE | seen, __ATOMIC_RELEASE);
}

/* Undoes whatever a failed attempt holds (commit locks) and empties the sets. */
void stm_rollback(struct tmt_tx *tx);
/* A new transaction: no software abort yet (backoff starts over), and no
 * stripe to wait for: one left by an attempt whose retry ran serially must
 * not be polled later, when the table may have been replaced (stm_init). */
static inline void stm_prepare(struct tmt_tx *tx)
{
    tx->stm.consecutive_aborts = 0;
    tx->stm.busy_stripe = NULL;
}
/* Randomized exponential backoff after repeated aborts (bounded). */
void stm_backoff_wait(struct tmt_tx *tx);
static inline void stm_backoff(struct tmt_tx *tx)
{
    /* The first retry runs at once, unless its predecessor met a lock. */
    if (TX_UNLIKELY(tx->stm.consecutive_aborts >= 2 || tx->stm.busy_stripe != NULL))
        stm_backoff_wait(tx);
}
/* Serial (irrevocable) mode, see tx_life.h. The serial lock admits one serial
 * attempt at a time (`me`: the holder's trace thread id, never 0); software
 * attempts that begin while it is held wait in stm_begin until it is free.
 * Excluding the other paths, fencing the other CPUs (stm_fence_others) so
 * that it sees their announced begins, and draining running attempts are
 * the caller's (tx_life.c, with tx_registry.c, which knows every descriptor). */
void stm_serial_lock(uint32_t me);
void stm_serial_unlock(void);
/* The holder's id, 0 when free. */
uint32_t stm_serial_holder(void);
/* The serial attempt itself: in-place accesses with an undo log; commit
 * takes a write version and stamps it on the stripes written (0 if none),
 * unless `alone`: the caller found that no other thread had started a
 * transaction after it took the serial lock (txreg_alone_self), so none can be
 * running or start before the unlock, and every later attempt starts at or
 * above the write version (see stm_serial_commit). */
void stm_serial_begin(struct tmt_tx *tx, int alone);
/* Inline: the libitm ABI's barriers read in place through it when a lone
 * thread runs serially. */
static inline uint64_t stm_serial_read(struct tmt_tx *tx, uintptr_t addr, unsigned size)
{
    tx->stm.serial_reads++;
    return tx_mem_load(addr, size);
}
void stm_serial_write(struct tmt_tx *tx, uintptr_t addr, uint64_t value, unsigned size);
uint64_t stm_serial_commit(struct tmt_tx *tx);
void stm_serial_rollback(struct tmt_tx *tx);
/* Closed nesting inside a serial attempt (the libitm ABI's cancel of an
 * inner transaction): the undo log's length now, and undoing only the
 * writes made since that mark, newest first; `undone` (may be NULL) hears
 * each restored location with the value put back, for the caller's trace. */
uint32_t stm_serial_mark(const struct tmt_tx *tx);
void stm_serial_rollback_to(struct tmt_tx *tx, uint32_t mark,
                            void (*undone)(struct tmt_tx *tx, uintptr_t addr, uint64_t value, unsigned size));
#endif
