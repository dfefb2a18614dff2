/*
 * test_sync_model.c - the per-CPU clock fit of tmsync (tools/reader/sync_model.c)
 * on real samples: a piecewise model follows the samples where they are and
 * stays on the line between them where they are not; no segment may take a
 * rate that the samples do not support.
 *
 * The fixture (test/data/drift-change-gap.samples) holds one CPU's samples
 * from a traced run with a drift change and forced migrations: in-run samples
 * come only while a traced thread ran on that CPU, so they leave gaps of up to
 * ~100 ms. Between two samples the true clock is a straight line or, across
 * the drift change, two lines meeting; the chord between the samples is
 * within (change of rate) x (gap) / 4 of it, about 13 us for this fixture.
 * A model that puts knots inside a gap is unconstrained there and was seen
 * 18 ms off.
 *
 * Each sample's verdict (used, left out of a linear fit, rejected as a wide
 * bracket or as an outlier) is checked on synthetic samples with known faults.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sync_model.h"

#define FIXTURE TMT_SOURCE_ROOT "/test/data/drift-change-gap.samples"
#define CHORD_LIMIT_NS 50000.0  /* generous against the ~13 us chord error */

static struct tf_sample *load(size_t *n, double *hz)
{
    FILE *f = fopen(FIXTURE, "r");
    assert_non_null(f);
    size_t cap = 2048;
    struct tf_sample *s = calloc(cap, sizeof *s);
    assert_non_null(s);
    char line[256];
    *n = 0;
    *hz = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') {
            sscanf(line, "# tsc_hz %lf", hz);
            continue;
        }
        unsigned long long tsc, ref;
        unsigned width, phase;
        assert_int_equal(sscanf(line, "%llu %llu %u %u", &tsc, &ref, &width, &phase), 4);
        if (*n == cap) {
            cap *= 2;
            s = realloc(s, cap * sizeof *s);
            assert_non_null(s);
        }
        s[*n] = (struct tf_sample){ .tsc = tsc, .ref_ns = ref, .truth_tsc = tsc, .width = width, .cpu = 1,
                                    .phase = (uint8_t)phase };
        (*n)++;
    }
    fclose(f);
    assert_true(*hz > 1e8);
    assert_true(*n > 1000);
    return s;
}

static int by_tsc(const void *a, const void *b)
{
    uint64_t x = ((const struct tf_sample *)a)->tsc, y = ((const struct tf_sample *)b)->tsc;
    return (x > y) - (x < y);
}

/* Largest distance between the model and the chord through the samples,
 * over a grid of 4000 points from the first to the last sample. Samples with
 * a wide bracket (interrupted) are left out of the chord. */
static double max_chord_distance(const struct tf_cpu_model *m, struct tf_sample *s, size_t n)
{
    qsort(s, n, sizeof *s, by_tsc);
    uint32_t narrow = 400; /* ticks: the fixture's brackets are ~200 */
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i].width <= narrow)
            s[k++] = s[i];
    assert_true(k > n / 2);
    double worst = 0;
    uint32_t hint = 0;
    size_t j = 0;
    for (int g = 0; g <= 4000; g++) {
        uint64_t t = s[0].tsc + (uint64_t)((double)(s[k - 1].tsc - s[0].tsc) * g / 4000);
        while (j + 2 < k && s[j + 1].tsc <= t)
            j++;
        double x0 = (double)s[j].tsc, x1 = (double)s[j + 1].tsc;
        double y0 = (double)s[j].ref_ns, y1 = (double)s[j + 1].ref_ns;
        double chord = y0 + (y1 - y0) * ((double)t - x0) / (x1 - x0);
        double d = fabs(sm_eval(m, t, &hint) - chord);
        worst = d > worst ? d : worst;
    }
    return worst;
}

/* Fits the fixture with `kind`; returns the model's farthest distance from
 * the chord through the samples. */
static double fit_fixture(enum sm_kind kind, struct sm_result *r)
{
    size_t n;
    double hz;
    struct tf_sample *s = load(&n, &hz);
    struct tf_sample *copy = malloc(n * sizeof *s);
    assert_non_null(copy);
    memcpy(copy, s, n * sizeof *s);
    assert_int_equal(sm_fit_cpu(1, s, n, kind, 1e9 / hz, 0, NULL, r, NULL), 0);
    double d = max_chord_distance(&r->m, copy, n);
    free(copy);
    free(s);
    return d;
}

static void piecewise_model_stays_on_the_samples_across_gaps(void **st)
{
    (void)st;
    struct sm_result r;
    double d = fit_fixture(SM_PIECEWISE, &r);
    assert_int_equal(r.how, SM_HOW_FIT);
    assert_int_equal(r.kind, SM_PIECEWISE);
    assert_true(r.m.nseg >= 2);    /* the drift change needs a knot */
    assert_true(r.m.rms_ns < 50);  /* and the model follows the samples */
    print_message("  %u segments, rms %.1f ns, farthest from the chord %.0f ns\n", r.m.nseg, r.m.rms_ns, d);
    assert_true(d < CHORD_LIMIT_NS);
}

static void every_segment_runs_at_a_clock_rate(void **st)
{
    (void)st;
    struct sm_result r;
    fit_fixture(SM_PIECEWISE, &r);
    /* Against the first segment's rate; the injected drifts differ by a few
     * hundred ppm. */
    for (uint32_t k = 0; k < r.m.nseg; k++)
        assert_true(fabs(r.m.seg[k].a / r.m.seg[0].a - 1) < 2e-3);
    for (uint32_t k = 1; k < r.m.nseg; k++)
        assert_true(r.m.seg[k].tsc_from > r.m.seg[k - 1].tsc_from);
}

static void auto_chooses_piecewise_for_a_drift_change(void **st)
{
    (void)st;
    struct sm_result r;
    double d = fit_fixture(SM_AUTO, &r);
    assert_int_equal(r.kind, SM_PIECEWISE);
    assert_true(d < CHORD_LIMIT_NS);
}

static void linear_model_cannot_follow_the_change(void **st)
{
    (void)st;
    /* The contrast that makes the other tests meaningful: one line over the
     * pre and post phases misses the in-run samples by far more than the
     * chord limit. */
    struct sm_result r;
    double d = fit_fixture(SM_LINEAR, &r);
    assert_int_equal(r.m.nseg, 1);
    assert_true(d > CHORD_LIMIT_NS);
}

/* A run as a loaded machine gives it (1 GHz, ns_per_tick 1): 1000 pre-run
 * samples in 20 ms, in-run samples every 10 ms for 1.3 s, 1000 post-run ones
 * in 20 ms; the clock runs 60 ppm slow until 550 ms and 180 ppm fast after
 * (a continuous line with one bend), plus a few ns of jitter. 550 ms lies
 * between two of the 16 evenly spaced knot candidates of the whole span. */
#define BEND_N (1000 + 128 + 1000)
#define BEND_AT_NS 550000000.0
static double bend_truth(double t)
{
    return t < BEND_AT_NS ? t * (1 - 60e-6) : BEND_AT_NS * (1 - 60e-6) + (t - BEND_AT_NS) * (1 + 180e-6);
}

static void bend_samples(struct tf_sample *s)
{
    for (unsigned i = 0; i < BEND_N; i++) {
        double t;
        uint8_t phase;
        if (i < 1000) {
            t = i * 20000.0;
            phase = TF_PHASE_PRE;
        } else if (i < 1128) {
            t = 20e6 + (i - 1000) * 10e6;
            phase = TF_PHASE_INRUN;
        } else {
            t = 1300e6 + (i - 1128) * 20000.0;
            phase = TF_PHASE_POST;
        }
        uint64_t tsc = 1000000000000ull + (uint64_t)t;
        s[i] = (struct tf_sample){ .tsc = tsc, .ref_ns = 5000000000000ull + (uint64_t)llround(bend_truth(t)) + (i * 7) % 5,
                                   .truth_tsc = tsc, .width = 40, .cpu = 1, .phase = phase };
    }
}

static void a_drift_change_between_knot_candidates_is_placed_where_it_happened(void **st)
{
    (void)st;
    static struct tf_sample s[BEND_N];
    static uint8_t verdict[BEND_N];
    bend_samples(s);
    struct sm_result r;
    assert_int_equal(sm_fit_cpu(1, s, BEND_N, SM_PIECEWISE, 1.0, 0, NULL, &r, verdict), 0);
    assert_int_equal(r.how, SM_HOW_FIT);
    /* every in-run sample is evidence, none an outlier */
    assert_int_equal(r.rejected_outlier, 0);
    /* and the model is within a bin's worth of bend (1 ms x 240 ppm / 4 =
     * 60 ns) of the true clock everywhere; a knot one coarse step off was
     * microseconds wrong */
    double worst = 0;
    uint32_t hint = 0;
    bend_samples(s);
    for (unsigned i = 0; i < BEND_N; i++) {
        double t = (double)(s[i].tsc - 1000000000000ull);
        double model = sm_eval(&r.m, s[i].tsc, &hint) - 5000000000000.0;
        worst = fmax(worst, fabs(model - bend_truth(t)));
    }
    print_message("  %u segments, farthest from the true clock %.0f ns\n", r.m.nseg, worst);
    assert_true(worst < 100);
}

/* 60 samples 1 ms apart on one line (1 GHz), given in reverse time order:
 * pre-run, 10 in-run, post-run; sample WIDE has an interrupted bracket,
 * sample FAR a reference 3 us off the line. */
#define VERDICT_N 60
#define VERDICT_WIDE 7
#define VERDICT_FAR 45
static void verdict_samples(struct tf_sample *s)
{
    for (unsigned i = 0; i < VERDICT_N; i++) {
        unsigned k = VERDICT_N - 1 - i;   /* time order */
        uint64_t tsc = 1000000000ull + 1000000ull * k;
        s[i] = (struct tf_sample){ .tsc = tsc, .ref_ns = tsc + 5000 + (k * 7) % 5, .truth_tsc = tsc,
                                   .width = 100, .cpu = 1,
                                   .phase = k < 25 ? TF_PHASE_PRE : k < 35 ? TF_PHASE_INRUN : TF_PHASE_POST };
    }
    s[VERDICT_WIDE].width = 10000;
    s[VERDICT_FAR].ref_ns += 3000;
}

static void each_sample_gets_the_verdict_that_its_counts_report(void **st)
{
    (void)st;
    enum sm_kind kinds[] = { SM_LINEAR, SM_PIECEWISE };
    for (unsigned k = 0; k < 2; k++) {
        struct tf_sample s[VERDICT_N];
        uint8_t verdict[VERDICT_N];
        unsigned count[4] = { 0 };
        struct sm_result r;
        verdict_samples(s);
        memset(verdict, 0xff, sizeof verdict);
        assert_int_equal(sm_fit_cpu(1, s, VERDICT_N, kinds[k], 1.0, 0, NULL, &r, verdict), 0);
        assert_int_equal(r.how, SM_HOW_FIT);
        assert_int_equal(verdict[VERDICT_WIDE], SM_REJECTED_WIDTH);
        assert_int_equal(verdict[VERDICT_FAR], SM_REJECTED_OUTLIER);
        for (unsigned i = 0; i < VERDICT_N; i++) {
            assert_true(verdict[i] <= SM_REJECTED_OUTLIER);
            count[verdict[i]]++;
            unsigned t = VERDICT_N - 1 - i;
            int inrun = t >= 25 && t < 35;
            if (i != VERDICT_WIDE && i != VERDICT_FAR)
                assert_int_equal(verdict[i], inrun && kinds[k] == SM_LINEAR ? SM_UNFITTED : SM_USED);
        }
        assert_int_equal(count[SM_USED], r.m.used);
        assert_int_equal(count[SM_REJECTED_WIDTH], r.rejected_width);
        assert_int_equal(count[SM_REJECTED_OUTLIER], r.rejected_outlier);
        assert_int_equal(count[SM_REJECTED_WIDTH] + count[SM_REJECTED_OUTLIER], r.m.rejected);
        assert_int_equal(count[SM_UNFITTED], kinds[k] == SM_LINEAR ? 10 : 0);
    }
}

/* A long run's exact clock: pre and post samples a minute and more apart,
 * 50 ticks of noise. Its sum of squares, taken from moments, once came out
 * below zero by rounding, and the fit was refused. */
static void a_long_runs_nearly_exact_clock_is_fitted(void **st)
{
    (void)st;
    const size_t n = 1700;
    struct tf_sample *s = calloc(n, sizeof *s);
    assert_non_null(s);
    uint64_t x = 88172645463325252ull;
    const double spans[] = { 60e9, 600e9 };
    for (int k = 0; k < 2; k++) {
        for (int rep = 0; rep < 20; rep++) {
            for (size_t i = 0; i < n; i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                double ref = 5e9 + (i < n / 2 ? (double)i * 5e5 : spans[k] - (double)(n - i) * 5e5);
                double tsc = 1e12 + (ref - 5e9) * 2.6 + ((double)(x % 20001) / 10000.0 - 1.0) * 50;
                s[i] = (struct tf_sample){ .tsc = (uint64_t)tsc, .ref_ns = (uint64_t)ref, .truth_tsc = (uint64_t)tsc,
                                           .width = 80, .phase = (uint8_t)(i < n / 2 ? TF_PHASE_PRE : TF_PHASE_POST) };
            }
            struct sm_result r;
            assert_int_equal(sm_fit_cpu(0, s, n, SM_LINEAR, 1 / 2.6, 0, NULL, &r, NULL), 0);
            assert_true(fabs(r.m.drift_ppm) < 0.1);
        }
    }
    free(s);
}

/* sm_segment's range is exactly the TSCs for which sm_eval takes its
 * segment, from any hint: a caller may convert them all with its line. */
static void a_segments_range_holds_every_tsc_sm_eval_takes_it_for(void **st)
{
    (void)st;
    struct tf_cpu_model m = { .nseg = 3 };
    const uint64_t from[3] = { 0, 1000, 5000 };
    for (unsigned k = 0; k < 3; k++)
        m.seg[k] = (struct tf_model_segment){ from[k], 1.0 + k, 10.0 * k };
    const uint64_t probes[] = { 0, 1, 999, 1000, 1001, 4999, 5000, 5001, UINT64_MAX / 2 };
    for (size_t i = 0; i < sizeof probes / sizeof *probes; i++) {
        for (uint32_t h0 = 0; h0 < 4; h0++) {
            uint32_t hint = h0;
            uint64_t lo, hi;
            const struct tf_model_segment *g = sm_segment(&m, probes[i], &hint, &lo, &hi);
            unsigned k = (unsigned)(g - m.seg);
            assert_true(lo <= probes[i] && probes[i] <= hi);
            assert_int_equal(lo, from[k]);
            assert_int_equal(hi, k < 2 ? from[k + 1] - 1 : UINT64_MAX);
            for (uint32_t h1 = 0; h1 < 4; h1++) {
                uint32_t a = h1, b = h1;
                assert_true(sm_eval(&m, lo, &a) == g->a * (double)lo + g->b && a == k);
                assert_true(sm_eval(&m, hi, &b) == g->a * (double)hi + g->b && b == k);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(piecewise_model_stays_on_the_samples_across_gaps),
        cmocka_unit_test(every_segment_runs_at_a_clock_rate),
        cmocka_unit_test(auto_chooses_piecewise_for_a_drift_change),
        cmocka_unit_test(linear_model_cannot_follow_the_change),
        cmocka_unit_test(a_drift_change_between_knot_candidates_is_placed_where_it_happened),
        cmocka_unit_test(each_sample_gets_the_verdict_that_its_counts_report),
        cmocka_unit_test(a_long_runs_nearly_exact_clock_is_fitted),
        cmocka_unit_test(a_segments_range_holds_every_tsc_sm_eval_takes_it_for),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
