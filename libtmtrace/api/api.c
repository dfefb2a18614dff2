/*
 * api.c - the public API of tmtrace.h but for the typed accessors
 * (accessors.c): the thin layer between a program and the runtime's modules.
 *
 * Owns: the library's life cycle (init, shutdown, the atexit and fork
 * handlers), argument checks of the public calls, transactional allocation's
 * entry points and the public statistics (filled from tx_registry.c's sums
 * and the tracer's counters).
 * Never: holds a transaction's state (tx_life.c and the modules do), exits
 * the process on bad input, or takes a lock on the transactional fast path.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "error.h"
#include "htm.h"
#include "site.h"
#include "stm.h"
#include "tmtrace.h"
#include "trace_format.h"
#include "tracer.h"
#include "tx.h"
#include "tx_life.h"
#include "tx_registry.h"
#include "tx_util.h"
#include "txmem.h"

static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER; /* init and shutdown */
static int api_ready;          /* tmt_init succeeded (read with acquire) */
static int api_shut;           /* tmt_shutdown ran */
static int api_atexit_done;

/* ---- life cycle ------------------------------------------------------------ */

static void api_atexit(void) { (void)tmt_shutdown(); }

/* ---- fork ------------------------------------------------------------------ */

/* fork() is a serial point: the forking thread takes the serial lock, keeps
 * hardware attempts out and waits until every other transaction has ended,
 * so the child inherits no stripe lock, no half-written commit and no
 * hardware-path state of a thread it does not have; then the registry lock.
 * (Registered after the tracer's handlers, so this runs first in prepare:
 * a transaction being drained may still need the trace pool's lock.) */
static int api_fork_serial; /* the prepare handler took the serial lock */

static void api_fork_prepare(void)
{
    struct tmt_tx *self = txreg_self();
    uint32_t me = self ? self->thread_id : UINT32_MAX;
    /* A serial attempt may fork, a lone one too (it holds the mark). */
    api_fork_serial = stm_serial_holder() != me && !(self != NULL && self->stm.serial_marked);
    if (api_fork_serial) {
        stm_serial_lock(me);
        stm_lone_wait_out(); /* fenced: the drain below sees every announced begin; no lone attempt runs */
    }
    htm_fork_prepare();
    txreg_drain_others(self);
    txreg_lock();
}

static void api_fork_parent(void)
{
    txreg_unlock();
    htm_fork_parent();
    if (api_fork_serial)
        stm_serial_unlock();
}

/* The child has one thread: every other descriptor's thread is gone. */
static void api_fork_child(void)
{
    struct tmt_tx *self = txreg_self();
    txreg_fork_child(self);
    stm_lone_fork_child(self != NULL && self->stm.serial_marked);
    htm_fork_child(self != NULL && self->htm.sw_counted);
    site_fork_child();
    txreg_unlock();
    if (api_fork_serial)
        stm_serial_unlock();
    if (self != NULL) {
        tracer_fork_thread(&self->trace);
        tx_watch_allocs(self); /* the child's trace level is settled only now */
    }
}

/* The trace of a process is written once: after tmt_shutdown nothing more
 * could be recorded, so a second init fails instead of pretending. */
__attribute__((noinline, cold)) static int api_after_shutdown(void)
{
    return error_set("tmt_init: called after tmt_shutdown(): the runtime is shut down for the rest of the "
                     "process (its trace is closed); shut down once, at the end");
}

TMT_API int tmt_init(void)
{
    if (__atomic_load_n(&api_ready, __ATOMIC_ACQUIRE))
        return __atomic_load_n(&api_shut, __ATOMIC_ACQUIRE) ? api_after_shutdown() : 0;
    pthread_mutex_lock(&api_lock);
    int rc = 0;
    /* Unlike pthread_once, a failed init can be retried once the environment
     * is fixed; success happens once. */
    if (!api_ready) {
        if (config_load() != 0 || stm_init() != 0) {
            rc = -1;
        } else {
            htm_init();
            if (tracer_init() != 0) {
                rc = -1;
            } else {
                if (!api_atexit_done && atexit(api_atexit) == 0) {
                    api_atexit_done = 1;
                    (void)pthread_atfork(api_fork_prepare, api_fork_parent, api_fork_child);
                }
                __atomic_store_n(&api_ready, 1, __ATOMIC_RELEASE);
            }
        }
    }
    pthread_mutex_unlock(&api_lock);
    return rc;
}

TMT_API int tmt_shutdown(void)
{
    pthread_mutex_lock(&api_lock);
    int rc = 0;
    if (api_ready && !api_shut) {
        __atomic_store_n(&api_shut, 1, __ATOMIC_RELEASE);
        rc = tracer_shutdown();
    }
    pthread_mutex_unlock(&api_lock);
    return rc;
}

/* ---- threads ------------------------------------------------------------------- */

TMT_API tmt_tx *tmt_thread_enter(void)
{
    struct tmt_tx *self = txreg_self();
    if (self)
        return self;
    if (tmt_init() != 0)
        return NULL;
    return tx_thread_enter();
}

TMT_API void tmt_thread_exit(void)
{
    struct tmt_tx *tx = txreg_self();
    if (tx == NULL)
        return;
    if (TX_UNLIKELY(tx->depth > 0))
        tx_misuse("tmt_thread_exit: the thread is still inside a transaction (a TMT_ATOMIC block was left by "
                  "return, break or goto, or the call is inside one); leave the block through its TMT_END");
    tx_thread_exit(tx);
}

/* A thread that never entered is entered here: the accessors it then calls
 * get a descriptor, not NULL. */
TMT_API tmt_tx *tmt_self(void)
{
    struct tmt_tx *self = txreg_self();
    return self ? self : tmt_thread_enter();
}

/* ---- transactions ------------------------------------------------------------- */

__attribute__((noreturn, cold, noinline)) static void api_null_descriptor(void)
{
    tx_misuse("TMT_ATOMIC: the descriptor is NULL; call tmt_thread_enter() (or tmt_self()) in this thread "
              "and pass what it returns");
}

TMT_API jmp_buf *tmt_tx_prepare(tmt_tx *tx, tmt_site *site, unsigned flags)
{
    if (TX_UNLIKELY(tx == NULL))
        api_null_descriptor();
    return tx_prepare(tx, site, flags);
}

/* api_null_descriptor for tmt_tx_begin, reached by a tail call: a call of
 * a function known not to return would make the entry point align the
 * stack on every transaction (noipa: not known). */
__attribute__((cold, noinline, noipa)) static jmp_buf *api_begin_null(void)
{
    api_null_descriptor();
}

TMT_API jmp_buf *tmt_tx_begin(tmt_tx *tx, tmt_site *site, unsigned flags)
{
    if (TX_UNLIKELY(tx == NULL))
        return api_begin_null();
    return tx_begin(tx, site, flags, (uintptr_t)__builtin_dwarf_cfa()); /* as tmt_tx_start */
}

TMT_API void tmt_tx_scope_left_(tmt_tx *tx, const tmt_site *site)
{
    char msg[512];
    snprintf(msg, sizeof msg,
             "TMT_ATOMIC at %s:%d (\"%s\") was left by return, break or goto before its TMT_END: the "
             "transaction never committed; leave the block by reaching TMT_END (or tmt_tx_cancel)",
             site && site->file ? site->file : "?", site ? site->line : 0,
             site && site->label ? site->label : "");
    (void)tx;
    tx_misuse(msg);
}
/* The caller's frame (where TMT_ATOMIC's setjmp ran) begins at this call's
 * frame address: one instruction, and the lone thread's undo log needs it. */
TMT_API int tmt_tx_start(tmt_tx *tx) { return tx_start(tx, (uintptr_t)__builtin_dwarf_cfa()); }
TMT_API void tmt_tx_commit(tmt_tx *tx) { tx_commit(tx); }
TMT_API void tmt_tx_retry(tmt_tx *tx) { tx_retry(tx); }
TMT_API void tmt_tx_cancel(tmt_tx *tx) { tx_cancel(tx); }
TMT_API int tmt_tx_depth(const tmt_tx *tx) { return tx ? tx->depth : 0; }

/* ---- allocation ---------------------------------------------------------------- */

/* The ALLOC record, out of line: inlined, the hook's stamping made every
 * tmt_malloc save six registers for it, traced or not. */
__attribute__((noinline)) static void api_record_alloc(tmt_tx *tx, void *p, size_t size, const void *caller)
{
    tb_ev_alloc(&tx->trace, p, size, caller);
}

/* tmt_malloc inside a transaction, or of a traced thread: logged, and
 * recorded with the allocation site `caller`. No trace record inside a
 * real hardware transaction. */
__attribute__((noinline)) static void *api_malloc_logged(tmt_tx *tx, size_t size, const void *caller)
{
    void *p = txmem_malloc(tx, size);
    if (TX_UNLIKELY(tx_traced(tx)) && p != NULL && tx->mode != TX_MODE_HTM)
        api_record_alloc(tx, p, size, caller);
    return p;
}

TMT_API void *tmt_malloc(tmt_tx *tx, size_t size)
{
    /* Outside a transaction an untraced thread has nothing to log or record
     * (the head's alloc_watch is clear): the allocation is malloc's alone, a
     * tail call with no register saved. The allocation site, for tools that
     * name heap addresses, is this function's caller (a wrapper that
     * tail-calls this, like the TL2 layer's TxAlloc and malloc, passes its
     * own caller's). */
    if (tx == NULL || tx->head.alloc_watch == 0)
        return malloc(size);
    return api_malloc_logged(tx, size, __builtin_return_address(0));
}

TMT_API void tmt_free(tmt_tx *tx, void *ptr)
{
    if (tx == NULL || tx->head.alloc_watch == 0) {
        free(ptr);
        return;
    }
    txmem_free(tx, ptr);
}

/* ---- statistics ------------------------------------------------------------------ */

TMT_API int tmt_stats_get(tmt_stats *out)
{
    if (out == NULL)
        return error_set("tmt_stats_get: NULL output");
    struct tx_stats sum;
    txreg_sum(&sum);
    memset(out, 0, sizeof *out);
    out->commits = sum.all.commits;
    out->aborts = sum.all.aborts;
    memcpy(out->aborts_by_reason, sum.all.aborts_by_reason, sizeof out->aborts_by_reason);
    out->htm_commits = sum.htm_commits;
    out->htm_aborts = sum.htm_aborts;
    out->fallbacks = sum.fallbacks;
    out->serial = sum.serial;
    out->events_recorded = tracer_events_recorded();
    out->events_dropped = tracer_events_dropped();
    out->writer_events = tracer_writer_events();
    out->writer_cpu_ns = tracer_writer_cpu_ns();
    out->trace_bytes = tracer_trace_bytes();
    out->buffer_bytes = tracer_buffer_bytes();
    out->buffer_inline_maps = tracer_buffer_inline_maps();
    out->stamps_raised = tracer_stamps_raised();
    out->buffer_late_maps = tracer_buffer_late_maps();
    out->tracer_cpu_ns = tracer_cpu_ns();
    out->attempts_shed = tracer_attempts_shed();
    return 0;
}

TMT_API size_t tmt_stats_sites(tmt_site_stats *out, size_t max)
{
    uint32_t n = site_count();
    for (uint32_t id = 1; id <= n && id <= max; id++) {
        tmt_site_stats *o = &out[id - 1];
        const tmt_site *s = site_get(id);
        struct tx_counts c;
        txreg_sum_site(id, &c);
        memset(o, 0, sizeof *o);
        o->id = id;
        o->file = s ? s->file : "";
        o->line = s ? s->line : 0;
        o->label = s ? s->label : "";
        o->commits = c.commits;
        o->aborts = c.aborts;
        memcpy(o->aborts_by_reason, c.aborts_by_reason, sizeof o->aborts_by_reason);
    }
    return n;
}

TMT_API const char *tmt_abort_reason_name(unsigned reason)
{
    return tf_abort_reason_name(reason);
}
