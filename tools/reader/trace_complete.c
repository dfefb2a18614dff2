/*
 * trace_complete.c - what a trace lost, said once for tmsync and tmcheck
 * (see trace_complete.h and docs/analysis.md, "Incomplete traces").
 */
#include "trace_complete.h"

#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "json_writer.h"
#include "tool_common.h"

static const char *tc_signal_name(uint32_t sig)
{
#define TC_SIG(s) { s, #s }
    static const struct {
        int sig;
        const char *name;
    } names[] = {
        TC_SIG(SIGHUP),  TC_SIG(SIGINT),  TC_SIG(SIGQUIT), TC_SIG(SIGILL),  TC_SIG(SIGTRAP),
        TC_SIG(SIGABRT), TC_SIG(SIGBUS),  TC_SIG(SIGFPE),  TC_SIG(SIGKILL), TC_SIG(SIGUSR1),
        TC_SIG(SIGSEGV), TC_SIG(SIGUSR2), TC_SIG(SIGPIPE), TC_SIG(SIGALRM), TC_SIG(SIGTERM),
        TC_SIG(SIGXCPU), TC_SIG(SIGXFSZ), TC_SIG(SIGSYS),
    };
#undef TC_SIG
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((uint32_t)names[i].sig == sig)
            return names[i].name;
    return NULL;
}

const char *tc_signal_text(uint32_t sig, char *buf, size_t n)
{
    const char *name = tc_signal_name(sig);
    if (name)
        snprintf(buf, n, "signal %" PRIu32 " (%s)", sig, name);
    else
        snprintf(buf, n, "signal %" PRIu32, sig);
    return buf;
}

/* Appends a printf-formatted piece to v->line, separated by `sep`. */
static void tc_put(struct tc_verdict *v, const char *sep, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void tc_put(struct tc_verdict *v, const char *sep, const char *fmt, ...)
{
    size_t n = strlen(v->line);
    if (n && n < sizeof v->line)
        n += (size_t)snprintf(v->line + n, sizeof v->line - n, "%s", sep);
    if (n >= sizeof v->line)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->line + n, sizeof v->line - n, fmt, ap);
    va_end(ap);
}

void tc_judge(const struct trace_index *ix, const struct tc_span *span, struct tc_verdict *v)
{
    *v = (struct tc_verdict){
        .have_end = ix->have_end,
        .signal = ix->end_signal,
        .dropped = ti_dropped(ix),
        .writer_errors = ix->writer_errors,
        .records = span->records,
        .last_record_s = span->records ? (double)(span->last - span->first) * span->ns_per_unit / 1e9 : 0,
    };
    v->complete = v->have_end && !v->signal && !v->dropped && !v->writer_errors;
    if (v->complete)
        return;
    if (!v->have_end)
        tc_put(v, ", ", "no END chunk (the run never finished its trace)");
    char sig[48];
    if (v->signal)
        tc_put(v, ", ", "the program was terminated by %s", tc_signal_text(v->signal, sig, sizeof sig));
    if (v->dropped)
        tc_put(v, ", ", "the tracer dropped events");
    if (v->writer_errors)
        tc_put(v, ", ", "the writer failed to write %" PRIu64 " chunks", v->writer_errors);
    if (v->records)
        tc_put(v, "; ", "last record at %.9f s after the first", v->last_record_s);
    else
        tc_put(v, "; ", "no records");
    if (v->have_end)
        tc_put(v, "; ", "events dropped: %" PRIu64, v->dropped);
    else
        tc_put(v, "; ", "events dropped: unknown (the END chunk counts them)");
}

int tc_warn(const char *path, const struct tc_verdict *v)
{
    if (v->complete)
        return TOOL_OK;
    tool_error("warning: %s: incomplete trace: %s", path, v->line);
    return TOOL_INCOMPLETE;
}

void tc_json(struct jw *w, const struct tc_verdict *v)
{
    jw_kbool(w, "complete", v->complete);
    if (v->complete)
        return;
    jw_key(w, "incomplete");
    jw_object(w);
    jw_kstr(w, "reason", v->line);
    jw_kbool(w, "end_chunk", v->have_end);
    jw_ku64(w, "signal", v->signal);
    if (v->have_end)
        jw_ku64(w, "dropped_events", v->dropped);
    else
        jw_knull(w, "dropped_events");
    jw_ku64(w, "writer_errors", v->writer_errors);
    if (v->records)
        jw_knum(w, "last_record_s", v->last_record_s, 9);
    else
        jw_knull(w, "last_record_s");
    jw_object_end(w);
}
