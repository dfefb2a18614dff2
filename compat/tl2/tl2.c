/*
 * tl2.c - the TL2 0.9.6 API (tl2.h) on top of libtmtrace's public API.
 *
 * Owns: the TL2 thread descriptor (a handle on the calling thread's tmt_tx,
 * plus the undo log of TxStoreLocal) and the mapping of TL2's restart
 * protocol onto the runtime's: the client fills its own jmp_buf, TxStart
 * copies it into the buffer the runtime restarts through (tmt_tx_prepare),
 * so every abort lands back at the client's setjmp, which calls TxStart
 * again. It must never reach into the runtime's internals; TL2 has no error
 * returns, so an unusable runtime is reported on stderr and aborts the
 * program (the only way to refuse).
 */
#include "tl2.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tmtrace.h"

/* TxSite is tmt_site under its TL2-side name. */
_Static_assert(sizeof(TxSite) == sizeof(tmt_site), "TxSite must mirror tmt_site");
_Static_assert(offsetof(TxSite, file) == offsetof(tmt_site, file), "TxSite.file");
_Static_assert(offsetof(TxSite, line) == offsetof(tmt_site, line), "TxSite.line");
_Static_assert(offsetof(TxSite, label) == offsetof(tmt_site, label), "TxSite.label");
_Static_assert(offsetof(TxSite, id) == offsetof(tmt_site, id), "TxSite.id");

/* The calling thread's descriptor once TxInitThread (or tmalloc_reserve, see
 * there) has entered it, NULL before and after: tmalloc_reserve records its
 * blocks' allocation sites through it. Initial-exec, as the runtime's own
 * thread-locals (libtl2.a goes into programs): every malloc reads it, and
 * the general model's lookup is a call. */
static __thread tmt_tx *tl2_tx __attribute__((tls_model("initial-exec")));
/* The thread has left (TxFreeThread): tmalloc_reserve does not enter it again. */
static __thread int tl2_left;
/* TxShutdown has run: the trace is written, no thread is entered any more. */
static int tl2_down;

struct tl2_undo {
    volatile intptr_t *addr;
    intptr_t old;
};

struct _Thread {
    tmt_tx *tx;
    long id;
    int in_tx; /* between an outermost TxStart and its TxCommit (how TxStart tells a restart) */
    int commit_slow; /* in_tx or TxStoreLocal writes logged: TxCommit forgets them */
    struct tl2_undo *undo;
    size_t nundo;
    size_t capundo;
};

_Static_assert(offsetof(Thread, tx) == 0, "TxDescriptor_ (tl2.h) reads a Thread's first member");
_Static_assert(TMT_TX_READ_ONLY == 1u, "stm.h's STM_TX_READ_ONLY_ repeats TMT_TX_READ_ONLY");

static tmt_site tl2_default_site = TMT_SITE_INIT("TxStart");

static void tl2_fatal(const char *what)
{
    fprintf(stderr, "libtl2: %s: %s\n", what, tmt_error());
    abort();
}

void TxOnce(void)
{
    if (tmt_init() != 0)
        tl2_fatal("TxOnce");
}

/* Like TL2's TxShutdown, reports the run's transaction counts (on stderr, so
 * a program's own output stays unchanged): one line, then the aborts by
 * reason. Benchmark harnesses read the abort rate from it. */
static void tl2_report(void)
{
    tmt_stats st;
    if (tmt_stats_get(&st) != 0)
        return;
    fprintf(stderr, "TL2 system shutdown: commits=%llu aborts=%llu", (unsigned long long)st.commits,
            (unsigned long long)st.aborts);
    for (unsigned r = 1; r < TMT_ABORT_REASONS; r++)
        if (st.aborts_by_reason[r])
            fprintf(stderr, " %s=%llu", tmt_abort_reason_name(r), (unsigned long long)st.aborts_by_reason[r]);
    fputc('\n', stderr);
}

void TxShutdown(void)
{
    tl2_report();
    __atomic_store_n(&tl2_down, 1, __ATOMIC_RELEASE);
    if (tmt_shutdown() != 0)
        fprintf(stderr, "libtl2: TxShutdown: %s\n", tmt_error());
}

Thread *TxNewThread(void)
{
    /* Every STM_READ and STM_WRITE loads t->tx and TxStart writes in_tx:
     * on a cache line of its own, no program object that another thread
     * writes shares the line (calloc would place it among them). */
    size_t bytes = (sizeof(Thread) + 63) & ~(size_t)63;
    Thread *t = aligned_alloc(64, bytes);
    if (t)
        memset(t, 0, bytes);
    if (!t) {
        fprintf(stderr, "libtl2: TxNewThread: out of memory\n");
        abort();
    }
    return t;
}

void TxInitThread(Thread *Self, long id)
{
    Self->id = id;
    Self->tx = tmt_thread_enter();
    if (!Self->tx)
        tl2_fatal("TxInitThread");
    tl2_tx = Self->tx;
}

void TxFreeThread(Thread *Self)
{
    if (!Self)
        return;
    /* The runtime registers threads, not descriptors: only the thread that
     * initialised this descriptor can leave. */
    if (Self->tx && Self->tx == tmt_self()) {
        tmt_thread_exit();
        tl2_tx = NULL;
        tl2_left = 1;
    }
    free(Self->undo);
    free(Self);
}

/* Undoes the TxStoreLocal writes of an aborted attempt, newest first. */
static void tl2_undo_locals(Thread *Self)
{
    while (Self->nundo > 0) {
        struct tl2_undo *u = &Self->undo[--Self->nundo];
        *u->addr = u->old;
    }
}

void TxStartAt(Thread *Self, jmp_buf *envPtr, int *ROFlag, TxSite *site)
{
    tmt_tx *tx = Self->tx;
    if (Self->in_tx && tmt_tx_depth(tx) == 0) {
        /* Back from a restart: the runtime's buffer already holds the
         * client's restart point. */
        tl2_undo_locals(Self);
        tmt_tx_start(tx);
        return;
    }
    unsigned flags = (ROFlag && *ROFlag) ? TMT_TX_READ_ONLY : 0u;
    jmp_buf *env = tmt_tx_prepare(tx, (tmt_site *)(void *)site, flags);
    memcpy(env, envPtr, sizeof *env);
    Self->in_tx = 1;
    Self->commit_slow = 1;
    tmt_tx_start(tx);
}

jmp_buf *TxPrepareAt(Thread *Self, int readOnly, TxSite *site)
{
    return tmt_tx_prepare(Self->tx, (tmt_site *)(void *)site, readOnly ? TMT_TX_READ_ONLY : 0u);
}

/* TxBegin with TxStoreLocal writes logged: at an outermost start (a
 * restart) they are undone. Out of line, so that TxBegin saves nothing. */
__attribute__((noinline)) static void tl2_begin_with_locals(Thread *Self)
{
    tmt_tx *tx = Self->tx;
    if (tmt_tx_depth(tx) == 0)
        tl2_undo_locals(Self);
    tmt_tx_start(tx);
}

void TxBegin(Thread *Self)
{
    /* Outermost (the first attempt or a restart): undo the locals an
     * aborted attempt stored; the first attempt has none, and most
     * transactions store none, so the depth is asked only then. */
    if (__builtin_expect(Self->nundo > 0, 0)) {
        tl2_begin_with_locals(Self);
        return;
    }
    tmt_tx_start(Self->tx);
}

/* The function behind the TxStart macro (tl2.h), for callers without it:
 * one site for all of them. */
void (TxStart)(Thread *Self, jmp_buf *envPtr, int *ROFlag)
{
    TxStartAt(Self, envPtr, ROFlag, (TxSite *)(void *)&tl2_default_site);
}

/* A commit that may end the TxStartAt protocol or keep TxStoreLocal
 * writes: forgets both once the outermost block committed (a conflict
 * restarts the block with them intact). */
__attribute__((noinline)) static int tl2_commit_with_state(Thread *Self)
{
    tmt_tx_commit(Self->tx);
    if (tmt_tx_depth(Self->tx) == 0) {
        Self->in_tx = 0;
        Self->nundo = 0;
        Self->commit_slow = 0;
    }
    return 1;
}

void TxEnd_(Thread *Self)
{
    /* Tested before the commit, so that the usual one has nothing to do
     * after it. */
    if (__builtin_expect(Self->commit_slow, 0)) {
        (void)tl2_commit_with_state(Self);
        return;
    }
    tmt_tx_commit(Self->tx);
}

int TxCommit(Thread *Self)
{
    TxEnd_(Self);
    return 1;
}

void TxAbort(Thread *Self)
{
    tmt_tx_retry(Self->tx);
}

intptr_t TxLoad(Thread *Self, volatile intptr_t *addr)
{
    return (intptr_t)tmt_read_word(Self->tx, (volatile uintptr_t *)addr);
}

void TxStore(Thread *Self, volatile intptr_t *addr, intptr_t value)
{
    tmt_write_word(Self->tx, (volatile uintptr_t *)addr, (uintptr_t)value);
}

void TxStoreLocal(Thread *Self, volatile intptr_t *addr, intptr_t value)
{
    if (tmt_tx_depth(Self->tx) > 0) {
        if (Self->nundo == Self->capundo) {
            size_t cap = Self->capundo ? Self->capundo * 2 : 64;
            struct tl2_undo *u = realloc(Self->undo, cap * sizeof *u);
            if (!u) {
                fprintf(stderr, "libtl2: TxStoreLocal: out of memory for the undo log\n");
                abort();
            }
            Self->undo = u;
            Self->capundo = cap;
        }
        Self->commit_slow = 1;
        Self->undo[Self->nundo].addr = addr;
        Self->undo[Self->nundo].old = *addr;
        Self->nundo++;
    }
    *addr = value;
}

uint8_t TxLoad8(Thread *Self, volatile uint8_t *addr)
{
    return tmt_read_u8(Self->tx, addr);
}

/* The runtime has no 2-byte access: two exact byte accesses (little endian). */
uint16_t TxLoad16(Thread *Self, volatile uint16_t *addr)
{
    volatile uint8_t *b = (volatile uint8_t *)addr;
    return (uint16_t)(tmt_read_u8(Self->tx, b) | (tmt_read_u8(Self->tx, b + 1) << 8));
}

uint32_t TxLoad32(Thread *Self, volatile uint32_t *addr)
{
    return (uint32_t)tmt_read_i32(Self->tx, (volatile int32_t *)addr);
}

float TxLoadF(Thread *Self, volatile float *addr)
{
    return tmt_read_float(Self->tx, addr);
}

double TxLoadD(Thread *Self, volatile double *addr)
{
    return tmt_read_double(Self->tx, addr);
}

void TxStore8(Thread *Self, volatile uint8_t *addr, uint8_t value)
{
    tmt_write_u8(Self->tx, addr, value);
}

void TxStore16(Thread *Self, volatile uint16_t *addr, uint16_t value)
{
    volatile uint8_t *b = (volatile uint8_t *)addr;
    tmt_write_u8(Self->tx, b, (uint8_t)value);
    tmt_write_u8(Self->tx, b + 1, (uint8_t)(value >> 8));
}

void TxStore32(Thread *Self, volatile uint32_t *addr, uint32_t value)
{
    tmt_write_i32(Self->tx, (volatile int32_t *)addr, (int32_t)value);
}

void TxStoreF(Thread *Self, volatile float *addr, float value)
{
    tmt_write_float(Self->tx, addr, value);
}

void TxStoreD(Thread *Self, volatile double *addr, double value)
{
    tmt_write_double(Self->tx, addr, value);
}

void *TxAlloc(Thread *Self, size_t size)
{
    return tmt_malloc(Self->tx, size);
}

void TxFree(Thread *Self, void *ptr)
{
    tmt_free(Self->tx, ptr);
}

/* The programs' malloc (stm.h maps it here). Outside a transaction, through
 * tmt_malloc, which records the block with its caller (this function's
 * caller, by the tail calls) when the trace is on, so that tools name heap
 * words by where they were allocated; inside, plain malloc, as TL2's own.
 * A thread without a descriptor is entered here (which starts the runtime
 * if TxOnce has not yet): STAMP's main thread builds the shared structures
 * before it starts the workers, vacation's even before TxOnce, and calls
 * TxInitThread only then, as thread 0; those blocks hold the words that
 * conflict. Should the runtime refuse to start, TxOnce reports why. After
 * the thread's TxFreeThread or TxShutdown: plain malloc, as TL2's own. */
__attribute__((noinline)) static void *tl2_reserve_watched(size_t size)
{
    tmt_tx *tx = tl2_tx;
    if (tx == NULL && !tl2_left && !__atomic_load_n(&tl2_down, __ATOMIC_ACQUIRE))
        tx = tl2_tx = tmt_thread_enter();
    if (tx != NULL) /* outside a transaction: tmalloc_reserve saw to it */
        return tmt_malloc(tx, size);
    return malloc(size);
}

void *tmalloc_reserve(size_t size)
{
    tmt_tx *tx = tl2_tx;
    /* malloc itself, past the descriptor's load, a test for none, one
     * compare with the head's alloc_watch and one branch: but for a traced
     * thread outside transactions (alloc_watch exactly TRACED: tmt_malloc
     * records the block) and a thread not entered yet, out of line, so that
     * this saves no register. */
    if (__builtin_expect(tx != NULL, 1) &&
        ((const struct tmt_tx_head *)(const void *)tx)->alloc_watch != TMT_ALLOC_WATCH_TRACED)
        return malloc(size);
    return tl2_reserve_watched(size);
}

void *tmalloc_reserveAgain(void *ptr, size_t size)
{
    return realloc(ptr, size);
}

void tmalloc_release(void *ptr)
{
    free(ptr);
}
