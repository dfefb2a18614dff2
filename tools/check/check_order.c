/*
 * check_order.c - program order against timestamp order, per thread.
 *
 * Owns: the temporal check (a thread's stamps must grow in program order),
 * the bounded timestamp-ordered view of each thread (its last
 * CA_REORDER_WINDOW events: a sorted ring and a heap) through which the grammar
 * (S (R|W)* (C|A))* and the out-of-place count are checked (the grammar
 * starts again at the next S after a hole in program order), and the late
 * starts and premature ends of an attempt; the views (struct ca_view) of
 * one source's threads (all of them in ca_event, or one source's in the
 * merge's threads: check_driver.c), which add their counts at the end.
 * Never: looks at another thread's events; lets two threads reach one view.
 */
#include "check_state.h"

#include <stdlib.h>

#include "error.h"
#include "trace_index.h"   /* ti_grow */

/* The per-event steps are always inline: a chunk's loop keeps its view in
 * registers (check_order_run). */
#define CA_HOT static inline __attribute__((always_inline))

CA_HOT void grammar_step(struct ca_view *v, unsigned kind)
{
    switch (v->gstate) {
    case G_IN:
        if (kind == TF_EV_COMMIT || kind == TF_EV_ABORT)
            v->gstate = G_OUT;
        else if (kind == TF_EV_START)
            v->grammar++;   /* a start inside a transaction: break, resynchronise at this S */
        break;
    case G_OUT:
        if (kind == TF_EV_START)
            v->gstate = G_IN;
        else {
            v->grammar++;
            v->gstate = G_SKIP;
        }
        break;
    default: /* G_SKIP: wait for the next start */
        if (kind == TF_EV_START)
            v->gstate = G_IN;
        break;
    }
}

/* Whether bit `kind` of `mask` is set (kinds past 63: no). */
static inline int kind_in(uint64_t mask, unsigned kind) { return kind < 64 && (mask >> kind & 1); }

/* FALLBACK and ALLOC records may come between attempts, WSET, ABORT_PC
 * and ABORT_STACK follow an attempt's end: not part of the grammar. */
#define NOT_GRAMMAR (TF_EV_BIT(TF_EV_FALLBACK) | TF_EV_BIT(TF_EV_ALLOC) | TF_EV_REPEATS_STAMP)

CA_HOT void emit(struct ca_view *v, const struct ro_ent *e)
{
    uint64_t prog = e->prog & CA_PROG_INDEX;
    unsigned kind = (unsigned)(e->prog >> 56);
    v->out_of_place += prog != v->emitted;
    v->emitted++;
    v->window_overflows += e->ts < v->last_emit_ts;   /* 0 before the first: no stamp is below */
    v->last_emit_ts = e->ts;
    /* After a hole the attempt it cut, or the one whose S it holds, is
     * not a break of the grammar: wait for the next S (the driver counts
     * them as cut_attempts). */
    if (e->prog & CA_PROG_HOLE)
        v->gstate = G_SKIP;
    if (!kind_in(NOT_GRAMMAR, kind))
        grammar_step(v, kind);
}

/* The view's order: stamp, then push order (prog), which is the order of a
 * sorted ring that inserts an equal stamp after the ones before it. */
static inline int ro_before(const struct ro_ent *a, const struct ro_ent *b)
{
    if (a->ts != b->ts)
        return a->ts < b->ts;
    return (a->prog & CA_PROG_INDEX) < (b->prog & CA_PROG_INDEX);
}

/* The view's out-of-order part: a binary min-heap of n entries in the
 * second half of the view's ring allocation. Returns the new count. */
static uint32_t heap_push(struct ro_ent *h, uint32_t n, struct ro_ent e)
{
    uint32_t i = n;
    while (i > 0) {
        uint32_t up = (i - 1) / 2;
        if (!ro_before(&e, &h[up]))
            break;
        h[i] = h[up];
        i = up;
    }
    h[i] = e;
    return n + 1;
}

/* Removes the heap's top into *top; returns the new count. */
static uint32_t heap_pop(struct ro_ent *h, uint32_t n, struct ro_ent *top)
{
    *top = h[0];
    struct ro_ent x = h[--n];
    uint32_t i = 0;
    for (;;) {
        uint32_t l = 2 * i + 1;
        if (l >= n)
            break;
        uint32_t m = l + 1 < n && ro_before(&h[l + 1], &h[l]) ? l + 1 : l;
        if (!ro_before(&h[m], &x))
            break;
        h[i] = h[m];
        i = m;
    }
    if (n)
        h[i] = x;
    return n;
}

/* Emits the earliest event of the view: the ring's front or the heap's top. */
CA_HOT void view_emit_first(struct ca_view *v)
{
    const uint32_t W = CA_REORDER_WINDOW;
    if (v->hcount && (v->rcount == 0 || ro_before(v->ring + W, &v->ring[v->rhead]))) {
        struct ro_ent e;
        v->hcount = heap_pop(v->ring + W, v->hcount, &e);
        emit(v, &e);
        return;
    }
    emit(v, &v->ring[v->rhead]);
    v->rhead = (v->rhead + 1) % W;
    v->rcount--;
}

/* The view holds the last CA_REORDER_WINDOW events and emits them in
 * timestamp order: stamps in order append to a sorted ring (one
 * comparison), the others go to a heap (a sorted ring's insertion from the
 * back cost the whole window per event after a migration to a lagging
 * CPU), and the earlier of the two fronts leaves first. */
CA_HOT void view_push(struct ca_view *v, uint64_t ts, uint64_t prog, unsigned kind)
{
    const uint32_t W = CA_REORDER_WINDOW;
    if (v->rcount + v->hcount == W)
        view_emit_first(v);
    struct ro_ent e = { ts, prog | (uint64_t)kind << 56 };
    if (v->rcount == 0 || v->ring[(v->rhead + v->rcount - 1) % W].ts <= ts) {
        v->ring[(v->rhead + v->rcount) % W] = e;
        v->rcount++;
    } else {
        v->hcount = heap_push(v->ring + W, v->hcount, e);
    }
}

/* Every event of the view's thread, in program order: the temporal check
 * and the view. */
CA_HOT void view_event(struct ca_view *v, uint64_t repeating, const struct tf_event *ev)
{
    int repeats = kind_in(repeating, ev->kind);
    v->temporal += v->seen && (ev->ts < v->last_ts || (ev->ts == v->last_ts && !repeats));
    uint64_t hole = ca_after_hole(v->seen, v->next_seq, ev->seq) ? CA_PROG_HOLE : 0;
    v->seen = 1;
    v->last_ts = ev->ts;
    v->next_seq = ev->seq + 1;
    view_push(v, ev->ts, v->prog++ | hole, ev->kind);
}

/* The view of thread `id` among a source's (made on its first event). */
static struct ca_view *view_of(struct ca_views *vs, uint32_t id)
{
    id = ca_id_slot(id);
    if (id < vs->n && vs->v[id])
        return vs->v[id];
    if (ti_grow((void **)&vs->v, &vs->n, (size_t)id + 1, sizeof *vs->v) < 0)
        return NULL;
    struct ca_view *v = calloc(1, sizeof *v);
    if (!v || !(v->ring = malloc(2 * CA_REORDER_WINDOW * sizeof *v->ring))) {  /* ring and heap */
        free(v);
        error_set("out of memory");
        return NULL;
    }
    v->id = id;
    return vs->v[id] = v;
}

/* Events of the view's thread, in order, with the view in a local that
 * no pointer reaches (the compiler keeps its fields in registers instead
 * of reloading them after every store into the ring). */
static void view_run(struct ca_view *vp, int repeated_access, const struct tf_event *ev, size_t n)
{
    /* A repeated stamp (TMTRACE_STAMP=boundary) equals the one before it by
     * design; going backwards is still an inconsistency. */
    uint64_t repeating = TF_EV_REPEATS_STAMP;
    if (repeated_access)
        repeating |= TF_EV_BIT(TF_EV_READ) | TF_EV_BIT(TF_EV_WRITE);
    struct ca_view v = *vp;
    for (size_t i = 0; i < n; i++)
        view_event(&v, repeating, &ev[i]);
    *vp = v;
}

/* Events of one source in its order; `vs` its views. */
int ca_order_events(struct ca_state *s, struct ca_views *vs, const struct tf_event *ev, size_t n)
{
    for (size_t i = 0, j; i < n; i = j) {
        struct ca_view *v = view_of(vs, ev[i].thread);
        if (!v)
            return -1;
        for (j = i + 1; j < n && ca_id_slot(ev[j].thread) == v->id;)
            j++;
        view_run(v, s->o.repeated_access, ev + i, j - i);
    }
    return 0;
}

/* The end: each view emptied, its counts added to its thread and the totals. */
int ca_order_finish(struct ca_state *s, struct ca_views *vs, struct th *(*thread_of)(struct ca_state *, uint32_t))
{
    for (size_t i = 0; i < vs->n; i++) {
        struct ca_view *v = vs->v[i];
        if (!v)
            continue;
        while (v->rcount + v->hcount)
            view_emit_first(v);
        struct th *t = thread_of(s, v->id);
        if (!t)
            return -1;
        t->pub.temporal += v->temporal;
        t->pub.grammar += v->grammar;
        t->pub.out_of_place += v->out_of_place;
        t->pub.window_overflows += v->window_overflows;
        s->t.temporal += v->temporal;
        s->t.grammar += v->grammar;
        s->t.out_of_place += v->out_of_place;
        s->t.window_overflows += v->window_overflows;
        v->temporal = v->grammar = v->out_of_place = v->window_overflows = 0;
    }
    return 0;
}

void ca_order_free(struct ca_views *vs)
{
    for (size_t i = 0; i < vs->n; i++) {
        if (vs->v[i])
            free(vs->v[i]->ring);
        free(vs->v[i]);
    }
    free(vs->v);
    vs->v = NULL;
    vs->n = 0;
}

/* A read or write of the open attempt at `ts`. */
void ca_order_access(struct th *t, uint64_t ts)
{
    if (ts < t->start_ts)
        t->late = 1;
    if (ts > t->op_max)
        t->op_max = ts;
    t->has_ops = 1;
}

/* An attempt ends (commit or abort) at `ts`: late start / premature end. */
void ca_order_attempt_end(struct ca_state *s, struct th *t, uint64_t ts)
{
    if (t->late) {
        t->pub.late_starts++;
        s->t.late_starts++;
    }
    if (t->has_ops && t->op_max > ts) {
        t->pub.premature_ends++;
        s->t.premature_ends++;
    }
    t->in_tx = 0;
}
