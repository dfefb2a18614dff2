/*
 * api.c - the public API of tmtrace.h not defined elsewhere: life cycle,
 * thread registry, the TMT_ATOMIC entry points, the single abort path, the
 * typed accessors, allocation and statistics.
 *
 * Owns: initialisation state, the registry of descriptors (live ones and
 * exited ones kept for reuse), the statistics of exited threads, and the one
 * place each event hook is called (start: tmt_tx_start / htm_start, read and
 * write: the accessors, commit: tmt_tx_commit, abort: tx_abort_record,
 * fallback: htm_start). Never exits the process on bad input; never takes a
 * lock on the transactional fast path.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "error.h"
#include "htm.h"
#include "site.h"
#include "stm.h"
#include "tmtrace.h"
#include "trace_format.h"
#include "tracer.h"
#include "tx.h"
#include "txmem.h"

static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER;
static int api_ready;          /* tmt_init succeeded (read with acquire) */
static int api_shut;           /* tmt_shutdown ran */
static int api_atexit_done;
static struct tmt_tx *api_all; /* every descriptor ever made, live or not */
static uint32_t api_next_thread;
static struct tx_stats api_exited;           /* folded statistics of exited threads */
static struct tx_counts *api_exited_sites;   /* indexed by site id */
static uint32_t api_nexited_sites;

static __thread struct tmt_tx *api_self __attribute__((tls_model("initial-exec")));

/* ---- life cycle ------------------------------------------------------------ */

static void api_atexit(void) { (void)tmt_shutdown(); }

static void api_drain_others(struct tmt_tx *self);

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
    struct tmt_tx *self = api_self;
    uint32_t me = self ? self->thread_id : UINT32_MAX;
    api_fork_serial = stm_serial_holder() != me; /* a serial attempt may fork */
    if (api_fork_serial)
        stm_serial_lock(me);
    htm_fork_prepare();
    api_drain_others(self);
    pthread_mutex_lock(&api_lock);
}

static void api_fork_parent(void)
{
    pthread_mutex_unlock(&api_lock);
    htm_fork_parent();
    if (api_fork_serial)
        stm_serial_unlock();
}

/* The child has one thread: every other descriptor's thread is gone. */
static void api_fork_child(void)
{
    struct tmt_tx *self = api_self;
    for (struct tmt_tx *t = api_all; t; t = t->next) {
        if (t == self)
            continue;
        t->live = 0; /* reusable by the child's own threads */
        __atomic_store_n(&t->stm.active_rv, UINT64_MAX, __ATOMIC_RELAXED);
    }
    htm_fork_child(self != NULL && self->stm.counted);
    site_fork_child();
    pthread_mutex_unlock(&api_lock);
    if (api_fork_serial)
        stm_serial_unlock();
    if (self != NULL)
        tracer_fork_thread(&self->trace);
}

TMT_API int tmt_init(void)
{
    if (__atomic_load_n(&api_ready, __ATOMIC_ACQUIRE))
        return 0;
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
                api_shut = 0;
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
        api_shut = 1;
        rc = tracer_shutdown();
    }
    pthread_mutex_unlock(&api_lock);
    return rc;
}

/* ---- statistics plumbing ------------------------------------------------------ */

static inline uint64_t api_load(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

static void api_add_counts(struct tx_counts *to, const struct tx_counts *from)
{
    to->commits += api_load(&from->commits);
    to->aborts += api_load(&from->aborts);
    for (unsigned r = 0; r < TMT_ABORT_REASONS; r++)
        to->aborts_by_reason[r] += api_load(&from->aborts_by_reason[r]);
}

static void api_add_stats(struct tx_stats *to, const struct tx_stats *from)
{
    api_add_counts(&to->all, &from->all);
    to->htm_commits += api_load(&from->htm_commits);
    to->htm_aborts += api_load(&from->htm_aborts);
    to->fallbacks += api_load(&from->fallbacks);
    to->serial += api_load(&from->serial);
}

/* Grows a per-site array to hold `id`; caller holds api_lock. 0 or -1. */
static int api_grow_sites(struct tx_counts **arr, uint32_t *n, uint32_t id)
{
    if (id < *n)
        return 0;
    uint32_t want = *n ? *n : 16;
    while (want <= id)
        want *= 2;
    struct tx_counts *p = calloc(want, sizeof *p);
    if (p == NULL)
        return -1;
    if (*arr)
        memcpy(p, *arr, (size_t)*n * sizeof *p);
    free(*arr);
    *arr = p;
    *n = want;
    return 0;
}

/* Off the hot path: the first transaction of a thread at a new site. The
 * owner writes its counters without the lock; readers hold the lock, and the
 * array is swapped under it. */
__attribute__((noinline)) static void api_thread_sites(struct tmt_tx *tx, uint32_t id)
{
    pthread_mutex_lock(&api_lock);
    if (api_grow_sites(&tx->site_stats, &tx->nsite_stats, id) != 0) {
        pthread_mutex_unlock(&api_lock);
        abort(); /* cannot count the transaction that is about to run */
    }
    pthread_mutex_unlock(&api_lock);
}

uint64_t tx_oldest_active_rv(void)
{
    uint64_t oldest = UINT64_MAX;
    pthread_mutex_lock(&api_lock);
    for (struct tmt_tx *t = api_all; t; t = t->next) {
        uint64_t rv = __atomic_load_n(&t->stm.active_rv, __ATOMIC_SEQ_CST);
        if (rv < oldest)
            oldest = rv;
    }
    pthread_mutex_unlock(&api_lock);
    return oldest;
}

/* ---- threads ------------------------------------------------------------------- */

TMT_API tmt_tx *tmt_thread_enter(void)
{
    if (api_self)
        return api_self;
    if (tmt_init() != 0)
        return NULL;
    pthread_mutex_lock(&api_lock);
    struct tmt_tx *tx = api_all;
    while (tx && tx->live)
        tx = tx->next;
    if (tx == NULL) {
        tx = aligned_alloc(64, (sizeof *tx + 63) & ~(size_t)63);
        if (tx == NULL) {
            pthread_mutex_unlock(&api_lock);
            error_set("tmt_thread_enter: out of memory for a thread descriptor");
            return NULL;
        }
        memset(tx, 0, sizeof *tx);
        tx->stm.active_rv = UINT64_MAX;
        tx->next = api_all;
        /* Published with release: the serial drain walks the list without
         * the lock (descriptors are never freed). */
        __atomic_store_n(&api_all, tx, __ATOMIC_RELEASE);
    }
    tx->live = 1;
    tx->thread_id = ++api_next_thread;
    pthread_mutex_unlock(&api_lock);

    tx->mode = TX_MODE_NONE;
    tx->depth = 0;
    uint64_t seed = config.seed ? (uint64_t)config.seed : __rdtsc() ^ (uintptr_t)tx;
    tx->rng = (seed + 0x9E3779B97F4A7C15ull * tx->thread_id) | 1;
    if (tb_attach(&tx->trace) != 0) {
        pthread_mutex_lock(&api_lock);
        tx->live = 0;
        pthread_mutex_unlock(&api_lock);
        return NULL;
    }
    api_self = tx;
    return tx;
}

TMT_API void tmt_thread_exit(void)
{
    struct tmt_tx *tx = api_self;
    if (tx == NULL)
        return;
    txmem_thread_exit(tx);
    tb_detach(&tx->trace);
    pthread_mutex_lock(&api_lock);
    api_add_stats(&api_exited, &tx->stats);
    memset(&tx->stats, 0, sizeof tx->stats);
    if (tx->nsite_stats && api_grow_sites(&api_exited_sites, &api_nexited_sites, tx->nsite_stats - 1) == 0) {
        for (uint32_t i = 0; i < tx->nsite_stats; i++)
            api_add_counts(&api_exited_sites[i], &tx->site_stats[i]);
    }
    if (tx->site_stats)
        memset(tx->site_stats, 0, (size_t)tx->nsite_stats * sizeof *tx->site_stats);
    tx->live = 0;
    pthread_mutex_unlock(&api_lock);
    api_self = NULL;
}

TMT_API tmt_tx *tmt_self(void) { return api_self; }

/* ---- transactions ------------------------------------------------------------- */

TMT_API sigjmp_buf *tmt_tx_prepare(tmt_tx *tx, tmt_site *site, unsigned flags)
{
    if (tx->depth > 0) {
        /* Flat nesting: the outer restart point stays in force. */
        tx->nested_flags = flags;
        return &tx->scratch;
    }
    uint32_t id = site_id(site);
    if (TX_UNLIKELY(id >= tx->nsite_stats))
        api_thread_sites(tx, id);
    tx->site_id = id;
    tx->restart = NULL;
    tx->flags = flags;
    tx->ro_demoted = 0;
    tx->attempt = 0;
    tx->cancelled = 0;
    tx->htm.attempts = 0;
    tx->htm.pending = 0;
    tx->htm.fell_back = 0;
    tx->stm.consecutive_aborts = 0;
    tx->conflicts = 0;
    tx->serial_next = (flags & TMT_TX_IRREVOCABLE) ? TF_SERIAL_REQUESTED : 0;
    return &tx->env;
}

/* ---- serial mode ---------------------------------------------------------------- */

/* Every software attempt of another thread has ended; those that begin from
 * now on wait in stm_begin (Dekker: the lock is taken before this looks). */
static void api_drain_others(struct tmt_tx *self)
{
    for (struct tmt_tx *t = __atomic_load_n(&api_all, __ATOMIC_ACQUIRE); t; t = t->next) {
        if (t == self)
            continue;
        for (unsigned spins = 1; __atomic_load_n(&t->stm.active_rv, __ATOMIC_SEQ_CST) != UINT64_MAX; spins++) {
            tx_pause();
            if ((spins & 255) == 0)
                sched_yield(); /* the attempt we wait for may need this core */
        }
    }
}

/* Starts a serial attempt: START, exclusion of everything else, SERIAL. */
__attribute__((noinline)) static void api_start_serial(struct tmt_tx *tx)
{
    unsigned why = tx->serial_next;
    tx->instance++;
    tb_ev_start(&tx->trace, tx->site_id, tx->instance, TF_START_SERIAL | (tx->attempt ? TF_START_RETRY : 0),
                tx->attempt);
    stm_serial_lock(tx->thread_id);
    if (htm_path() != TX_MODE_NONE)
        htm_sw_enter(tx); /* hardware attempts abort; an emulated one ends first */
    api_drain_others(tx);
    stm_serial_begin(tx);
    tx->mode = TX_MODE_SERIAL;
    tx_count(&tx->stats.serial);
    tb_ev_serial(&tx->trace, why, tx->conflicts);
}

/* Ends the serial attempt's exclusion (commit or undo already done). */
static void api_end_serial(struct tmt_tx *tx)
{
    htm_sw_leave(tx);
    stm_serial_unlock();
}

void tx_serial_next(struct tmt_tx *tx, unsigned why) { tx->serial_next = why; }

void tx_serial_now(struct tmt_tx *tx, unsigned why)
{
    if (tx->mode == TX_MODE_SERIAL)
        return;
    if (tx->mode == TX_MODE_HTM || tx->mode == TX_MODE_HTM_EMU)
        htm_abort_code(tx, HTM_CODE_NEED_SERIAL); /* the policy sets serial_next: a store here would roll back */
    tx->serial_next = why;
    tx_abort(tx, TMT_ABORT_USER_RETRY, 0, 0);
}

TMT_API int tmt_tx_start(tmt_tx *tx)
{
    if (tx->depth > 0) {
        if ((tx->nested_flags & TMT_TX_NO_HTM) &&
            (tx->mode == TX_MODE_HTM || tx->mode == TX_MODE_HTM_EMU))
            htm_abort_code(tx, HTM_CODE_NEED_STM);
        if (TX_UNLIKELY(tx->nested_flags & TMT_TX_IRREVOCABLE))
            tx_serial_now(tx, TF_SERIAL_REQUESTED);
        tx->depth++;
        return 1;
    }
    if (tx->cancelled) {
        tx->cancelled = 0;
        return 0;
    }
    tx->depth = 1;
    if (TX_UNLIKELY(tx->serial_next)) {
        api_start_serial(tx);
        return 1;
    }
    int path = htm_path();
    if (path != TX_MODE_NONE && !(tx->flags & TMT_TX_NO_HTM) && !tx->htm.fell_back &&
        config.htm_retries > 0) {
        if (htm_start(tx, path))
            return 1;
        if (tx->cancelled) {
            tx->cancelled = 0;
            tx->depth = 0;
            return 0;
        }
        if (tx->serial_next) {
            api_start_serial(tx);
            return 1;
        }
    }
    stm_backoff(tx);
    if (path != TX_MODE_NONE)
        htm_sw_enter(tx);
    int ro = (tx->flags & TMT_TX_READ_ONLY) && !tx->ro_demoted;
    tx->mode = TX_MODE_STM;
    tx->instance++;
    tb_ev_start(&tx->trace, tx->site_id, tx->instance,
                (ro ? TF_START_READ_ONLY : 0) | (tx->attempt ? TF_START_RETRY : 0), tx->attempt);
    stm_begin(tx, ro);
    return 1;
}

static inline void api_count_commit(struct tmt_tx *tx)
{
    tx_count(&tx->stats.all.commits);
    tx_count(&tx->site_stats[tx->site_id].commits);
}

/* A software or serial commit took effect (and was recorded): frees, counters. */
static inline void api_committed(struct tmt_tx *tx, uint64_t wv)
{
    txmem_commit(tx, wv);
    tx->depth = 0;
    tx->mode = TX_MODE_NONE;
    api_count_commit(tx);
}

TMT_API void tmt_tx_commit(tmt_tx *tx)
{
    if (tx->depth > 1) {
        tx->depth--;
        return;
    }
    if (tx->depth == 0)
        return; /* not in a transaction: nothing to commit */
    if (TX_LIKELY(tx->mode == TX_MODE_STM)) {
        uint32_t rn = tx->stm.rn, wn = tx->stm.wn;
        uint64_t wv = stm_commit(tx);
        /* Stamped at the linearisation point: the write version is taken and
         * the locks are still held, so every attempt that sees this commit's
         * version aborts after this stamp. */
        tb_ev_commit(&tx->trace, wv, rn, wn);
        stm_commit_finish(tx, wv);
        htm_sw_leave(tx);
        api_committed(tx, wv);
        return;
    }
    if (tx->mode == TX_MODE_SERIAL) {
        uint32_t rn = tx->stm.serial_reads, wn = tx->stm.nundo;
        uint64_t wv = stm_serial_commit(tx);
        tb_ev_commit(&tx->trace, wv, rn, wn); /* nothing else runs: any point before the unlock */
        api_end_serial(tx);
        api_committed(tx, wv);
        return;
    }
    htm_commit(tx);
    api_committed(tx, 0);
    tx_count(&tx->stats.htm_commits);
    tb_ev_commit(&tx->trace, 0, 0, 0);
}

void tx_abort_record(struct tmt_tx *tx, unsigned reason, uint64_t where, uint64_t found)
{
    tx_count(&tx->stats.all.aborts);
    tx_count(&tx->stats.all.aborts_by_reason[reason]);
    tx_count(&tx->site_stats[tx->site_id].aborts);
    tx_count(&tx->site_stats[tx->site_id].aborts_by_reason[reason]);
    tb_ev_abort(&tx->trace, reason, where, found);
    tx->attempt++;
}

void tx_abort(struct tmt_tx *tx, unsigned reason, uint64_t where, uint64_t found)
{
    if (tx->mode == TX_MODE_STM) {
        stm_rollback(tx);
        htm_sw_leave(tx);
    } else if (tx->mode == TX_MODE_HTM_EMU) {
        htm_rollback(tx, (uint32_t)found);
    } else if (tx->mode == TX_MODE_SERIAL) {
        /* Only the program's retry or cancel ends a serial attempt early;
         * a retry runs the next attempt normally unless the block asks. */
        stm_serial_rollback(tx);
        api_end_serial(tx);
        if (!(tx->flags & TMT_TX_IRREVOCABLE))
            tx->serial_next = 0;
    }
    txmem_abort(tx);
    tx->mode = TX_MODE_NONE;
    tx->depth = 0;
    tx_abort_record(tx, reason, where, found);
    /* Contention management: a transaction that keeps losing conflicts
     * runs alone next time, so every transaction commits within
     * TMTRACE_SERIAL_AFTER + 1 software attempts whatever its size. */
    if (reason >= TMT_ABORT_READ_LOCKED && reason <= TMT_ABORT_COMMIT_VALIDATE &&
        ++tx->conflicts >= (uint64_t)config.serial_after && !tx->serial_next)
        tx->serial_next = TF_SERIAL_CONTENTION;
    if (reason == TMT_ABORT_USER_CANCEL)
        tx->cancelled = 1;
    if (tx->restart)
        tx->restart(tx);
    siglongjmp(tx->env, 1);
}

TMT_API void tmt_tx_retry(tmt_tx *tx)
{
    if (tx->depth == 0)
        abort(); /* no transaction to restart: a misuse the program cannot recover from */
    if (tx->mode == TX_MODE_HTM || tx->mode == TX_MODE_HTM_EMU)
        htm_abort_code(tx, HTM_CODE_USER_RETRY);
    tx_abort(tx, TMT_ABORT_USER_RETRY, 0, 0);
}

TMT_API void tmt_tx_cancel(tmt_tx *tx)
{
    if (tx->depth == 0)
        abort();
    if (tx->mode == TX_MODE_HTM || tx->mode == TX_MODE_HTM_EMU)
        htm_abort_code(tx, HTM_CODE_USER_CANCEL);
    tx_abort(tx, TMT_ABORT_USER_CANCEL, 0, 0);
}

TMT_API int tmt_tx_depth(const tmt_tx *tx) { return tx ? tx->depth : 0; }

/* ---- accesses -------------------------------------------------------------------- */

static inline uint64_t api_stm_read(tmt_tx *tx, uintptr_t a, unsigned size)
{
    return size == 8 ? stm_read_u64(tx, a) : size == 4 ? stm_read_u32(tx, a) : stm_read_u8(tx, a);
}

/* A software read recorded in the trace: out of line, so that the untraced
 * path ends in a tail call into the STM and keeps nothing across a call. */
__attribute__((noinline)) static uint64_t api_read_traced(tmt_tx *tx, const volatile void *addr, unsigned size)
{
    uint64_t v = api_stm_read(tx, (uintptr_t)addr, size);
    tb_ev_read(&tx->trace, addr, v, size);
    return v;
}

/* A serial read, recorded at level all (out of line like api_read_traced). */
__attribute__((noinline)) static uint64_t api_read_serial(tmt_tx *tx, const volatile void *addr, unsigned size)
{
    uint64_t v = stm_serial_read(tx, (uintptr_t)addr, size);
    tb_ev_read(&tx->trace, addr, v, size);
    return v;
}

static inline uint64_t api_read(tmt_tx *tx, const volatile void *addr, unsigned size)
{
    uintptr_t a = (uintptr_t)addr;
    if (TX_LIKELY(tx->mode == TX_MODE_STM)) {
        if (TX_UNLIKELY(tb_records_accesses(&tx->trace)))
            return api_read_traced(tx, addr, size);
        return api_stm_read(tx, a, size);
    }
    if (tx->mode == TX_MODE_NONE)
        return tx_mem_load(a, size);
    if (tx->mode == TX_MODE_SERIAL)
        return api_read_serial(tx, addr, size);
    return htm_read(tx, a, size);
}

/* A block that promised to be read-only wrote: run it again as an update
 * transaction (its read set was not kept, so it cannot commit writes). */
__attribute__((noreturn, noinline)) static void api_demote(tmt_tx *tx, uintptr_t a)
{
    tx->ro_demoted = 1;
    tx_abort(tx, TMT_ABORT_USER_RETRY, a, 0);
}

static inline void api_stm_write(tmt_tx *tx, uintptr_t a, uint64_t v, unsigned size)
{
    if (size == 8)
        stm_write_u64(tx, a, v);
    else if (size == 4)
        stm_write_u32(tx, a, v);
    else
        stm_write_u8(tx, a, v);
}

/* A software write recorded in the trace (see api_read_traced). */
__attribute__((noinline)) static void api_write_traced(tmt_tx *tx, volatile void *addr, uint64_t v, unsigned size)
{
    api_stm_write(tx, (uintptr_t)addr, v, size);
    tb_ev_write(&tx->trace, addr, v, size);
}

/* A serial write, recorded at level all (out of line like api_write_traced). */
__attribute__((noinline)) static void api_write_serial(tmt_tx *tx, volatile void *addr, uint64_t v, unsigned size)
{
    stm_serial_write(tx, (uintptr_t)addr, v, size);
    tb_ev_write(&tx->trace, addr, v, size);
}

static inline void api_write(tmt_tx *tx, volatile void *addr, uint64_t v, unsigned size)
{
    uintptr_t a = (uintptr_t)addr;
    if (TX_LIKELY(tx->mode == TX_MODE_STM)) {
        if (TX_UNLIKELY(tx->stm.ro))
            api_demote(tx, a);
        if (TX_UNLIKELY(tb_records_accesses(&tx->trace)))
            api_write_traced(tx, addr, v, size);
        else
            api_stm_write(tx, a, v, size);
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

TMT_API void *tmt_malloc(tmt_tx *tx, size_t size)
{
    if (tx == NULL)
        return malloc(size);
    void *p = txmem_malloc(tx, size);
    /* The allocation site, for tools that name heap addresses (a wrapper
     * that tail-calls this, like the TL2 layer's TxAlloc, passes its own
     * caller's). No trace record inside a real hardware transaction. */
    if (p != NULL && tx->mode != TX_MODE_HTM)
        tb_ev_alloc(&tx->trace, p, size, __builtin_return_address(0));
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
    memset(&sum, 0, sizeof sum);
    pthread_mutex_lock(&api_lock);
    api_add_stats(&sum, &api_exited);
    for (struct tmt_tx *t = api_all; t; t = t->next)
        if (t->live)
            api_add_stats(&sum, &t->stats);
    pthread_mutex_unlock(&api_lock);
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
        memset(&c, 0, sizeof c);
        pthread_mutex_lock(&api_lock);
        if (id < api_nexited_sites)
            api_add_counts(&c, &api_exited_sites[id]);
        for (struct tmt_tx *t = api_all; t; t = t->next)
            if (t->live && id < t->nsite_stats)
                api_add_counts(&c, &t->site_stats[id]);
        pthread_mutex_unlock(&api_lock);
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
