/*
 * trace_buffer.c - the records the inline hooks of trace_buffer.h hand out
 * of line, a START's periodic work (in-run clock samples, taken by
 * clock_sample.c; forced migrations, made by skew.c), injected stamps, and
 * the event path's measured cost per record.
 *
 * Owns: the out-of-line halves of the hooks (tb_access_slow/late,
 * tb_boundary_slow/late, tb_full_slow/late, tb_wset_slow: a write set
 * split over chunks), the tick schedule of a thread (tb_tick), the raised
 * and injected stamps, and tb_event_cost_ns.
 *
 * Never: takes a lock or allocates on a record's path; when a chunk is full
 * it goes through tb_chunk_full / tb_hand_over (tb_threads.c), which own
 * hand-over and drops. Runs on the recording threads only.
 */
#include "trace_buffer.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock_sample.h"
#include "skew.h"
#include "tb_threads.h"

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
    tb_fill_repeated(t, s, kind, size, addr, value);
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

/* No read-only COMMIT folds into a START made here (tb_boundary's note). */
void tb_boundary_slow(struct tb_thread *t, unsigned kind, uint64_t head, int fits, uint64_t addr, uint64_t value)
{
    t->fold_end = NULL;
    boundary_done(t, kind, tb_emit_as(t, 0, kind, 0, head, fits, addr, value));
}

void tb_boundary_late(struct tb_thread *t, unsigned kind, uint64_t head, uint64_t addr, uint64_t value, uint64_t tsc,
                      uint32_t aux)
{
    t->fold_end = NULL;
    boundary_done(t, kind, tb_emit_as_at(t, t->cur, kind, 0, head, 1, addr, value, tsc, aux));
}

void tb_full_slow(struct tb_thread *t, unsigned kind, unsigned reason, uint64_t addr, uint64_t value)
{
    (void)tb_emit(t, 0, kind, reason, addr, value);
}

void tb_full_late(struct tb_thread *t, unsigned kind, unsigned reason, uint64_t addr, uint64_t value, uint64_t tsc,
                  uint32_t aux)
{
    (void)tb_emit_as_at(t, t->cur, kind, reason, 0, 0, addr, value, tsc, aux);
}

/* ---- write sets tb_ev_wset does not take inline ------------------------- */

/* Steps a redo log's two columns on by k entries. */
static void wset_skip(const uint64_t **words, const uint32_t **masks, size_t stride, size_t k)
{
    *words = (const uint64_t *)(const void *)((const char *)*words + k * stride);
    *masks = (const uint32_t *)(const void *)((const char *)*masks + k * stride);
}

void tb_wset_pack_words(uint64_t *out, const uint64_t *words, const uint32_t *masks, size_t stride, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        out[i] = tf_wset_pack(*words, *masks);
        wset_skip(&words, &masks, stride, 1);
    }
}

/* Whatever the chunk has room for, in records of at most TF_WSET_MAX
 * words; the rest in the chunks after it. A word that finds no chunk is
 * dropped and counted, as any record is. */
void tb_wset_slow(struct tb_thread *t, const uint64_t *words, const uint32_t *masks, size_t stride, uint32_t n)
{
    while (n) {
        struct tf_slot *s = tb_slot(t);
        /* Words after the record within the chunk (`end` is its last slot). */
        size_t room = s == NULL ? 0 : 2 * (size_t)(t->end - s - 1);
        if (room == 0 && s != NULL && tb_chunk_full(t) != NULL)
            continue; /* room for the record alone: the words go to a new chunk */
        if (room == 0) {
            wset_skip(&words, &masks, stride, 1);
            n--;
            continue;
        }
        uint32_t k = n < TF_WSET_MAX ? n : TF_WSET_MAX;
        if (k > room)
            k = (uint32_t)room;
        tb_wset_fill(t, s, words, masks, stride, k, 1);
        wset_skip(&words, &masks, stride, k);
        n -= k;
    }
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

/* The in-run clock sample joins the thread's chunk. */
static void take_sample(struct tb_thread *t)
{
    struct tf_sample s;
    if (!cs_inrun(config.clock, t->thread_id, &s))
        return;
    if (t->chunk != NULL && t->chunk->nsamples == TB_CHUNK_SAMPLES)
        tb_hand_over(t);
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

/* One calibration run: `n` read records through the real inline path into
 * a scratch buffer of 2n slots (unordered stamps when `fast`), in ns per
 * record. */
static double tb_cost_run(struct tf_slot *buf, size_t n, int fast)
{
    struct tb_thread t;
    memset(&t, 0, sizeof t);
    t.base = t.cur = buf;
    t.end = buf + 2 * n - 1;
    t.level = CONFIG_EVENTS_ALL;
    t.stamp_each = config.stamp == CONFIG_STAMP_EACH;
    t.fast_stamp = (uint8_t)fast;
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
    int fast = clock_has_rdpid();
    for (int i = 0; i < RUNS; i++)
        r[i] = tb_cost_run(buf, N, fast);
    free(buf);
    qsort(r, RUNS, sizeof r[0], tb_cmp_double);
    return r[RUNS / 2];
}

