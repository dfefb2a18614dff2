/*
 * trace_index.c - pass 1 (the trace index) and pass 2 (the k-way merge of
 * the threads' events) for tmsync and tmcheck.
 *
 * Owns: the index arrays, the per-thread cursors and the decoding threads.
 * A cursor owns a window of slots, each a copy of one decoded chunk (the
 * reader's arrays only live until its next call, and the merge reads the
 * chunks of many threads in turn); chunk k of a source goes to slot
 * k % window, and a slot is queued for its next chunk when the merge moves
 * past it and no hold keeps it (else on its last release), so the decoding
 * threads work ahead of the merge by at most a window. Every slot is decoded the same whichever thread does it. The
 * order callback passes over a source's decoded chunks in order, one at a
 * time (the cursor's `ordered` and `ordering`), in whichever thread finds
 * the next one decoded; the merge takes a chunk once it has passed.
 * Never: keeps more than a window of chunks per thread; reuses a held
 * slot; waits for a held slot without asking the holder (`starved`); runs
 * the order callback on two chunks of one source at once or out of their
 * order; prints; exits.
 */
#include "trace_index.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

int ti_grow_slow(void **p, size_t *cap, size_t need, size_t elem)
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

/* READY: decoded and mapped; DONE: the order callback has run on it too
 * (without one, decoding makes it DONE); HELD: the merge has passed it but
 * a hold keeps its events (ti_merge_hold), so it is queued on the last
 * release. */
enum slot_state { SLOT_IDLE, SLOT_QUEUED, SLOT_BUSY, SLOT_READY, SLOT_DONE, SLOT_FAILED, SLOT_HELD };

/* One decoded chunk of a source, or the job of decoding it. */
struct slot {
    enum slot_state state;
    size_t chunk;             /* index into the source's offsets */
    struct tf_event *ev;
    size_t ev_bytes;          /* allocated */
    uint64_t *keep;           /* the map's words for the order callback */
    size_t keep_cap;
    size_t n;
    char *error;              /* SLOT_FAILED: the message */
    unsigned refs;            /* holds (atomic: taken by the merge, released anywhere) */
    uint64_t tag;             /* the tag of the last hold */
    struct cursor *c;         /* the slot's cursor, for a release */
};

struct cursor {
    const struct ti_source *src;
    size_t index;             /* the source's index, for the order callback */
    size_t next_chunk;        /* the chunk the cursor takes next */
    size_t ordered;           /* the chunk the order callback takes next */
    int ordering;             /* a thread runs the order callback on this source */
    struct slot *slots;       /* the window */
    struct slot *cur;         /* the slot being merged (NULL: none) */
    struct tf_event *ev;      /* cur's events */
    size_t n, pos;
};

/* The decoding threads' queue: (cursor, slot) pairs or tasks, in the
 * order queued. */
struct job {
    struct cursor *c;
    struct slot *s;
    struct ti_task *t;
};

enum task_state { TASK_QUEUED = 1, TASK_BUSY, TASK_DONE };

struct ti_merge {
    struct ti_merge_head h;   /* first: ti_merge_next's inline part reads it */
    struct tf_reader *r;
    struct ti_merge_opts o;
    unsigned window;
    struct cursor *cur;
    size_t ncur;
    struct cursor **heap;     /* min-heap on the head events */
    size_t nheap;
    int started;
    struct cursor *last;      /* popped last time: re-inserted on the next call */
    /* jobs > 1 */
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    struct job *q;            /* ring of ncur * window jobs */
    size_t qhead, qlen, qcap;
    int stop;
    pthread_t *thr;
    struct tf_reader **rd;    /* the workers' readers */
    unsigned nrd;             /* rd's length */
    unsigned nthr;
};

/* Decodes the slot's chunk through `r` and maps it (any thread). 0 or -1. */
static int slot_decode(struct ti_merge *m, struct tf_reader *r, unsigned worker, const struct ti_source *src,
                       struct slot *s)
{
    struct tf_chunk ch;
    uint64_t off = src->offsets[s->chunk];
    s->n = 0;
    /* decoded in place: the slot's array is the reader's for this chunk */
    if (tf_read_events_at(r, off, &ch, (void **)&s->ev, &s->ev_bytes) != 1)
        return -1;
    if (ch.kind != TF_CHUNK_EVENTS)
        return error_set("%s: offset %llu: expected an events chunk, found %s", tf_reader_path(r),
                         (unsigned long long)off, tf_chunk_kind_name(ch.kind));
    if (m->o.map && ch.count) {
        if (ti_grow((void **)&s->keep, &s->keep_cap, ch.count, sizeof *s->keep) < 0 ||
            m->o.map(m->o.ctx, worker, s->ev, s->keep, ch.count) < 0)
            return -1;
    }
    s->n = ch.count;
    return 0;
}

/* Runs the order callback on the cursor's decoded chunks in their order,
 * from the first it has not seen, for as long as the next one is decoded
 * and no other thread is at it: chunks of one source pass one at a time,
 * in order, in whichever thread finds them ready. The lock is held when
 * there are workers, and released while the callback runs. */
static void order_drain(struct ti_merge *m, struct cursor *c)
{
    while (!c->ordering) {
        struct slot *s = &c->slots[c->ordered % m->window];
        if (s->chunk != c->ordered || s->state != SLOT_READY)
            return;
        c->ordering = 1;
        if (m->nthr)
            pthread_mutex_unlock(&m->mu);
        int rc = s->n ? m->o.order(m->o.ctx, c->index, s->ev, s->keep, s->n) : 0;
        char *msg = rc < 0 ? strdup(error_get()) : NULL;
        if (m->nthr)
            pthread_mutex_lock(&m->mu);
        c->ordering = 0;
        if (rc < 0) {
            free(s->error);
            s->error = msg;
            s->state = SLOT_FAILED;   /* the merge stops there: no later chunk is ordered */
            return;
        }
        s->state = SLOT_DONE;
        c->ordered++;
    }
}

/* Decodes a slot taken off the queue (or by the merge itself), publishes
 * it and orders what it can. */
static void slot_run(struct ti_merge *m, struct tf_reader *r, unsigned worker, struct cursor *c, struct slot *s)
{
    int rc = slot_decode(m, r, worker, c->src, s);
    char *msg = rc < 0 ? strdup(error_get()) : NULL;
    pthread_mutex_lock(&m->mu);
    free(s->error);
    s->error = msg;
    s->state = rc < 0 ? SLOT_FAILED : m->o.order ? SLOT_READY : SLOT_DONE;
    if (s->state == SLOT_READY)
        order_drain(m, c);
    pthread_cond_broadcast(&m->done);
    pthread_mutex_unlock(&m->mu);
}

/* Appends a job (the lock held). The queue grows when full: a slot the
 * merge decoded itself leaves its entry behind, and may be queued again
 * before a thread skips that one. -1 when out of memory. */
static int queue_push(struct ti_merge *m, struct job j)
{
    if (m->qlen == m->qcap) {
        size_t nc = m->qcap ? 2 * m->qcap : 16;
        struct job *q = malloc(nc * sizeof *q);
        if (!q)
            return -1;
        for (size_t i = 0; i < m->qlen; i++)
            q[i] = m->q[(m->qhead + i) % m->qcap];
        free(m->q);
        m->q = q;
        m->qcap = nc;
        m->qhead = 0;
    }
    m->q[(m->qhead + m->qlen) % m->qcap] = j;
    m->qlen++;
    pthread_cond_signal(&m->work);
    return 0;
}

/* Runs a queued task; the caller holds the lock, which is released meanwhile. */
static void task_run(struct ti_merge *m, struct ti_task *t)
{
    t->state = TASK_BUSY;
    pthread_mutex_unlock(&m->mu);
    t->fn(t->arg);
    pthread_mutex_lock(&m->mu);
    t->state = TASK_DONE;
    pthread_cond_broadcast(&m->done);
}

void ti_merge_post(struct ti_merge *m, struct ti_task *t)
{
    pthread_mutex_lock(&m->mu);
    t->state = TASK_QUEUED;
    if (m->nthr)
        (void)queue_push(m, (struct job){ NULL, NULL, t }); /* no memory: ti_merge_wait runs it */
    pthread_mutex_unlock(&m->mu);
}

void ti_merge_wait(struct ti_merge *m, struct ti_task *t)
{
    pthread_mutex_lock(&m->mu);
    if (t->state == TASK_QUEUED)
        task_run(m, t);
    while (t->state != TASK_DONE)
        pthread_cond_wait(&m->done, &m->mu);
    pthread_mutex_unlock(&m->mu);
}

struct worker_arg {
    struct ti_merge *m;
    unsigned index;
};

static void *worker_main(void *p)
{
    struct ti_merge *m = ((struct worker_arg *)p)->m;
    unsigned me = ((struct worker_arg *)p)->index;
    free(p);
    pthread_mutex_lock(&m->mu);
    for (;;) {
        while (!m->stop && m->qlen == 0)
            pthread_cond_wait(&m->work, &m->mu);
        if (m->stop)
            break;
        struct job j = m->q[m->qhead];
        m->qhead = (m->qhead + 1) % m->qcap;
        m->qlen--;
        if (j.t) {
            if (j.t->state == TASK_QUEUED)
                task_run(m, j.t);
            continue;
        }
        if (j.s->state != SLOT_QUEUED)
            continue;   /* the merge took it itself */
        j.s->state = SLOT_BUSY;
        pthread_mutex_unlock(&m->mu);
        slot_run(m, m->rd[me], me, j.c, j.s);
        pthread_mutex_lock(&m->mu);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

/* Queues the cursor's chunk `k` into its slot (caller holds the lock when
 * there are workers). */
static void slot_queue(struct ti_merge *m, struct cursor *c, size_t k)
{
    if (k >= c->src->n)
        return;
    struct slot *s = &c->slots[k % m->window];
    s->chunk = k;
    s->state = SLOT_QUEUED;
    if (m->nthr)
        (void)queue_push(m, (struct job){ c, s, NULL }); /* no memory: slot_wait decodes it */
}

/* Waits for the cursor's next chunk, decoding and ordering it here when no
 * worker has started on it. 0, or -1 with the message set. */
static int slot_wait(struct ti_merge *m, struct cursor *c, struct slot *s)
{
    if (!m->nthr) {
        if (s->state == SLOT_HELD && m->o.starved)
            m->o.starved(m->o.starved_arg);
        if (s->state == SLOT_HELD)
            return error_set("the merge waits for a chunk whose holds are never released");
        s->state = SLOT_BUSY;
        if (slot_decode(m, m->r, 0, c->src, s) < 0)
            return -1;
        s->state = m->o.order ? SLOT_READY : SLOT_DONE;
        order_drain(m, c);
        return s->state == SLOT_DONE ? 0 : error_set("%s", s->error ? s->error : "out of memory");
    }
    pthread_mutex_lock(&m->mu);
    int asked = 0;
    for (;;) {
        if (s->state == SLOT_HELD && m->o.starved && !asked) {
            /* the holder may be keeping it in a list it has not handed on */
            asked = 1;
            pthread_mutex_unlock(&m->mu);
            m->o.starved(m->o.starved_arg);
            pthread_mutex_lock(&m->mu);
            continue;
        }
        if (s->state == SLOT_QUEUED) {
            s->state = SLOT_BUSY;
            pthread_mutex_unlock(&m->mu);
            slot_run(m, m->r, m->nthr, c, s);
            pthread_mutex_lock(&m->mu);
        }
        if (s->state == SLOT_READY)
            order_drain(m, c);
        if (s->state == SLOT_DONE || s->state == SLOT_FAILED)
            break;
        pthread_cond_wait(&m->done, &m->mu);
    }
    pthread_mutex_unlock(&m->mu);
    return s->state == SLOT_DONE ? 0 : error_set("%s", s->error ? s->error : "out of memory");
}

/* Moves the cursor to its next non-empty chunk; the slot it leaves is
 * queued for the chunk a window later. 1 = has events, 0 = exhausted. */
static int cursor_fill(struct ti_merge *m, struct cursor *c)
{
    while (c->next_chunk < c->src->n) {
        if (c->cur) {
            if (m->nthr)
                pthread_mutex_lock(&m->mu);
            if (__atomic_load_n(&c->cur->refs, __ATOMIC_ACQUIRE)) {
                c->cur->state = SLOT_HELD;   /* the last release queues it */
            } else {
                c->cur->state = SLOT_IDLE;
                slot_queue(m, c, c->cur->chunk + m->window);
            }
            if (m->nthr)
                pthread_mutex_unlock(&m->mu);
            c->cur = NULL;
        }
        struct slot *s = &c->slots[c->next_chunk % m->window];
        c->next_chunk++;
        if (slot_wait(m, c, s) < 0)
            return -1;
        c->cur = s;
        if (s->n == 0)
            continue;
        c->ev = s->ev;
        c->n = s->n;
        c->pos = 0;
        return 1;
    }
    c->n = c->pos = 0;
    return 0;
}

struct ti_slot *ti_merge_hold(struct ti_merge *m, uint64_t tag)
{
    struct slot *s = m->last ? m->last->cur : NULL;
    if (!s || s->tag == tag)
        return NULL;
    s->tag = tag;
    __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
    return (struct ti_slot *)s;
}

void ti_merge_release(struct ti_merge *m, struct ti_slot *h)
{
    struct slot *s = (struct slot *)h;
    pthread_mutex_lock(&m->mu);
    if (__atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) == 0 && s->state == SLOT_HELD) {
        s->state = SLOT_IDLE;
        slot_queue(m, s->c, s->chunk + m->window);
        pthread_cond_broadcast(&m->done);
    }
    pthread_mutex_unlock(&m->mu);
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

/* The top's head moved on: one source (a synchronised trace) needs no
 * comparison, two (a two-thread trace) one. */
static inline void heap_fix_top(struct ti_merge *m)
{
    if (m->nheap > 2) {
        sift_down(m, 0);
    } else if (m->nheap == 2 && cur_before(m->heap[1], m->heap[0])) {
        struct cursor *x = m->heap[0];
        m->heap[0] = m->heap[1];
        m->heap[1] = x;
    }
}

/* Starts the workers, each with its own reader. 0 or -1. */
static int merge_start_workers(struct ti_merge *m)
{
    unsigned n = m->o.workers ? m->o.workers : m->o.jobs - 1;
    if (!m->o.path)
        return error_set("a merge with %u jobs needs the trace's path", m->o.jobs);
    m->qcap = m->ncur * m->window + m->o.tasks;
    m->q = calloc(m->qcap ? m->qcap : 1, sizeof *m->q);
    m->thr = calloc(n, sizeof *m->thr);
    m->rd = calloc(n, sizeof *m->rd);
    if (!m->q || !m->thr || !m->rd)
        return error_set("out of memory");
    m->nrd = n;
    for (unsigned i = 0; i < n; i++) {
        if (!(m->rd[i] = tf_open(m->o.path, m->o.open_flags & TF_SALVAGE)))
            return -1;
        struct worker_arg *a = malloc(sizeof *a);
        if (!a)
            return error_set("out of memory");
        *a = (struct worker_arg){ m, i };
        int e = pthread_create(&m->thr[i], NULL, worker_main, a);
        if (e != 0) {
            free(a);
            return error_set("cannot start a decoding thread: %s", strerror(e));
        }
        m->nthr = i + 1;
    }
    return 0;
}

static unsigned ti_window(unsigned jobs, size_t nsrc)
{
    if (jobs <= 1)
        return 1;
    /* about two chunks per thread in flight over all sources, and no
     * source more than a thread's worth ahead */
    size_t w = 2 * (size_t)jobs / (nsrc ? nsrc : 1) + 1;
    size_t most = jobs + 1 < TI_WINDOW_MAX ? jobs + 1 : TI_WINDOW_MAX;
    return (unsigned)(w < 2 ? 2 : w > most ? most : w);
}

struct ti_merge *ti_merge_create(struct tf_reader *r, const struct trace_index *ix, const struct ti_merge_opts *o)
{
    struct ti_merge *m = calloc(1, sizeof *m);
    if (!m) {
        error_set("out of memory");
        return NULL;
    }
    m->r = r;
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->work, NULL);
    pthread_cond_init(&m->done, NULL);
    if (o)
        m->o = *o;
    if (m->o.jobs < 1)
        m->o.jobs = 1;
    if (m->o.jobs > TI_MAX_JOBS)
        m->o.jobs = TI_MAX_JOBS;
    /* the threads that decode: the workers and the caller's */
    m->window = ti_window(m->o.jobs > 1 && m->o.workers ? m->o.workers + 1 : m->o.jobs, ix->nsrc) +
                (m->o.held < TI_WINDOW_MAX ? m->o.held : TI_WINDOW_MAX);
    m->ncur = ix->nsrc;
    m->cur = calloc(ix->nsrc ? ix->nsrc : 1, sizeof *m->cur);
    m->heap = calloc(ix->nsrc ? ix->nsrc : 1, sizeof *m->heap);
    int bad = !m->cur || !m->heap;
    for (size_t i = 0; !bad && i < ix->nsrc; i++) {
        m->cur[i].src = &ix->src[i];
        m->cur[i].index = i;
        bad = !(m->cur[i].slots = calloc(m->window, sizeof *m->cur[i].slots));
        for (unsigned k = 0; !bad && k < m->window; k++)
            m->cur[i].slots[k].c = &m->cur[i];
    }
    if (bad)
        error_set("out of memory");
    if (bad || (m->o.jobs > 1 && merge_start_workers(m) < 0)) {
        ti_merge_free(m);
        return NULL;
    }
    return m;
}

/* The first call: every source's first window queued, its first chunk in
 * the heap. 0 or -1. */
static int merge_begin(struct ti_merge *m)
{
    m->started = 1;
    if (m->nthr)
        pthread_mutex_lock(&m->mu);
    /* chunk by chunk across the sources: every source's first chunk comes first */
    for (size_t k = 0; k < m->window; k++)
        for (size_t i = 0; i < m->ncur; i++)
            slot_queue(m, &m->cur[i], k);
    if (m->nthr)
        pthread_mutex_unlock(&m->mu);
    for (size_t i = 0; i < m->ncur; i++) {
        int rc = cursor_fill(m, &m->cur[i]);
        if (rc < 0)
            return -1;
        if (rc == 1)
            m->heap[m->nheap++] = &m->cur[i];
    }
    for (size_t i = m->nheap / 2; i-- > 0;)
        sift_down(m, i);
    return 0;
}

/* The head the inline part of ti_merge_next walks: the top cursor's
 * events and the earliest head among the others (the top's children in
 * the heap; none with one source). */
static void head_set(struct ti_merge *m)
{
    struct cursor *c = m->last;
    if (!c) {
        m->h = (struct ti_merge_head){ NULL, NULL, NULL, NULL, NULL };
        return;
    }
    m->h.cur = &c->ev[c->pos];
    m->h.end = c->ev + c->n;
    m->h.rival = NULL;
    if (m->o.keys && m->o.map && m->o.order) {
        m->h.base = c->ev;
        m->h.keys = c->cur->keep;
    }
    if (m->nheap >= 2) {
        struct cursor *r = m->heap[1];
        if (m->nheap > 2 && cur_before(m->heap[2], r))
            r = m->heap[2];
        m->h.rival = &r->ev[r->pos];
    }
}

int ti_merge_next_slow(struct ti_merge *m, const struct tf_event **ev)
{
    if (!m->started) {
        if (merge_begin(m) < 0)
            return -1;
    } else if (m->last) {
        /* advance the cursor popped last time, then restore the heap */
        struct cursor *c = m->last;
        m->last = NULL;
        c->pos = (size_t)(m->h.cur - c->ev);   /* the inline part moved it on */
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
        heap_fix_top(m);
    }
pick:
    if (m->nheap == 0) {
        head_set(m);
        return 0;
    }
    m->last = m->heap[0];
    head_set(m);
    *ev = m->h.cur;
    return 1;
}

void ti_merge_free(struct ti_merge *m)
{
    if (!m)
        return;
    if (m->nthr) {
        pthread_mutex_lock(&m->mu);
        m->stop = 1;
        pthread_cond_broadcast(&m->work);
        pthread_mutex_unlock(&m->mu);
        for (unsigned i = 0; i < m->nthr; i++)
            pthread_join(m->thr[i], NULL);
    }
    for (unsigned i = 0; m->rd && i < m->nrd; i++)
        if (m->rd[i])
            tf_close(m->rd[i]);
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->work);
    pthread_cond_destroy(&m->done);
    for (size_t i = 0; m->cur && i < m->ncur; i++) {
        for (unsigned k = 0; m->cur[i].slots && k < m->window; k++) {
            free(m->cur[i].slots[k].ev);
            free(m->cur[i].slots[k].keep);
            free(m->cur[i].slots[k].error);
        }
        free(m->cur[i].slots);
    }
    free(m->cur);
    free(m->heap);
    free(m->q);
    free(m->thr);
    free(m->rd);
    free(m);
}
