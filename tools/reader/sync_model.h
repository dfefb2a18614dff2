/*
 * sync_model.h - fitting one CPU's TSC to the reference clock.
 *
 * Owns: the per-CPU clock models of tmsync (linear, piecewise-linear,
 * automatic choice), sample rejection (wide brackets, residual outliers),
 * the fallback for CPUs with too few samples, and evaluating a model.
 * Never: reads or writes files, prints, or keeps samples after a fit.
 */
#ifndef TMT_SYNC_MODEL_H
#define TMT_SYNC_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "trace_file.h"

enum sm_kind { SM_NONE = 0, SM_LINEAR = 1, SM_PIECEWISE = 2, SM_AUTO = 3 };

/* How a CPU's model came about (for the table). */
enum sm_how {
    SM_HOW_FIT = 0,        /* its own samples, model as asked */
    SM_HOW_OFFSET_ONLY,    /* too few samples for a slope: pooled slope, own offset */
    SM_HOW_POOLED          /* no usable samples: the pooled fit of all CPUs */
};

/* Fewer usable samples than this, or spanning less reference time than
 * SM_MIN_SPAN_NS, and a CPU gets no slope of its own. */
#define SM_MIN_SAMPLES 4
#define SM_MIN_SPAN_NS 5000000.0

struct sm_result {
    struct tf_cpu_model m;    /* what goes into the MODEL chunk */
    enum sm_kind kind;        /* SM_LINEAR or SM_PIECEWISE as chosen */
    enum sm_how how;
    uint32_t rejected_width;  /* of m.rejected: wide brackets */
    uint32_t rejected_outlier;/* of m.rejected: residual outliers */
};

/* What a fit made of one sample. */
enum sm_verdict {
    SM_USED = 0,          /* in the final fit */
    SM_UNFITTED,          /* an in-run sample, which a linear fit leaves out: counted neither way */
    SM_REJECTED_WIDTH,    /* a wide bracket (rejected_width) */
    SM_REJECTED_OUTLIER   /* a residual outlier (rejected_outlier) */
};

/* Fits CPU `cpu` from `s` (the samples of that CPU only, any order; the
 * array is reordered). `ns_per_tick` is the nominal 1e9 / tsc_hz used for
 * drift_ppm. `truth` selects truth_tsc instead of tsc as the abscissa.
 * `pooled` (may be NULL) is used when the CPU has too few samples.
 * `verdict` (may be NULL) receives an enum sm_verdict per sample, indexed
 * like `s`. Returns 0, or -1 if no model could be made (no samples and no
 * pooled). */
int sm_fit_cpu(uint32_t cpu, struct tf_sample *s, size_t n, enum sm_kind kind, double ns_per_tick,
               int truth, const struct sm_result *pooled, struct sm_result *out, uint8_t *verdict);

/* The model's reference ns for a TSC value; `hint` caches the segment index
 * between calls (start it at 0). */
static inline double sm_eval(const struct tf_cpu_model *m, uint64_t tsc, uint32_t *hint)
{
    uint32_t k = *hint;
    if (k >= m->nseg)
        k = 0;
    /* Segments are sorted by tsc_from and the first starts at 0; events of
     * one thread mostly move forward, so walking from the last one is cheap. */
    while (k + 1 < m->nseg && tsc >= m->seg[k + 1].tsc_from)
        k++;
    while (k > 0 && tsc < m->seg[k].tsc_from)
        k--;
    *hint = k;
    return m->seg[k].a * (double)tsc + m->seg[k].b;
}

/* The segment of `m` sm_eval takes for `tsc` (whatever the hint), and the
 * TSCs it takes it for: [*lo, *hi]. A caller converting a run of stamps
 * keeps the segment while they stay in that range. */
static inline const struct tf_model_segment *sm_segment(const struct tf_cpu_model *m, uint64_t tsc, uint32_t *hint,
                                                  uint64_t *lo, uint64_t *hi)
{
    (void)sm_eval(m, tsc, hint);
    uint32_t k = *hint;
    *lo = k ? m->seg[k].tsc_from : 0;
    *hi = k + 1 < m->nseg ? m->seg[k + 1].tsc_from - 1 : UINT64_MAX;
    return &m->seg[k];
}

/* Rounds a model value to a stamp (negative values clamp to 0). */
static inline uint64_t sm_to_ns(double v)
{
    return v <= 0.0 ? 0 : (uint64_t)(v + 0.5);
}

/* The TSC at which the model reaches reference time `ns` (first segment
 * whose range holds it; used for offsets between CPUs). */
double sm_inverse(const struct tf_cpu_model *m, double ns);

const char *sm_kind_name(enum sm_kind k);
const char *sm_how_name(enum sm_how h);

#endif
