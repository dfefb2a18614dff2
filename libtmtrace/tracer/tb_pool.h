/*
 * tb_pool.h - the chunks trace records are written into, and the pool that
 * keeps them mapped ahead of demand.
 *
 * Owns: struct tb_chunk (the unit a thread fills and the writer writes), the
 * chunks' memory (mapped and populated, or a malloc'd copy), the free list,
 * the TMTRACE_MEMORY account, the reserve of populated chunks and its refill
 * policy (when to map, how many, when only writing frees a chunk), the
 * chunks retired while a snapshot may still read them, and whether
 * hand-over is open.
 *
 * Never: looks at records, threads, the trace file or the writer's queue,
 * and calls no other module of the tracer. The pool is the bottom of the
 * tracer's calls: the threads' side (tb_threads.c) takes and returns chunks,
 * the writer (trace_writer.c) asks it for everything it needs through
 * tb_pool_service, and neither is ever called back from here, so no call
 * cycle can run through it.
 */
#ifndef TMT_TB_POOL_H
#define TMT_TB_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "trace_file.h"

#define TB_CHUNK_SAMPLES 64  /* in-run samples a chunk carries before it is handed over early */

struct tb_chunk {
    struct tb_chunk *next;    /* queue / free-list link */
    uint32_t thread;          /* owner's tracer thread id */
    uint32_t nsamples;
    uint64_t seq;             /* program-order index of the first record */
    uint64_t first_instance;  /* instance id in force at the first record */
    size_t n;                 /* slots filled (records: tf_slots_records) */
    size_t copied;            /* atomic: slots a shutdown/signal snapshot already put in the trace */
    size_t cap;               /* slots that fit */
    uint64_t *truth;          /* uninjected TSC per slot, or NULL */
    int pooled;               /* 1: belongs to the pool (counted in TMTRACE_MEMORY) */
    size_t mapped;            /* bytes mmap'ed, 0 if from malloc */
    int64_t charged;          /* outside the pool: bytes counted in TMTRACE_MEMORY until released */
    struct tf_sample samples[TB_CHUNK_SAMPLES];
    struct tf_slot slots[];   /* the event path's stream (trace_format.h) */
};

/* Sizes the pool from the configuration (chunks of TMTRACE_BUFFER bytes of
 * slots, with a truth column when `truth`; TMTRACE_MEMORY bytes in all),
 * maps the arena recording starts in (TMTRACE_PREFAULT; 0: 256M,
 * docs/tracer.md) and opens hand-over. */
void tb_pool_setup(int truth);
/* Closes hand-over: tb_pool_get gives nothing from here on. */
void tb_pool_close(void);
/* Whether hand-over is open (atomic read: any thread). */
int tb_pool_open(void);
/* Frees the free list and the retired chunks (after the writer stopped);
 * chunks threads still hold are left alone. */
void tb_pool_teardown(void);

/* A free chunk for a recording thread (mapped by the caller itself when the
 * reserve ran dry and the pool is not held, counted), or NULL when
 * hand-over is closed, another chunk would pass TMTRACE_MEMORY, or the
 * reserve ran dry while the pool is held. Its count, samples and `copied`
 * are 0. */
struct tb_chunk *tb_pool_get(void);
/* Whether tb_pool_get may give a chunk: cheap, so that a thread that drops
 * does not take the pool's lock on every event. */
int tb_pool_may_give(void);
/* Whether the recording threads should shed (tb_thread.h, `shedding`):
 * the reserve cannot be topped up at once (the pool is held, or topping it
 * up would pass TMTRACE_MEMORY) and holds less than half of what it wants;
 * `was`: the caller sheds already, and then goes on until the reserve is
 * whole again. Cheap: relaxed loads, no lock. */
int tb_pool_short(int was);
/* Holds the pool (on = 1) or lets it go: while held, a recording thread
 * that finds no free chunk drops its events rather than map one itself.
 * The refill thread holds it while the tracer's share of a CPU binds
 * (trace_writer.c, tw_keep_share): it alone maps then, within its share. */
void tb_pool_hold(int on);
/* A chunk back: to the free list when pooled, else freed (and its bytes
 * leave TMTRACE_MEMORY). */
void tb_chunk_release(struct tb_chunk *c);
/* A chunk that a snapshot may still be reading: kept until teardown.
 * Lock-free: the caller may be a thread a signal interrupted. */
void tb_chunk_retire(struct tb_chunk *c);
/* A copy outside the pool of the first `n` slots of `src` (owned by a
 * thread that may be running on), its samples and truth column, with `seq`
 * as its first record's index; its `n` is left 0 for the caller to set.
 * From malloc and charged to TMTRACE_MEMORY when `loose` (a leaving
 * thread's last records), else mapped (a snapshot at a fatal signal must
 * not take malloc's locks). NULL without memory or room. Given back with
 * tb_chunk_release. */
struct tb_chunk *tb_chunk_copy(const struct tb_chunk *src, size_t n, uint64_t seq, int loose);

/* A thread attached (the reserve grows by its share and is topped up on the
 * caller's thread) or left. */
void tb_pool_thread_join(void);
void tb_pool_thread_leave(void);
/* The chunk last taken went back unused (a leaving thread sent a copy of
 * its records instead): the reserve, which follows the chunks taken, does
 * not count it. */
void tb_pool_not_consumed(void);

/* What the writer asks of the pool (tb_pool_service). */
enum tb_pool_call {
    TB_POOL_ASK,     /* the advice only (any thread: the offer path) */
    TB_POOL_PASS,    /* once per writer pass, before it writes: size the reserve from the chunks
                      * taken since the previous pass and top it up */
    TB_POOL_WRITTEN, /* `written` was written: take it back and top the reserve up if it is short */
    TB_POOL_RETURN,  /* `written` was written: take it back (the refill thread tops the reserve up) */
    TB_POOL_TOPUP,   /* top the reserve up if it is short */
    TB_POOL_HALT,    /* a fatal signal's flush: no more mapping, and no chunk taken back (the
                      * interrupted thread may hold the pool's lock), for the rest of the process */
};

/* The pool's answer: what the writer should do for it. */
struct tb_pool_advice {
    int low;        /* the reserve is short: wake the writer to map more */
    int full;       /* short, and the pool may not grow by the writer's `backlog` beyond what
                     * tb_pool_setup mapped (or TMTRACE_MEMORY is reached): only writing chunks
                     * frees one */
    size_t threads; /* threads attached (what the reserve is sized from) */
    size_t mapped;  /* chunks this call mapped: TB_POOL_STEP when the reserve may lack more */
};

/* The most chunks one call of tb_pool_service maps, so that the caller can
 * account for its CPU time between steps (the tracer's share of a CPU,
 * trace_writer.c): with the default 1 MiB chunks, a few milliseconds. */
#define TB_POOL_STEP 8u

/* The writer's one call on the pool: does what `call` asks (mapping runs on
 * the caller's thread, never on the event path) and returns the advice
 * after it; `backlog` is the bytes the writer lets queue up (for `full`). */
struct tb_pool_advice tb_pool_service(enum tb_pool_call call, struct tb_chunk *written, uint64_t backlog);

/* fork(): the pool's lock around it (prepare takes it, release gives it
 * back). In the child, after the release, the pool forgets the parent's
 * chunks (their memory is the parent's copy and stays unused) and closes
 * hand-over; returns whether hand-over was open. */
void tb_pool_fork_prepare(void);
void tb_pool_fork_release(void);
int tb_pool_fork_child(void);

/* How many chunks TMTRACE_MEMORY holds (0: not even one). */
uint64_t tb_pool_capacity(void);
/* Bytes of chunks the pool holds (free, filling or queued; the most of the
 * run, also after teardown), and how many chunks a recording thread had to
 * map itself because the reserve ran dry. */
uint64_t tb_pool_bytes(void);
/* How often a recording thread found no free chunk while the pool was held
 * (tb_pool_hold), and whether the pool ever held so many bytes that one
 * more chunk would have passed TMTRACE_MEMORY: the two reasons for drops
 * (tracer.c names them at exit). */
uint64_t tb_pool_held_refusals(void);
int tb_pool_reached_limit(void);
uint64_t tb_inline_growths(void);
/* Of those, the chunks mapped at least a second after tb_pool_setup. */
uint64_t tb_late_growths(void);
#ifdef TMT_TEST_HOOKS
/* Test builds only: with `on`, the reserve is never topped up during the
 * run (setup and attach still populate theirs), so a recording thread
 * that needs more maps its chunks itself. */
void tb_pool_test_no_refill(int on);
#endif

#endif
