/*
 * tmtrace.h - the public API of libtmtrace: a TL2 software transactional
 * memory with a hardware (Intel RTM) fast path that records every
 * transactional event into a trace.
 *
 * This is the only header a program includes. Everything it names starts with
 * tmt_ / TMT_. The runtime is configured through TMTRACE_* environment
 * variables, read once by tmt_init() (see tmt_env_help() and
 * docs/environment.md).
 *
 * Typical use:
 *
 *     tmt_init();                         // once, before the first thread
 *     tmt_tx *tx = tmt_thread_enter();    // in every thread that uses TM
 *     TMT_ATOMIC(tx, "transfer") {
 *         long a = tmt_read_long(tx, &acct[i]);
 *         tmt_write_long(tx, &acct[i], a - 1);
 *     } TMT_END;
 *     tmt_thread_exit();
 *     tmt_shutdown();                     // or at exit, automatically
 *
 * Rules of the transactional block (they follow from restarting with
 * longjmp): do not leave it with return/break/goto (debug builds say so and
 * stop, see TMT_SCOPE_CHECK below; tmt_thread_exit inside a transaction
 * always does); local variables that are modified inside the block and read
 * after a restart must be volatile; every access to shared data inside the
 * block goes through tmt_read_* / tmt_write_*.
 *
 * Misuse the program cannot go on from (retry or cancel outside a
 * transaction, a NULL descriptor in TMT_ATOMIC, a block left open) prints one
 * line naming the call and the fix on stderr and aborts.
 */
#ifndef TMTRACE_H
#define TMTRACE_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TMT_API __attribute__((visibility("default")))
#define TMT_NORETURN __attribute__((noreturn))
#else
#define TMT_API
#define TMT_NORETURN
#endif

#define TMT_VERSION_MAJOR 1
#define TMT_VERSION_MINOR 0

/* A thread's transaction descriptor. Opaque but for its head; one per thread. */
typedef struct tmt_tx tmt_tx;

/*
 * The descriptor's head: its first bytes, the only ones a program may read
 * (the inline accessors below do). Part of the ABI: a program compiled
 * against this header reads them in its own code, so a change to their
 * layout or meaning is an ABI break (docs/design.md, "The descriptor's
 * head"). Written only by the descriptor's own thread, by the runtime.
 */
struct tmt_tx_head {
    /* Nonzero while the running attempt reads shared memory in place and
     * records no access: then a read is a plain load. Set when a serial
     * attempt (a thread alone's, mostly) starts at a trace level that
     * records no access (untraced or `tx`), cleared when it commits or
     * aborts; 0 in every other state (no attempt, software and hardware
     * attempts, an attempt whose reads and writes are recorded). */
    uint32_t in_place;
    /* What the runtime must see of this thread's allocations, two bits:
     * TMT_ALLOC_WATCH_TX inside a transaction (from an outermost start until
     * its commit, abort or cancel; nested blocks leave it set), and
     * TMT_ALLOC_WATCH_TRACED on a thread whose events are traced (tmt_malloc
     * records each block with its allocation site, which the tools name
     * heap words by). 0 on an untraced thread outside transactions: there
     * tmt_malloc and tmt_free are malloc and free, and a wrapper that tests
     * this word may call them itself (compat/tl2's malloc does). The traced
     * bit may stay set a while after the thread's tracing stopped (a forked
     * child without a trace of its own): a caller then only takes the
     * slower way. Added in 1.0.0's reserved word, which 1.0.0 left 0 and no
     * program built against it reads; a program that tests it needs a
     * library that sets it (compat/tl2's libtl2.a bundles the runtime, so
     * it always has one). */
    uint32_t alloc_watch;
};
#define TMT_ALLOC_WATCH_TX 1u
#define TMT_ALLOC_WATCH_TRACED 2u

/*
 * A static transaction site: where a transaction is written in the source.
 * Declared once per TMT_ATOMIC (a static variable); the runtime gives it a
 * dense id on first use and records its name in the trace.
 */
typedef struct tmt_site {
    const char *file;
    int line;
    const char *label;
    volatile uint32_t id; /* 0 until the runtime registers the site */
} tmt_site;

#define TMT_SITE_INIT(label) { __FILE__, __LINE__, (label), 0 }

/* Why a transaction attempt ended without committing. */
enum tmt_abort_reason {
    TMT_ABORT_NONE = 0,
    TMT_ABORT_READ_LOCKED = 1,     /* a read found its stripe locked by a committer, who kept it */
    TMT_ABORT_READ_VERSION = 2,    /* a read found a stripe newer than the snapshot, which
                                    * could not be extended (an earlier read changed) */
    TMT_ABORT_COMMIT_LOCKED = 3,   /* commit could not lock a stripe of its write set */
    TMT_ABORT_COMMIT_VALIDATE = 4, /* commit-time validation of the read set failed */
    TMT_ABORT_USER_RETRY = 5,      /* tmt_tx_retry(): abort and run again */
    TMT_ABORT_USER_CANCEL = 6,     /* tmt_tx_cancel(): abort and skip the block */
    TMT_ABORT_HTM = 7,             /* hardware attempt aborted; see the status word */
    TMT_ABORT_REASONS = 8
};

/* Bits of the hardware status word (the RTM EAX layout; emulation uses the same). */
enum tmt_htm_status_bits {
    TMT_HTM_EXPLICIT = 1u << 0, /* _xabort(); code in bits 24..31 */
    TMT_HTM_RETRY = 1u << 1,    /* may succeed on retry */
    TMT_HTM_CONFLICT = 1u << 2, /* another core touched the footprint */
    TMT_HTM_CAPACITY = 1u << 3, /* footprint overflowed the cache */
    TMT_HTM_DEBUG = 1u << 4,
    TMT_HTM_NESTED = 1u << 5
};
/* The explicit abort code the runtime uses when software transactions are active. */
#define TMT_HTM_CODE_STM_ACTIVE 0xffu

static inline unsigned tmt_htm_abort_code(uint32_t status) { return (status >> 24) & 0xffu; }

/* Options for TMT_ATOMIC_FLAGS. */
enum tmt_tx_flags {
    TMT_TX_READ_ONLY = 1u << 0, /* promise: the block writes nothing (no read set kept) */
    TMT_TX_NO_HTM = 1u << 1,    /* never try the hardware path for this block */
    TMT_TX_IRREVOCABLE = 1u << 2 /* run in serial mode: alone, in place, never aborted by a
                                  * conflict (it may do I/O); costs all concurrency while it runs */
};

/* ---- life cycle ------------------------------------------------------- */

/* Reads the TMTRACE_* environment, sets up the runtime and, when tracing,
 * opens the trace and runs the pre-run clock sampling. Idempotent. Returns 0,
 * or -1 with a message in tmt_error() (a bad TMTRACE_* value, a trace file
 * that cannot be created, or a call after tmt_shutdown()). */
TMT_API int tmt_init(void);

/* Flushes and closes the trace (post-run sampling first). Threads must have
 * left. Also run at exit if the program does not call it. Returns 0 or -1. */
TMT_API int tmt_shutdown(void);

/* The last error message of the calling thread ("" if none). */
TMT_API const char *tmt_error(void);

/* Registers the calling thread (calls tmt_init() if needed). Returns its
 * descriptor, or NULL with tmt_error() set. Calling it twice returns the same. */
TMT_API tmt_tx *tmt_thread_enter(void);

/* Unregisters the calling thread: its trace buffer is handed to the writer;
 * its statistics stay counted in tmt_stats_get()'s totals. */
TMT_API void tmt_thread_exit(void);

/* The calling thread's descriptor; a thread that has not entered is entered
 * (tmt_thread_enter). NULL only if that fails (tmt_error()). */
TMT_API tmt_tx *tmt_self(void);

/* Prints the TMTRACE_* variables: name, allowed values, default, meaning. */
TMT_API void tmt_env_help(FILE *out);

/* ---- transactions ----------------------------------------------------- */

/* Internal to TMT_ATOMIC: returns the buffer the next setjmp fills (ISO C jmp_buf:
 * the header needs no POSIX feature macro; glibc's setjmp saves no signal mask). */
TMT_API jmp_buf *tmt_tx_prepare(tmt_tx *tx, tmt_site *site, unsigned flags);
/* tmt_tx_prepare that also starts the attempt when it can (a plain first
 * software attempt, a nested block): then the head's alloc_watch has
 * TMT_ALLOC_WATCH_TX when it returns; otherwise tmt_tx_start must follow
 * the setjmp, as after tmt_tx_prepare and after every restart. One call
 * per transaction instead of two (compat/tl2's STM_BEGIN). */
TMT_API jmp_buf *tmt_tx_begin(tmt_tx *tx, tmt_site *site, unsigned flags);
/* Internal to TMT_ATOMIC: starts (or restarts) an attempt. Returns 1 to run
 * the block, 0 when the transaction was cancelled and the block is skipped. */
TMT_API int tmt_tx_start(tmt_tx *tx);
/* Commits; on failure the transaction restarts at its TMT_ATOMIC. */
TMT_API void tmt_tx_commit(tmt_tx *tx);
/* Aborts the current attempt and runs the transaction again. */
TMT_API TMT_NORETURN void tmt_tx_retry(tmt_tx *tx);
/* Aborts the transaction for good: its effects are discarded and execution
 * continues after its TMT_END. */
TMT_API TMT_NORETURN void tmt_tx_cancel(tmt_tx *tx);
/* Nesting depth: 0 outside a transaction (nesting is flat). */
TMT_API int tmt_tx_depth(const tmt_tx *tx);

/* Internal to TMT_ATOMIC: a block was left without reaching TMT_END (one
 * line on stderr naming the block, then abort()). */
TMT_API TMT_NORETURN void tmt_tx_scope_left_(tmt_tx *tx, const tmt_site *site);

/* Debug check (GCC, Clang): leaving a TMT_ATOMIC block by return, break or
 * goto is detected when the block's scope ends (a cleanup variable; two
 * calls per transaction). On in unoptimised builds without NDEBUG, and
 * wherever TMT_SCOPE_CHECK is defined; TMT_NO_SCOPE_CHECK turns it off. Not
 * on by default in optimised builds: there the cleanup variable makes GCC's
 * -Wclobbered warn about loop counters around the block. */
#if defined(__GNUC__) && !defined(TMT_NO_SCOPE_CHECK) &&                      \
    (defined(TMT_SCOPE_CHECK) || (!defined(NDEBUG) && !defined(__OPTIMIZE__)))
struct tmt_scope_ {
    tmt_tx *tx;
    const tmt_site *site;
    int depth;
};
static inline void tmt_scope_end_(const struct tmt_scope_ *s)
{
    if (__builtin_expect(tmt_tx_depth(s->tx) != s->depth, 0))
        tmt_tx_scope_left_(s->tx, s->site);
}
#define TMT_SCOPE_CHECK_(tx, site)                                             \
    const struct tmt_scope_ tmt_scope_ __attribute__((cleanup(tmt_scope_end_))) = { (tx), (site), tmt_tx_depth(tx) };
#else
#define TMT_SCOPE_CHECK_(tx, site)
#endif

/*
 * The transactional block. setjmp must run in the caller's frame, which is
 * why this is a macro and not a function.
 */
#define TMT_ATOMIC_FLAGS(tx, label, flags)                                     \
    do {                                                                       \
        static tmt_site tmt_site_ = TMT_SITE_INIT(label);                      \
        tmt_tx *const tmt_tx_ = (tx);                                          \
        TMT_SCOPE_CHECK_(tmt_tx_, &tmt_site_)                                  \
        setjmp(*tmt_tx_prepare(tmt_tx_, &tmt_site_, (flags)));                 \
        if (tmt_tx_start(tmt_tx_)) {

#define TMT_ATOMIC(tx, label) TMT_ATOMIC_FLAGS(tx, label, 0u)

#define TMT_END                                                                \
            tmt_tx_commit(tmt_tx_);                                            \
        }                                                                      \
    } while (0)

/* ---- transactional accesses ------------------------------------------ */
/* Each access is exact on its size: a 4-byte write never touches the bytes
 * around it. Addresses must be naturally aligned. */

TMT_API uintptr_t tmt_read_word(tmt_tx *tx, const volatile uintptr_t *addr);
TMT_API void tmt_write_word(tmt_tx *tx, volatile uintptr_t *addr, uintptr_t value);
TMT_API long tmt_read_long(tmt_tx *tx, const volatile long *addr);
TMT_API void tmt_write_long(tmt_tx *tx, volatile long *addr, long value);
TMT_API void *tmt_read_ptr(tmt_tx *tx, void *const volatile *addr);
TMT_API void tmt_write_ptr(tmt_tx *tx, void *volatile *addr, void *value);
TMT_API int64_t tmt_read_i64(tmt_tx *tx, const volatile int64_t *addr);
TMT_API void tmt_write_i64(tmt_tx *tx, volatile int64_t *addr, int64_t value);
TMT_API int32_t tmt_read_i32(tmt_tx *tx, const volatile int32_t *addr);
TMT_API void tmt_write_i32(tmt_tx *tx, volatile int32_t *addr, int32_t value);
TMT_API uint8_t tmt_read_u8(tmt_tx *tx, const volatile uint8_t *addr);
TMT_API void tmt_write_u8(tmt_tx *tx, volatile uint8_t *addr, uint8_t value);
TMT_API float tmt_read_float(tmt_tx *tx, const volatile float *addr);
TMT_API void tmt_write_float(tmt_tx *tx, volatile float *addr, float value);
TMT_API double tmt_read_double(tmt_tx *tx, const volatile double *addr);
TMT_API void tmt_write_double(tmt_tx *tx, volatile double *addr, double value);

/* The reads inline (GCC, Clang): while the descriptor's head says the
 * attempt runs in place (a thread alone), a read is the load itself, with
 * no call; otherwise it calls the exported function of the same name. The
 * test is one load of the descriptor and one branch. Writes stay calls: an
 * in-place write logs the old bytes for cancel and retry. Define
 * TMT_NO_INLINE_ACCESS before including this header to call the exported
 * functions for every read (what the library itself does); taking a
 * reader's address, or writing its name in parentheses, names the exported
 * function too. Each argument is evaluated once. */
#if defined(__GNUC__) && !defined(TMT_NO_INLINE_ACCESS)
static inline int tmt_in_place_(const tmt_tx *tx)
{
    return ((const struct tmt_tx_head *)(const void *)tx)->in_place != 0;
}
/* A statement expression, not an inline function: its call of the
 * exported reader keeps the program's line in the debug information, which
 * is what a conflict's abort location names (the return address of that
 * call). Its locals are numbered (each read takes a __COUNTER__ value) so
 * that a read nested in another's arguments shadows nothing. The load is a
 * relaxed atomic one: a plain move on x86; the serial lock orders it
 * against other threads' transactions, and sanitizers see an atomic
 * access. */
#define TMT_READ_(T, PT, fn, tx, addr) TMT_READ_N_(T, PT, fn, tx, addr, __COUNTER__)
#define TMT_READ_N_(T, PT, fn, tx, addr, n) TMT_READ_AT_(T, PT, fn, tx, addr, n)
#define TMT_READ_AT_(T, PT, fn, tx, addr, n)                                   \
    (__extension__({                                                           \
        tmt_tx *const tmt_tx_##n = (tx);                                       \
        PT const tmt_at_##n = (addr);                                          \
        T tmt_v_##n;                                                           \
        if (tmt_in_place_(tmt_tx_##n))                                         \
            __atomic_load(tmt_at_##n, &tmt_v_##n, __ATOMIC_RELAXED);           \
        else                                                                   \
            tmt_v_##n = (fn)(tmt_tx_##n, tmt_at_##n);                          \
        tmt_v_##n;                                                             \
    }))
#define tmt_read_word(tx, addr) TMT_READ_(uintptr_t, const volatile uintptr_t *, tmt_read_word, tx, addr)
#define tmt_read_long(tx, addr) TMT_READ_(long, const volatile long *, tmt_read_long, tx, addr)
#define tmt_read_ptr(tx, addr) TMT_READ_(void *, void *const volatile *, tmt_read_ptr, tx, addr)
#define tmt_read_i64(tx, addr) TMT_READ_(int64_t, const volatile int64_t *, tmt_read_i64, tx, addr)
#define tmt_read_i32(tx, addr) TMT_READ_(int32_t, const volatile int32_t *, tmt_read_i32, tx, addr)
#define tmt_read_u8(tx, addr) TMT_READ_(uint8_t, const volatile uint8_t *, tmt_read_u8, tx, addr)
#define tmt_read_float(tx, addr) TMT_READ_(float, const volatile float *, tmt_read_float, tx, addr)
#define tmt_read_double(tx, addr) TMT_READ_(double, const volatile double *, tmt_read_double, tx, addr)
#endif

/* Transactional allocation: memory allocated by an attempt that aborts is
 * released; tmt_free takes effect only when the transaction commits and
 * accepts memory that was allocated outside transactions. Outside a
 * transaction they behave like malloc/free. */
TMT_API void *tmt_malloc(tmt_tx *tx, size_t size);
TMT_API void tmt_free(tmt_tx *tx, void *ptr);

/* ---- statistics ------------------------------------------------------- */

typedef struct tmt_stats {
    uint64_t commits;                          /* all committed transactions */
    uint64_t aborts;                           /* all aborted attempts */
    uint64_t aborts_by_reason[TMT_ABORT_REASONS];
    uint64_t htm_commits;                      /* commits on the hardware path */
    uint64_t htm_aborts;                       /* aborted hardware attempts */
    uint64_t fallbacks;                        /* hardware -> software switches */
    uint64_t events_recorded;                  /* trace records written */
    uint64_t events_dropped;                   /* trace records lost (buffer/writer) */
    uint64_t writer_events;                    /* records the writer has put in the file so far */
    uint64_t writer_cpu_ns;                    /* CPU time of the writer thread so far (ns) */
    uint64_t trace_bytes;                      /* bytes of the trace file written so far */
    uint64_t buffer_bytes;                     /* trace buffers held, mapped and resident (most of the run) */
    uint64_t buffer_inline_maps;               /* buffers a traced thread mapped itself (pre-faulted reserve ran dry) */
    uint64_t serial;                           /* attempts run in serial (irrevocable) mode */
    uint64_t stamps_raised;                    /* unordered stamps raised above their thread's previous one on that CPU */
    uint64_t buffer_late_maps;                 /* of buffer_inline_maps, those mapped a second or more after tmt_init */
    uint64_t tracer_cpu_ns;                    /* the tracer's own CPU time (ns): init, writer thread, and after
                                                  tmt_shutdown its work at exit (last drain, the trace's tail) */
    uint64_t attempts_shed;                    /* TMTRACE_EVENTS=all: attempts recorded without their reads and
                                                  writes (as at tx) while buffers ran short under
                                                  TMTRACE_WRITER_SHARE */
} tmt_stats;

typedef struct tmt_site_stats {
    uint32_t id;
    const char *file;
    int line;
    const char *label;
    uint64_t commits;
    uint64_t aborts;
    uint64_t aborts_by_reason[TMT_ABORT_REASONS];
} tmt_site_stats;

/* Totals over all threads, live and exited. Returns 0 or -1. */
TMT_API int tmt_stats_get(tmt_stats *out);
/* Per-site totals; fills at most max entries, returns the number of sites. */
TMT_API size_t tmt_stats_sites(tmt_site_stats *out, size_t max);
/* A short name for an abort reason ("read-locked", ...). */
TMT_API const char *tmt_abort_reason_name(unsigned reason);

#ifdef __cplusplus
}
#endif
#endif /* TMTRACE_H */
