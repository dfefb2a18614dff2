/*
 * itm_tx.c - the transaction life cycle of the libitm ABI: begin (after the
 * checkpoint of itm_entry.S), commit, abort and restart, flat and closed
 * nesting, irrevocability, the _ITM_L* undo log, user actions, and the
 * ABI's small queries.
 *
 * Owns: struct itm_thread (one per thread, made on its first transaction,
 * its runtime descriptor released when the thread ends), the restart hook
 * the runtime calls instead of longjmp (tmt_tx.restart), the meaning of
 * the ABI's property bits and return codes, the top of the transaction's
 * own stack (itm_stack_top, itm.h) and what the _ITM_L* log restores of it,
 * and privatization safety (a commit returns once no software attempt that
 * started before it runs). Nesting is flat; a nested transaction that can
 * cancel itself records a checkpoint, and its cancel undoes only its own
 * writes, which needs the in-place undo log of a serial attempt: a
 * non-serial attempt that cancels a nested transaction restarts serially
 * first. A runtime that cannot start ends the process with one line and
 * status 1 (the ABI has no error return). Never: accesses shared memory
 * other than through the runtime, records trace events other than the
 * runtime's hooks.
 */
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "htm.h"
#include "itm.h"
#include "itm_site.h"
#include "stm.h"
#include "trace_buffer.h"
#include "trace_file.h"
#include "tx_registry.h"

__thread struct tmt_tx *itm_tx __attribute__((tls_model("initial-exec")));
__thread struct itm_thread *itm_me __attribute__((tls_model("initial-exec")));
__thread uintptr_t itm_stack_top __attribute__((tls_model("initial-exec")));

static pthread_key_t itm_key;
static pthread_once_t itm_setup_once = PTHREAD_ONCE_INIT;

/* The ABI has no error return: a runtime that cannot start stops the program. */
__attribute__((noreturn, cold)) static void itm_fatal(const char *what, const char *why)
{
    fprintf(stderr, "libtmtrace-itm: %s: %s\n", what, why);
    abort();
}

/* The runtime cannot start (a bad TMTRACE_* value, a trace file that cannot
 * be created): the program's own mistake, not a crash. One line names the
 * cause, once however many threads meet it (the others wait for the end),
 * and the process exits with status 1; the ABI gives no way to fail to the
 * program instead. */
__attribute__((noreturn, cold)) static void itm_cannot_start(const char *why)
{
    static int told;
    if (__atomic_exchange_n(&told, 1, __ATOMIC_ACQ_REL) != 0)
        for (;;)
            pause();
    fprintf(stderr, "libtmtrace-itm: %s\n", why);
    exit(1);
}

/* ---- threads ---------------------------------------------------------------- */

static void itm_thread_gone(void *p)
{
    struct itm_thread *t = p;
    itm_heap_left(); /* the allocations from here on are not noted */
    tmt_thread_exit();
    free(t->frames);
    free(t->log);
    free(t->pool);
    free(t->undo);
    free(t->commit);
    free(t);
    itm_me = NULL;
    itm_tx = NULL;
}

/* The process's part, once, before any thread's first transaction: the
 * thread key, and fenced begins for privatization safety (see
 * _ITM_commitTransaction). */
static void itm_process_setup(void)
{
    if (pthread_key_create(&itm_key, itm_thread_gone) != 0)
        itm_fatal("pthread_key_create", "no thread-specific key left");
    stm_fence_begins();
}

__attribute__((noinline)) static struct itm_thread *itm_thread_new(void)
{
    struct tmt_tx *tx = tmt_thread_enter();
    if (tx == NULL)
        itm_cannot_start(tmt_error());
    struct itm_thread *t = calloc(1, sizeof *t);
    if (t == NULL)
        itm_fatal("starting a thread", "out of memory");
    t->tx = tx;
    pthread_once(&itm_setup_once, itm_process_setup);
    (void)pthread_setspecific(itm_key, t);
    itm_me = t;
    itm_tx = tx;
    itm_heap_entered(tx);
    return t;
}

/* The runtime starts (tmt_init: the TMTRACE_* environment, the trace file,
 * the pre-run clock sampling) when the library loads into an executable
 * that calls _ITM_beginTransaction itself, so that the sampling precedes
 * its threads; in any other process (a shell or `timeout` that a preload
 * reaches too, a program whose transactions live in a shared library) at
 * its first transaction. */
static int itm_exe_uses_tm(struct dl_phdr_info *info, size_t size, void *found)
{
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type != PT_DYNAMIC)
            continue;
        const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        const char *strtab = NULL;
        size_t strsz = 0;
        for (; d->d_tag != DT_NULL; d++) {
            if (d->d_tag == DT_STRTAB)
                strtab = (const char *)d->d_un.d_ptr; /* relocated by the loader */
            else if (d->d_tag == DT_STRSZ)
                strsz = d->d_un.d_val;
        }
        static const char name[] = "_ITM_beginTransaction";
        *(int *)found = strtab && memmem(strtab, strsz, name, sizeof name) != NULL;
    }
    return 1; /* the executable comes first: look no further */
}

__attribute__((constructor)) static void itm_ctor(void)
{
    int found = 0;
    dl_iterate_phdr(itm_exe_uses_tm, &found);
    if (!found)
        return;
    if (tmt_init() != 0)
        itm_cannot_start(tmt_error()); /* before main, not in the middle of its work */
    if (config.events != CONFIG_EVENTS_OFF)
        itm_heap_start(); /* after tmt_init: see there */
}

struct itm_thread *itm_thread(void)
{
    struct itm_thread *t = itm_me;
    return TX_LIKELY(t != NULL) ? t : itm_thread_new();
}

/* ---- undo log and user actions ---------------------------------------------- */

/* Puts back what the log saved since `mark`, newest first, but for the
 * transaction's own frames below `keep_from`: those are gone once the
 * restart or cancel resumes at its checkpoint, whose stack pointer that is
 * (UINTPTR_MAX: the outermost one's, below which every own frame lies), and
 * their addresses may by now hold the frames of this very call. */
static void itm_log_restore(struct itm_thread *t, uint32_t mark, uintptr_t keep_from)
{
    while (t->nlog > mark) {
        const struct itm_log *l = &t->log[--t->nlog];
        if (!l->own_stack || (uintptr_t)l->addr >= keep_from)
            memcpy(l->addr, t->pool + l->off, l->len);
        t->npool = l->off;
    }
}

static void itm_undo_run(struct itm_thread *t, uint32_t mark)
{
    while (t->nundo > mark) {
        const struct itm_action *a = &t->undo[--t->nundo];
        a->fn(a->arg);
    }
}

static void itm_reset(struct itm_thread *t)
{
    t->nframes = 0;
    t->nlog = 0;
    t->npool = 0;
    t->nundo = 0;
    t->ncommit = 0;
    t->eh_in_flight = NULL;
}

static void itm_action_add(struct itm_action **a, uint32_t *n, uint32_t *cap, void (*fn)(void *), void *arg)
{
    if (*n == *cap)
        *a = tx_grow(*a, cap, sizeof **a, 8);
    (*a)[*n].fn = fn;
    (*a)[*n].arg = arg;
    (*n)++;
}

static void itm_log_add(struct itm_thread *t, const void *addr, size_t len)
{
    if (t->nlog == t->logcap)
        t->log = tx_grow(t->log, &t->logcap, sizeof *t->log, 16);
    size_t off = (t->npool + 7) & ~(size_t)7;
    if (off + len > t->poolcap) {
        size_t cap = t->poolcap ? t->poolcap : 256;
        while (cap < off + len)
            cap *= 2;
        unsigned char *p = realloc(t->pool, cap);
        if (p == NULL)
            abort(); /* as tx_grow: no consistent way on */
        t->pool = p;
        t->poolcap = cap;
    }
    memcpy(t->pool + off, addr, len);
    t->log[t->nlog].addr = (void *)addr;
    t->log[t->nlog].len = len;
    t->log[t->nlog].off = off;
    t->log[t->nlog].own_stack = itm_own_stack((uintptr_t)addr, len) != 0;
    t->nlog++;
    t->npool = off + len;
}

static void itm_log_save(const void *addr, size_t len)
{
    struct itm_thread *t = itm_thread();
    if (t->tx->depth > 0)
        itm_log_add(t, addr, len);
}

void itm_own_stack_write(void *dst, const void *src, size_t n)
{
    struct itm_thread *t = itm_me;
    if (TX_UNLIKELY(t != NULL && t->nframes > 0)) {
        /* The innermost cancellable transaction's frames outlive it from
         * its checkpoint's stack pointer up (the outer ones' too). */
        uintptr_t keep = t->frames[t->nframes - 1].jb.rsp, a = (uintptr_t)dst;
        if (a + n > keep) {
            uintptr_t from = a > keep ? a : keep;
            itm_log_add(t, (const void *)from, a + n - from);
        }
    }
    memcpy(dst, src, n);
}

/* ---- begin, restart, commit ------------------------------------------------- */

/* The plain clone can run a serial attempt when it cannot cancel (nothing
 * to undo) and no read or write is to be recorded. */
static inline int itm_serial_plain(uint32_t prop, const struct tmt_tx *tx)
{
    return (prop & (ITM_PR_UNINSTRUMENTED | ITM_PR_HAS_NO_ABORT)) == (ITM_PR_UNINSTRUMENTED | ITM_PR_HAS_NO_ABORT) &&
           !tb_records_accesses(&tx->trace);
}

static inline uint32_t itm_run_code(const struct itm_thread *t, const struct tmt_tx *tx)
{
    /* A real hardware attempt needs no barriers: run the plain clone. */
    if (tx->mode == TX_MODE_HTM && (t->prop & ITM_PR_UNINSTRUMENTED))
        return ITM_A_RUN_UNINSTRUMENTED;
    if (tx_is_serial(tx) && itm_serial_plain(t->prop, tx))
        return ITM_A_RUN_UNINSTRUMENTED;
    return ITM_A_RUN_INSTRUMENTED;
}

/* The runtime's restart hook: the attempt is rolled back and recorded; put
 * back what the ABI logged, then start the next attempt (or skip the block
 * when cancelled) at the outermost checkpoint. */
__attribute__((noreturn)) static void itm_restart(struct tmt_tx *tx)
{
    struct itm_thread *t = itm_me;
    itm_log_restore(t, 0, UINTPTR_MAX);
    itm_undo_run(t, 0);
    if (t->eh_in_flight)
        itm_eh_abandon(t);
    itm_reset(t);
    uint32_t code = ITM_A_RESTORE_LIVE;
    if (tmt_tx_start(tx))
        code |= itm_run_code(t, tx);
    else
        code |= ITM_A_ABORT;
    itm_longjmp(&t->jb, code);
}

static uint32_t itm_begin_nested(struct itm_thread *t, struct tmt_tx *tx, uint32_t prop, const struct itm_jb *jb)
{
    (void)tmt_tx_prepare(tx, itm_site_of(jb->rip), (prop & ITM_PR_DOES_GO_IRREVOCABLE) ? TMT_TX_IRREVOCABLE : 0u);
    (void)tmt_tx_start(tx); /* one level deeper; may restart the whole transaction serially */
    if (prop & ITM_PR_DOES_GO_IRREVOCABLE)
        t->lone = 0; /* irrevocable from here on */
    if (!(prop & ITM_PR_HAS_NO_ABORT)) {
        if (t->nframes == t->framecap)
            t->frames = tx_grow(t->frames, &t->framecap, sizeof *t->frames, 4);
        struct itm_frame *f = &t->frames[t->nframes++];
        f->jb = *jb;
        f->depth = tx->depth;
        f->serial_mark = tx_is_serial(tx) ? stm_serial_mark(tx) : 0;
        f->log_mark = t->nlog;
        f->undo_mark = t->nundo;
    }
    return ITM_A_RUN_INSTRUMENTED;
}

uint32_t itm_begin(uint32_t prop, const struct itm_jb *jb)
{
    struct itm_thread *t = itm_thread();
    struct tmt_tx *tx = t->tx;
    if (tx->depth > 0)
        return itm_begin_nested(t, tx, prop, jb);
    t->jb = *jb;
    itm_stack_top = jb->rsp;
    t->prop = prop;
    itm_reset(t);
    t->txid = ((uint64_t)tx->thread_id << 40) + ++t->txseq + ITM_NO_TRANSACTION_ID;
    unsigned flags = ((prop & ITM_PR_READ_ONLY) ? TMT_TX_READ_ONLY : 0u) |
                     ((prop & ITM_PR_DOES_GO_IRREVOCABLE) ? TMT_TX_IRREVOCABLE : 0u);
    /* A thread alone runs serially, as libitm does: the plain clone when
     * the block cannot cancel (no barriers at all), else the instrumented
     * one in place with the runtime's undo log, which a cancel or retry
     * rolls back; either way no read set, no redo log, no commit-time
     * validation or privatization wait, and the serial lock costs no
     * fence (tx_life.c). The instrumented serial attempt is still
     * retryable (t->lone, _ITM_inTransaction); the plain one is not. Not
     * when a hardware path is configured: a lone thread's traces show its
     * hardware attempts, as with more threads. */
    int alone = !(prop & ITM_PR_DOES_GO_IRREVOCABLE) && tx->joined && txreg_alone_self(tx) && txreg_lone_settled(tx);
    int plain = itm_serial_plain(prop, tx);
    t->lone = alone && !plain && htm_path() == TX_MODE_NONE;
    if (t->lone || (alone && plain))
        flags |= TMT_TX_IRREVOCABLE;
    (void)tmt_tx_prepare(tx, itm_site_of(jb->rip), flags);
    if (alone)
        tx_serial_because(tx, TF_SERIAL_ALONE); /* the runtime's choice, not the program's */
    tx->restart = itm_restart;
    if (!tmt_tx_start(tx))
        return ITM_A_ABORT;
    return itm_run_code(t, tx);
}

ITM_ABI void _ITM_commitTransaction(void)
{
    struct itm_thread *t = itm_me;
    struct tmt_tx *tx = itm_tx;
    if (t == NULL || tx->depth == 0)
        itm_fatal("_ITM_commitTransaction", "called outside a transaction");
    if (tx->depth > 1) {
        if (t->nframes && t->frames[t->nframes - 1].depth == tx->depth)
            t->nframes--;
        tmt_tx_commit(tx);
        return;
    }
    /* Privatization safety, as libitm gives it: once this returns, no
     * software attempt of another thread that started before this commit
     * still runs, so memory this transaction (or one it saw) unlinked may
     * be freed or used without a transaction. A read-only attempt unlinked
     * nothing itself, and every commit it saw is at or below its snapshot:
     * attempts older than the snapshot are all it waits for. Hardware and
     * serial attempts leave no such attempt behind. */
    int software = tx->mode == TX_MODE_STM, read_only = tx->stm.wn == 0;
    uint64_t snapshot = tx->stm.rv;
    tmt_tx_commit(tx); /* a failed commit restarts at the checkpoint */
    if (software)
        txreg_wait_older(tx, read_only ? snapshot : stm_clock_now());
    for (uint32_t i = 0; i < t->ncommit; i++)
        t->commit[i].fn(t->commit[i].arg);
    itm_reset(t);
}

ITM_ABI void _ITM_commitTransactionEH(void *exc_ptr)
{
    struct itm_thread *t = itm_me;
    if (t != NULL && t->tx->depth == 1)
        itm_eh_note(t, exc_ptr);
    _ITM_commitTransaction();
}

/* ---- abort ----------------------------------------------------------------- */

/* The nested cancel put this location back: the trace sees it as a write. */
static void itm_undone(struct tmt_tx *tx, uintptr_t addr, uint64_t value, unsigned size)
{
    tb_ev_write(&tx->trace, (const volatile void *)addr, value, size);
}

/* Cancels the innermost transaction alone (closed nesting). */
__attribute__((noreturn)) static void itm_cancel_nested(struct itm_thread *t, struct tmt_tx *tx)
{
    if (t->nframes == 0 || t->frames[t->nframes - 1].depth != tx->depth)
        tmt_tx_cancel(tx); /* it promised not to abort: cancel everything */
    if (!tx_is_serial(tx))
        itm_go_serial(tx); /* restarts the transaction; its next attempt gets here serially */
    const struct itm_frame *f = &t->frames[--t->nframes];
    stm_serial_rollback_to(tx, f->serial_mark, itm_undone);
    itm_log_restore(t, f->log_mark, f->jb.rsp);
    itm_undo_run(t, f->undo_mark);
    while (tx->depth >= f->depth)
        tmt_tx_commit(tx); /* leaves the cancelled levels: inner commits only count down */
    itm_longjmp(&f->jb, ITM_A_ABORT | ITM_A_RESTORE_LIVE);
}

ITM_ABI __attribute__((noreturn)) void _ITM_abortTransaction(int reason)
{
    struct itm_thread *t = itm_me;
    struct tmt_tx *tx = itm_tx;
    if (t == NULL || tx->depth == 0)
        itm_fatal("_ITM_abortTransaction", "called outside a transaction");
    if (reason & ITM_USER_RETRY)
        tmt_tx_retry(tx);
    if (!(reason & ITM_OUTER_ABORT) && tx->depth > 1)
        itm_cancel_nested(t, tx);
    tmt_tx_cancel(tx);
}

/* ---- modes and queries ---------------------------------------------------- */

void itm_go_serial(struct tmt_tx *tx)
{
    tx_serial_now(tx, TF_SERIAL_REQUESTED);
    itm_me->lone = 0; /* serial already: irrevocable now, not only alone */
}

ITM_ABI void _ITM_changeTransactionMode(int mode)
{
    (void)mode; /* modeSerialIrrevocable is the only one */
    struct tmt_tx *tx = itm_tx;
    if (tx != NULL && tx->depth > 0)
        itm_go_serial(tx);
}

ITM_ABI int _ITM_inTransaction(void)
{
    const struct tmt_tx *tx = itm_tx;
    if (tx == NULL || tx->depth == 0)
        return ITM_OUTSIDE;
    /* A lone thread's serial attempt can still cancel: retryable. */
    return tx_is_serial(tx) && !itm_me->lone ? ITM_IN_IRREVOCABLE : ITM_IN_RETRYABLE;
}

ITM_ABI uint64_t _ITM_getTransactionId(void)
{
    const struct tmt_tx *tx = itm_tx;
    return (tx != NULL && tx->depth > 0) ? itm_me->txid : ITM_NO_TRANSACTION_ID;
}

ITM_ABI void _ITM_addUserCommitAction(void (*fn)(void *), uint64_t tid, void *arg)
{
    (void)tid;
    struct itm_thread *t = itm_thread();
    if (t->tx->depth == 0) {
        fn(arg); /* outside a transaction it has committed already */
        return;
    }
    itm_action_add(&t->commit, &t->ncommit, &t->commitcap, fn, arg);
}

ITM_ABI void _ITM_addUserUndoAction(void (*fn)(void *), void *arg)
{
    struct itm_thread *t = itm_thread();
    if (t->tx->depth > 0)
        itm_action_add(&t->undo, &t->nundo, &t->undocap, fn, arg);
}

ITM_ABI void _ITM_dropReferences(void *addr, size_t len)
{
    /* A hint that the block no longer needs these; the STM keeps nothing
     * that could be dropped safely. */
    (void)addr;
    (void)len;
}

ITM_ABI int _ITM_versionCompatible(int version) { return version == ITM_VERSION_NO; }

ITM_ABI const char *_ITM_libraryVersion(void) { return ITM_VERSION; }

struct itm_src_location {
    uint32_t reserved_1, flags, reserved_2, reserved_3;
    const char *psource;
};

ITM_ABI __attribute__((noreturn)) void _ITM_error(const struct itm_src_location *loc, int code)
{
    char why[160];
    snprintf(why, sizeof why, "error %d%s%s", code, loc && loc->psource ? " at " : "",
             loc && loc->psource ? loc->psource : "");
    itm_fatal("_ITM_error", why);
}

/* ---- _ITM_L*: values to put back if the attempt aborts ---------------------- */

#define ITM_LOG_FN(T, type)                                                                         \
    ITM_ABI void _ITM_L##T(const type *addr) { itm_log_save(addr, sizeof(type)); }
ITM_LOG_FN(U1, uint8_t)
ITM_LOG_FN(U2, uint16_t)
ITM_LOG_FN(U4, uint32_t)
ITM_LOG_FN(U8, uint64_t)
ITM_LOG_FN(F, float)
ITM_LOG_FN(D, double)
ITM_LOG_FN(E, long double)
ITM_LOG_FN(CF, float _Complex)
ITM_LOG_FN(CD, double _Complex)
ITM_LOG_FN(CE, long double _Complex)
ITM_LOG_FN(M64, itm_m64)
ITM_LOG_FN(M128, itm_m128)
ITM_LOG_FN(M256, itm_m256)

ITM_ABI void _ITM_LB(const void *addr, size_t len) { itm_log_save(addr, len); }
