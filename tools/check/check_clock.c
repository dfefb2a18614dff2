/*
 * check_clock.c - the clock error of a trace against its ground truth.
 *
 * Owns: the histogram of |stamp - truth| in ns (32 steps per power of two,
 * so quantiles are exact to about 3 %) and its p50, p99 and maximum.
 * Never: keeps the samples themselves (memory does not grow with the trace).
 */
#include <math.h>

#include "check_state.h"

static void hist_add(struct ca_clock *c, double err_ns)
{
    if (err_ns > c->err_max)
        c->err_max = err_ns;
    /* A damaged trace can put a stamp and its truth up to 2^64 apart:
     * converting a double at or past 2^64 to uint64_t is undefined. */
    uint64_t v = err_ns < 18446744073709549568.0 ? (uint64_t)(err_ns + 0.5) : UINT64_MAX;
    size_t k;
    if (v < CA_HIST_SUB)
        k = (size_t)v;
    else {
        int msb = 63 - __builtin_clzll(v);
        int shift = msb - 5;   /* keep 5 bits below the leading one: 32 steps */
        k = (size_t)(shift + 1) * CA_HIST_SUB + (size_t)((v >> shift) & (CA_HIST_SUB - 1));
    }
    if (k >= CA_HIST_N)
        k = CA_HIST_N - 1;
    c->hist[k]++;
    c->n++;
}

/* Upper bound of a histogram bucket. */
static double hist_value(size_t k)
{
    if (k < CA_HIST_SUB)
        return (double)k;
    size_t shift = k / CA_HIST_SUB - 1;
    uint64_t base = (uint64_t)(CA_HIST_SUB + k % CA_HIST_SUB) << shift;
    return (double)(base + (UINT64_C(1) << shift) - 1);
}

static double hist_quantile(const struct ca_state *s, double q)
{
    uint64_t n = s->clock.n;
    if (!n)
        return 0;
    uint64_t want = (uint64_t)ceil(q * (double)n), acc = 0;
    if (want == 0)
        want = 1;
    for (size_t k = 0; k < CA_HIST_N; k++) {
        acc += s->clock.hist[k];
        if (acc >= want)
            return fmin(hist_value(k), s->clock.err_max);
    }
    return s->clock.err_max;
}

/* Events of one source: those of a trace with injected skew carry their
 * true stamp. The histogram and maximum do not depend on the order. */
void ca_clock_events(const struct ca_state *s, struct ca_clock *c, const struct tf_event *ev, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ev[i].truth)
            hist_add(c, fabs((double)ev[i].ts - (double)ev[i].truth) * s->o.ns_per_unit);
}

void ca_clock_add(struct ca_state *s, const struct ca_clock *c)
{
    for (size_t k = 0; k < CA_HIST_N; k++)
        s->clock.hist[k] += c->hist[k];
    s->clock.n += c->n;
    if (c->err_max > s->clock.err_max)
        s->clock.err_max = c->err_max;
}

void ca_clock_finish(struct ca_state *s)
{
    s->t.truth_events = s->clock.n;
    s->t.err_p50 = hist_quantile(s, 0.50);
    s->t.err_p99 = hist_quantile(s, 0.99);
    s->t.err_max = s->clock.err_max;
}
