/*
 * itm.h - libtmtrace-itm: GCC's transactional memory ABI (the libitm ABI,
 * Intel TM ABI 0.90 as GCC 12 uses it on x86-64) on libtmtrace's runtime.
 *
 * Owns: the ABI's constants, the register checkpoint (struct itm_jb), the
 * per-thread state of the ABI that the runtime's descriptor does not keep
 * (checkpoints of the outermost and of nested cancellable transactions, the
 * _ITM_L* undo log, user commit/undo actions, the transaction id) and the
 * calls shared between the ABI's modules. Those calls go one way: the entry
 * (itm_entry.S) calls itm_tx.c; the barriers (itm_barrier.c) and allocation
 * (itm_alloc.c) call itm_tx.c; itm_tx.c calls the leaves itm_eh.c,
 * itm_site.c, itm_malloc.c (the program's own malloc) and itm_resume.S;
 * none calls back up. Never: a second STM,
 * tracer or symboliser; every access goes through tmtrace.h's accessors.
 */
#ifndef TMT_ITM_H
#define TMT_ITM_H

#include <stddef.h>
#include <stdint.h>

#include "tmtrace.h"
#include "tx.h"
#include "tx_life.h"
#include "tx_util.h"

#define ITM_ABI __attribute__((visibility("default")))

/* _ITM_codeProperties (the bits this runtime looks at). */
enum {
    ITM_PR_INSTRUMENTED = 0x0001,
    ITM_PR_UNINSTRUMENTED = 0x0002,
    ITM_PR_HAS_NO_ABORT = 0x0008,
    ITM_PR_DOES_GO_IRREVOCABLE = 0x0040,
    ITM_PR_READ_ONLY = 0x4000,
};

/* _ITM_actions: what _ITM_beginTransaction tells the compiled code. */
enum {
    ITM_A_RUN_INSTRUMENTED = 0x01,
    ITM_A_RUN_UNINSTRUMENTED = 0x02,
    ITM_A_SAVE_LIVE = 0x04,
    ITM_A_RESTORE_LIVE = 0x08,
    ITM_A_ABORT = 0x10,
};

/* _ITM_abortReason */
enum { ITM_USER_ABORT = 1, ITM_USER_RETRY = 2, ITM_TM_CONFLICT = 4, ITM_EXCEPTION_BLOCK_ABORT = 8, ITM_OUTER_ABORT = 16 };
/* _ITM_howExecuting */
enum { ITM_OUTSIDE = 0, ITM_IN_RETRYABLE = 1, ITM_IN_IRREVOCABLE = 2 };
#define ITM_NO_TRANSACTION_ID 1u
#define ITM_VERSION_NO 90
#define ITM_VERSION "0.90 (libtmtrace-itm)"

/* The register checkpoint itm_entry.S fills (layout shared with it). */
struct itm_jb {
    uint64_t rbx, rbp, r12, r13, r14, r15;
    uint64_t rsp; /* the caller's stack pointer after _ITM_beginTransaction returns */
    uint64_t rip; /* its return address */
};

/* A nested transaction that may cancel itself (closed nesting). */
struct itm_frame {
    struct itm_jb jb;
    int depth;            /* the runtime's depth inside it */
    uint32_t serial_mark; /* stm_serial_mark() at its begin (serial attempts only) */
    uint32_t log_mark;    /* itm_thread.nlog at its begin */
    uint32_t undo_mark;   /* itm_thread.nundo at its begin */
    int serial;           /* it began inside a serial attempt */
};

/* One _ITM_L* entry: `len` bytes at `addr`, saved at pool[off];
 * `own_stack`: in a frame made inside the transaction (itm_own_stack). */
struct itm_log {
    void *addr;
    size_t len, off;
    int own_stack;
};

struct itm_action {
    void (*fn)(void *);
    void *arg;
};

/* One remembered answer of the clone tables (itm_alloc.c). */
struct itm_clone_hit {
    void *fn, *clone;
};
#define ITM_CLONE_HITS 64 /* a power of two */

struct itm_thread {
    struct tmt_tx *tx;
    struct itm_jb jb;                  /* the outermost transaction's checkpoint */
    uint32_t prop;                     /* its code properties */
    int lone;                          /* it runs serially, instrumented and cancellable, only
                                          because the thread was alone (itm_begin) */
    struct itm_frame *frames;
    uint32_t nframes, framecap;
    struct itm_log *log;
    uint32_t nlog, logcap;
    unsigned char *pool;
    size_t npool, poolcap;
    struct itm_action *undo, *commit;
    uint32_t nundo, undocap, ncommit, commitcap;
    uint64_t txid, txseq;
    void *eh_in_flight;                /* _ITM_commitTransactionEH's exception */
    unsigned eh_uncaught;              /* uncaught exceptions before that throw */
    uint64_t clone_gen;                /* the clone tables' generation the hits belong to */
    struct itm_clone_hit clone_hits[ITM_CLONE_HITS]; /* by the function's address */
};

/* The calling thread's descriptor (NULL before its first transaction). */
extern __thread struct tmt_tx *itm_tx __attribute__((tls_model("initial-exec")));
extern __thread struct itm_thread *itm_me __attribute__((tls_model("initial-exec")));

/* itm_malloc.c: from the constructor, once the runtime runs at a level
 * that records (after tmt_init, so that its exit handler, registered here,
 * runs before the runtime's): the program's allocations are recorded from
 * now on until exit begins (never in a forked child); the calling (main)
 * thread's through a trace thread of their own until it enters. 0, or -1
 * when that trace thread could not attach (then nothing is recorded). */
int itm_heap_start(void);
/* itm_malloc.c: the calling thread has just entered with `tx`: its blocks
 * are recorded through it from now on, those it allocated before too (or
 * its trace thread of allocations ends). */
void itm_heap_entered(struct tmt_tx *tx);
/* itm_malloc.c: the calling thread leaves the runtime: its descriptor is no
 * longer used. */
void itm_heap_left(void);

/* The transaction's own stack (README, "GCC's transactional memory",
 * "The transaction's own stack").
 * Frames made inside the running transaction lie between the stack
 * pointer of a barrier and itm_stack_top, the stack pointer of the
 * outermost _ITM_beginTransaction's caller (its checkpoint's rsp): they die
 * before the transaction commits, and a restart makes them anew. GCC
 * instruments their address-taken locals like shared memory; the barriers
 * access them in place, as libitm does, and never through the STM, whose
 * commit would write them back into frames that are gone (the commit's
 * own, by then), and whose redo log would answer a later frame at the same
 * addresses with an earlier frame's values. The caller's frame and those
 * above it outlive the transaction and stay transactional. Set by
 * itm_begin for every outermost transaction. */
extern __thread uintptr_t itm_stack_top __attribute__((tls_model("initial-exec")));

static inline uintptr_t itm_sp(void)
{
    uintptr_t sp;
    __asm__("mov %%rsp, %0" : "=r"(sp));
    return sp;
}

/* How many of the `n` bytes at `a` lie in frames made inside the running
 * transaction: 0 for shared memory and the frames that outlive it. A
 * barrier's own stack pointer bounds them from below: every live frame of
 * the program is above it. */
static inline size_t itm_own_stack(uintptr_t a, size_t n)
{
    if (TX_LIKELY(a < itm_sp()))
        return 0; /* the heap and the globals: below every stack */
    uintptr_t top = itm_stack_top;
    if (a >= top)
        return 0;
    return top - a < n ? (size_t)(top - a) : n;
}

/* itm_resume.S: continue at a checkpoint as if _ITM_beginTransaction
 * returned `code` there. */
__attribute__((noreturn)) void itm_longjmp(const struct itm_jb *jb, uint32_t code);
/* itm_tx.c: what _ITM_beginTransaction (itm_entry.S) calls with the
 * checkpoint it took; returns the _ITM_actions code. */
uint32_t itm_begin(uint32_t prop, const struct itm_jb *jb);

/* itm_tx.c: the thread's state, entering the runtime on first use (a
 * failure to start the runtime is fatal: the ABI has no error return). */
struct itm_thread *itm_thread(void);
/* Goes serial (irrevocable) now; restarts the transaction if it was not. */
void itm_go_serial(struct tmt_tx *tx);

/* itm_tx.c: writes `n` bytes from `src` into a frame made inside the
 * transaction (itm_own_stack), in place; while a nested transaction that
 * may cancel itself runs, the old bytes of frames that outlive it are
 * logged first, so that its cancel puts them back. */
void itm_own_stack_write(void *dst, const void *src, size_t n);

/* itm_barrier.c: `n` bytes at any alignment, through the runtime's
 * accessors (plain memory when `tx` is NULL or for the transaction's own
 * frames). */
void itm_read_bytes(struct tmt_tx *tx, void *dst, const void *src, size_t n);
void itm_write_bytes(struct tmt_tx *tx, void *dst, const void *src, size_t n);

/* itm_eh.c: an exception leaves the outermost transaction through
 * _ITM_commitTransactionEH (noted), and what to undo of it when that commit
 * fails and the transaction restarts instead (abandon). */
void itm_eh_note(struct itm_thread *t, void *exc_ptr);
void itm_eh_abandon(struct itm_thread *t);

/* The vector types of the M64/M128/M256 barriers, as GCC passes them. */
typedef int itm_m64 __attribute__((vector_size(8), may_alias));
typedef float itm_m128 __attribute__((vector_size(16), may_alias));
typedef float itm_m256 __attribute__((vector_size(32), may_alias));

#endif
