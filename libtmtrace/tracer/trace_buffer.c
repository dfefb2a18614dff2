/*
 * trace_buffer.c - per-thread trace buffers: the chunk pool, the hand-over
 * of full chunks to the writer, drop accounting, the thread table and the
 * schedule of each thread's ticks (in-run clock samples, taken by
 * clock_sample.c; forced migrations, made by skew.c). Injected clock faults
 * are skew.c's (see trace_buffer.h).
 *
 * Runs on the recording threads' slow paths only (a chunk is full, a tick is
 * due, attach/detach). Never prints, never blocks on the writer: when no
 * chunk is free and TMTRACE_MEMORY is reached the event is dropped and
 * counted in the thread's `dropped`.
 */
#include "trace_buffer.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock_sample.h"
#include "error.h"
#include "skew.h"
#include "trace_writer.h"

/* ---- the pool ----------------------------------------------------------- */

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tb_chunk *pool_free;      /* guarded by pool_lock */
static size_t pool_nfree;               /* atomic: read without the lock */
static int64_t pool_bytes;              /* atomic: bytes of pooled chunks, and of unwritten copies (tb_send_copy) */
static int64_t pool_limit;              /* TMTRACE_MEMORY */
static size_t chunk_cap;                /* slots per chunk */
static int pool_truth;                  /* chunks carry a truth column */
static int tb_open;                     /* atomic: hand-over accepted */
static uint64_t pool_inline;            /* atomic: chunks mapped on a recording thread (pool ran dry) */

static uint64_t tb_hz;
static int tb_fast;     /* unordered stamps where order is not needed (the CPU has rdpid) */
static int tb_ncpus;

static uint64_t total_recorded, total_dropped; /* atomic */
static int tb_untraced_child; /* a forked child without a trace of its own (tb_fork_child) */

/* Chunks a thread let go of after hand-over closed. They are never freed
 * while the trace may still be written: on a fatal signal the writer thread
 * copies the threads' chunks (tb_snapshot_all) while those threads run on,
 * and a chunk unmapped under it would crash the process instead of letting
 * it die of the signal. tb_teardown frees them. Lock-free push: the owner
 * may be the thread interrupted by the signal. */
static struct tb_chunk *retired; /* atomic */

static void chunk_retire(struct tb_chunk *c)
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

/* Every chunk is mapped with its pages populated: taking a page fault per
 * 4 KiB inside the event path costs more than the record itself (on this
 * VM, 10-90 ns per 32-byte record against about 1 ns for a page already
 * resident). The pool does it ahead of demand (pool_fill), off the event
 * path, in steps of TB_POPULATE_STEP: populating holds the process's
 * mmap lock, and a single MAP_POPULATE of a whole chunk held it for
 * 0.3-3 ms, during which the program's own brk/mmap (malloc growing its
 * heap) waited in the kernel (rbtree, 1 thread, all: the worker spent half
 * its wall time blocked there). */
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

static struct tb_chunk *chunk_alloc(size_t cap, int truth)
{
    size_t bytes = sizeof(struct tb_chunk) + cap * sizeof(struct tf_slot);
    size_t total = bytes + (truth ? cap * sizeof(uint64_t) : 0);
    void *p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    if (chunk_populate(p, total) != 0) {
        munmap(p, total);
        return NULL;
    }
    struct tb_chunk *c = p;
    memset(c, 0, sizeof *c);
    c->mapped = total;
    c->cap = cap;
    c->truth = truth ? (uint64_t *)((char *)c + bytes) : NULL;
    return c;
}

/* A chunk outside the pool for `cap` slots, from malloc, for a leaving
 * thread's last records (tb_send_copy): they are few, and unmapping, in a
 * process with threads running on other CPUs, stops every one of them for
 * a TLB shootdown. Its bytes count toward TMTRACE_MEMORY until
 * tb_chunk_release (`charged`); NULL when they do not fit or without
 * memory. Zeroed header, `mapped` 0. */
static struct tb_chunk *chunk_alloc_loose(size_t cap, int truth)
{
    size_t bytes = sizeof(struct tb_chunk) + cap * sizeof(struct tf_slot);
    int64_t total = (int64_t)(bytes + (truth ? cap * sizeof(uint64_t) : 0));
    if (__atomic_add_fetch(&pool_bytes, total, __ATOMIC_RELAXED) > pool_limit) {
        __atomic_fetch_sub(&pool_bytes, total, __ATOMIC_RELAXED);
        return NULL;
    }
    struct tb_chunk *c = calloc(1, (size_t)total);
    if (c == NULL) {
        __atomic_fetch_sub(&pool_bytes, total, __ATOMIC_RELAXED);
        return NULL;
    }
    c->cap = cap;
    c->truth = truth ? (uint64_t *)((char *)c + bytes) : NULL;
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

/* A copy outside the pool of the first `n` slots of `src` (owned by a
 * thread that may be running on, hence the atomic loads), its samples and
 * truth column, with `seq` as its first record's index; NULL without
 * memory (or, `loose`, room in TMTRACE_MEMORY). From malloc when `loose`,
 * else mapped: a fatal signal's snapshot must not take malloc's locks,
 * which the thread it stopped may hold. The copy's `n` is left 0 (not
 * handed over) for the caller to set. */
static struct tb_chunk *chunk_copy(const struct tb_chunk *src, size_t n, uint64_t seq, int loose)
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

/* Puts a chunk on the free list (pool_lock held). */
static void pool_push(struct tb_chunk *c)
{
    c->next = pool_free;
    pool_free = c;
    __atomic_store_n(&pool_nfree, pool_nfree + 1, __ATOMIC_RELAXED);
}

static size_t pool_ahead(void);

/* Maps populated chunks until `want` are ahead of demand (pool_ahead) or the next would pass
 * TMTRACE_MEMORY. Runs at init, at attach and on the writer thread: never
 * on the event path. Returns the number of chunks added. */
static int pool_halt; /* atomic: a fatal signal's flush needs the writer now */

void tb_refill_halt(void) { __atomic_store_n(&pool_halt, 1, __ATOMIC_RELEASE); }

/* Adds at most what the reserve lacked on entry: threads that take chunks
 * as fast as they are mapped must not keep the writer here, away from the
 * chunks it has to write (and from a signal's flush, which stops it). */
static size_t pool_fill(size_t want)
{
    size_t added = 0, ahead = pool_ahead();
    size_t need = want > ahead ? want - ahead : 0;
    int64_t one = (int64_t)chunk_bytes();
    while (added < need && pool_ahead() < want && !__atomic_load_n(&pool_halt, __ATOMIC_ACQUIRE)) {
        if (__atomic_add_fetch(&pool_bytes, one, __ATOMIC_RELAXED) > pool_limit) {
            __atomic_fetch_sub(&pool_bytes, one, __ATOMIC_RELAXED);
            break;
        }
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

/* Free chunks the pool keeps ahead of demand, so that a thread that hands
 * a chunk over finds the next one mapped and populated while the writer
 * still works on the last ones. The reserve adapts to the recording rate:
 * at least TB_RESERVE per attached thread, and at each writer pass twice
 * the chunks taken since the previous pass (what the threads consumed
 * while the writer was away), so at a steady rate the threads never map a
 * chunk themselves; a chunk a thread still had to map doubles it, up to the
 * chunks taken so far (so it stays within what the run uses). It never shrinks during a run (the chunks it asked for
 * stay mapped anyway) and never exceeds an eighth of TMTRACE_MEMORY. In
 * stream mode chunks queued for the writer count toward it (each returns
 * to the free list once written): the writer then maps only what the
 * threads hold beyond the chunks in circulation, and spends its time on
 * the backlog that recycles them rather than on mapping more. */
#define TB_RESERVE 4
/* TMTRACE_PREFAULT=0 below TMTRACE_EVENTS=all: the arena mapped at init,
 * in stream mode also the room the writer defers into while the program
 * uses every CPU (TMTRACE_WRITER_DEFER); 20-200 ms at tmt_init here. */
#define TB_PREFAULT_MEMORY ((int64_t)64 << 20)
/* TMTRACE_PREFAULT=0 at TMTRACE_EVENTS=all, either mode (at most
 * TMTRACE_MEMORY/4). Recording every access fills memory at 1-5 GB/s per
 * thread (STAMP vacation: 600 MB in 0.12 s at 2 threads), faster than any
 * writer encodes; what is not populated before the run is populated during
 * it, at 0.3-3 ms per MiB on this VM, which is as much CPU time as the
 * program's own work. 256 MiB mapped at init took STAMP's all/off at 2
 * threads from 2.0-3.5x to 1.0-2.1x (genome 2.79x -> 1.34x, yada 2.00x ->
 * 1.30x), for 80-800 ms at tmt_init and that much resident memory. */
#define TB_PREFAULT_ALL ((int64_t)256 << 20)

/* The bytes tmt_init maps when TMTRACE_PREFAULT is 0 (automatic). */
static int64_t pool_prefault_auto(void)
{
    int64_t want = config.events == CONFIG_EVENTS_ALL ? TB_PREFAULT_ALL : TB_PREFAULT_MEMORY;
    return want < pool_limit / 4 ? want : pool_limit / 4;
}
static size_t pool_threads;  /* atomic: threads attached */
static size_t pool_reserve;  /* atomic: the adaptive part of the reserve, in chunks */
static uint64_t pool_taken;  /* atomic: chunks handed to recording threads */
static uint64_t pool_mark;   /* pool_taken at the writer's previous pass (writer only) */

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

void tb_refill_pass(void)
{
    uint64_t taken = __atomic_load_n(&pool_taken, __ATOMIC_RELAXED);
    /* Below the mark when chunks taken before it came straight back. */
    pool_reserve_raise(taken > pool_mark ? (size_t)(2 * (taken - pool_mark)) : 0);
    pool_mark = taken;
    tb_refill();
}

void tb_refill(void)
{
    if (__atomic_load_n(&tb_open, __ATOMIC_ACQUIRE))
        pool_fill(pool_want());
}

static size_t pool_ahead(void) { return __atomic_load_n(&pool_nfree, __ATOMIC_RELAXED); }

int tb_pool_low(void) { return pool_ahead() < pool_want(); }

static int64_t pool_at_init; /* bytes tb_setup populated */

int tb_pool_can_grow(uint64_t beyond_init)
{
    int64_t after = __atomic_load_n(&pool_bytes, __ATOMIC_RELAXED) + (int64_t)chunk_bytes();
    int64_t budget = pool_at_init + (int64_t)(beyond_init < (uint64_t)pool_limit ? beyond_init : (uint64_t)pool_limit);
    return after <= pool_limit && after <= budget;
}

size_t tb_threads_attached(void) { return __atomic_load_n(&pool_threads, __ATOMIC_RELAXED); }

/* The most pool_bytes held before it last fell: it falls when a leaving
 * thread's copy is written (tb_chunk_release) and at teardown, so that
 * tmt_stats reports the most of the run, after shutdown too. */
static uint64_t pool_bytes_last; /* atomic */

static void pool_bytes_keep_peak(void)
{
    uint64_t now = (uint64_t)__atomic_load_n(&pool_bytes, __ATOMIC_RELAXED);
    uint64_t last = __atomic_load_n(&pool_bytes_last, __ATOMIC_RELAXED);
    while (now > last &&
           !__atomic_compare_exchange_n(&pool_bytes_last, &last, now, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

uint64_t tb_pool_bytes(void)
{
    uint64_t now = (uint64_t)__atomic_load_n(&pool_bytes, __ATOMIC_RELAXED);
    uint64_t last = __atomic_load_n(&pool_bytes_last, __ATOMIC_RELAXED);
    return now > last ? now : last;
}
uint64_t tb_inline_growths(void) { return __atomic_load_n(&pool_inline, __ATOMIC_RELAXED); }

/* A free chunk, or NULL when none is free and another would pass the limit. */
static struct tb_chunk *pool_get(void)
{
    if (!__atomic_load_n(&tb_open, __ATOMIC_ACQUIRE))
        return NULL;
    /* Cheap refusal while dropping, so a thread that is out of memory does
     * not hammer the lock on every event. */
    if (__atomic_load_n(&pool_nfree, __ATOMIC_RELAXED) == 0 &&
        __atomic_load_n(&pool_bytes, __ATOMIC_RELAXED) + (int64_t)chunk_bytes() > pool_limit)
        return NULL;
    struct tb_chunk *c = NULL;
    int grow = 0;
    pthread_mutex_lock(&pool_lock);
    if (pool_free != NULL) {
        c = pool_free;
        pool_free = c->next;
        __atomic_store_n(&pool_nfree, pool_nfree - 1, __ATOMIC_RELAXED);
    } else if (__atomic_load_n(&pool_bytes, __ATOMIC_RELAXED) + (int64_t)chunk_bytes() <= pool_limit) {
        /* Reserve the bytes now, allocate outside the lock. */
        __atomic_fetch_add(&pool_bytes, (int64_t)chunk_bytes(), __ATOMIC_RELAXED);
        grow = 1;
    }
    pthread_mutex_unlock(&pool_lock);
    if (grow) {
        /* The reserve ran dry (the writer could not refill it in time):
         * the recording thread maps the chunk itself, and it is counted. */
        c = chunk_alloc(chunk_cap, pool_truth);
        if (c == NULL) {
            __atomic_fetch_sub(&pool_bytes, (int64_t)chunk_bytes(), __ATOMIC_RELAXED);
        } else {
            c->pooled = 1;
            __atomic_fetch_add(&pool_inline, 1, __ATOMIC_RELAXED);
            /* Behind the rate: double the reserve now rather than at the
             * writer's next pass, but never past the chunks taken so far. */
            size_t taken = (size_t)__atomic_load_n(&pool_taken, __ATOMIC_RELAXED);
            size_t twice = 2 * pool_want();
            pool_reserve_raise(twice < taken ? twice : taken);
        }
    }
    if (c != NULL) {
        __atomic_fetch_add(&pool_taken, 1, __ATOMIC_RELAXED);
        c->next = NULL;
        __atomic_store_n(&c->n, 0, __ATOMIC_RELAXED); /* a snapshot may look at it */
        __atomic_store_n(&c->nsamples, 0, __ATOMIC_RELAXED); /* a snapshot may look at it */
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

/* ---- the thread table --------------------------------------------------- */

struct tb_reg {
    struct tb_thread *live;   /* NULL once detached */
    uint32_t os_tid;
    uint64_t dropped;         /* final count once detached */
    int announced;
    const struct tf_slot *seen_cur; /* live->cur at the last tb_threads_active() */
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
/* Raised stamps of detached threads; live threads' are summed on demand. */
static uint64_t raised_exited; /* guarded by reg_lock */
static struct tb_reg *reg;      /* index = thread id - 1 */
static size_t nreg, capreg;

static int reg_add(struct tb_thread *t)
{
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
    reg[nreg] = (struct tb_reg){ .live = t, .os_tid = t->os_tid };
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
    }
    pthread_mutex_unlock(&reg_lock);
}

static void reg_info(const struct tb_reg *r, uint32_t id, struct tf_thread_info *out)
{
    out->id = id;
    out->os_tid = r->os_tid;
    out->events = 0;
    out->dropped = r->live ? __atomic_load_n(&r->live->dropped, __ATOMIC_RELAXED) : r->dropped;
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
uint64_t tb_total_dropped(void) { return __atomic_load_n(&total_dropped, __ATOMIC_RELAXED); }

/* ---- hand-over ---------------------------------------------------------- */

/* The order of the stores matters to tb_snapshot_all running in a signal
 * handler on this thread: t->chunk changes last, so a snapshot sees either
 * the old chunk (already marked handed over) or the new one complete. */
static void set_chunk(struct tb_thread *t, struct tb_chunk *c)
{
    if (c == NULL) {
        __atomic_store_n(&t->chunk, NULL, __ATOMIC_RELEASE);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        __atomic_store_n(&t->cur, NULL, __ATOMIC_RELAXED); /* a snapshot on another thread loads it */
        t->base = t->end = NULL;
        tb_set_compact(t, 0);
        t->truth = NULL;
        return;
    }
    __atomic_store_n(&c->thread, t->thread_id, __ATOMIC_RELAXED);
    __atomic_store_n(&c->seq, t->seq, __ATOMIC_RELAXED);
    __atomic_store_n(&c->first_instance, t->instance, __ATOMIC_RELAXED);
    t->base = c->slots;
    __atomic_store_n(&t->cur, c->slots, __ATOMIC_RELAXED);
    t->end = c->slots + c->cap - 1; /* a full record needs two slots */
    t->truth = c->truth;
    t->fulls = 0;
    tb_set_compact(t, 0); /* the chunk's first record is a full one */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&t->chunk, c, __ATOMIC_RELEASE);
}

/* Marks the thread's chunk `c` (its first `n` slots filled) handed over
 * and offers `sent` to the writer: `c` itself, or a copy of its records
 * (tb_send_copy). 0 when the writer took it; -1 when the trace is closed
 * (exit or a signal raced with this thread): the records cannot be written
 * any more, and those a shutdown snapshot did not already copy into the
 * trace count as dropped. */
static int offer_records(struct tb_thread *t, struct tb_chunk *c, struct tb_chunk *sent, size_t n)
{
    size_t records = n - t->fulls; /* a full record takes two slots */
    __atomic_store_n(&c->n, n, __ATOMIC_RELAXED); /* a snapshot skips it from here */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->seq += records;
    if (!__atomic_load_n(&tb_open, __ATOMIC_ACQUIRE) || tw_offer(sent) != 0) {
        size_t copied = __atomic_load_n(&c->copied, __ATOMIC_ACQUIRE);
        size_t lost = n > copied ? tf_slots_records(c->slots + copied, n - copied) : 0;
        __atomic_fetch_add(&total_dropped, lost, __ATOMIC_RELAXED);
        __atomic_store_n(&t->dropped, t->dropped + lost, __ATOMIC_RELAXED);
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
             * queue refused it, hand-over is closed, so pool_get below
             * gives nothing and the thread drops from here on. */
            set_chunk(t, refill ? pool_get() : NULL);
            chunk_retire(c);
            return t->chunk != NULL;
        }
    }
    set_chunk(t, refill ? pool_get() : NULL);
    return t->chunk != NULL;
}

__attribute__((noinline, cold)) static struct tf_slot *tb_untraced(struct tb_thread *t)
{
    static int said;
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_ACQ_REL))
        fprintf(stderr, "libtmtrace: process %ld is a fork of a traced process and records nothing "
                        "(TMTRACE_FILE=%s has no %%p for a trace of its own)\n", (long)getpid(), config.file);
    t->level = CONFIG_EVENTS_OFF;
    return NULL;
}

struct tf_slot *tb_chunk_full(struct tb_thread *t)
{
    if (TB_UNLIKELY(tb_untraced_child))
        return tb_untraced(t);
    if (t->chunk != NULL || __atomic_load_n(&pool_nfree, __ATOMIC_RELAXED) != 0 ||
        __atomic_load_n(&pool_bytes, __ATOMIC_RELAXED) + (int64_t)chunk_bytes() <= pool_limit) {
        if (hand_over(t, 1))
            return t->cur;
    }
    /* Dropped events still take their place in program order, so the
     * tools see where the gap is. */
    t->seq++;
    __atomic_store_n(&t->dropped, t->dropped + 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&total_dropped, 1, __ATOMIC_RELAXED);
    return NULL;
}

void tb_flush(struct tb_thread *t)
{
    if (t->level != CONFIG_EVENTS_OFF && t->chunk != NULL)
        hand_over(t, 1);
}

/* ---- the access records tb_access does not take inline ---------------- */

/* A read or write record stamped `tsc` (as read, unordered) on `aux`, in
 * slot `s`: compact when `fits` and the stamp is on the previous record's
 * CPU within TF_ACCESS_STEP_MAX ticks of it, else full. */
static void emit_access_at(struct tb_thread *t, struct tf_slot *s, int fits, unsigned kind, unsigned size,
                           uint64_t addr, uint64_t value, uint64_t tsc, uint32_t aux)
{
    uint32_t prev_aux = t->last_aux;
    uint64_t prev = t->last_tsc;
    tsc = tb_stamp_keep(t, tsc, aux);
    if (TB_LIKELY(fits && aux == prev_aux && tsc - prev <= TF_ACCESS_STEP_MAX)) {
        t->last_tsc = tsc;
        tb_fill_access(t, s, kind, size, tsc - prev, addr, value);
    } else {
        tb_emit_at(t, s, tsc, aux, prev_aux, kind, size, addr, value);
    }
}

/* A read or write record, every case: an unordered stamp of its own, or
 * with TMTRACE_STAMP=boundary the stamp and CPU of the thread's previous
 * stamped record (no clock read at all). Compact (one slot) when it fits:
 * same CPU as the previous record, a step of at most TF_ACCESS_STEP_MAX
 * ticks. tb_access (trace_buffer.h) takes the common cases inline. */
static void emit_access(struct tb_thread *t, unsigned kind, unsigned size, uint64_t addr, uint64_t value)
{
    struct tf_slot *s = tb_slot(t);
    if (TB_UNLIKELY(s == NULL))
        return;
    int fits = t->compact && tf_access_fits(addr, size);
    if (TB_LIKELY(t->stamp_each)) {
        uint32_t aux;
        uint64_t tsc = tb_clock(t, 0, &aux);
        emit_access_at(t, s, fits, kind, size, addr, value, tsc, aux);
        return;
    }
    if (TB_LIKELY(fits)) {
        tb_fill_access(t, s, kind, size, 0, addr, value);
        return;
    }
    struct tf_record *r = (struct tf_record *)(void *)s;
    r->tsc = t->last_tsc;
    r->aux = t->last_aux;
    if (TB_UNLIKELY(t->injecting))
        t->truth[s - t->base] = t->last_raw;
    tb_fill(t, s, kind, size, addr, value);
}

uint64_t tb_access_slow(struct tb_thread *t, unsigned kind, unsigned size, uint64_t addr, uint64_t value)
{
    emit_access(t, kind, size, addr, value);
    return value;
}

uint64_t tb_access_late(struct tb_thread *t, unsigned kind, unsigned size, uint64_t addr, uint64_t value,
                        uint64_t tsc, uint32_t aux)
{
    emit_access_at(t, t->cur, 1, kind, size, addr, value, tsc, aux);
    return value;
}

/* ---- the START and COMMIT records tb_boundary does not take inline ----- */

/* A START's periodic work once its stamp `tsc` (0: dropped) was taken. */
static void boundary_done(struct tb_thread *t, unsigned kind, uint64_t tsc)
{
    if (kind == TF_EV_START && tsc >= t->tick_tsc)
        tb_tick(t, tsc);
}

void tb_boundary_slow(struct tb_thread *t, unsigned kind, uint64_t head, int fits, uint64_t addr, uint64_t value)
{
    boundary_done(t, kind, tb_emit_as(t, 0, kind, 0, head, fits, addr, value));
}

void tb_boundary_late(struct tb_thread *t, unsigned kind, uint64_t head, uint64_t addr, uint64_t value, uint64_t tsc,
                      uint32_t aux)
{
    boundary_done(t, kind, tb_emit_as_at(t, t->cur, kind, 0, head, 1, addr, value, tsc, aux));
}

/* ---- raised stamps, ticks (in-run samples, migrations) ------------------ */

void tb_raised(struct tb_thread *t) { __atomic_store_n(&t->raised, t->raised + 1, __ATOMIC_RELAXED); }

/* An injected clock whose drift is negative runs slower than the TSC, so
 * now and then it maps two true stamps a tick apart (unordered stamps can be
 * that close) to one tick. A real TSC never stands still: the injected stamp
 * keeps tb_stamp_keep's promise (a thread's stamps on one CPU strictly increase)
 * by becoming the previous one + 1, an error of one tick. Not counted as
 * raised: it is the injection's rounding, not the CPU's reordering. */
uint64_t tb_inject(struct tb_thread *t, uint64_t truth, uint32_t aux, uint32_t prev_aux)
{
    uint64_t tsc = skew_stamp(truth, aux);
    if (aux == prev_aux && tsc - t->last_tsc - 1 >= UINT64_MAX - TB_RAISE_MAX)
        tsc = t->last_tsc + 1;
    return tsc;
}

uint64_t tb_total_raised(void)
{
    pthread_mutex_lock(&reg_lock);
    uint64_t n = raised_exited;
    for (size_t i = 0; i < nreg; i++)
        if (reg[i].live)
            n += __atomic_load_n(&reg[i].live->raised, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&reg_lock);
    return n;
}

/* The in-run clock sample joins the thread's chunk. */
static void take_sample(struct tb_thread *t)
{
    struct tf_sample s;
    if (!cs_inrun(config.clock, t->thread_id, &s))
        return;
    if (t->chunk != NULL && t->chunk->nsamples == TB_CHUNK_SAMPLES)
        hand_over(t, 1);
    struct tb_chunk *c = t->chunk;
    if (c != NULL) {
        /* Filled, then counted: a snapshot on another thread copies only
         * the samples it counted. */
        uint32_t k = c->nsamples;
        c->samples[k] = s;
        __atomic_store_n(&c->nsamples, k + 1, __ATOMIC_RELEASE);
    }
}

void tb_tick(struct tb_thread *t, uint64_t tsc)
{
    if (t->tick_period && tsc >= t->next_sample_tsc) {
        take_sample(t);
        t->next_sample_tsc = tsc + t->tick_period;
    }
    if (t->migrate_period && tsc >= t->next_migrate_tsc) {
        skew_migrate();
        t->next_migrate_tsc = tsc + t->migrate_period;
    }
    uint64_t a = t->tick_period ? t->next_sample_tsc : UINT64_MAX;
    uint64_t b = t->migrate_period ? t->next_migrate_tsc : UINT64_MAX;
    t->tick_tsc = a < b ? a : b;
}

/* ---- life cycle ----------------------------------------------------------- */

int tb_setup(uint64_t tsc_hz, const int *cpus, int ncpus)
{
    chunk_cap = (size_t)config.buffer_bytes / sizeof(struct tf_slot);
    pool_truth = skew_active();
    pool_limit = config.memory_bytes;
    pool_bytes = 0;
    __atomic_store_n(&pool_bytes_last, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&pool_inline, 0, __ATOMIC_RELAXED);
    pool_free = NULL;
    pool_nfree = 0;
    tb_untraced_child = 0;
    tb_hz = tsc_hz;
    tb_fast = clock_has_rdpid();
    tb_ncpus = ncpus < CPU_SETSIZE ? ncpus : CPU_SETSIZE;
    skew_migrate_cpus(cpus, tb_ncpus);
    /* The arena recording starts in, populated before the first event. */
    int64_t prefault = config.prefault_bytes;
    if (prefault == 0)
        prefault = pool_prefault_auto();
    __atomic_store_n(&pool_halt, 0, __ATOMIC_RELEASE);
    pool_fill((size_t)(prefault / (int64_t)chunk_bytes()));
    pool_at_init = __atomic_load_n(&pool_bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&tb_open, 1, __ATOMIC_RELEASE);
    return 0;
}

void tb_close(void) { __atomic_store_n(&tb_open, 0, __ATOMIC_RELEASE); }

void tb_teardown(void)
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
    pthread_mutex_lock(&reg_lock);
    int live = 0;
    for (size_t i = 0; i < nreg; i++)
        live |= reg[i].live != NULL;
    if (!live) {
        free(reg);
        reg = NULL;
        nreg = capreg = 0;
    }
    pthread_mutex_unlock(&reg_lock);
}

/* fork(): the child gets the pool and the thread table unlocked and
 * consistent, whatever other threads were doing at the fork. */
void tb_fork_prepare(void)
{
    pthread_mutex_lock(&reg_lock);
    pthread_mutex_lock(&pool_lock);
}

void tb_fork_release(void)
{
    pthread_mutex_unlock(&pool_lock);
    pthread_mutex_unlock(&reg_lock);
}

void tb_fork_child(void)
{
    tb_fork_release();
    int was_open = __atomic_load_n(&tb_open, __ATOMIC_ACQUIRE);
    tb_close();
    free(reg);
    reg = NULL;
    nreg = capreg = 0;
    pool_free = NULL;
    pool_nfree = 0;
    __atomic_store_n(&pool_bytes, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&retired, NULL, __ATOMIC_RELAXED);
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

void tb_snapshot_all(void (*emit)(struct tb_chunk *c))
{
    struct tb_chunk *copies = NULL, **tail = &copies;
    pthread_mutex_lock(&reg_lock);
    for (size_t i = 0; i < nreg; i++) {
        struct tb_thread *t = reg[i].live;
        struct tb_chunk *src = t ? __atomic_load_n(&t->chunk, __ATOMIC_ACQUIRE) : NULL;
        if (src == NULL || __atomic_load_n(&src->n, __ATOMIC_ACQUIRE) != 0)
            continue; /* none, or already on its way to the writer */
        struct tf_slot *cur = __atomic_load_n(&t->cur, __ATOMIC_ACQUIRE);
        /* The thread runs on: if it changed chunks between the two loads,
         * `cur` points into another chunk. */
        if (__atomic_load_n(&t->chunk, __ATOMIC_ACQUIRE) != src)
            continue;
        /* A thread stopped by the signal inside hand_over still points at
         * the chunk it just queued; the writer may have written and
         * recycled it since (pool_get clears its count), and another
         * thread may be filling it now. Only a chunk that still names this
         * thread is its own. */
        if (__atomic_load_n(&src->thread, __ATOMIC_RELAXED) != t->thread_id)
            continue;
        uint64_t seq = __atomic_load_n(&src->seq, __ATOMIC_RELAXED);
        size_t n = (size_t)((uintptr_t)cur - (uintptr_t)src->slots) / sizeof *cur;
        if (cur < src->slots || n > src->cap)
            continue;
        struct tb_chunk *c = chunk_copy(src, n, seq, 0);
        if (c == NULL)
            continue;
        c->thread = t->thread_id;
        c->n = n;
        /* Handed over (or recycled) while we copied: the original is
         * written or counted as dropped by its owner; a copy would repeat
         * its records. */
        if (__atomic_load_n(&src->n, __ATOMIC_ACQUIRE) != 0 || __atomic_load_n(&t->chunk, __ATOMIC_ACQUIRE) != src ||
            __atomic_load_n(&src->seq, __ATOMIC_RELAXED) != seq ||
            __atomic_load_n(&src->thread, __ATOMIC_RELAXED) != t->thread_id) {
            chunk_free(c);
            continue;
        }
        /* The owner hands this chunk over later (or never): the records
         * copied here are in the trace, not lost. */
        __atomic_store_n(&src->copied, n, __ATOMIC_RELEASE);
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

/* One calibration run: `n` read records through the real inline path into
 * a scratch buffer of 2n slots, in ns per record. */
static double tb_cost_run(struct tf_slot *buf, size_t n)
{
    struct tb_thread t;
    memset(&t, 0, sizeof t);
    t.base = t.cur = buf;
    t.end = buf + 2 * n - 1;
    t.level = CONFIG_EVENTS_ALL;
    t.stamp_each = config.stamp == CONFIG_STAMP_EACH;
    t.fast_stamp = (uint8_t)tb_fast;
    tb_set_compact(&t, 1); /* the common record: compact, as after a START */
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (size_t i = 0; i < n; i++)
        tb_ev_read(&t, &buf[i], i, 8);
    clock_gettime(CLOCK_MONOTONIC, &b);
    return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n;
}

static int tb_cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double tb_event_cost_ns(void)
{
    enum { N = 2048, RUNS = 7 };
    struct tf_slot *buf = malloc(2 * N * sizeof *buf);
    if (buf == NULL)
        return 0;
    double r[RUNS];
    for (int i = 0; i < RUNS; i++)
        r[i] = tb_cost_run(buf, N);
    free(buf);
    qsort(r, RUNS, sizeof r[0], tb_cmp_double);
    return r[RUNS / 2];
}

int tb_attach(struct tb_thread *t)
{
    memset(t, 0, sizeof *t);
    t->level = CONFIG_EVENTS_OFF;
    t->tick_tsc = UINT64_MAX;
    if (TB_UNLIKELY(tb_untraced_child) && config.events != CONFIG_EVENTS_OFF) {
        t->level = (uint8_t)config.events; /* no buffer: the first event says why */
        return 0;
    }
    if (!__atomic_load_n(&tb_open, __ATOMIC_ACQUIRE) || config.events == CONFIG_EVENTS_OFF)
        return 0;
    t->os_tid = (uint32_t)syscall(SYS_gettid);
    if (reg_add(t) != 0)
        return -1;
    t->injecting = (uint8_t)pool_truth;
    t->stamp_each = config.stamp == CONFIG_STAMP_EACH;
    t->fast_stamp = (uint8_t)tb_fast;
    uint32_t aux;
    uint64_t now = clock_rdtscp(&aux);
    t->tick_period = (uint64_t)config.resample_ms * (tb_hz / 1000);
    t->migrate_period = (uint64_t)config.migrate_ms * (tb_hz / 1000);
    t->next_sample_tsc = now;  /* first START takes a sample at once */
    t->next_migrate_tsc = now + t->migrate_period;
    t->tick_tsc = (t->tick_period || t->migrate_period) ? now : UINT64_MAX;
    __atomic_fetch_add(&pool_threads, 1, __ATOMIC_RELAXED);
    pool_fill(pool_want());
    set_chunk(t, pool_get());
    t->level = (uint8_t)config.events;
    return 0;
}

/* A leaving thread's chunk holds at most this part of its room: its records
 * go to the writer in a copy of their size (tb_send_copy). */
#define TB_FIT_PART 32

/* Hands a leaving thread's barely used chunk over as a copy of its records
 * (charged to TMTRACE_MEMORY until written), so that the chunk itself can
 * go straight back to the pool; returns 0 when the chunk is to be handed
 * over itself. Handed over itself, it would return only once written, in
 * memory mode at exit: threads that each enter, run a transaction and
 * leave took a whole chunk each (1 MiB by default), and the reserve, which
 * follows the chunks taken, had the writer and the entering threads map
 * and populate chunks at that rate (2000 such threads: 48-65 us a round
 * and 185-267 MiB of buffers in stream mode, 827-1014 us and 2 GiB in
 * memory mode, for 4000 records; docs/tracer.md). The thread never points
 * at the copy: the writer frees it once written, and a shutdown or signal
 * snapshot, which follows the thread's pointer, must not find it then. */
static int tb_send_copy(struct tb_thread *t)
{
    struct tb_chunk *c = t->chunk;
    size_t n = (size_t)(t->cur - t->base);
    if (!c->pooled || n > c->cap / TB_FIT_PART || !__atomic_load_n(&tb_open, __ATOMIC_ACQUIRE))
        return 0;
    struct tb_chunk *s = chunk_copy(c, n, c->seq, 1);
    if (s == NULL)
        return 0; /* over TMTRACE_MEMORY or out of memory: the chunk goes itself */
    s->n = n;
    if (offer_records(t, c, s, n) != 0)
        tb_chunk_release(s); /* never queued: nobody else has seen it */
    /* Not a chunk consumed: the reserve does not follow it. */
    __atomic_fetch_sub(&pool_taken, 1, __ATOMIC_RELAXED);
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
         * taken, grew with every thread that came and went (a thread
         * entering, running one transaction and exiting, 2000 times: the
         * pool reached 180-340 MiB for 4000 records). */
        if ((t->cur != t->base || c->nsamples != 0) && !tb_send_copy(t))
            hand_over(t, 0);
        struct tb_chunk *last = t->chunk;
        set_chunk(t, NULL);
        if (last != NULL) {
            if (__atomic_load_n(&tb_open, __ATOMIC_ACQUIRE))
                tb_chunk_release(last);
            else
                chunk_retire(last); /* a snapshot may be reading it */
        }
    }
    t->level = CONFIG_EVENTS_OFF;
    t->tick_tsc = UINT64_MAX;
    __atomic_fetch_sub(&pool_threads, 1, __ATOMIC_RELAXED);
    reg_remove(t);
    t->thread_id = 0;
}
