/*
 * tx.h - the per-thread transaction descriptor (struct tmt_tx) and the
 * contract of its life cycle and of the single abort/restart path (tx.c).
 *
 * Owns: the layout of the descriptor that every runtime module works on.
 * Who writes what (only the descriptor's own thread writes it; other threads
 * read just the statistics, with relaxed atomic loads, and `stm.active_rv`
 * and a lock record's owner):
 *   stm       stm.c (the TL2 sets, the start version, serial mode's undo log)
 *   htm       htm.c (attempts, policy state, emulation, its membership of
 *             the software-transaction counter)
 *   mem       txmem.c (allocation logs, limbo)
 *   trace     trace_buffer.h's hooks and trace_buffer.c
 *   stats, site_stats   the counters: each counts its own events with
 *             tx_count (tx.c: commits, aborts, serial attempts; htm.c:
 *             hardware aborts and fallbacks); tx_registry.c folds and sums
 *             them and grows site_stats under its lock
 *   thread_id, next, live   tx_registry.c
 *   the rest (mode, depth, flags, attempt, instance, cancelled, conflicts,
 *             serial_next, restart, env)   tx.c; tx_attempt_starts and
 *             tx_serial_next are how htm.c moves them
 * Never: takes a lock on an attempt's path. Logs (read/write sets, undo and
 * allocation logs) grow with tx_grow, the only allocation on a
 * transaction's path, and are kept across transactions, so in steady state
 * nothing allocates.
 *
 * The abort/restart path. An attempt ends early in one of two ways:
 *  - its own path found the conflict (stm.c: a read or the commit; htm.c: an
 *    emulated hardware abort): that module undoes its own part, then calls
 *    tx_restart, which never calls back into it;
 *  - the program or the runtime asks (tmt_tx_retry/cancel, a read-only block
 *    that writes, serial mode): tx_abort undoes the running attempt through
 *    its module, then calls tx_restart.
 * tx_restart counts and records the ABORT, leaves the software-transaction
 * counter, undoes the attempt's allocations, applies contention management
 * (TMTRACE_SERIAL_AFTER conflict aborts make the next attempt serial) and
 * resumes at the transaction's restart point: tmt_tx.restart when set, else
 * longjmp to `env`. Neither returns. A real RTM abort resumes at _xbegin
 * inside htm_start, which records it with tx_abort_record and runs the
 * policy; nothing is rolled back by software there.
 */
#ifndef TMT_TX_H
#define TMT_TX_H

#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>

#include "tmtrace.h"
#include "trace_buffer.h"

#if defined(__GNUC__)
#define TX_LIKELY(x) __builtin_expect(!!(x), 1)
#define TX_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define TX_LIKELY(x) (x)
#define TX_UNLIKELY(x) (x)
#endif

/* What executes the current attempt. NONE outside transactions. */
enum tx_mode { TX_MODE_NONE = 0, TX_MODE_STM = 1, TX_MODE_HTM = 2, TX_MODE_HTM_EMU = 3, TX_MODE_SERIAL = 4 };

/* One redo-log entry: an aligned 8-byte word, the bytes written to it and
 * which of them were written (bit i = byte i), so write-back stores exactly
 * those bytes. */
struct tx_wentry {
    uintptr_t addr;  /* word address (multiple of 8) */
    uint64_t value;  /* little-endian image of the word; only masked bytes count */
    uint32_t mask;   /* bytes written, 0x01..0xff */
    uint32_t pad_;
};

/* Open-addressing index over the redo log. A slot is live only when its
 * generation is the current one, so starting a transaction clears the index
 * by bumping one counter. */
struct tx_wslot {
    uintptr_t addr;
    uint32_t idx;
    uint32_t gen;
};

/* A stripe locked by the committing transaction. The locked stripe word points
 * at its record (| 1), which is how the owner recognises its own locks and
 * finds the version they replaced. */
struct tx_lockrec {
    uintptr_t *stripe;
    uintptr_t old;
    uint32_t owner;              /* trace thread id of the holder (read by the aborts it causes) */
    uint32_t owner_instance;     /* low 32 bits of the holder's attempt (instance id) */
};

/* An undo-log entry of an emulated hardware attempt or a serial attempt. */
struct tx_undo {
    uintptr_t addr;
    uint64_t old;
    uint32_t size;
};

struct tx_stm {
    /* The accessors' one test (api.c): a read or write of word w takes the
     * inline fast path when bit (w >> 3) & 63 is clear here. During an
     * untraced software attempt it is the redo log's bloom filter; in every
     * other state (no attempt, traced, hardware, serial) all ones, so that
     * the mode and the trace level need no test of their own. */
    uint64_t gate;
    uint64_t rv;                 /* start version (snapshot the reads are valid at) */
    uintptr_t *rset;             /* addresses read (their stripes are re-checked at commit) */
    uint32_t rn, rcap;           /* rcap >= 1 once the descriptor ran a software attempt */
    uint32_t rinc;               /* what a read adds to rn: 1, or 0 when no read set is kept */
    int ro;                      /* no read set kept, no write allowed */
    uint64_t bloom;              /* one bit per (word >> 3) & 63 in the redo log */
    struct tx_wentry *wset;
    uint32_t wn, wcap;
    uint32_t wlimit;             /* appends from this index on go out of line (stm_wappend_slow):
                                  * STM_WLINEAR, or 0 in a read-only attempt */
    struct tx_wslot *wslots;     /* the index of a log past STM_WLINEAR entries (stm.c) */
    uint32_t wshift, wslot_mask; /* 64 - log2 of its slots; slots - 1 */
    uint32_t wgen;               /* the live slots' generation */
    struct tx_lockrec *locks;    /* never freed while the descriptor lives: other
                                  * threads read `owner` through the stripe word */
    struct tx_lockrec **retired; /* earlier, smaller lock arrays */
    uint32_t nretired;
    uint32_t nlocked, lcap;
    uint64_t active_rv;          /* rv while a software attempt runs, UINT64_MAX when idle (shared) */
    uint32_t consecutive_aborts; /* software aborts of this transaction, for backoff */
    uintptr_t *busy_stripe;      /* the stripe a read found locked by another: the retry
                                  * waits (boundedly) for its release, stm_backoff_wait */
    /* Serial attempt: writes go to memory in place, their old bytes here
     * (for tmt_tx_retry / tmt_tx_cancel); reads are only counted. */
    struct tx_undo *undo;
    uint32_t nundo, undocap;
    uint32_t serial_reads;
};

struct tx_htm {
    uint32_t attempts;      /* hardware attempts of the current transaction */
    uint32_t last_status;   /* status word of the last hardware abort */
    int pending;            /* an emulated abort left last_status to the policy */
    int fell_back;          /* the current transaction runs on the STM for good */
    int sw_counted;         /* this thread's software attempt is in the software-tx counter */
    /* Emulation of the current attempt. */
    uint32_t accesses;
    uint32_t abort_at;      /* inject an abort at this access (0 = none) */
    uint32_t abort_status;
    struct tx_undo *undo;
    uint32_t nundo, undocap;
};

struct tx_mem {
    void **allocs;          /* allocated by the current attempt */
    uint32_t nallocs, acap;
    void **frees;           /* to free when the transaction commits */
    uint32_t nfrees, fcap;
    struct tx_limbo *limbo; /* freed by committed transactions, not yet reclaimable */
    uint32_t nlimbo, limbocap;
    uint32_t limbo_scan_at;  /* next reclamation pass when nlimbo reaches this */
    uint32_t seen_scan_at;   /* next pass without membarrier (txmem.c) */
};

struct tx_counts {
    uint64_t commits;
    uint64_t aborts;
    uint64_t aborts_by_reason[TMT_ABORT_REASONS];
};

struct tx_stats {
    struct tx_counts all;
    uint64_t htm_commits;
    uint64_t htm_aborts;
    uint64_t fallbacks;
    uint64_t serial;            /* attempts run in serial mode */
};

struct tmt_tx {
    struct tb_thread trace;     /* first: every event touches it */
    int mode;                   /* enum tx_mode */
    int depth;                  /* flat nesting depth */
    unsigned flags;             /* enum tmt_tx_flags of the outermost block */
    unsigned nested_flags;      /* flags of the innermost nested begin */
    int ro_demoted;             /* a "read-only" block wrote: rerun it as an update */
    uint32_t site_id;
    uint32_t attempt;           /* attempts of the current transaction so far */
    int cancelled;              /* the restart must skip the block */
    uint32_t conflicts;         /* conflict aborts (reasons 1-4) of the current transaction */
    unsigned serial_next;       /* enum tf_serial_reason: the next attempt runs serial; 0 = no */
    uint64_t instance;          /* attempts started by this thread */
    uint64_t rng;               /* xorshift state: backoff and emulation */
    jmp_buf env;             /* restart point of the outermost block */
    /* Restart without setjmp: when set, tx_restart calls it (it must not
     * return) where it would longjmp to `env`; the attempt is already
     * rolled back, recorded and tx->cancelled set. tmt_tx_prepare clears it
     * for every outermost block; a front end that keeps its own checkpoint
     * (the libitm ABI's _ITM_beginTransaction) sets it after the prepare. */
    void (*restart)(struct tmt_tx *tx);
    jmp_buf scratch;         /* what nested begins fill and never use */
    struct tx_stm stm;
    struct tx_htm htm;
    struct tx_mem mem;
    struct tx_stats stats;
    struct tx_counts *site_stats; /* indexed by site id; grown off the hot path */
    uint32_t nsite_stats;
    uint32_t thread_id;
    struct tmt_tx *next;        /* tx_registry.c's list of descriptors */
    int live;
};

/* ---- life cycle (tx.c) ---- */

/* The calling thread's descriptor, made (or reused) and attached to the
 * tracer; NULL with error_set(). tx_thread_exit detaches and releases it. */
struct tmt_tx *tx_thread_enter(void);
void tx_thread_exit(struct tmt_tx *tx);
/* API misuse the program cannot go on from (a transaction left open, retry
 * outside one): one line on stderr naming the call and the fix, then abort().
 * With tx_out_of_memory, the only places the runtime prints on its own. */
__attribute__((noreturn, cold)) void tx_misuse(const char *what);
/* A transaction's own memory (a log, the lock array, the per-site
 * counters) cannot grow: the attempt has no way to fail to its caller, so one
 * line on stderr names what and to how many bytes, then abort(). */
__attribute__((noreturn, cold)) void tx_out_of_memory(const char *what, size_t bytes);

/* tmt_tx_prepare, tmt_tx_start and tmt_tx_commit (tmtrace.h): prepare
 * returns the restart point to fill (the outer one's scratch when nested);
 * start returns 1 when an attempt runs, 0 when the block is to be skipped
 * (cancelled); commit ends the attempt or restarts it on a conflict. */
jmp_buf *tx_prepare(struct tmt_tx *tx, tmt_site *site, unsigned flags);
int tx_start(struct tmt_tx *tx);
void tx_commit(struct tmt_tx *tx);

/* ---- the abort/restart path (tx.c; see the top of this file) ---- */

/* The running attempt's part is already undone by its own module. `where`
 * is the conflicting address; `found` the hardware status word (hardware
 * aborts) or what a software attempt found on the stripe (the abort
 * record's value: tf_abort_held() or the version, see trace_format.h). */
__attribute__((noreturn)) void tx_restart(struct tmt_tx *tx, unsigned reason, uint64_t where,
                                          uint64_t found);
/* Undoes the running attempt through its module, then tx_restart. Not for
 * a real RTM attempt, whose stores would roll back with it: abort that one
 * with htm_abort_code, as tx_retry, tx_cancel and tx_serial_now do. */
__attribute__((noreturn)) void tx_abort(struct tmt_tx *tx, unsigned reason, uint64_t where,
                                        uint64_t found);
/* Counts and records an abort without restarting (real RTM aborts, which
 * arrive back at _xbegin). */
void tx_abort_record(struct tmt_tx *tx, unsigned reason, uint64_t where, uint64_t found);
/* tmt_tx_retry / tmt_tx_cancel: abort() outside a transaction (misuse). */
__attribute__((noreturn)) void tx_retry(struct tmt_tx *tx);
__attribute__((noreturn)) void tx_cancel(struct tmt_tx *tx);
/* A block that promised to be read-only wrote: rerun it as an update
 * transaction (its read set was not kept, so it cannot commit writes). */
__attribute__((noreturn)) void tx_demote(struct tmt_tx *tx, uintptr_t addr);

/* Serial (irrevocable) mode. An attempt in serial mode runs alone: it
 * starts once every other transaction has ended (software attempts finish,
 * hardware attempts abort) and none can start until it ends; it reads and
 * writes memory in place and cannot abort on a conflict (tmt_tx_retry and
 * tmt_tx_cancel still undo it). The normal paths pay one predicted branch:
 * the STM's begin looks at the serial flag after announcing its start
 * version, the hardware paths see the software-transaction counter.
 *
 * tx_serial_next: the next attempt of the current (or next) transaction runs
 * serially; `why` is enum tf_serial_reason. TMTRACE_SERIAL_AFTER conflict
 * aborts set it, and so does a TMT_TX_IRREVOCABLE block.
 * tx_serial_now: inside an attempt, returns at once if it is serial, else
 * aborts it and restarts the transaction serially (recorded as a user-retry
 * abort; does not return).
 * tx_is_serial: the running attempt is serial. */
void tx_serial_next(struct tmt_tx *tx, unsigned why);
void tx_serial_now(struct tmt_tx *tx, unsigned why);
static inline int tx_is_serial(const struct tmt_tx *tx) { return tx->mode == TX_MODE_SERIAL; }

/* Per-thread counter increment: the owner is the only writer, readers use
 * relaxed loads, so no read-modify-write is needed. */
static inline void tx_count(uint64_t *c) { __atomic_store_n(c, *c + 1, __ATOMIC_RELAXED); }

/* The START record of the attempt that starts now (`flags`: enum
 * tf_start_flags; RETRY is added after an abort). */
static inline void tx_ev_start(struct tmt_tx *tx, unsigned flags)
{
    tb_ev_start(&tx->trace, tx->site_id, tx->instance, flags | (tx->attempt ? TF_START_RETRY : 0), tx->attempt);
}

/* tx_ev_start out of line (tx.c), for tx_attempt_starts: inlined, the
 * hook's stamping made every start save six registers for it, traced or
 * not. */
void tx_record_start(struct tmt_tx *tx, unsigned flags);

/* An attempt of the current transaction starts: a new instance id and its
 * START record (`flags`: enum tf_start_flags; RETRY is added after an abort).
 * Hardware attempts call it before _xbegin. */
static inline void tx_attempt_starts(struct tmt_tx *tx, unsigned flags)
{
    tx->instance++;
    if (TX_UNLIKELY(tx->trace.level != CONFIG_EVENTS_OFF))
        tx_record_start(tx, flags);
}

/* xorshift64* on the descriptor's state. */
static inline uint64_t tx_rand(struct tmt_tx *tx)
{
    uint64_t x = tx->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    tx->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* Doubles a log's capacity (first size `min`): the one allocation on a
 * transaction's path (realloc). Running out of memory in the middle of a
 * transaction leaves no consistent way to go on, so it ends the process
 * (tx_out_of_memory); logs are kept across transactions, so this is rare. */
static inline void *tx_grow(void *p, uint32_t *cap, size_t elem, uint32_t min)
{
    uint32_t n = *cap ? *cap * 2 : min;
    void *q = realloc(p, (size_t)n * elem);
    if (q == NULL)
        tx_out_of_memory("a transaction's log", (size_t)n * elem);
    *cap = n;
    return q;
}

static inline void tx_pause(void) { __builtin_ia32_pause(); }


/* Exact-size loads and stores of shared data (1, 4 or 8 naturally aligned
 * bytes). Acquire/release so that TL2's check "stripe unchanged around the
 * data load" is also sound in the C11 model; on x86 these are plain moves. */
static inline uint64_t tx_mem_load(uintptr_t a, unsigned size)
{
    switch (size) {
    case 8: return __atomic_load_n((uint64_t *)a, __ATOMIC_ACQUIRE);
    case 4: return __atomic_load_n((uint32_t *)a, __ATOMIC_ACQUIRE);
    default: return __atomic_load_n((uint8_t *)a, __ATOMIC_ACQUIRE);
    }
}

static inline void tx_mem_store(uintptr_t a, uint64_t v, unsigned size)
{
    switch (size) {
    case 8: __atomic_store_n((uint64_t *)a, v, __ATOMIC_RELEASE); break;
    case 4: __atomic_store_n((uint32_t *)a, (uint32_t)v, __ATOMIC_RELEASE); break;
    default: __atomic_store_n((uint8_t *)a, (uint8_t)v, __ATOMIC_RELEASE); break;
    }
}

/* Writes in place, logging the old bytes first (emulated hardware attempts
 * and serial attempts). */
static inline void tx_undo_write(struct tx_undo **log, uint32_t *n, uint32_t *cap, uintptr_t addr, uint64_t value,
                                 unsigned size)
{
    if (TX_UNLIKELY(*n == *cap))
        *log = tx_grow(*log, cap, sizeof **log, 64);
    struct tx_undo *u = &(*log)[(*n)++];
    u->addr = addr;
    u->old = tx_mem_load(addr, size);
    u->size = size;
    tx_mem_store(addr, value, size);
}

/* Puts back every byte the log saved, newest first, and empties it. */
static inline void tx_undo_all(const struct tx_undo *log, uint32_t *n)
{
    while (*n > 0) {
        const struct tx_undo *u = &log[--*n];
        tx_mem_store(u->addr, u->old, u->size);
    }
}

#endif
