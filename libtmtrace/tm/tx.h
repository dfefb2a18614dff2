/*
 * tx.h - the per-thread transaction descriptor (struct tmt_tx) and the
 * types of its members. The life cycle that runs on it is tx_life.h's; the
 * one call the engines make back into that life cycle is tx_upcall.h's.
 *
 * Owns: the layout of the descriptor that every runtime module works on.
 * Who writes what (only the descriptor's own thread writes it; other threads
 * read just the statistics, with relaxed atomic loads, and `stm.active_rv`
 * and a lock record's owner):
 *   stm       stm.c (the TL2 sets, the start version, serial mode's undo log)
 *   htm       htm.c (attempts, policy state, emulation, its membership of
 *             the software-transaction counter)
 *   mem       txmem.c (allocation logs, limbo)
 *   trace     the tracer (trace_buffer.h's hooks and trace_buffer.c); the
 *             engines read it only through tb_* calls and the two readers
 *             at the end of this file
 *   stats, site_stats   the counters of every thread that has had the
 *             descriptor: each counts its own events with tx_count
 *             (tx_life.c: commits and aborts, per site only, and serial
 *             attempts; htm.c: hardware aborts and fallbacks), and a leaving
 *             thread leaves them for the next; tx_registry.c sums them
 *             (stats.all, the totals, as the sums of site_stats) and grows
 *             site_stats under its lock
 *   thread_id, next, live, joined   tx_registry.c; lone_changes,
 *             lone_starts   tx_registry.h's txreg_lone_settled, on the
 *             thread's own start path
 *   rng       whoever draws from it (tx_rand): htm.c, stm.c
 *   head      tx_life.c (in_place: set at a serial attempt's start, cleared
 *             at its end; alloc_watch: its TX bit set at an outermost start
 *             and cleared at the end, its TRACED bit from the trace level
 *             there and in tx_watch_allocs);
 *             tmtrace.h's inline readers, tmt_malloc and compat/tl2's
 *             malloc read it
 *   the rest (mode, depth, flags, attempt, instance, cancelled, conflicts,
 *             serial_next, retried, env, frame)   tx_life.c alone; restart: tx_life.c clears
 *             it, a front end with its own checkpoint sets it (itm_tx.c)
 * Never: code. Logs (read/write sets, undo and allocation logs) grow with
 * tx_grow (tx_util.h), the only allocation on a transaction's path, and are
 * kept across transactions, so in steady state nothing allocates.
 */
#ifndef TMT_TX_H
#define TMT_TX_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "tmtrace.h"
#include "trace_buffer.h"

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
    uint64_t held;               /* the holder for the aborts it causes: tf_abort_held(its
                                  * trace thread id, its attempt), made once per commit */
    uint64_t pad_;               /* a power of two: the commit counts its records by a shift */
};

/* An undo-log entry of an emulated hardware attempt or a serial attempt. */
struct tx_undo {
    uintptr_t addr;
    uint64_t old;
    uint32_t size;
};

struct tx_stm {
    /* The accessors' one test (api/accessors.c): a read or write of word w
     * takes the inline fast path when bit (w >> 3) & 63 is clear here.
     * During an untraced software attempt it is the redo log's bloom
     * filter; in every other state (no attempt, traced, hardware, serial)
     * all ones, so that the mode and the trace level need no test of their
     * own. */
    uint64_t gate;
    uint64_t rv;                 /* start version (snapshot the reads are valid at) */
    uintptr_t *rset;             /* addresses read (their stripes are re-checked at commit) */
    uint32_t rn, rcap;           /* rcap >= 1 once the descriptor ran a software attempt */
    /* Pairs that a begin sets with one store each (rmode, wmode). */
    union {
        struct {
            uint32_t rinc;       /* what a read adds to rn: 1, or 0 when no read set is kept */
            int ro;              /* no read set kept, no write allowed */
        };
        uint64_t rmode;
    };
    uint64_t bloom;              /* one bit per (word >> 3) & 63 in the redo log */
    struct tx_wentry *wset;
    union {
        struct {
            uint32_t wn;
            uint32_t wlimit;     /* appends from this index on go out of line (stm_wappend_slow):
                                  * STM_WLINEAR, or 0 in a read-only attempt */
        };
        uint64_t wmode;
    };
    uint32_t wcap;
    struct tx_wslot *wslots;     /* the index of a log past STM_WLINEAR entries (stm.c) */
    uint32_t wshift, wslot_mask; /* 64 - log2 of its slots; slots - 1 */
    uint32_t wgen;               /* the live slots' generation */
    struct tx_lockrec *locks;    /* never freed while the descriptor lives: other
                                  * threads read `owner` through the stripe word */
    struct tx_lockrec **retired; /* earlier, smaller lock arrays */
    uint32_t nretired;
    uint32_t nlocked, lcap;
    uint64_t active_rv;          /* rv while a software attempt runs; TX_IDLE | floor when idle (shared) */
    uint32_t consecutive_aborts; /* software aborts of this transaction, for backoff */
    uintptr_t *busy_stripe;      /* the stripe a read found locked by another: the retry
                                  * waits (boundedly) for its release, stm_backoff_wait */
    /* Where in the program a read's conflict was found (ABORT_PC): access_pc
     * is the program's call of the access when an out-of-line path calls
     * stm_read_slow, or the accessor named it (api/accessors.c,
     * API_NAMES_CALLER); 0: stm_read_slow was reached by tail calls from the
     * accessor, so its own return address is that call. abort_pc, set by the
     * conflict, is what the abort records. */
    uint64_t access_pc, abort_pc;
    /* Serial attempt: writes go to memory in place, their old bytes here
     * (for tmt_tx_retry / tmt_tx_cancel); reads are only counted. */
    struct tx_undo *undo;
    uint32_t nundo, undocap;
    uint32_t serial_reads;
    int serial_alone;            /* the serial attempt drained no one: no other thread had
                                  * started a transaction (its commit stamps no stripe) */
    int serial_marked;           /* a lone attempt holds the exclusion by stm_serial.lone,
                                  * not by the lock (stm_lone_mark) */
};

/* An idle thread's announcement (tx_stm.active_rv): the flag with a floor,
 * the latest clock value the thread has seen (its last start version, or
 * its last write version). Every later attempt of the thread starts at or
 * above it (its next clock load returns no less), so a reclaimer that sees
 * it needs no fence of that thread's CPU to know what those attempts cannot
 * reach (txmem.c). Versions stay below the flag. */
#define TX_IDLE ((uint64_t)1 << 63)

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
    struct tx_counts all;       /* 0 in a descriptor: txreg_sum adds up site_stats */
    uint64_t htm_commits;
    uint64_t htm_aborts;
    uint64_t fallbacks;
    uint64_t serial;            /* attempts run in serial mode */
};

struct tmt_tx {
    /* First, at offset 0: what tmtrace.h's inline readers and allocation
     * wrappers read (its flags, tx_life.c's to set and clear). Its layout
     * is ABI. */
    struct tmt_tx_head head;
    struct tb_thread trace;     /* next: every event touches it */
    int mode;                   /* enum tx_mode */
    int depth;                  /* flat nesting depth */
    unsigned flags;             /* enum tmt_tx_flags of the outermost block */
    unsigned nested_flags;      /* flags of the innermost nested begin */
    int ro_demoted;             /* a "read-only" block wrote: rerun it as an update */
    uint32_t site_id;
    uint32_t attempt;           /* attempts of the current transaction so far */
    int cancelled;              /* the restart must skip the block */
    uint32_t conflicts;         /* conflict aborts (reasons 1-4) of the current transaction */
    int retried;                /* an abort or a hardware attempt since the last prepare: the
                                 * next one resets what they leave (attempt, conflicts, the
                                 * engines' per-transaction state) */
    unsigned serial_next;       /* enum tf_serial_reason: the next attempt runs serial; 0 = no */
    uint64_t instance;          /* attempts started by this thread */
    uintptr_t frame;            /* stack pointer of the outermost block's frame at the
                                 * start of an attempt that writes in place (serial,
                                 * emulated hardware): the undo log skips the frames
                                 * below it, dead at the rollback (tx_undo_all) */
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
    int joined;                 /* counted as a thread in transactions (txreg_join) */
    uint32_t lone_changes;      /* txreg_changes when the thread last found itself alone */
    uint32_t lone_starts;       /* its starts alone since (txreg_lone_settled) */
};

_Static_assert(offsetof(struct tmt_tx, head) == 0, "tmtrace.h's inline readers find the head at offset 0");

/* What the engines may read of the tracer's per-thread state, until
 * trace_buffer.h offers it as tb_* calls of its own: whether this thread
 * records events (any level but off) and its thread id in the trace (what a
 * lock record names as the holder, so that an abort record names it too). */
static inline int tx_traced(const struct tmt_tx *tx) { return tx->trace.level != CONFIG_EVENTS_OFF; }
static inline uint32_t tx_trace_thread(const struct tmt_tx *tx) { return tx->trace.thread_id; }

#endif
