/*
 * tb_threads.c - the thread table, attach/detach, hand-over of chunks, the
 * snapshot of partial chunks and fork (see tb_threads.h).
 *
 * Owns: the thread table (reg_lock), the totals of records recorded and
 * dropped, each thread's discard area (where it records while no chunk is
 * to be had), the `offer` through which chunks reach the writer, and
 * whether this process is a forked child without a trace of its own.
 *
 * Each thread's stack bounds are taken once, at attach.
 *
 * Never: prints (but the one line of an untraced forked child), blocks on
 * the writer, or calls it by name: when no chunk is free and TMTRACE_MEMORY
 * is reached the events go to the discard area and are counted in the
 * thread's `dropped`, one count per area filled.
 * Calls the pool (tb_pool.c), the clock's CPU test, skew.c's migration set
 * and sig_stack.c (a traced thread gets an alternate signal stack at
 * attach, for tracer.c's handler of a fatal signal) only.
 */
#include "tb_threads.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "error.h"
#include "sig_stack.h"
#include "skew.h"
#include "trace_file.h"

static int (*tb_offer)(struct tb_chunk *c); /* the writer's queue (tb_setup) */
static uint64_t tb_hz;
static int tb_fast;           /* unordered stamps where order is not needed (the CPU has rdpid) */
static int tb_truth;          /* clock faults injected: chunks carry a truth column */
static uint64_t total_recorded, total_dropped; /* atomic */
static int tb_untraced_child; /* a forked child without a trace of its own (tb_fork_child) */

/* ---- the thread table ----------------------------------------------------- */

/* Slots of a thread's discard area. While the pool has no chunk to give
 * (TMTRACE_MEMORY reached, hand-over closed), the thread records into this
 * area as into a chunk and the records are dropped when it fills: the
 * event path stays the inline one, and the slow path (the pool's test, the
 * count) runs once per area, not once per event. Small enough to stay in
 * the thread's cache. */
#define TB_DISCARD_SLOTS 512

struct tb_reg {
    struct tb_thread *live;   /* NULL once detached */
    uint32_t os_tid;
    uint64_t dropped;         /* final count once detached */
    int announced;
    const struct tf_slot *seen_cur; /* live->cur at the last tb_threads_active() */
    uint64_t stack_lo, stack_hi;    /* the thread's stack (0, 0: not known) */
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
/* Raised stamps of detached threads; live threads' are summed on demand. */
static uint64_t raised_exited; /* guarded by reg_lock */
static uint64_t shed_exited;   /* the same for attempts shed; guarded by reg_lock */
static struct tb_reg *reg;      /* index = thread id - 1 */
static size_t nreg, capreg;

/* The calling thread's stack [lo, hi), so that tools tell its words from
 * the heap; once, at attach (0, 0 when the C library cannot say). */
static void own_stack(uint64_t *lo, uint64_t *hi)
{
    pthread_attr_t a;
    void *base;
    size_t size;
    *lo = *hi = 0;
    if (pthread_getattr_np(pthread_self(), &a) != 0)
        return;
    if (pthread_attr_getstack(&a, &base, &size) == 0) {
        *lo = (uint64_t)(uintptr_t)base;
        *hi = *lo + size;
    }
    pthread_attr_destroy(&a);
}

static int reg_add(struct tb_thread *t)
{
    uint64_t lo, hi;
    own_stack(&lo, &hi);
    pthread_mutex_lock(&reg_lock);
    if (nreg == capreg) {
        size_t cap = capreg ? capreg * 2 : 64;
        struct tb_reg *p = realloc(reg, cap * sizeof *p);
        if (p == NULL) {
            pthread_mutex_unlock(&reg_lock);
            return error_set("trace buffer: out of memory for the thread table");
        }
        reg = p;
        capreg = cap;
    }
    reg[nreg] = (struct tb_reg){ .live = t, .os_tid = t->os_tid, .stack_lo = lo, .stack_hi = hi };
    t->thread_id = (uint32_t)++nreg;
    pthread_mutex_unlock(&reg_lock);
    return 0;
}

static void reg_remove(struct tb_thread *t)
{
    pthread_mutex_lock(&reg_lock);
    if (t->thread_id >= 1 && t->thread_id <= nreg) {
        reg[t->thread_id - 1].live = NULL;
        reg[t->thread_id - 1].dropped = t->dropped;
        raised_exited += t->raised;
        shed_exited += t->shed;
    }
    pthread_mutex_unlock(&reg_lock);
}

/* Forgets every thread (reg_lock held, or no other thread). */
static void reg_forget(void)
{
    free(reg);
    reg = NULL;
    nreg = capreg = 0;
}

/* The records a live thread put into its discard area since the area was
 * last counted (discard_count), read from another thread: exact when the
 * thread stands still, a record or so off while it runs on. */
static uint64_t discard_pending(const struct tb_thread *t)
{
    if (__atomic_load_n(&t->chunk, __ATOMIC_ACQUIRE) != NULL)
        return 0;
    const struct tf_slot *d = __atomic_load_n(&t->discard, __ATOMIC_RELAXED);
    const struct tf_slot *cur = __atomic_load_n(&t->cur, __ATOMIC_ACQUIRE);
    if (d == NULL || __atomic_load_n(&t->base, __ATOMIC_RELAXED) != d || cur < d)
        return 0;
    int64_t records = (int64_t)(cur - d) - __atomic_load_n(&t->fulls, __ATOMIC_RELAXED);
    return records > 0 ? (uint64_t)records : 0;
}

static void reg_info(const struct tb_reg *r, uint32_t id, struct tf_thread_info *out)
{
    out->id = id;
    out->os_tid = r->os_tid;
    out->events = 0;
    out->dropped = r->live ? __atomic_load_n(&r->live->dropped, __ATOMIC_RELAXED) + discard_pending(r->live)
                           : r->dropped;
    out->stack_lo = r->stack_lo;
    out->stack_hi = r->stack_hi;
}

size_t tb_threads_new(struct tf_thread_info *out, size_t max)
{
    size_t k = 0;
    pthread_mutex_lock(&reg_lock);
    for (size_t i = 0; i < nreg && k < max; i++)
        if (!reg[i].announced) {
            reg[i].announced = 1;
            reg_info(&reg[i], (uint32_t)(i + 1), &out[k]);
            out[k++].dropped = 0;
        }
    pthread_mutex_unlock(&reg_lock);
    return k;
}

size_t tb_threads_active(void)
{
    size_t n = 0;
    pthread_mutex_lock(&reg_lock);
    for (size_t i = 0; i < nreg; i++) {
        if (reg[i].live == NULL)
            continue;
        const struct tf_slot *cur = __atomic_load_n(&reg[i].live->cur, __ATOMIC_RELAXED);
        n += cur != reg[i].seen_cur;
        reg[i].seen_cur = cur;
    }
    pthread_mutex_unlock(&reg_lock);
    return n;
}

size_t tb_threads_all(struct tf_thread_info *out, size_t max)
{
    size_t k = 0;
    pthread_mutex_lock(&reg_lock);
    for (size_t i = 0; i < nreg && k < max; i++, k++)
        reg_info(&reg[i], (uint32_t)(i + 1), &out[k]);
    pthread_mutex_unlock(&reg_lock);
    return k;
}

uint64_t tb_total_recorded(void) { return __atomic_load_n(&total_recorded, __ATOMIC_RELAXED); }
uint64_t tb_total_dropped(void)
{
    pthread_mutex_lock(&reg_lock);
    uint64_t n = __atomic_load_n(&total_dropped, __ATOMIC_RELAXED);
    for (size_t i = 0; i < nreg; i++)
        if (reg[i].live)
            n += discard_pending(reg[i].live);
    pthread_mutex_unlock(&reg_lock);
    return n;
}

/* A count each thread keeps of its own (the uint64_t at `field` of struct
 * tb_thread), over the threads that left (`*exited`) and the live ones. */
static uint64_t threads_sum(const uint64_t *exited, size_t field)
{
    pthread_mutex_lock(&reg_lock);
    uint64_t n = *exited;
    for (size_t i = 0; i < nreg; i++)
        if (reg[i].live)
            n += __atomic_load_n((const uint64_t *)(const void *)((const char *)reg[i].live + field),
                                 __ATOMIC_RELAXED);
    pthread_mutex_unlock(&reg_lock);
    return n;
}

uint64_t tb_total_raised(void) { return threads_sum(&raised_exited, offsetof(struct tb_thread, raised)); }
uint64_t tb_total_shed(void) { return threads_sum(&shed_exited, offsetof(struct tb_thread, shed)); }

/* ---- hand-over ------------------------------------------------------------ */

/* Counts `n` records lost by `t`. */
static void count_dropped(struct tb_thread *t, uint64_t n)
{
    __atomic_fetch_add(&total_dropped, n, __ATOMIC_RELAXED);
    __atomic_store_n(&t->dropped, t->dropped + n, __ATOMIC_RELAXED);
}

/* The order of the stores matters to tb_snapshot_all running in a signal
 * handler on this thread: t->chunk changes last, so a snapshot sees either
 * the old chunk (already marked handed over) or the new one complete. */
static void set_chunk(struct tb_thread *t, struct tb_chunk *c)
{
    if (c == NULL) {
        __atomic_store_n(&t->chunk, NULL, __ATOMIC_RELEASE);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        __atomic_store_n(&t->cur, NULL, __ATOMIC_RELAXED); /* a snapshot on another thread loads it */
        __atomic_store_n(&t->base, NULL, __ATOMIC_RELAXED); /* and the thread table (discard_pending) */
        t->end = NULL;
        t->fold_end = NULL;
        tb_set_compact(t, 0);
        t->truth = NULL;
        return;
    }
    __atomic_store_n(&c->thread, t->thread_id, __ATOMIC_RELAXED);
    __atomic_store_n(&c->seq, t->seq, __ATOMIC_RELAXED);
    __atomic_store_n(&c->first_instance, t->instance, __ATOMIC_RELAXED);
    __atomic_store_n(&t->base, c->slots, __ATOMIC_RELAXED);
    __atomic_store_n(&t->cur, c->slots, __ATOMIC_RELAXED);
    t->end = c->slots + c->cap - 1; /* a full record needs two slots */
    t->truth = c->truth;
    t->fold_end = NULL;
    __atomic_store_n(&t->fulls, 0, __ATOMIC_RELAXED);
    tb_set_compact(t, 0); /* the chunk's first record is a full one */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&t->chunk, c, __ATOMIC_RELEASE);
}

/* Marks the thread's chunk `c` (its first `n` slots filled) handed over
 * and offers `sent` to the writer: `c` itself, or a copy of its records
 * (send_copy). 0 when the writer took it; -1 when the trace is closed
 * (exit or a signal raced with this thread): the records cannot be written
 * any more, and those a shutdown snapshot did not already copy into the
 * trace count as dropped. */
static int offer_records(struct tb_thread *t, struct tb_chunk *c, struct tb_chunk *sent, size_t n)
{
    size_t records = (size_t)((int64_t)n - t->fulls); /* a full record takes two slots, a write set packs two words a slot */
    __atomic_store_n(&c->n, n, __ATOMIC_RELAXED); /* a snapshot skips it from here */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->seq += records;
    if (!tb_pool_open() || tb_offer(sent) != 0) {
        size_t copied = __atomic_load_n(&c->copied, __ATOMIC_ACQUIRE);
        count_dropped(t, n > copied ? tf_slots_records(c->slots + copied, n - copied) : 0);
        return -1;
    }
    t->recorded += records;
    __atomic_fetch_add(&total_recorded, records, __ATOMIC_RELAXED);
    return 0;
}

/* Sends the current chunk (if it holds anything) to the writer and, when
 * `refill`, takes a fresh one; returns 0 if the thread now has no chunk
 * (with nothing recorded the chunk stays). */
static int hand_over(struct tb_thread *t, int refill)
{
    struct tb_chunk *c = t->chunk;
    if (c != NULL) {
        size_t n = (size_t)(t->cur - t->base); /* slots */
        if (n == 0 && c->nsamples == 0)
            return 1; /* nothing to send: keep it */
        if (offer_records(t, c, c, n) != 0) {
            /* Retired, not freed: a snapshot may be reading it. Once the
             * queue refused it, hand-over is closed, so tb_pool_get below
             * gives nothing and the thread drops from here on. */
            set_chunk(t, refill ? tb_pool_get() : NULL);
            tb_chunk_retire(c);
            return t->chunk != NULL;
        }
    }
    set_chunk(t, refill ? tb_pool_get() : NULL);
    return t->chunk != NULL;
}

void tb_hand_over(struct tb_thread *t) { (void)hand_over(t, 1); }

__attribute__((noinline, cold)) static struct tf_slot *tb_untraced(struct tb_thread *t)
{
    static int said;
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_ACQ_REL))
        fprintf(stderr, "libtmtrace: process %ld is a fork of a traced process and records nothing "
                        "(TMTRACE_FILE=%s has no %%p for a trace of its own)\n", (long)getpid(), config.file);
    t->level = CONFIG_EVENTS_OFF;
    return NULL;
}

/* ---- drops ---------------------------------------------------------------- */


/* Counts the records of the discard area `t` fills as dropped. Dropped
 * events still take their place in program order, so the tools see where
 * the gap is. */
static void discard_count(struct tb_thread *t)
{
    if (t->chunk != NULL || t->discard == NULL || t->base != t->discard)
        return;
    uint64_t records = (uint64_t)((int64_t)(t->cur - t->base) - t->fulls);
    t->seq += records;
    count_dropped(t, records);
    __atomic_store_n(&t->cur, t->base, __ATOMIC_RELAXED);
    __atomic_store_n(&t->fulls, 0, __ATOMIC_RELAXED);
}

/* Points `t`, which has no chunk, at its discard area (mapped at its
 * first drop, with a truth column when clock faults are injected); NULL
 * when there is none to be had. */
static struct tf_slot *discard_start(struct tb_thread *t)
{
    if (t->discard == NULL) {
        size_t bytes = TB_DISCARD_SLOTS * (sizeof(struct tf_slot) + (tb_truth ? sizeof(uint64_t) : 0));
        struct tf_slot *d = calloc(1, bytes);
        if (d == NULL)
            return NULL;
        __atomic_store_n(&t->discard, d, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&t->fulls, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&t->cur, t->discard, __ATOMIC_RELAXED);
    __atomic_store_n(&t->base, t->discard, __ATOMIC_RELAXED);
    t->end = t->discard + TB_DISCARD_SLOTS - 1; /* a full record needs two slots */
    t->truth = tb_truth ? (uint64_t *)(void *)(t->discard + TB_DISCARD_SLOTS) : NULL;
    t->fold_end = NULL;
    tb_set_compact(t, 0);
    return t->cur;
}

/* Level all, with the tracer's threads kept to a share of a CPU
 * (TMTRACE_WRITER_SHARE below 100): a thread's attempts may be shed
 * (tb_thread.h, `shedding`). At 100 the user asked for every record the
 * memory holds, and gets them or the documented drops. */
static int tb_may_shed(void) { return config.events == CONFIG_EVENTS_ALL && config.writer_share < 100; }

/* Whether the attempts `t` starts from now on are shed: decided at each
 * chunk it takes, from the pool's state (tb_pool_short), with the
 * pool's hysteresis so that a thread does not flip at every chunk. */
static void shed_decide(struct tb_thread *t, int no_chunk)
{
    if (t->sampled && t->detail == 0)
        t->shedding = (uint8_t)(no_chunk || tb_pool_short(t->shedding));
}

struct tf_slot *tb_chunk_full(struct tb_thread *t)
{
    if (TB_UNLIKELY(tb_untraced_child))
        return tb_untraced(t);
    discard_count(t);
    int got = (t->chunk != NULL || tb_pool_may_give()) && hand_over(t, 1);
    shed_decide(t, !got);
    if (got)
        return t->cur;
    struct tf_slot *s = discard_start(t);
    if (s != NULL)
        return s;
    t->seq++;
    count_dropped(t, 1);
    return NULL;
}

/* ---- attach and detach ---------------------------------------------------- */

int tb_attach(struct tb_thread *t)
{
    memset(t, 0, sizeof *t);
    t->level = CONFIG_EVENTS_OFF;
    t->tick_tsc = UINT64_MAX;
    if (TB_UNLIKELY(tb_untraced_child) && config.events != CONFIG_EVENTS_OFF) {
        t->level = (uint8_t)config.events; /* no buffer: the first event says why */
        return 0;
    }
    if (!tb_pool_open() || config.events == CONFIG_EVENTS_OFF)
        return 0;
    t->os_tid = (uint32_t)syscall(SYS_gettid);
    if (reg_add(t) != 0)
        return -1;
    t->injecting = (uint8_t)tb_truth;
    t->stamp_each = config.stamp == CONFIG_STAMP_EACH;
    t->fast_stamp = (uint8_t)tb_fast;
    uint32_t aux;
    uint64_t now = clock_rdtscp(&aux);
    t->tick_period = (uint64_t)config.resample_ms * (tb_hz / 1000);
    t->migrate_period = (uint64_t)config.migrate_ms * (tb_hz / 1000);
    t->next_sample_tsc = now;  /* first START takes a sample at once */
    t->next_migrate_tsc = now + t->migrate_period;
    t->tick_tsc = (t->tick_period || t->migrate_period) ? now : UINT64_MAX;
    t->detail = config.events == CONFIG_EVENTS_TX ? (uint32_t)config.detail : 0;
    t->sampled = t->detail > 0 || tb_may_shed();
    t->rng = (now ^ (uint64_t)t->os_tid << 32) | 1; /* per thread, never 0 */
    tb_pool_thread_join();
    set_chunk(t, tb_pool_get());
    sig_stack_enter(); /* a stack overflow still runs the handler that flushes the trace */
    t->level = (uint8_t)config.events;
    return 0;
}

/* A leaving thread's chunk holds at most this part of its room: its records
 * go to the writer in a copy of their size (send_copy). */
#define TB_FIT_PART 32

/* Hands a leaving thread's barely used chunk over as a copy of its records
 * (charged to TMTRACE_MEMORY until written), so that the chunk itself can
 * go straight back to the pool; returns 0 when the chunk is to be handed
 * over itself. Handed over itself, it would return only once written, in
 * memory mode at exit: threads that each enter, run a transaction and
 * leave took a whole chunk each, and the reserve, which follows the chunks
 * taken, had the writer and the entering threads map and populate chunks
 * at that rate (docs/tracer.md, "Buffers and hand-over"). The thread never
 * points at the copy: the writer frees it once written, and a shutdown or
 * signal snapshot, which follows the thread's pointer, must not find it
 * then. */
static int send_copy(struct tb_thread *t)
{
    struct tb_chunk *c = t->chunk;
    size_t n = (size_t)(t->cur - t->base);
    if (!c->pooled || n > c->cap / TB_FIT_PART || !tb_pool_open())
        return 0;
    struct tb_chunk *s = tb_chunk_copy(c, n, c->seq, 1);
    if (s == NULL)
        return 0; /* over TMTRACE_MEMORY or out of memory: the chunk goes itself */
    s->n = n;
    if (offer_records(t, c, s, n) != 0)
        tb_chunk_release(s); /* never queued: nobody else has seen it */
    tb_pool_not_consumed();
    return 1;
}

void tb_detach(struct tb_thread *t)
{
    if (t->thread_id == 0)
        return;
    if (t->chunk != NULL) {
        struct tb_chunk *c = t->chunk;
        /* No fresh chunk: taking one to give straight back counted as a
         * chunk taken, and the pool's reserve, which follows the chunks
         * taken, grew with every thread that came and went. */
        if ((t->cur != t->base || c->nsamples != 0) && !send_copy(t))
            hand_over(t, 0);
        struct tb_chunk *last = t->chunk;
        set_chunk(t, NULL);
        if (last != NULL) {
            if (tb_pool_open())
                tb_chunk_release(last);
            else
                tb_chunk_retire(last); /* a snapshot may be reading it */
        }
    }
    discard_count(t);
    set_chunk(t, NULL);
    free(t->discard);
    __atomic_store_n(&t->discard, NULL, __ATOMIC_RELAXED);
    t->level = CONFIG_EVENTS_OFF;
    t->tick_tsc = UINT64_MAX;
    tb_pool_thread_leave();
    reg_remove(t);
    sig_stack_leave();
    t->thread_id = 0;
}

/* ---- life cycle ----------------------------------------------------------- */

int tb_setup(uint64_t tsc_hz, const int *cpus, int ncpus, int (*offer)(struct tb_chunk *c))
{
    tb_offer = offer;
    tb_untraced_child = 0;
    tb_hz = tsc_hz;
    tb_fast = clock_has_rdpid();
    tb_truth = skew_active();
    skew_migrate_cpus(cpus, ncpus < CPU_SETSIZE ? ncpus : CPU_SETSIZE);
    tb_pool_setup(tb_truth);
    return 0;
}

void tb_close(void) { tb_pool_close(); }

void tb_teardown(void)
{
    tb_pool_teardown();
    pthread_mutex_lock(&reg_lock);
    int live = 0;
    for (size_t i = 0; i < nreg; i++)
        live |= reg[i].live != NULL;
    if (!live)
        reg_forget();
    pthread_mutex_unlock(&reg_lock);
}

/* fork(): the child gets the pool and the thread table unlocked and
 * consistent, whatever other threads were doing at the fork. */
void tb_fork_prepare(void)
{
    pthread_mutex_lock(&reg_lock);
    tb_pool_fork_prepare();
}

void tb_fork_release(void)
{
    tb_pool_fork_release();
    pthread_mutex_unlock(&reg_lock);
}

void tb_fork_child(void)
{
    tb_fork_release();
    int was_open = tb_pool_fork_child();
    reg_forget();
    __atomic_store_n(&total_recorded, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&total_dropped, 0, __ATOMIC_RELAXED);
    tb_untraced_child = was_open;
}

void tb_fork_thread(struct tb_thread *t, int traced)
{
    if (traced) {
        tb_untraced_child = 0;
        (void)tb_attach(t); /* a new id in the child's trace; on failure it records nothing */
        return;
    }
    uint8_t level = t->level;
    memset(t, 0, sizeof *t);
    t->tick_tsc = UINT64_MAX;
    t->level = tb_untraced_child ? level : CONFIG_EVENTS_OFF;
}

/* ---- the snapshot --------------------------------------------------------- */

/* A copy of the records `t` has published in its current chunk, or NULL
 * when it has none of its own (no chunk, one already on its way to the
 * writer, or one it changed while we looked). The thread runs on. */
static struct tb_chunk *snapshot_one(struct tb_thread *t)
{
    struct tb_chunk *src = __atomic_load_n(&t->chunk, __ATOMIC_ACQUIRE);
    if (src == NULL || __atomic_load_n(&src->n, __ATOMIC_ACQUIRE) != 0)
        return NULL;
    struct tf_slot *cur = __atomic_load_n(&t->cur, __ATOMIC_ACQUIRE);
    /* If it changed chunks between the two loads, `cur` points into another
     * chunk. */
    if (__atomic_load_n(&t->chunk, __ATOMIC_ACQUIRE) != src)
        return NULL;
    /* A thread stopped by the signal inside hand_over still points at the
     * chunk it just queued; the writer may have written and recycled it
     * since (tb_pool_get clears its count), and another thread may be
     * filling it now. Only a chunk that still names this thread is its own. */
    if (__atomic_load_n(&src->thread, __ATOMIC_RELAXED) != t->thread_id)
        return NULL;
    uint64_t seq = __atomic_load_n(&src->seq, __ATOMIC_RELAXED);
    size_t n = (size_t)((uintptr_t)cur - (uintptr_t)src->slots) / sizeof *cur;
    if (cur < src->slots || n > src->cap)
        return NULL;
    struct tb_chunk *c = tb_chunk_copy(src, n, seq, 0);
    if (c == NULL)
        return NULL;
    c->thread = t->thread_id;
    c->n = n;
    /* Handed over (or recycled) while we copied: the original is written or
     * counted as dropped by its owner; a copy would repeat its records. */
    if (__atomic_load_n(&src->n, __ATOMIC_ACQUIRE) != 0 || __atomic_load_n(&t->chunk, __ATOMIC_ACQUIRE) != src ||
        __atomic_load_n(&src->seq, __ATOMIC_RELAXED) != seq ||
        __atomic_load_n(&src->thread, __ATOMIC_RELAXED) != t->thread_id) {
        tb_chunk_release(c);
        return NULL;
    }
    /* The owner hands this chunk over later (or never): the records copied
     * here are in the trace, not lost. */
    __atomic_store_n(&src->copied, n, __ATOMIC_RELEASE);
    return c;
}

void tb_snapshot_all(void (*emit)(struct tb_chunk *c))
{
    struct tb_chunk *copies = NULL, **tail = &copies;
    pthread_mutex_lock(&reg_lock);
    for (size_t i = 0; i < nreg; i++) {
        struct tb_thread *t = reg[i].live;
        struct tb_chunk *c = t ? snapshot_one(t) : NULL;
        if (c == NULL)
            continue;
        reg[i].dropped = __atomic_load_n(&t->dropped, __ATOMIC_RELAXED);
        *tail = c;
        tail = &c->next;
    }
    pthread_mutex_unlock(&reg_lock);
    /* Emitted outside the lock: the writer takes it to announce threads. */
    while (copies != NULL) {
        struct tb_chunk *next = copies->next;
        copies->next = NULL;
        emit(copies);
        copies = next;
    }
}
