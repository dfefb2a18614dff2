/*
 * check_report.h - how tmcheck presents its results: the text report, the
 * JSON object and the CSV files.
 *
 * Owns: formatting, quoting (JSON strings, CSV fields) and the files of
 * --csv DIR (written atomically through tool_common). The part that explains
 * the aborts is check_causes.c's, which the report calls (never the other
 * way: both read check_report_input.h).
 * Never: computes metrics (the analyses do) or decides the exit code.
 */
#ifndef TMT_CHECK_REPORT_H
#define TMT_CHECK_REPORT_H

#include <stdio.h>

#include "check_analysis.h"
#include "check_report_input.h"

void cr_text(FILE *f, const struct cr_input *in);
void cr_json(FILE *f, const struct cr_input *in);
/* Writes DIR/sites.csv, DIR/conflicts.csv, DIR/threads.csv. 0, or the
 * tool's exit code 2 after a one-line message. */
int cr_csv(const char *dir, const struct cr_input *in);

struct sym_table;
struct tool_out;
/* DIR/aborts.csv, one row per STM abort as it is resolved: open it (header
 * written) before the events stream, pass cr_abort_row and a cr_abort_rows to
 * ca_listen, commit it with the others. 0 or exit code 2. */
int cr_aborts_open(const char *dir, struct tool_out *o);
/* What cr_abort_row writes with: the file, the sites' and symbols' names. */
struct cr_abort_rows {
    FILE *f;
    const struct trace_index *ix;
    struct sym_table *sym;
    const struct ca_state *st;   /* the allocations, for blocks' names */
};
void cr_abort_row(void *rows, const struct ca_attribution *a);

#endif
