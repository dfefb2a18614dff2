/*
 * tmsync - corrects a raw trace's per-CPU TSC stamps to reference
 * nanoseconds and merges the threads' events into one global order.
 *
 * Owns: the command line, the per-CPU table (text and JSON), and the two
 * passes: index + fits (sync_model), then the merge (trace_index) written as
 * a new trace with the MODEL chunk and TF_HDR_SYNCED; the stamp correction
 * the merge's decoding threads run (per-thread segment hints, fallback
 * models made once) and the ring of output chunks they prepare (with
 * several jobs: from runs the merge holds in its windows).
 * Never: overwrites its input, leaves a partial output file, holds more
 * than the merge's window of decoded chunks per thread and SYNC_OUT_RING
 * output chunks, or writes output that depends on --jobs.
 */
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "json_writer.h"
#include "trace_index.h"
#include "sync_model.h"
#include "tool_common.h"
#include "trace_complete.h"
#include "tool_doc.h"
#include "trace_file.h"

/* Events per merged output chunk. A chunk's events (64 bytes each) are
 * copied by the merging thread and read by the thread that encodes it: at
 * 32 Ki events the ring (2 MiB a chunk) and the decoding window stay in the
 * caches the two share, rather than go through memory as four 4 MiB chunks
 * did, at the cost of a few more chunk starts in the file (docs/tmbench.md). */
#define SYNC_OUT_BATCH 32768
#define SYNC_OUT_RING 4          /* output chunks in the making at a time */
#define SYNC_MAX_CPU TF_AUX_CPUS /* the CPU numbers TSC_AUX can carry */

static const struct tool_option sync_options[] = {
    { "-o, --output FILE", "output trace (never the input)" },
    { "-m, --model KIND", "linear: pre+post samples, one line per CPU\n"
                          "piecewise: in-run samples too, continuous segments\n"
                          "auto (default): piecewise when the in-run samples show drift changed\n"
                          "none: no correction (nominal TSC rate), merge only" },
    { "-j, --json", "print the per-CPU table as JSON (keys: docs/json.md)" },
    { "-s, --salvage", "skip damaged chunks, say so on stderr and report how many" },
    { "-J, --jobs N", TOOL_JOBS_HELP },
    { "-h, --help", "this text" },
    { "    --man", "this text as a man page (troff)" },
    { "-V, --version", "the version" },
    { NULL, NULL },
};

static const struct tool_doc sync_doc = {
    .name = "tmsync",
    .purpose = "put every event of a trace on one clock and merge the threads",
    .synopsis = "tmsync TRACE [-o FILE] [--model linear|piecewise|auto|none] [--json] [--salvage] [--jobs N]",
    .description =
        "Fits every CPU's TSC to the reference clock from the trace's samples, rewrites each\n"
        "event's stamp in reference ns with the model of the CPU that took it, and merges all\n"
        "threads into one order (ties: thread, then program order). Writes TRACE.sync.bin\n"
        "(TRACE without .bin) or FILE, atomically.",
    .options = sync_options,
    .exit_status = "0  written\n"
                   "2  bad input or usage (one line on stderr)\n"
                   "3  written, but --salvage skipped damaged chunks\n"
                   "4  written, but the trace is incomplete: no END chunk, the program was terminated\n"
                   "   by a signal, or events were dropped (one line on stderr; the output keeps the marks)\n"
                   "Where several apply, the first of 2, 4, 3 is the status.",
};

/* A thread's previous event: its raw stamp, CPU and stamp in ns. */
struct sync_last {
    uint64_t raw, ns;
    uint32_t cpu;
    int seen;
};

/* One source's threads' previous events, by thread id. */
struct sync_lasts {
    struct sync_last *last;
    size_t n;
    struct tc_span span;   /* of the stamps order_events made */
};

/* What one decoding thread changes while it maps: its segment hints. */
struct sync_hints {
    uint32_t cpu[SYNC_MAX_CPU];
    uint32_t truth;
};

struct sync_ctx {
    struct sm_result *bycpu[SYNC_MAX_CPU];   /* read by every decoding thread (atomically) */
    pthread_mutex_t fallback_mu;  /* model_for, from any decoding thread */
    struct sync_hints *hints;     /* one per decoding thread */
    struct sm_result pooled;
    int have_pooled;
    struct sm_result truth;       /* fit of the uninjected TSCs (all CPUs share that clock) */
    int have_truth;
    double ns_per_tick;
    struct tf_sample *samples;    /* sorted by CPU, with what each CPU's fit made of them */
    uint8_t *verdict;             /* enum sm_verdict per sample */
    size_t nsamples;
    struct sync_lasts *lasts;     /* per source: its threads' previous events (a raw
                                     trace's source is one thread, so no two sources
                                     share a thread and each is ordered alone) */
    size_t nsrc;
};

/* The model for a CPU no sample came from: the pooled fit, made once by
 * whichever decoding thread meets the CPU first. */
static struct sm_result *model_for(struct sync_ctx *x, unsigned cpu)
{
    if (cpu >= SYNC_MAX_CPU)
        cpu = SYNC_MAX_CPU - 1;
    pthread_mutex_lock(&x->fallback_mu);
    struct sm_result *m = __atomic_load_n(&x->bycpu[cpu], __ATOMIC_ACQUIRE);
    if (!m && (m = malloc(sizeof *m)) != NULL) {
        *m = x->pooled;
        m->m.cpu = cpu;
        m->m.used = m->m.rejected = 0;
        m->how = SM_HOW_POOLED;
        __atomic_store_n(&x->bycpu[cpu], m, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&x->fallback_mu);
    return m;
}

/* Makes room for thread t's entry. 0 or -1. */
static int lasts_grow(struct sync_lasts *x, uint32_t t)
{
    size_t n = x->n ? x->n : 64;
    while (n <= t)
        n *= 2;
    struct sync_last *p = realloc(x->last, n * sizeof *p);
    if (!p)
        return -1;
    memset(p + x->n, 0, (n - x->n) * sizeof *p);
    x->last = p;
    x->n = n;
    return 0;
}

/* Stamps a thread took on one CPU in increasing order (events may be a
 * fraction of a ns apart) keep that order in ns: a stamp that rounding made
 * equal to the previous one, or put before it, becomes previous + 1 ns; a
 * stamp that repeats the previous one (no clock read of its own) stays
 * equal to it, raised or not.
 * Stamps on different CPUs are left as the models make them, so a wrong
 * model still shows. `l` is the thread's previous event and becomes this one. */
static inline void keep_order(struct sync_last *l, struct tf_event *ev, uint64_t raw)
{
    if (l->seen && l->cpu == ev->cpu && raw > l->raw && ev->ts <= l->ns)
        ev->ts = l->ns + 1;
    else if (l->seen && l->cpu == ev->cpu && raw == l->raw)
        ev->ts = l->ns; /* boundary-stamped accesses, WSET, ABORT_PC, ABORT_STACK */
    *l = (struct sync_last){ raw, ev->ts, ev->cpu, 1 };
}

/* A run of stamps on one model: the segment the last one fell in, the TSCs
 * it covers and its line, in registers; the hint only says where a search
 * starts, so the stamps are the same however they are kept. */
struct sync_seg {
    const struct tf_cpu_model *m;
    uint32_t k;
    uint64_t lo, hi;
    double a, b;
};

static inline void seg_find(struct sync_seg *s, uint64_t tsc)
{
    const struct tf_model_segment *g = sm_segment(s->m, tsc, &s->k, &s->lo, &s->hi);
    s->a = g->a;
    s->b = g->b;
}

/* sm_to_ns(sm_eval(s->m, tsc, ...)), the segment searched only when the
 * stamp leaves the last one's range. */
static inline uint64_t seg_ns(struct sync_seg *s, uint64_t tsc)
{
    if (__builtin_expect(tsc < s->lo || tsc > s->hi, 0))
        seg_find(s, tsc);
    return sm_to_ns(s->a * (double)tsc + s->b);
}

/* A decoded chunk's stamps to ns, in any decoding thread; `raw` keeps
 * the TSCs for order_events. A run of events on one CPU keeps its model's
 * segment in registers. */
static int map_events(void *ctx, unsigned worker, struct tf_event *ev, uint64_t *raw, size_t n)
{
    struct sync_ctx *x = ctx;
    struct sync_hints *h = &x->hints[worker];
    struct sync_seg s = { 0 }, t = { 0 };
    unsigned cpu = SYNC_MAX_CPU;   /* none yet */
    uint32_t seen = UINT32_MAX;    /* ev[].cpu of the run (cpu clamps it) */
    if (x->have_truth) {
        t.m = &x->truth.m;
        t.k = h->truth;
        t.lo = 1;
        t.hi = 0;   /* an empty range: the first stamp searches from the hint */
    }
    for (size_t i = 0; i < n; i++) {
        if (ev[i].cpu != seen) {
            seen = ev[i].cpu;
            unsigned c = seen < SYNC_MAX_CPU ? seen : SYNC_MAX_CPU - 1;
            if (cpu < SYNC_MAX_CPU)
                h->cpu[cpu] = s.k;
            struct sm_result *r = __atomic_load_n(&x->bycpu[c], __ATOMIC_ACQUIRE);
            if (!r && !(r = model_for(x, c)))
                return error_set("out of memory");
            s = (struct sync_seg){ .m = &r->m, .k = h->cpu[c], .lo = 1, .hi = 0 };
            cpu = c;
        }
        uint64_t tsc = ev[i].ts;
        raw[i] = tsc;
        ev[i].ts = seg_ns(&s, tsc);
        if (t.m && ev[i].truth)
            ev[i].truth = seg_ns(&t, ev[i].truth);
    }
    if (cpu < SYNC_MAX_CPU)
        h->cpu[cpu] = s.k;
    if (t.m)
        h->truth = t.k;
    return 0;
}

/* Each source's chunks in order, in any decoding thread: its threads'
 * stamps on one CPU keep their order, and the source's span counts them.
 * A run of one thread's events keeps its previous event in registers.
 * Each raw[i], read, becomes ev[i]'s stamp in ns: the merge's keys
 * (ti_merge_opts.keys; raw is map_events's array, writable). */
static int order_events(void *ctx, size_t source, struct tf_event *ev, const uint64_t *raw, size_t n)
{
    struct sync_lasts *x = &((struct sync_ctx *)ctx)->lasts[source];
    uint64_t *key = (uint64_t *)(uintptr_t)raw;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < n;) {
        uint32_t t = ev[i].thread;
        if (t >= x->n && lasts_grow(x, t) < 0)
            return error_set("out of memory");
        struct sync_last l = x->last[t];
        for (; i < n && ev[i].thread == t; i++) {
            keep_order(&l, &ev[i], raw[i]);
            key[i] = l.ns;
            lo = l.ns < lo ? l.ns : lo;
            hi = l.ns > hi ? l.ns : hi;
        }
        x->last[t] = l;
    }
    if (n) {
        struct tc_span b = { lo, hi, n, 1.0 };
        tc_span_join(&x->span, &b);
    }
    return 0;
}

static int cmp_sample_cpu(const void *a, const void *b)
{
    const struct tf_sample *x = a, *y = b;
    return (x->cpu > y->cpu) - (x->cpu < y->cpu);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A model that converts at the nominal rate only (--model none). */
static void nominal_model(struct sm_result *r, unsigned cpu, double npt)
{
    memset(r, 0, sizeof *r);
    r->m.cpu = cpu;
    r->m.nseg = 1;
    r->m.seg[0].a = npt;
    r->kind = SM_NONE;
    r->how = SM_HOW_FIT;
}

/* Fits every CPU that has samples; the pooled fit first (the fallback). */
static int fit_all(struct sync_ctx *x, struct trace_index *ix, enum sm_kind kind)
{
    double npt = x->ns_per_tick;
    if (kind == SM_NONE || ix->nsamples == 0) {
        nominal_model(&x->pooled, 0, npt);
        x->have_pooled = 1;
        if (ix->hdr.flags & TF_HDR_INJECTED) {
            nominal_model(&x->truth, 0, npt);
            x->have_truth = 1;
        }
        return 0;
    }
    size_t n = ix->nsamples;
    struct tf_sample *s = malloc(n * sizeof *s);
    if (!s)
        return error_set("out of memory");
    memcpy(s, ix->samples, n * sizeof *s);
    if (sm_fit_cpu(UINT32_MAX, s, n, SM_LINEAR, npt, 0, NULL, &x->pooled, NULL) < 0) {
        free(s);
        return error_set("%s: the pooled clock fit failed", "samples");
    }
    x->have_pooled = 1;
    if (ix->hdr.flags & TF_HDR_INJECTED) {
        memcpy(s, ix->samples, n * sizeof *s);
        if (sm_fit_cpu(UINT32_MAX, s, n, SM_LINEAR, npt, 1, NULL, &x->truth, NULL) == 0)
            x->have_truth = 1;
    }
    memcpy(s, ix->samples, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_sample_cpu);
    x->samples = s;
    x->nsamples = n;
    if (!(x->verdict = calloc(n, 1)))
        return error_set("out of memory");
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && s[j].cpu == s[i].cpu)
            j++;
        unsigned cpu = s[i].cpu < SYNC_MAX_CPU ? s[i].cpu : SYNC_MAX_CPU - 1;
        struct sm_result *m = malloc(sizeof *m);
        if (!m || sm_fit_cpu(cpu, s + i, j - i, kind, npt, 0, &x->pooled, m, x->verdict + i) < 0) {
            free(m);
            return error_set("CPU %u: clock fit failed", cpu);
        }
        free(x->bycpu[cpu]);
        x->bycpu[cpu] = m;
        i = j;
    }
    /* offsets: how far each CPU's clock is ahead of the median CPU's at
     * the first sample's reference time, in ns at the nominal rate */
    double y0 = INFINITY;
    for (size_t i = 0; i < ix->nsamples; i++)
        y0 = fmin(y0, (double)ix->samples[i].ref_ns);
    double inv[SYNC_MAX_CPU];
    size_t k = 0;
    for (unsigned c = 0; c < SYNC_MAX_CPU; c++)
        if (x->bycpu[c])
            inv[k++] = sm_inverse(&x->bycpu[c]->m, y0);
    qsort(inv, k, sizeof *inv, cmp_double);
    /* the lower middle for an even count: offsets stay relative to a real CPU */
    double med = k ? inv[(k - 1) / 2] : 0;
    for (unsigned c = 0; c < SYNC_MAX_CPU; c++)
        if (x->bycpu[c])
            x->bycpu[c]->m.offset_ns = (sm_inverse(&x->bycpu[c]->m, y0) - med) * npt;
    return 0;
}

/* The TSCs of CPU c's samples with verdict v, as the JSON array member `key`. */
static void json_samples(const struct sync_ctx *x, struct jw *w, unsigned c, enum sm_verdict v, const char *key)
{
    jw_key(w, key);
    jw_array(w);
    for (size_t i = 0; i < x->nsamples; i++) {
        unsigned cpu = x->samples[i].cpu < SYNC_MAX_CPU ? x->samples[i].cpu : SYNC_MAX_CPU - 1;
        if (cpu == c && x->verdict[i] == v)
            jw_u64(w, x->samples[i].tsc);
    }
    jw_array_end(w);
}

static void print_json(const struct sync_ctx *x, FILE *f, const char *in, const char *out, enum sm_kind kind,
                       uint64_t events, uint64_t skipped, const struct tc_verdict *v)
{
    struct jw w;
    jw_init(&w, f);
    jw_object(&w);
    jw_kstr(&w, "input", in);
    jw_kstr(&w, "output", out);
    jw_kstr(&w, "model", sm_kind_name(kind));
    jw_ku64(&w, "events", events);
    jw_ku64(&w, "skipped_chunks", skipped);
    tc_json(&w, v);
    jw_key(&w, "cpus");
    jw_array(&w);
    for (unsigned c = 0; c < SYNC_MAX_CPU; c++) {
        const struct sm_result *r = x->bycpu[c];
        if (!r)
            continue;
        const struct tf_cpu_model *m = &r->m;
        jw_object(&w);
        jw_ku64(&w, "cpu", c);
        jw_kstr(&w, "model", sm_kind_name(r->kind));
        jw_kstr(&w, "source", sm_how_name(r->how));
        jw_ku64(&w, "used", m->used);
        jw_ku64(&w, "rejected", m->rejected);
        jw_ku64(&w, "rejected_width", r->rejected_width);
        jw_ku64(&w, "rejected_outlier", r->rejected_outlier);
        jw_knum(&w, "drift_ppm", m->drift_ppm, 4);
        jw_knum(&w, "offset_ns", m->offset_ns, 1);
        jw_knum(&w, "rms_ns", m->rms_ns, 2);
        jw_knum(&w, "max_ns", m->max_ns, 2);
        jw_ku64(&w, "segments", m->nseg);
        json_samples(x, &w, c, SM_REJECTED_WIDTH, "rejected_width_tsc");
        json_samples(x, &w, c, SM_REJECTED_OUTLIER, "rejected_outlier_tsc");
        jw_object_end(&w);
    }
    jw_array_end(&w);
    jw_object_end(&w);
    fputc('\n', f);
}

static void print_table(const struct sync_ctx *x, FILE *f, const char *in, const char *out, enum sm_kind kind,
                        uint64_t events, uint64_t skipped, const struct tc_verdict *v)
{
    fprintf(f, "%s -> %s: %llu events, model %s\n", in, out, (unsigned long long)events, sm_kind_name(kind));
    fprintf(f, "%5s %-9s %-11s %7s %8s %12s %14s %10s %10s %4s\n", "cpu", "model", "source", "used",
            "rejected", "drift_ppm", "offset_ns", "rms_ns", "max_ns", "segs");
    for (unsigned c = 0; c < SYNC_MAX_CPU; c++) {
        const struct sm_result *r = x->bycpu[c];
        if (!r)
            continue;
        const struct tf_cpu_model *m = &r->m;
        fprintf(f, "%5u %-9s %-11s %7u %8u %12.4f %14.1f %10.2f %10.2f %4u\n", c, sm_kind_name(r->kind),
                sm_how_name(r->how), m->used, m->rejected, m->drift_ppm, m->offset_ns, m->rms_ns,
                m->max_ns, m->nseg);
    }
    for (unsigned c = 0; c < SYNC_MAX_CPU; c++) {
        const struct sm_result *r = x->bycpu[c];
        if (r && r->how == SM_HOW_OFFSET_ONLY)
            fprintf(f, "note: CPU %u has too few samples for a slope (%u used): pooled slope, own offset\n", c,
                    r->m.used);
        else if (r && r->how == SM_HOW_POOLED)
            fprintf(f, "note: CPU %u has no usable samples: pooled fit of all CPUs\n", c);
    }
    if (skipped)
        fprintf(f, "note: %llu damaged chunks skipped (--salvage)\n", (unsigned long long)skipped);
    if (!v->complete)
        fprintf(f, "note: incomplete trace: %s\n", v->line);
}

/* "dir/trace.bin" -> "dir/trace.sync.bin" */
static char *default_output(const char *in)
{
    size_t n = strlen(in);
    if (n > 4 && strcmp(in + n - 4, ".bin") == 0)
        n -= 4;
    char *o = malloc(n + 10);
    if (o) {
        memcpy(o, in, n);
        strcpy(o + n, ".sync.bin");
    }
    return o;
}

/* A run of merged events where they were decoded (jobs > 1). */
struct out_run {
    const struct tf_event *ev;
    size_t n;
};

/* One output chunk in the making: its events, encoded and compressed by
 * one of the merge's threads while the merge goes on. With jobs > 1 the
 * merge hands the chunk its runs by pointer (each held in its decoding
 * window), and the thread that prepares the chunk copies them: a decoded
 * event goes from the core that decoded it to the one that encodes it
 * once, not through a copy on the merge's core as well. */
struct out_batch {
    struct tf_event *ev;
    size_t n;
    int codec;
    struct tf_prepared p;
    struct ti_task task;
    int posted, rc;
    char err[256];
    struct out_run *runs;     /* jobs > 1 */
    size_t nruns, copied;     /* runs[0..copied) are in ev already */
    size_t at;                /* where runs[copied] goes in ev */
    struct ti_slot **holds;   /* the windows' chunks the runs are in */
    size_t nholds, cap_holds;
    struct ti_merge *m;
};

/* Copies the runs not yet copied into the batch's events and lets go of
 * their chunks (any thread). */
static void batch_copy(struct out_batch *b)
{
    struct tf_event *d = b->ev + b->at;
    /* runs are a few events long: a loop, not a call to memcpy per run */
    for (size_t r = b->copied; r < b->nruns; r++) {
        const struct tf_event *s = b->runs[r].ev;
        for (size_t i = 0, n = b->runs[r].n; i < n; i++)
            *d++ = s[i];
    }
    b->at = (size_t)(d - b->ev);
    b->copied = b->nruns;
    for (size_t i = 0; i < b->nholds; i++)
        ti_merge_release(b->m, b->holds[i]);
    b->nholds = 0;
}

static void prepare_batch(void *arg)
{
    struct out_batch *b = arg;
    if (b->runs)
        batch_copy(b);
    b->rc = tf_prepare_events(&b->p, 0, b->ev, b->n, b->codec, 0);
    if (b->rc < 0)
        snprintf(b->err, sizeof b->err, "%s", error_get());
}

/* The ring of output chunks: the one being filled and those in flight. */
struct out_ring {
    struct out_batch b[SYNC_OUT_RING];
    unsigned n, at;          /* the ring's length; the chunk being filled */
    size_t nb;               /* events in it */
    uint64_t tag;            /* its holds' tag (a new one after a starved copy) */
    struct ti_merge *m;
    struct tf_writer *w;
};

/* The merge waits for a chunk the filling batch may hold: that batch's
 * runs are copied here, in the merge's thread (rare: a batch spans less
 * than a window of chunks unless chunks are small). */
static void ring_starved(void *arg)
{
    struct out_ring *g = arg;
    batch_copy(&g->b[g->at]);
    g->tag++;
}

/* Waits for a posted batch and appends its chunk. 0, or -1 with the message set. */
static int flush_batch(struct ti_merge *m, struct tf_writer *w, struct out_batch *b)
{
    if (!b->posted)
        return 0;
    ti_merge_wait(m, &b->task);
    b->posted = 0;
    b->n = b->nruns = b->copied = b->at = 0;
    if (b->rc < 0)
        return error_set("%s", b->err);
    return tf_write_prepared(w, &b->p);
}

/* Posts the filling batch and makes the next one in the ring the filling
 * one, writing what it held. 0, or -1 with the message set. */
static int ring_post(struct out_ring *g)
{
    struct out_batch *b = &g->b[g->at];
    b->n = g->nb;
    b->posted = 1;
    ti_merge_post(g->m, &b->task);
    g->at = (g->at + 1) % g->n;
    g->nb = 0;
    g->tag++;
    return flush_batch(g->m, g->w, &g->b[g->at]);
}

/* One job: each batch is filled by copies and prepared as soon as it is
 * full, while its events are still in the cache (no thread would take it
 * sooner). 0 = all done, -1 = error (message set). */
static __attribute__((noinline)) int merge_copy(struct out_ring *g)
{
    struct ti_merge *m = g->m;
    struct tf_event *buf = g->b[g->at].ev;
    size_t nb = g->nb;
    const struct tf_event *ev;
    size_t k;
    int rc;
    while ((rc = ti_merge_run(m, &ev, &k, SYNC_OUT_BATCH - nb)) == 1) {
        for (size_t i = 0; i < k; i++)
            buf[nb + i] = ev[i];
        if ((nb += k) == SYNC_OUT_BATCH) {
            g->nb = nb;
            if (ring_post(g) < 0)
                return -1;
            buf = g->b[g->at].ev;
            nb = 0;
        }
    }
    g->nb = nb;
    return rc;
}

/* Jobs > 1: each batch gets runs and holds their chunks. 0 = all done,
 * -1 = error (message set). */
static __attribute__((noinline)) int merge_runs(struct out_ring *g)
{
    struct ti_merge *m = g->m;
    struct out_batch *b = &g->b[g->at];
    const struct tf_event *ev;
    size_t k;
    int rc;
    while ((rc = ti_merge_run(m, &ev, &k, SYNC_OUT_BATCH - g->nb)) == 1) {
        b->runs[b->nruns++] = (struct out_run){ ev, k };
        struct ti_slot *h = ti_merge_hold(m, g->tag);
        if (h && ti_grow((void **)&b->holds, &b->cap_holds, b->nholds + 1, sizeof *b->holds) < 0) {
            ring_starved(g);   /* no room to keep the hold: copy now instead */
            ti_merge_release(m, h);
        } else if (h) {
            b->holds[b->nholds++] = h;
        }
        if ((g->nb += k) == SYNC_OUT_BATCH) {
            if (ring_post(g) < 0)
                return -1;
            b = &g->b[g->at];
        }
    }
    return rc;
}

/* The merged events, rewritten by map_events and order_events (`o`), in
 * chunks of SYNC_OUT_BATCH that the merge's threads prepare, a ring of
 * SYNC_OUT_RING of them in flight (one with one job), appended in order.
 * Kept out of main() and its callers: GCC compiles a function it knows runs
 * once for size. 0, or -1 with the message set. */
static __attribute__((noinline)) int write_events(struct trace_index *ix, struct tf_reader *r,
                                                  const struct ti_merge_opts *o, struct tf_writer *w)
{
    struct ti_merge_opts mo = *o;
    struct out_ring *g = calloc(1, sizeof *g);
    if (!g)
        return error_set("out of memory");
    g->n = o->jobs > 1 ? SYNC_OUT_RING : 1;
    g->tag = 1;
    g->w = w;
    mo.tasks = g->n;
    if (o->jobs > 1) {
        /* the batches in flight hold the chunks their events span: with
         * few sources several chunks of each, with many about one */
        uint64_t nchunks = 0;
        for (size_t i = 0; i < ix->nsrc; i++)
            nchunks += ix->src[i].n;
        uint64_t span = (uint64_t)g->n * SYNC_OUT_BATCH * nchunks;
        uint64_t per = ix->events && ix->nsrc ? span / ((uint64_t)ix->nsrc * ix->events) + 1 : 1;
        mo.held = per < g->n ? (unsigned)per : g->n;
        mo.starved = ring_starved;
        mo.starved_arg = g;
        mo.keys = 1;
    }
    int rc = 0;
    for (unsigned k = 0; k < g->n; k++) {
        struct out_batch *b = &g->b[k];
        b->codec = ix->events_codec;
        b->task = (struct ti_task){ prepare_batch, b, 0 };
        if (!(b->ev = malloc(SYNC_OUT_BATCH * sizeof *b->ev)) ||
            (o->jobs > 1 && !(b->runs = malloc(SYNC_OUT_BATCH * sizeof *b->runs))))
            rc = error_set("out of memory");
    }
    if (rc == 0 && (g->m = ti_merge_create(r, ix, &mo)) != NULL) {
        for (unsigned k = 0; k < g->n; k++)
            g->b[k].m = g->m;
        rc = o->jobs > 1 ? merge_runs(g) : merge_copy(g);
        if (rc == 0 && g->nb) {
            g->b[g->at].n = g->nb;
            g->b[g->at].posted = 1;
            ti_merge_post(g->m, &g->b[g->at].task);
        } else if (g->b[g->at].runs) {
            batch_copy(&g->b[g->at]);   /* not posted: its holds go */
        }
        /* the rest in order; after a failure only waited for, never written */
        for (unsigned k = 1; k <= g->n; k++) {
            struct out_batch *b = &g->b[(g->at + k) % g->n];
            if (rc >= 0 && flush_batch(g->m, w, b) < 0)
                rc = -1;
            else if (b->posted)
                ti_merge_wait(g->m, &b->task);
        }
        ti_merge_free(g->m);
    } else {
        rc = -1;
    }
    for (unsigned k = 0; k < g->n; k++) {
        free(g->b[k].ev);
        free(g->b[k].runs);
        free(g->b[k].holds);
        tf_prepared_free(&g->b[k].p);
    }
    free(g);
    return rc < 0 ? -1 : 0;
}

/* After the events: the models, which cover every CPU seen in the events
 * (fallbacks included), and the END chunk. 0, or -1 with the message set. */
static int write_models_end(const struct sync_ctx *x, const struct trace_index *ix, struct tf_writer *w)
{
    size_t nm = 0;
    for (unsigned c = 0; c < SYNC_MAX_CPU; c++)
        nm += x->bycpu[c] != NULL;
    struct tf_cpu_model *models = calloc(nm ? nm : 1, sizeof *models);
    if (!models)
        return error_set("out of memory");
    nm = 0;
    for (unsigned c = 0; c < SYNC_MAX_CPU; c++)
        if (x->bycpu[c])
            models[nm++] = x->bycpu[c]->m;
    int rc = (nm && tf_write_models(w, models, nm) < 0) ||
             (ix->have_end && tf_write_end(w, ix->end, ix->nend, ix->writer_errors, ix->end_signal) < 0);
    free(models);
    return rc ? -1 : 0;
}

/* The synchronised trace: the input's metadata, the merged events, the
 * models; written atomically (nothing is left at `out` on failure). *span
 * gets the events and their stamps. */
static int write_output(struct sync_ctx *x, struct trace_index *ix, const char *in, const char *out,
                        unsigned open_flags, unsigned jobs, struct tc_span *span)
{
    /* the merge's own share is small (the k-way pick and a copy per event):
     * jobs workers keep every core decoding and encoding */
    struct ti_merge_opts o = { .jobs = jobs, .path = in, .open_flags = open_flags,
                               .map = map_events, .order = order_events, .ctx = x,
                               .workers = jobs > 1 ? jobs : 0 };
    x->nsrc = ix->nsrc;
    if (!(x->hints = calloc(jobs + 1, sizeof *x->hints)) || !(x->lasts = calloc(ix->nsrc + 1, sizeof *x->lasts)))
        return tool_error("out of memory");
    struct tf_reader *r = tf_open(in, open_flags & TF_SALVAGE);
    if (!r)
        return tool_error_lib();
    struct tf_header h = ix->hdr;
    h.flags |= TF_HDR_SYNCED;
    struct tf_writer *w = tf_create(out, &h, TF_WRITE_ATOMIC);
    if (!w) {
        tf_close(r);
        return tool_error_lib();
    }
    int bad = (ix->nsites && tf_write_sites(w, ix->sites, ix->nsites) < 0) ||
              (ix->nthreads && tf_write_threads(w, ix->threads, ix->nthreads) < 0) ||
              (ix->nskews && tf_write_skews(w, ix->skews, ix->nskews) < 0) ||
              (ix->nsamples && tf_write_samples(w, ix->samples, ix->nsamples) < 0) ||
              (ix->nobjects && tf_write_objects(w, ix->objects, ix->nobjects) < 0) ||
              (ix->runinfo.event_cost_ns > 0 && tf_write_runinfo(w, &ix->runinfo) < 0) ||
              write_events(ix, r, &o, w) < 0 || write_models_end(x, ix, w) < 0;
    if (bad)
        tf_abandon(w);
    if (bad || tf_finish(w, 0) < 0) {
        tf_close(r);
        return tool_error_lib();
    }
    tf_close(r);
    /* every event was ordered once before the merge took it */
    for (size_t k = 0; k < x->nsrc; k++)
        tc_span_join(span, &x->lasts[k].span);
    return 0;
}

struct sync_args {
    const char *in, *out;
    enum sm_kind kind;
    int json;
    unsigned flags;
    unsigned jobs;
};

/* 0: go on; otherwise the tool's exit code (--help, --version, bad usage) + 1. */
static int parse_args(int argc, char **argv, struct sync_args *a)
{
    static const struct option opts[] = {
        { "output", required_argument, 0, 'o' }, { "model", required_argument, 0, 'm' },
        { "json", no_argument, 0, 'j' },         { "salvage", no_argument, 0, 's' },
        { "help", no_argument, 0, 'h' },         { "version", no_argument, 0, 'V' },
        { "man", no_argument, 0, 'M' },          { "jobs", required_argument, 0, 'J' },
        { 0, 0, 0, 0 }
    };
    *a = (struct sync_args){ .kind = SM_AUTO, .jobs = tool_jobs_default() };
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:m:jsJ:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'o': a->out = optarg; break;
        case 'm':
            if (strcmp(optarg, "linear") == 0) a->kind = SM_LINEAR;
            else if (strcmp(optarg, "piecewise") == 0) a->kind = SM_PIECEWISE;
            else if (strcmp(optarg, "auto") == 0) a->kind = SM_AUTO;
            else if (strcmp(optarg, "none") == 0) a->kind = SM_NONE;
            else return tool_error("--model %s: expected linear, piecewise, auto or none", optarg) + 1;
            break;
        case 'j': a->json = 1; break;
        case 's': a->flags |= TF_SALVAGE; break;
        case 'J':
            if (tool_parse_jobs(optarg, &a->jobs) < 0)
                return TOOL_USAGE + 1;
            break;
        case 'h': tool_doc_help(stdout, &sync_doc); return TOOL_OK + 1;
        case 'M': tool_doc_man(stdout, &sync_doc); return TOOL_OK + 1;
        case 'V': tool_print_version(stdout); return TOOL_OK + 1;
        default: return tool_bad_option(argv) + 1;
        }
    }
    a->in = tool_trace_operand(argc, argv);
    return a->in ? 0 : TOOL_USAGE + 1;
}

/* Fits, writes, prints the table. */
static int sync_trace(const struct sync_args *a, struct sync_ctx *x, struct trace_index *ix, uint64_t skipped)
{
    if (ix->hdr.flags & TF_HDR_SYNCED)
        return tool_error("%s: already synchronised (header flag synced); tmsync reads raw traces", a->in);
    if (ix->hdr.flags & TF_HDR_COUNTED)
        return tool_error("%s: written by a record-only measuring build (header flag counted): its stamps count "
                          "records, not clock ticks, and cannot be synchronised", a->in);
    if (a->kind != SM_NONE && ix->nsamples == 0)
        return tool_error("%s: no clock samples to fit (use --model none to merge only)", a->in);
    x->ns_per_tick = ix->hdr.tsc_hz ? 1e9 / (double)ix->hdr.tsc_hz : 1.0;
    if (fit_all(x, ix, a->kind) < 0)
        return tool_error("%s: %s", a->in, error_get());
    struct tc_span span = { .ns_per_unit = 1.0 };   /* the output's stamps are ns */
    if (write_output(x, ix, a->in, a->out, a->flags, a->jobs, &span) != 0)
        return TOOL_USAGE;
    struct tc_verdict verdict;
    tc_judge(ix, &span, &verdict);
    uint64_t written = span.records;
    if (a->json)
        print_json(x, stdout, a->in, a->out, a->kind, written, skipped, &verdict);
    else
        print_table(x, stdout, a->in, a->out, a->kind, written, skipped, &verdict);
    if (skipped)
        tool_error("warning: %s: --salvage skipped %llu damaged chunks; their events are missing", a->in,
                   (unsigned long long)skipped);
    int incomplete = tc_warn(a->in, &verdict);   /* 4 before 3: see sync_doc */
    return incomplete != TOOL_OK ? incomplete : skipped ? TOOL_SALVAGED : TOOL_OK;
}

int main(int argc, char **argv)
{
    tool_init("tmsync");
    struct sync_args a;
    int done = parse_args(argc, argv, &a);
    if (done)
        return done - 1;
    char *defout = NULL;
    if (!a.out && !(a.out = defout = default_output(a.in)))
        return tool_error("out of memory");
    if (tool_same_file(a.in, a.out)) {
        free(defout);
        return tool_error("%s: output would overwrite the input", a.out);
    }
    struct trace_index ix;
    uint64_t skipped;
    if (ti_load(a.in, a.flags, &ix, &skipped) < 0) {
        free(defout);
        return tool_error_lib();
    }
    int rc;
    struct sync_ctx *x = calloc(1, sizeof *x);
    if (!x) {
        rc = tool_error("out of memory");
    } else {
        pthread_mutex_init(&x->fallback_mu, NULL);
        rc = sync_trace(&a, x, &ix, skipped);
        pthread_mutex_destroy(&x->fallback_mu);
        for (unsigned k = 0; k < SYNC_MAX_CPU; k++)
            free(x->bycpu[k]);
        free(x->samples);
        free(x->verdict);
        free(x->hints);
        for (size_t k = 0; x->lasts && k < x->nsrc; k++)
            free(x->lasts[k].last);
        free(x->lasts);
        free(x);
    }
    ti_free(&ix);
    free(defout);
    return rc;
}
