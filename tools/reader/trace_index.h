/*
 * trace_index.h - the trace index (pass 1) and the k-way merge of the
 * threads' event streams (pass 2), shared by tmsync and tmcheck.
 *
 * Owns: collecting everything but the events in one pass (header, sites,
 * threads, skews, samples, models, END counts, the file offsets of every
 * thread's EVENTS chunks), and producing the events of all threads in one
 * order that keeps each thread's own order: a binary heap keyed on
 * (ts, thread, seq) over one cursor per thread, fed by decoding threads.
 * Never: holds more than a window of decoded chunks per thread (one with a
 * single job); prints.
 */
#ifndef TMT_TRACE_INDEX_H
#define TMT_TRACE_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "trace_file.h"

/* The EVENTS chunks of one source (a thread, or thread 0 in a synced trace). */
struct ti_source {
    uint32_t thread;
    uint64_t *offsets;
    size_t n, cap;
    uint64_t events;     /* sum of the chunks' counts */
};

struct trace_index {
    struct tf_header hdr;
    struct tf_site *sites;
    size_t nsites;
    struct tf_thread_info *threads;  /* META_THREADS */
    size_t nthreads;
    struct tf_thread_info *end;      /* END chunk (NULL if missing) */
    size_t nend;
    uint64_t writer_errors;
    uint32_t end_signal;             /* END: the signal that terminated the program (0 = none) */
    int have_end;
    struct tf_skew *skews;
    size_t nskews;
    struct tf_sample *samples;
    size_t nsamples;
    struct tf_cpu_model *models;
    size_t nmodels;
    struct tf_object *objects;       /* LOADMAP chunks (format version 2) */
    size_t nobjects;
    struct tf_runinfo runinfo;       /* RUNINFO (event_cost_ns 0: none) */
    struct ti_source *src;           /* sorted by thread */
    size_t nsrc;
    uint64_t events;                 /* all EVENTS chunks' counts */
    uint64_t chunks;
    int events_codec;                /* the recorder's compression: the codec of the first
                                        compressed EVENTS chunk (TF_CODEC_NONE: none) */
};

/* Pass 1 over an open reader (opened with TF_SKIP_EVENTS). 0 or -1 with the
 * reader's message in error_get(). */
int ti_scan(struct tf_reader *r, struct trace_index *ix);
void ti_free(struct trace_index *ix);
/* Opens `path` (TF_SALVAGE in `flags` passes through), scans it and closes
 * it; *skipped = damaged chunks skipped. 0 or -1 (error_get()). */
int ti_load(const char *path, unsigned flags, struct trace_index *ix, uint64_t *skipped);
/* Grows an array to hold `need` elements (doubling, new part zeroed).
 * Inline for the analyses that call it on every event, where it nearly
 * always has room already. */
int ti_grow_slow(void **p, size_t *cap, size_t need, size_t elem);
static inline int ti_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    return need <= *cap ? 0 : ti_grow_slow(p, cap, need, elem);
}
/* Dropped events recorded in the END chunk (0 without one). */
uint64_t ti_dropped(const struct trace_index *ix);

/* Called on every decoded chunk before its events enter the merge, in any
 * of the merge's threads (`worker` <= the workers started names it: state the map changes
 * must be that worker's): lets tmsync rewrite ts/truth in one tight loop.
 * `keep` has n words the map may fill for `order`. 0 or -1 (message set). */
typedef int (*ti_map_fn)(void *ctx, unsigned worker, struct tf_event *ev, uint64_t *keep, size_t n);
/* Called on every source's chunks in their order, after the map, with the
 * map's `keep` words: one chunk of a source at a time, in any of the
 * merge's threads (sources in parallel), so state it changes must be
 * `source`'s (the index into the trace index's src). With opts.keys it
 * leaves each ev[i].ts in keep[i] (the map's array, writable though
 * passed const). 0 or -1 (message set). */
typedef int (*ti_order_fn)(void *ctx, size_t source, struct tf_event *ev, const uint64_t *keep, size_t n);

/* How a merge reads. jobs > 1: jobs - 1 threads (or `workers`) read, decompress, decode
 * and map chunks ahead of the merge (each with its own reader of `path`),
 * and the caller's thread helps with the chunk it waits for; each source
 * keeps at most ti_window() decoded chunks. The merged order and the events
 * are the same for every `jobs`. */
struct ti_merge_opts {
    unsigned jobs;        /* 0 and 1: the caller's thread alone */
    const char *path;     /* the trace (jobs > 1) */
    unsigned open_flags;  /* TF_SALVAGE passes to the workers' readers */
    ti_map_fn map;        /* NULL: none */
    ti_order_fn order;    /* NULL: none */
    void *ctx;
    unsigned tasks;       /* the most ti_tasks posted and not yet waited for */
    unsigned workers;     /* jobs > 1: the threads started (0: jobs - 1); the
                             map's `worker` is then < workers + 1 */
    unsigned held;        /* slots a source keeps besides its window, for the
                             chunks that holds (ti_merge_hold) keep */
    void (*starved)(void *arg); /* the merge waits for a chunk a hold keeps: in the
                             merge's thread, may release holds; NULL: none */
    void *starved_arg;
    int keys;             /* the order callback leaves each event's ts in its
                             keep word: ti_merge_run compares those (8 bytes an
                             event, where an event is 64) and reads an event
                             only on a tie */
};
/* The decoded chunks a source keeps: 1 for one job, else about two per
 * decoding thread (the workers and the caller's) over all the sources,
 * 2..min(threads + 1, TI_WINDOW_MAX). */
#define TI_WINDOW_MAX 16u
/* The most worker threads a merge starts. */
#define TI_MAX_JOBS 64u

struct ti_merge;

/* A merge over the sources of `ix`, read through `r` (a reader of the same
 * file; may be the one scanned, opened without TF_SKIP_EVENTS). `o` NULL:
 * one thread, no map. */
struct ti_merge *ti_merge_create(struct tf_reader *r, const struct trace_index *ix, const struct ti_merge_opts *o);
/* Work the merge's threads take on besides decoding (tmsync's output
 * chunks), in the order posted. `state` is the merge's. */
struct ti_task {
    void (*fn)(void *arg);
    void *arg;
    int state;
};
/* Queues `t` for the merge's threads (at most opts.tasks at a time; with
 * one job nobody runs it before ti_merge_wait). */
void ti_merge_post(struct ti_merge *m, struct ti_task *t);
/* Returns once `t` has run, running it here when no thread has started it. */
void ti_merge_wait(struct ti_merge *m, struct ti_task *t);

/* The merge's first member: the event it returned last, the end of that
 * event's run in its chunk, and the earliest head of the other sources
 * (NULL: none). While the next event of the run comes before that head it
 * is the next in merged order, taken inline without a call. With
 * opts.keys, keys[i] is the ts of base[i], the chunk's first event. */
struct ti_merge_head {
    const struct tf_event *cur, *end, *rival;
    const struct tf_event *base;
    const uint64_t *keys;
};
int ti_merge_next_slow(struct ti_merge *m, const struct tf_event **ev);
static inline int ti_before(const struct tf_event *a, const struct tf_event *b);

/* The next event in merged order: 1 = *ev points at it (valid until the next
 * call), 0 = all done, -1 = error (error_get()). */
static inline int ti_merge_next(struct ti_merge *m, const struct tf_event **ev)
{
    struct ti_merge_head *h = (struct ti_merge_head *)(void *)m;
    if (h->cur && h->cur + 1 < h->end && (!h->rival || ti_before(h->cur + 1, h->rival))) {
        *ev = ++h->cur;
        return 1;
    }
    return ti_merge_next_slow(m, ev);
}
/* The next events in merged order, as many of one source's as come next
 * and at most `max` (> 0): 1 = ev[0..*n) (valid until the next call), 0 =
 * all done, -1 = error. A caller that copies events copies runs at once. */
static inline int ti_merge_run(struct ti_merge *m, const struct tf_event **ev, size_t *n, size_t max)
{
    int rc = ti_merge_next(m, ev);
    if (rc != 1)
        return rc;
    struct ti_merge_head *h = (struct ti_merge_head *)(void *)m;
    const struct tf_event *p = h->cur, *lim = (size_t)(h->end - p) > max ? p + max : h->end;
    if (!h->rival) {
        p = lim - 1;
    } else if (h->keys) {
        const uint64_t *k = h->keys;
        const uint64_t r = h->rival->ts;
        size_t i = (size_t)(p - h->base), e = (size_t)(lim - h->base);
        while (i + 1 < e && (k[i + 1] < r || (k[i + 1] == r && ti_before(h->base + i + 1, h->rival))))
            i++;
        p = h->base + i;
    } else {
        while (p + 1 < lim && ti_before(p + 1, h->rival))
            p++;
    }
    h->cur = p;
    *n = (size_t)(p - *ev) + 1;
    return 1;
}
void ti_merge_free(struct ti_merge *m);

/* A hold on the decoded chunk the last event or run came from: its events
 * stay where they are, and the merge does not decode another chunk into
 * its place, until every hold is released. Lets a caller hand a run on by
 * pointer to another thread, which reads the events where they were
 * decoded instead of from a copy the merge made. `tag` (never 0) names the
 * holder: NULL when the chunk is already held under that tag (nothing to
 * release), else the hold. Merge's thread only. */
struct ti_slot;
struct ti_slot *ti_merge_hold(struct ti_merge *m, uint64_t tag);
/* Lets go of a hold, in any thread, before ti_merge_free. */
void ti_merge_release(struct ti_merge *m, struct ti_slot *h);

/* Strict order of the merge: ts, then thread, then seq. */
static inline int ti_before(const struct tf_event *a, const struct tf_event *b)
{
    if (a->ts != b->ts)
        return a->ts < b->ts;
    if (a->thread != b->thread)
        return a->thread < b->thread;
    return a->seq < b->seq;
}

#endif
