/*
 * fuzz_sync_model.c - libFuzzer target for tmsync's clock model fitting
 * (sync_model.c) on arbitrary sample sets.
 *
 * Owns: decoding a byte string into a model kind, a TSC period and a set of
 * (TSC, reference, width, phase) samples for one CPU, fitting them with and
 * without a pooled fallback, and asserting the documented contract: no
 * crash; the inputs are finite, so every number of the model is finite;
 * segments are sorted and start at 0; used + rejected never exceeds the
 * samples; a CPU with fewer than SM_MIN_SAMPLES usable samples gets no slope
 * of its own (a fallback `how`) when a pooled model exists; with no samples
 * and no pooled model the fit fails (-1) instead of inventing one; the
 * model's inverse and evaluation stay finite.
 * Never: reads files or prints.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sync_model.h"
#include "fuzz_util.h"

#define FUZZ_SAMPLE_BYTES 12
#define FUZZ_MAX_SAMPLES 4096

static void fuzz_model_sane(const struct sm_result *r, size_t n)
{
    const struct tf_cpu_model *m = &r->m;
    if (m->nseg < 1 || m->nseg > 256)
        abort();
    if (!isfinite(m->drift_ppm) || !isfinite(m->offset_ns) || !isfinite(m->rms_ns) || !isfinite(m->max_ns))
        abort();
    if ((size_t)m->used + m->rejected > n)
        abort();
    if (m->seg[0].tsc_from != 0)
        abort();
    for (uint32_t k = 0; k < m->nseg; k++) {
        if (!isfinite(m->seg[k].a) || !isfinite(m->seg[k].b))
            abort();
        if (k && m->seg[k].tsc_from < m->seg[k - 1].tsc_from)
            abort();
    }
    uint32_t hint = 0;
    static const uint64_t probes[] = {0, 1, 1000000, UINT64_C(1) << 40, UINT64_MAX / 2};
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++)
        if (!isfinite(sm_eval(m, probes[i], &hint)) || hint >= m->nseg)
            abort();
    (void)sm_inverse(m, 1e9);
}

/* A fitted CPU's verdicts add up to its counts (tmsync --json lists the
 * rejected samples by these verdicts). */
static void fuzz_verdicts_match(const struct sm_result *r, const uint8_t *verdict, size_t n)
{
    size_t count[4] = { 0 };
    for (size_t i = 0; i < n; i++) {
        if (verdict[i] > SM_REJECTED_OUTLIER)
            abort();
        count[verdict[i]]++;
    }
    if (r->how == SM_HOW_FIT && (count[SM_USED] != r->m.used || count[SM_REJECTED_WIDTH] != r->rejected_width ||
                                 count[SM_REJECTED_OUTLIER] != r->rejected_outlier ||
                                 count[SM_REJECTED_WIDTH] + count[SM_REJECTED_OUTLIER] != r->m.rejected))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    enum sm_kind kind = (enum sm_kind)(1 + data[0] % 3);
    double ns_per_tick = 0.05 + data[1] / 64.0;  /* 20 GHz .. 0.25 GHz */
    int truth = data[2] & 1;
    int scale = data[2] >> 1; /* spreads samples from ticks apart to hours apart */
    data += 3;
    size -= 3;
    size_t n = size / FUZZ_SAMPLE_BYTES;
    if (n > FUZZ_MAX_SAMPLES)
        n = FUZZ_MAX_SAMPLES;
    struct tf_sample *s = calloc(n ? n : 1, sizeof *s);
    struct tf_sample *copy = calloc(n ? n : 1, sizeof *copy);
    if (!s || !copy)
        abort();
    uint64_t tsc = 1u << 20, ref = 1u << 20;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = data + i * FUZZ_SAMPLE_BYTES;
        tsc += fuzz_le(p, 4) << (scale % 24);
        ref += fuzz_le(p + 4, 4) << (scale % 24);
        s[i].tsc = p[11] & 0x80 ? fuzz_le(p, 8) : tsc;   /* now and then a wild value */
        s[i].ref_ns = ref;
        s[i].truth_tsc = tsc;
        s[i].width = (uint32_t)fuzz_le(p + 8, 2) << (p[10] & 15);
        s[i].cpu = 0;
        s[i].phase = p[11] % 3;
    }
    memcpy(copy, s, n * sizeof *s);

    struct sm_result pooled, own;
    uint8_t *verdict = malloc(n ? n : 1);
    if (!verdict)
        abort();
    int rp = sm_fit_cpu(0, s, n, kind, ns_per_tick, truth, NULL, &pooled, verdict);
    if (rp == 0) {
        fuzz_model_sane(&pooled, n);
        fuzz_verdicts_match(&pooled, verdict, n);
    }
    free(verdict);
    if (n == 0 && rp == 0)
        abort(); /* no samples and no pooled model: nothing to fit */

    /* The same CPU's first few samples only, with the pooled model behind. */
    size_t few = n < SM_MIN_SAMPLES - 1 ? n : SM_MIN_SAMPLES - 1;
    if (rp == 0) {
        if (sm_fit_cpu(1, copy, few, kind, ns_per_tick, truth, &pooled, &own, NULL) != 0)
            abort(); /* a pooled model is always a way out */
        fuzz_model_sane(&own, few);
        if (own.how == SM_HOW_FIT)
            abort(); /* too few samples: never a slope of its own */
    }
    free(s);
    free(copy);
    return 0;
}
