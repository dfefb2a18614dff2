/*
 * tx_life.c - a transaction's life on its descriptor: prepare, start
 * (hardware, software or serial attempt), commit, and the single
 * abort/restart path (see tx_life.h and tx_upcall.h for the contract).
 *
 * Owns: the attempt state of the descriptor (mode, depth, flags, attempt,
 * instance, cancelled, conflicts, serial_next, restart; the head's flags,
 * which tmtrace.h's inline readers and allocation wrappers test), the commit and
 * abort counters, serial mode's entry and exit, contention management
 * (TMTRACE_SERIAL_AFTER), the loop of hardware attempts (htm.c gives the
 * verdicts and runs each attempt) and the one place where START, COMMIT,
 * ABORT and SERIAL are recorded. Calls down into stm.c, htm.c, txmem.c and
 * tx_registry.c, which call back only tx_restart (tx_upcall.h).
 * Never takes a lock on a normal attempt's path; never allocates (the logs
 * belong to their modules).
 */
#include "tx_life.h"

#include <x86intrin.h>

#include "abort_pc.h"
#include "clock.h"
#include "config.h"
#include "htm.h"
#include "site.h"
#include "stm.h"
#include "stm_commit.h"
#include "trace_format.h"
#include "tx_registry.h"
#include "tx_util.h"
#include "txmem.h"

int tx_lone_in_place = 1;

/* ---- threads ---------------------------------------------------------------- */

/* What aborts and hardware attempts leave in the descriptor for the next
 * transaction: none retried, cancelled or demoted yet, no attempt counted. */
static inline void tx_forget_aborts(struct tmt_tx *tx)
{
    tx->retried = 0;
    tx->ro_demoted = 0;
    tx->attempt = 0;
    tx->cancelled = 0;
    htm_prepare(tx);
    stm_prepare(tx);
    tx->conflicts = 0;
}

struct tmt_tx *tx_thread_enter(void)
{
    struct tmt_tx *tx = txreg_enter();
    if (tx == NULL)
        return NULL;
    tx->mode = TX_MODE_NONE;
    tx->depth = 0;
    /* A descriptor that an exited thread left: what aborts of its last
     * transaction left behind goes with it. tx_prepare would clear it at
     * this thread's first transaction, and the mark below with it: that
     * thread would then run transactions without ever joining, and a
     * thread that believed itself alone would commit in place beside it. */
    tx_forget_aborts(tx);
    /* Not counted among the threads in transactions yet: the first start
     * must go out of line (tx_start_other) to join them. */
    tx->attempt = 1;
    uint64_t seed = config.seed ? (uint64_t)config.seed : __rdtsc() ^ (uintptr_t)tx;
    tx->rng = (seed + 0x9E3779B97F4A7C15ull * tx->thread_id) | 1;
    stm_thread_enter(tx);
    if (tb_attach(&tx->trace) != 0) {
        txreg_abandon(tx);
        return NULL;
    }
    tx_watch_allocs(tx);
    txreg_set_self(tx);
    return tx;
}

void tx_thread_exit(struct tmt_tx *tx)
{
    txmem_thread_exit(tx);
    tb_detach(&tx->trace);
    txreg_exit(tx);
}

/* An outermost start: in a transaction from here on (the head's
 * alloc_watch says so). `traced`: whether the thread is, a constant where
 * the caller knows it. */
static inline void tx_enters(struct tmt_tx *tx, int traced)
{
    tx->depth = 1;
    tx->head.alloc_watch = tx_alloc_watch(1, traced);
}

/* The transaction ended (committed, aborted or cancelled). `traced` as
 * tx_enters takes it; 1 where the caller cannot tell cheaply is safe
 * (tmt_malloc tests the level itself). */
static inline void tx_leaves(struct tmt_tx *tx, int traced)
{
    tx->depth = 0;
    tx->head.alloc_watch = tx_alloc_watch(0, traced);
}

/* ---- the attempt_pad measuring build ------------------------------------------ */

/* meson -Dattempt_pad (docs/tracer.md, "What moves the abort rates"): every
 * attempt spins TMT_ATTEMPT_PAD_SPINS iterations, either outside its window
 * (1: after its commit, where a tracer's work after the release lies) or
 * inside it (2: after its snapshot, before the body). Time added outside
 * makes the other threads commit less often per attempt of this one, so
 * an attempt meets fewer conflicting commits; time added inside also
 * widens the window that meets them. Each iteration depends on the one
 * before, so the loop takes at least one cycle per iteration however the
 * compiler unrolls it. */
#ifndef TMT_ATTEMPT_PAD
#define TMT_ATTEMPT_PAD 0
#define TMT_ATTEMPT_PAD_SPINS 0
#endif
enum { TX_PAD_OUTSIDE = 1, TX_PAD_INSIDE = 2 };

static inline void tx_pad(int where)
{
    if (TMT_ATTEMPT_PAD != where)
        return;
    for (unsigned long n = TMT_ATTEMPT_PAD_SPINS; n != 0; n--)
        __asm__ volatile("" : "+r"(n));
}

/* ---- START and ABORT records ------------------------------------------------- */

/* The START record of the attempt that starts now (`flags`: enum
 * tf_start_flags; RETRY is added after an abort). */
static inline void tx_ev_start(struct tmt_tx *tx, unsigned flags)
{
    tb_ev_start(&tx->trace, tx->site_id, tx->instance, flags | (tx->attempt ? TF_START_RETRY : 0), tx->attempt);
}

/* tx_ev_start out of line, for tx_attempt_starts: inlined, the hook's
 * stamping made every start save six registers for it, traced or not. */
__attribute__((noinline)) static void tx_record_start(struct tmt_tx *tx, unsigned flags) { tx_ev_start(tx, flags); }

/* An attempt of the current transaction starts: a new instance id and its
 * START record. Hardware attempts call it before _xbegin. */
static inline void tx_attempt_starts(struct tmt_tx *tx, unsigned flags)
{
    tx->instance++;
    if (TX_UNLIKELY(tx_traced(tx)))
        tx_record_start(tx, flags);
    else if (TMT_CLOCK_FLOOR)
        clock_floor_read(); /* where the START is stamped */
}

/* Counts and records an abort without restarting: tx_restart's, and a real
 * RTM abort's, which arrives back in htm_begin. */
static void tx_abort_record(struct tmt_tx *tx, unsigned reason, uint64_t where, uint64_t found)
{
    tx_count(&tx->site_stats[tx->site_id].aborts); /* the totals are their sums (txreg_sum) */
    tx_count(&tx->site_stats[tx->site_id].aborts_by_reason[reason]);
    tb_ev_abort(&tx->trace, reason, where, found);
    /* Found at a read: where in the program (stm_read_conflict's abort_pc). */
    if ((reason == TMT_ABORT_READ_LOCKED || reason == TMT_ABORT_READ_VERSION) && tx_traced(tx))
        apc_record(&tx->trace, tx->stm.abort_pc);
    tx->attempt++;
    tx->retried = 1;
}

/* ---- a transaction ------------------------------------------------------------ */

/* A site's first transaction in this thread (or in the process): registers
 * the site and grows the thread's per-site counters. Out of line, so that
 * tx_prepare saves no registers. */
__attribute__((noinline, cold)) static jmp_buf *tx_prepare_new_site(struct tmt_tx *tx, tmt_site *site,
                                                                     unsigned flags)
{
    uint32_t id = site_id(site);
    if (id >= tx->nsite_stats)
        txreg_grow_sites(tx, id);
    return tx_prepare(tx, site, flags);
}

jmp_buf *tx_prepare(struct tmt_tx *tx, tmt_site *site, unsigned flags)
{
    if (tx->depth > 0) {
        /* Flat nesting: the outer restart point stays in force. */
        tx->nested_flags = flags;
        return &tx->scratch;
    }
    uint32_t id = __atomic_load_n(&site->id, __ATOMIC_ACQUIRE);
    if (TX_UNLIKELY(id == 0 || id >= tx->nsite_stats))
        return tx_prepare_new_site(tx, site, flags);
    tx->site_id = id;
    tx->restart = NULL;
    tx->flags = flags;
    /* What aborts and hardware attempts leave behind; a transaction that
     * had neither (most) left it as it found it. */
    if (TX_UNLIKELY(tx->retried))
        tx_forget_aborts(tx);
    tx->serial_next = (flags & TMT_TX_IRREVOCABLE) ? TF_SERIAL_REQUESTED : 0;
    return &tx->env;
}

/* ---- serial mode ---------------------------------------------------------------- */

/* The serial attempt holds the exclusion: its state, and in place from now
 * on. */
static inline void tx_serial_begins(struct tmt_tx *tx, int alone)
{
    stm_serial_begin(tx, alone);
    tx->mode = TX_MODE_SERIAL;
    tx_count(&tx->stats.serial);
    /* The program's reads may now be plain loads (tmtrace.h's inline
     * readers), unless they must be recorded: a thread at level all (the
     * level is the attempt's, set by its START: a TMTRACE_DETAIL attempt
     * records them), or a build that stamps every access (TMT_CLOCK_FLOOR
     * >= 2). At `tx` nothing per access is recorded, and a lone thread's
     * reads through the barrier took 4 times the untraced in-place time of
     * tmbench bank at 1 thread (docs/tracer.md, "A thread alone, traced").
     * Plain loads count nothing: the COMMIT's read count is then 0, which
     * the SERIAL record says (TF_SERIAL_UNCOUNTED). */
    tx->head.in_place = !tb_records_accesses(&tx->trace) && TMT_CLOCK_FLOOR < 2;
}

/* Whether the serial attempt that begins now counts its reads for the
 * COMMIT: not in place through the native API (whose inline readers and
 * in-place branch are plain loads); libtmtrace-itm (a front end with its
 * own checkpoint, `restart`) counts them in place too (stm_serial_read). */
static inline unsigned tx_serial_counts(const struct tmt_tx *tx)
{
    return tx->head.in_place && tx->restart == NULL ? TF_SERIAL_UNCOUNTED : 0;
}

/* Starts a serial attempt: START, exclusion of everything else, SERIAL. */
__attribute__((noinline)) static void tx_start_serial(struct tmt_tx *tx)
{
    unsigned why = tx->serial_next;
    tx_attempt_starts(tx, TF_START_SERIAL);
    stm_serial_lock(tx->thread_id);
    if (htm_path() != TX_MODE_NONE)
        htm_sw_enter(tx); /* hardware attempts abort; an emulated one ends first */
    /* The drain must see every announced begin: fence the other CPUs first.
     * A thread alone has nothing to drain: no other thread has joined, so
     * none has announced an attempt, and one that joins from now on sees
     * the lock when it begins (txreg_alone_self). */
    int alone = txreg_alone_self(tx);
    if (!alone) {
        stm_fence_others();
        txreg_drain_others(tx);
    }
    tx_serial_begins(tx, alone);
    /* Alone, the attempt waited for no one: its SERIAL needs no ordered
     * stamp (an rdtscp was most of a lone traced start). */
    tb_ev_serial(&tx->trace, why, tx->conflicts, tx_serial_counts(tx), !alone);
    tx_pad(TX_PAD_INSIDE);
}

/* Ends the serial attempt's exclusion (commit or undo already done). */
static void tx_end_serial(struct tmt_tx *tx)
{
    tx->head.in_place = 0;
    htm_sw_leave(tx);
    if (tx->stm.serial_marked) {
        tx->stm.serial_marked = 0;
        stm_lone_mark(0);
    } else {
        stm_serial_unlock();
    }
}

void tx_serial_now(struct tmt_tx *tx, unsigned why)
{
    if (tx->mode == TX_MODE_SERIAL)
        return;
    if (tx->mode == TX_MODE_HTM || tx->mode == TX_MODE_HTM_EMU)
        htm_abort_code(tx, HTM_CODE_NEED_SERIAL); /* the policy sets serial_next: a store here would roll back */
    tx->serial_next = why;
    tx_abort(tx, TMT_ABORT_USER_RETRY, 0, 0);
}

/* ---- start ---------------------------------------------------------------------- */

/* A nested begin: flat nesting, but the inner block's flags may move the
 * whole transaction to the STM or to serial mode. */
__attribute__((noinline)) static int tx_start_nested(struct tmt_tx *tx)
{
    if ((tx->nested_flags & TMT_TX_NO_HTM) && (tx->mode == TX_MODE_HTM || tx->mode == TX_MODE_HTM_EMU))
        htm_abort_code(tx, HTM_CODE_NEED_STM);
    if (TX_UNLIKELY(tx->nested_flags & TMT_TX_IRREVOCABLE))
        tx_serial_now(tx, TF_SERIAL_REQUESTED);
    tx->depth++;
    return 1;
}

/* How a software attempt's start records itself: TX_REC_ANY tests the trace
 * level (tx_attempt_starts), TX_REC_OFF knows it is off, TX_REC_INLINE knows
 * it is on and records the START inline (tx_start_traced). */
enum { TX_REC_ANY, TX_REC_OFF, TX_REC_INLINE };

static inline void tx_start_stm(struct tmt_tx *tx, int path, int rec)
{
    /* A first attempt (tx_start's and tx_start_traced's: TX_REC_OFF and
     * TX_REC_INLINE; retries take tx_start_other) has nothing to back off
     * from and cannot have been demoted. */
    int first = rec != TX_REC_ANY;
    if (!first)
        stm_backoff(tx);
    if (path != TX_MODE_NONE)
        htm_sw_enter(tx);
    int ro = (tx->flags & TMT_TX_READ_ONLY) && (first || !tx->ro_demoted);
    tx->mode = TX_MODE_STM;
    unsigned flags = ro ? TF_START_READ_ONLY : 0;
    if (rec == TX_REC_ANY) {
        tx_attempt_starts(tx, flags);
    } else {
        tx->instance++;
        /* A first attempt: attempt 0, no RETRY, which the compiler cannot
         * know from tx->attempt (tx_start tested it). */
        if (rec == TX_REC_INLINE)
            tb_ev_start(&tx->trace, tx->site_id, tx->instance, flags, 0);
    }
    stm_begin(tx, ro, rec == TX_REC_OFF || !tb_records_accesses(&tx->trace));
    tx_pad(TX_PAD_INSIDE);
}

/* Hardware attempts for the transaction, under htm.c's policy: RUNNING
 * (inside an attempt on `path`), FELL_BACK to the STM (or to serial mode,
 * serial_next set), or CANCELLED by the program. A real RTM abort returns
 * from htm_begin with its status; an emulated one restarts through
 * tx_restart and is back here through tx_start_other. */
enum tx_htm_outcome { TX_HTM_FELL_BACK, TX_HTM_RUNNING, TX_HTM_CANCELLED };

/* Out of line, so that the software starts that share tx_start_other while
 * a hardware path is in force save no registers for the loop. */
__attribute__((noinline)) static enum tx_htm_outcome tx_start_htm(struct tmt_tx *tx, int path)
{
    for (;;) {
        switch (htm_next(tx)) {
        case HTM_NEXT_CANCEL:
            return TX_HTM_CANCELLED;
        case HTM_NEXT_SERIAL:
            tx->serial_next = TF_SERIAL_REQUESTED; /* tx_start_other runs it serially */
            return TX_HTM_FELL_BACK;
        case HTM_NEXT_FALLBACK:
            return TX_HTM_FELL_BACK;
        case HTM_NEXT_TRY:
            break;
        }
        tx_attempt_starts(tx, htm_start_flags(tx, path));
        tx->retried = 1; /* htm_begin counts the attempt */
        uint32_t status = htm_begin(tx, path);
        if (status == HTM_STARTED)
            return TX_HTM_RUNNING; /* the caller sets the mode, inside the attempt */
        tx_abort_record(tx, htm_abort_reason(status), 0, status);
    }
}

/* An outermost start that is not a first software attempt: a retry (the
 * block may have been cancelled), a serial attempt, a thread alone (in
 * place, tx_life.h), or a hardware path is in force. */
__attribute__((noinline)) static int tx_start_general(struct tmt_tx *tx, int path, uintptr_t frame)
{
    if (tx->cancelled) {
        tx->cancelled = 0;
        return 0;
    }
    if (TX_UNLIKELY(!tx->joined)) {
        txreg_join(tx); /* before this attempt announces itself, so a lone one sees it (tx_registry.h) */
        stm_lone_wait_out(); /* and then no lone attempt runs (stm_lone_mark) */
        (void)txreg_lone_settled(tx); /* the joining start is the first of its settling */
        tx->attempt = 0;
    }
    tx_enters(tx, tx_traced(tx));
    /* A front end with its own checkpoint starts here from its own frames,
     * not the block's, and keeps its stack out of the undo log (itm/). */
    tx->frame = tx->restart == NULL ? frame : 0;
    if (tx_lone_in_place && !tx->serial_next && path == TX_MODE_NONE && tx->restart == NULL && txreg_alone_self(tx) &&
        txreg_lone_ready(tx))
        tx->serial_next = TF_SERIAL_ALONE;
    if (TX_UNLIKELY(tx->serial_next)) {
        tx_start_serial(tx);
        return 1;
    }
    if (path != TX_MODE_NONE && !(tx->flags & TMT_TX_NO_HTM) && !tx->htm.fell_back && config.htm_retries > 0) {
        switch (tx_start_htm(tx, path)) {
        case TX_HTM_RUNNING:
            tx->mode = path; /* inside the hardware attempt: rolled back with it */
            return 1;
        case TX_HTM_CANCELLED:
            tx_leaves(tx, tx_traced(tx));
            return 0;
        case TX_HTM_FELL_BACK:
            break;
        }
        if (tx->serial_next) {
            tx_start_serial(tx);
            return 1;
        }
    }
    tx_start_stm(tx, path, TX_REC_ANY);
    return 1;
}

/* The serial exclusion for a lone thread's attempt in place: 1 when the
 * thread is still alone under it, else 0 with it given back (another
 * thread joined since the caller looked, or holds the lock to fork). With
 * membarrier, the mark (stm_lone_mark) instead of the lock. */
static inline int tx_lock_alone(struct tmt_tx *tx)
{
    if (TX_LIKELY(stm_asym_fence)) {
        stm_lone_mark(1);
        if (TX_LIKELY(txreg_alone_self(tx) && stm_serial_owner(__ATOMIC_SEQ_CST) == 0)) {
            tx->stm.serial_marked = 1;
            return 1;
        }
        stm_lone_mark(0);
        return 0;
    }
    stm_serial_lock(tx->thread_id);
    if (TX_LIKELY(txreg_alone_self(tx)))
        return 1;
    stm_serial_unlock();
    return 0;
}

/* A lone untraced thread's attempt (tx_life.h, "A thread alone"):
 * tx_start_serial with nothing to record, no hardware path to keep out and
 * no one to drain. Its own function, reached by a tail call, so that the
 * start a lone thread pays at every transaction saves no registers for the
 * others' work. When another thread has joined since the caller looked,
 * the attempt starts the general way. */
__attribute__((noinline)) static int tx_start_in_place(struct tmt_tx *tx, uintptr_t frame)
{
    if (TX_UNLIKELY(!tx_lock_alone(tx)))
        return tx_start_general(tx, TX_MODE_NONE, frame);
    tx->instance++;
    if (TMT_CLOCK_FLOOR)
        clock_floor_read(); /* where a traced start is stamped */
    tx_enters(tx, 0); /* in place: untraced */
    tx->frame = frame;
    tx->serial_next = TF_SERIAL_ALONE;
    tx_serial_begins(tx, 1);
    tx_pad(TX_PAD_INSIDE);
    return 1;
}

/* A lone traced thread's attempt: tx_start_in_place with tx_start_serial's
 * records, START (which sets the attempt's level) and SERIAL, and in place
 * unless that level records accesses (tx_serial_begins). A copy of its own
 * for the reason tx_start_traced is. */
__attribute__((noinline)) static int tx_start_in_place_traced(struct tmt_tx *tx, uintptr_t frame)
{
    if (TX_UNLIKELY(!tx_lock_alone(tx)))
        return tx_start_general(tx, TX_MODE_NONE, frame);
    tx->instance++;
    tx_ev_start(tx, TF_START_SERIAL);
    tx_enters(tx, 1);
    tx->frame = frame;
    tx->serial_next = TF_SERIAL_ALONE;
    tx_serial_begins(tx, 1);
    tb_ev_serial(&tx->trace, TF_SERIAL_ALONE, tx->conflicts, tx_serial_counts(tx), 0);
    return 1;
}

/* An outermost start that is not a first software attempt of a thread
 * among others: a lone thread's first attempt in place, or the rest. */
static inline int tx_start_other(struct tmt_tx *tx, int path, uintptr_t frame)
{
    if (!(tx->attempt | tx->serial_next) && path == TX_MODE_NONE && tx->joined && tx->restart == NULL &&
        tx_lone_in_place && txreg_lone_hint() && txreg_lone_settled(tx))
        return tx_traced(tx) ? tx_start_in_place_traced(tx, frame) : tx_start_in_place(tx, frame);
    return tx_start_general(tx, path, frame);
}

/* A plain software attempt of a traced thread: tx_start with the START
 * record inline. A separate copy, reached by a tail call, so that neither
 * copy pays for the other: the untraced start keeps no register for the
 * record, and the traced one makes no call and no spill around it (what
 * the call cost, docs/design.md, "The hot path"). */
static inline void tx_start_traced_here(struct tmt_tx *tx)
{
    tx_enters(tx, 1);
    tx_start_stm(tx, TX_MODE_NONE, TX_REC_INLINE);
}
__attribute__((noinline)) static int tx_start_traced(struct tmt_tx *tx)
{
    tx_start_traced_here(tx);
    return 1;
}

int tx_start(struct tmt_tx *tx, uintptr_t frame)
{
    if (tx->depth > 0)
        return tx_start_nested(tx);
    int path = htm_path();
    /* A retry (attempt > 0: every abort counts one; cancelled, demoted and
     * backoff only follow one), a serial or hardware attempt, or a thread
     * that may be alone. */
    if (TX_UNLIKELY(tx->attempt | tx->serial_next) || path != TX_MODE_NONE || TX_UNLIKELY(txreg_lone_hint()))
        return tx_start_other(tx, path, frame);
    if (TX_UNLIKELY(tx_traced(tx)))
        return tx_start_traced(tx);
    tx_enters(tx, 0);
    if (TMT_CLOCK_FLOOR)
        clock_floor_read(); /* where tx_start_traced stamps its START */
    tx_start_stm(tx, TX_MODE_NONE, TX_REC_OFF);
    return 1;
}

/* tx_begin's path for everything but a plain first software attempt of an
 * untraced thread among others: what tmt_tx_prepare does, and a nested
 * begin's start too (its aborts land at the outer block's checkpoint, which
 * is filled), and a traced thread's plain first software attempt among
 * others, tx_start_traced's, with its START recorded before the checkpoint
 * is filled (no such start restarts before it): one call to begin, as an
 * untraced transaction makes, not tmt_tx_prepare's and tmt_tx_start's. Any
 * other outermost attempt is left to the tmt_tx_start that follows the
 * checkpoint: a hardware or serial start may abort and restart before the
 * checkpoint would be filled. */
__attribute__((noinline)) static jmp_buf *tx_begin_other(struct tmt_tx *tx, tmt_site *site, unsigned flags)
{
    jmp_buf *env = tx_prepare(tx, site, flags);
    if (tx->depth > 0)
        (void)tx_start_nested(tx);
    else if (!(tx->attempt | tx->serial_next) && tx_traced(tx) && htm_path() == TX_MODE_NONE && !txreg_lone_hint())
        tx_start_traced_here(tx);
    return env;
}

/* tx_begin's start for an untraced thread that may be alone: in place
 * when it is (tx_start_other decides, as for tmt_tx_start). No start there
 * restarts before the checkpoint is filled: none is a hardware attempt. */
__attribute__((noinline)) static jmp_buf *tx_begin_alone(struct tmt_tx *tx, uintptr_t frame)
{
    (void)tx_start_other(tx, TX_MODE_NONE, frame);
    return &tx->env;
}

/* A plain first attempt's begin (tx_begin's, tx_begin_traced's): the
 * transaction's site and flags, nothing to restart from; returns whether
 * the thread may be alone (the caller then starts another way). */
static inline int tx_begin_plain(struct tmt_tx *tx, uint32_t id, unsigned flags)
{
    tx->site_id = id;
    tx->restart = NULL;
    tx->flags = flags;
    tx->serial_next = 0;
    return txreg_lone_hint();
}

/* tx_begin's start for a traced thread's plain first software attempt
 * among others (the head's alloc_watch says traced and nothing else):
 * tx_begin's own path with the START inline, in a function of its own so
 * that the common traced start does not pass through tx_begin_other's
 * tests of every other state or save the registers they need. */
__attribute__((noinline)) static jmp_buf *tx_begin_traced(struct tmt_tx *tx, tmt_site *site, unsigned flags,
                                                          uint32_t id)
{
    /* tx_begin tested the head's flags, `retried` and `attempt` as one
     * word, cheap for its untraced path: a count whose bits lay within the
     * traced flag's would pass that test, so the counts are asked again. */
    if (TX_UNLIKELY(((uint32_t)tx->retried | tx->attempt) != 0))
        return tx_begin_other(tx, site, flags);
    if (TX_UNLIKELY(tx_begin_plain(tx, id, flags)))
        return tx_begin_other(tx, site, flags);
    tx_start_traced_here(tx);
    return &tx->env;
}

jmp_buf *tx_begin(struct tmt_tx *tx, tmt_site *site, unsigned flags, uintptr_t frame)
{
    uint32_t id = __atomic_load_n(&site->id, __ATOMIC_ACQUIRE);
    /* One test for the descriptor's unusual states (nested or traced: the
     * head's alloc_watch is 0 on an untraced thread outside transactions;
     * after an abort or a hardware attempt; a thread that has not joined
     * yet; an irrevocable block; a new site) and the hardware path, one for
     * a thread that may be alone. */
    uint32_t odd = tx->head.alloc_watch | (uint32_t)tx->retried | tx->attempt | (flags & TMT_TX_IRREVOCABLE);
    if (TX_UNLIKELY(odd != 0 || id == 0 || id >= tx->nsite_stats) || htm_path() != TX_MODE_NONE) {
        if (odd == TMT_ALLOC_WATCH_TRACED && id != 0 && id < tx->nsite_stats && htm_path() == TX_MODE_NONE &&
            tx_traced(tx))
            return tx_begin_traced(tx, site, flags, id);
        return tx_begin_other(tx, site, flags);
    }
    if (TX_UNLIKELY(tx_begin_plain(tx, id, flags)))
        return tx_begin_alone(tx, frame);
    tx_enters(tx, 0);
    if (TMT_CLOCK_FLOOR)
        clock_floor_read(); /* as tx_start */
    tx_start_stm(tx, TX_MODE_NONE, TX_REC_OFF);
    return &tx->env;
}

/* ---- commit --------------------------------------------------------------------- */

/* A commit took effect (and was recorded): frees, counters. `traced` as
 * tx_leaves takes it. */
static inline void tx_committed(struct tmt_tx *tx, uint64_t wv, int traced)
{
    txmem_commit(tx, wv);
    tx_pad(TX_PAD_OUTSIDE);
    tx_leaves(tx, traced);
    tx->mode = TX_MODE_NONE;
    tx_count(&tx->site_stats[tx->site_id].commits); /* the totals are their sums (txreg_sum) */
}

static void tx_commit_serial(struct tmt_tx *tx)
{
    uint32_t rn = tx->stm.serial_reads, wn = tx->stm.nundo;
    uint64_t wv = stm_serial_commit(tx);
    tb_ev_commit(&tx->trace, wv, rn, wn); /* nothing else runs: any point before the unlock */
    if (TMT_CLOCK_FLOOR)
        clock_floor_read(); /* where the COMMIT is stamped */
    tx_end_serial(tx);
    tx_committed(tx, wv, tx_traced(tx));
}

/* Every commit but an outermost software one: nested ends, a commit outside
 * a transaction, serial and hardware attempts. Out of line, so that the
 * software commit saves no registers for their records. */
__attribute__((noinline)) static void tx_commit_other(struct tmt_tx *tx)
{
    if (tx->depth > 1) {
        tx->depth--;
        return;
    }
    if (tx->depth == 0)
        return; /* not in a transaction: nothing to commit */
    if (tx->mode == TX_MODE_SERIAL) {
        tx_commit_serial(tx);
        return;
    }
    htm_commit(tx);
    tx_committed(tx, 0, tx_traced(tx));
    tx_count(&tx->stats.htm_commits);
    tb_ev_commit(&tx->trace, 0, 0, 0);
    if (TMT_CLOCK_FLOOR)
        clock_floor_read(); /* where the COMMIT is stamped */
}

/* A software commit's COMMIT record, or a measuring build's clock read
 * where its stamp would be: at the linearisation point, the write version
 * taken and the locks still held, so every attempt that sees this commit's
 * version aborts after this stamp. The record joins the chunk after the
 * release (tx_commit_stm), at `tx` with the write set it carries. */
static inline void tx_commit_stamp(struct tmt_tx *tx, uint64_t wv, int traced)
{
    if (traced)
        tb_ev_commit_carry(&tx->trace, wv, tx->stm.rn, tx->stm.wn);
    else
        clock_floor_read();
}

/* An outermost software commit in two steps with something between them:
 * a traced thread's COMMIT record, or a measuring build's clock read where
 * that record's stamp would be (an untraced commit of a normal build is
 * tx_commit_untraced's, in one step). Write-back, release, frees, counters. */
static inline void tx_commit_stm(struct tmt_tx *tx, int traced)
{
    struct tx_stm *s = &tx->stm;
    /* Each way stamps at the linearisation point (tx_commit_stamp) and
     * leaves the set sizes as they were: a read-only attempt where it
     * stands, one or two whole words without a loop or a call (the
     * untraced commit's way, stm_commit_small, cut in two around the
     * stamp), the rest in stm.c's two steps. */
    uint64_t wv;
    if (stm_commit_read_only(s)) {
        wv = 0;
        tx_commit_stamp(tx, wv, traced);
    } else if (TX_LIKELY(stm_commit_is_small(s))) {
        int two = s->wn == 2;
        uintptr_t *st0 = stm_stripe(s->wset[0].addr);
        uintptr_t *st1 = two ? stm_stripe(s->wset[1].addr) : st0;
        wv = stm_commit_small_locked(tx, st0, st1, two);
        if (TX_UNLIKELY(wv & STM_COMMIT_REST)) {
            wv = stm_commit_rest_locked(tx, wv);
            tx_commit_stamp(tx, wv, traced);
            stm_commit_finish(tx, wv);
        } else {
            tx_commit_stamp(tx, wv, traced);
            stm_commit_small_release(tx, st0, st1, two, wv);
        }
    } else {
        wv = stm_commit(tx);
        tx_commit_stamp(tx, wv, traced);
        stm_commit_finish(tx, wv);
    }
    /* The COMMIT stamped in the window joins the chunk now, the locks
     * released: at tx with its write set (the log stays until the next
     * start), at all alone. */
    if (traced && s->wn)
        tb_ev_wset(&tx->trace, &tx->stm.wset[0].addr, &tx->stm.wset[0].mask, sizeof *tx->stm.wset, tx->stm.wn);
    htm_sw_leave(tx);
    tx_committed(tx, wv, traced);
}

/* The rest of an untraced software commit that tx_commit_untraced leaves. */
__attribute__((noinline)) static void tx_commit_untraced_rest(struct tmt_tx *tx, uint64_t code)
{
    uint64_t wv = stm_commit_rest(tx, code);
    htm_sw_leave(tx);
    tx_committed(tx, wv, 0);
}

/* An untraced thread's software commit, in a function of its own so that
 * tx_commit saves no register before it knows the commit is one. What the
 * inline commit leaves (stm_commit_try: a busy stripe, a newer commit,
 * more than two words), a hardware path's counter and frees go out of line
 * by a tail call: the usual commit saves no register at all. */
__attribute__((noinline)) static void tx_commit_untraced(struct tmt_tx *tx)
{
    if (TMT_CLOCK_FLOOR) {
        tx_commit_stm(tx, 0);
        return;
    }
    uint64_t wv = stm_commit_try(tx);
    if (TX_UNLIKELY((wv & STM_COMMIT_REST) | (uint64_t)tx->htm.sw_counted | tx->mem.nfrees)) {
        tx_commit_untraced_rest(tx, wv);
        return;
    }
    htm_sw_leave(tx);        /* nothing to leave, as tested */
    tx_committed(tx, wv, 0); /* no frees, as tested */
}

/* A traced thread's software commit, a copy of its own for the reason
 * tx_start_traced is. */
__attribute__((noinline)) static void tx_commit_traced(struct tmt_tx *tx) { tx_commit_stm(tx, 1); }

/* A traced thread's read-only software commit: tx_commit_stm's first way,
 * in a function of its own, so that the most common traced commit saves
 * only the descriptor for its record's out-of-line half, not the
 * registers that an update's locking and write set need. */
__attribute__((noinline)) static void tx_commit_traced_read_only(struct tmt_tx *tx)
{
    stm_idle(&tx->stm, tx->stm.rv); /* stm_commit_read_only's */
    tb_ev_commit(&tx->trace, 0, tx->stm.rn, 0);
    htm_sw_leave(tx);
    tx_committed(tx, 0, 1);
}

/* An outermost in-place commit (a lone untraced thread's, mostly): a
 * serial commit with nothing to record, in a function of its own for the
 * reason tx_start_in_place is. A traced attempt in place (at `tx`) ends as
 * every serial one, with its COMMIT. */
__attribute__((noinline)) static void tx_commit_in_place(struct tmt_tx *tx)
{
    if (TX_UNLIKELY(tx_traced(tx))) {
        tx_commit_serial(tx);
        return;
    }
    if (TMT_CLOCK_FLOOR)
        clock_floor_read(); /* where a traced commit is stamped */
    uint64_t wv = stm_serial_commit(tx);
    tx_end_serial(tx);
    tx_committed(tx, wv, 0); /* in place: untraced */
}

void tx_commit(struct tmt_tx *tx)
{
    if (TX_UNLIKELY(tx->depth != 1 || tx->mode != TX_MODE_STM)) {
        if (tx->head.in_place && tx->depth == 1)
            tx_commit_in_place(tx);
        else
            tx_commit_other(tx);
        return;
    }
    if (TX_UNLIKELY(tx_traced(tx))) {
        if (tx->stm.wn == 0)
            tx_commit_traced_read_only(tx);
        else
            tx_commit_traced(tx);
        return;
    }
    tx_commit_untraced(tx);
}

/* ---- abort and restart ------------------------------------------------------------ */

static inline int tx_is_conflict(unsigned reason)
{
    return reason >= TMT_ABORT_READ_LOCKED && reason <= TMT_ABORT_COMMIT_VALIDATE;
}

void tx_restart(struct tmt_tx *tx, unsigned reason, uint64_t where, uint64_t found)
{
    htm_sw_leave(tx); /* a software attempt's announcement (no-op otherwise) */
    txmem_abort(tx);
    tx->mode = TX_MODE_NONE;
    tx_leaves(tx, tx_traced(tx));
    tx_abort_record(tx, reason, where, found);
    /* Contention management: a transaction that keeps losing conflicts
     * runs alone next time, so every transaction commits within
     * TMTRACE_SERIAL_AFTER + 1 software attempts whatever its size. */
    if (tx_is_conflict(reason) && ++tx->conflicts >= (uint64_t)config.serial_after && !tx->serial_next)
        tx->serial_next = TF_SERIAL_CONTENTION;
    if (reason == TMT_ABORT_USER_CANCEL)
        tx->cancelled = 1;
    if (tx->restart)
        tx->restart(tx);
    longjmp(tx->env, 1);
}

void tx_abort(struct tmt_tx *tx, unsigned reason, uint64_t where, uint64_t found)
{
    if (tx->mode == TX_MODE_STM) {
        stm_rollback(tx);
    } else if (tx->mode == TX_MODE_HTM_EMU) {
        htm_rollback(tx, (uint32_t)found);
    } else if (tx->mode == TX_MODE_SERIAL) {
        /* Only the program's retry or cancel ends a serial attempt early;
         * a retry runs the next attempt normally unless the block asks. */
        stm_serial_rollback(tx);
        tx_end_serial(tx);
        if (!(tx->flags & TMT_TX_IRREVOCABLE))
            tx->serial_next = 0;
    }
    tx_restart(tx, reason, where, found);
}

/* The program's retry or cancel: a hardware attempt aborts itself with the
 * code (real RTM resumes at _xbegin), any other through tx_abort. */
__attribute__((noreturn)) static void tx_user_abort(struct tmt_tx *tx, unsigned code, unsigned reason)
{
    if (TX_UNLIKELY(tx->depth == 0))
        tx_misuse(code == HTM_CODE_USER_RETRY
                      ? "tmt_tx_retry: called outside a transaction (no TMT_ATOMIC block runs in this thread)"
                      : "tmt_tx_cancel: called outside a transaction (no TMT_ATOMIC block runs in this thread)");
    if (tx->mode == TX_MODE_HTM || tx->mode == TX_MODE_HTM_EMU)
        htm_abort_code(tx, code);
    tx_abort(tx, reason, 0, 0);
}

void tx_retry(struct tmt_tx *tx) { tx_user_abort(tx, HTM_CODE_USER_RETRY, TMT_ABORT_USER_RETRY); }
void tx_cancel(struct tmt_tx *tx) { tx_user_abort(tx, HTM_CODE_USER_CANCEL, TMT_ABORT_USER_CANCEL); }

__attribute__((noinline)) void tx_demote(struct tmt_tx *tx, uintptr_t addr)
{
    tx->ro_demoted = 1;
    tx_abort(tx, TMT_ABORT_USER_RETRY, addr, 0);
}
