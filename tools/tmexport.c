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
#include "error.h"
#include "trace_index.h"
#include "sync_model.h"
#include "tool_common.h"
#include "tmtrace.h"
#include "trace_file.h"

static const char usage_text[] =
    "usage: tmexport --chrome [options] TRACE\n"
    "       tmexport --samples-csv [-o FILE] TRACE\n"
    "Writes TRACE (normally a tmsync output, trace.sync.bin) as Chrome trace-event\n"
    "JSON, which ui.perfetto.dev and chrome://tracing open.\n"
    "  one complete slice per transaction attempt on its thread's track\n"
    "  (name = site label; args: outcome, abort reason, core, instance, set sizes),\n"
    "  an instant event per abort and per hardware fallback, and a flow arrow from\n"
    "  each abort's culprit commit (the latest commit by another thread, before the\n"
    "  abort, that wrote the conflicting address or stripe, as tmcheck attributes\n"
    "  it) to the aborted attempt.\n"
    "options:\n"
    "  -c, --chrome      Chrome trace-event JSON (the default)\n"
    "      --samples-csv the clock samples as CSV, one row per (TSC, reference) pair:\n"
    "                    cpu,phase,thread,tsc,ref_ns,truth_tsc,width_ticks,nominal_ns,\n"
    "                    model_ns,residual_ns (model columns empty without a model;\n"
    "                    nominal_ns = tsc at the header's frequency). Raw traces too.\n"
    "  -o, --output FILE write to FILE (atomically) instead of standard output\n"
    "      --raw         accept an unsynchronised trace (timestamps are TSC ticks\n"
    "                    converted with the header's frequency; order may be wrong)\n"
    "      --no-flows    leave out the culprit arrows\n"
    "      --salvage     skip damaged chunks instead of failing\n"
    "      --stripes LOG2 the traced run's TMTRACE_STRIPES (default: as recorded), for culprits\n"
    "      --version     print the version\n"
    "  -h, --help        this text\n"
    "exit status: 0 written, 2 bad usage or bad input\n";

/* ---- output ------------------------------------------------------------ */

struct out {
    FILE *f;
    int first;          /* no event written yet: no leading comma */
    uint64_t slices;
    uint64_t instants;
    uint64_t flows;
};

static void out_sep(struct out *o)
{
    fputs(o->first ? "\n" : ",\n", o->f);
    o->first = 0;
}

/* Writes s as the body of a JSON string (without the quotes). */
static void json_str(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            fprintf(f, "\\u%04x", *p); /* also keeps stray non-UTF-8 bytes valid */
        else
            fputc(*p, f);
    }
}

/* ---- metadata ---------------------------------------------------------- */

struct site_name {
    char label[160];
};

/* Site labels by id ("label (file:line)"), built once from the index. */
static struct site_name *site_names(const struct merge_index *ix, size_t *n)
{
    size_t max = 0;
    for (size_t i = 0; i < ix->nsites; i++)
        if (ix->sites[i].id + (size_t)1 > max)
            max = ix->sites[i].id + (size_t)1;
    struct site_name *t = calloc(max ? max : 1, sizeof *t);
    if (!t)
        return NULL;
    for (size_t i = 0; i < ix->nsites; i++) {
        const struct tf_site *s = &ix->sites[i];
        const char *label = s->label[0] ? s->label : "tx";
        const char *file = strrchr(s->file, '/');
        file = file ? file + 1 : s->file;
        if (file[0])
            snprintf(t[s->id].label, sizeof t[s->id].label, "%.*s (%.*s:%d)", 100, label, 40, file,
                     s->line);
        else
            snprintf(t[s->id].label, sizeof t[s->id].label, "%.*s", 100, label);
    }
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
    const struct merge_index *ix;
    struct site_name *sites;   /* indexed by site id */
    size_t nsites;
    struct out *o;
    int raw;
    int flows;
    double ns_per_tick;  /* raw traces: TSC ticks to ns */
    struct attempt *th;  /* indexed by thread id */
    size_t nth;
    uint64_t next_flow_id;
};

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
static void put_us(FILE *f, const char *key, uint64_t ns)
{
    fprintf(f, "\"%s\":%" PRIu64 ".%03u", key, ns / 1000, (unsigned)(ns % 1000));
}

static const char *fallback_name(unsigned r)
{
    switch (r) {
    case TF_FB_NO_RETRY: return "no-retry";
    case TF_FB_CAPACITY: return "capacity";
    case TF_FB_ATTEMPTS: return "attempts";
    case TF_FB_FLAGS: return "flags";
    default: return "unknown";
    }
}

static int is_hw(uint32_t flags)
{
    return (flags & (TF_START_HTM | TF_START_HTM_EMU)) != 0;
}

static void emit_thread_names(struct exporter *x)
{
    FILE *f = x->o->f;
    /* META_THREADS names every thread that entered; the END chunk is the
     * fallback for traces whose writer only wrote that. */
    const struct tf_thread_info *t = x->ix->nthreads ? x->ix->threads : x->ix->end;
    size_t n = x->ix->nthreads ? x->ix->nthreads : x->ix->nend;
    for (size_t i = 0; i < n; i++) {
        out_sep(x->o);
        fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ","
                   "\"args\":{\"name\":\"T%" PRIu32 " (tid %" PRIu32 ")\"}}",
                x->ix->hdr.pid, t[i].id, t[i].id, t[i].os_tid);
        out_sep(x->o);
        fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%" PRIu32
                   ",\"tid\":%" PRIu32 ",\"args\":{\"sort_index\":%" PRIu32 "}}",
                x->ix->hdr.pid, t[i].id, t[i].id);
    }
    out_sep(x->o);
    fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRIu32 ",\"args\":{\"name\":\"",
            x->ix->hdr.pid);
    json_str(f, x->ix->hdr.cmdline[0] ? x->ix->hdr.cmdline : "traced program");
    fputs("\"}}", f);
}

/* The slice of one finished attempt. */
static void emit_slice(struct exporter *x, uint32_t thread, const struct attempt *a,
                       const struct tf_event *end)
{
    FILE *f = x->o->f;
    char buf[32];
    uint64_t end_ns = ev_ns(x, end->ts);
    uint64_t dur = end_ns > a->start_ns ? end_ns - a->start_ns : 0;
    int commit = end->kind == TF_EV_COMMIT;
    uint64_t rs = a->reads, ws = a->writes;
    if (commit && !is_hw(a->flags)) { /* the commit record carries the set sizes */
        rs = end->value & 0xffffffffu;
        ws = end->value >> 32;
    }
    out_sep(x->o);
    fputs("{\"ph\":\"X\",\"name\":\"", f);
    json_str(f, site_label(x, a->site, buf, sizeof buf));
    fprintf(f, "\",\"cat\":\"%s,%s\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",",
            is_hw(a->flags) ? "htm" : "stm", commit ? "commit" : "abort", x->ix->hdr.pid, thread);
    put_us(f, "ts", a->start_ns);
    fputc(',', f);
    put_us(f, "dur", dur);
    fprintf(f, ",\"cname\":\"%s\",\"args\":{\"outcome\":\"%s\",\"path\":\"%s\",\"core\":%u,"
               "\"end_core\":%u,\"instance\":%" PRIu64 ",\"attempt\":%" PRIu32 ",\"site\":%" PRIu32
               ",\"read_set\":%" PRIu64 ",\"write_set\":%" PRIu64,
            commit ? "good" : "terrible", commit ? "commit" : "abort",
            is_hw(a->flags) ? "hardware" : "software", a->cpu, end->cpu, a->instance,
            a->flags >> 16, a->site, rs, ws);
    if (!commit) {
        fprintf(f, ",\"abort_reason\":\"%s\"", ca_reason_name(end->reason));
        if (end->addr)
            fprintf(f, ",\"conflict\":\"0x%" PRIx64 "\"", end->addr);
        if (end->reason == TMT_ABORT_HTM)
            fprintf(f, ",\"htm_status\":\"0x%08" PRIx64 "\"", end->value & 0xffffffffu);
    }
    fputs("}}", f);
    x->o->slices++;
}

static void emit_instant(struct exporter *x, uint32_t thread, uint64_t ns, const char *name,
                         const char *cat, const char *key, const char *val)
{
    FILE *f = x->o->f;
    out_sep(x->o);
    fprintf(f, "{\"ph\":\"i\",\"s\":\"t\",\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%" PRIu32
               ",\"tid\":%" PRIu32 ",",
            name, cat, x->ix->hdr.pid, thread);
    put_us(f, "ts", ns);
    fprintf(f, ",\"args\":{\"%s\":\"%s\"}}", key, val);
    x->o->instants++;
}

/* An arrow from the culprit's commit to the aborted attempt, for each abort
 * that the analysis attributed. Both ends sit 1 ns inside their slices so
 * that viewers bind them to the right slice. */
static void on_attribution(void *ctx, const struct ca_attribution *at)
{
    struct exporter *x = ctx;
    if (!at->found)
        return;
    FILE *f = x->o->f;
    uint64_t id = ++x->next_flow_id;
    uint64_t c_ns = ev_ns(x, at->culprit_commit), a_ns = ev_ns(x, at->abort);
    uint64_t start_ns = ev_ns(x, at->start);
    uint64_t s_ns = c_ns ? c_ns - 1 : 0;
    uint64_t f_ns = a_ns > start_ns ? a_ns - 1 : a_ns;
    out_sep(x->o);
    fprintf(f, "{\"ph\":\"s\",\"name\":\"culprit\",\"cat\":\"conflict\",\"id\":%" PRIu64
               ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",",
            id, x->ix->hdr.pid, at->culprit_thread);
    put_us(f, "ts", s_ns);
    fputc('}', f);
    out_sep(x->o);
    fprintf(f, "{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"culprit\",\"cat\":\"conflict\",\"id\":%" PRIu64
               ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",",
            id, x->ix->hdr.pid, at->thread);
    put_us(f, "ts", f_ns);
    char b1[32], b2[32];
    fprintf(f, ",\"args\":{\"conflict\":\"%s\",\"address\":\"0x%" PRIx64 "\",\"culprit_thread\":%" PRIu32
               ",\"culprit_instance\":%" PRIu64 ",\"culprit_site\":\"",
            at->true_conflict ? "true" : "false (same stripe)", at->addr, at->culprit_thread,
            at->culprit_instance);
    json_str(f, site_label(x, at->culprit_site, b1, sizeof b1));
    fputs("\",\"victim_site\":\"", f);
    json_str(f, site_label(x, at->site, b2, sizeof b2));
    fputs("\"}}", f);
    x->o->flows++;
}

static int on_event(struct exporter *x, const struct tf_event *ev)
{
    uint32_t t = ev->thread;
    if (mi_grow((void **)&x->th, &x->nth, (size_t)t + 1, sizeof *x->th) < 0)
        return -1;
    struct attempt *a = &x->th[t];
    uint64_t ns = ev_ns(x, ev->ts);
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
        if (!a->open)
            break;
        emit_slice(x, t, a, ev);
        if (ev->kind == TF_EV_ABORT)
            emit_instant(x, t, ns, "abort", is_hw(a->flags) ? "htm" : "stm", "reason",
                         ca_reason_name(ev->reason));
        a->open = 0;
        break;
    case TF_EV_FALLBACK:
        emit_instant(x, t, ns, "fallback", "htm", "why", fallback_name(ev->reason));
        break;
    default:
        break;
    }
    return 0;
}

/* The events in merged order (already so in a synced trace), each shown and
 * fed to the analysis, whose attributions come back as arrows. */
static int export_events(struct exporter *x, const char *path, unsigned oflags, struct ca_state *st)
{
    struct tf_reader *r = tf_open(path, oflags);
    if (!r)
        return -1;
    struct merge *m = merge_create(r, x->ix, NULL, NULL);
    if (!m) {
        tf_close(r);
        return -1;
    }
    const struct tf_event *ev;
    int rc;
    while ((rc = merge_next(m, &ev)) == 1)
        if (on_event(x, ev) < 0 || (st && ca_event(st, ev) < 0)) {
            rc = -1;
            break;
        }
    if (rc == 0 && st && ca_finish(st) < 0)
        rc = -1;
    if (rc == 0 && tf_reader_skipped(r))
        fprintf(stderr, "%s: %s: skipped %" PRIu64 " damaged chunks (%" PRIu64 " bytes)\n",
                tool_name(), path, tf_reader_skipped(r), tf_reader_skipped_bytes(r));
    merge_free(m);
    tf_close(r);
    return rc < 0 ? -1 : 0;
}

/* ---- clock samples as CSV ----------------------------------------------- */

static const struct tf_cpu_model *model_of(const struct merge_index *ix, uint32_t cpu)
{
    for (size_t i = 0; i < ix->nmodels; i++)
        if (ix->models[i].cpu == cpu)
            return &ix->models[i];
    return NULL;
}

/* One row per sample, with the model tmsync fitted (synced traces) and the
 * residual, so that a plot needs no knowledge of the model's form. */
static void export_samples(FILE *f, const struct merge_index *ix)
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
};

/* 0: go on; otherwise the tool's exit code (--help, --version, bad usage) + 1. */
static int parse_args(int argc, char **argv, struct export_args *a)
{
    enum { OPT_RAW = 256, OPT_NO_FLOWS, OPT_SALVAGE, OPT_VERSION, OPT_STRIPES, OPT_SAMPLES };
    static const struct option opts[] = {
        { "chrome", no_argument, NULL, 'c' },
        { "samples-csv", no_argument, NULL, OPT_SAMPLES },
        { "output", required_argument, NULL, 'o' },
        { "raw", no_argument, NULL, OPT_RAW },
        { "no-flows", no_argument, NULL, OPT_NO_FLOWS },
        { "salvage", no_argument, NULL, OPT_SALVAGE },
        { "stripes", required_argument, NULL, OPT_STRIPES },
        { "version", no_argument, NULL, OPT_VERSION },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    *a = (struct export_args){ .outpath = "-", .flows = 1 };
    int ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":co:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'c': a->samples = 0; break;
        case OPT_SAMPLES: a->samples = 1; break;
        case 'o': a->outpath = optarg; break;
        case OPT_RAW: a->raw = 1; break;
        case OPT_NO_FLOWS: a->flows = 0; break;
        case OPT_SALVAGE: a->oflags |= TF_SALVAGE; break;
        case OPT_STRIPES:
            if (tool_parse_u64("--stripes", optarg, 1, 40, &a->stripes) < 0)
                return TOOL_USAGE + 1;
            break;
        case OPT_VERSION: tool_print_version(stdout); return TOOL_OK + 1;
        case 'h': fputs(usage_text, stdout); return TOOL_OK + 1;
        default: return tool_bad_option(argv) + 1;
        }
    }
    a->path = tool_trace_operand(argc, argv);
    return a->path ? 0 : TOOL_USAGE + 1;
}

static int write_samples(const struct export_args *a, const struct merge_index *ix)
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
    struct out o = { .f = f, .first = 1 };
    x->o = &o;
    fprintf(o.f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"tool\":\"tmexport\",\"synced\":%s,"
                 "\"tsc_hz\":%" PRIu64 "},\"traceEvents\":[",
            x->raw ? "false" : "true", x->ix->hdr.tsc_hz);
    emit_thread_names(x);
    if (export_events(x, a->path, a->oflags, st) < 0)
        return -1;
    fputs("\n]}\n", o.f);
    return 0;
}

static int write_chrome(const struct export_args *a, const struct merge_index *ix)
{
    int synced = (ix->hdr.flags & TF_HDR_SYNCED) != 0;
    struct exporter x = { .ix = ix, .raw = !synced, .flows = a->flows };
    x.ns_per_tick = ix->hdr.tsc_hz ? 1e9 / (double)ix->hdr.tsc_hz : 1.0;
    x.sites = site_names(ix, &x.nsites);
    struct ca_opts co;
    ca_opts_for_trace(ix, (unsigned)a->stripes, &co);
    struct ca_state *st = a->flows ? ca_create(&co) : NULL;
    int status = TOOL_OK;
    if (!x.sites || (a->flows && !st)) {
        status = tool_error("out of memory");
        goto done;
    }
    if (st)
        ca_on_attribution(st, on_attribution, &x);
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
    }
done:
    free(x.th);
    free(x.sites);
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
    struct merge_index ix;
    if (mi_scan(r, &ix) < 0) {
        tf_close(r);
        return tool_error_lib();
    }
    tf_close(r);
    int status;
    if (a.samples)
        status = write_samples(&a, &ix);
    else if (!(ix.hdr.flags & TF_HDR_SYNCED) && !a.raw)
        status = tool_error("%s: trace is not synchronised (run tmsync first, or pass --raw)", a.path);
    else
        status = write_chrome(&a, &ix);
    mi_free(&ix);
    return status;
}
