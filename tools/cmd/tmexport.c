/*
 * tmexport.c - converts a trace into the Chrome trace-event JSON format that
 * Perfetto's UI and chrome://tracing open.
 *
 * Owns: the command line of `tmexport`, the mapping of transaction attempts
 * to complete ("X") slices, aborts to instant ("i") events and abort
 * culprits to flow ("s"/"f") arrows, and the JSON writer for that format.
 * Culprits are tmcheck's attribution (check_culprit.c), so that the arrows
 * and tmcheck's conflict matrix always agree; the events come through the
 * shared index and merge (trace_index.c), so a raw trace is shown in merged
 * order too. Never buffers the whole trace: memory is bounded by the thread
 * count and the analysis' own bounded state. Never accepts an
 * unsynchronised trace unless --raw says the user knows its time line may be
 * inconsistent.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_analysis.h"
#include "check_triage.h"
#include "error.h"
#include "json_writer.h"
#include "trace_index.h"
#include "symbols.h"
#include "sync_model.h"
#include "tool_common.h"
#include "tool_doc.h"
#include "tmtrace.h"
#include "trace_file.h"

static const struct tool_option export_options[] = {
    { "-c, --chrome", "Chrome trace-event JSON (the default; keys: docs/json.md)" },
    { "    --samples-csv", "the clock samples as CSV, one row per (TSC, reference) pair:\n"
                           "cpu,phase,thread,tsc,ref_ns,truth_tsc,width_ticks,nominal_ns,\n"
                           "model_ns,residual_ns (model columns empty without a model;\n"
                           "nominal_ns = tsc at the header's frequency). Raw traces too;\n"
                           "every sample: no --from, --to, --abort or --window." },
    { "-o, --output FILE", "write to FILE (atomically) instead of standard output" },
    { "    --raw", "accept an unsynchronised trace (timestamps are TSC ticks\n"
                   "converted with the header's frequency; order may be wrong)" },
    { "    --no-flows", "leave out the culprit arrows" },
    { "    --salvage", "skip damaged chunks, say so on stderr and go on" },
    { "    --stripes LOG2", "the traced run's TMTRACE_STRIPES (default: as recorded), for culprits" },
    { "    --from S", "show only from S seconds after the trace's first event" },
    { "    --to S", "... up to S seconds after it (slices overlapping the window are kept)" },
    { "    --abort N", "show only a window around the N-th abort (from 1, in time order)" },
    { "    --window MS", "its half-width in milliseconds (default 1; only with --abort)" },
    { "-h, --help", "this text" },
    { "    --man", "this text as a man page (troff)" },
    { "-V, --version", "the version" },
    { NULL, NULL },
};

static const struct tool_doc export_doc = {
    .name = "tmexport",
    .purpose = "convert a trace to a Chrome trace-event timeline or its clock samples to CSV",
    .synopsis = "tmexport [--chrome] [options] TRACE\n"
                "tmexport --samples-csv [-o FILE] TRACE",
    .description =
        "Writes TRACE (normally a tmsync output, trace.sync.bin) as Chrome trace-event\n"
        "JSON, which ui.perfetto.dev and chrome://tracing open:\n"
        "  one complete slice per transaction attempt on its thread's track\n"
        "  (name = site label; args: outcome, abort reason, core, instance, set sizes),\n"
        "  an instant event per abort (with the data it found, by name) and per hardware\n"
        "  fallback, and a flow arrow (with the data, by name) from\n"
        "  each abort's culprit to the aborted attempt, as tmcheck attributes it: the\n"
        "  commit that wrote the version the abort found, or the attempt that held\n"
        "  the lock it found (from the moment of the abort; an arrow never ends before\n"
        "  it starts). A version 1 trace's stripe index is shown as \"stripe N\".",
    .options = export_options,
    .exit_status = "0  written\n"
                   "2  bad input or usage (one line on stderr)\n"
                   "3  written, but --salvage skipped damaged chunks",
};

/* ---- output ------------------------------------------------------------ */

struct out {
    struct jw w;        /* inside the traceEvents array */
    uint64_t slices;
    uint64_t instants;
    uint64_t flows;
};

/* The next element of traceEvents: an object on its own line. */
static struct jw *out_event(struct out *o)
{
    jw_newline(&o->w);
    jw_object(&o->w);
    return &o->w;
}

/* ---- metadata ---------------------------------------------------------- */

struct site_name {
    char label[400];   /* a label (< 128) and a file name (< 256) never cut */
};

/* Site names by id ("label (file:line)", as every tool names them). */
static struct site_name *site_names(const struct trace_index *ix, struct sym_table *sym, size_t *n)
{
    size_t max = 0;
    for (size_t i = 0; i < ix->nsites; i++)
        if (ix->sites[i].id + (size_t)1 > max)
            max = ix->sites[i].id + (size_t)1;
    struct site_name *t = calloc(max ? max : 1, sizeof *t);
    if (!t)
        return NULL;
    /* Sites known by code address (-fgnu-tm programs) get their function. */
    sym_name_sites(sym, ix->sites, ix->nsites);
    for (size_t i = 0; i < ix->nsites; i++)
        sym_site_name(&ix->sites[i], t[ix->sites[i].id].label, sizeof t[ix->sites[i].id].label);
    *n = max;
    return t;
}

/* ---- per-thread attempt state ------------------------------------------ */

struct attempt {
    int open;
    uint64_t start_ns;
    uint64_t instance;
    uint32_t site;
    uint32_t flags;      /* tf_start_flags | attempt << 16 */
    uint16_t cpu;
    uint64_t reads;      /* READ/WRITE events seen in the attempt */
    uint64_t writes;
};

struct exporter {
    const struct trace_index *ix;
    struct sym_table *sym;     /* data addresses by name, as tmcheck names them */
    const struct ca_state *st; /* with --flows: the allocations, for blocks' names */
    struct site_name *sites;   /* indexed by site id */
    size_t nsites;
    struct out *o;
    int raw;
    int flows;
    double ns_per_tick;  /* raw traces: TSC ticks to ns */
    struct attempt *th;  /* indexed by thread id */
    size_t nth;
    uint64_t next_flow_id;
    uint64_t skipped;    /* damaged chunks skipped (--salvage) */
    unsigned version;    /* of the trace's format: version 1 commit-validate aborts name a stripe */
    /* the time window shown (ns on the trace's time line) */
    int windowed, relative;       /* relative: --from/--to, from the first event */
    double from_s, to_s;
    uint64_t lo, hi;
    int have_first;
};

/* Is `ns` inside the window shown (always, without one)? The window of
 * --from/--to is placed when the first event arrives. */
static int shown(const struct exporter *x, uint64_t ns)
{
    return !x->windowed || (ns >= x->lo && ns <= x->hi);
}

static int slice_shown(const struct exporter *x, uint64_t start, uint64_t end)
{
    return !x->windowed || (end >= x->lo && start <= x->hi);
}

/* "0x..." for an address, "stripe N" for a stripe index (what a version 1
 * commit-validate abort recorded), so that a stripe never reads as an address. */
static const char *location(const struct exporter *x, unsigned reason, uint64_t addr, char *buf, size_t cap)
{
    if (x->version < 2 && reason == TMT_ABORT_COMMIT_VALIDATE)
        snprintf(buf, cap, "stripe %" PRIu64, addr);
    else
        snprintf(buf, cap, "0x%" PRIx64, addr);
    return buf;
}

/* A data address by its one name (check_triage.h's cx_word_name). */
static const char *data_name(const struct exporter *x, uint64_t addr, char *buf, size_t cap)
{
    char obj[CX_OBJ_NAME], fld[64];
    uint64_t base = 0, pc = 0;
    if (x->st)
        ca_block_at(x->st, addr, &base, &pc);
    cx_word_name(x->sym, addr, pc, base, obj, fld, buf, cap);
    return buf;
}

static const char *site_label(const struct exporter *x, uint32_t id, char *buf, size_t cap)
{
    if (id < x->nsites && x->sites[id].label[0])
        return x->sites[id].label;
    snprintf(buf, cap, "site %" PRIu32, id);
    return buf;
}

static uint64_t ev_ns(const struct exporter *x, uint64_t ts)
{
    return x->raw ? (uint64_t)((double)ts * x->ns_per_tick) : ts;
}

/* Microseconds with ns resolution, the unit of the format. */
static void put_us(struct jw *w, const char *key, uint64_t ns)
{
    jw_key(w, key);
    jw_fmt(w, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

static int is_hw(uint32_t flags)
{
    return (flags & (TF_START_HTM | TF_START_HTM_EMU)) != 0;
}

static void emit_meta(struct exporter *x, const char *name, uint32_t tid, const char *arg)
{
    struct jw *w = out_event(x->o);
    jw_kstr(w, "ph", "M");
    jw_kstr(w, "name", name);
    jw_ku64(w, "pid", x->ix->hdr.pid);
    if (arg)
        jw_ku64(w, "tid", tid);
    jw_key(w, "args");
    jw_object(w);
}

static void emit_thread_names(struct exporter *x)
{
    struct jw *w = &x->o->w;
    char name[64];
    /* META_THREADS names every thread that entered; the END chunk is the
     * fallback for traces whose writer only wrote that. */
    const struct tf_thread_info *t = x->ix->nthreads ? x->ix->threads : x->ix->end;
    size_t n = x->ix->nthreads ? x->ix->nthreads : x->ix->nend;
    for (size_t i = 0; i < n; i++) {
        emit_meta(x, "thread_name", t[i].id, "");
        snprintf(name, sizeof name, "T%" PRIu32 " (tid %" PRIu32 ")", t[i].id, t[i].os_tid);
        jw_kstr(w, "name", name);
        jw_object_end(w);
        jw_object_end(w);
        emit_meta(x, "thread_sort_index", t[i].id, "");
        jw_ku64(w, "sort_index", t[i].id);
        jw_object_end(w);
        jw_object_end(w);
    }
    emit_meta(x, "process_name", 0, NULL);
    jw_kstr(w, "name", x->ix->hdr.cmdline[0] ? x->ix->hdr.cmdline : "traced program");
    jw_object_end(w);
    jw_object_end(w);
}

/* The args of a slice: what the attempt was and how it ended. */
static void slice_args(const struct exporter *x, struct jw *w, const struct attempt *a, const struct tf_event *end,
                       uint64_t rs, uint64_t ws)
{
    int commit = end->kind == TF_EV_COMMIT;
    char hex[48];
    jw_key(w, "args");
    jw_object(w);
    jw_kstr(w, "outcome", commit ? "commit" : "abort");
    jw_kstr(w, "path", is_hw(a->flags) ? "hardware" : "software");
    jw_ku64(w, "core", a->cpu);
    jw_ku64(w, "end_core", end->cpu);
    jw_ku64(w, "instance", a->instance);
    jw_ku64(w, "attempt", tf_start_attempt(a->flags));
    jw_ku64(w, "site", a->site);
    jw_ku64(w, "read_set", rs);
    jw_ku64(w, "write_set", ws);
    if (!commit) {
        jw_kstr(w, "abort_reason", tf_abort_reason_name(end->reason));
        if (end->addr) {
            char nb[900];
            jw_kstr(w, "conflict", location(x, end->reason, end->addr, hex, sizeof hex));
            if (x->version >= 2 || end->reason != TMT_ABORT_COMMIT_VALIDATE)
                jw_kstr(w, "conflict_data", data_name(x, end->addr, nb, sizeof nb));
        }
        if (end->reason == TMT_ABORT_HTM) {
            snprintf(hex, sizeof hex, "0x%08" PRIx64, end->value & 0xffffffffu);
            jw_kstr(w, "htm_status", hex);
        }
    }
    jw_object_end(w);
}

/* The slice of one finished attempt. */
static void emit_slice(struct exporter *x, uint32_t thread, const struct attempt *a,
                       const struct tf_event *end)
{
    char buf[32], cat[16];
    uint64_t end_ns = ev_ns(x, end->ts);
    if (!slice_shown(x, a->start_ns, end_ns))
        return;
    uint64_t dur = end_ns > a->start_ns ? end_ns - a->start_ns : 0;
    int commit = end->kind == TF_EV_COMMIT;
    uint64_t rs = a->reads, ws = a->writes;
    if (commit && !is_hw(a->flags)) { /* the commit record carries the set sizes */
        rs = tf_commit_read_set(end->value);
        ws = tf_commit_write_set(end->value);
    }
    struct jw *w = out_event(x->o);
    jw_kstr(w, "ph", "X");
    jw_kstr(w, "name", site_label(x, a->site, buf, sizeof buf));
    snprintf(cat, sizeof cat, "%s,%s", is_hw(a->flags) ? "htm" : "stm", commit ? "commit" : "abort");
    jw_kstr(w, "cat", cat);
    jw_ku64(w, "pid", x->ix->hdr.pid);
    jw_ku64(w, "tid", thread);
    put_us(w, "ts", a->start_ns);
    put_us(w, "dur", dur);
    jw_kstr(w, "cname", commit ? "good" : "terrible");
    slice_args(x, w, a, end, rs, ws);
    jw_object_end(w);
    x->o->slices++;
}

/* An instant with one argument, and the data it concerns when `data` is
 * not NULL. */
static void emit_instant(struct exporter *x, uint32_t thread, uint64_t ns, const char *name,
                         const char *cat, const char *key, const char *val, const char *data)
{
    if (!shown(x, ns))
        return;
    struct jw *w = out_event(x->o);
    jw_kstr(w, "ph", "i");
    jw_kstr(w, "s", "t");
    jw_kstr(w, "name", name);
    jw_kstr(w, "cat", cat);
    jw_ku64(w, "pid", x->ix->hdr.pid);
    jw_ku64(w, "tid", thread);
    put_us(w, "ts", ns);
    jw_key(w, "args");
    jw_object(w);
    jw_kstr(w, key, val);
    if (data)
        jw_kstr(w, "data", data);
    jw_object_end(w);
    jw_object_end(w);
    x->o->instants++;
}

/* One end of a flow arrow ("s" at the culprit, "f" at the victim). */
static struct jw *flow_end(struct exporter *x, const char *ph, uint64_t id, uint32_t thread, uint64_t ns)
{
    struct jw *w = out_event(x->o);
    jw_kstr(w, "ph", ph);
    if (ph[0] == 'f')
        jw_kstr(w, "bp", "e");
    jw_kstr(w, "name", "culprit");
    jw_kstr(w, "cat", "conflict");
    jw_ku64(w, "id", id);
    jw_ku64(w, "pid", x->ix->hdr.pid);
    jw_ku64(w, "tid", thread);
    put_us(w, "ts", ns);
    return w;
}

/* An arrow from the culprit to the aborted attempt, for each abort that the
 * analysis attributed: from the culprit's commit, or, for a lock holder,
 * from its attempt at the victim's abort (it held the lock then; its commit
 * may come later, or never). The arrow never ends before it starts: its
 * start is at most its end. Both ends sit 1 ns inside their slices so that
 * viewers bind them to the right slice. */
static void on_attribution(void *ctx, const struct ca_attribution *at)
{
    struct exporter *x = ctx;
    uint64_t a_ns = ev_ns(x, at->abort), start_ns = ev_ns(x, at->start);
    if (!at->found || !shown(x, a_ns))
        return;
    int holder = at->cls >= CA_CL_HOLDER_RUNNING && at->cls <= CA_CL_HOLDER_ABORTED;
    uint64_t f_ns = a_ns > start_ns ? a_ns - 1 : a_ns;
    uint64_t s_ns = holder || !at->culprit_commit ? f_ns : ev_ns(x, at->culprit_commit) - 1;
    if (s_ns > f_ns)
        s_ns = f_ns;
    uint64_t id = ++x->next_flow_id;
    struct jw *w = flow_end(x, "s", id, at->culprit_thread, s_ns);
    jw_object_end(w);
    w = flow_end(x, "f", id, at->thread, f_ns);
    char b1[32], b2[32], loc[48], nb[900];
    jw_key(w, "args");
    jw_object(w);
    jw_kstr(w, "class", ca_class_name(at->cls));
    jw_kstr(w, "conflict", at->true_conflict ? "true" : at->cls == CA_CL_FALSE ? "false (same stripe)" : "lock held");
    jw_kstr(w, "address", location(x, at->reason, at->addr, loc, sizeof loc));
    if (x->version >= 2 || at->reason != TMT_ABORT_COMMIT_VALIDATE)
        jw_kstr(w, "data", data_name(x, at->addr, nb, sizeof nb));
    jw_ku64(w, "culprit_thread", at->culprit_thread);
    jw_ku64(w, "culprit_instance", at->culprit_instance);
    jw_kstr(w, "culprit_site", site_label(x, at->culprit_site, b1, sizeof b1));
    jw_kstr(w, "victim_site", site_label(x, at->site, b2, sizeof b2));
    jw_object_end(w);
    jw_object_end(w);
    x->o->flows++;
}

static int on_event(struct exporter *x, const struct tf_event *ev)
{
    uint32_t t = ev->thread;
    if (ti_grow((void **)&x->th, &x->nth, (size_t)t + 1, sizeof *x->th) < 0)
        return -1;
    struct attempt *a = &x->th[t];
    uint64_t ns = ev_ns(x, ev->ts);
    if (!x->have_first) {
        x->have_first = 1;
        if (x->relative) {
            x->lo = ns + (uint64_t)(x->from_s * 1e9);
            x->hi = x->to_s > 0 ? ns + (uint64_t)(x->to_s * 1e9) : UINT64_MAX;
        }
    }
    switch (ev->kind) {
    case TF_EV_START:
        /* A START while an attempt is open means its end was dropped: no slice. */
        a->open = 1;
        a->start_ns = ns;
        a->instance = ev->instance;
        a->site = ev->site;
        a->flags = (uint32_t)ev->value;
        a->cpu = ev->cpu;
        a->reads = a->writes = 0;
        break;
    case TF_EV_READ:
        a->reads++;
        break;
    case TF_EV_WRITE:
        a->writes++;
        break;
    case TF_EV_COMMIT:
    case TF_EV_ABORT:
        /* The end of another attempt than the open one: the events between
         * them were dropped (the open attempt's end, the other's START). */
        if (!a->open || ev->instance != a->instance) {
            a->open = 0;
            break;
        }
        emit_slice(x, t, a, ev);
        if (ev->kind == TF_EV_ABORT) {
            char nb[900];
            int named = ev->addr && (x->version >= 2 || ev->reason != TMT_ABORT_COMMIT_VALIDATE);
            emit_instant(x, t, ns, "abort", is_hw(a->flags) ? "htm" : "stm", "reason",
                         tf_abort_reason_name(ev->reason), named ? data_name(x, ev->addr, nb, sizeof nb) : NULL);
        }
        a->open = 0;
        break;
    case TF_EV_FALLBACK:
        emit_instant(x, t, ns, "fallback", "htm", "why", tf_fallback_reason_name(ev->reason), NULL);
        break;
    default:
        break;
    }
    return 0;
}

/* The trace's events in merged order: a reader and a merge over it (NULL,
 * with the message set, on failure). */
static struct ti_merge *open_events(const struct exporter *x, const char *path, unsigned oflags,
                                 struct tf_reader **r)
{
    *r = tf_open(path, oflags);
    if (!*r)
        return NULL;
    struct ti_merge *m = ti_merge_create(*r, x->ix, NULL);
    if (!m) {
        tf_close(*r);
        *r = NULL;
    }
    return m;
}

/* The events in merged order (already so in a synced trace), each shown and
 * fed to the analysis, whose attributions come back as arrows. */
static int export_events(struct exporter *x, const char *path, unsigned oflags, struct ca_state *st)
{
    struct tf_reader *r;
    struct ti_merge *m = open_events(x, path, oflags, &r);
    if (!m)
        return -1;
    const struct tf_event *ev;
    int rc;
    while ((rc = ti_merge_next(m, &ev)) == 1)
        if (on_event(x, ev) < 0 || (st && ca_event(st, ev) < 0)) {
            rc = -1;
            break;
        }
    if (rc == 0 && st && ca_finish(st) < 0)
        rc = -1;
    if (rc == 0 && tf_reader_skipped(r) > x->skipped)
        x->skipped = tf_reader_skipped(r);
    ti_merge_free(m);
    tf_close(r);
    return rc < 0 ? -1 : 0;
}

/* ---- clock samples as CSV ----------------------------------------------- */

static const struct tf_cpu_model *model_of(const struct trace_index *ix, uint32_t cpu)
{
    for (size_t i = 0; i < ix->nmodels; i++)
        if (ix->models[i].cpu == cpu)
            return &ix->models[i];
    return NULL;
}

/* One row per sample, with the model tmsync fitted (synced traces) and the
 * residual, so that a plot needs no knowledge of the model's form. */
static void export_samples(FILE *f, const struct trace_index *ix)
{
    static const char *const phase[] = { "pre", "post", "in-run" };
    double ns_per_tick = ix->hdr.tsc_hz ? 1e9 / (double)ix->hdr.tsc_hz : 1.0;
    fputs("cpu,phase,thread,tsc,ref_ns,truth_tsc,width_ticks,nominal_ns,model_ns,residual_ns\n", f);
    for (size_t i = 0; i < ix->nsamples; i++) {
        const struct tf_sample *s = &ix->samples[i];
        fprintf(f, "%u,%s,%" PRIu32 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu32 ",%.1f,", s->cpu,
                s->phase < 3 ? phase[s->phase] : "?", s->thread, s->tsc, s->ref_ns, s->truth_tsc,
                s->width, (double)s->tsc * ns_per_tick);
        const struct tf_cpu_model *m = model_of(ix, s->cpu);
        uint32_t hint = 0;
        if (m && m->nseg) {
            double v = sm_eval(m, s->tsc, &hint);
            fprintf(f, "%.1f,%.1f\n", v, (double)s->ref_ns - v);
        } else {
            fputs(",\n", f);
        }
    }
}

/* ---- main -------------------------------------------------------------- */

struct export_args {
    const char *path;
    const char *outpath;
    int raw, flows, samples;
    uint64_t stripes;      /* 0: as recorded in the trace */
    unsigned oflags;
    double from_s, to_s;   /* --from/--to (to 0: to the end) */
    uint64_t abort_n;      /* --abort N (0: none) */
    double window_ms;
    int have_window;       /* --window given */
};

/* 0: go on; otherwise the tool's exit code (--help, --version, bad usage) + 1. */
static int parse_args(int argc, char **argv, struct export_args *a)
{
    enum { OPT_RAW = 256, OPT_NO_FLOWS, OPT_SALVAGE, OPT_MAN, OPT_STRIPES, OPT_SAMPLES, OPT_FROM, OPT_TO,
           OPT_ABORT, OPT_WINDOW };
    static const struct option opts[] = {
        { "chrome", no_argument, NULL, 'c' },
        { "samples-csv", no_argument, NULL, OPT_SAMPLES },
        { "output", required_argument, NULL, 'o' },
        { "raw", no_argument, NULL, OPT_RAW },
        { "no-flows", no_argument, NULL, OPT_NO_FLOWS },
        { "salvage", no_argument, NULL, OPT_SALVAGE },
        { "stripes", required_argument, NULL, OPT_STRIPES },
        { "from", required_argument, NULL, OPT_FROM },
        { "to", required_argument, NULL, OPT_TO },
        { "abort", required_argument, NULL, OPT_ABORT },
        { "window", required_argument, NULL, OPT_WINDOW },
        { "version", no_argument, NULL, 'V' },
        { "man", no_argument, NULL, OPT_MAN },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    *a = (struct export_args){ .outpath = "-", .flows = 1, .window_ms = 1.0 };
    int ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":co:hV", opts, NULL)) != -1) {
        switch (ch) {
        case 'c': a->samples = 0; break;
        case OPT_SAMPLES: a->samples = 1; break;
        case 'o': a->outpath = optarg; break;
        case OPT_RAW: a->raw = 1; break;
        case OPT_NO_FLOWS: a->flows = 0; break;
        case OPT_SALVAGE: a->oflags |= TF_SALVAGE; break;
        case OPT_STRIPES:
            if (tool_parse_u64("--stripes", optarg, TF_STRIPES_LOG2_MIN, TF_STRIPES_LOG2_MAX, &a->stripes) < 0)
                return TOOL_USAGE + 1;
            break;
        case OPT_FROM:
            if (tool_parse_double("--from", optarg, 0, 1e9, &a->from_s) < 0)
                return TOOL_USAGE + 1;
            break;
        case OPT_TO:
            if (tool_parse_double("--to", optarg, 1e-9, 1e9, &a->to_s) < 0)
                return TOOL_USAGE + 1;
            break;
        case OPT_ABORT:
            if (tool_parse_u64("--abort", optarg, 1, UINT64_MAX, &a->abort_n) < 0)
                return TOOL_USAGE + 1;
            break;
        case OPT_WINDOW:
            if (tool_parse_double("--window", optarg, 1e-6, 1e9, &a->window_ms) < 0)
                return TOOL_USAGE + 1;
            a->have_window = 1;
            break;
        case 'V': tool_print_version(stdout); return TOOL_OK + 1;
        case 'h': tool_doc_help(stdout, &export_doc); return TOOL_OK + 1;
        case OPT_MAN: tool_doc_man(stdout, &export_doc); return TOOL_OK + 1;
        default: return tool_bad_option(argv) + 1;
        }
    }
    a->path = tool_trace_operand(argc, argv);
    if (a->path && a->to_s > 0 && a->to_s <= a->from_s)
        return tool_error("--to %g is not after --from %g", a->to_s, a->from_s) + 1;
    if (a->path && a->abort_n && (a->from_s > 0 || a->to_s > 0))
        return tool_error("--abort cannot be combined with --from/--to") + 1;
    /* Options that would otherwise be ignored without a word. */
    if (a->path && a->have_window && !a->abort_n)
        return tool_error("--window is the half-width around --abort N: give --abort too") + 1;
    if (a->path && a->samples && (a->abort_n || a->have_window || a->from_s > 0 || a->to_s > 0))
        return tool_error("--samples-csv writes every sample: it takes no --abort, --window, --from or --to") + 1;
    return a->path ? 0 : TOOL_USAGE + 1;
}

/* The window around the N-th abort (a pass over the events of its own).
 * 0, or -1 with the message set. */
static int abort_window(struct exporter *x, const struct export_args *a)
{
    struct tf_reader *r;
    struct ti_merge *m = open_events(x, a->path, a->oflags, &r);
    if (!m)
        return -1;
    const struct tf_event *ev;
    uint64_t seen = 0, ts = 0;
    int rc;
    while ((rc = ti_merge_next(m, &ev)) == 1)
        if (ev->kind == TF_EV_ABORT && ++seen == a->abort_n) {
            ts = ev->ts;   /* the event is the merge's: gone once it is freed */
            break;
        }
    ti_merge_free(m);
    tf_close(r);
    if (rc < 0)
        return -1;
    if (rc == 0)
        return error_set("%s: --abort %" PRIu64 ": the trace has %" PRIu64 " aborts", a->path, a->abort_n, seen);
    uint64_t ns = ev_ns(x, ts), w = (uint64_t)(a->window_ms * 1e6);
    x->windowed = 1;
    x->lo = ns > w ? ns - w : 0;
    x->hi = ns + w;
    return 0;
}

/* After a complete output that --salvage made from a damaged trace. */
static int salvaged(const char *path, uint64_t skipped)
{
    tool_error("warning: %s: --salvage skipped %" PRIu64 " damaged chunks; their events are missing", path,
               skipped);
    return TOOL_SALVAGED;
}

static int write_samples(const struct export_args *a, const struct trace_index *ix)
{
    struct tool_out so;
    if (tool_out_open(&so, a->outpath, a->path) < 0)
        return TOOL_USAGE;
    export_samples(so.f, ix);
    return tool_out_commit(&so) < 0 ? TOOL_USAGE : TOOL_OK;
}

/* The Chrome JSON document into an open output. */
static int write_document(struct exporter *x, const struct export_args *a, struct ca_state *st, FILE *f)
{
    struct out o = { .slices = 0 };
    struct jw *w = &o.w;
    x->o = &o;
    jw_init(w, f);
    jw_object(w);
    jw_kstr(w, "displayTimeUnit", "ns");
    jw_key(w, "otherData");
    jw_object(w);
    jw_kstr(w, "tool", "tmexport");
    jw_kbool(w, "synced", !x->raw);
    jw_ku64(w, "tsc_hz", x->ix->hdr.tsc_hz);
    jw_object_end(w);
    jw_key(w, "traceEvents");
    jw_array(w);
    emit_thread_names(x);
    if (export_events(x, a->path, a->oflags, st) < 0)
        return -1;
    jw_newline(w);
    jw_array_end(w);
    jw_object_end(w);
    fputc('\n', f);
    return 0;
}

/* `skipped`: damaged chunks the index pass skipped (--salvage). */
static int write_chrome(const struct export_args *a, const struct trace_index *ix, uint64_t skipped)
{
    int synced = (ix->hdr.flags & TF_HDR_SYNCED) != 0;
    struct exporter x = { .ix = ix, .raw = !synced, .flows = a->flows, .version = ix->hdr.version,
                          .skipped = skipped };
    x.ns_per_tick = ix->hdr.tsc_hz ? 1e9 / (double)ix->hdr.tsc_hz : 1.0;
    if (a->from_s > 0 || a->to_s > 0) {
        x.windowed = x.relative = 1;
        x.from_s = a->from_s;
        x.to_s = a->to_s;
    }
    if (a->abort_n && abort_window(&x, a) < 0)
        return tool_error_lib();
    x.sym = sym_open(ix->objects, ix->nobjects);
    if (x.sym && sym_set_stacks(x.sym, ix->threads, ix->nthreads) < 0)
        return tool_error("out of memory");
    x.sites = x.sym ? site_names(ix, x.sym, &x.nsites) : NULL;
    struct ca_opts co;
    ca_opts_for_trace(ix, (unsigned)a->stripes, &co);
    struct ca_state *st = a->flows ? ca_create(&co) : NULL;
    x.st = st;
    int status = TOOL_OK;
    if (!x.sites || (a->flows && (!st || ca_note_drops(st, ix) < 0))) {
        status = tool_error("out of memory");
        goto done;
    }
    if (st)
        ca_listen(st, on_attribution, &x);
    /* -o: written beside the target and renamed, so no partial file is left. */
    struct tool_out to;
    if (tool_out_open(&to, a->outpath, a->path) < 0) {
        status = TOOL_USAGE;
        goto done;
    }
    if (write_document(&x, a, st, to.f) < 0) {
        tool_error_lib();
        tool_out_abandon(&to);
        status = TOOL_USAGE;
    } else if (tool_out_commit(&to) < 0) {
        status = TOOL_USAGE;
    } else if (x.skipped) {
        status = salvaged(a->path, x.skipped);
    }
done:
    free(x.th);
    free(x.sites);
    sym_close(x.sym);
    ca_free(st);
    return status;
}

int main(int argc, char **argv)
{
    tool_init("tmexport");
    struct export_args a;
    int done = parse_args(argc, argv, &a);
    if (done)
        return done - 1;
    struct tf_reader *r = tf_open(a.path, a.oflags | TF_SKIP_EVENTS);
    if (!r)
        return tool_error_lib();
    struct trace_index ix;
    if (ti_scan(r, &ix) < 0) {
        tf_close(r);
        return tool_error_lib();
    }
    uint64_t skipped = tf_reader_skipped(r);
    tf_close(r);
    int status;
    if (a.samples) {
        status = write_samples(&a, &ix);
        if (status == TOOL_OK && skipped)
            status = salvaged(a.path, skipped);
    }
    else if (!(ix.hdr.flags & TF_HDR_SYNCED) && !a.raw)
        status = tool_error("%s: trace is not synchronised (run tmsync first, or pass --raw)", a.path);
    else
        status = write_chrome(&a, &ix, skipped);
    ti_free(&ix);
    return status;
}
