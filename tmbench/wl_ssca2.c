/*
 * wl_ssca2.c - the graph construction workload: a large directed multigraph
 * in adjacency arrays (per vertex: a degree and a fixed-capacity out-array).
 * Adding an edge is a tiny transaction that reserves the next slot of the
 * source's out-array by incrementing its degree and writes the target there;
 * reading is a tiny read-only transaction over a few of a vertex's edges.
 * Accesses spread over many vertices, so contention is low.
 *
 * Each thread adds at most its share of --edges and logs every edge it
 * added; after the quota, its operations are all reads. Owns the graph and
 * its check; it never writes the graph outside a transaction while workers
 * run.
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "tm.h"
#include "json_writer.h"

enum { SSCA_READ_SPAN = 4 };

struct ssca_log {
    long *edge; /* src * vertices + dst, in the order added */
    long n;      /* edges added */
    long tried;  /* adds attempted, at most quota (a full out-array refuses one) */
    long quota;
};

struct ssca2 {
    long nv, edges, cap, read_pct, sabotage;
    int threads;
    long *degree;        /* per vertex, transactional */
    long *adj;           /* vertex v's slot i at adj[v * cap + i]: target + 1; 0 = never written */
    struct ssca_log *log; /* per thread */
    long full, torn, reads;
};

static int ssca_setup(const struct bench_opts *o, void **state)
{
    struct ssca2 *w = calloc(1, sizeof *w);
    if (!w) {
        fprintf(stderr, "ssca2: out of memory\n");
        return -1;
    }
    *state = w;
    w->nv = bench_opt_long(o, "vertices", 16384, 1, 1L << 24);
    w->edges = bench_opt_long(o, "edges", 262144, 0, 1L << 28);
    w->read_pct = bench_opt_long(o, "read", 50, 0, 100);
    w->sabotage = bench_opt_long(o, "sabotage", 0, 0, 1);
    if (bench_opt_error)
        return -1;
    /* Room for twice the mean degree plus slack: a full out-array is rare and
     * only refuses that one edge. */
    w->cap = 2 * (w->edges / w->nv) + 16;
    w->threads = o->threads;
    w->degree = calloc((size_t)w->nv, sizeof *w->degree);
    w->adj = calloc((size_t)(w->nv * w->cap), sizeof *w->adj);
    w->log = calloc((size_t)w->threads, sizeof *w->log);
    if (!w->degree || !w->adj || !w->log) {
        fprintf(stderr, "ssca2: out of memory for %ld vertices x %ld slots\n", w->nv, w->cap);
        return -1;
    }
    for (int t = 0; t < w->threads; t++) {
        struct ssca_log *l = &w->log[t];
        l->quota = w->edges / w->threads + (t < w->edges % w->threads);
        l->edge = malloc((size_t)(l->quota ? l->quota : 1) * sizeof *l->edge);
        if (!l->edge) {
            fprintf(stderr, "ssca2: out of memory for the edge logs\n");
            return -1;
        }
    }
    return 0;
}

/* One operation's inputs and results. Transactions live in non-inlined
 * functions and exchange data only through this struct, so no caller
 * variable sits in the frame that a restart rewinds. */
struct ssca_op {
    long v, dst, start;
    int added;  /* add: 0 when the out-array was full */
    long seen;  /* read: edges looked at */
    long torn;  /* read: slots below the degree that were never written */
};

static __attribute__((noinline)) void ssca_add(struct ssca2 *w, struct ssca_op *op)
{
    TM_BEGIN("ssca2-add")
        long d = TM_READ(w->degree[op->v]);
        op->added = d < w->cap;
        if (d < w->cap) {
            TM_WRITE(w->adj[op->v * w->cap + d], op->dst + 1);
            TM_WRITE(w->degree[op->v], d + 1);
        }
    TM_END;
}

static __attribute__((noinline)) void ssca_read(struct ssca2 *w, struct ssca_op *op)
{
    TM_BEGIN_RO("ssca2-read")
        long d = TM_READ(w->degree[op->v]);
        long n = d < SSCA_READ_SPAN ? d : SSCA_READ_SPAN;
        op->seen = n;
        op->torn = 0;
        for (long i = 0; i < n; i++)
            op->torn += TM_READ(w->adj[op->v * w->cap + (op->start + i) % d]) == 0;
    TM_END;
}

static void ssca_worker(void *state, struct bench_thread *bt)
{
    struct ssca2 *w = state;
    struct ssca_log *l = &w->log[bt->id];
    struct ssca_op op;
    long full = 0, torn = 0, reads = 0;
    while (bench_continue(bt)) {
        op.v = (long)bench_rand_below(bt, (uint64_t)w->nv);
        if (l->tried < l->quota && (long)bench_rand_below(bt, 100) >= w->read_pct) {
            op.dst = (long)bench_rand_below(bt, (uint64_t)w->nv);
            ssca_add(w, &op);
            l->tried++;
            if (op.added)
                l->edge[l->n++] = op.v * w->nv + op.dst;
            else
                full++;
        } else {
            op.start = (long)bench_rand_below(bt, SSCA_READ_SPAN * 64);
            ssca_read(w, &op);
            torn += op.torn;
            reads++;
        }
        bt->ops++;
    }
    __atomic_fetch_add(&w->full, full, __ATOMIC_RELAXED);
    __atomic_fetch_add(&w->torn, torn, __ATOMIC_RELAXED);
    __atomic_fetch_add(&w->reads, reads, __ATOMIC_RELAXED);
}

static int ssca_cmp(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static int ssca_check(void *state, char *msg, size_t cap)
{
    struct ssca2 *w = state;
    long logged = 0, total = 0;
    for (int t = 0; t < w->threads; t++)
        logged += w->log[t].n;
    for (long v = 0; v < w->nv; v++)
        total += w->degree[v];
    if (w->sabotage && total) {
        long v = 0;
        while (!w->degree[v])
            v++;
        w->adj[v * w->cap] = w->adj[v * w->cap] % w->nv + 1; /* another target */
    }
    if (w->torn) {
        snprintf(msg, cap, "readers saw %ld reserved slots without their edge", w->torn);
        return 1;
    }
    if (total != logged) {
        snprintf(msg, cap, "total degree %ld but threads added %ld edges", total, logged);
        return 1;
    }
    long *have = malloc((size_t)(total ? total : 1) * sizeof(long));
    long *want = malloc((size_t)(total ? total : 1) * sizeof(long));
    int bad = 0;
    if (!have || !want) {
        snprintf(msg, cap, "out of memory");
        bad = 1;
        goto out;
    }
    long n = 0;
    for (long v = 0; v < w->nv && !bad; v++) {
        for (long i = 0; i < w->degree[v]; i++) {
            long e = w->adj[v * w->cap + i];
            if (e < 1 || e > w->nv) {
                snprintf(msg, cap, "vertex %ld slot %ld holds %ld, not an edge", v, i, e);
                bad = 1;
                break;
            }
            have[n++] = v * w->nv + e - 1;
        }
    }
    if (bad)
        goto out;
    n = 0;
    for (int t = 0; t < w->threads; t++)
        for (long i = 0; i < w->log[t].n; i++)
            want[n++] = w->log[t].edge[i];
    qsort(have, (size_t)total, sizeof(long), ssca_cmp);
    qsort(want, (size_t)total, sizeof(long), ssca_cmp);
    for (long i = 0; i < total; i++) {
        if (have[i] != want[i]) {
            long e = have[i] < want[i] ? have[i] : want[i];
            snprintf(msg, cap, "edge %ld -> %ld is in the graph and the logs a different number of times",
                     e / w->nv, e % w->nv);
            bad = 1;
            break;
        }
    }
out:
    free(have);
    free(want);
    return bad;
}

static void ssca_json(void *state, struct jw *j)
{
    struct ssca2 *w = state;
    long added = 0;
    for (int t = 0; t < w->threads; t++)
        added += w->log[t].n;
    jw_ki64(j, "vertices", w->nv);
    jw_ki64(j, "edges", w->edges);
    jw_ki64(j, "edges_added", added);
    jw_ki64(j, "refused_full", w->full);
    jw_ki64(j, "reads", w->reads);
}

static void ssca_teardown(void *state)
{
    struct ssca2 *w = state;
    if (!w)
        return;
    for (int t = 0; w->log && t < w->threads; t++)
        free(w->log[t].edge);
    free(w->log);
    free(w->degree);
    free(w->adj);
    free(w);
}

struct workload wl_ssca2 = {
    .name = "ssca2",
    .help = "  --vertices N        vertices (default 16384)\n"
            "  --edges N           edges to add over all threads (default 262144); later operations only read\n"
            "  --read P            percent of operations that read while edges remain to add (default 50)\n",
    .setup = ssca_setup,
    .worker = ssca_worker,
    .check = ssca_check,
    .json_extra = ssca_json,
    .teardown = ssca_teardown,
};
