/*
 * api.c - the public API of tmtrace.h: the thin layer between a program and
 * the runtime's modules.
 *
 * Owns: the library's life cycle (init, shutdown, the atexit and fork
 * handlers), argument checks of the public calls, the public statistics
 * (filled from tx_registry.c's sums and the tracer's counters) and the typed
 * accessors, which dispatch on the attempt's mode to the STM, the hardware
 * path, serial mode or plain memory and call the read/write hooks.
 * Never: holds a transaction's state (tx.c and the modules do), exits the
 * process on bad input, or takes a lock on the transactional fast path.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "error.h"
#include "htm.h"
#include "site.h"
#include "stm.h"
#include "stm_barrier.h"
#include "tmtrace.h"
#include "trace_format.h"
#include "tracer.h"
#include "tx.h"
#include "tx_registry.h"
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
    api_fork_serial = stm_serial_holder() != me; /* a serial attempt may fork */
    if (api_fork_serial) {
        stm_serial_lock(me);
        stm_fence_others(); /* the drain below sees every announced begin */
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
    htm_fork_child(self != NULL && self->htm.sw_counted);
    site_fork_child();
    txreg_unlock();
    if (api_fork_serial)
        stm_serial_unlock();
    if (self != NULL)
        tracer_fork_thread(&self->trace);
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

TMT_API jmp_buf *tmt_tx_prepare(tmt_tx *tx, tmt_site *site, unsigned flags)
{
    if (TX_UNLIKELY(tx == NULL))
        tx_misuse("TMT_ATOMIC: the descriptor is NULL; call tmt_thread_enter() (or tmt_self()) in this thread "
                  "and pass what it returns");
    return tx_prepare(tx, site, flags);
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
TMT_API int tmt_tx_start(tmt_tx *tx) { return tx_start(tx); }
TMT_API void tmt_tx_commit(tmt_tx *tx) { tx_commit(tx); }
TMT_API void tmt_tx_retry(tmt_tx *tx) { tx_retry(tx); }
TMT_API void tmt_tx_cancel(tmt_tx *tx) { tx_cancel(tx); }
TMT_API int tmt_tx_depth(const tmt_tx *tx) { return tx ? tx->depth : 0; }

/* ---- accesses -------------------------------------------------------------------- */

/* A software read recorded in the trace, every case (a word the attempt
 * may have written, a full read set). */
__attribute__((noinline)) static uint64_t api_read_traced_any(tmt_tx *tx, const volatile void *addr, unsigned size)
{
    uint64_t v = stm_read(tx, (uintptr_t)addr, size);
    tb_ev_read(&tx->trace, addr, v, size);
    return v;
}

/* A software read recorded in the trace, inlined into api_read_slow_N, so
 * the size is a constant. The common case: a word the attempt has not
 * written, room in the read set (tested before the load, so that no call
 * comes between the load and the record) and a value valid at rv;
 * everything else (a conflict too: api_read_traced_any reads again through
 * stm_read_slow), and a record that is not the common one, ends in a tail
 * call, so this path saves no registers. */
static inline __attribute__((always_inline)) uint64_t api_read_traced(tmt_tx *tx, const volatile void *addr,
                                                                      unsigned size)
{
    uintptr_t a = (uintptr_t)addr;
    uint64_t v;
    if (TX_UNLIKELY(stm_bloom_has(tx->stm.bloom, a) || !stm_rset_room(&tx->stm) || !stm_load_try(tx, a, size, &v)))
        return api_read_traced_any(tx, addr, size);
    stm_rset_put(&tx->stm, a);
    return tb_access(&tx->trace, TF_EV_READ, size, a, v);
}

/* A serial read, recorded at level all (out of line: serial attempts are
 * rare). */
__attribute__((noinline)) static uint64_t api_read_serial(tmt_tx *tx, const volatile void *addr, unsigned size)
{
    uint64_t v = stm_serial_read(tx, (uintptr_t)addr, size);
    tb_ev_read(&tx->trace, addr, v, size);
    return v;
}

/* Every read the gate turns away: outside transactions, a word the attempt
 * may have written, tracing, serial and hardware attempts. Out of line, so
 * that the untraced path ends in a tail call into the STM and keeps nothing
 * across a call; one copy per size (api_read_slow_N), so that a traced
 * read's masks and record head fold to constants. */
static inline __attribute__((always_inline)) uint64_t api_read_slow(tmt_tx *tx, const volatile void *addr,
                                                                    unsigned size)
{
    uintptr_t a = (uintptr_t)addr;
    if (TX_LIKELY(tx->mode == TX_MODE_STM)) {
        if (TX_UNLIKELY(tb_records_accesses(&tx->trace)))
            return api_read_traced(tx, addr, size);
        /* Untraced, the gate is the bloom filter: its bit is set, so
         * stm_read would go to stm_read_own; no second test. */
        return stm_read_own(tx, a, size);
    }
    if (tx->mode == TX_MODE_NONE)
        return tx_mem_load(a, size);
    if (tx->mode == TX_MODE_SERIAL)
        return api_read_serial(tx, addr, size);
    return htm_read(tx, a, size);
}

__attribute__((noinline)) static uint64_t api_read_slow_1(tmt_tx *tx, const volatile void *addr)
{
    return api_read_slow(tx, addr, 1);
}
__attribute__((noinline)) static uint64_t api_read_slow_4(tmt_tx *tx, const volatile void *addr)
{
    return api_read_slow(tx, addr, 4);
}
__attribute__((noinline)) static uint64_t api_read_slow_8(tmt_tx *tx, const volatile void *addr)
{
    return api_read_slow(tx, addr, 8);
}

/* The gate (tx_stm.gate) is open only in an untraced software attempt, for
 * words it has not written: then the read is the STM's checked load and
 * nothing else is tested. `size` is a constant: 1, 4 or 8. */
static inline uint64_t api_read(tmt_tx *tx, const volatile void *addr, unsigned size)
{
    uintptr_t a = (uintptr_t)addr;
    if (TMT_CLOCK_FLOOR >= 2)
        clock_floor_read(); /* a measuring build's stamp per access (clock.h) */
    if (TX_LIKELY(stm_gate_open(tx, a)))
        return stm_load_checked(tx, a, size);
    return size == 8 ? api_read_slow_8(tx, addr) : size == 4 ? api_read_slow_4(tx, addr) : api_read_slow_1(tx, addr);
}

/* A software write recorded in the trace, every case (see
 * api_read_traced_any). */
__attribute__((noinline)) static void api_write_traced_any(tmt_tx *tx, volatile void *addr, uint64_t v, unsigned size)
{
    stm_write(tx, (uintptr_t)addr, v, size);
    tb_ev_write(&tx->trace, addr, v, size);
}

/* A software write recorded in the trace (see api_read_traced): the common
 * case is a word new to the redo log, with room. */
static inline __attribute__((always_inline)) void api_write_traced(tmt_tx *tx, volatile void *addr, uint64_t v,
                                                                   unsigned size)
{
    uintptr_t a = (uintptr_t)addr;
    if (TX_UNLIKELY(!stm_write_new(tx, tx->stm.bloom, a, v, size))) {
        api_write_traced_any(tx, addr, v, size);
        return;
    }
    (void)tb_access(&tx->trace, TF_EV_WRITE, size, a, v);
}

/* A serial write, recorded at level all (out of line, see api_read_serial). */
__attribute__((noinline)) static void api_write_serial(tmt_tx *tx, volatile void *addr, uint64_t v, unsigned size)
{
    stm_serial_write(tx, (uintptr_t)addr, v, size);
    tb_ev_write(&tx->trace, addr, v, size);
}

/* Every write the gate turns away (see api_read_slow), and the write that
 * fills the redo log or is the first of a read-only attempt; one copy per
 * size (api_write_slow_N). */
static inline __attribute__((always_inline)) void api_write_slow(tmt_tx *tx, volatile void *addr, uint64_t v,
                                                                 unsigned size)
{
    uintptr_t a = (uintptr_t)addr;
    if (TX_LIKELY(tx->mode == TX_MODE_STM)) {
        if (TX_UNLIKELY(tx->stm.ro))
            tx_demote(tx, a);
        if (TX_UNLIKELY(tb_records_accesses(&tx->trace)))
            api_write_traced(tx, addr, v, size);
        else
            stm_write(tx, a, v, size);
        return;
    }
    if (tx->mode == TX_MODE_NONE) {
        tx_mem_store(a, v, size);
    } else if (tx->mode == TX_MODE_SERIAL) {
        api_write_serial(tx, addr, v, size);
    } else {
        htm_write(tx, a, v, size);
    }
}

__attribute__((noinline)) static void api_write_slow_1(tmt_tx *tx, volatile void *addr, uint64_t v)
{
    api_write_slow(tx, addr, v, 1);
}
__attribute__((noinline)) static void api_write_slow_4(tmt_tx *tx, volatile void *addr, uint64_t v)
{
    api_write_slow(tx, addr, v, 4);
}
__attribute__((noinline)) static void api_write_slow_8(tmt_tx *tx, volatile void *addr, uint64_t v)
{
    api_write_slow(tx, addr, v, 8);
}

/* `size` is a constant: 1, 4 or 8 (see api_read). */
static inline void api_write(tmt_tx *tx, volatile void *addr, uint64_t v, unsigned size)
{
    if (TMT_CLOCK_FLOOR >= 2)
        clock_floor_read();
    if (TX_LIKELY(stm_write_fast(tx, (uintptr_t)addr, v, size)))
        return;
    if (size == 8)
        api_write_slow_8(tx, addr, v);
    else if (size == 4)
        api_write_slow_4(tx, addr, v);
    else
        api_write_slow_1(tx, addr, v);
}

TMT_API uintptr_t tmt_read_word(tmt_tx *tx, const volatile uintptr_t *addr)
{
    return (uintptr_t)api_read(tx, addr, sizeof *addr);
}
TMT_API void tmt_write_word(tmt_tx *tx, volatile uintptr_t *addr, uintptr_t value)
{
    api_write(tx, addr, value, sizeof *addr);
}
TMT_API long tmt_read_long(tmt_tx *tx, const volatile long *addr)
{
    return (long)api_read(tx, addr, sizeof *addr);
}
TMT_API void tmt_write_long(tmt_tx *tx, volatile long *addr, long value)
{
    api_write(tx, addr, (uint64_t)value, sizeof *addr);
}
TMT_API void *tmt_read_ptr(tmt_tx *tx, void *const volatile *addr)
{
    return (void *)(uintptr_t)api_read(tx, addr, sizeof *addr);
}
TMT_API void tmt_write_ptr(tmt_tx *tx, void *volatile *addr, void *value)
{
    api_write(tx, addr, (uintptr_t)value, sizeof *addr);
}
TMT_API int64_t tmt_read_i64(tmt_tx *tx, const volatile int64_t *addr)
{
    return (int64_t)api_read(tx, addr, 8);
}
TMT_API void tmt_write_i64(tmt_tx *tx, volatile int64_t *addr, int64_t value)
{
    api_write(tx, addr, (uint64_t)value, 8);
}
TMT_API int32_t tmt_read_i32(tmt_tx *tx, const volatile int32_t *addr)
{
    return (int32_t)(uint32_t)api_read(tx, addr, 4);
}
TMT_API void tmt_write_i32(tmt_tx *tx, volatile int32_t *addr, int32_t value)
{
    api_write(tx, addr, (uint32_t)value, 4);
}
TMT_API uint8_t tmt_read_u8(tmt_tx *tx, const volatile uint8_t *addr)
{
    return (uint8_t)api_read(tx, addr, 1);
}
TMT_API void tmt_write_u8(tmt_tx *tx, volatile uint8_t *addr, uint8_t value)
{
    api_write(tx, addr, value, 1);
}
TMT_API float tmt_read_float(tmt_tx *tx, const volatile float *addr)
{
    uint32_t bits = (uint32_t)api_read(tx, addr, 4);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}
TMT_API void tmt_write_float(tmt_tx *tx, volatile float *addr, float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    api_write(tx, addr, bits, 4);
}
TMT_API double tmt_read_double(tmt_tx *tx, const volatile double *addr)
{
    uint64_t bits = api_read(tx, addr, 8);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}
TMT_API void tmt_write_double(tmt_tx *tx, volatile double *addr, double value)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    api_write(tx, addr, bits, 8);
}

/* ---- allocation ---------------------------------------------------------------- */

/* The ALLOC record, out of line: inlined, the hook's stamping made every
 * tmt_malloc save six registers for it, traced or not. */
__attribute__((noinline)) static void api_record_alloc(tmt_tx *tx, void *p, size_t size, const void *caller)
{
    tb_ev_alloc(&tx->trace, p, size, caller);
}

TMT_API void *tmt_malloc(tmt_tx *tx, size_t size)
{
    if (tx == NULL)
        return malloc(size);
    void *p = txmem_malloc(tx, size);
    /* The allocation site, for tools that name heap addresses (a wrapper
     * that tail-calls this, like the TL2 layer's TxAlloc, passes its own
     * caller's). No trace record inside a real hardware transaction. */
    if (TX_UNLIKELY(tx->trace.level != CONFIG_EVENTS_OFF) && p != NULL && tx->mode != TX_MODE_HTM)
        api_record_alloc(tx, p, size, __builtin_return_address(0));
    return p;
}

TMT_API void tmt_free(tmt_tx *tx, void *ptr)
{
    if (tx == NULL) {
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
