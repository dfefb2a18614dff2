/*
 * check_report_input.h - what tmcheck's report is made from: the trace, its
 * analysis and the facts the tool found about it, in one struct that both
 * parts of the report read.
 *
 * Owns: struct cr_input. A header alone, below both check_report.c (the
 * report) and check_causes.c (its part that explains the aborts), so that
 * the report can call the causes and the causes need not include the report.
 * Never: holds code; computes or prints anything.
 */
#ifndef TMT_CHECK_REPORT_INPUT_H
#define TMT_CHECK_REPORT_INPUT_H

#include <stdint.h>

#include "check_analysis.h"
#include "trace_complete.h"
#include "trace_index.h"

struct sym_table;

struct cr_input {
    const char *path;
    const struct trace_index *ix;
    const struct ca_state *st;
    int synced;
    int have_accesses;
    int have_truth;
    uint64_t dropped;
    uint64_t skipped_chunks;
    const struct tc_verdict *verdict;   /* whether the trace holds every record of its run */
    double uncertainty_ns;
    unsigned stripes_log2;
    unsigned stripe_shift;      /* log2 of the bytes a stripe covers */
    unsigned format_version;
    double event_cost_ns;       /* the tracer's estimated cost per event */
    int event_cost_measured;    /* calibrated by the traced run (RUNINFO), else assumed */
    struct sym_table *sym;      /* names of addresses (symbols.h); may be NULL */
    double span_ns;             /* first to last record of the trace */
};

#endif
