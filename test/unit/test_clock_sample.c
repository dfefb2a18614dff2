/*
 * test_clock_sample.c - sampling phases, the in-run bracket, the frequency
 * fit and injection applied to samples.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "clock.h"
#include "clock_sample.h"
#include "config.h"
#include "skew.h"

static int cpus[1024];
static int ncpus;

static int setup(void **state)
{
    (void)state;
    ncpus = cs_cpus(cpus, 1024);
    return ncpus > 0 ? 0 : -1;
}

static void usable_cpus_are_listed_once_in_order(void **state)
{
    (void)state;
    assert_true(ncpus >= 1);
    for (int i = 1; i < ncpus; i++)
        assert_true(cpus[i] > cpus[i - 1]);
}

static void a_phase_yields_samples_on_every_cpu(void **state)
{
    (void)state;
    for (unsigned phase = TF_PHASE_PRE; phase <= TF_PHASE_POST; phase++) {
        struct cs_set set = { 0 };
        assert_int_equal(cs_phase(phase, cpus, ncpus, 20, CONFIG_CLOCK_MONOTONIC, &set), 0);
        for (int c = 0; c < ncpus; c++) {
            size_t got = 0;
            uint64_t last_ref = 0;
            for (size_t i = 0; i < set.n; i++) {
                const struct tf_sample *s = &set.s[i];
                assert_int_equal(s->phase, phase);
                assert_int_equal(s->tsc, s->truth_tsc);
                if (s->cpu != cpus[c])
                    continue;
                assert_true(s->ref_ns > last_ref); /* in time order per CPU */
                last_ref = s->ref_ns;
                got++;
            }
            if (got < 50)
                fail_msg("CPU %d: only %zu samples in 20 ms", cpus[c], got);
        }
        cs_set_free(&set);
    }
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void fitted_frequency_matches_a_two_point_measurement(void **state)
{
    (void)state;
    uint32_t aux;
    uint64_t n0 = now_ns(), t0 = clock_rdtscp(&aux);
    struct cs_set set = { 0 };
    assert_int_equal(cs_phase(TF_PHASE_PRE, cpus, ncpus, 30, CONFIG_CLOCK_MONOTONIC_RAW, &set), 0);
    uint64_t t1 = clock_rdtscp(&aux), n1 = now_ns();
    double two_point = (double)(t1 - t0) * 1e9 / (double)(n1 - n0);
    uint64_t hz = cs_fit_hz(set.s, set.n);
    assert_true(hz > 0);
    double rel = ((double)hz - two_point) / two_point;
    if (rel > 0.01 || rel < -0.01)
        fail_msg("fit %llu Hz vs two-point %.0f Hz", (unsigned long long)hz, two_point);
    assert_int_equal(cs_fit_hz(set.s, 1), 0); /* one sample cannot give a slope */
    cs_set_free(&set);
}

/* Samples of several CPUs, interleaved, each CPU's TSC on its own base and
 * rate: the fit is each CPU's own slope, and the median of those is the
 * frequency; a CPU whose samples span under a millisecond, and one past
 * the fit's range, take no part. */
static void the_frequency_is_the_median_of_each_cpus_own_slope(void **state)
{
    (void)state;
    static const struct { uint16_t cpu; double ticks_per_ns; uint64_t base, step_ns; } cpu[] = {
        { 3, 2.0, 1000000000000ull, 5000 }, { 0, 3.0, 7ull, 7000 }, { 17, 2.5, 500000000000000ull, 3000 },
        { 1, 9.0, 0, 100 } /* 2000 samples 100 ns apart: 0.2 ms */, { 4999, 9.0, 0, 5000 } };
    enum { NCPU = sizeof cpu / sizeof cpu[0], PER = 2000 };
    static struct tf_sample s[NCPU * PER];
    size_t n = 0;
    for (size_t i = 0; i < PER; i++)
        for (size_t c = 0; c < NCPU; c++) {
            uint64_t ns = 1000000000ull + i * cpu[c].step_ns + c;
            s[n] = (struct tf_sample){ .cpu = cpu[c].cpu, .ref_ns = ns,
                                       .truth_tsc = cpu[c].base + (uint64_t)((double)ns * cpu[c].ticks_per_ns) };
            s[n].tsc = s[n].truth_tsc;
            n++;
        }
    uint64_t hz = cs_fit_hz(s, n);
    if (hz < 2499999000u || hz > 2500001000u)
        fail_msg("fit %llu Hz, expected 2.5 GHz (the median of 2, 2.5 and 3 ticks per ns)", (unsigned long long)hz);
}

static void a_bracket_is_narrow_and_names_its_cpu(void **state)
{
    (void)state;
    int ok = 0;
    for (int i = 0; i < 1000; i++) {
        struct tf_sample s;
        if (!cs_inrun(CONFIG_CLOCK_MONOTONIC, 1, &s))
            continue;
        ok++;
        assert_true(s.width > 0);
        assert_true(s.width < 10000000u);
        int listed = 0;
        for (int c = 0; c < ncpus; c++)
            listed |= cpus[c] == s.cpu;
        assert_true(listed);
    }
    assert_true(ok > 900);
}

static void injection_moves_sample_tsc_and_keeps_truth(void **state)
{
    (void)state;
    struct cs_set set = { 0 };
    assert_int_equal(cs_phase(TF_PHASE_POST, cpus, ncpus, 5, CONFIG_CLOCK_MONOTONIC, &set), 0);
    assert_true(set.n > 0);
    struct tf_skew sk = { .cpu = (uint32_t)cpus[0], .offset_ns = 1000000, .drift_ppm = 0, .change_ms = -1 };
    skew_init(&sk, 1, 1000000000u, 0); /* 1 GHz: 1 ms = 1e6 ticks */
    cs_apply_skew(set.s, set.n);
    for (size_t i = 0; i < set.n; i++)
        assert_int_equal(set.s[i].tsc - set.s[i].truth_tsc, set.s[i].cpu == cpus[0] ? 1000000u : 0u);
    skew_init(NULL, 0, 0, 0);
    cs_set_free(&set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(usable_cpus_are_listed_once_in_order),
        cmocka_unit_test(a_phase_yields_samples_on_every_cpu),
        cmocka_unit_test(fitted_frequency_matches_a_two_point_measurement),
        cmocka_unit_test(the_frequency_is_the_median_of_each_cpus_own_slope),
        cmocka_unit_test(a_bracket_is_narrow_and_names_its_cpu),
        cmocka_unit_test(injection_moves_sample_tsc_and_keeps_truth),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
