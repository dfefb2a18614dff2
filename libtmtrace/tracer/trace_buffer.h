/*
 * trace_buffer.h - per-thread trace buffers and the event hooks.
 *
 * Owns: the one inline hook per event kind that the runtime calls
 * (tb_ev_*) and the names of their out-of-line records (trace_buffer.c).
 * The per-thread state they work on, struct tb_thread, and its life cycle
 * (attach, detach, a full chunk's hand-over: tb_threads.c) are declared in
 * tb_thread.h, below both this header and the thread table, so that the
 * thread table never needs the hooks; the chunks and their pool are
 * tb_pool.h's.
 *
 * The event path (the tb_ev_* hooks) never locks, never makes a system call,
 * never allocates, never does an atomic read-modify-write and never touches
 * TLS: it works on the tb_thread it is given. With TMTRACE_EVENTS=off each hook
 * is one predictable branch. The hooks must never be called inside a hardware
 * transaction.
 */
#ifndef TMT_TRACE_BUFFER_H
#define TMT_TRACE_BUFFER_H

#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "config.h"
#include "skew.h"
#include "tb_thread.h"
#include "trace_format.h"

/* Periodic work on a transaction boundary: in-run clock sample, migration
 * (trace_buffer.c). */
void tb_tick(struct tb_thread *t, uint64_t tsc);

/* The event path's cost per record, measured on a scratch buffer (after
 * tb_setup): the median of a few runs of read records, in ns (tracer side,
 * trace_buffer.c). */
double tb_event_cost_ns(void);

/* The next free slot with room for a full record after it, not yet
 * counted: the caller fills one or two slots, then tb_publish() makes them
 * part of the chunk. */
static inline struct tf_slot *tb_slot(struct tb_thread *t)
{
    if (TB_UNLIKELY(t->cur >= t->end))
        return tb_chunk_full(t);
    return t->cur;
}

/* Filled slots join the chunk. Filling before publishing is what lets a
 * snapshot taken on a signal (tb_snapshot_all, from another thread) copy
 * only whole records; the release store is a plain move on x86. */
static inline void tb_publish(struct tb_thread *t, struct tf_slot *next)
{
    __atomic_store_n(&t->cur, next, __ATOMIC_RELEASE);
}

/* The stamped full record's other fields, then publishes it. Accesses
 * after it may be compact against it (unless the clock is injected: the
 * truth column runs per slot and is kept for full records alone). */
static inline void tb_fill_fields(struct tb_thread *t, struct tf_slot *s, unsigned kind, unsigned reason,
                                  uint64_t addr, uint64_t value)
{
    struct tf_record *r = (struct tf_record *)(void *)s;
    r->kind = (uint8_t)kind;
    r->reason = (uint8_t)reason;
    r->site = t->site;
    r->addr = addr;
    r->value = value;
    /* Relaxed atomic (a plain add on x86): the thread table reads it while
     * the thread records into its discard area (tb_threads.c). */
    __atomic_store_n(&t->fulls, t->fulls + 1, __ATOMIC_RELAXED);
}
static inline void tb_fill(struct tb_thread *t, struct tf_slot *s, unsigned kind, unsigned reason,
                           uint64_t addr, uint64_t value)
{
    tb_fill_fields(t, s, kind, reason, addr, value);
    tb_set_compact(t, !t->injecting);
    tb_publish(t, s + 2);
}

/* A full record that takes its stamp and CPU from the thread's previous
 * stamped record (no clock read: TF_STAMP_REPEATED). */
static inline void tb_fill_repeated(struct tb_thread *t, struct tf_slot *s, unsigned kind, unsigned reason,
                                    uint64_t addr, uint64_t value)
{
    struct tf_record *r = (struct tf_record *)(void *)s;
    r->tsc = t->last_tsc;
    r->aux = t->last_aux;
    if (TB_UNLIKELY(t->injecting))
        t->truth[s - t->base] = t->last_raw;
    tb_fill(t, s, kind, reason, addr, value);
}

/* A compact access record (trace_format.h) `step` ticks after the
 * previous record, on its CPU. */
static inline void tb_fill_access(struct tb_thread *t, struct tf_slot *s, unsigned kind, unsigned size,
                                  uint64_t step, uint64_t addr, uint64_t value)
{
    s->head = tf_access_head(kind == TF_EV_WRITE, size, step, addr);
    s->value = value;
    tb_publish(t, s + 1);
}

/* Records below this many TSC ticks of the thread's previous stamp on the
 * same CPU are raised above it (see tb_stamp_keep); a larger step back is left
 * for the tools to see. */
#define TB_RAISE_MAX 4096u

/* Counts a raised stamp (cold). */
void tb_raised(struct tb_thread *t);

/* The injected stamp (TMTRACE_SKEW) of a record whose true stamp is `truth`,
 * kept above the thread's previous injected stamp on the same CPU (cold). */
uint64_t tb_inject(struct tb_thread *t, uint64_t truth, uint32_t aux, uint32_t prev_aux);

/* Keeps a stamp read (unordered) on `aux` in the thread's order: on the
 * same CPU a stamp that does not exceed the previous one by a step of at
 * most TB_RAISE_MAX ticks is raised to previous + 1, so the thread's stamps
 * on one CPU stay strictly increasing, which is what the recorded program
 * order means. Stamps on different CPUs are never compared, so a skew
 * between CPUs (real or injected) reaches the trace untouched. */
static inline uint64_t tb_stamp_keep(struct tb_thread *t, uint64_t tsc, uint32_t aux)
{
    if (TB_UNLIKELY(aux == t->last_aux && tsc - t->last_raw - 1 >= UINT64_MAX - TB_RAISE_MAX)) {
        tsc = t->last_raw + 1;
        tb_raised(t);
    }
    t->last_raw = tsc;
    t->last_aux = aux;
    return tsc;
}

/* The unordered stamp of one record and its CPU; in the record-only
 * measuring build (TMT_STAMP_COUNTER, clock.h) the thread's previous stamp +
 * 1 on CPU 0, which no test of the inline paths raises or sends out of line. */
static inline uint64_t tb_stamp_read(const struct tb_thread *t, uint32_t *aux)
{
    if (TMT_STAMP_COUNTER) {
        *aux = 0;
        return t->last_raw + 1;
    }
    return clock_rdtsc_on_cpu(aux);
}

/* Reads the clock for one record: the ordered rdtscp when `ordered` (or the
 * CPU has no rdpid), else the unordered rdtsc with its CPU (an unordered
 * read may execute before an earlier stamp of the same thread, hence
 * tb_stamp_keep). */
static inline uint64_t tb_clock(const struct tb_thread *t, int ordered, uint32_t *aux)
{
    if (TMT_STAMP_COUNTER)
        return tb_stamp_read(t, aux);
    return TB_UNLIKELY(ordered || !t->fast_stamp) ? clock_rdtscp(aux) : clock_rdtsc_on_cpu(aux);
}

/* The unordered stamp of a compact record, read into *tsc and *aux: 1 when
 * it is the common case, on the previous record's CPU 1 to `max` ticks
 * after it (then it is the thread's last stamp and *step its distance from
 * the previous record's), 0 when the caller must hand it to the out-of-line
 * path (tb_boundary_late, tb_access_late), which raises a stamp that does
 * not exceed the previous one. Only for a thread whose `cend` is set: the
 * clock is not injected, so the stamp as read and as recorded are one
 * (last_raw == last_tsc) and the step test alone finds what to raise. */
static inline int tb_stamp_next(struct tb_thread *t, uint64_t max, uint64_t *tsc, uint32_t *aux, uint64_t *step)
{
    *tsc = tb_stamp_read(t, aux);
    *step = *tsc - t->last_tsc;
    if (TB_UNLIKELY(*aux != t->last_aux || *step - 1 >= max))
        return 0;
    t->last_raw = *tsc;
    t->last_tsc = *tsc;
    return 1;
}

/* The full record in slot `s` stamped `tsc` (as read) on `aux`; returns the
 * (injected) TSC. */
static inline uint64_t tb_emit_at(struct tb_thread *t, struct tf_slot *s, uint64_t tsc, uint32_t aux,
                                  uint32_t prev_aux, unsigned kind, unsigned reason, uint64_t addr,
                                  uint64_t value)
{
    struct tf_record *r = (struct tf_record *)(void *)s;
    if (TB_UNLIKELY(t->injecting)) {
        t->truth[s - t->base] = tsc;
        tsc = tb_inject(t, tsc, aux, prev_aux);
    }
    t->last_tsc = tsc;
    r->tsc = tsc;
    r->aux = aux;
    tb_fill(t, s, kind, reason, addr, value);
    return tsc;
}

/* One record stamped `tsc` (as read) on `aux`, in slot `s`: compact
 * (`head`, trace_format.h, with the step added at bit 8) when `fits` and
 * the stamp is on the previous record's CPU within TF_BOUNDARY_STEP_MAX
 * ticks of it, else full. Returns the (injected) TSC. */
static inline uint64_t tb_emit_as_at(struct tb_thread *t, struct tf_slot *s, unsigned kind, unsigned reason,
                                     uint64_t head, int fits, uint64_t addr, uint64_t value, uint64_t tsc,
                                     uint32_t aux)
{
    uint32_t prev_aux = t->last_aux;
    uint64_t prev = t->last_tsc;
    tsc = tb_stamp_keep(t, tsc, aux);
    if (fits && TB_LIKELY(t->compact && aux == prev_aux && tsc - prev <= TF_BOUNDARY_STEP_MAX)) {
        t->last_tsc = tsc;
        s->head = head | (tsc - prev) << 8;
        s->value = addr;
        tb_publish(t, s + 1);
        return tsc;
    }
    return tb_emit_at(t, s, tsc, aux, prev_aux, kind, reason, addr, value);
}

/* Stamps one record (tb_emit_as_at), ordered when asked; returns the
 * (injected) TSC, or 0 if dropped. */
static inline uint64_t tb_emit_as(struct tb_thread *t, int ordered, unsigned kind, unsigned reason, uint64_t head,
                                  int fits, uint64_t addr, uint64_t value)
{
    struct tf_slot *s = tb_slot(t);
    if (TB_UNLIKELY(s == NULL))
        return 0;
    uint32_t aux;
    uint64_t tsc = tb_clock(t, ordered, &aux);
    return tb_emit_as_at(t, s, kind, reason, head, fits, addr, value, tsc, aux);
}

/* A full record (FALLBACK, SERIAL; tb_full's out-of-line path). */
static inline uint64_t tb_emit(struct tb_thread *t, int ordered, unsigned kind, unsigned reason, uint64_t addr,
                               uint64_t value)
{
    return tb_emit_as(t, ordered, kind, reason, 0, 0, addr, value);
}

/* The out-of-line halves of tb_boundary (trace_buffer.c), the same split
 * as tb_access_slow / tb_access_late; a START's also do its periodic work
 * (tb_tick). */
void tb_boundary_slow(struct tb_thread *t, unsigned kind, uint64_t head, int fits, uint64_t addr, uint64_t value);
void tb_boundary_late(struct tb_thread *t, unsigned kind, uint64_t head, uint64_t addr, uint64_t value, uint64_t tsc,
                      uint32_t aux);

/* A START or COMMIT record. Inline, it takes the common case: a compact
 * record (`fits`, head `head`) in a chunk with room, no clock faults
 * injected, a stamp that is the common case of tb_stamp_next; everything
 * else goes to
 * tb_boundary_slow / tb_boundary_late as a tail call, so that the callers'
 * path saves no registers. A START made here notes whether a read-only
 * COMMIT may fold into it (`fold`: its instance is the one before it plus
 * one; tb_commit_fold); the out-of-line halves leave no such note. */
static inline void tb_boundary(struct tb_thread *t, unsigned kind, uint64_t head, int fits, int fold,
                               uint64_t addr, uint64_t value)
{
    struct tf_slot *s = t->cur;
    if (TB_UNLIKELY(s >= t->bend || !fits)) {
        tb_boundary_slow(t, kind, head, fits, addr, value);
        return;
    }
    uint32_t aux;
    uint64_t tsc, step;
    if (TB_UNLIKELY(!tb_stamp_next(t, TF_BOUNDARY_STEP_MAX, &tsc, &aux, &step))) {
        tb_boundary_late(t, kind, head, addr, value, tsc, aux);
        return;
    }
    s->head = head | step << 8;
    s->value = addr;
    tb_publish(t, s + 1);
    if (kind != TF_EV_START)
        return;
    t->fold_end = fold ? s + 1 : NULL;
    if (TB_UNLIKELY(tsc >= t->tick_tsc))
        tb_tick(t, tsc);
}

/* The out-of-line halves of tb_full (trace_buffer.c), as tb_boundary's. */
void tb_full_slow(struct tb_thread *t, unsigned kind, unsigned reason, uint64_t addr, uint64_t value);
void tb_full_late(struct tb_thread *t, unsigned kind, unsigned reason, uint64_t addr, uint64_t value, uint64_t tsc,
                  uint32_t aux);

/* A stamped full record (ALLOC, ABORT), unordered. Inline, it takes the
 * common case: a chunk with room and a record in it, no clock faults
 * injected (`bend` set: the compact state stands, no truth is kept), a
 * stamp that needs no raise (tb_stamp_keep); everything else goes to
 * tb_full_slow / tb_full_late as a tail call. */
static inline void tb_full(struct tb_thread *t, unsigned kind, unsigned reason, uint64_t addr, uint64_t value)
{
    struct tf_slot *s = t->cur;
    if (TB_UNLIKELY(s >= t->bend)) {
        tb_full_slow(t, kind, reason, addr, value);
        return;
    }
    uint32_t aux;
    uint64_t tsc = tb_stamp_read(t, &aux);
    if (TB_UNLIKELY(aux == t->last_aux && tsc - t->last_raw - 1 >= UINT64_MAX - TB_RAISE_MAX)) {
        tb_full_late(t, kind, reason, addr, value, tsc, aux);
        return;
    }
    t->last_raw = tsc;
    t->last_tsc = tsc;
    t->last_aux = aux;
    struct tf_record *r = (struct tf_record *)(void *)s;
    r->tsc = tsc;
    r->aux = aux;
    tb_fill_fields(t, s, kind, reason, addr, value);
    tb_publish(t, s + 2);
}

/* Sets the level of the attempt that starts (`sampled` threads) and
 * returns its START flags. TMTRACE_DETAIL: a xorshift64 step, whose high
 * half scaled to [0, N) is 0 for one attempt in N, whatever came before.
 * Level all while buffers run short: the attempt is recorded as at level tx
 * (its write set and abort address explain it, at a fraction of the
 * records), which keeps whole attempts in the trace where the alternative
 * is to drop records (docs/tracer.md, "Shedding accesses at `all`"). */
static inline unsigned tb_start_choose(struct tb_thread *t, unsigned flags)
{
    if (t->detail == 0) {
        t->level = t->shedding ? CONFIG_EVENTS_TX : CONFIG_EVENTS_ALL;
        if (!t->shedding)
            return flags;
        __atomic_store_n(&t->shed, t->shed + 1, __ATOMIC_RELAXED); /* the thread table sums it */
        return flags | TF_START_SHED;
    }
    uint64_t x = t->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    t->rng = x;
    int chosen = ((x >> 32) * t->detail) >> 32 == 0;
    t->level = chosen ? CONFIG_EVENTS_ALL : CONFIG_EVENTS_TX;
    return flags | (chosen ? TF_START_DETAIL : 0);
}

/* A transaction attempt starts (take the stamp before _xbegin). `flags` are
 * enum tf_start_flags; `attempt` counts retries of this transaction from 0. */
static inline void tb_ev_start(struct tb_thread *t, uint32_t site, uint64_t instance, unsigned flags,
                               unsigned attempt)
{
    if (t->level == CONFIG_EVENTS_OFF)
        return;
    if (TB_UNLIKELY(t->sampled))
        flags = tb_start_choose(t, flags);
    t->site = (uint16_t)site; /* site ids fit 16 bits (SITE_MAX), as in a full record */
    /* A read-only COMMIT may fold into this START if the reader can tell
     * its instance from the one before it. */
    int fold = instance == t->instance + 1;
    t->instance = instance;
    tb_boundary(t, TF_EV_START, tf_start_head(flags, 0, t->site, attempt),
                tf_start_fits(flags, attempt, instance), fold, instance, tf_start_value(flags, attempt));
}

/* The out-of-line halves of tb_access (trace_buffer.c); both return
 * `value`, so that tb_access's callers end in a tail call and their inline
 * path saves no registers. tb_access_slow records the access from scratch;
 * tb_access_late records it with the stamp tb_access already read (its
 * slot is free and the record fits, but the stamp is on another CPU than
 * the previous record, too far from it, or not above it). */
uint64_t tb_access_slow(struct tb_thread *t, unsigned kind, unsigned size, uint64_t addr, uint64_t value);
uint64_t tb_access_late(struct tb_thread *t, unsigned kind, unsigned size, uint64_t addr, uint64_t value,
                        uint64_t tsc, uint32_t aux);

/* A read or write record (the level is the caller's to test); returns
 * `value`. Inline, it takes the common case: a compact record in a chunk
 * with room, no clock faults injected, and with TMTRACE_STAMP=each a stamp
 * that is the common case of tb_stamp_next. Everything else goes to
 * tb_access_slow / tb_access_late as a tail call. */
static inline uint64_t tb_access(struct tb_thread *t, unsigned kind, unsigned size, uint64_t addr, uint64_t value)
{
    struct tf_slot *s = t->cur;
    /* cend is NULL at a chunk's start and whenever clock faults are injected. */
    if (TB_UNLIKELY(s >= t->cend || !tf_access_fits(addr, size)))
        return tb_access_slow(t, kind, size, addr, value);
    uint64_t step = 0;
    if (TB_LIKELY(t->stamp_each)) {
        uint32_t aux;
        uint64_t tsc;
        if (TB_UNLIKELY(!tb_stamp_next(t, TF_ACCESS_STEP_MAX, &tsc, &aux, &step)))
            return tb_access_late(t, kind, size, addr, value, tsc, aux);
    }
    tb_fill_access(t, s, kind, size, step, addr, value);
    return value;
}

/* Whether reads and writes are recorded (level all): the accessors test it
 * first and keep the recording off their untraced path. */
static inline int tb_records_accesses(const struct tb_thread *t) { return t->level == CONFIG_EVENTS_ALL; }

static inline void tb_ev_read(struct tb_thread *t, const volatile void *addr, uint64_t value, unsigned size)
{
    if (!tb_records_accesses(t))
        return;
    (void)tb_access(t, TF_EV_READ, size, (uint64_t)(uintptr_t)addr, value);
}

static inline void tb_ev_write(struct tb_thread *t, const volatile void *addr, uint64_t value, unsigned size)
{
    if (!tb_records_accesses(t))
        return;
    (void)tb_access(t, TF_EV_WRITE, size, (uint64_t)(uintptr_t)addr, value);
}

/* A read-only COMMIT folded into the compact START just before `cur`
 * (trace_format.h, tf_start_fold): one 8-byte store rewrites the START's
 * value, so that a snapshot copies the START alone or both, and the chunk
 * counts one record more in the same slots. A stamp that the common case
 * of tb_stamp_next does not take makes a COMMIT of its own. */
static inline void tb_commit_fold(struct tb_thread *t, uint32_t read_set)
{
    uint32_t aux;
    uint64_t tsc, step;
    t->fold_end = NULL;
    if (TB_UNLIKELY(!tb_stamp_next(t, TF_BOUNDARY_STEP_MAX, &tsc, &aux, &step))) {
        tb_boundary_late(t, TF_EV_COMMIT, tf_commit_head(0, read_set, 0), 0, tf_commit_value(read_set, 0), tsc,
                         aux);
        return;
    }
    __atomic_store_n(&t->cur[-1].value, tf_start_fold(step, read_set), __ATOMIC_RELAXED);
    __atomic_store_n(&t->fulls, t->fulls - 1, __ATOMIC_RELAXED);
}

/* At the commit's linearisation point: software commits with the write
 * version taken and the locks still held; hardware commits after _xend.
 * The stamp is unordered. It cannot be taken after the write-back that
 * follows it (it retires before those stores become visible), so an attempt
 * that aborts on this commit's version reads the clock after it; it may be
 * taken before the write version, by at most the reorder window, which
 * tmcheck allows for (CA_UNORDERED_SLACK_NS). An attempt that found the
 * locks is matched to the holder by identity, not by time. An ordered
 * rdtscp here cost more than the rest of the record (docs/tracer.md,
 * "Stamps"). */
static inline void tb_ev_commit(struct tb_thread *t, uint64_t write_version, uint32_t read_set,
                                uint32_t write_set)
{
    if (t->level == CONFIG_EVENTS_OFF)
        return;
    /* Right after its compact START (`cur` one slot past it, before the
     * chunk's end): a read-only commit folds into that slot. */
    if (TB_LIKELY((write_version | write_set | read_set >> 16) == 0 && t->cur == t->fold_end && t->cur < t->bend)) {
        tb_commit_fold(t, read_set);
        return;
    }
    tb_boundary(t, TF_EV_COMMIT, tf_commit_head(0, read_set, write_set), ((read_set | write_set) >> 16) == 0, 0,
                write_version, tf_commit_value(read_set, write_set));
}

/* The COMMIT of a software update commit, whose tb_ev_wset follows after
 * the locks are released: the COMMIT is stamped here and made part of the
 * chunk there, at `tx` with the write set it carries (trace_format.h), in
 * one publication (a snapshot never sees one without the other), at `all`
 * alone; nothing else may be recorded in between. Else (a COMMIT that is
 * not compact, a chunk without room) tb_ev_commit's. At `tx` the room for
 * the write set in its longest form is kept now, so that tb_ev_wset finds
 * it. */
static inline void tb_ev_commit_carry(struct tb_thread *t, uint64_t write_version, uint32_t read_set,
                                      uint32_t write_set)
{
    struct tf_slot *s = t->cur;
    size_t room = t->level == CONFIG_EVENTS_TX ? 1 + tf_wset_slots(write_set) : 1;
    if (t->level == CONFIG_EVENTS_OFF || write_set == 0 || s >= t->bend || (read_set >> 16) != 0 ||
        write_set > TF_WSET_MAX || (size_t)(t->end - s) < room) {
        tb_ev_commit(t, write_version, read_set, write_set);
        return;
    }
    uint32_t aux;
    uint64_t tsc, step;
    uint64_t head = tf_commit_head(0, read_set, write_set);
    if (TB_UNLIKELY(!tb_stamp_next(t, TF_BOUNDARY_STEP_MAX, &tsc, &aux, &step))) {
        tb_boundary_late(t, TF_EV_COMMIT, head, write_version, tf_commit_value(read_set, write_set), tsc, aux);
        return;
    }
    /* Kept in the thread's own (cached) line, not stored into the chunk:
     * inside the commit's locked window a store to a chunk line not yet in
     * the cache would hold back the release stores behind it (x86 keeps
     * stores in order) while other attempts wait on the stripes. */
    t->carry_rec.head = head | step << 8;
    t->carry_rec.value = write_version;
    t->carry = s;
}

/* An attempt aborted: `reason` is enum tmt_abort_reason, `where` the
 * conflicting address (0 if unknown), `found` the hardware status word
 * (reason htm) or what an STM attempt found on the stripe (tf_abort_held,
 * or the version). */
static inline void tb_ev_abort(struct tb_thread *t, unsigned reason, uint64_t where, uint64_t found)
{
    if (t->level == CONFIG_EVENTS_OFF)
        return;
    tb_full(t, TF_EV_ABORT, reason, where, found);
}

/* A commit's write set, as its redo log holds it: `n` entries `stride`
 * bytes apart, each with its word address at `words` and its byte mask at
 * `masks` (the same entry's). Out of line: a chunk that has not room for
 * all of it, clock faults injected (trace_buffer.c). */
void tb_wset_slow(struct tb_thread *t, const uint64_t *words, const uint32_t *masks, size_t stride, uint32_t n);

/* Packs a redo log's `n` words into `out` in the run form (trace_format.h):
 * a word right after the one before it, with the same mask, joins that
 * one's entry. Returns the entries, or 0 when a word is too high for the
 * form (then `out` is to be refilled in the first). */
static inline uint32_t tb_wset_pack_runs(uint64_t *restrict out, const uint64_t *words, const uint32_t *masks,
                                         size_t stride, uint32_t n)
{
    /* The entry being built stays in a register until a word does not
     * join it. */
    uint64_t w = *words, high = w, next = w + 8;
    uint32_t mask = *masks & 0xffu, e = 0;
    uint64_t cur = tf_wset_pack_run(w, mask, 0);
    for (uint32_t i = 1; i < n; i++) {
        words = (const uint64_t *)(const void *)((const char *)words + stride);
        masks = (const uint32_t *)(const void *)((const char *)masks + stride);
        w = *words;
        uint32_t m = *masks & 0xffu;
        high |= w;
        if (w == next && m == mask && tf_wset_run_extra(cur) < TF_WSET_RUN_MAX) {
            cur += (uint64_t)1 << TF_WSET_RUN_SHIFT;
        } else {
            out[e++] = cur;
            cur = tf_wset_pack_run(w, m, 0);
            mask = m;
        }
        next = w + 8;
    }
    out[e++] = cur;
    return high < TF_WSET_RUN_WORDS ? e : 0;
}

/* A write set of one or two words packed into `out`, one entry each (a
 * word in a run of its own packs as in the first form); returns the OR of
 * the words, which is below TF_WSET_RUN_WORDS when the run form has room
 * for them. Without a look for runs: two words take one slot either way. */
static inline uint64_t tb_wset_pack_small(uint64_t *restrict out, const uint64_t *words, const uint32_t *masks,
                                          size_t stride, uint32_t n)
{
    uint64_t w1 = n == 2 ? *(const uint64_t *)(const void *)((const char *)words + stride) : 0;
    out[0] = tf_wset_pack(words[0], masks[0]);
    if (n == 2)
        out[1] = tf_wset_pack(w1, *(const uint32_t *)(const void *)((const char *)masks + stride));
    return words[0] | w1;
}

/* The same in the first form, one entry per word (cold: a word at or above
 * TF_WSET_RUN_WORDS). */
void tb_wset_pack_words(uint64_t *out, const uint64_t *words, const uint32_t *masks, size_t stride, uint32_t n);

/* A WSET record of `n` words (at most TF_WSET_MAX) in slot `s`, which has
 * room for it whole (in the first form, the longer): the redo log copied in
 * one pass, the stamp and CPU of the record before it (no clock read).
 * `any` (a constant) is 0 on the inline path, which comes only after a
 * record of this chunk with no clock faults injected (`bend` set), so the
 * chunk's compact state stands and no truth is kept; 1 on the out-of-line
 * path, which may start a chunk. */
static inline void tb_wset_fill(struct tb_thread *t, struct tf_slot *s, const uint64_t *words, const uint32_t *masks,
                                size_t stride, uint32_t n, int any)
{
    uint64_t *out = (uint64_t *)(void *)(s + 2);
    /* Two words take one slot in either form: the first, without a look
     * for runs. */
    uint32_t e = 0;
    if (n <= 2) {
        (void)tb_wset_pack_small(out, words, masks, stride, n);
    } else {
        e = tb_wset_pack_runs(out, words, masks, stride, n);
        if (TB_UNLIKELY(e == 0))
            tb_wset_pack_words(out, words, masks, stride, n);
    }
    uint32_t entries = e ? e : n;
    if (entries & 1)
        out[entries] = 0;
    struct tf_record *r = (struct tf_record *)(void *)s;
    r->tsc = t->last_tsc;
    r->aux = t->last_aux;
    if (any && TB_UNLIKELY(t->injecting))
        t->truth[s - t->base] = t->last_raw;
    r->kind = TF_EV_WSET;
    r->reason = 0;
    r->site = t->site;
    r->addr = n;
    r->value = e;
    __atomic_store_n(&t->fulls, t->fulls + 2 + (int64_t)tf_wset_slots(entries) - (int64_t)n, __ATOMIC_RELAXED);
    if (any)
        tb_set_compact(t, !t->injecting);
    tb_publish(t, s + 2 + tf_wset_slots(entries));
}

/* The COMMIT stashed by tb_ev_commit_carry joins the chunk in its slot `c`
 * alone, without a write set. */
static inline void tb_carry_publish(struct tb_thread *t, struct tf_slot *c)
{
    *c = t->carry_rec;
    tb_publish(t, c + 1);
}

/* The write set of the COMMIT tb_ev_commit_carry filled, `n` words (its
 * write-set size), in the slots after it, and both join the chunk; 0 when
 * the COMMIT cannot carry it (a word too high for runs, too many entries):
 * it joins the chunk alone, and the write set is to be recorded after it
 * as a WSET record. */
static inline int tb_wset_carry(struct tb_thread *t, const uint64_t *words, const uint32_t *masks, size_t stride,
                                uint32_t n)
{
    struct tf_slot *c = t->carry;
    uint64_t *out = (uint64_t *)(void *)(c + 1);
    t->carry = NULL;
    c->value = t->carry_rec.value;
    uint32_t e;
    if (n <= 2)
        e = tb_wset_pack_small(out, words, masks, stride, n) < TF_WSET_RUN_WORDS ? n : 0;
    else
        e = tb_wset_pack_runs(out, words, masks, stride, n);
    if (TB_UNLIKELY(e == 0 || e > TF_COMMIT_CARRY_MAX)) {
        tb_carry_publish(t, c);
        return 0;
    }
    if (e & 1)
        out[e] = 0;
    c->head = tf_commit_carry(t->carry_rec.head, e);
    __atomic_store_n(&t->fulls, t->fulls + (int64_t)tf_wset_slots(e) - (int64_t)n, __ATOMIC_RELAXED);
    tb_publish(t, c + 1 + tf_wset_slots(e));
    return 1;
}

/* The write set of the commit just recorded, after its locks were released
 * (nobody waits on it), by an attempt whose writes were not recorded: WSET
 * records (trace_format.h). Inline when the chunk has room for it whole,
 * so that the traced commit makes no call for it. */
static inline void tb_ev_wset(struct tb_thread *t, const uint64_t *words, const uint32_t *masks, size_t stride,
                              uint32_t n)
{
    if (t->level != CONFIG_EVENTS_TX) {
        if (t->carry != NULL) { /* at `all`: the COMMIT alone, its writes recorded before it */
            tb_carry_publish(t, t->carry);
            t->carry = NULL;
        }
        return;
    }
    if (n == 0)
        return;
    if (t->carry != NULL && tb_wset_carry(t, words, masks, stride, n))
        return;
    struct tf_slot *s = t->cur;
    /* A record starts before `end` and ends on it at the latest. `bend`
     * is `end` with no clock faults injected and a record in the chunk
     * (the COMMIT just made), else NULL (tb_set_compact). */
    if (TB_UNLIKELY(n > TF_WSET_MAX || s >= t->bend || (size_t)(t->end - s) < 1 + tf_wset_slots(n))) {
        tb_wset_slow(t, words, masks, stride, n);
        return;
    }
    tb_wset_fill(t, s, words, masks, stride, n, 0);
}

/* A record of `kind` that repeats the stamp of the one before it (none
 * when `addr` is 0). */
static inline void tb_ev_after(struct tb_thread *t, unsigned kind, uint64_t addr, uint64_t value)
{
    if (t->level == CONFIG_EVENTS_OFF || addr == 0)
        return;
    struct tf_slot *s = tb_slot(t);
    if (TB_UNLIKELY(s == NULL))
        return;
    tb_fill_repeated(t, s, kind, 0, addr, value);
}

/* The code address of the access at which the attempt just recorded as
 * aborted found its conflict (a return address into the program), right
 * after its ABORT; no clock read. */
static inline void tb_ev_abort_pc(struct tb_thread *t, uint64_t pc) { tb_ev_after(t, TF_EV_ABORT_PC, pc, 0); }

/* A frame of the program above the access of the ABORT_PC just recorded:
 * its return address, `depth` (1, 2, ...) frames out. */
static inline void tb_ev_abort_stack(struct tb_thread *t, uint64_t pc, unsigned depth)
{
    tb_ev_after(t, TF_EV_ABORT_STACK, pc, depth);
}

/* tmt_malloc returned `block` of `size` bytes to the code at `caller` (a
 * return address), so that tools can name heap addresses by where they
 * were allocated. Never inside a real hardware transaction. */
static inline void tb_ev_alloc(struct tb_thread *t, const void *block, uint64_t size, const void *caller)
{
    if (t->level == CONFIG_EVENTS_OFF)
        return;
    tb_full(t, TF_EV_ALLOC, 0, (uint64_t)(uintptr_t)block, tf_alloc_value(size, (uint64_t)(uintptr_t)caller));
}

/* The hardware path gave up on this transaction; `why` is enum tf_fallback_reason. */
static inline void tb_ev_fallback(struct tb_thread *t, unsigned why, uint32_t htm_status)
{
    if (t->level == CONFIG_EVENTS_OFF)
        return;
    tb_emit(t, 0, TF_EV_FALLBACK, why, 0, htm_status);
}

/* The attempt runs in serial mode from here (all others excluded) until its
 * COMMIT or ABORT; `why` is enum tf_serial_reason, `conflicts` the conflict
 * aborts of the transaction before it, `value` TF_SERIAL_UNCOUNTED or 0.
 * `ordered` when it waited for other transactions: the stamp must follow
 * that wait. */
static inline void tb_ev_serial(struct tb_thread *t, unsigned why, uint64_t conflicts, uint64_t value, int ordered)
{
    if (t->level == CONFIG_EVENTS_OFF)
        return;
    tb_emit(t, ordered, TF_EV_SERIAL, why, conflicts, value);
}

#endif
