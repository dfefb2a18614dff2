/*
 * sync_model.c - fits TSC -> reference ns per CPU for tmsync.
 *
 * Owns: the least-squares fits (a straight line, or a continuous
 * piecewise-linear spline whose knots are added where the residuals say the
 * drift changed), the rejection of wide brackets and residual outliers, and
 * the fallbacks for CPUs with too few samples.
 * Never: does I/O or keeps pointers to the caller's samples.
 *
 * Numerics: TSC values are ~1e15 and reference ns ~1e13, so the sums of a
 * naive fit would lose every digit that matters. All fitting works on
 * centred data (u = (tsc - tsc_mean) * ns_per_tick, v = ref - ref_mean) in
 * long double, and only the final segments are turned into ns = a*tsc + b.
 */
#include "sync_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SM_MAX_KNOTS 15          /* 16 segments at most; the format allows 256 */
#define SM_KNOT_CANDIDATES 16    /* evenly spaced positions tried per split */
#define SM_MAX_BINS 4096         /* fits work on per-bin moments: cost independent of n */
#define SM_MIN_PER_SIDE 3        /* used samples each side of a knot */
#define SM_WIDE_FACTOR 3.0L      /* bracket > 3x the median width = interrupted */
#define SM_MAD_FACTOR 5.0L       /* residual > 5 robust sigmas = outlier */
/* A segment whose rate differs from the CPU's straight-line rate by more
 * than this is not drift (clocks change rate by parts per million, injected
 * changes by a few hundred ppm) but a segment the samples do not pin down. */
#define SM_MAX_SLOPE_DEV 2e-3L

struct pt {
    long double u, v;
    long double w;     /* bracket width, ns */
    uint8_t phase;
    uint8_t use;
    uint32_t idx;      /* the sample's index in the caller's array */
};

/* Moments of the used points of one bin of the u axis. Knots sit on bin
 * boundaries, so every basis function is linear (alpha + beta*u) within a
 * bin and the normal equations need only these sums. */
struct bin {
    long double lo;
    long double s0, su, suu, sv, suv, svv;
};

struct fitdata {
    struct pt *p;
    size_t n;
    struct bin *bins;
    size_t nbins;
    long double umin, bw;
    long double knots[SM_MAX_KNOTS];
    int nk;
    long double coef[SM_MAX_KNOTS + 2];
};

static int cmp_ld(const void *a, const void *b)
{
    long double x = *(const long double *)a, y = *(const long double *)b;
    return (x > y) - (x < y);
}

static int cmp_pt(const void *a, const void *b)
{
    long double x = ((const struct pt *)a)->u, y = ((const struct pt *)b)->u;
    return (x > y) - (x < y);
}

/* Median of `n` values (the array is sorted in place). */
static long double median_ld(long double *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_ld);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static inline long double spline_eval(const long double *coef, const long double *knots, int nk, long double u)
{
    long double y = coef[0] + coef[1] * u;
    for (int j = 0; j < nk; j++)
        if (u > knots[j])
            y += coef[j + 2] * (u - knots[j]);
    return y;
}

/* Solves the m x m system in place (partial pivoting). -1 if singular. */
static int solve(long double *A, long double *b, int m)
{
    for (int c = 0; c < m; c++) {
        int piv = c;
        for (int r = c + 1; r < m; r++)
            if (fabsl(A[r * m + c]) > fabsl(A[piv * m + c]))
                piv = r;
        if (fabsl(A[piv * m + c]) < 1e-30L)
            return -1;
        if (piv != c) {
            for (int k = 0; k < m; k++) {
                long double t = A[c * m + k];
                A[c * m + k] = A[piv * m + k];
                A[piv * m + k] = t;
            }
            long double t = b[c];
            b[c] = b[piv];
            b[piv] = t;
        }
        for (int r = c + 1; r < m; r++) {
            long double f = A[r * m + c] / A[c * m + c];
            if (f == 0)
                continue;
            for (int k = c; k < m; k++)
                A[r * m + k] -= f * A[c * m + k];
            b[r] -= f * b[c];
        }
    }
    for (int c = m - 1; c >= 0; c--) {
        long double s = b[c];
        for (int k = c + 1; k < m; k++)
            s -= A[c * m + k] * b[k];
        b[c] = s / A[c * m + c];
    }
    return 0;
}

/* Least squares of v on [1, u, (u-k_j)+...] over the used points; knots
 * given in `knots` (sorted). Returns the sum of squared residuals (below
 * zero by rounding when the fit is nearly exact: see refit), or -INFINITY
 * when the system is singular. */
static long double fit_with(const struct fitdata *d, const long double *knots, int nk, long double *coef)
{
    int m = nk + 2;
    long double A[(SM_MAX_KNOTS + 2) * (SM_MAX_KNOTS + 2)];
    long double b[SM_MAX_KNOTS + 2];
    long double row[SM_MAX_KNOTS + 2];
    memset(A, 0, sizeof(long double) * (size_t)(m * m));
    memset(b, 0, sizeof(long double) * (size_t)m);
    long double beta[SM_MAX_KNOTS + 2];
    for (size_t i = 0; i < d->nbins; i++) {
        const struct bin *g = &d->bins[i];
        if (g->s0 == 0)
            continue;
        row[0] = 1;
        beta[0] = 0;
        row[1] = 0;
        beta[1] = 1;
        for (int j = 0; j < nk; j++) {
            int right = g->lo >= knots[j];
            row[j + 2] = right ? -knots[j] : 0;
            beta[j + 2] = right ? 1 : 0;
        }
        for (int r = 0; r < m; r++) {
            if (row[r] == 0 && beta[r] == 0)
                continue;
            for (int c = 0; c < m; c++)
                A[r * m + c] += row[r] * row[c] * g->s0 + (row[r] * beta[c] + beta[r] * row[c]) * g->su +
                                beta[r] * beta[c] * g->suu;
            b[r] += row[r] * g->sv + beta[r] * g->suv;
        }
    }
    if (solve(A, b, m) < 0)
        return -INFINITY;
    memcpy(coef, b, sizeof(long double) * (size_t)m);
    /* residual sum of squares from the same moments */
    long double sse = 0;
    for (size_t i = 0; i < d->nbins; i++) {
        const struct bin *g = &d->bins[i];
        if (g->s0 == 0)
            continue;
        long double P = coef[0], Q = coef[1];
        for (int j = 0; j < nk; j++)
            if (g->lo >= knots[j]) {
                P -= coef[j + 2] * knots[j];
                Q += coef[j + 2];
            }
        sse += g->svv - 2 * (P * g->sv + Q * g->suv) + P * P * g->s0 + 2 * P * Q * g->su + Q * Q * g->suu;
    }
    return sse;
}

/* Rebuilds the bin moments from the used points. */
static void bin_points(struct fitdata *d)
{
    for (size_t i = 0; i < d->nbins; i++) {
        long double lo = d->bins[i].lo;
        memset(&d->bins[i], 0, sizeof d->bins[i]);
        d->bins[i].lo = lo;
    }
    for (size_t i = 0; i < d->n; i++) {
        const struct pt *p = &d->p[i];
        if (!p->use)
            continue;
        size_t k = (size_t)((p->u - d->umin) / d->bw);
        if (k >= d->nbins)
            k = d->nbins - 1;
        struct bin *g = &d->bins[k];
        g->s0 += 1;
        g->su += p->u;
        g->suu += p->u * p->u;
        g->sv += p->v;
        g->suv += p->u * p->v;
        g->svv += p->v * p->v;
    }
}

/* A candidate knot snapped to the bin grid. */
static long double snap(const struct fitdata *d, long double k)
{
    return d->umin + floorl((k - d->umin) / d->bw) * d->bw;
}

/* 0, or -1 when the system is singular. The sum of squares it also gives
 * comes from moments, which cancel: on a run of a minute or more a nearly
 * exact fit's came out below zero, and the fit was refused as if it had
 * none (tmsync then had no truth model, or no model at all). */
static int refit(struct fitdata *d)
{
    bin_points(d);
    return fit_with(d, d->knots, d->nk, d->coef) == -INFINITY ? -1 : 0;
}

static inline long double resid(const struct fitdata *d, const struct pt *p)
{
    return p->v - spline_eval(d->coef, d->knots, d->nk, p->u);
}

static size_t count_used(const struct fitdata *d)
{
    size_t k = 0;
    for (size_t i = 0; i < d->n; i++)
        k += d->p[i].use;
    return k;
}

/* The sum of squares with knot `k` added to the fit's knots, or -1 when
 * fewer than SM_MIN_PER_SIDE used points of the interval (lo, hi] lie on
 * either side of it or the system is singular. */
static long double sse_with_knot(const struct fitdata *d, long double lo, long double hi, long double k)
{
    size_t left = 0, right = 0;
    for (size_t i = 0; i < d->n; i++)
        if (d->p[i].use && d->p[i].u > lo && d->p[i].u <= hi) {
            if (d->p[i].u <= k)
                left++;
            else
                right++;
        }
    if (left < SM_MIN_PER_SIDE || right < SM_MIN_PER_SIDE)
        return -1;
    long double trial[SM_MAX_KNOTS], coef[SM_MAX_KNOTS + 2];
    int nk = 0, placed = 0;
    for (int j = 0; j < d->nk; j++) {
        if (!placed && k < d->knots[j]) {
            trial[nk++] = k;
            placed = 1;
        }
        trial[nk++] = d->knots[j];
    }
    if (!placed)
        trial[nk++] = k;
    return fit_with(d, trial, nk, coef);
}

/* The best knot in the interval (lo, hi] whose used points span [umin,
 * umax]: the best of SM_KNOT_CANDIDATES evenly spaced positions, then
 * refined around it on ever finer steps down to one bin. The coarse grid
 * alone misplaces a change of drift by up to half a step (tens of ms on a
 * long run), and the residuals that leaves near the change would be taken
 * for outliers. Returns the sum of squares, or -1 when no position fits. */
static long double best_knot(const struct fitdata *d, long double lo, long double hi, long double umin,
                             long double umax, long double *best_k)
{
    long double best_sse = -1;
    long double step = (umax - umin) / SM_KNOT_CANDIDATES;
    for (int c = 1; c < SM_KNOT_CANDIDATES; c++) {
        long double k = snap(d, umin + step * c);
        long double sse = k > umin && k < umax ? sse_with_knot(d, lo, hi, k) : -1;
        if (sse >= 0 && (best_sse < 0 || sse < best_sse)) {
            best_sse = sse;
            *best_k = k;
        }
    }
    while (best_sse >= 0 && step > d->bw) {
        step = fmaxl(step / 4, d->bw);
        long double centre = *best_k;
        for (int c = -4; c <= 4; c++) {
            long double k = snap(d, centre + step * c);
            long double sse = c && k > umin && k < umax ? sse_with_knot(d, lo, hi, k) : -1;
            if (sse >= 0 && sse < best_sse) {
                best_sse = sse;
                *best_k = k;
            }
        }
    }
    return best_sse;
}

/* Adds knots while some interval has several residuals above `thr`: the
 * knot goes where it lowers the sum of squares most (best_knot). Points
 * are sorted by u. */
static void add_knots(struct fitdata *d, long double thr)
{
    while (d->nk < SM_MAX_KNOTS) {
        /* the interval with most residuals above the threshold */
        int best_iv = -1;
        size_t best_over = 0;
        for (int iv = 0; iv <= d->nk; iv++) {
            long double lo = iv == 0 ? -INFINITY : d->knots[iv - 1];
            long double hi = iv == d->nk ? INFINITY : d->knots[iv];
            size_t over = 0;
            for (size_t i = 0; i < d->n; i++)
                if (d->p[i].use && d->p[i].u > lo && d->p[i].u <= hi && fabsl(resid(d, &d->p[i])) > thr)
                    over++;
            if (over > best_over) {
                best_over = over;
                best_iv = iv;
            }
        }
        if (best_iv < 0 || best_over < 3)
            return;
        long double lo = best_iv == 0 ? -INFINITY : d->knots[best_iv - 1];
        long double hi = best_iv == d->nk ? INFINITY : d->knots[best_iv];
        long double umin = INFINITY, umax = -INFINITY;
        for (size_t i = 0; i < d->n; i++)
            if (d->p[i].use && d->p[i].u > lo && d->p[i].u <= hi) {
                umin = fminl(umin, d->p[i].u);
                umax = fmaxl(umax, d->p[i].u);
            }
        long double best_k = 0;
        if (best_knot(d, lo, hi, umin, umax, &best_k) < 0)
            return;
        int pos = d->nk;
        while (pos > 0 && d->knots[pos - 1] > best_k) {
            d->knots[pos] = d->knots[pos - 1];
            pos--;
        }
        d->knots[pos] = best_k;
        d->nk++;
        if (refit(d) < 0) {
            /* undo: a knot that makes the system singular is not worth it */
            memmove(&d->knots[pos], &d->knots[pos + 1], sizeof(long double) * (size_t)(d->nk - pos - 1));
            d->nk--;
            refit(d);
            return;
        }
    }
}

/* Removes knot `j` and refits. */
static int drop_knot(struct fitdata *d, int j)
{
    memmove(&d->knots[j], &d->knots[j + 1], sizeof(long double) * (size_t)(d->nk - j - 1));
    d->nk--;
    return refit(d);
}

/* Merges segments the samples do not support: no used point at all (only
 * continuity with its neighbours would fix its slope), or a rate more than
 * SM_MAX_SLOPE_DEV away from `slope0` (the straight-line fit's). A segment
 * across a gap in the samples, between knots at the samples on either side,
 * is fine: its ends are pinned. Of the two knots that bound a bad segment,
 * the one whose removal fits better goes; the fit is redone each time.
 * Outlier rejection can empty a segment after its knot was placed, hence a
 * pass of its own. Returns 0, or -1 if a refit failed. */
static int prune_segments(struct fitdata *d, long double slope0)
{
    while (d->nk > 0) {
        int bad = -1;
        long double slope = d->coef[1];
        for (int j = 0; j <= d->nk && bad < 0; j++) {
            if (j > 0)
                slope += d->coef[j + 1];
            long double lo = j == 0 ? -INFINITY : d->knots[j - 1];
            long double hi = j == d->nk ? INFINITY : d->knots[j];
            size_t k = 0;
            for (size_t i = 0; i < d->n; i++)
                k += d->p[i].use && d->p[i].u > lo && d->p[i].u <= hi;
            if (k == 0 || !(fabsl(slope / slope0 - 1) <= SM_MAX_SLOPE_DEV))
                bad = j;
        }
        if (bad < 0)
            return 0;
        int drop;
        if (bad == 0)
            drop = 0;
        else if (bad == d->nk)
            drop = d->nk - 1;
        else {
            /* try both neighbours, keep the better */
            long double trial[SM_MAX_KNOTS], coef[SM_MAX_KNOTS + 2], sse[2];
            for (int side = 0; side < 2; side++) {
                int skip = bad - 1 + side, nk = 0;
                for (int j = 0; j < d->nk; j++)
                    if (j != skip)
                        trial[nk++] = d->knots[j];
                sse[side] = fit_with(d, trial, nk, coef);
            }
            drop = (sse[0] >= 0 && (sse[1] < 0 || sse[0] <= sse[1])) ? bad - 1 : bad;
        }
        if (drop_knot(d, drop) < 0)
            return -1;
    }
    return 0;
}

/* Rejects used points whose residual is more than 5 robust sigmas from the
 * median residual (never closer than `thr`). Returns how many. */
static uint32_t reject_outliers(struct fitdata *d, long double thr, long double *scratch)
{
    size_t k = 0;
    for (size_t i = 0; i < d->n; i++)
        if (d->p[i].use)
            scratch[k++] = resid(d, &d->p[i]);
    if (k < SM_MIN_SAMPLES)
        return 0;
    long double med = median_ld(scratch, k);
    k = 0;
    for (size_t i = 0; i < d->n; i++)
        if (d->p[i].use)
            scratch[k++] = fabsl(resid(d, &d->p[i]) - med);
    long double mad = median_ld(scratch, k);
    long double lim = fmaxl(SM_MAD_FACTOR * 1.4826L * mad, thr);
    uint32_t rej = 0;
    for (size_t i = 0; i < d->n; i++)
        if (d->p[i].use && fabsl(resid(d, &d->p[i]) - med) > lim) {
            d->p[i].use = 0;
            rej++;
        }
    return rej;
}

/* Number of in-run points (width-accepted) whose residual exceeds thr. */
static size_t inrun_over(const struct fitdata *d, long double thr)
{
    size_t over = 0;
    for (size_t i = 0; i < d->n; i++)
        if (d->p[i].phase == TF_PHASE_INRUN && d->p[i].w >= 0 && fabsl(resid(d, &d->p[i])) > thr)
            over++;
    return over;
}

/* True when every segment of the fitted spline has a finite, positive slope. */
static int fit_runs_forward(const struct fitdata *d)
{
    long double slope = d->coef[1];
    for (int j = -1; j < d->nk; j++) {
        if (j >= 0)
            slope += d->coef[j + 2];
        if (!(slope > 0) || !isfinite((double)slope))
            return 0;
    }
    return 1;
}

/* One CPU's fit in progress: its samples as centred points, the bins, the
 * nominal tick length, and the scratch array of the medians. */
struct cpufit {
    struct fitdata d;
    struct pt *p;
    size_t n;
    long double *scratch;
    long double xm, ym;     /* centre: mean TSC and mean reference ns */
    long double npt;        /* nominal ns per tick */
    long double thr;        /* residual that counts as drift, ns */
};

static void cpufit_free(struct cpufit *f)
{
    free(f->d.bins);
    free(f->p);
    free(f->scratch);
}

/* Phase 1: the samples as points centred on their means, sorted by u. */
static int make_points(struct cpufit *f, const struct tf_sample *s, int truth)
{
    size_t n = f->n;
    f->p = n ? calloc(n, sizeof *f->p) : NULL;
    f->scratch = n ? calloc(n, sizeof *f->scratch) : NULL;
    if (n && (!f->p || !f->scratch))
        return -1;
    long double xm = 0, ym = 0;
    for (size_t i = 0; i < n; i++) {
        xm += (long double)(truth ? s[i].truth_tsc : s[i].tsc);
        ym += (long double)s[i].ref_ns;
    }
    if (n) {
        xm /= n;
        ym /= n;
    }
    for (size_t i = 0; i < n; i++) {
        f->p[i].u = ((long double)(truth ? s[i].truth_tsc : s[i].tsc) - xm) * f->npt;
        f->p[i].v = (long double)s[i].ref_ns - ym;
        f->p[i].w = (long double)s[i].width * f->npt;
        f->p[i].phase = s[i].phase;
        f->p[i].use = 1;
        f->p[i].idx = (uint32_t)i;
    }
    if (n)
        qsort(f->p, n, sizeof *f->p, cmp_pt);
    f->xm = xm;
    f->ym = ym;
    f->d.p = f->p;
    f->d.n = n;
    return 0;
}

/* Phase 2: wide brackets (the sampling thread was interrupted) are
 * rejected; the drift threshold follows from the median width. */
static uint32_t reject_wide(struct cpufit *f)
{
    uint32_t rej = 0;
    for (size_t i = 0; i < f->n; i++)
        f->scratch[i] = f->p[i].w;
    long double wmed = median_ld(f->scratch, f->n);
    for (size_t i = 0; i < f->n; i++)
        if (wmed > 0 && f->p[i].w > SM_WIDE_FACTOR * wmed) {
            f->p[i].use = 0;
            f->p[i].w = -1;    /* marks "rejected for width" */
            rej++;
        }
    f->thr = fmaxl(3 * wmed, 100.0L);
    return rej;
}

/* Phase 3: bins of at least 1 ms of reference time, at most SM_MAX_BINS. */
static int make_bins(struct cpufit *f)
{
    struct fitdata *d = &f->d;
    if (!f->n)
        return 0;
    d->umin = f->p[0].u;
    long double span = f->p[f->n - 1].u - f->p[0].u;
    d->bw = fmaxl(1e6L, span / SM_MAX_BINS);
    d->nbins = (size_t)(span / d->bw) + 1;
    d->bins = calloc(d->nbins, sizeof *d->bins);
    if (!d->bins)
        return -1;
    for (size_t i = 0; i < d->nbins; i++)
        d->bins[i].lo = d->umin + d->bw * (long double)i;
    return 0;
}

/* Enough used samples, spanning enough reference time, for a slope. */
static int enough_for_slope(const struct cpufit *f, size_t used)
{
    long double vmin = INFINITY, vmax = -INFINITY;
    for (size_t i = 0; i < f->n; i++)
        if (f->p[i].use) {
            vmin = fminl(vmin, f->p[i].v);
            vmax = fmaxl(vmax, f->p[i].v);
        }
    return used >= SM_MIN_SAMPLES && vmax - vmin >= SM_MIN_SPAN_NS;
}

/* Phase 4: linear or piecewise (for auto, the linear fit over the sampling
 * phases decides), the fit, knots, outliers, the refit. 0, or -1 when the
 * samples give no model. */
static int fit_kind(struct cpufit *f, enum sm_kind kind, struct sm_result *out)
{
    struct fitdata *d = &f->d;
    struct pt *p = f->p;
    for (size_t i = 0; i < f->n; i++)
        if (p[i].phase == TF_PHASE_INRUN)
            p[i].use = 0;
    size_t phased = count_used(d);
    int want_pw = kind == SM_PIECEWISE;
    if (kind == SM_AUTO) {
        if (phased >= SM_MIN_SAMPLES && refit(d) == 0)
            want_pw = inrun_over(d, f->thr) >= 3;
        else
            want_pw = 1;    /* only in-run samples span the run */
    }
    out->kind = want_pw ? SM_PIECEWISE : SM_LINEAR;
    if (want_pw || phased < SM_MIN_SAMPLES)
        for (size_t i = 0; i < f->n; i++)
            if (p[i].w >= 0)
                p[i].use = 1;
    if (out->kind == SM_LINEAR && phased < SM_MIN_SAMPLES)
        out->kind = SM_PIECEWISE;   /* linear needs the phases; use what exists */
    /* in-run samples left out of a linear fit count neither way */
    if (refit(d) < 0)
        return -1;
    long double slope0 = d->coef[1];
    if (out->kind == SM_PIECEWISE)
        add_knots(d, f->thr);
    out->rejected_outlier = reject_outliers(d, f->thr, f->scratch);
    if (refit(d) < 0 || (out->kind == SM_PIECEWISE && prune_segments(d, slope0) < 0))
        return -1;
    /* A clock runs forward: a fit whose slope is zero, negative or not
     * finite on some segment (degenerate or damaged samples) is no model;
     * the fallbacks take over. */
    return fit_runs_forward(d) ? 0 : -1;
}

/* Phase 5a: the fitted spline as segments ns = a*tsc + b, and its residuals. */
static void model_from_fit(const struct cpufit *f, struct tf_cpu_model *m)
{
    const struct fitdata *d = &f->d;
    long double slope = d->coef[1], icpt = d->coef[0];
    m->nseg = 0;
    for (int j = -1; j < d->nk; j++) {
        if (j >= 0) {
            slope += d->coef[j + 2];
            icpt -= d->coef[j + 2] * d->knots[j];
        }
        struct tf_model_segment *g = &m->seg[m->nseg++];
        long double from = j < 0 ? 0 : ceill(f->xm + d->knots[j] / f->npt);
        g->tsc_from = from < 0 ? 0 : (uint64_t)from;
        g->a = (double)(slope * f->npt);
        g->b = (double)(f->ym + icpt - slope * f->npt * f->xm);
    }
    if (m->nseg > 1 && m->seg[1].tsc_from == 0)
        m->seg[0].tsc_from = 0;
    long double ss = 0, mx = 0;
    size_t k = 0;
    for (size_t i = 0; i < f->n; i++)
        if (f->p[i].use) {
            long double r = fabsl(resid(d, &f->p[i]));
            ss += r * r;
            mx = fmaxl(mx, r);
            k++;
        }
    m->used = (uint32_t)k;
    m->rms_ns = k ? (double)sqrtl(ss / k) : 0;
    m->max_ns = (double)mx;
}

/* Phase 5b: the pooled slope, the CPU's own offset (the median of
 * ref - a*tsc over its used samples). */
static void model_offset_only(const struct cpufit *f, size_t used, const struct sm_result *pooled,
                              struct tf_cpu_model *m)
{
    const struct pt *p = f->p;
    long double a = pooled->m.seg[0].a;
    size_t k = 0;
    for (size_t i = 0; i < f->n; i++)
        if (p[i].use)
            f->scratch[k++] = (f->ym + p[i].v) - a * (f->xm + p[i].u / f->npt);
    long double b = median_ld(f->scratch, k);
    m->nseg = 1;
    m->seg[0].tsc_from = 0;
    m->seg[0].a = (double)a;
    m->seg[0].b = (double)b;
    long double ss = 0, mx = 0;
    for (size_t i = 0; i < f->n; i++)
        if (p[i].use) {
            long double r = fabsl((f->ym + p[i].v) - (a * (f->xm + p[i].u / f->npt) + b));
            ss += r * r;
            mx = fmaxl(mx, r);
        }
    m->used = (uint32_t)used;
    m->rms_ns = (double)sqrtl(ss / used);
    m->max_ns = (double)mx;
}

/* Phase 6: rejected samples and the drift of the first segment. */
static void model_counts(const struct cpufit *f, struct sm_result *out)
{
    struct tf_cpu_model *m = &out->m;
    m->rejected = (uint32_t)f->n - m->used;
    if (out->how == SM_HOW_FIT && out->kind == SM_LINEAR) {
        /* in-run samples are not part of a linear fit: not "rejected" either */
        uint32_t inrun = 0;
        for (size_t i = 0; i < f->n; i++)
            if (f->p[i].phase == TF_PHASE_INRUN && f->p[i].w >= 0 && !f->p[i].use)
                inrun++;
        m->rejected -= inrun;
    }
    m->drift_ppm = ((double)f->npt / m->seg[0].a - 1.0) * 1e6;
}

/* Phase 7: each sample's verdict, by the rules the counts follow. */
static void verdicts(const struct cpufit *f, const struct sm_result *out, uint8_t *verdict)
{
    int linear_fit = out->how == SM_HOW_FIT && out->kind == SM_LINEAR;
    for (size_t i = 0; i < f->n; i++) {
        const struct pt *p = &f->p[i];
        uint8_t v = SM_REJECTED_OUTLIER;
        if (p->use)
            v = SM_USED;
        else if (p->w < 0)
            v = SM_REJECTED_WIDTH;
        else if (linear_fit && p->phase == TF_PHASE_INRUN)
            v = SM_UNFITTED;
        verdict[p->idx] = v;
    }
}

int sm_fit_cpu(uint32_t cpu, struct tf_sample *s, size_t n, enum sm_kind kind, double ns_per_tick,
               int truth, const struct sm_result *pooled, struct sm_result *out, uint8_t *verdict)
{
    memset(out, 0, sizeof *out);
    out->m.cpu = cpu;
    out->kind = kind == SM_PIECEWISE ? SM_PIECEWISE : SM_LINEAR;
    struct cpufit f = { .n = n, .npt = ns_per_tick > 0 ? ns_per_tick : 1.0 };
    if (make_points(&f, s, truth) < 0) {
        cpufit_free(&f);
        return -1;
    }
    out->rejected_width = reject_wide(&f);
    if (make_bins(&f) < 0) {
        cpufit_free(&f);
        return -1;
    }
    size_t used = count_used(&f.d);
    int ok = enough_for_slope(&f, used) && fit_kind(&f, kind, out) == 0;
    if (ok) {
        out->how = SM_HOW_FIT;
        model_from_fit(&f, &out->m);
    } else if (used > 0 && pooled) {
        out->how = SM_HOW_OFFSET_ONLY;
        out->kind = SM_LINEAR;
        model_offset_only(&f, used, pooled, &out->m);
    } else if (pooled) {
        out->how = SM_HOW_POOLED;
        out->kind = SM_LINEAR;
        out->m = pooled->m;
        out->m.cpu = cpu;
        out->m.used = 0;
    } else {
        cpufit_free(&f);
        return -1;
    }
    model_counts(&f, out);
    if (verdict)
        verdicts(&f, out, verdict);
    cpufit_free(&f);
    return 0;
}

double sm_inverse(const struct tf_cpu_model *m, double ns)
{
    for (uint32_t k = 0; k < m->nseg; k++) {
        double t = (ns - m->seg[k].b) / m->seg[k].a;
        int last = k + 1 == m->nseg;
        if (last || t < (double)m->seg[k + 1].tsc_from)
            return t;
    }
    return 0;
}

const char *sm_kind_name(enum sm_kind k)
{
    switch (k) {
    case SM_NONE: return "none";
    case SM_LINEAR: return "linear";
    case SM_PIECEWISE: return "piecewise";
    case SM_AUTO: return "auto";
    }
    return "?";
}

const char *sm_how_name(enum sm_how h)
{
    switch (h) {
    case SM_HOW_FIT: return "fit";
    case SM_HOW_OFFSET_ONLY: return "offset-only";
    case SM_HOW_POOLED: return "pooled";
    }
    return "?";
}
