/*
 * trace_complete.h - whether a trace holds every record its run made, and
 * the one line that says what it lost; tmsync and tmcheck share it.
 *
 * Owns: the verdict (an END chunk, the signal it names, the tracer's
 * drops, the chunks the writer failed to write), the span of the records
 * read (for "the last record at"), the one-line reason, the warning on
 * stderr and the JSON members `complete` and `incomplete`.
 * Never: reads the file (the index and the caller's span are its input) or
 * decides a tool's exit code beyond naming TOOL_INCOMPLETE (tool_common.h).
 */
#ifndef TMT_TRACE_COMPLETE_H
#define TMT_TRACE_COMPLETE_H

#include <stddef.h>
#include <stdint.h>

#include "trace_index.h"

struct jw;

/* The stamps of the records read, in trace time units (ns_per_unit: 1 in a
 * synced trace, 1e9 / tsc_hz in a raw one). */
struct tc_span {
    uint64_t first, last, records;
    double ns_per_unit;
};

static inline void tc_span_add(struct tc_span *s, uint64_t ts)
{
    if (!s->records++ || ts < s->first)
        s->first = ts;
    if (s->records == 1 || ts > s->last)
        s->last = ts;
}

/* Adds span `b` (of other records) to `s`. */
static inline void tc_span_join(struct tc_span *s, const struct tc_span *b)
{
    if (!b->records)
        return;
    if (!s->records || b->first < s->first)
        s->first = b->first;
    if (!s->records || b->last > s->last)
        s->last = b->last;
    s->records += b->records;
}

struct tc_verdict {
    int complete;             /* an END chunk without a signal, no drops, no writer errors */
    int have_end;
    uint32_t signal;          /* the END's terminating signal, 0 = none */
    uint64_t dropped;         /* the END's drop count (unknown without one) */
    uint64_t writer_errors;   /* chunks the writer failed to write (END) */
    uint64_t records;
    double last_record_s;     /* the last record's stamp after the first, in s */
    char line[640];           /* "" when complete; else what is missing; last record; drops */
};

void tc_judge(const struct trace_index *ix, const struct tc_span *span, struct tc_verdict *v);
/* "TOOL: warning: PATH: incomplete trace: LINE" on stderr; TOOL_INCOMPLETE.
 * Nothing and TOOL_OK for a complete trace. */
int tc_warn(const char *path, const struct tc_verdict *v);
/* The members `complete` and, when false, `incomplete` (docs/json.md). */
void tc_json(struct jw *w, const struct tc_verdict *v);
/* "signal 11 (SIGSEGV)" into buf (n bytes; "signal 99" for a number
 * without a name here); returns buf. */
const char *tc_signal_text(uint32_t sig, char *buf, size_t n);

#endif
