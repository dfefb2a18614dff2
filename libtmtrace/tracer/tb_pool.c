/*
 * tb_pool.c - the chunks and their pool (see tb_pool.h).
 *
 * Owns: the free list (pool_lock), the TMTRACE_MEMORY account, the reserve
 * of populated chunks and its refill policy, the retired chunks, whether
 * hand-over is open, and the pool's figures for tmt_stats.
 *
 * Never: runs on the event path (only on a recording thread's slow path
 * when the reserve ran dry, at attach, and on the writer's threads: the
 * writer and its refill thread), prints,
 * or calls another module of the tracer: tb_threads.c and trace_writer.c
 * call it, never the reverse (docs/tracer.md, "Buffers and hand-over").
 */
#include "tb_pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "config.h"

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tb_chunk *pool_free;      /* guarded by pool_lock */
static size_t pool_nfree;               /* atomic: read without the lock */
static int64_t pool_bytes;              /* atomic: bytes of pooled chunks, and of unwritten loose copies */
static int64_t pool_limit;              /* TMTRACE_MEMORY */
static int64_t pool_at_init;            /* bytes tb_pool_setup populated */
static size_t chunk_cap;                /* slots per chunk */
static int pool_truth;                  /* chunks carry a truth column */
static int pool_is_open;                /* atomic: hand-over accepted */
static int pool_halt;                   /* atomic: a fatal signal's flush needs the writer now */
static uint64_t pool_inline;            /* atomic: chunks mapped on a recording thread (pool ran dry) */
static uint64_t pool_late;              /* atomic: of those, the ones mapped TB_LATE_NS after setup */
static uint64_t pool_setup_ns;          /* CLOCK_MONOTONIC at tb_pool_setup */
static uint64_t pool_bytes_last;        /* atomic: the most pool_bytes held before it last fell */
static int pool_held;                   /* atomic: tb_pool_hold */
static uint64_t pool_held_refusals;     /* atomic: chunks refused to a recording thread because the pool was held */

/* The reserve: chunks kept free ahead of demand. */
static size_t pool_threads;  /* atomic: threads attached */
static size_t pool_reserve;  /* atomic: the adaptive part of the reserve, in chunks */
static uint64_t pool_taken;  /* atomic: chunks handed to recording threads */
static uint64_t pool_mark;   /* pool_taken at the previous pass (the thread that passes only) */

/* Chunks a thread let go of after hand-over closed. They are never freed
 * while the trace may still be written: on a fatal signal the writer thread
 * copies the threads' chunks (tb_snapshot_all) while those threads run on,
 * and a chunk unmapped under it would crash the process instead of letting
 * it die of the signal. tb_pool_teardown frees them. */
static struct tb_chunk *retired; /* atomic */

void tb_chunk_retire(struct tb_chunk *c)
{
    struct tb_chunk *head = __atomic_load_n(&retired, __ATOMIC_RELAXED);
    do {
        c->next = head;
    } while (!__atomic_compare_exchange_n(&retired, &head, c, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

static size_t chunk_bytes(void)
{
    return sizeof(struct tb_chunk) + chunk_cap * sizeof(struct tf_slot) +
           (pool_truth ? chunk_cap * sizeof(uint64_t) : 0);
}

/* ---- one chunk ------------------------------------------------------------ */

/* Every chunk is mapped with its pages populated: a page fault inside the
 * event path costs far more than the record itself. The pool does it ahead
 * of demand (pool_fill), off the event path, in steps of TB_POPULATE_STEP:
 * populating holds the process's mmap lock, and populating a whole chunk at
 * once kept the program's own brk/mmap (malloc growing its heap) waiting in
 * the kernel for that long (docs/tracer.md, "Buffers and hand-over"). */
#define TB_POPULATE_STEP ((size_t)64 << 10)

static int chunk_populate(void *p, size_t total)
{
    for (size_t off = 0; off < total; off += TB_POPULATE_STEP) {
        size_t n = total - off < TB_POPULATE_STEP ? total - off : TB_POPULATE_STEP;
        if (madvise((char *)p + off, n, MADV_POPULATE_WRITE) != 0) {
            if (errno != EINVAL)
                return -1;
            /* A kernel before 5.14: touch each page (one fault each, the
             * lock held only for that page). */
            for (size_t i = 0; i < n; i += 4096)
                ((volatile char *)p)[off + i] = 0;
        }
    }
    return 0;
}

/* The header of a fresh chunk of `cap` slots at `p` (zeroed by the caller
 * or by the mapping), its truth column after the slots. */
static struct tb_chunk *chunk_init(void *p, size_t cap, int truth)
{
    struct tb_chunk *c = p;
    c->cap = cap;
    c->truth = truth ? (uint64_t *)(void *)((char *)c + sizeof(struct tb_chunk) + cap * sizeof(struct tf_slot))
                     : NULL;
    return c;
}

static size_t chunk_size(size_t cap, int truth)
{
    return sizeof(struct tb_chunk) + cap * sizeof(struct tf_slot) + (truth ? cap * sizeof(uint64_t) : 0);
}

static struct tb_chunk *chunk_alloc(size_t cap, int truth)
{
    size_t total = chunk_size(cap, truth);
    void *p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    if (chunk_populate(p, total) != 0) {
        munmap(p, total);
        return NULL;
    }
    memset(p, 0, sizeof(struct tb_chunk));
    struct tb_chunk *c = chunk_init(p, cap, truth);
    c->mapped = total;
    return c;
}

/* A chunk outside the pool for `cap` slots, from malloc, for a leaving
 * thread's last records: they are few, and unmapping, in a process with
 * threads running on other CPUs, stops every one of them for a TLB
 * shootdown. Its bytes count toward TMTRACE_MEMORY until tb_chunk_release
 * (`charged`); NULL when they do not fit or without memory. */
static struct tb_chunk *chunk_alloc_loose(size_t cap, int truth)
{
    int64_t total = (int64_t)chunk_size(cap, truth);
    if (__atomic_add_fetch(&pool_bytes, total, __ATOMIC_RELAXED) > pool_limit) {
        __atomic_fetch_sub(&pool_bytes, total, __ATOMIC_RELAXED);
        return NULL;
    }
    void *p = calloc(1, (size_t)total);
    if (p == NULL) {
        __atomic_fetch_sub(&pool_bytes, total, __ATOMIC_RELAXED);
        return NULL;
    }
    struct tb_chunk *c = chunk_init(p, cap, truth);
    c->charged = total;
    return c;
}

static void chunk_free(struct tb_chunk *c)
{
    if (c->mapped)
        munmap(c, c->mapped);
    else
        free(c);
}

struct tb_chunk *tb_chunk_copy(const struct tb_chunk *src, size_t n, uint64_t seq, int loose)
{
    size_t cap = n ? n : 1;
    struct tb_chunk *c = loose ? chunk_alloc_loose(cap, src->truth != NULL) : chunk_alloc(cap, src->truth != NULL);
    if (c == NULL)
        return NULL;
    c->thread = __atomic_load_n(&src->thread, __ATOMIC_RELAXED);
    c->seq = seq;
    c->first_instance = __atomic_load_n(&src->first_instance, __ATOMIC_RELAXED);
    c->nsamples = __atomic_load_n(&src->nsamples, __ATOMIC_ACQUIRE);
    memcpy(c->samples, src->samples, c->nsamples * sizeof c->samples[0]);
    memcpy(c->slots, src->slots, n * sizeof c->slots[0]);
    if (c->truth)
        memcpy(c->truth, src->truth, n * sizeof c->truth[0]);
    return c;
}

/* ---- the free list and the account ---------------------------------------- */

/* Puts a chunk on the free list (pool_lock held). */
static void pool_push(struct tb_chunk *c)
{
    c->next = pool_free;
    pool_free = c;
    __atomic_store_n(&pool_nfree, pool_nfree + 1, __ATOMIC_RELAXED);
}

static size_t pool_ahead(void) { return __atomic_load_n(&pool_nfree, __ATOMIC_RELAXED); }

/* Reserves the bytes of one more chunk in TMTRACE_MEMORY; 0 when it would
 * pass the limit (nothing reserved). */
static int pool_charge(int64_t bytes)
{
    if (__atomic_add_fetch(&pool_bytes, bytes, __ATOMIC_RELAXED) <= pool_limit)
        return 1;
    __atomic_fetch_sub(&pool_bytes, bytes, __ATOMIC_RELAXED);
    return 0;
}

/* Keeps the most pool_bytes held before it falls (a loose copy written, a
 * teardown), so that tmt_stats reports the most of the run. */
static void pool_bytes_keep_peak(void)
{
    uint64_t now = (uint64_t)__atomic_load_n(&pool_bytes, __ATOMIC_RELAXED);
    uint64_t last = __atomic_load_n(&pool_bytes_last, __ATOMIC_RELAXED);
    while (now > last &&
           !__atomic_compare_exchange_n(&pool_bytes_last, &last, now, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

/* ---- the reserve and its refill policy ------------------------------------ */

/* Free chunks the pool keeps ahead of demand, so that a thread that hands
 * a chunk over finds the next one mapped and populated while the writer
 * still works on the last ones. The reserve adapts to the recording rate:
 * at least TB_RESERVE per attached thread, and at each pass (the refill
 * thread's, trace_writer.c) twice the chunks taken since the previous pass
 * (what the threads consumed while it was away), so at a steady rate the threads never map a
 * chunk themselves; a chunk a thread still had to map (or, the pool held, went
 * without) doubles it, up to
 * the chunks taken so far (so it stays within what the run uses). It never
 * shrinks during a run (the chunks it asked for stay mapped anyway) and
 * never exceeds an eighth of TMTRACE_MEMORY. In stream mode chunks queued
 * for the writer count toward it (each returns to the free list once
 * written): the writer then maps only what the threads hold beyond the
 * chunks in circulation, and spends its time on the backlog that recycles
 * them rather than on mapping more. */
#define TB_RESERVE 4
/* TMTRACE_PREFAULT=0 (at most TMTRACE_MEMORY/4): the arena mapped at
 * init, at every level, in stream mode also the room the writer defers
 * into while the program uses every CPU (TMTRACE_WRITER_DEFER). A busy
 * program records faster than any writer keeping to its share encodes,
 * and what is not populated before the run is populated during it, on the
 * program's CPUs, about as dear per event as the record work itself;
 * populating it at tmt_init, after the clock sampling phase, trades
 * resident memory for the run's wall time (docs/tracer.md, "Buffers and
 * hand-over"). */
#define TB_PREFAULT_DEFAULT ((int64_t)256 << 20)

static size_t pool_cap(void) { return (size_t)(pool_limit / 8 / (int64_t)chunk_bytes()); }

/* Raises the adaptive reserve to `n` chunks, within pool_cap(). */
static void pool_reserve_raise(size_t n)
{
    size_t cap = pool_cap();
    if (n > cap)
        n = cap;
    size_t cur = __atomic_load_n(&pool_reserve, __ATOMIC_RELAXED);
    while (cur < n && !__atomic_compare_exchange_n(&pool_reserve, &cur, n, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

static size_t pool_want(void)
{
    size_t base = TB_RESERVE * __atomic_load_n(&pool_threads, __ATOMIC_RELAXED);
    size_t adapt = __atomic_load_n(&pool_reserve, __ATOMIC_RELAXED);
    return adapt > base ? adapt : base;
}

/* A recording thread found the reserve dry: the reserve doubles now rather
 * than at the refill thread's next pass, but never past the chunks taken
 * so far (the same rule whether the thread then maps a chunk itself or,
 * the pool being held, drops). */
static void pool_ran_dry(void)
{
    size_t taken = (size_t)__atomic_load_n(&pool_taken, __ATOMIC_RELAXED);
    size_t twice = 2 * pool_want();
    pool_reserve_raise(twice < taken ? twice : taken);
}

/* A recording thread found the reserve dry while the pool is held. */
static void pool_refuse_held(void)
{
    __atomic_fetch_add(&pool_held_refusals, 1, __ATOMIC_RELAXED);
    pool_ran_dry();
}

int tb_pool_may_give(void)
{
    if (__atomic_load_n(&pool_nfree, __ATOMIC_RELAXED) != 0)
        return 1;
    if (__atomic_load_n(&pool_held, __ATOMIC_RELAXED)) {
        pool_refuse_held();
        return 0;
    }
    return __atomic_load_n(&pool_bytes, __ATOMIC_RELAXED) + (int64_t)chunk_bytes() <= pool_limit;
}

int tb_pool_short(int was)
{
    size_t ahead = pool_ahead(), want = pool_want();
    int64_t lack = ahead < want ? (int64_t)(want - ahead) * (int64_t)chunk_bytes() : 0;
    int held = __atomic_load_n(&pool_held, __ATOMIC_RELAXED);
    if (!held && __atomic_load_n(&pool_bytes, __ATOMIC_RELAXED) + lack <= pool_limit)
        return 0; /* the reserve can be topped up at once: nothing to shed */
    /* Short below half the reserve, and again once it is whole. */
    return ahead < (was ? want : want / 2);
}

void tb_pool_hold(int on)
{
    /* A store only on a change: the refill thread calls this every pass,
     * and the recording threads read the line on their drop path. */
    if (__atomic_load_n(&pool_held, __ATOMIC_RELAXED) != on)
        __atomic_store_n(&pool_held, on, __ATOMIC_RELAXED);
}

/* Maps populated chunks until `want` are ahead of demand or the next would
 * pass TMTRACE_MEMORY, adding at most what the reserve lacked on entry and
 * at most `most`; returns how many it mapped:
 * threads that take chunks as fast as they are mapped must not keep the
 * writer here, away from the chunks it has to write (and from a signal's
 * flush, which stops it). Runs at init, at attach and on the writer's
 * threads: never on the event path. */
static size_t pool_fill(size_t want, size_t most)
{
    size_t added = 0, ahead = pool_ahead();
    size_t need = want > ahead ? want - ahead : 0;
    if (need > most)
        need = most;
    int64_t one = (int64_t)chunk_bytes();
    while (added < need && pool_ahead() < want && !__atomic_load_n(&pool_halt, __ATOMIC_ACQUIRE)) {
        if (!pool_charge(one))
            break;
        struct tb_chunk *c = chunk_alloc(chunk_cap, pool_truth);
        if (c == NULL) {
            __atomic_fetch_sub(&pool_bytes, one, __ATOMIC_RELAXED);
            break;
        }
        c->pooled = 1;
        pthread_mutex_lock(&pool_lock);
        pool_push(c);
        pthread_mutex_unlock(&pool_lock);
        added++;
    }
    return added;
}

#ifdef TMT_TEST_HOOKS
static int pool_test_no_refill;
void tb_pool_test_no_refill(int on) { pool_test_no_refill = on; }
#endif

/* Tops the reserve up while hand-over is open, by at most TB_POOL_STEP
 * chunks; returns how many it mapped. */
static size_t pool_refill(void)
{
#ifdef TMT_TEST_HOOKS
    if (pool_test_no_refill)
        return 0;
#endif
    if (__atomic_load_n(&pool_is_open, __ATOMIC_ACQUIRE))
        return pool_fill(pool_want(), TB_POOL_STEP);
    return 0;
}

/* Whether one more chunk fits within TMTRACE_MEMORY and leaves the pool
 * at most `beyond_init` bytes larger than tb_pool_setup populated it. */
static int pool_can_grow(uint64_t beyond_init)
{
    int64_t after = __atomic_load_n(&pool_bytes, __ATOMIC_RELAXED) + (int64_t)chunk_bytes();
    int64_t budget = pool_at_init + (int64_t)(beyond_init < (uint64_t)pool_limit ? beyond_init : (uint64_t)pool_limit);
    return after <= pool_limit && after <= budget;
}

struct tb_pool_advice tb_pool_service(enum tb_pool_call call, struct tb_chunk *written, uint64_t backlog)
{
    size_t mapped = 0;
    switch (call) {
    case TB_POOL_PASS: {
        uint64_t taken = __atomic_load_n(&pool_taken, __ATOMIC_RELAXED);
        /* Below the mark when chunks taken before it came straight back. */
        pool_reserve_raise(taken > pool_mark ? (size_t)(2 * (taken - pool_mark)) : 0);
        pool_mark = taken;
        mapped = pool_refill();
        break;
    }
    case TB_POOL_RETURN:
    case TB_POOL_WRITTEN:
        /* After a fatal signal the interrupted thread may hold the pool's
         * lock; the process is about to die, so the chunk is not recycled. */
        if (__atomic_load_n(&pool_halt, __ATOMIC_ACQUIRE))
            break;
        tb_chunk_release(written);
        /* A backlog takes a while to write: the recording threads' reserve
         * is topped up between its chunks, so that they do not map chunks
         * themselves while they wait for these. */
        if (call == TB_POOL_WRITTEN && pool_ahead() < pool_want())
            mapped = pool_refill();
        break;
    case TB_POOL_TOPUP:
        mapped = pool_refill();
        break;
    case TB_POOL_HALT:
        __atomic_store_n(&pool_halt, 1, __ATOMIC_RELEASE);
        break;
    case TB_POOL_ASK:
        break;
    }
    struct tb_pool_advice a;
    a.low = pool_ahead() < pool_want();
    a.full = a.low && !pool_can_grow(backlog);
    a.threads = __atomic_load_n(&pool_threads, __ATOMIC_RELAXED);
    a.mapped = mapped;
    return a;
}

void tb_pool_thread_join(void)
{
    __atomic_fetch_add(&pool_threads, 1, __ATOMIC_RELAXED);
    (void)pool_fill(pool_want(), SIZE_MAX);
}

void tb_pool_thread_leave(void) { __atomic_fetch_sub(&pool_threads, 1, __ATOMIC_RELAXED); }

void tb_pool_not_consumed(void) { __atomic_fetch_sub(&pool_taken, 1, __ATOMIC_RELAXED); }

/* ---- taking and giving back ----------------------------------------------- */

/* How long after setup a recording thread that maps a chunk itself counts
 * as a steady-state failure of the refill (tmt_stats' buffer_late_maps):
 * before it, the reserve is still learning the threads' rate. */
#define TB_LATE_NS 1000000000u

static uint64_t pool_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The reserve ran dry (the writer could not refill it in time) and the
 * pool is not held: the recording thread maps the chunk itself, its bytes
 * already charged, and the reserve doubles (pool_ran_dry). */
static struct tb_chunk *pool_grow_inline(void)
{
    struct tb_chunk *c = chunk_alloc(chunk_cap, pool_truth);
    if (c == NULL) {
        __atomic_fetch_sub(&pool_bytes, (int64_t)chunk_bytes(), __ATOMIC_RELAXED);
        return NULL;
    }
    c->pooled = 1;
    __atomic_fetch_add(&pool_inline, 1, __ATOMIC_RELAXED);
    if (pool_now_ns() - pool_setup_ns >= TB_LATE_NS)
        __atomic_fetch_add(&pool_late, 1, __ATOMIC_RELAXED);
    pool_ran_dry();
    return c;
}

struct tb_chunk *tb_pool_get(void)
{
    if (!__atomic_load_n(&pool_is_open, __ATOMIC_ACQUIRE) || !tb_pool_may_give())
        return NULL;
    struct tb_chunk *c = NULL;
    int grow = 0;
    pthread_mutex_lock(&pool_lock);
    if (pool_free != NULL) {
        c = pool_free;
        pool_free = c->next;
        __atomic_store_n(&pool_nfree, pool_nfree - 1, __ATOMIC_RELAXED);
    } else if (__atomic_load_n(&pool_held, __ATOMIC_RELAXED)) {
        pool_refuse_held();
    } else {
        grow = pool_charge((int64_t)chunk_bytes()); /* allocated outside the lock */
    }
    pthread_mutex_unlock(&pool_lock);
    if (grow)
        c = pool_grow_inline();
    if (c != NULL) {
        __atomic_fetch_add(&pool_taken, 1, __ATOMIC_RELAXED);
        c->next = NULL;
        /* A snapshot may look at these. */
        __atomic_store_n(&c->n, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&c->nsamples, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&c->copied, 0, __ATOMIC_RELAXED);
    }
    return c;
}

void tb_chunk_release(struct tb_chunk *c)
{
    if (!c->pooled) {
        if (c->charged) {
            pool_bytes_keep_peak();
            __atomic_fetch_sub(&pool_bytes, c->charged, __ATOMIC_RELAXED);
        }
        chunk_free(c);
        return;
    }
    pthread_mutex_lock(&pool_lock);
    pool_push(c);
    pthread_mutex_unlock(&pool_lock);
}

/* ---- life cycle ----------------------------------------------------------- */

void tb_pool_setup(int truth)
{
    chunk_cap = (size_t)config.buffer_bytes / sizeof(struct tf_slot);
    pool_truth = truth;
    pool_limit = config.memory_bytes;
    pool_bytes = 0;
    __atomic_store_n(&pool_bytes_last, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&pool_inline, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&pool_late, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&pool_held, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&pool_held_refusals, 0, __ATOMIC_RELAXED);
    pool_free = NULL;
    pool_nfree = 0;
    int64_t prefault = config.prefault_bytes;
    if (prefault == 0) {
        prefault = TB_PREFAULT_DEFAULT;
        if (prefault > pool_limit / 4)
            prefault = pool_limit / 4;
    }
    /* The arena recording starts in, populated before the first event. */
    __atomic_store_n(&pool_halt, 0, __ATOMIC_RELEASE);
    (void)pool_fill((size_t)(prefault / (int64_t)chunk_bytes()), SIZE_MAX);
    pool_at_init = __atomic_load_n(&pool_bytes, __ATOMIC_RELAXED);
    pool_setup_ns = pool_now_ns();
    __atomic_store_n(&pool_is_open, 1, __ATOMIC_RELEASE);
}

void tb_pool_close(void) { __atomic_store_n(&pool_is_open, 0, __ATOMIC_RELEASE); }

int tb_pool_open(void) { return __atomic_load_n(&pool_is_open, __ATOMIC_ACQUIRE); }

void tb_pool_teardown(void)
{
    pthread_mutex_lock(&pool_lock);
    while (pool_free != NULL) {
        struct tb_chunk *c = pool_free;
        pool_free = c->next;
        chunk_free(c);
    }
    /* Atomic: a thread that runs on reads them in tb_chunk_full. */
    __atomic_store_n(&pool_nfree, 0, __ATOMIC_RELAXED);
    pool_bytes_keep_peak();
    __atomic_store_n(&pool_bytes, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&pool_lock);
    /* The writer has stopped and no snapshot runs any more: nothing reads
     * the retired chunks, and their owners never look at them again. */
    struct tb_chunk *c = __atomic_exchange_n(&retired, NULL, __ATOMIC_ACQUIRE);
    while (c != NULL) {
        struct tb_chunk *next = c->next;
        chunk_free(c);
        c = next;
    }
}

void tb_pool_fork_prepare(void) { pthread_mutex_lock(&pool_lock); }

void tb_pool_fork_release(void) { pthread_mutex_unlock(&pool_lock); }

int tb_pool_fork_child(void)
{
    int was_open = tb_pool_open();
    tb_pool_close();
    pool_free = NULL;
    pool_nfree = 0;
    __atomic_store_n(&pool_bytes, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&retired, NULL, __ATOMIC_RELAXED);
    return was_open;
}

/* ---- figures -------------------------------------------------------------- */

uint64_t tb_pool_bytes(void)
{
    uint64_t now = (uint64_t)__atomic_load_n(&pool_bytes, __ATOMIC_RELAXED);
    uint64_t last = __atomic_load_n(&pool_bytes_last, __ATOMIC_RELAXED);
    return now > last ? now : last;
}

uint64_t tb_pool_held_refusals(void) { return __atomic_load_n(&pool_held_refusals, __ATOMIC_RELAXED); }

int tb_pool_reached_limit(void) { return (int64_t)tb_pool_bytes() + (int64_t)chunk_bytes() > pool_limit; }

uint64_t tb_inline_growths(void) { return __atomic_load_n(&pool_inline, __ATOMIC_RELAXED); }

uint64_t tb_late_growths(void) { return __atomic_load_n(&pool_late, __ATOMIC_RELAXED); }

uint64_t tb_pool_capacity(void) { return (uint64_t)(pool_limit / (int64_t)chunk_bytes()); }
