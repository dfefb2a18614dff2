/*
 * check_order.c - program order against timestamp order, per thread.
 *
 * Owns: the temporal check (a thread's stamps must grow in program order),
 * the bounded timestamp-ordered view of each thread (its last
 * CA_REORDER_WINDOW events: a sorted ring and a heap) through which the grammar
 * (S (R|W)* (C|A))* and the out-of-place count are checked, and the late
 * starts and premature ends of an attempt.
 * Never: looks at another thread's events; allocates (the ring and the
 * heap behind it are the driver's).
 */
#include "check_state.h"

static void grammar_step(struct ca_state *s, struct th *t, unsigned kind)
{
    switch (t->gstate) {
    case G_IN:
        if (kind == TF_EV_COMMIT || kind == TF_EV_ABORT)
            t->gstate = G_OUT;
        else if (kind == TF_EV_START) {
            /* a start inside a transaction: break, resynchronise at this S */
            t->pub.grammar++;
            s->t.grammar++;
        }
        break;
    case G_OUT:
        if (kind == TF_EV_START)
            t->gstate = G_IN;
        else {
            t->pub.grammar++;
            s->t.grammar++;
            t->gstate = G_SKIP;
        }
        break;
    default: /* G_SKIP: wait for the next start */
        if (kind == TF_EV_START)
            t->gstate = G_IN;
        break;
    }
}

static void emit(struct ca_state *s, struct th *t, const struct ro_ent *e)
{
    uint64_t prog = e->prog & ((UINT64_C(1) << 56) - 1);
    unsigned kind = (unsigned)(e->prog >> 56);
    if (prog != t->emitted) {
        t->pub.out_of_place++;
        s->t.out_of_place++;
    }
    t->emitted++;
    if (t->have_emit && e->ts < t->last_emit_ts) {
        t->pub.window_overflows++;
        s->t.window_overflows++;
    }
    t->last_emit_ts = e->ts;
    t->have_emit = 1;
    /* FALLBACK and ALLOC records may come between attempts, WSET,
     * ABORT_PC and ABORT_STACK follow an attempt's end: not part of the
     * grammar. */
    if (kind != TF_EV_FALLBACK && kind != TF_EV_ALLOC && !tf_event_repeats_stamp(kind))
        grammar_step(s, t, kind);
}

/* The view's order: stamp, then push order (prog), which is the order of a
 * sorted ring that inserts an equal stamp after the ones before it. */
static inline int ro_before(const struct ro_ent *a, const struct ro_ent *b)
{
    const uint64_t mask = (UINT64_C(1) << 56) - 1;
    if (a->ts != b->ts)
        return a->ts < b->ts;
    return (a->prog & mask) < (b->prog & mask);
}

/* The view's out-of-order part: a binary min-heap in the second half of
 * the thread's ring allocation. */
static void heap_push(struct th *t, struct ro_ent e)
{
    struct ro_ent *h = t->ring + CA_REORDER_WINDOW;
    uint32_t i = t->hcount++;
    while (i > 0) {
        uint32_t up = (i - 1) / 2;
        if (!ro_before(&e, &h[up]))
            break;
        h[i] = h[up];
        i = up;
    }
    h[i] = e;
}

static struct ro_ent heap_pop(struct th *t)
{
    struct ro_ent *h = t->ring + CA_REORDER_WINDOW;
    struct ro_ent top = h[0], x = h[--t->hcount];
    uint32_t n = t->hcount, i = 0;
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
    return top;
}

/* Emits the earliest event of the view: the ring's front or the heap's top. */
static void view_emit_first(struct ca_state *s, struct th *t)
{
    const uint32_t W = CA_REORDER_WINDOW;
    if (t->hcount && (t->rcount == 0 || ro_before(t->ring + W, &t->ring[t->rhead]))) {
        struct ro_ent e = heap_pop(t);
        emit(s, t, &e);
        return;
    }
    emit(s, t, &t->ring[t->rhead]);
    t->rhead = (t->rhead + 1) % W;
    t->rcount--;
}

/* The view holds the last CA_REORDER_WINDOW events and emits them in
 * timestamp order: stamps in order append to a sorted ring (one
 * comparison), the others go to a heap (a sorted ring's insertion from the
 * back cost the whole window per event after a migration to a lagging
 * CPU), and the earlier of the two fronts leaves first. */
static void view_push(struct ca_state *s, struct th *t, uint64_t ts, uint64_t prog, unsigned kind)
{
    const uint32_t W = CA_REORDER_WINDOW;
    if (t->rcount + t->hcount == W)
        view_emit_first(s, t);
    struct ro_ent e = { ts, prog | (uint64_t)kind << 56 };
    if (t->rcount == 0 || t->ring[(t->rhead + t->rcount - 1) % W].ts <= ts) {
        t->ring[(t->rhead + t->rcount) % W] = e;
        t->rcount++;
    } else {
        heap_push(t, e);
    }
}

void ca_order_flush(struct ca_state *s, struct th *t)
{
    while (t->rcount + t->hcount)
        view_emit_first(s, t);
}

/* Every event, in program order: the temporal check and the view. */
void ca_order_event(struct ca_state *s, struct th *t, const struct tf_event *ev)
{
    /* A repeated stamp (TMTRACE_STAMP=boundary) equals the one before it by
     * design; going backwards is still an inconsistency. */
    int repeats = (s->o.repeated_access && (ev->kind == TF_EV_READ || ev->kind == TF_EV_WRITE)) ||
                  tf_event_repeats_stamp(ev->kind);
    if (t->seen && (ev->ts < t->last_ts || (ev->ts == t->last_ts && !repeats))) {
        t->pub.temporal++;
        s->t.temporal++;
    }
    t->seen = 1;
    t->last_ts = ev->ts;
    view_push(s, t, ev->ts, t->prog++, ev->kind);
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
