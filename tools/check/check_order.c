/*
 * check_order.c - program order against timestamp order, per thread.
 *
 * Owns: the temporal check (a thread's stamps must grow in program order),
 * the bounded timestamp-ordered view of each thread (a sorted ring of its
 * last CA_REORDER_WINDOW events) through which the grammar
 * (S (R|W)* (C|A))* and the out-of-place count are checked, and the late
 * starts and premature ends of an attempt.
 * Never: looks at another thread's events; allocates (the ring is the
 * driver's).
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
    /* FALLBACK and ALLOC records may come between attempts, WSET and
     * ABORT_PC follow an attempt's end: not part of the grammar. */
    if (kind != TF_EV_FALLBACK && kind != TF_EV_ALLOC && kind != TF_EV_WSET && kind != TF_EV_ABORT_PC)
        grammar_step(s, t, kind);
}

static void view_push(struct ca_state *s, struct th *t, uint64_t ts, uint64_t prog, unsigned kind)
{
    const uint32_t W = CA_REORDER_WINDOW;
    if (t->rcount == W) {
        emit(s, t, &t->ring[t->rhead]);
        t->rhead = (t->rhead + 1) % W;
        t->rcount--;
    }
    /* insertion from the back: in-order stamps cost one comparison */
    uint32_t pos = t->rcount;
    while (pos > 0) {
        const struct ro_ent *p = &t->ring[(t->rhead + pos - 1) % W];
        if (p->ts <= ts)
            break;
        t->ring[(t->rhead + pos) % W] = *p;
        pos--;
    }
    t->ring[(t->rhead + pos) % W] = (struct ro_ent){ ts, prog | (uint64_t)kind << 56 };
    t->rcount++;
}

void ca_order_flush(struct ca_state *s, struct th *t)
{
    while (t->rcount) {
        emit(s, t, &t->ring[t->rhead]);
        t->rhead = (t->rhead + 1) % CA_REORDER_WINDOW;
        t->rcount--;
    }
}

/* Every event, in program order: the temporal check and the view. */
void ca_order_event(struct ca_state *s, struct th *t, const struct tf_event *ev)
{
    /* A repeated stamp (TMTRACE_STAMP=boundary) equals the one before it by
     * design; going backwards is still an inconsistency. */
    int repeats = (s->o.repeated_access && (ev->kind == TF_EV_READ || ev->kind == TF_EV_WRITE)) ||
                  ev->kind == TF_EV_WSET || ev->kind == TF_EV_ABORT_PC;
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
