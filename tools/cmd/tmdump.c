/*
 * tmdump.c - prints a trace: one event per line, or a --summary of the
 * header, sites, threads, sampling phases, injected skews and clock models.
 *
 * Owns: the text forms of events and summaries. Never: holds more than one
 * chunk of events (an index pass remembers only chunk offsets), writes any
 * file, or goes on silently past damage (without --salvage damage is an
 * error; with it every skip is reported on stderr).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "symbols.h"
#include "tool_common.h"
#include "tool_doc.h"
#include "tmtrace.h"
#include "trace_complete.h"
#include "trace_file.h"

struct dump_opts {
    const char *path;
    int summary;
    int salvage;
    int have_thread, have_site;
    uint64_t thread, site;
    uint64_t limit;     /* UINT64_MAX = no limit */
};

static const struct tool_option dump_options[] = {
    { "-t, --thread N", "only events of thread N (an error if the trace has no thread N)" },
    { "-s, --site N", "only events of site N (an error if the trace has no site N)" },
    { "-n, --limit N", "print at most N events" },
    { "-S, --summary", "header, sites, per-thread counts, sampling phases,\n"
                       "injected skews, load map and clock models instead of events" },
    { "    --salvage", "skip damaged chunks, say so on stderr and go on" },
    { "    --bench-codec", "measure the event codecs on a synthetic stream" },
    { "-h, --help", "this text" },
    { "    --man", "this text as a man page (troff)" },
    { "-V, --version", "the version" },
    { NULL, NULL },
};

static const struct tool_doc dump_doc = {
    .name = "tmdump",
    .purpose = "print the events or a summary of a trace",
    .synopsis = "tmdump [options] TRACE",
    .description =
        "Prints the events of a trace, one per line:\n"
        "  TIME UNIT EVENT T<thread> site=<id> NAME tx=<instance> DETAILS core=<cpu>\n"
        "in each thread's order (threads in ascending id; a synchronised trace in\n"
        "its merged order). UNIT is ticks (TSC) in a raw trace, ns of the reference\n"
        "clock in a synchronised one; NAME is the site's label (or file:line, or -).\n"
        "DETAILS by event:\n"
        "  read, write  addr=ADDRESS size=BYTES value=VALUE\n"
        "  commit       read_set=N write_set=N version=V\n"
        "  abort        reason=REASON addr=ADDRESS, then status=HTM_STATUS for a\n"
        "               hardware abort; for a software one what the attempt found\n"
        "               on the stripe: holder=T<thread> holder_tx=<instance> (the\n"
        "               lock holder's attempt) or found_version=V (a newer commit's\n"
        "               version); nothing when it found neither (a version 1 trace\n"
        "               records only holder=T<thread>, of a lock abort)\n"
        "  fallback     why=REASON status=HTM_STATUS\n"
        "  serial       why=REASON conflicts=N\n"
        "  alloc        addr=ADDRESS size=BYTES pc=CALL_SITE (size 65535+: that or more)\n"
        "  wset         addr=WORD mask=BYTE_MASK: a word the commit before it wrote\n"
        "               (level tx, format version 4 and later; bit i of the mask: byte i)\n"
        "  abort-pc     pc=CODE_ADDRESS: the access at which the abort before it\n"
        "               was found (format version 4 and later)\n"
        "  abort-stack  depth=N pc=RETURN_ADDRESS: the program's frame N levels\n"
        "               above that access (TMTRACE_ABORT_STACK)\n"
        "  start        detail, when TMTRACE_DETAIL chose the attempt (its reads\n"
        "               and writes are recorded)\n"
        "Where a thread's program order has a hole (events the tracer dropped, its\n"
        "writer lost or --salvage skipped: each event has a number in its thread's\n"
        "order), a line says so before the next event:\n"
        "  # T<thread>: N events missing here (...)",
    .options = dump_options,
    .exit_status = "0  success\n"
                   "2  bad usage, a thread or site the trace does not have, or an unreadable\n"
                   "   or damaged trace (one line on stderr)\n"
                   "3  success, but --salvage skipped damaged chunks",
};

/* ---- event lines ------------------------------------------------------- */

/* What pass 1 learnt besides the chunk offsets: names and ids. */
struct dump_meta {
    const char *unit;          /* "ticks" or "ns" */
    unsigned version;          /* the trace's format version */
    struct tf_site *sites;
    size_t nsites;
    struct sym_table *sym;     /* the LOADMAP's objects: names code-address sites */
    uint32_t *threads;         /* ids seen (META_THREADS, END, EVENTS chunks) */
    size_t nthreads, capthreads;
};

static const char *dump_site_name(const struct dump_meta *m, uint32_t id, char *buf, size_t cap)
{
    for (size_t i = 0; i < m->nsites; i++) {
        const struct tf_site *s = &m->sites[i];
        if (s->id != id)
            continue;
        if (s->label[0])
            snprintf(buf, cap, "%.*s", (int)sizeof s->label, s->label);
        else if (s->file[0])
            snprintf(buf, cap, "%.*s:%d", (int)sizeof s->file, s->file, s->line);
        else
            break;
        return buf;
    }
    return "-";
}

/* An abort: its reason and address, then the hardware status, or what a
 * software attempt found on the stripe: the lock holder's thread and attempt
 * or the newer version (format version 2); version 1 records only the
 * holder's thread of a lock abort. */
static void dump_abort(FILE *out, const struct dump_meta *m, const struct tf_event *e)
{
    fprintf(out, " reason=%s addr=0x%" PRIx64, tf_abort_reason_name(e->reason), e->addr);
    if (e->reason == TMT_ABORT_HTM)
        fprintf(out, " status=0x%08" PRIx64, e->value & 0xffffffffu);
    else if (m->version >= 2 && tf_abort_is_held(e->value))
        fprintf(out, " holder=T%" PRIu32 " holder_tx=%" PRIu64, tf_abort_holder_thread(e->value),
                tf_abort_holder_instance(e->value));
    else if (m->version >= 2 && e->value != 0)
        fprintf(out, " found_version=%" PRIu64, e->value);
    else if (m->version < 2 && e->value != 0 &&
             (e->reason == TMT_ABORT_READ_LOCKED || e->reason == TMT_ABORT_COMMIT_LOCKED))
        fprintf(out, " holder=T%" PRIu64, e->value);
}

static void dump_details(FILE *out, const struct dump_meta *m, const struct tf_event *e)
{
    switch (e->kind) {
    case TF_EV_READ:
    case TF_EV_WRITE:
        fprintf(out, " addr=0x%" PRIx64 " size=%u value=0x%" PRIx64, e->addr, e->reason, e->value);
        break;
    case TF_EV_COMMIT:
        fprintf(out, " read_set=%" PRIu32 " write_set=%" PRIu32 " version=%" PRIu64, tf_commit_read_set(e->value),
                tf_commit_write_set(e->value), e->addr);
        break;
    case TF_EV_ABORT:
        dump_abort(out, m, e);
        break;
    case TF_EV_FALLBACK:
        fprintf(out, " why=%s status=0x%08" PRIx64, tf_fallback_reason_name(e->reason), e->value & 0xffffffffu);
        break;
    case TF_EV_SERIAL:
        fprintf(out, " why=%s conflicts=%" PRIu64 "%s", tf_serial_reason_name(e->reason), e->addr,
                (e->value & TF_SERIAL_UNCOUNTED) ? " reads=uncounted" : "");
        break;
    case TF_EV_ALLOC:
        fprintf(out, " addr=0x%" PRIx64 " size=%" PRIu64 "%s pc=0x%" PRIx64, e->addr, tf_alloc_size(e->value),
                tf_alloc_size(e->value) == TF_ALLOC_SIZE_MAX ? "+" : "", tf_alloc_pc(e->value));
        break;
    case TF_EV_WSET:
        fprintf(out, " addr=0x%" PRIx64 " mask=0x%02" PRIx64, e->addr, e->value & 0xffu);
        break;
    case TF_EV_ABORT_PC:
        fprintf(out, " pc=0x%" PRIx64, e->addr);
        break;
    case TF_EV_ABORT_STACK:
        fprintf(out, " depth=%" PRIu64 " pc=0x%" PRIx64, e->value, e->addr);
        break;
    case TF_EV_START:
        if (tf_start_flags(e->value) & TF_START_DETAIL)
            fprintf(out, " detail");
        if (tf_start_flags(e->value) & TF_START_SHED)
            fprintf(out, " shed");
        break;
    default:
        break;
    }
}

static void dump_event(FILE *out, const struct dump_meta *m, const struct tf_event *e)
{
    char nb[300];
    fprintf(out, "%" PRIu64 " %s %s T%" PRIu32 " site=%" PRIu32 " %s tx=%" PRIu64, e->ts, m->unit,
            tf_event_kind_name(e->kind), e->thread, e->site, dump_site_name(m, e->site, nb, sizeof nb),
            e->instance);
    dump_details(out, m, e);
    fprintf(out, " core=%u\n", e->cpu);
}

/* Each thread's sequence number after its last event, for the holes in
 * its program order: events the tracer dropped (it numbers them too) or
 * the chunks --salvage skipped. */
struct dump_holes {
    uint64_t *next;     /* by thread id; 0 before the thread's first event */
    size_t n;
};
#define DUMP_HOLES_THREADS (1u << 20) /* ids past it (a damaged trace's) are not followed */

/* Before thread e->thread's next event: a line for the events missing
 * before it, when there are. 0, or -1 without memory. */
static int dump_hole(FILE *out, struct dump_holes *h, const struct tf_event *e)
{
    if (e->thread >= DUMP_HOLES_THREADS)
        return 0;
    if (e->thread >= h->n) {
        size_t n = (size_t)e->thread + 1 > 2 * h->n ? (size_t)e->thread + 1 : 2 * h->n;
        uint64_t *p = realloc(h->next, n * sizeof *p);
        if (p == NULL)
            return -1;
        memset(p + h->n, 0, (n - h->n) * sizeof *p);
        h->next = p;
        h->n = n;
    }
    if (e->seq > h->next[e->thread])
        fprintf(out, "# T%" PRIu32 ": %" PRIu64 " events missing here (dropped by the tracer, lost by its "
                "writer, or in a chunk --salvage skipped)\n", e->thread, e->seq - h->next[e->thread]);
    h->next[e->thread] = e->seq + 1;
    return 0;
}

/* Prints the chunk's events that pass the filters, and the holes in the
 * printed threads' program order (whatever the site filter); returns 1 once
 * the limit is reached, -1 without memory. */
static int dump_chunk_events(const struct dump_opts *o, const struct dump_meta *m, const struct tf_chunk *c,
                             struct dump_holes *h, uint64_t *printed)
{
    for (size_t i = 0; i < c->count; i++) {
        const struct tf_event *e = &c->events[i];
        if (o->have_thread && e->thread != o->thread)
            continue;
        if (*printed >= o->limit)
            return 1;
        if (dump_hole(stdout, h, e) != 0)
            return -1;
        if (o->have_site && e->site != o->site)
            continue;
        dump_event(stdout, m, e);
        (*printed)++;
    }
    return *printed >= o->limit;
}

/* With --salvage, tells the user what was skipped (once per call). */
static void dump_report_salvage(struct tf_reader *r, uint64_t *reported)
{
    uint64_t n = tf_reader_skipped(r);
    if (n > *reported) {
        tool_error("warning: skipped damage (%s)", tf_reader_damage(r));
        *reported = n;
    }
}

struct dump_index {
    uint32_t thread;
    uint64_t offset;
    size_t order;       /* file position, for a stable sort */
};

static int dump_index_cmp(const void *a, const void *b)
{
    const struct dump_index *x = a, *y = b;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static int dump_add_thread(struct dump_meta *m, uint32_t id)
{
    for (size_t i = 0; i < m->nthreads; i++)
        if (m->threads[i] == id)
            return 0;
    if (m->nthreads == m->capthreads) {
        size_t nc = m->capthreads ? 2 * m->capthreads : 64;
        uint32_t *p = realloc(m->threads, nc * sizeof *p);
        if (!p)
            return -1;
        m->threads = p;
        m->capthreads = nc;
    }
    m->threads[m->nthreads++] = id;
    return 0;
}

/* Pass 1 keeps a chunk: its names, its thread ids, or its offset. */
static int dump_index_chunk(const struct dump_opts *o, const struct tf_chunk *c, int synced, struct dump_meta *m,
                            struct dump_index **ix, size_t *n, size_t *cap)
{
    if (c->kind == TF_CHUNK_META_SITES && !m->sites) {
        m->sites = malloc((c->count ? c->count : 1) * sizeof *m->sites);
        if (!m->sites)
            return -1;
        memcpy(m->sites, c->sites, c->count * sizeof *m->sites);
        m->nsites = c->count;
    }
    if (c->kind == TF_CHUNK_LOADMAP && !m->sym && !(m->sym = sym_open(c->objects, c->count)))
        return -1;
    if (c->kind == TF_CHUNK_META_THREADS || c->kind == TF_CHUNK_END)
        for (size_t i = 0; i < c->count; i++)
            if (dump_add_thread(m, c->threads[i].id) < 0)
                return -1;
    if (c->kind != TF_CHUNK_EVENTS)
        return 0;
    if (!synced && dump_add_thread(m, c->thread) < 0)
        return -1;
    if (o->have_thread && c->thread != 0 && c->thread != o->thread)
        return 0;
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 256;
        struct dump_index *p = realloc(*ix, *cap * sizeof **ix);
        if (!p)
            return -1;
        *ix = p;
    }
    (*ix)[*n] = (struct dump_index){ synced ? 0 : c->thread, c->offset, *n };
    (*n)++;
    return 0;
}

/* --thread and --site name a thread and a site the trace has (when it
 * lists its threads and sites at all). */
static int dump_check_filters(const struct dump_opts *o, const struct dump_meta *m)
{
    int found = !o->have_thread || m->nthreads == 0;
    for (size_t i = 0; !found && i < m->nthreads; i++)
        found = m->threads[i] == o->thread;
    if (!found)
        return tool_error("%s: --thread %" PRIu64 ": the trace has no such thread", o->path, o->thread);
    found = !o->have_site || m->nsites == 0;
    for (size_t i = 0; !found && i < m->nsites; i++)
        found = m->sites[i].id == o->site;
    if (!found)
        return tool_error("%s: --site %" PRIu64 ": the trace has no such site", o->path, o->site);
    return TOOL_OK;
}

/* Pass 1: the chunks of each thread, sorted: merged chunks (thread 0) in
 * file order; a raw trace's threads in ascending id, each in chunk order. */
static int dump_pass1(const struct dump_opts *o, struct dump_meta *m, struct dump_index **ix, size_t *n,
                      uint64_t *skipped)
{
    struct tf_reader *idx = tf_open(o->path, TF_SKIP_EVENTS | (o->salvage ? TF_SALVAGE : 0));
    if (!idx)
        return tool_error_lib();
    int synced = (tf_reader_header(idx)->flags & TF_HDR_SYNCED) != 0;
    m->unit = synced ? "ns" : "ticks";
    m->version = tf_reader_header(idx)->version;
    struct tf_chunk c;
    size_t cap = 0;
    uint64_t reported = 0;
    int rc;
    while ((rc = tf_next(idx, &c)) == 1) {
        dump_report_salvage(idx, &reported);
        if (dump_index_chunk(o, &c, synced, m, ix, n, &cap) < 0) {
            tf_close(idx);
            return tool_error("%s: out of memory for the chunk index", o->path);
        }
    }
    dump_report_salvage(idx, &reported);
    *skipped = tf_reader_skipped(idx);
    tf_close(idx);
    if (rc < 0)
        return tool_error_lib();
    if (*n > 1)
        qsort(*ix, *n, sizeof **ix, dump_index_cmp);
    /* Sites known by code address alone (the libitm ABI's) are named by the
     * function and line they were called from, as the other tools name them. */
    if (m->sym)
        sym_name_sites(m->sym, m->sites, m->nsites);
    return dump_check_filters(o, m);
}

static int dump_events(const struct dump_opts *o)
{
    struct dump_meta m = { 0 };
    struct dump_index *ix = NULL;
    size_t n = 0;
    uint64_t skipped = 0;
    int status = dump_pass1(o, &m, &ix, &n, &skipped);
    struct tf_reader *r = NULL;
    if (status == TOOL_OK && !(r = tf_open(o->path, o->salvage ? TF_SALVAGE : 0)))
        status = tool_error_lib();
    /* Pass 2: decode and print, one chunk at a time. */
    uint64_t printed = 0;
    struct dump_holes holes = { 0 };
    struct tf_chunk c;
    for (size_t i = 0; status == TOOL_OK && i < n && printed < o->limit; i++) {
        if (tf_read_at(r, ix[i].offset, &c) != 1) {
            if (!o->salvage) {
                status = tool_error_lib();
                break;
            }
            tool_error("warning: skipped damage (%s)", error_get());
            skipped++;
            continue;
        }
        int rc = dump_chunk_events(o, &m, &c, &holes, &printed);
        if (rc < 0)
            status = tool_error("out of memory");
        if (rc != 0)
            break;
    }
    if (fflush(stdout) != 0 && status == TOOL_OK)
        status = tool_error("-: write error on standard output");
    if (status == TOOL_OK && skipped)
        status = TOOL_SALVAGED;
    free(ix);
    free(holes.next);
    free(m.sites);
    free(m.threads);
    sym_close(m.sym);
    if (r)
        tf_close(r);
    return status;
}

/* ---- summary ------------------------------------------------------------ */

struct dump_thread_sum {
    int seen;
    uint64_t counted;        /* events found in the file */
    uint64_t events, dropped; /* from the END chunk */
    uint32_t os_tid;
    int in_end;
};

struct dump_cpu_sum {
    uint64_t samples[3];      /* per phase */
    uint64_t min_width, max_width;
};

/* Grows a zeroed array so that index `i` exists. */
static int dump_room(void **arr, size_t *n, size_t i, size_t esz)
{
    if (i < *n)
        return 0;
    if (i >= (1u << 24))
        return -1;
    size_t m = *n ? *n : 16;
    while (m <= i)
        m *= 2;
    void *p = realloc(*arr, m * esz);
    if (!p)
        return -1;
    memset((char *)p + *n * esz, 0, (m - *n) * esz);
    *arr = p;
    *n = m;
    return 0;
}

static void dump_print_header(const char *path, const struct tf_header *h)
{
    printf("file: %s\n", path);
    printf("format version: %u\n", h->version);
    printf("flags: %s%s%s%s\n", h->flags & TF_HDR_SYNCED ? "synced " : "",
           h->flags & TF_HDR_INJECTED ? "injected " : "", h->flags & TF_HDR_COUNTED ? "counted " : "",
           h->flags ? "" : "raw");
    printf("tsc frequency: %" PRIu64 " Hz\n", h->tsc_hz);
    printf("reference clock: %s\n", h->ref_clock == 1 ? "CLOCK_MONOTONIC_RAW" : "CLOCK_MONOTONIC");
    printf("cpus: %u\n", h->ncpus);
    printf("pid: %u\n", h->pid);
    printf("events level: %s\n", h->events_level == 0 ? "off" : h->events_level == 1 ? "tx" : "all");
    if (h->version >= 4 && h->events_level == 1)
        printf("write sets: recorded at each software update commit (serial and hardware ones record none)\n");
    if (h->detail)
        printf("detail: one attempt in %u recorded with its reads and writes (TMTRACE_DETAIL)\n", h->detail);
    static const char *const stamp[] = { "not recorded", "ordered (rdtscp)", "unordered (rdpid; rdtsc; rdpid)",
                                         "repeated (previous stamp)" };
    if (h->version >= 2)
        printf("stamps: reads/writes %s, start/abort %s, commit %s%s\n",
               stamp[h->stamp_access < 4 ? h->stamp_access : 0], stamp[h->stamp_boundary < 4 ? h->stamp_boundary : 0],
               stamp[h->stamp_commit < 4 ? h->stamp_commit : 0],
               h->stamp_flags & TF_STAMP_CPU_INCREASING ? "; increasing per thread and CPU" : "");
    if (h->stripes_log2 == 0)
        printf("lock stripes: not recorded\n");
    else if (h->stripes_log2 < 64 && h->stripe_shift >= TF_STRIPE_SHIFT_MIN && h->stripe_shift <= TF_STRIPE_SHIFT_MAX)
        printf("lock stripes: 2^%u of %u bytes\n", h->stripes_log2, 1u << h->stripe_shift);
    else
        printf("lock stripes: 2^%u, width out of range (log2 %u)\n", h->stripes_log2, h->stripe_shift);
    printf("wall start: %" PRId64 " ns\n", h->wall_start_ns);
    printf("command line: %s\n", h->cmdline);
}

/* What the summary gathers over all chunks before printing its totals. */
struct dump_sum {
    struct dump_thread_sum *th;
    struct dump_cpu_sum *cpu;
    size_t nth, ncpu;
    uint64_t chunks[TF_CHUNK_KINDS], bytes, writer_errors;
    uint32_t end_signal;
    int have_end;
    struct tf_site *sites;  /* every SITES chunk's, printed after the LOADMAP is known */
    size_t nsites;
};

static int dump_keep_sites(struct dump_sum *u, const struct tf_chunk *c)
{
    if (c->count == 0)
        return 0;
    struct tf_site *grown = realloc(u->sites, (u->nsites + c->count) * sizeof *grown);
    if (grown == NULL)
        return -1;
    u->sites = grown;
    memcpy(u->sites + u->nsites, c->sites, c->count * sizeof *grown);
    u->nsites += c->count;
    return 0;
}

/* A site as the other tools name it: one known by code address alone (the
 * libitm ABI's) gets the function and line it was called from through the
 * trace's LOADMAP (`sym`; NULL without one). */
static void dump_print_site(const struct tf_site *site, struct sym_table *sym)
{
    struct tf_site s = *site;
    if (sym)
        sym_name_sites(sym, &s, 1);
    if (s.file[0])
        printf("site %u: %s:%d %s\n", s.id, s.file, s.line, s.label);
    else
        printf("site %u: %s\n", s.id, s.label);
}

static void dump_print_meta(const struct tf_chunk *c)
{
    for (size_t i = 0; c->kind == TF_CHUNK_LOADMAP && i < c->count; i++) {
        const struct tf_object *ob = &c->objects[i];
        printf("object %s: 0x%" PRIx64 "-0x%" PRIx64 ", base 0x%" PRIx64 ", build-id ",
               ob->path[0] ? ob->path : "?", ob->start, ob->end, ob->base);
        for (uint32_t b = 0; b < ob->build_id_len; b++)
            printf("%02x", ob->build_id[b]);
        printf("%s\n", ob->build_id_len ? "" : "none");
    }
    for (size_t i = 0; c->kind == TF_CHUNK_META_SKEW && i < c->count; i++)
        printf("skew cpu %u: offset %" PRId64 " ns, drift %.3f ppm, change at %" PRId64 " ms to %.3f ppm\n",
               c->skews[i].cpu, c->skews[i].offset_ns, c->skews[i].drift_ppm, c->skews[i].change_ms,
               c->skews[i].drift2_ppm);
    for (size_t i = 0; c->kind == TF_CHUNK_MODEL && i < c->count; i++) {
        const struct tf_cpu_model *m = &c->models[i];
        printf("model cpu %u: drift %.3f ppm, offset %.1f ns, rms %.1f ns, max %.1f ns, "
               "%u segments, %u samples used, %u rejected\n", m->cpu, m->drift_ppm,
               m->offset_ns, m->rms_ns, m->max_ns, m->nseg, m->used, m->rejected);
    }
}

/* EVENTS, META_THREADS and END chunks: per-thread counts. */
static int dump_sum_threads(const struct dump_opts *o, struct dump_sum *u, const struct tf_chunk *c)
{
    if (c->kind == TF_CHUNK_END) {
        u->have_end = 1;
        u->writer_errors += c->writer_errors;
        u->end_signal = c->end_signal;
    }
    for (size_t i = 0; i < c->count; i++) {
        uint32_t t = c->kind == TF_CHUNK_EVENTS ? c->events[i].thread : c->threads[i].id;
        if (dump_room((void **)&u->th, &u->nth, t, sizeof *u->th) != 0)
            return tool_error("%s: offset %" PRIu64 ": thread id %u is too large", o->path, c->offset, t);
        struct dump_thread_sum *th = &u->th[t];
        th->seen = 1;
        if (c->kind == TF_CHUNK_EVENTS) {
            th->counted++;
            continue;
        }
        th->os_tid = c->threads[i].os_tid;
        if (c->kind == TF_CHUNK_END) {
            th->in_end = 1;
            th->events = c->threads[i].events;
            th->dropped = c->threads[i].dropped;
        }
    }
    return 0;
}

/* SAMPLES chunks: per-CPU counts by phase and bracket widths. */
static int dump_sum_samples(const struct dump_opts *o, struct dump_sum *u, const struct tf_chunk *c)
{
    for (size_t i = 0; i < c->count; i++) {
        const struct tf_sample *s = &c->samples[i];
        if (dump_room((void **)&u->cpu, &u->ncpu, s->cpu, sizeof *u->cpu) != 0)
            return tool_error("%s: out of memory", o->path);
        struct dump_cpu_sum *p = &u->cpu[s->cpu];
        if (p->samples[0] + p->samples[1] + p->samples[2] == 0 || s->width < p->min_width)
            p->min_width = s->width;
        if (s->width > p->max_width)
            p->max_width = s->width;
        p->samples[s->phase < 3 ? s->phase : 2]++;
    }
    return 0;
}

static void dump_print_totals(const struct dump_sum *u)
{
    for (size_t t = 0; t < u->nth; t++) {
        const struct dump_thread_sum *th = &u->th[t];
        if (!th->seen)
            continue;
        if (th->in_end)
            printf("thread T%zu: os tid %u, %" PRIu64 " events, %" PRIu64 " dropped, %" PRIu64
                   " in file\n", t, th->os_tid, th->events, th->dropped, th->counted);
        else
            printf("thread T%zu: os tid %u, %" PRIu64 " events in file (no END chunk)\n", t,
                   th->os_tid, th->counted);
    }
    for (size_t k = 0; k < u->ncpu; k++) {
        const struct dump_cpu_sum *p = &u->cpu[k];
        if (p->samples[0] + p->samples[1] + p->samples[2] == 0)
            continue;
        printf("samples cpu %zu: pre %" PRIu64 ", post %" PRIu64 ", in-run %" PRIu64
               ", bracket width %" PRIu64 "..%" PRIu64 " ticks\n", k, p->samples[0], p->samples[1],
               p->samples[2], p->min_width, p->max_width);
    }
    printf("chunks:");
    for (unsigned k = 1; k < TF_CHUNK_KINDS; k++)
        printf(" %s=%" PRIu64, tf_chunk_kind_name(k), u->chunks[k]);
    printf("\nbytes in chunks: %" PRIu64 "\n", u->bytes);
    printf("end chunk: %s, writer errors %" PRIu64, u->have_end ? "present" : "missing (writer died?)",
           u->writer_errors);
    char sig[48];
    printf("%s%s\n", u->end_signal ? ", terminated by " : "",
           u->end_signal ? tc_signal_text(u->end_signal, sig, sizeof sig) : "");
}

static int dump_summary(const struct dump_opts *o)
{
    struct tf_reader *r = tf_open(o->path, o->salvage ? TF_SALVAGE : 0);
    if (!r)
        return tool_error_lib();
    dump_print_header(o->path, tf_reader_header(r));
    struct dump_sum u = { 0 };
    uint64_t reported = 0;
    int status = TOOL_OK, rc;
    struct tf_chunk c;
    struct sym_table *sym = NULL;
    while (status == TOOL_OK && (rc = tf_next(r, &c)) == 1) {
        dump_report_salvage(r, &reported);
        u.chunks[c.kind]++;
        u.bytes += c.stored_len + 40;
        if (c.kind == TF_CHUNK_LOADMAP && !sym)
            sym = sym_open(c.objects, c.count); /* NULL: the sites stay code addresses */
        dump_print_meta(&c);
        /* Sites are printed at the end: a synchronised trace holds them
         * before the LOADMAP that names them. */
        if (c.kind == TF_CHUNK_META_SITES && dump_keep_sites(&u, &c) != 0)
            status = tool_error("%s: out of memory for the sites", o->path);
        if (c.kind == TF_CHUNK_EVENTS || c.kind == TF_CHUNK_META_THREADS || c.kind == TF_CHUNK_END)
            status = dump_sum_threads(o, &u, &c);
        else if (c.kind == TF_CHUNK_SAMPLES)
            status = dump_sum_samples(o, &u, &c);
    }
    if (status == TOOL_OK) {
        dump_report_salvage(r, &reported);
        if (rc < 0)
            status = tool_error_lib();
    }
    for (size_t i = 0; status == TOOL_OK && i < u.nsites; i++)
        dump_print_site(&u.sites[i], sym);
    if (status == TOOL_OK) {
        dump_print_totals(&u);
        if (o->salvage)
            printf("damaged: %" PRIu64 " regions skipped, %" PRIu64 " bytes\n", tf_reader_skipped(r),
                   tf_reader_skipped_bytes(r));
        if (tf_reader_skipped(r))
            status = TOOL_SALVAGED;
    }
    sym_close(sym);
    free(u.sites);
    free(u.th);
    free(u.cpu);
    tf_close(r);
    if (fflush(stdout) != 0 && status == TOOL_OK)
        status = tool_error("-: write error on standard output");
    return status;
}

static int dump_bench(void)
{
    const int codecs[] = { TF_CODEC_NONE, TF_CODEC_LZ4, TF_CODEC_ZLIB };
    for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++) {
        if (!codec_available(codecs[i]))
            continue;
        double eps, bpe;
        if (codec_bench(codecs[i], 1, 4u << 20, &eps, &bpe) != 0)
            return tool_error_lib();
        printf("codec %s: %.1f M events/s encode+compress, %.2f bytes/event\n",
               tf_codec_name((unsigned)codecs[i]), eps / 1e6, bpe);
    }
    return TOOL_OK;
}

int main(int argc, char **argv)
{
    tool_init("tmdump");
    struct dump_opts o = { .limit = UINT64_MAX };
    enum { OPT_SALVAGE = 256, OPT_BENCH, OPT_MAN };
    static const struct option longs[] = {
        { "thread", required_argument, NULL, 't' },
        { "site", required_argument, NULL, 's' },
        { "limit", required_argument, NULL, 'n' },
        { "summary", no_argument, NULL, 'S' },
        { "salvage", no_argument, NULL, OPT_SALVAGE },
        { "bench-codec", no_argument, NULL, OPT_BENCH },
        { "man", no_argument, NULL, OPT_MAN },
        { "version", no_argument, NULL, 'V' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "t:s:n:SVh", longs, NULL)) != -1) {
        switch (ch) {
        case 't':
            if (tool_parse_u64("--thread", optarg, 0, UINT32_MAX, &o.thread) != 0)
                return TOOL_USAGE;
            o.have_thread = 1;
            break;
        case 's':
            if (tool_parse_u64("--site", optarg, 0, UINT32_MAX, &o.site) != 0)
                return TOOL_USAGE;
            o.have_site = 1;
            break;
        case 'n':
            if (tool_parse_u64("--limit", optarg, 0, UINT64_MAX, &o.limit) != 0)
                return TOOL_USAGE;
            break;
        case 'S':
            o.summary = 1;
            break;
        case OPT_SALVAGE:
            o.salvage = 1;
            break;
        case OPT_BENCH:
            return dump_bench();
        case 'V':
            tool_print_version(stdout);
            return TOOL_OK;
        case OPT_MAN:
            tool_doc_man(stdout, &dump_doc);
            return TOOL_OK;
        case 'h':
            tool_doc_help(stdout, &dump_doc);
            return TOOL_OK;
        default:
            return tool_bad_option(argv);
        }
    }
    o.path = tool_trace_operand(argc, argv);
    if (!o.path)
        return TOOL_USAGE;
    static char outbuf[1 << 16];
    setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
    return o.summary ? dump_summary(&o) : dump_events(&o);
}
