/*
 * tmexport.c - converts a trace into the Chrome trace-event JSON format that
 * Perfetto's UI and chrome://tracing open.
 *
 * Owns: the command line of `tmexport`, the mapping of transaction attempts
 * to complete ("X") slices, aborts to instant ("i") events and abort
 * culprits to flow ("s"/"f") arrows, and the JSON writer for that format.
 * Never buffers the whole trace: one pass over the metadata chunks, one over
 * the events, with memory bounded by the thread count, the largest write set
 * and a fixed-size table of recent committed writes. Never accepts an
 * unsynchronised trace unless --raw says the user knows its time line may be
 * inconsistent.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tool_common.h"
#include "tmtrace.h"
#include "trace_file.h"

static const char usage_text[] =
    "usage: tmexport --chrome [options] TRACE\n"
    "Writes TRACE (normally a tmsync output, trace.sync.bin) as Chrome trace-event\n"
    "JSON, which ui.perfetto.dev and chrome://tracing open.\n"
    "  one complete slice per transaction attempt on its thread's track\n"
    "  (name = site label; args: outcome, abort reason, core, instance, set sizes),\n"
    "  an instant event per abort and per hardware fallback, and a flow arrow from\n"
    "  each abort's culprit commit (the latest commit by another thread, before the\n"
    "  abort, that wrote the conflicting address) to the aborted attempt.\n"
    "options:\n"
    "  -c, --chrome      Chrome trace-event JSON (the only format, the default)\n"
    "  -o, --output FILE write to FILE (atomically) instead of standard output\n"
    "      --raw         accept an unsynchronised trace (timestamps are TSC ticks\n"
    "                    converted with the header's frequency; order may be wrong)\n"
    "      --no-flows    leave out the culprit arrows\n"
    "      --salvage     skip damaged chunks instead of failing\n"
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

struct meta {
    struct tf_header hdr;
    struct site_name *sites;   /* indexed by site id */
    size_t nsites;
    uint32_t *os_tid;          /* indexed by thread id */
    size_t nthreads;           /* capacity of os_tid */
    uint32_t max_thread;       /* highest thread id named by the metadata */
};

static int grow(void **p, size_t *n, size_t want, size_t elem)
{
    if (want <= *n)
        return 0;
    size_t m = *n ? *n : 16;
    while (m < want)
        m *= 2;
    void *q = realloc(*p, m * elem);
    if (!q)
        return error_set("out of memory");
    memset((char *)q + *n * elem, 0, (m - *n) * elem);
    *p = q;
    *n = m;
    return 0;
}

static int meta_add_site(struct meta *m, const struct tf_site *s)
{
    if (grow((void **)&m->sites, &m->nsites, (size_t)s->id + 1, sizeof *m->sites) < 0)
        return -1;
    const char *label = s->label[0] ? s->label : "tx";
    const char *file = strrchr(s->file, '/');
    file = file ? file + 1 : s->file;
    if (file[0])
        snprintf(m->sites[s->id].label, sizeof m->sites[s->id].label, "%.*s (%.*s:%d)", 100,
                 label, 40, file, s->line);
    else
        snprintf(m->sites[s->id].label, sizeof m->sites[s->id].label, "%.*s", 100, label);
    return 0;
}

static int meta_add_thread(struct meta *m, const struct tf_thread_info *t)
{
    if (grow((void **)&m->os_tid, &m->nthreads, (size_t)t->id + 1, sizeof *m->os_tid) < 0)
        return -1;
    if (t->os_tid)
        m->os_tid[t->id] = t->os_tid;
    if (t->id > m->max_thread)
        m->max_thread = t->id;
    return 0;
}

static const char *site_label(const struct meta *m, uint32_t id, char *buf, size_t cap)
{
    if (id < m->nsites && m->sites[id].label[0])
        return m->sites[id].label;
    snprintf(buf, cap, "site %" PRIu32, id);
    return buf;
}

/* First pass: sites and threads, without decoding the events. */
static int read_meta(const char *path, unsigned oflags, struct meta *m)
{
    struct tf_reader *r = tf_open(path, oflags | TF_SKIP_EVENTS);
    if (!r)
        return -1;
    m->hdr = *tf_reader_header(r);
    struct tf_chunk c;
    int rc;
    while ((rc = tf_next(r, &c)) == 1) {
        for (size_t i = 0; i < c.count && c.kind == TF_CHUNK_META_SITES; i++)
            if (meta_add_site(m, &c.sites[i]) < 0)
                goto fail;
        for (size_t i = 0; i < c.count && (c.kind == TF_CHUNK_META_THREADS || c.kind == TF_CHUNK_END); i++)
            if (meta_add_thread(m, &c.threads[i]) < 0)
                goto fail;
    }
    if (rc < 0)
        goto fail;
    tf_close(r);
    return 0;
fail:
    tf_close(r);
    return -1;
}

/* ---- culprits: a direct-mapped table of the latest committed write ------ */

/* Bounded: a collision forgets the older entry, which can only cost an arrow. */
#define WT_BITS 20

struct wt_entry {
    uint64_t addr;      /* 0 = empty */
    uint64_t start_ns;  /* the committing attempt's start and commit stamps */
    uint64_t commit_ns;
    uint64_t instance;
    uint32_t thread;
    uint32_t site;
};

static inline size_t wt_slot(uint64_t addr)
{
    return (size_t)((addr * 0x9E3779B97F4A7C15ULL) >> (64 - WT_BITS));
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
    uint64_t *waddr;     /* addresses written, for the culprit table */
    size_t nw, capw;
};

struct exporter {
    struct meta *m;
    struct out *o;
    int raw;
    int flows;
    double ns_per_tick;  /* raw traces: TSC ticks to ns */
    struct attempt *th;  /* indexed by thread id */
    size_t nth;
    struct wt_entry *wt;
    uint64_t next_flow_id;
};

static uint64_t ev_ns(const struct exporter *x, uint64_t ts)
{
    return x->raw ? (uint64_t)((double)ts * x->ns_per_tick) : ts;
}

/* Microseconds with ns resolution, the unit of the format. */
static void put_us(FILE *f, const char *key, uint64_t ns)
{
    fprintf(f, "\"%s\":%" PRIu64 ".%03u", key, ns / 1000, (unsigned)(ns % 1000));
}

static const char *reason_name(unsigned r)
{
    static const char *const names[TMT_ABORT_REASONS] = {
        "none", "read-locked", "read-version", "commit-locked", "commit-validate",
        "user-retry", "user-cancel", "htm",
    };
    return r < TMT_ABORT_REASONS ? names[r] : "unknown";
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
    for (size_t t = 1; t <= x->m->max_thread; t++) {
        out_sep(x->o);
        fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRIu32 ",\"tid\":%zu,"
                   "\"args\":{\"name\":\"T%zu (tid %" PRIu32 ")\"}}",
                x->m->hdr.pid, t, t, x->m->os_tid[t]);
        out_sep(x->o);
        fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%" PRIu32
                   ",\"tid\":%zu,\"args\":{\"sort_index\":%zu}}",
                x->m->hdr.pid, t, t);
    }
    out_sep(x->o);
    fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRIu32 ",\"args\":{\"name\":\"",
            x->m->hdr.pid);
    json_str(f, x->m->hdr.cmdline[0] ? x->m->hdr.cmdline : "traced program");
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
    json_str(f, site_label(x->m, a->site, buf, sizeof buf));
    fprintf(f, "\",\"cat\":\"%s,%s\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",",
            is_hw(a->flags) ? "htm" : "stm", commit ? "commit" : "abort", x->m->hdr.pid, thread);
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
        fprintf(f, ",\"abort_reason\":\"%s\"", reason_name(end->reason));
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
            name, cat, x->m->hdr.pid, thread);
    put_us(f, "ts", ns);
    fprintf(f, ",\"args\":{\"%s\":\"%s\"}}", key, val);
    x->o->instants++;
}

/* An arrow from the culprit's commit to the aborted attempt. Both ends sit
 * 1 ns inside their slices so that viewers bind them to the right slice. */
static void emit_flow(struct exporter *x, const struct wt_entry *c, uint32_t thread,
                      const struct attempt *a, uint64_t abort_ns)
{
    FILE *f = x->o->f;
    uint64_t id = ++x->next_flow_id;
    uint64_t s_ns = c->commit_ns > c->start_ns ? c->commit_ns - 1 : c->commit_ns;
    uint64_t f_ns = abort_ns > a->start_ns ? abort_ns - 1 : abort_ns;
    out_sep(x->o);
    fprintf(f, "{\"ph\":\"s\",\"name\":\"culprit\",\"cat\":\"conflict\",\"id\":%" PRIu64
               ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",",
            id, x->m->hdr.pid, c->thread);
    put_us(f, "ts", s_ns);
    fputc('}', f);
    out_sep(x->o);
    fprintf(f, "{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"culprit\",\"cat\":\"conflict\",\"id\":%" PRIu64
               ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",",
            id, x->m->hdr.pid, thread);
    put_us(f, "ts", f_ns);
    char b1[32], b2[32];
    fprintf(f, ",\"args\":{\"culprit_thread\":%" PRIu32 ",\"culprit_instance\":%" PRIu64
               ",\"culprit_site\":\"", c->thread, c->instance);
    json_str(f, site_label(x->m, c->site, b1, sizeof b1));
    fputs("\",\"victim_site\":\"", f);
    json_str(f, site_label(x->m, a->site, b2, sizeof b2));
    fputs("\"}}", f);
    x->o->flows++;
}

static int attempt_note_write(struct attempt *a, uint64_t addr)
{
    if (a->nw == a->capw) {
        size_t n = a->capw ? a->capw * 2 : 64;
        uint64_t *p = realloc(a->waddr, n * sizeof *p);
        if (!p)
            return error_set("out of memory");
        a->waddr = p;
        a->capw = n;
    }
    a->waddr[a->nw++] = addr;
    return 0;
}

static void record_commit(struct exporter *x, uint32_t thread, const struct attempt *a,
                          uint64_t commit_ns)
{
    for (size_t i = 0; i < a->nw; i++) {
        struct wt_entry *e = &x->wt[wt_slot(a->waddr[i])];
        *e = (struct wt_entry){ a->waddr[i], a->start_ns, commit_ns, a->instance, thread, a->site };
    }
}

static const struct wt_entry *find_culprit(const struct exporter *x, uint32_t thread, uint64_t addr,
                                           uint64_t abort_ns)
{
    if (!addr)
        return NULL;
    const struct wt_entry *e = &x->wt[wt_slot(addr)];
    if (e->addr != addr || e->thread == thread || e->commit_ns > abort_ns)
        return NULL;
    return e;
}

static int on_event(struct exporter *x, const struct tf_event *ev)
{
    uint32_t t = ev->thread;
    if (grow((void **)&x->th, &x->nth, (size_t)t + 1, sizeof *x->th) < 0)
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
        a->nw = 0;
        break;
    case TF_EV_READ:
        a->reads++;
        break;
    case TF_EV_WRITE:
        a->writes++;
        if (a->open && x->flows && attempt_note_write(a, ev->addr) < 0)
            return -1;
        break;
    case TF_EV_COMMIT:
        if (!a->open)
            break;
        emit_slice(x, t, a, ev);
        if (x->flows)
            record_commit(x, t, a, ns);
        a->open = 0;
        break;
    case TF_EV_ABORT:
        if (!a->open)
            break;
        emit_slice(x, t, a, ev);
        emit_instant(x, t, ns, "abort", is_hw(a->flags) ? "htm" : "stm", "reason",
                     reason_name(ev->reason));
        if (x->flows) {
            const struct wt_entry *c = find_culprit(x, t, ev->addr, ns);
            if (c)
                emit_flow(x, c, t, a, ns);
        }
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

/* Second pass: the events, in file order (global time order once synced). */
static int export_events(struct exporter *x, const char *path, unsigned oflags)
{
    struct tf_reader *r = tf_open(path, oflags);
    if (!r)
        return -1;
    struct tf_chunk c;
    int rc;
    while ((rc = tf_next(r, &c)) == 1) {
        if (c.kind != TF_CHUNK_EVENTS)
            continue;
        for (size_t i = 0; i < c.count; i++) {
            struct tf_event ev = c.events[i];
            if (!ev.thread)
                ev.thread = c.thread;
            if (on_event(x, &ev) < 0) {
                tf_close(r);
                return -1;
            }
        }
    }
    if (rc == 0 && tf_reader_skipped(r))
        fprintf(stderr, "%s: %s: skipped %" PRIu64 " damaged chunks (%" PRIu64 " bytes)\n",
                tool_name(), path, tf_reader_skipped(r), tf_reader_skipped_bytes(r));
    tf_close(r);
    return rc < 0 ? -1 : 0;
}

/* ---- main -------------------------------------------------------------- */

int main(int argc, char **argv)
{
    enum { OPT_RAW = 256, OPT_NO_FLOWS, OPT_SALVAGE, OPT_VERSION };
    static const struct option opts[] = {
        { "chrome", no_argument, NULL, 'c' },
        { "output", required_argument, NULL, 'o' },
        { "raw", no_argument, NULL, OPT_RAW },
        { "no-flows", no_argument, NULL, OPT_NO_FLOWS },
        { "salvage", no_argument, NULL, OPT_SALVAGE },
        { "version", no_argument, NULL, OPT_VERSION },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *outpath = "-";
    int raw = 0, flows = 1;
    unsigned oflags = 0;
    int ch;
    tool_init("tmexport");
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":co:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'c': break;
        case 'o': outpath = optarg; break;
        case OPT_RAW: raw = 1; break;
        case OPT_NO_FLOWS: flows = 0; break;
        case OPT_SALVAGE: oflags |= TF_SALVAGE; break;
        case OPT_VERSION: tool_print_version(stdout); return TOOL_OK;
        case 'h': fputs(usage_text, stdout); return TOOL_OK;
        default: return tool_bad_option(argv);
        }
    }
    if (optind >= argc)
        return tool_error("no trace given (usage: tmexport --chrome TRACE, see --help)");
    if (optind != argc - 1)
        return tool_error("%s: exactly one trace expected (see --help)", argv[optind + 1]);
    const char *path = argv[optind];

    struct meta m = { 0 };
    if (read_meta(path, oflags, &m) < 0)
        return tool_error_lib();
    if (!(m.hdr.flags & TF_HDR_SYNCED) && !raw)
        return tool_error("%s: trace is not synchronised (run tmsync first, or pass --raw)", path);
    if (grow((void **)&m.os_tid, &m.nthreads, 1, sizeof *m.os_tid) < 0)
        return tool_error_lib();

    struct exporter x = { .m = &m, .raw = !(m.hdr.flags & TF_HDR_SYNCED), .flows = flows };
    x.ns_per_tick = m.hdr.tsc_hz ? 1e9 / (double)m.hdr.tsc_hz : 1.0;
    if (flows && !(x.wt = calloc((size_t)1 << WT_BITS, sizeof *x.wt)))
        return tool_error("out of memory");

    /* -o: written beside the target and renamed, so no partial file is left. */
    struct tool_out to;
    if (tool_out_open(&to, outpath, path) < 0)
        return TOOL_USAGE;
    struct out o = { .f = to.f, .first = 1 };
    x.o = &o;

    fprintf(o.f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"tool\":\"tmexport\",\"synced\":%s,"
                 "\"tsc_hz\":%" PRIu64 "},\"traceEvents\":[",
            x.raw ? "false" : "true", m.hdr.tsc_hz);
    emit_thread_names(&x);
    int status = TOOL_OK;
    if (export_events(&x, path, oflags) < 0) {
        tool_error_lib();
        tool_out_abandon(&to);
        status = TOOL_USAGE;
    } else {
        fputs("\n]}\n", o.f);
        if (tool_out_commit(&to) < 0)
            status = TOOL_USAGE;
    }
    for (size_t t = 0; t < x.nth; t++)
        free(x.th[t].waddr);
    free(x.th);
    free(x.wt);
    free(m.sites);
    free(m.os_tid);
    return status;
}
