/*
 * check_report.h - how tmcheck presents its results: the text report, the
 * JSON object and the CSV files.
 *
 * Owns: formatting, quoting (JSON strings, CSV fields) and the files of
 * --csv DIR (written atomically through tool_common).
 * Never: computes metrics (check_analysis does) or decides the exit code.
 */
#ifndef TMT_CHECK_REPORT_H
#define TMT_CHECK_REPORT_H

#include <stdio.h>

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
};

void cr_text(FILE *f, const struct cr_input *in);
void cr_json(FILE *f, const struct cr_input *in);
/* Writes DIR/sites.csv, DIR/conflicts.csv, DIR/threads.csv. 0, or the
 * tool's exit code 2 after a one-line message. */
int cr_csv(const char *dir, const struct cr_input *in);

struct tool_out;
/* DIR/aborts.csv, one row per STM abort as it is resolved: open it (header
 * written) before the events stream, pass cr_abort_row and a cr_abort_rows to
 * ca_on_attribution, commit it with the others. 0 or exit code 2. */
int cr_aborts_open(const char *dir, struct tool_out *o);
/* What cr_abort_row writes with: the file, the sites' and symbols' names. */
struct cr_abort_rows {
    FILE *f;
    const struct trace_index *ix;
    struct sym_table *sym;
};
void cr_abort_row(void *rows, const struct ca_attribution *a);

#endif
