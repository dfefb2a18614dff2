/*
 * trace_index.c - pass 1 (the trace index) and pass 2 (the k-way merge of
 * the threads' events) for tmsync and tmcheck.
 *
 * Owns: the index arrays and the per-thread cursors. A cursor owns a copy
 * of one decoded chunk (the reader's arrays only live until its next call,
 * and the merge reads the chunks of many threads in turn).
 * Never: keeps more than one chunk per thread; prints; exits.
 */
#include "trace_index.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

int ti_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q)
        return error_set("out of memory (%zu bytes)", c * elem);
    memset((char *)q + *cap * elem, 0, (c - *cap) * elem);
    *p = q;
    *cap = c;
    return 0;
}

/* Appends n elements of size `elem` to a growing array. */
static int append(void **arr, size_t *n, size_t *cap, const void *src, size_t k, size_t elem)
{
    if (k == 0)
        return 0;
    if (ti_grow(arr, cap, *n + k, elem) < 0)
        return -1;
    memcpy((char *)*arr + *n * elem, src, k * elem);
    *n += k;
    return 0;
}

static struct ti_source *source_for(struct trace_index *ix, size_t *cap, uint32_t thread)
{
    for (size_t i = ix->nsrc; i-- > 0;)
        if (ix->src[i].thread == thread)
            return &ix->src[i];
    if (ti_grow((void **)&ix->src, cap, ix->nsrc + 1, sizeof *ix->src) < 0)
        return NULL;
    struct ti_source *s = &ix->src[ix->nsrc++];
    memset(s, 0, sizeof *s);
    s->thread = thread;
    return s;
}

static int cmp_src(const void *a, const void *b)
{
    uint32_t x = ((const struct ti_source *)a)->thread, y = ((const struct ti_source *)b)->thread;
    return (x > y) - (x < y);
}

int ti_scan(struct tf_reader *r, struct trace_index *ix)
{
    memset(ix, 0, sizeof *ix);
    ix->hdr = *tf_reader_header(r);
    size_t cap_sites = 0, cap_thr = 0, cap_skew = 0, cap_smp = 0, cap_mod = 0, cap_src = 0, cap_obj = 0;
    struct tf_chunk c;
    int rc;
    while ((rc = tf_next(r, &c)) == 1) {
        ix->chunks++;
        int e = 0;
        switch (c.kind) {
        case TF_CHUNK_META_SITES:
            e = append((void **)&ix->sites, &ix->nsites, &cap_sites, c.sites, c.count, sizeof *c.sites);
            break;
        case TF_CHUNK_META_THREADS:
            e = append((void **)&ix->threads, &ix->nthreads, &cap_thr, c.threads, c.count, sizeof *c.threads);
            break;
        case TF_CHUNK_META_SKEW:
            e = append((void **)&ix->skews, &ix->nskews, &cap_skew, c.skews, c.count, sizeof *c.skews);
            break;
        case TF_CHUNK_SAMPLES:
            e = append((void **)&ix->samples, &ix->nsamples, &cap_smp, c.samples, c.count, sizeof *c.samples);
            break;
        case TF_CHUNK_MODEL:
            e = append((void **)&ix->models, &ix->nmodels, &cap_mod, c.models, c.count, sizeof *c.models);
            break;
        case TF_CHUNK_RUNINFO:
            ix->runinfo = *c.runinfo;
            break;
        case TF_CHUNK_LOADMAP:
            e = append((void **)&ix->objects, &ix->nobjects, &cap_obj, c.objects, c.count, sizeof *c.objects);
            break;
        case TF_CHUNK_END: {
            free(ix->end);
            ix->end = NULL;
            ix->nend = 0;
            size_t cap = 0;
            e = append((void **)&ix->end, &ix->nend, &cap, c.threads, c.count, sizeof *c.threads);
            ix->have_end = 1;
            ix->writer_errors = c.writer_errors;
            ix->end_signal = c.end_signal;
            break;
        }
        case TF_CHUNK_EVENTS: {
            struct ti_source *s = source_for(ix, &cap_src, c.thread);
            if (!s)
                e = -1;
            else {
                e = ti_grow((void **)&s->offsets, &s->cap, s->n + 1, sizeof *s->offsets);
                if (e == 0) {
                    if (ix->events_codec == TF_CODEC_NONE)
                        ix->events_codec = (int)c.codec;
                    s->offsets[s->n++] = c.offset;
                    s->events += c.count;
                    ix->events += c.count;
                }
            }
            break;
        }
        default:
            break;   /* unknown kinds of a newer writer: the reader already vetted the version */
        }
        if (e < 0) {
            ti_free(ix);
            return -1;
        }
    }
    if (rc < 0) {
        ti_free(ix);
        return -1;
    }
    if (ix->nsrc > 1)
        qsort(ix->src, ix->nsrc, sizeof *ix->src, cmp_src);
    return 0;
}

int ti_load(const char *path, unsigned flags, struct trace_index *ix, uint64_t *skipped)
{
    memset(ix, 0, sizeof *ix);
    struct tf_reader *r = tf_open(path, TF_SKIP_EVENTS | (flags & TF_SALVAGE));
    if (!r)
        return -1;
    int rc = ti_scan(r, ix);
    *skipped = tf_reader_skipped(r);
    tf_close(r);
    return rc;
}

void ti_free(struct trace_index *ix)
{
    free(ix->sites);
    free(ix->threads);
    free(ix->end);
    free(ix->skews);
    free(ix->samples);
    free(ix->models);
    free(ix->objects);
    for (size_t i = 0; i < ix->nsrc; i++)
        free(ix->src[i].offsets);
    free(ix->src);
    memset(ix, 0, sizeof *ix);
}

uint64_t ti_dropped(const struct trace_index *ix)
{
    uint64_t d = 0;
    for (size_t i = 0; i < ix->nend; i++)
        d += ix->end[i].dropped;
    return d;
}

/* ---- the merge -------------------------------------------------------- */

struct cursor {
    const struct ti_source *src;
    size_t next_chunk;        /* index into src->offsets */
    struct tf_event *ev;      /* this cursor's copy of the current chunk */
    size_t n, pos, cap;
};

struct ti_merge {
    struct tf_reader *r;
    ti_map_fn map;
    void *ctx;
    struct cursor *cur;
    size_t ncur;
    struct cursor **heap;     /* min-heap on the head events */
    size_t nheap;
    int started;
    struct cursor *last;      /* popped last time: re-inserted on the next call */
};

/* Loads the cursor's next non-empty chunk. 1 = has events, 0 = exhausted. */
static int cursor_fill(struct ti_merge *m, struct cursor *c)
{
    while (c->next_chunk < c->src->n) {
        struct tf_chunk ch;
        if (tf_read_at(m->r, c->src->offsets[c->next_chunk++], &ch) != 1)
            return -1;
        if (ch.kind != TF_CHUNK_EVENTS)
            return error_set("%s: offset %llu: expected an events chunk, found %s", tf_reader_path(m->r),
                             (unsigned long long)c->src->offsets[c->next_chunk - 1],
                             tf_chunk_kind_name(ch.kind));
        if (ch.count == 0)
            continue;
        if (ti_grow((void **)&c->ev, &c->cap, ch.count, sizeof *c->ev) < 0)
            return -1;
        memcpy(c->ev, ch.events, ch.count * sizeof *c->ev);
        if (ch.thread != 0)
            for (size_t i = 0; i < ch.count; i++)
                c->ev[i].thread = ch.thread;
        if (m->map && m->map(m->ctx, c->ev, ch.count) < 0)
            return -1;
        c->n = ch.count;
        c->pos = 0;
        return 1;
    }
    c->n = c->pos = 0;
    return 0;
}

static inline int cur_before(const struct cursor *a, const struct cursor *b)
{
    return ti_before(&a->ev[a->pos], &b->ev[b->pos]);
}

static void sift_down(struct ti_merge *m, size_t i)
{
    struct cursor **h = m->heap;
    size_t n = m->nheap;
    struct cursor *x = h[i];
    for (;;) {
        size_t l = 2 * i + 1;
        if (l >= n)
            break;
        size_t s = l;
        if (l + 1 < n && cur_before(h[l + 1], h[l]))
            s = l + 1;
        if (!cur_before(h[s], x))
            break;
        h[i] = h[s];
        i = s;
    }
    h[i] = x;
}

struct ti_merge *ti_merge_create(struct tf_reader *r, const struct trace_index *ix, ti_map_fn map, void *ctx)
{
    struct ti_merge *m = calloc(1, sizeof *m);
    if (!m) {
        error_set("out of memory");
        return NULL;
    }
    m->r = r;
    m->map = map;
    m->ctx = ctx;
    m->ncur = ix->nsrc;
    m->cur = calloc(ix->nsrc ? ix->nsrc : 1, sizeof *m->cur);
    m->heap = calloc(ix->nsrc ? ix->nsrc : 1, sizeof *m->heap);
    if (!m->cur || !m->heap) {
        ti_merge_free(m);
        error_set("out of memory");
        return NULL;
    }
    for (size_t i = 0; i < ix->nsrc; i++)
        m->cur[i].src = &ix->src[i];
    return m;
}

int ti_merge_next(struct ti_merge *m, const struct tf_event **ev)
{
    if (!m->started) {
        m->started = 1;
        for (size_t i = 0; i < m->ncur; i++) {
            int rc = cursor_fill(m, &m->cur[i]);
            if (rc < 0)
                return -1;
            if (rc == 1)
                m->heap[m->nheap++] = &m->cur[i];
        }
        for (size_t i = m->nheap / 2; i-- > 0;)
            sift_down(m, i);
    } else if (m->last) {
        /* advance the cursor popped last time, then restore the heap */
        struct cursor *c = m->last;
        m->last = NULL;
        if (++c->pos >= c->n) {
            int rc = cursor_fill(m, c);
            if (rc < 0)
                return -1;
            if (rc == 0) {
                m->heap[0] = m->heap[--m->nheap];
                if (m->nheap)
                    sift_down(m, 0);
                goto pick;
            }
        }
        sift_down(m, 0);
    }
pick:
    if (m->nheap == 0)
        return 0;
    m->last = m->heap[0];
    *ev = &m->last->ev[m->last->pos];
    return 1;
}

void ti_merge_free(struct ti_merge *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->ncur; i++)
        free(m->cur[i].ev);
    free(m->cur);
    free(m->heap);
    free(m);
}
