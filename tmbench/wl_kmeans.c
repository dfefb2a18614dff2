/*
 * wl_kmeans.c - the clustering workload. Setup scatters points around
 * --clusters true centres. Each iteration, workers take chunks of points
 * from a shared dispenser (transaction), assign each point to its nearest
 * current centre (no transaction: centres do not change during the phase)
 * and add it to that centre's accumulators (one small transaction per point:
 * float sums and a count). Between phases, thread 0 turns the sums into the
 * new centres. A run iterates until no point changes cluster or
 * --iterations; runs repeat from the same start while the driver says to
 * continue (at least one run).
 *
 * Coordinates are multiples of 1/1024 and small, so every partial sum is
 * exact in a double: the parallel result does not depend on the order of
 * additions and must equal the sequential run of check() bit for bit.
 *
 * Owns the clustering and its check; it never reads accumulators outside a
 * transaction while a phase runs.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tm.h"
#include "json_writer.h"

enum { KM_MAX_DIMS = 64, KM_CHUNK = 32 };

struct kmeans {
    long npoints, dims, k, max_iter, sabotage;
    int threads;
    double *points;   /* npoints x dims */
    double *init;     /* k x dims: the starting centres of every run */
    double *centres;  /* k x dims: written by thread 0 between phases only */
    double *sum;      /* k x dims accumulators, transactional during phases */
    long *count;      /* k, transactional during phases */
    int *member;      /* per point; each point is handled by one thread per phase */
    long next;        /* chunk dispenser, transactional */
    long changed;     /* membership changes this phase, transactional */
    pthread_barrier_t barrier;
    int barrier_ready;
    int phase_done, run_again; /* thread 0's decisions, read after a barrier */
    long iterations, runs;
};

/* Uniform in [-half, half], quantised to 1/1024. */
static double km_uniform(struct bench_thread *s, long half)
{
    long span = 2 * half * 1024 + 1;
    return (double)((long)(bench_rand(s) % (uint64_t)span) - half * 1024) / 1024.0;
}

static int km_setup(const struct bench_opts *o, void **state)
{
    struct kmeans *w = calloc(1, sizeof *w);
    if (!w) {
        fprintf(stderr, "kmeans: out of memory\n");
        return -1;
    }
    *state = w;
    w->npoints = bench_opt_long(o, "points", 16384, 1, 1L << 20);
    w->dims = bench_opt_long(o, "dims", 8, 1, KM_MAX_DIMS);
    w->k = bench_opt_long(o, "clusters", 15, 1, 4096);
    w->max_iter = bench_opt_long(o, "iterations", 50, 1, 100000);
    w->sabotage = bench_opt_long(o, "sabotage", 0, 0, 1);
    if (bench_opt_error)
        return -1;
    if (w->k > w->npoints) {
        fprintf(stderr, "kmeans: --clusters %ld exceeds --points %ld\n", w->k, w->npoints);
        return -1;
    }
    size_t n = (size_t)w->npoints, d = (size_t)w->dims, k = (size_t)w->k;
    w->threads = o->threads;
    w->points = malloc(n * d * sizeof(double));
    w->init = malloc(k * d * sizeof(double));
    w->centres = malloc(k * d * sizeof(double));
    w->sum = calloc(k * d, sizeof(double));
    w->count = calloc(k, sizeof(long));
    w->member = malloc(n * sizeof(int));
    double *truth = malloc(k * d * sizeof(double));
    if (!w->points || !w->init || !w->centres || !w->sum || !w->count || !w->member || !truth) {
        free(truth);
        fprintf(stderr, "kmeans: out of memory for %ld points\n", w->npoints);
        return -1;
    }
    /* Setup draws from its own stream, independent of the workers. */
    struct bench_thread rng = {.rng = o->seed * 0x9E3779B97F4A7C15ULL + 5};
    for (size_t i = 0; i < k * d; i++)
        truth[i] = km_uniform(&rng, 50);
    for (size_t p = 0; p < n; p++) {
        const double *c = truth + (bench_rand(&rng) % k) * d;
        for (size_t j = 0; j < d; j++)
            w->points[p * d + j] = c[j] + km_uniform(&rng, 2) + km_uniform(&rng, 2) + km_uniform(&rng, 2);
    }
    free(truth);
    for (size_t c = 0; c < k; c++)
        memcpy(w->init + c * d, w->points + (c * n / k) * d, d * sizeof(double));
    if (pthread_barrier_init(&w->barrier, NULL, (unsigned)w->threads)) {
        fprintf(stderr, "kmeans: cannot create a barrier for %d threads\n", w->threads);
        return -1;
    }
    w->barrier_ready = 1;
    return 0;
}

/* The nearest centre by squared distance; ties go to the lowest index. */
static int km_nearest(const double *p, const double *centres, long k, long d)
{
    int best = 0;
    double best_d = 0;
    for (long c = 0; c < k; c++) {
        double dist = 0;
        for (long j = 0; j < d; j++) {
            double x = p[j] - centres[c * d + j];
            dist += x * x;
        }
        if (c == 0 || dist < best_d) {
            best = (int)c;
            best_d = dist;
        }
    }
    return best;
}

/* New centres from the accumulators (an empty cluster keeps its centre),
 * then clears them. Shared by the parallel run and the sequential reference. */
static void km_recompute(double *centres, double *sum, long *count, long k, long d)
{
    for (long c = 0; c < k; c++) {
        for (long j = 0; j < d; j++) {
            if (count[c])
                centres[c * d + j] = sum[c * d + j] / (double)count[c];
            sum[c * d + j] = 0;
        }
        count[c] = 0;
    }
}

/* Transactions: own non-inlined functions so that no worker variable sits
 * in the frame that a restart rewinds; results go through pointers. */
static __attribute__((noinline)) void km_take_chunk(struct kmeans *w, long *start)
{
    TM_BEGIN("kmeans-chunk")
        long s = TM_READ(w->next);
        *start = s;
        if (s < w->npoints)
            TM_WRITE(w->next, s + KM_CHUNK);
    TM_END;
}

static __attribute__((noinline)) void km_accumulate(struct kmeans *w, long c, const double *p)
{
    TM_BEGIN("kmeans-update")
        double *s = w->sum + c * w->dims;
        for (long j = 0; j < w->dims; j++)
            TM_WRITE_F(s[j], TM_READ_F(s[j]) + p[j]);
        TM_WRITE(w->count[c], TM_READ(w->count[c]) + 1);
    TM_END;
}

static __attribute__((noinline)) void km_add_changed(struct kmeans *w, long n)
{
    TM_BEGIN("kmeans-delta")
        TM_WRITE(w->changed, TM_READ(w->changed) + n);
    TM_END;
}

static void km_worker(void *state, struct bench_thread *bt)
{
    struct kmeans *w = state;
    const long d = w->dims;
    for (;;) {
        if (bt->id == 0) {
            memcpy(w->centres, w->init, (size_t)(w->k * d) * sizeof(double));
            for (long p = 0; p < w->npoints; p++)
                w->member[p] = -1;
            w->iterations = 0;
        }
        pthread_barrier_wait(&w->barrier);
        do {
            long changed = 0, start;
            for (km_take_chunk(w, &start); start < w->npoints; km_take_chunk(w, &start)) {
                long end = start + KM_CHUNK < w->npoints ? start + KM_CHUNK : w->npoints;
                for (long p = start; p < end; p++) {
                    const double *pt = w->points + p * d;
                    int c = km_nearest(pt, w->centres, w->k, d);
                    if (w->member[p] != c) {
                        w->member[p] = c;
                        changed++;
                    }
                    km_accumulate(w, c, pt);
                    bt->ops++;
                }
            }
            km_add_changed(w, changed);
            pthread_barrier_wait(&w->barrier);
            if (bt->id == 0) {
                km_recompute(w->centres, w->sum, w->count, w->k, d);
                w->iterations++;
                w->phase_done = w->changed == 0 || w->iterations >= w->max_iter;
                w->changed = 0;
                w->next = 0;
            }
            pthread_barrier_wait(&w->barrier);
        } while (!w->phase_done);
        if (bt->id == 0) {
            w->runs++;
            w->run_again = bench_continue(bt);
        }
        pthread_barrier_wait(&w->barrier);
        if (!w->run_again)
            break;
    }
}

static int km_check(void *state, char *msg, size_t cap)
{
    struct kmeans *w = state;
    const long d = w->dims, k = w->k;
    if (w->sabotage)
        w->centres[0] += 1.0;
    double *ref = malloc((size_t)(k * d) * sizeof(double));
    double *sum = calloc((size_t)(k * d), sizeof(double));
    long *count = calloc((size_t)k, sizeof(long));
    int *member = malloc((size_t)w->npoints * sizeof(int));
    int bad = 0;
    if (!ref || !sum || !count || !member) {
        snprintf(msg, cap, "out of memory for the sequential reference");
        bad = 1;
        goto out;
    }
    memcpy(ref, w->init, (size_t)(k * d) * sizeof(double));
    for (long p = 0; p < w->npoints; p++)
        member[p] = -1;
    long iter = 0, changed;
    do {
        changed = 0;
        for (long p = 0; p < w->npoints; p++) {
            const double *pt = w->points + p * d;
            int c = km_nearest(pt, ref, k, d);
            changed += member[p] != c;
            member[p] = c;
            for (long j = 0; j < d; j++)
                sum[c * d + j] += pt[j];
            count[c]++;
        }
        km_recompute(ref, sum, count, k, d);
        iter++;
    } while (changed && iter < w->max_iter);
    if (iter != w->iterations) {
        snprintf(msg, cap, "the run took %ld iterations, the sequential reference %ld", w->iterations, iter);
        bad = 1;
        goto out;
    }
    for (long i = 0; i < k * d; i++) {
        double diff = w->centres[i] - ref[i];
        if (diff > 1e-9 || diff < -1e-9) {
            snprintf(msg, cap, "centre %ld coordinate %ld is %.9g, the sequential reference says %.9g", i / d,
                     i % d, w->centres[i], ref[i]);
            bad = 1;
            break;
        }
    }
out:
    free(ref);
    free(sum);
    free(count);
    free(member);
    return bad;
}

static void km_json(void *state, struct jw *j)
{
    struct kmeans *w = state;
    jw_ki64(j, "points", w->npoints);
    jw_ki64(j, "dims", w->dims);
    jw_ki64(j, "clusters", w->k);
    jw_ki64(j, "iterations", w->iterations);
    jw_ki64(j, "runs", w->runs);
}

static void km_teardown(void *state)
{
    struct kmeans *w = state;
    if (!w)
        return;
    if (w->barrier_ready)
        pthread_barrier_destroy(&w->barrier);
    free(w->points);
    free(w->init);
    free(w->centres);
    free(w->sum);
    free(w->count);
    free(w->member);
    free(w);
}

struct workload wl_kmeans = {
    .name = "kmeans",
    .help = "  --points N          points to cluster (default 16384)\n"
            "  --dims N            coordinates per point, 1..64 (default 8)\n"
            "  --clusters K        clusters; fewer clusters = more contention (default 15)\n"
            "  --iterations N      at most N iterations per run (default 50); runs repeat while time/ops remain\n",
    .setup = km_setup,
    .worker = km_worker,
    .check = km_check,
    .json_extra = km_json,
    .teardown = km_teardown,
};
