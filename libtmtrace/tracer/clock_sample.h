/*
 * clock_sample.h - pairs of (TSC, reference clock) readings for the offline
 * clock model: the pre-run and post-run sampling phases and the single
 * bracket a tracing thread takes during the run.
 *
 * Owns: the sampling threads (one per usable CPU, pinned), the bracket
 * rdtscp / clock_gettime / rdtscp and its acceptance rule (both rdtscp on the
 * expected CPU), and the TSC frequency estimate fitted from the samples.
 * Never runs on the event path; the phases allocate and create threads.
 */
#ifndef TMT_CLOCK_SAMPLE_H
#define TMT_CLOCK_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "trace_file.h"

/* A growable array of samples. */
struct cs_set {
    struct tf_sample *s;
    size_t n, cap;
};

/* The CPUs this process may run on (sched_getaffinity), ascending. Returns
 * how many were stored (at most max), or -1 with error_get(). */
int cs_cpus(int *cpus, int max);

/* Runs one sampling phase: a thread pinned to each CPU in `cpus` takes
 * brackets for `ms` milliseconds on the reference clock `ref_clock` (enum
 * config_clock). Samples are appended to `out` with truth_tsc = tsc (the
 * caller applies injection with cs_apply_skew). Returns 0 or -1. */
int cs_phase(unsigned phase, const int *cpus, int ncpus, int64_t ms, int ref_clock, struct cs_set *out);

/* The in-run sample of a tracing thread (`thread`: its tracer id): one
 * bracket (rdtscp, the reference clock, rdtscp; the midpoint's TSC, the
 * width between the two reads) on the calling thread, injected like the
 * events. 1 and *out filled, or 0 (both reads did not name one CPU: it
 * migrated inside the bracket, no sample this time). */
int cs_inrun(int ref_clock, uint32_t thread, struct tf_sample *out);

/* Replaces tsc by the injected value of truth_tsc (skew_apply). */
void cs_apply_skew(struct tf_sample *s, size_t n);

/* TSC ticks per second fitted (least squares, per CPU, then the median over
 * CPUs) from the samples' truth; 0 if they span too little time. */
uint64_t cs_fit_hz(const struct tf_sample *s, size_t n);

void cs_set_free(struct cs_set *set);

#endif
