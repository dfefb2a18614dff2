/*
 * trace_writer.c - the writer thread and the queue of full chunks (see
 * trace_writer.h).
 *
 * Owns: the queue, the writer thread, where it runs, when it defers, and
 * its counts; the refill thread, which keeps the pool's reserve populated
 * at the program's priority while the writer encodes at its own; and the
 * share of a CPU each of the two keeps to while every CPU is busy. The
 * queue is a lock-free LIFO list: producers push with one CAS, the writer
 * takes the whole list with one exchange and reverses it, so each
 * thread's chunks are written in the order they were handed over.
 *
 * Never: prints during the run (its failures are counted and the tracer
 * reports them once at exit and in the END chunk), or maps, recycles or
 * sizes chunks itself: what it needs of the pool it asks through
 * tb_pool_service, whose advice it follows. It calls down only (the pool,
 * the thread table's announcements and activity, the format's writer); the
 * threads reach it through the `offer` tracer.c registers with tb_setup,
 * never by name, so no call cycle runs through it.
 */
#include "trace_writer.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "error.h"
#include "site.h"
#include "tb_pool.h"
#include "tb_threads.h"

static struct tf_writer *tw_file;
static int tw_mode;
static int tw_codec, tw_level;
static void (*tw_on_signal)(void);

static struct tb_chunk *tw_queue;   /* atomic */
static uint64_t tw_queued;          /* atomic: bytes held by the chunks offered and not yet taken */
static sem_t tw_wake;
static pthread_t tw_tid;
static int tw_running;
static int tw_stop_req;             /* atomic */
static int tw_sig_req;              /* atomic */
static int tw_sig_done;             /* atomic */
/* Held by the writer while it writes (it allocates, compresses, takes the
 * pool's and the thread table's locks) and by a thread that forks: the
 * child then never inherits a writer stopped half-way through malloc. */
static pthread_mutex_t tw_busy = PTHREAD_MUTEX_INITIALIZER;
static int tw_forking; /* atomic: threads waiting in fork() for tw_busy */

/* The writer holds tw_busy for one chunk at a time and steps aside while a
 * fork waits, so fork() waits for one write, never a whole backlog (an
 * unfair mutex would hand it straight back to the writer). */
static void tw_busy_lock(void)
{
    while (__atomic_load_n(&tw_forking, __ATOMIC_ACQUIRE) != 0) {
        struct timespec ts = { 0, 50000 };
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&tw_busy);
}

/* Touched by the writer thread only while it runs, by the tracer after. */
static uint64_t *tw_written, *tw_lost_by;
static size_t tw_nthreads;
static uint64_t tw_nerrors, tw_nlost, tw_nwritten;  /* atomic for readers */
static int tw_failed;
static char tw_errmsg[256];
/* The writer's throughput figures for tmt_stats, read by any thread while
 * the writer runs. Kept by the writing thread only, so the recording
 * threads' event path never pays for them. */
static uint64_t tw_nrecords;  /* atomic: records written into the file */
static uint64_t tw_cpu;       /* atomic: writer thread's CPU time, ns */
static uint64_t tw_nbytes;    /* atomic: copy of the file's size; the tf_writer's own count is unsynchronised */

/* The refill thread: keeps the pool's reserve of populated chunks ahead of
 * the recording threads, apart from the writer. The writer runs at a lower
 * priority (TMTRACE_WRITER_NICE) and spends milliseconds on each chunk it
 * encodes; a reserve refilled only between its chunks fell behind on a
 * machine with no spare CPU, and the threads mapped their chunks
 * themselves (in the middle of a transaction, at a page fault per 4 KiB).
 * Mapping is the urgent part and, on memory the kernel has at hand, costs
 * about half of encoding the records it holds, so this thread runs at the
 * program's own priority and does nothing else: what it maps is what the
 * threads would otherwise map on their own CPUs. */
static pthread_t tw_refill_tid;
static int tw_refill_running;
static int tw_refill_stop;      /* atomic */
static int tw_refill_detach;    /* atomic: stopped by a signal's flush, never joined */
static sem_t tw_refill_wake;
static uint64_t tw_refill_cpu;  /* atomic: the refill thread's CPU time, ns */
/* How often the refill thread sizes the reserve from the chunks taken
 * since (TB_POOL_PASS), and wakes when nobody called it. */
#define TW_REFILL_PERIOD_NS 20000000u

static int tw_file_codec(int c)
{
    switch (c) {
    case CONFIG_CODEC_NONE: return TF_CODEC_NONE;
    case CONFIG_CODEC_ZLIB: return TF_CODEC_ZLIB;
    default:
#ifdef TMT_HAVE_LZ4
        return TF_CODEC_LZ4;
#else
        return TF_CODEC_ZLIB;
#endif
    }
}

static void tw_grow(uint32_t thread)
{
    if (thread < tw_nthreads)
        return;
    size_t n = tw_nthreads ? tw_nthreads : 64;
    while (n <= thread)
        n *= 2;
    uint64_t *a = realloc(tw_written, n * sizeof *a);
    if (a != NULL)
        tw_written = a;
    uint64_t *b = realloc(tw_lost_by, n * sizeof *b);
    if (b != NULL)
        tw_lost_by = b;
    if (a == NULL || b == NULL)
        return;
    memset(tw_written + tw_nthreads, 0, (n - tw_nthreads) * sizeof *a);
    memset(tw_lost_by + tw_nthreads, 0, (n - tw_nthreads) * sizeof *b);
    tw_nthreads = n;
}

/* ---- chunks counted written while their bytes are staged ----------------- */

/* TMTRACE_FILE_IO=direct: a chunk's records count as written once
 * tf_write_slots took them, but the file holds its bytes only once the
 * stage they went to is written out (tf_writer_durable). Should that write
 * fail, those chunks are lost with it: tw_unstage moves them from written
 * to lost, so that the loss reported and the END's counts say what the
 * file holds. One entry per such chunk, oldest first from tw_staged_head. */
struct tw_staged_chunk {
    uint64_t end; /* the file's size after its bytes */
    uint64_t records;
    uint32_t thread;
};
static struct tw_staged_chunk *tw_staged;
static size_t tw_staged_head, tw_staged_n, tw_staged_cap;

/* A chunk counted written did not reach the file: its records are lost. */
static void tw_unwrite(uint32_t thread, uint64_t records)
{
    if (thread < tw_nthreads) {
        tw_written[thread] -= records;
        tw_lost_by[thread] += records;
    }
    __atomic_fetch_sub(&tw_nwritten, 1, __ATOMIC_RELAXED);
    __atomic_fetch_sub(&tw_nrecords, records, __ATOMIC_RELAXED);
    __atomic_fetch_add(&tw_nlost, records, __ATOMIC_RELAXED);
}

/* Forgets the chunks the file now holds. */
static void tw_staged_prune(void)
{
    uint64_t durable = tf_writer_durable(tw_file);
    while (tw_staged_head < tw_staged_n && tw_staged[tw_staged_head].end <= durable)
        tw_staged_head++;
    if (tw_staged_head == tw_staged_n)
        tw_staged_head = tw_staged_n = 0;
}

/* Notes a chunk just counted written. Without memory to note it, the
 * stage is written out now instead (tf_flush: the rest of the file then
 * goes through the page cache). */
static void tw_staged_add(uint32_t thread, uint64_t records)
{
    tw_staged_prune();
    uint64_t end = tf_writer_bytes(tw_file);
    if (end <= tf_writer_durable(tw_file))
        return;
    if (tw_staged_n == tw_staged_cap && tw_staged_head > 0) {
        tw_staged_n -= tw_staged_head;
        memmove(tw_staged, tw_staged + tw_staged_head, tw_staged_n * sizeof *tw_staged);
        tw_staged_head = 0;
    }
    if (tw_staged_n == tw_staged_cap) {
        size_t cap = tw_staged_cap ? 2 * tw_staged_cap : 256;
        struct tw_staged_chunk *a = realloc(tw_staged, cap * sizeof *a);
        if (a == NULL) {
            if (tf_flush(tw_file) != 0) {
                tw_note_error(0, 0);
                tw_unwrite(thread, records);
            }
            return;
        }
        tw_staged = a;
        tw_staged_cap = cap;
    }
    tw_staged[tw_staged_n++] = (struct tw_staged_chunk){ end, records, thread };
}

/* After a failed write: the chunks whose bytes did not all reach the file
 * are lost, not written. */
static void tw_unstage(void)
{
    if (tw_file == NULL)
        return;
    uint64_t durable = tf_writer_durable(tw_file);
    for (size_t i = tw_staged_head; i < tw_staged_n; i++) {
        const struct tw_staged_chunk *e = &tw_staged[i];
        if (e->end > durable)
            tw_unwrite(e->thread, e->records);
    }
    tw_staged_head = tw_staged_n = 0;
}

void tw_file_done(void)
{
    if (tw_file == NULL)
        return;
    errno = 0;
    if (tf_flush(tw_file) != 0)
        tw_note_error(0, 0);
    tw_note_bytes();
    tw_staged_head = tw_staged_n = 0;
    tw_file = NULL;
}

/* ---- where the writer runs ------------------------------------------------ */

/* The writer runs at a lower priority than the program (TMTRACE_WRITER_NICE), on a CPU of the
 * affinity mask that no recording thread used lately where there is one
 * (TMTRACE_WRITER_CPU=-1), else anywhere in the mask; or pinned to the CPU
 * TMTRACE_WRITER_CPU names. "Used lately" = the CPU of the last record of
 * each chunk written since the last placement: the writer learns it from
 * the chunks themselves, so the recording threads pay nothing for it. */
static cpu_set_t tw_mask;   /* the process's affinity mask at init */
static cpu_set_t tw_seen;   /* CPUs of recording threads since the last placement */
static int tw_pinned = -2;  /* CPU the writer is pinned to, -1 = the whole mask, -2 = not placed */
static int tw_init_cpu;     /* CPU of the thread that initialised the tracer */

int tw_set_cpus(const int *cpus, int n)
{
    CPU_ZERO(&tw_mask);
    tw_init_cpu = sched_getcpu();
    tw_pinned = -2;
    for (int i = 0; i < n; i++)
        CPU_SET(cpus[i], &tw_mask);
    if (config.writer_cpu >= 0 && (config.writer_cpu >= CPU_SETSIZE || !CPU_ISSET(config.writer_cpu, &tw_mask)))
        return error_set("TMTRACE_WRITER_CPU=%d: not a CPU this process may run on", (int)config.writer_cpu);
    return 0;
}

static void tw_pin(int cpu)
{
    if (cpu == tw_pinned)
        return;
    cpu_set_t one;
    CPU_ZERO(&one);
    if (cpu >= 0)
        CPU_SET(cpu, &one);
    if (pthread_setaffinity_np(pthread_self(), sizeof one, cpu >= 0 ? &one : &tw_mask) == 0)
        tw_pinned = cpu;
}

/* The highest CPU of the mask outside `busy`, or -1. */
static int tw_free_cpu(const cpu_set_t *busy)
{
    for (int c = CPU_SETSIZE - 1; c >= 0; c--)
        if (CPU_ISSET(c, &tw_mask) && !CPU_ISSET(c, busy))
            return c;
    return -1;
}

static void tw_note_chunk_cpu(const struct tf_record *last)
{
    unsigned cpu = tf_aux_cpu(last->aux);
    if (cpu < CPU_SETSIZE)
        CPU_SET(cpu, &tw_seen);
}

/* At start: away from the CPU that initialises the tracer. After a drain:
 * away from the CPUs the written chunks came from. */
static void tw_place(int first)
{
    if (config.writer_cpu >= 0) {
        tw_pin((int)config.writer_cpu);
        return;
    }
    if (first) {
        CPU_ZERO(&tw_seen);
        if (tw_init_cpu >= 0 && tw_init_cpu < CPU_SETSIZE)
            CPU_SET(tw_init_cpu, &tw_seen);
    } else if (CPU_COUNT(&tw_seen) == 0) {
        return; /* nothing written: nothing learnt */
    }
    int keep = tw_pinned >= 0 && !CPU_ISSET(tw_pinned, &tw_seen);
    tw_pin(keep ? tw_pinned : tw_free_cpu(&tw_seen));
    CPU_ZERO(&tw_seen);
}

void tw_note_bytes(void)
{
    if (tw_file != NULL)
        __atomic_store_n(&tw_nbytes, tf_writer_bytes(tw_file), __ATOMIC_RELAXED);
}

/* The writer's own CPU time, read on the writer thread (the only thread
 * whose clock CLOCK_THREAD_CPUTIME_ID names). One system call per chunk
 * written, a fraction of a microsecond against the chunk's encoding. */
static void tw_note_thread_cpu(uint64_t *to)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
        __atomic_store_n(to, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec, __ATOMIC_RELAXED);
}

static void tw_note_cpu(void) { tw_note_thread_cpu(&tw_cpu); }

void tw_note_error(size_t records, uint32_t thread)
{
    tw_unstage();
    if (!tw_failed) {
        int e = errno;
        tw_failed = 1;
        snprintf(tw_errmsg, sizeof tw_errmsg, "%s", e ? strerror(e) : error_get());
    }
    __atomic_fetch_add(&tw_nerrors, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&tw_nlost, records, __ATOMIC_RELAXED);
    tw_grow(thread);
    if (thread < tw_nthreads)
        tw_lost_by[thread] += records;
}

/* Thread starts go before the first chunk of that thread. */
static void tw_announce(void)
{
    struct tf_thread_info info[64];
    size_t n;
    while ((n = tb_threads_new(info, 64)) > 0)
        if (!tw_failed && tf_write_threads(tw_file, info, n) != 0)
            tw_note_error(0, 0);
}

void tw_write_new_sites(void)
{
    uint32_t first;
    size_t n;
    static struct tf_site buf[64];
    while ((n = site_take_new(&first, 64)) > 0) {
        for (size_t i = 0; i < n; i++) {
            const tmt_site *s = site_get(first + (uint32_t)i);
            memset(&buf[i], 0, sizeof buf[i]);
            buf[i].id = first + (uint32_t)i;
            if (s != NULL) {
                buf[i].line = s->line;
                snprintf(buf[i].file, sizeof buf[i].file, "%s", s->file ? s->file : "");
                snprintf(buf[i].label, sizeof buf[i].label, "%s", s->label ? s->label : "");
            }
        }
        if (!tw_failed && tf_write_sites(tw_file, buf, n) != 0)
            tw_note_error(0, 0);
    }
}

static int tw_share_binds(void);
static uint64_t tw_defer_limit(void);

/* TMTRACE_CODEC=auto: the writer's CPU time per record of the chunks
 * written stored as encoded [0] and compressed [1], encoding and writing
 * included (relaxed atomics: a snapshot may write a chunk from another
 * thread), in 1/16 ns, smoothed over the last chunks (tw_auto_next); 0
 * before the first. One chunk in TW_AUTO_PROBE takes the codec that is not the
 * cheaper one, so that both figures follow the run: rarely, since the
 * trial of the dearer one is what it costs (one in 16 made 6 % of
 * vacation's records at `tx` compressed, about 0.7 ns an event). */
#define TW_AUTO_PROBE 64u
static uint64_t tw_auto_cost[2];
static unsigned tw_auto_count; /* atomic */

/* Whether TMTRACE_CODEC=auto compresses the `nth` chunk, given what the
 * two ways cost per record lately (0: not yet measured): the one that cost
 * the writer less CPU, each measured once first (stored as encoded, fewer
 * instructions, first), the other one chunk in TW_AUTO_PROBE. */
static int tw_auto_pick(uint64_t none, uint64_t packed, unsigned nth)
{
    int pack = none == 0 ? 0 : packed == 0 ? 1 : packed < none;
    return nth % TW_AUTO_PROBE == 0 ? !pack : pack;
}

#ifdef TMT_TEST_HOOKS
int tw_test_auto_pick(uint64_t none, uint64_t packed, unsigned nth) { return tw_auto_pick(none, packed, nth); }
#endif

/* The codec of the next EVENTS chunk. TMTRACE_CODEC=auto takes the choice
 * that cost the writer less CPU per record, whenever and wherever it
 * writes: compression was the largest part of the tracer's CPU, but each
 * byte it saves is a byte the kernel does not copy into the page cache,
 * which costs from a small to a large part of that depending on the
 * machine and on TMTRACE_FILE_IO (docs/tracer.md, "What the tracer's CPU
 * went to"). It once also compressed whenever a CPU was to spare, which
 * costs the program no time but is tracer CPU all the same: vacation at
 * `tx` compressed 29 % of its records so, and the writer's figure rose by
 * 2.5 ns an event. */
static int tw_chunk_codec(void)
{
    if (config.codec != CONFIG_CODEC_AUTO)
        return tw_codec;
    uint64_t none = __atomic_load_n(&tw_auto_cost[0], __ATOMIC_RELAXED);
    uint64_t packed = __atomic_load_n(&tw_auto_cost[1], __ATOMIC_RELAXED);
    unsigned nth = __atomic_add_fetch(&tw_auto_count, 1, __ATOMIC_RELAXED);
    return tw_auto_pick(none, packed, nth) ? tw_codec : TF_CODEC_NONE;
}

/* The next figure of a codec's cost per record, from the last one `was`
 * (0: none yet) and a chunk's `now`. It falls halfway to a cheaper chunk
 * at once but rises by a sixteenth of a dearer one: what inflates one
 * chunk's CPU time is mostly not the codec (the direct write that its
 * bytes happened to fill, the host taking the vCPU away), and the codec
 * not chosen is measured again only one chunk in TW_AUTO_PROBE, so a
 * figure raised by one such chunk could hold the dearer codec for up to
 * that many (docs/tracer.md, "Compression only where it is the
 * cheaper"). */
static uint64_t tw_auto_next(uint64_t was, uint64_t now)
{
    uint64_t next = was == 0 ? now : now < was ? (was + now) / 2 : was + (now - was) / 16;
    return next ? next : 1;
}

#ifdef TMT_TEST_HOOKS
uint64_t tw_test_auto_next(uint64_t was, uint64_t now) { return tw_auto_next(was, now); }
#endif

/* Folds a chunk's CPU time per record into tw_auto_cost. */
static void tw_auto_note(int codec, uint64_t cpu_ns, size_t records)
{
    if (records == 0)
        return;
    uint64_t *cost = &tw_auto_cost[codec != TF_CODEC_NONE];
    uint64_t now = cpu_ns * 16u / records, was = __atomic_load_n(cost, __ATOMIC_RELAXED);
    __atomic_store_n(cost, tw_auto_next(was, now), __ATOMIC_RELAXED);
}

/* Writes a chunk's records, encoded straight from its slots; *records gets
 * how many it holds (written or not). 0 or -1 (error set, or errno). */
static int tw_write_slots(const struct tb_chunk *c, size_t *records)
{
    struct tf_slot_stream ss = { .s = c->slots, .truth = c->truth, .left = c->n, .seq = c->seq,
                              .instance = c->first_instance };
    int codec = tw_chunk_codec();
    /* The chunk's CPU time only for TMTRACE_CODEC=auto's choice: two system
     * calls a chunk that no other codec needs. */
    const int timed = config.codec == CONFIG_CODEC_AUTO;
    uint64_t cpu0 = 0, cpu1 = 0;
    if (timed)
        tw_note_thread_cpu(&cpu0);
    if (tf_write_slots(tw_file, c->thread, &ss, codec, tw_level) != 0) {
        *records = tf_slots_records(c->slots, c->n);
        return -1;
    }
    *records = (size_t)(ss.seq - c->seq);
    if (timed) {
        tw_note_thread_cpu(&cpu1);
        tw_auto_note(codec, cpu1 - cpu0, *records);
    }
    if (*records)
        tw_note_chunk_cpu(&ss.prev);
    return 0;
}

#ifdef TMT_TEST_HOOKS
static uint64_t tw_mapped_in_share; /* atomic */
uint64_t tw_test_mapped_in_share(void) { return __atomic_load_n(&tw_mapped_in_share, __ATOMIC_RELAXED); }
#endif

/* A written chunk goes back to the pool, which also tops its reserve up on
 * the writer's time if it is short: between the chunks of a backlog, so
 * that the recording threads do not map chunks themselves while they wait
 * for these. Not while the share binds and the pool has grown by the
 * deferral's room (TMTRACE_WRITER_DEFER beyond what tmt_init populated,
 * the advice's `full`): the refill thread alone maps then, on its own
 * budget, and the writer spends all of its own on encoding. A chunk
 * populated during the run is encoded at exit anyway; a chunk written and
 * given back is refilled without populating anything. At `all` the writer
 * had spent two thirds of its share populating and recycled few chunks,
 * and a 10 s run cost twice the tracer's CPU per event (docs/tracer.md,
 * "The tracer's share of a CPU"). Within the room a short run keeps what
 * it did: populating warm memory holds a record for less of the share than
 * encoding it. */
static void tw_give_back(struct tb_chunk *c)
{
    int binds = tw_share_binds();
    if (binds && __atomic_load_n(&tw_refill_running, __ATOMIC_ACQUIRE) &&
        tb_pool_service(TB_POOL_ASK, NULL, tw_defer_limit()).full) {
        if (tb_pool_service(TB_POOL_RETURN, c, 0).low)
            sem_post(&tw_refill_wake);
        return;
    }
    struct tb_pool_advice a = tb_pool_service(TB_POOL_WRITTEN, c, 0);
#ifdef TMT_TEST_HOOKS
    if (binds)
        __atomic_fetch_add(&tw_mapped_in_share, a.mapped, __ATOMIC_RELAXED);
#endif
    (void)a;
}

void tw_write_now(struct tb_chunk *c)
{
    tw_announce();
    tw_write_new_sites(); /* a chunk's sites are named before its events */
    errno = 0;
    size_t records = 0;
    if (tw_failed) {
        tw_note_error(tf_slots_records(c->slots, c->n), c->thread);
    } else if (c->nsamples && tf_write_samples(tw_file, c->samples, c->nsamples) != 0) {
        tw_note_error(tf_slots_records(c->slots, c->n), c->thread);
    } else if (tw_write_slots(c, &records) != 0) {
        tw_note_error(records, c->thread);
    } else {
        tw_grow(c->thread);
        if (c->thread < tw_nthreads)
            tw_written[c->thread] += records;
        __atomic_fetch_add(&tw_nwritten, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&tw_nrecords, records, __ATOMIC_RELAXED);
        tw_staged_add(c->thread, records);
    }
    tw_note_bytes(); /* also after a failure: a partial write still grew the file */
    tw_give_back(c);
}

/* The queue's head once the tail of the trace is being written: a chunk
 * offered after this point could never reach the file, so it is refused and
 * its owner counts it as dropped (instead of it vanishing silently). */
#define TW_SEALED ((struct tb_chunk *)(uintptr_t)1)

/* How long the writer keeps waiting after every CPU stopped being busy:
 * programs that start their threads anew for each parallel phase (STAMP's
 * kmeans) leave short gaps between phases, and a writer that starts
 * writing in such a gap is still writing when the next phase begins
 * (docs/tracer.md, "Modes"). */
#define TW_DEFER_LINGER_NS 100000000u
static uint64_t tw_busy_ns; /* atomic: CLOCK_MONOTONIC when every CPU last ran a traced thread */
/* Threads that recorded during the writer's last wait (tb_threads_active),
 * or SIZE_MAX before its first count: attached threads then. An attached
 * thread that records nothing (a main thread waiting in pthread_join) does
 * not keep a CPU busy. */
static size_t tw_active = SIZE_MAX; /* atomic */
static uint64_t tw_active_at;        /* writer only: when tw_active was counted */
#define TW_ACTIVE_PERIOD_NS 20000000u

static uint64_t tw_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Recounts the recording threads once per TW_ACTIVE_PERIOD_NS (writer). */
static void tw_count_active(void)
{
    uint64_t now = tw_now_ns();
    if (now - tw_active_at < TW_ACTIVE_PERIOD_NS)
        return;
    __atomic_store_n(&tw_active, tb_threads_active(), __ATOMIC_RELAXED);
    tw_active_at = now;
}

/* Whether the writer leaves the queue alone for now (TMTRACE_WRITER_DEFER),
 * on its inputs: the `queued` bytes against the backlog's `limit`, whether
 * the pool is short of chunks with no room to map more (`pool_full`), and
 * whether every CPU ran a traced thread lately (`cpus_busy`). While every
 * CPU the process may use runs a traced thread, each chunk the writer
 * encodes takes CPU time from the program, so the writer lets full chunks
 * queue up and writes them once the CPUs have not all been busy for
 * TW_DEFER_LINGER_NS, when the backlog reaches the limit, or at the end.
 *
 * The threads meanwhile take their chunks from the pool, and when its
 * reserve runs low the writer maps more (tb_pool_service, in tw_main)
 * rather than writing queued chunks to recycle them: populating a chunk
 * costs about half of encoding its records where the kernel has the memory
 * at hand (more where it must fault it in from a hypervisor: docs/tracer.md,
 * "Beyond the deferral's room"), and what waits is encoded once a CPU is
 * free or at the end. Only when the pool may not grow by the limit beyond
 * what tmt_init populated (or TMTRACE_MEMORY is reached) does writing
 * become the way to free one.
 * Both bounds count memory, not records: a chunk handed over holds its
 * whole mapping however few records it has. */
static int tw_defer_rule(uint64_t queued, uint64_t limit, int pool_full, int cpus_busy)
{
    if (queued >= limit || pool_full)
        return 0;
    return cpus_busy;
}

#ifdef TMT_TEST_HOOKS
int tw_test_defer_rule(uint64_t queued, uint64_t limit, int pool_full, int cpus_busy)
{
    return tw_defer_rule(queued, limit, pool_full, cpus_busy);
}
#endif

/* Whether every CPU the process may use ran a traced thread within the
 * last TW_DEFER_LINGER_NS (tw_count_active counts them; before its first
 * count, the `attached` threads stand for them). */
static int tw_cpus_busy(size_t attached)
{
    int ncpu = CPU_COUNT(&tw_mask);
    uint64_t now = tw_now_ns();
    size_t active = __atomic_load_n(&tw_active, __ATOMIC_RELAXED);
    if (active == SIZE_MAX)
        active = attached;
    if (ncpu > 0 && active >= (size_t)ncpu) {
        __atomic_store_n(&tw_busy_ns, now, __ATOMIC_RELAXED);
        return 1;
    }
    uint64_t busy = __atomic_load_n(&tw_busy_ns, __ATOMIC_RELAXED);
    return busy != 0 && now - busy < TW_DEFER_LINGER_NS;
}

/* The backlog the writer lets queue up: TMTRACE_WRITER_DEFER, at most a
 * quarter of TMTRACE_MEMORY (0: no deferral). */
static uint64_t tw_defer_limit(void)
{
    if (tw_mode != CONFIG_MODE_STREAM || config.writer_defer == 0)
        return 0;
    uint64_t limit = (uint64_t)config.writer_defer, cap = (uint64_t)config.memory_bytes / 4;
    return limit < cap ? limit : cap;
}

/* Whether the stream writer defers now, given the pool's advice `a` (asked
 * with tw_defer_limit() as the backlog). */
static int tw_deferring(struct tb_pool_advice a)
{
    uint64_t limit = tw_defer_limit();
    if (limit == 0)
        return 0;
    return tw_defer_rule(__atomic_load_n(&tw_queued, __ATOMIC_RELAXED), limit, a.full, tw_cpus_busy(a.threads));
}

/* Whether the stream writer should write its queue now (not deferring). */
static int tw_writes_now(void)
{
    return tw_mode == CONFIG_MODE_STREAM && !tw_deferring(tb_pool_service(TB_POOL_ASK, NULL, tw_defer_limit()));
}

/* What a queued chunk holds: its whole mapping, however few records it
 * has (a thread that exits with more than a 32nd of a chunk recorded hands
 * over the whole chunk), so that the deferral's limit bounds memory and not
 * records; a leaving thread's malloc'd copy, what it is charged. */
static uint64_t tw_chunk_held(const struct tb_chunk *c)
{
    return c->mapped ? (uint64_t)c->mapped : (uint64_t)c->charged;
}

int tw_offer(struct tb_chunk *c)
{
    /* Counted before it is queued: once queued, the writer may write and
     * free it at once (a leaving thread's copy is malloc'd), and the count
     * must never fall below what the queue holds. */
    uint64_t held = tw_chunk_held(c);
    __atomic_fetch_add(&tw_queued, held, __ATOMIC_RELAXED);
    struct tb_chunk *head = __atomic_load_n(&tw_queue, __ATOMIC_ACQUIRE);
    do {
        if (head == TW_SEALED) {
            __atomic_fetch_sub(&tw_queued, held, __ATOMIC_RELAXED);
            return -1;
        }
        c->next = head;
    } while (!__atomic_compare_exchange_n(&tw_queue, &head, c, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
    /* Whatever the mode, the refill thread tops the reserve up when it
     * runs low; the writer is woken only to write. */
    struct tb_pool_advice a = tb_pool_service(TB_POOL_ASK, NULL, tw_defer_limit());
    if (a.low && __atomic_load_n(&tw_refill_running, __ATOMIC_ACQUIRE))
        sem_post(&tw_refill_wake);
    if (tw_mode == CONFIG_MODE_STREAM && !tw_deferring(a))
        sem_post(&tw_wake);
    return 0;
}

/* The most of one CPU each of the tracer's two threads takes while every
 * CPU the process may use runs a traced thread (tw_cpus_busy):
 * TMTRACE_WRITER_SHARE percent of wall time over windows of
 * TW_SHARE_WINDOW_NS, for the writer's encoding and, apart, for the refill
 * thread's mapping. Past it, the writer sleeps between chunks (what it has
 * not written stays in memory) and the refill thread between steps of
 * TB_POOL_STEP chunks. While the share binds the pool is held
 * (tb_pool_hold): only the refill thread maps chunks, and a recording
 * thread that finds none free drops its events (counted) instead of
 * mapping one on the program's CPU. Populating fresh chunks is not free:
 * at `all` a fast program on every CPU made the refill thread take a third
 * of a CPU and more, and the program's abort rate fell with the CPU it lost
 * (docs/tracer.md, "The tracer's share of a CPU"). Two budgets, not one:
 * mapping costs less than encoding per record on memory at hand, and a
 * writer that spent the refill thread's time would drop more records than
 * it wrote. At its nice alone the scheduler gave the writer about a quarter
 * of a CPU against two busy threads on two CPUs. Not at stop nor for a
 * signal's flush, nor with a CPU to spare, nor at 100 (no cap), nor in
 * memory mode. */
#define TW_SHARE_WINDOW_NS 100000000u
/* One thread's budget, in CPU ns: it grows by the share of the wall time
 * that passes, up to one window's worth, and shrinks by the CPU time the
 * thread spends; in debt, the thread sleeps until it is repaid. A debt
 * carries over (a chunk or a step that takes longer than a window is paid
 * for in full), so over any run the thread's CPU stays within the share
 * plus one window's worth. Each is touched by its own thread only. */
struct tw_share {
    int64_t budget;
    uint64_t wall0; /* when the budget was last brought up to date, 0 before the first look */
    uint64_t cpu0;  /* the thread's CPU time then */
};
static struct tw_share tw_share_writer, tw_share_refill;

static uint64_t tw_thread_cpu_now(void)
{
    uint64_t t = 0;
    tw_note_thread_cpu(&t);
    return t;
}

static int tw_flush_asked(void)
{
    return __atomic_load_n(&tw_stop_req, __ATOMIC_ACQUIRE) || __atomic_load_n(&tw_sig_req, __ATOMIC_ACQUIRE);
}

/* Whether the share binds now (the rule above). */
static int tw_share_binds(void)
{
    return tw_mode == CONFIG_MODE_STREAM && config.writer_share < 100 && !tw_flush_asked() &&
           tw_cpus_busy(tb_pool_service(TB_POOL_ASK, NULL, 0).threads);
}

/* Called by its thread (the writer after each chunk, the refill thread
 * before each step): charges the CPU time spent since the last call to
 * `sh` and, while it is in debt, sleeps in steps that watch `stop` (and
 * the share ceasing to bind) until it is repaid. Returns whether the share
 * binds; when it does not, the budget starts again full. */
static int tw_keep_share(struct tw_share *sh, int (*stop)(void))
{
    uint64_t now = tw_now_ns(), cpu = tw_thread_cpu_now();
    int64_t full = (int64_t)TW_SHARE_WINDOW_NS * config.writer_share / 100;
    int64_t spent = (int64_t)(cpu - sh->cpu0);
    sh->cpu0 = cpu;
    if (sh->wall0 == 0 || !tw_share_binds()) {
        sh->budget = full;
        sh->wall0 = now;
        return 0;
    }
    sh->budget += (int64_t)(now - sh->wall0) * config.writer_share / 100;
    if (sh->budget > full)
        sh->budget = full;
    sh->budget -= spent;
    sh->wall0 = now;
    while (sh->budget < 0) {
        if (stop() || !tw_share_binds())
            return 0;
        uint64_t left = (uint64_t)(-sh->budget) * 100u / (uint64_t)config.writer_share;
        struct timespec ts = { 0, (long)(left < 5000000u ? left : 5000000u) };
        nanosleep(&ts, NULL);
        now = tw_now_ns();
        sh->budget += (int64_t)(now - sh->wall0) * config.writer_share / 100;
        sh->wall0 = now;
    }
    return 1;
}

/* Takes the queue (sealing it if asked) and writes it oldest first. */
static void tw_take_and_write(int seal, int writer)
{
    /* Only the writer (or tw_stop after it) takes or seals the queue, so a
     * sealed queue cannot appear between the check and the exchange. */
    if (__atomic_load_n(&tw_queue, __ATOMIC_ACQUIRE) == TW_SEALED)
        return;
    struct tb_chunk *c = __atomic_exchange_n(&tw_queue, seal ? TW_SEALED : NULL, __ATOMIC_ACQ_REL), *rev = NULL;
    while (c != NULL) {
        struct tb_chunk *next = c->next;
        __atomic_fetch_sub(&tw_queued, tw_chunk_held(c), __ATOMIC_RELAXED);
        c->next = rev;
        rev = c;
        c = next;
    }
    while (rev != NULL) {
        struct tb_chunk *next = rev->next;
        if (writer)
            tw_busy_lock();
        tw_write_now(rev);
        if (writer)
            pthread_mutex_unlock(&tw_busy);
        /* Per chunk, not only per drain: a backlog of many chunks takes one
         * drain, and the CPU time would lag the records for all of it. */
        if (writer) {
            tw_note_cpu();
            (void)tw_keep_share(&tw_share_writer, tw_flush_asked);
        }
        rev = next;
    }
}

/* Only tw_main drains: the chunks are written on the writer thread. */
static void tw_drain(void) { tw_take_and_write(0, 1); }

void tw_seal(void) { tw_take_and_write(1, 0); }

/* Waits on `sem` at most `ns` (< 1 s) nanoseconds. */
static void tw_wait(sem_t *sem, uint64_t ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)ns;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    while (sem_timedwait(sem, &ts) != 0 && errno == EINTR)
        ;
}

static int tw_refill_stopping(void)
{
    return __atomic_load_n(&tw_refill_stop, __ATOMIC_ACQUIRE) || tw_flush_asked();
}

/* The refill thread: every TW_REFILL_PERIOD_NS it sizes the reserve from
 * what the threads took since its last pass, and between passes it tops
 * the reserve up whenever a hand-over finds it low (tw_offer). */
static void *tw_refill_main(void *arg)
{
    (void)arg;
    /* Named, so that a profile tells the tracer's threads apart
     * (tmbench/writer-cost --perf). */
    (void)pthread_setname_np(pthread_self(), "tmt-refill");
    uint64_t pass_at = 0;
    while (!__atomic_load_n(&tw_refill_stop, __ATOMIC_ACQUIRE)) {
        /* The last step's mapping, paid for before the next one; while the
         * share binds, the threads map nothing themselves. */
        tb_pool_hold(tw_keep_share(&tw_share_refill, tw_refill_stopping));
        uint64_t now = tw_now_ns();
        struct tb_pool_advice a;
        if (now - pass_at >= TW_REFILL_PERIOD_NS) {
            a = tb_pool_service(TB_POOL_PASS, NULL, 0);
            pass_at = now;
        } else {
            a = tb_pool_service(TB_POOL_TOPUP, NULL, 0);
        }
        tw_note_thread_cpu(&tw_refill_cpu);
        /* A step at a time, each charged to the share before the next. */
        if (a.mapped < TB_POOL_STEP || !a.low)
            tw_wait(&tw_refill_wake, TW_REFILL_PERIOD_NS);
    }
    tb_pool_hold(0);
    if (__atomic_load_n(&tw_refill_detach, __ATOMIC_ACQUIRE))
        pthread_detach(pthread_self());
    return NULL;
}

/* The refill thread's semaphore is initialised once and never destroyed:
 * the threads that post it (tw_offer on the recording threads, tw_give_back
 * on the writer) test tw_refill_running first, and one may post just after
 * tw_refill_end has joined the thread. A restart drains what such a post
 * left. 0 or -1 (not initialised: no refill thread). */
static int tw_refill_sem_ready;

static int tw_refill_sem(void)
{
    if (!tw_refill_sem_ready) {
        if (sem_init(&tw_refill_wake, 0, 0) != 0)
            return -1;
        tw_refill_sem_ready = 1;
    }
    while (sem_trywait(&tw_refill_wake) == 0)
        ;
    return 0;
}

/* Starts the refill thread; without it (pthread_create failed) the writer
 * refills the reserve itself, as it did before the refill thread. */
static void tw_refill_start(void)
{
    __atomic_store_n(&tw_refill_stop, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&tw_refill_detach, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&tw_refill_cpu, 0, __ATOMIC_RELAXED);
    tw_share_refill = (struct tw_share){ 0, 0, 0 };
    if (tw_refill_sem() != 0 || pthread_create(&tw_refill_tid, NULL, tw_refill_main, NULL) != 0)
        return;
    __atomic_store_n(&tw_refill_running, 1, __ATOMIC_RELEASE);
}

static void tw_refill_end(void)
{
    if (!__atomic_load_n(&tw_refill_running, __ATOMIC_ACQUIRE) || __atomic_load_n(&tw_refill_detach, __ATOMIC_ACQUIRE))
        return;
    __atomic_store_n(&tw_refill_stop, 1, __ATOMIC_RELEASE);
    sem_post(&tw_refill_wake);
    pthread_join(tw_refill_tid, NULL);
    __atomic_store_n(&tw_refill_running, 0, __ATOMIC_RELEASE);
}

static void *tw_main(void *arg)
{
    (void)arg;
    (void)pthread_setname_np(pthread_self(), "tmt-writer");
    (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), (int)config.writer_nice);
    tw_place(1);
    for (;;) {
        if (tw_mode == CONFIG_MODE_STREAM || !__atomic_load_n(&tw_refill_running, __ATOMIC_ACQUIRE)) {
            tw_wait(&tw_wake, 50000000u);
        } else {
            while (sem_wait(&tw_wake) != 0 && errno == EINTR)
                ;
        }
        if (__atomic_load_n(&tw_sig_req, __ATOMIC_ACQUIRE)) {
            tw_drain();
            if (tw_on_signal)
                tw_on_signal();
            tw_note_cpu();
            /* Nobody joins it: the tracer is closed, and a program whose
             * own handler goes on (or _exits) never stops it. */
            pthread_detach(pthread_self());
            __atomic_store_n(&tw_sig_done, 1, __ATOMIC_RELEASE);
            return NULL;
        }
        int stop = __atomic_load_n(&tw_stop_req, __ATOMIC_ACQUIRE);
        tw_count_active();
        /* Size the reserve from what the threads took since the last pass
         * and top it up before writing a backlog, which takes a while (the
         * refill thread's work, when it could not be started). */
        if (!stop && !__atomic_load_n(&tw_refill_running, __ATOMIC_ACQUIRE)) {
            tw_busy_lock();
            (void)tb_pool_service(TB_POOL_PASS, NULL, 0);
            pthread_mutex_unlock(&tw_busy);
        }
        if (tw_writes_now() || stop) {
            tw_drain();
            tw_place(0);
        }
        /* Written chunks went back to the pool first; map only what the
         * reserve still lacks, here rather than on a recording thread. */
        if (!stop && !__atomic_load_n(&tw_refill_running, __ATOMIC_ACQUIRE)) {
            tw_busy_lock();
            (void)tb_pool_service(TB_POOL_TOPUP, NULL, 0);
            pthread_mutex_unlock(&tw_busy);
        }
        tw_note_cpu(); /* on stop, this is the last one: the writer returns below */
        if (stop)
            return NULL;
    }
}

int tw_start(struct tf_writer *w, int mode, void (*on_signal)(void), const char *failed)
{
    tw_file = w;
    tw_mode = mode;
    tw_codec = tw_file_codec(config.codec);
    tw_auto_cost[0] = tw_auto_cost[1] = 0;
    tw_auto_count = 0;
    tw_level = config.codec_level;
    tw_on_signal = on_signal;
    tw_queue = NULL;
    tw_queued = 0;
    tw_busy_ns = 0;
    tw_active = SIZE_MAX;
    tw_active_at = tw_now_ns();
    tw_stop_req = tw_sig_req = tw_sig_done = 0;
    tw_nerrors = tw_nlost = tw_nwritten = 0;
    /* A new run: a new writer thread, whose CPU clock starts again at 0, and
     * a new file, which already holds the header and the pre-run samples. */
    __atomic_store_n(&tw_nrecords, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&tw_cpu, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&tw_nbytes, 0, __ATOMIC_RELAXED);
    tw_share_writer = (struct tw_share){ 0, 0, 0 }; /* a new writer thread: its CPU clock starts at 0 */
    tw_note_bytes();
    tw_failed = failed != NULL;
    snprintf(tw_errmsg, sizeof tw_errmsg, "%s", failed ? failed : "");
    if (failed)
        tw_nerrors = 1;
    free(tw_written);
    free(tw_lost_by);
    tw_written = tw_lost_by = NULL;
    tw_nthreads = 0;
    tw_staged_head = tw_staged_n = 0;
    if (sem_init(&tw_wake, 0, 0) != 0)
        return error_set_errno(errno, "trace writer: sem_init");
    /* Fatal signals are for the program's threads: the writer must stay
     * free to flush when one arrives. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    tw_refill_start(); /* before the writer, which looks at whether it runs */
    int e = pthread_create(&tw_tid, NULL, tw_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e != 0) {
        tw_refill_end();
        return error_set_errno(e, "trace writer: pthread_create");
    }
    tw_running = 1;
    return 0;
}

void tw_stop(void)
{
    if (!tw_running)
        return;
    tw_refill_end(); /* hand-over is closed: nothing to map any more */
    __atomic_store_n(&tw_stop_req, 1, __ATOMIC_RELEASE);
    sem_post(&tw_wake);
    pthread_join(tw_tid, NULL);
    tw_running = 0;
    tw_seal(); /* anything submitted while it stopped; later chunks are refused */
    sem_destroy(&tw_wake);
}

int tw_signal_flush(int stall_ms)
{
    if (!tw_running)
        return 0;
    (void)tb_pool_service(TB_POOL_HALT, NULL, 0); /* a writer mapping chunks returns to the queue at once */
    __atomic_store_n(&tw_refill_detach, 1, __ATOMIC_RELEASE); /* nothing left to map for; never joined */
    __atomic_store_n(&tw_refill_stop, 1, __ATOMIC_RELEASE);
    if (__atomic_load_n(&tw_refill_running, __ATOMIC_ACQUIRE))
        sem_post(&tw_refill_wake);
    __atomic_store_n(&tw_sig_req, 1, __ATOMIC_RELEASE);
    sem_post(&tw_wake);
    /* A long queue may take a while to write: give up only when the writer
     * has made no progress for stall_ms. */
    uint64_t seen = tw_chunks_written() + tw_errors();
    for (int idle = 0; idle < stall_ms; idle++) {
        if (__atomic_load_n(&tw_sig_done, __ATOMIC_ACQUIRE))
            return 1;
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
        uint64_t now = tw_chunks_written() + tw_errors();
        if (now != seen) {
            seen = now;
            idle = 0;
        }
    }
    return __atomic_load_n(&tw_sig_done, __ATOMIC_ACQUIRE);
}

void tw_fork_prepare(void)
{
    __atomic_add_fetch(&tw_forking, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_lock(&tw_busy);
}

void tw_fork_parent(void)
{
    pthread_mutex_unlock(&tw_busy);
    __atomic_sub_fetch(&tw_forking, 1, __ATOMIC_ACQ_REL);
}

void tw_fork_child(void)
{
    pthread_mutex_unlock(&tw_busy);
    __atomic_store_n(&tw_forking, 0, __ATOMIC_RELEASE);
    tw_running = 0; /* the writer thread stayed in the parent, and so did the refill thread */
    __atomic_store_n(&tw_refill_running, 0, __ATOMIC_RELAXED);
    tw_refill_sem_ready = 0; /* its copy may count the parent's waiter: a tracer started anew initialises it */
    __atomic_store_n(&tw_queue, NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&tw_queued, 0, __ATOMIC_RELAXED);
}

uint64_t tw_thread_written(uint32_t thread) { return thread < tw_nthreads ? tw_written[thread] : 0; }
uint64_t tw_thread_lost(uint32_t thread) { return thread < tw_nthreads ? tw_lost_by[thread] : 0; }
uint64_t tw_errors(void) { return __atomic_load_n(&tw_nerrors, __ATOMIC_RELAXED); }
uint64_t tw_lost(void) { return __atomic_load_n(&tw_nlost, __ATOMIC_RELAXED); }
uint64_t tw_chunks_written(void) { return __atomic_load_n(&tw_nwritten, __ATOMIC_RELAXED); }
uint64_t tw_records_written(void) { return __atomic_load_n(&tw_nrecords, __ATOMIC_RELAXED); }
uint64_t tw_cpu_ns(void)
{
    return __atomic_load_n(&tw_cpu, __ATOMIC_RELAXED) + __atomic_load_n(&tw_refill_cpu, __ATOMIC_RELAXED);
}
uint64_t tw_bytes(void) { return __atomic_load_n(&tw_nbytes, __ATOMIC_RELAXED); }
const char *tw_first_error(void) { return tw_errmsg; }
