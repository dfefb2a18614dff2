/*
 * check_time.c - where the time goes: per thread and per site, the time in
 * committed attempts, aborted attempts (wasted), back-off, serial mode,
 * outside transactions, and the tracer's estimated cost; attempts that
 * spanned a deschedule or a migration counted apart, with their time off the
 * CPU, which the on-CPU wasted time leaves out; medians per attempt.
 *
 * Owns: each thread's timeline (first and last stamp, the last attempt's
 * end and whether it aborted), the duration histograms (per thread and per
 * site) the medians come from. Never: keeps one entry per attempt (memory
 * does not grow with the trace).
 */
#include <math.h>
#include <stdlib.h>

#include "check_state.h"
#include "error.h"
#include "trace_index.h"
#include "tmtrace.h"

static void dur_add(uint32_t *h, double ns)
{
    uint64_t v = ns < 1.8e19 ? (uint64_t)(ns + 0.5) : UINT64_MAX;
    size_t k;
    if (v < CA_DUR_SUB) {
        k = (size_t)v;
    } else {
        int msb = 63 - __builtin_clzll(v);
        int shift = msb - 3;   /* 3 bits below the leading one: 8 steps */
        k = (size_t)(shift + 1) * CA_DUR_SUB + (size_t)((v >> shift) & (CA_DUR_SUB - 1));
    }
    h[k < CA_DUR_N ? k : CA_DUR_N - 1]++;
}

/* The middle of the median's bucket. */
static double dur_median(const uint32_t *h, uint64_t n)
{
    if (!n)
        return 0;
    uint64_t want = (n + 1) / 2, acc = 0;
    for (size_t k = 0; k < CA_DUR_N; k++) {
        acc += h[k];
        if (acc < want)
            continue;
        if (k < CA_DUR_SUB)
            return (double)k;
        size_t shift = k / CA_DUR_SUB - 1;
        double lo = (double)((uint64_t)(CA_DUR_SUB + k % CA_DUR_SUB) << shift);
        return lo + ldexp(1.0, (int)shift) / 2;
    }
    return 0;
}

static struct ca_dur_hist *site_hist(struct ca_state *s, uint32_t id)
{
    id = ca_id_slot(id);
    if (ti_grow((void **)&s->site_hist, &s->nsite_hist, (size_t)id + 1, sizeof *s->site_hist) < 0)
        return NULL;
    if (!s->site_hist[id] && !(s->site_hist[id] = calloc(1, sizeof **s->site_hist)))
        error_set("out of memory");
    return s->site_hist[id];
}

/* An attempt of `t` ends at `ev`: its time, committed or wasted. */
static int attempt_time(struct ca_state *s, struct th *t, const struct tf_event *ev)
{
    struct ca_site *st = ca_site_of(s, t->site);
    struct ca_dur_hist *sh = site_hist(s, t->site);
    if (!t->hist)
        t->hist = calloc(1, sizeof *t->hist);
    if (!st || !sh || !t->hist)
        return error_set("out of memory");
    double d = (double)(ev->ts > t->start_ts ? ev->ts - t->start_ts : 0) * s->o.ns_per_unit;
    double serial = t->serial && ev->ts > t->serial_ts ? (double)(ev->ts - t->serial_ts) * s->o.ns_per_unit : 0;
    int committed = ev->kind == TF_EV_COMMIT;
    int desched = t->migrated || (double)t->max_gap * s->o.ns_per_unit >= s->o.desched_gap_ns;
    double off = ca_attempt_off_ns(s, t);
    struct ca_time *tt[2] = { &t->pub.time, &st->time };
    for (int i = 0; i < 2; i++) {
        if (committed) {
            tt[i]->committed_ns += d;
            tt[i]->committed_n++;
        } else {
            tt[i]->wasted_ns += d;
            tt[i]->wasted_oncpu_ns += d - off;
            tt[i]->aborted_n++;
            tt[i]->desched_aborted_n += desched;
        }
        tt[i]->serial_ns += serial;
        tt[i]->desched_n += desched;
        tt[i]->desched_ns += desched ? d : 0;
        tt[i]->desched_off_ns += off;
    }
    dur_add(committed ? t->hist->committed : t->hist->aborted, d);
    dur_add(committed ? sh->committed : sh->aborted, d);
    t->end_was_abort = !committed && ev->reason != TMT_ABORT_USER_CANCEL;
    t->tl_end = ev->ts;
    return 0;
}

/* The open attempt's time off the CPU: its gaps of a deschedule's length;
 * an attempt that changed CPU without one lost at least its longest gap.
 * Never more than the attempt. */
double ca_attempt_off_ns(const struct ca_state *s, const struct th *t)
{
    uint64_t off = t->off_sum;
    if (t->migrated && off == 0)
        off = t->max_gap;
    return (double)off * s->o.ns_per_unit;
}

/* A hole in t's program order before an event at `ts` (check_driver.c,
 * thread_hole), called while the attempt it cut is still open: from that
 * attempt's start (or the end of the last attempt) to the next START, the
 * thread's time is the dropped events', neither an attempt's nor outside. */
void ca_time_hole(struct th *t, uint64_t ts)
{
    if (t->in_hole)
        return;
    t->in_hole = 1;
    t->hole_ts = !t->have_first ? ts : t->in_tx ? t->start_ts : t->tl_end;
}

/* The time from the hole to `ts`, the first START after it (or the end). */
static void time_hole_ends(struct ca_state *s, struct th *t, uint64_t ts)
{
    t->pub.time.dropped_ns += (double)(ts > t->hole_ts ? ts - t->hole_ts : 0) * s->o.ns_per_unit;
    t->in_hole = 0;
    t->end_was_abort = 0;
}

/* Every event of thread `t`, before the analyses see it. */
int ca_time_event(struct ca_state *s, struct th *t, const struct tf_event *ev)
{
    if (!t->have_first) {
        t->have_first = 1;
        t->tl_first = t->tl_end = ev->ts;
    }
    if (ev->ts > t->tl_last)
        t->tl_last = ev->ts;
    if (ev->kind == TF_EV_START) {
        if (t->in_hole) {
            time_hole_ends(s, t, ev->ts);
        } else {
            double gap = (double)(ev->ts > t->tl_end ? ev->ts - t->tl_end : 0) * s->o.ns_per_unit;
            if (t->end_was_abort && (ev->value & TF_START_RETRY)) {
                t->pub.time.backoff_ns += gap;
                struct ca_site *st = ca_site_of(s, ev->site);
                if (!st)
                    return -1;
                st->time.backoff_ns += gap;
            } else {
                t->pub.time.outside_ns += gap;
            }
            t->end_was_abort = 0;
        }
        struct ca_site *ss = ca_site_of(s, ev->site);
        if (!ss)
            return -1;
        ss->time.tracer_ns += s->o.event_cost_ns;
        return 0;
    }
    if (t->in_tx) {
        struct ca_site *st = ca_site_of(s, t->site);
        if (!st)
            return -1;
        st->time.tracer_ns += s->o.event_cost_ns;
    }
    if ((ev->kind == TF_EV_COMMIT || ev->kind == TF_EV_ABORT) && t->in_tx)
        return attempt_time(s, t, ev);
    return 0;
}

/* Wall time, the tail outside transactions, the tracer's share, medians. */
int ca_time_finish(struct ca_state *s)
{
    for (size_t i = 0; i < s->nth; i++) {
        struct th *t = &s->th[i];
        if (!t->live || !t->have_first)
            continue;
        struct ca_time *x = &t->pub.time;
        x->wall_ns = (double)(t->tl_last - t->tl_first) * s->o.ns_per_unit;
        if (t->in_hole)
            time_hole_ends(s, t, t->tl_last);
        else if (!t->in_tx && t->tl_last > t->tl_end)
            x->outside_ns += (double)(t->tl_last - t->tl_end) * s->o.ns_per_unit;
        else if (t->in_tx && t->tl_last > t->start_ts)   /* an attempt without an end: outside too */
            x->outside_ns += (double)(t->tl_last - t->start_ts) * s->o.ns_per_unit;
        x->tracer_ns = (double)t->pub.events * s->o.event_cost_ns;
        if (t->hist) {
            x->committed_median_ns = dur_median(t->hist->committed, x->committed_n);
            x->aborted_median_ns = dur_median(t->hist->aborted, x->aborted_n);
        }
    }
    for (size_t i = 0; i < s->nsite_hist && i < s->nsite; i++) {
        struct ca_dur_hist *h = s->site_hist[i];
        if (!h)
            continue;
        struct ca_time *x = &s->site[i].time;
        x->committed_median_ns = dur_median(h->committed, x->committed_n);
        x->aborted_median_ns = dur_median(h->aborted, x->aborted_n);
    }
    return 0;
}

void ca_time_free(struct ca_state *s)
{
    for (size_t i = 0; i < s->nth; i++)
        free(s->th[i].hist);
    for (size_t i = 0; i < s->nsite_hist; i++)
        free(s->site_hist[i]);
    free(s->site_hist);
}
