/*
 * tb_thread.h - a recording thread's trace state (struct tb_thread, which
 * each transaction descriptor embeds), the calls of its life cycle and the
 * one inline setter both the hooks and the thread table use.
 *
 * Owns: the layout of struct tb_thread (hot fields first: the inline hooks
 * of trace_buffer.h touch them on every event) and the declarations of
 * attach, detach and a full chunk's hand-over, which the thread table
 * (tb_threads.c) defines, and tb_set_compact. Never: other code. It sits below both the hooks
 * (trace_buffer.h) and the thread table (tb_threads.h), so that neither
 * includes the other's header to reach the state they share.
 */
#ifndef TMT_TB_THREAD_H
#define TMT_TB_THREAD_H

#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"

#if defined(__GNUC__)
#define TB_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TB_LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define TB_UNLIKELY(x) (x)
#define TB_LIKELY(x) (x)
#endif

struct tb_chunk; /* tb_pool.h: a chunk of records handed to the writer */

struct tb_thread {
    /* Hot: touched by every event. */
    struct tf_slot *cur;       /* next free slot of the current chunk */
    struct tf_slot *end;       /* the chunk's last slot: a record starts before it (a full one takes two) */
    struct tf_slot *cend;      /* what the inline access path tests `cur` against: `end` while the next
                                * record may be compact and needs no rdtscp, else NULL (tb_set_compact) */
    struct tf_slot *bend;      /* the same for the inline START and COMMIT, which always read the clock */
    uint8_t level;             /* enum config_events; OFF also when not attached */
    uint8_t injecting;         /* clock faults injected: apply skew, keep truth */
    uint16_t site;             /* site of the transaction in progress */
    uint8_t stamp_each;        /* 1: reads/writes take their own stamp (TMTRACE_STAMP=each) */
    uint8_t fast_stamp;        /* 1: unordered stamps (rdpid; rdtsc; rdpid) where order is not needed */
    uint8_t compact;           /* 1: the chunk holds a record the next one can be compact against */
    uint8_t sampled;           /* 1: each START sets `level` for its attempt: level tx with TMTRACE_DETAIL,
                                * or level all that may shed (tb_may_shed) */
    uint8_t shedding;          /* level all: buffers run short (tb_pool_short), so each START records its
                                * attempt as at level tx (TF_START_SHED); set at each chunk taken */
    int64_t fulls;             /* slots of the current chunk beyond one per record: 1 per full record,
                                * 2 + tf_wset_slots(e) - n per write set of n words in e entries,
                                * tf_wset_slots(e) - n when a COMMIT carries it (may be below 0) */
    /* The last stamp taken: what boundary-stamped reads/writes repeat and
     * what the next stamp on the same CPU must exceed. */
    uint64_t last_raw;         /* TSC as read (the truth when injecting) */
    uint64_t last_tsc;         /* TSC as recorded (injected when injecting) */
    uint32_t last_aux;
    uint64_t tick_tsc;         /* next in-run sample / migration is due at this TSC */
    uint64_t rng;              /* TMTRACE_DETAIL: the thread's xorshift64 state (never 0) */
    uint32_t detail;           /* TMTRACE_DETAIL's N when `sampled` */
    uint64_t *truth;           /* truth column of the current chunk, per slot (injecting only) */
    struct tf_slot *base;      /* first slot of the current chunk */
    struct tf_slot *carry;     /* the slot of a COMMIT stamped and not yet published, which is to carry
                                * the write set tb_ev_wset records next (tb_ev_commit_carry), or NULL */
    struct tf_slot carry_rec;  /* that COMMIT, kept here until then (see tb_ev_commit_carry) */
    struct tf_slot *fold_end;  /* the slot after a compact START that a read-only COMMIT may fold into
                                * (trace_format.h, tf_start_fold) while `cur` is still there, or NULL */

    /* Cold: the slow path's. */
    struct tb_chunk *chunk;
    uint32_t thread_id;        /* tracer thread id (1, 2, ...) */
    uint32_t os_tid;
    uint64_t seq;              /* program-order index of `base` */
    uint64_t first_instance;   /* instance id in force at `base` */
    uint64_t instance;         /* instance id of the last START */
    uint64_t recorded;         /* records handed to the writer */
    uint64_t dropped;          /* records lost */
    uint64_t tick_period;      /* TSC ticks between ticks; 0 = never */
    uint64_t migrate_period;   /* TSC ticks between forced migrations; 0 = never */
    uint64_t next_migrate_tsc;
    uint64_t next_sample_tsc;
    uint64_t raised;           /* stamps raised to keep one CPU's stamps increasing */
    uint64_t shed;             /* attempts recorded shed (TF_START_SHED) */
    struct tf_slot *discard;   /* where records go while no chunk is to be had, counted dropped per
                                * area filled (tb_threads.c); NULL until the thread's first drop */
};

/* Slow paths. The chunk is full: hand it over, take a new one; returns
 * the slot to use. With no chunk to be had the slot is in the thread's
 * discard area, whose records are counted dropped when it fills, when a
 * chunk is had again and at detach, so that a thread that drops runs the
 * same inline path as one that records; NULL (the event dropped and
 * counted at once) only without a discard area (tb_threads.c). */
struct tf_slot *tb_chunk_full(struct tb_thread *t);
/* Lifecycle (tb_threads.c). attach sets level/thread id and takes the first
 * chunk; detach hands the last one to the writer. */
int tb_attach(struct tb_thread *t);
void tb_detach(struct tb_thread *t);

/* Whether the next record may be compact against the previous one. The
 * inline paths see it folded into `cend` and `bend` with the clock they
 * would read, so that one compare of `cur` decides between them and the
 * out-of-line path, and they never hold the registers rdtscp writes.
 * (Without rdpid every stamp is an rdtscp, beside which the out-of-line
 * path costs nothing, docs/tracer.md "Stamps"; boundary-stamped accesses
 * read no clock and stay inline.) */
static inline void tb_set_compact(struct tb_thread *t, int on)
{
    t->compact = (uint8_t)on;
    t->bend = on && t->fast_stamp ? t->end : NULL;
    t->cend = on && (t->fast_stamp || !t->stamp_each) ? t->end : NULL;
}

#endif
