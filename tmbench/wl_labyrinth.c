/*
 * wl_labyrinth.c - the maze routing workload: connect --paths (source,
 * destination) pairs in a 3-D grid with paths that do not cross. A worker
 * takes a pair from the shared work list (transaction), snapshots the grid
 * privately (atomic loads, no transaction), finds a shortest route by
 * breadth-first (Lee) expansion, and then in ONE large transaction re-reads
 * every cell of the route and claims them all for its path, or claims
 * nothing and routes again when another path took one of them meanwhile.
 * A pair with no route left in the grid is counted as failed.
 *
 * The workload is finite: a worker stops when every pair has been taken,
 * whatever --duration or --ops say (size a run with --paths and the grid).
 * It owns the grid model and its check; it never writes the grid outside a
 * transaction while workers run.
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "tm.h"
#include "json_writer.h"

enum { LAB_FREE = 0, LAB_ENDPOINT = -1 }; /* grid values; > 0 is a path id */

struct lab_pair {
    long src, dst;
    long len;     /* cells of the route, src first; 0 = not routed */
    long *cells;  /* written by the thread that routed the pair */
};

struct labyrinth {
    long x, y, z, ncells, npaths, sabotage;
    long *grid;             /* transactional during the run */
    struct lab_pair *pairs; /* path id = index + 1 */
    long next;              /* work list position, transactional */
    long routed, failed, retries;
};

static int lab_setup(const struct bench_opts *o, void **state)
{
    struct labyrinth *w = calloc(1, sizeof *w);
    if (!w) {
        fprintf(stderr, "labyrinth: out of memory\n");
        return -1;
    }
    *state = w;
    w->x = bench_opt_long(o, "x", 128, 1, 4096);
    w->y = bench_opt_long(o, "y", 128, 1, 4096);
    w->z = bench_opt_long(o, "z", 3, 1, 4096);
    w->npaths = bench_opt_long(o, "paths", 256, 1, 1L << 20);
    w->sabotage = bench_opt_long(o, "sabotage", 0, 0, 1);
    if (bench_opt_error)
        return -1;
    w->ncells = w->x * w->y * w->z;
    if (w->ncells > (1L << 26) || 2 * w->npaths > w->ncells) {
        fprintf(stderr, "labyrinth: --paths %ld needs %ld distinct endpoints, the %ldx%ldx%ld grid is %s\n",
                w->npaths, 2 * w->npaths, w->x, w->y, w->z, w->ncells > (1L << 26) ? "too large" : "too small");
        return -1;
    }
    w->grid = calloc((size_t)w->ncells, sizeof *w->grid);
    w->pairs = calloc((size_t)w->npaths, sizeof *w->pairs);
    if (!w->grid || !w->pairs) {
        fprintf(stderr, "labyrinth: out of memory for %ld cells\n", w->ncells);
        return -1;
    }
    /* Setup draws from its own stream, independent of the workers. */
    struct bench_thread rng = {.rng = o->seed * 0x9E3779B97F4A7C15ULL + 7};
    for (long i = 0; i < w->npaths; i++) {
        long *ends[2] = {&w->pairs[i].src, &w->pairs[i].dst};
        for (int e = 0; e < 2; e++) {
            long c;
            do
                c = (long)(bench_rand(&rng) % (uint64_t)w->ncells);
            while (w->grid[c] != LAB_FREE);
            w->grid[c] = LAB_ENDPOINT;
            *ends[e] = c;
        }
    }
    return 0;
}

/* The up to 6 grid neighbours of cell c; returns how many. */
static int lab_neighbours(const struct labyrinth *w, long c, long out[6])
{
    long cx = c % w->x, cy = (c / w->x) % w->y, cz = c / (w->x * w->y);
    int n = 0;
    if (cx > 0)
        out[n++] = c - 1;
    if (cx + 1 < w->x)
        out[n++] = c + 1;
    if (cy > 0)
        out[n++] = c - w->x;
    if (cy + 1 < w->y)
        out[n++] = c + w->x;
    if (cz > 0)
        out[n++] = c - w->x * w->y;
    if (cz + 1 < w->z)
        out[n++] = c + w->x * w->y;
    return n;
}

/* A thread's private routing space. */
struct lab_local {
    long *snap, *dist, *fifo, *path;
};

/* Lee expansion on the snapshot from src over free cells to dst, then the
 * trace back along decreasing distance. Returns the route length (cells,
 * src..dst in lp->path) or 0 when dst cannot be reached. */
static long lab_route(const struct labyrinth *w, struct lab_local *lp, long src, long dst)
{
    for (long i = 0; i < w->ncells; i++)
        lp->dist[i] = -1;
    long head = 0, tail = 0, nb[6];
    lp->dist[src] = 0;
    lp->fifo[tail++] = src;
    while (head < tail && lp->dist[dst] < 0) {
        long c = lp->fifo[head++];
        for (int k = lab_neighbours(w, c, nb) - 1; k >= 0; k--) {
            long m = nb[k];
            if (lp->dist[m] < 0 && (lp->snap[m] == LAB_FREE || m == dst)) {
                lp->dist[m] = lp->dist[c] + 1;
                lp->fifo[tail++] = m;
            }
        }
    }
    if (lp->dist[dst] < 0)
        return 0;
    long len = lp->dist[dst] + 1;
    long c = dst;
    for (long i = len - 1; i > 0; i--) {
        lp->path[i] = c;
        int n = lab_neighbours(w, c, nb);
        for (int k = 0; k < n; k++) {
            if (lp->dist[nb[k]] == i - 1) {
                c = nb[k];
                break;
            }
        }
    }
    lp->path[0] = src;
    return len;
}

/* Transactions: own non-inlined functions so that no worker variable sits
 * in the frame that a restart rewinds; results go through pointers. */
static __attribute__((noinline)) void lab_take(struct labyrinth *w, long *pair)
{
    TM_BEGIN("labyrinth-take")
        long i = TM_READ(w->next);
        *pair = i;
        if (i < w->npaths)
            TM_WRITE(w->next, i + 1);
    TM_END;
}

/* Claims every cell of the route for path id, or none of them if any is no
 * longer what the snapshot showed (free, or this path's own endpoints). */
static __attribute__((noinline)) void lab_claim(struct labyrinth *w, const long *path, long len, long id, int *ok)
{
    TM_BEGIN("labyrinth-claim")
        long i;
        for (i = 0; i < len; i++) {
            long expect = i == 0 || i == len - 1 ? LAB_ENDPOINT : LAB_FREE;
            if (TM_READ(w->grid[path[i]]) != expect)
                break;
        }
        *ok = i == len;
        if (i == len)
            for (i = 0; i < len; i++)
                TM_WRITE(w->grid[path[i]], id);
    TM_END;
}

static void lab_worker(void *state, struct bench_thread *bt)
{
    struct labyrinth *w = state;
    size_t bytes = (size_t)w->ncells * sizeof(long);
    struct lab_local lp = {malloc(bytes), malloc(bytes), malloc(bytes), malloc(bytes)};
    long routed = 0, failed = 0, retries = 0, pair;
    if (!lp.snap || !lp.dist || !lp.fifo || !lp.path) {
        fprintf(stderr, "labyrinth: thread %d: out of memory; it routes nothing\n", bt->id);
        goto out;
    }
    for (lab_take(w, &pair); pair < w->npaths; lab_take(w, &pair)) {
        struct lab_pair *p = &w->pairs[pair];
        for (;;) {
            /* Racy by design: the claim transaction validates the route. */
            for (long i = 0; i < w->ncells; i++)
                lp.snap[i] = __atomic_load_n(&w->grid[i], __ATOMIC_RELAXED);
            long len = lab_route(w, &lp, p->src, p->dst);
            if (!len) {
                failed++;
                break;
            }
            int ok = 0;
            lab_claim(w, lp.path, len, pair + 1, &ok);
            if (ok) {
                p->cells = malloc((size_t)len * sizeof(long));
                if (p->cells) {
                    for (long i = 0; i < len; i++)
                        p->cells[i] = lp.path[i];
                    p->len = len;
                }
                routed++;
                break;
            }
            retries++;
        }
        bt->ops++;
    }
out:
    free(lp.snap);
    free(lp.dist);
    free(lp.fifo);
    free(lp.path);
    __atomic_fetch_add(&w->routed, routed, __ATOMIC_RELAXED);
    __atomic_fetch_add(&w->failed, failed, __ATOMIC_RELAXED);
    __atomic_fetch_add(&w->retries, retries, __ATOMIC_RELAXED);
}

static int lab_adjacent(const struct labyrinth *w, long a, long b)
{
    long nb[6];
    int n = lab_neighbours(w, a, nb);
    for (int k = 0; k < n; k++)
        if (nb[k] == b)
            return 1;
    return 0;
}

static int lab_check(void *state, char *msg, size_t cap)
{
    struct labyrinth *w = state;
    if (w->sabotage) {
        for (long i = 0; i < w->npaths; i++) {
            if (w->pairs[i].len > 2) {
                w->grid[w->pairs[i].cells[1]] = LAB_FREE;
                break;
            }
        }
    }
    if (w->next < w->npaths || w->routed + w->failed != w->npaths) {
        snprintf(msg, cap, "%ld pairs taken, %ld routed + %ld failed, of %ld", w->next, w->routed, w->failed,
                 w->npaths);
        return 1;
    }
    long *owned = calloc((size_t)w->npaths + 1, sizeof(long));
    if (!owned) {
        snprintf(msg, cap, "out of memory");
        return 1;
    }
    int bad = 0;
    for (long c = 0; c < w->ncells && !bad; c++) {
        long v = w->grid[c];
        if (v > w->npaths || v < LAB_ENDPOINT) {
            snprintf(msg, cap, "cell %ld holds %ld, not a path id", c, v);
            bad = 1;
        } else if (v > 0) {
            owned[v]++;
        }
    }
    for (long i = 0; i < w->npaths && !bad; i++) {
        const struct lab_pair *p = &w->pairs[i];
        if (!p->len) {
            if (owned[i + 1] || w->grid[p->src] != LAB_ENDPOINT || w->grid[p->dst] != LAB_ENDPOINT) {
                snprintf(msg, cap, "unrouted path %ld owns %ld cells or lost its endpoints", i + 1, owned[i + 1]);
                bad = 1;
            }
            continue;
        }
        if (p->cells[0] != p->src || p->cells[p->len - 1] != p->dst) {
            snprintf(msg, cap, "path %ld does not run from its source to its destination", i + 1);
            bad = 1;
            continue;
        }
        for (long k = 0; k < p->len && !bad; k++) {
            if (k > 0 && !lab_adjacent(w, p->cells[k - 1], p->cells[k])) {
                snprintf(msg, cap, "path %ld jumps from cell %ld to cell %ld", i + 1, p->cells[k - 1], p->cells[k]);
                bad = 1;
            } else if (w->grid[p->cells[k]] != i + 1) {
                snprintf(msg, cap, "cell %ld of path %ld belongs to %ld (overlap or lost claim)", p->cells[k], i + 1,
                         w->grid[p->cells[k]]);
                bad = 1;
            }
        }
        if (!bad && owned[i + 1] != p->len) {
            snprintf(msg, cap, "path %ld has %ld cells but owns %ld in the grid", i + 1, p->len, owned[i + 1]);
            bad = 1;
        }
    }
    free(owned);
    return bad;
}

static void lab_json(void *state, struct jw *j)
{
    struct labyrinth *w = state;
    jw_ki64(j, "x", w->x);
    jw_ki64(j, "y", w->y);
    jw_ki64(j, "z", w->z);
    jw_ki64(j, "paths", w->npaths);
    jw_ki64(j, "routed", w->routed);
    jw_ki64(j, "failed", w->failed);
    jw_ki64(j, "reroutes", w->retries);
}

static void lab_teardown(void *state)
{
    struct labyrinth *w = state;
    if (!w)
        return;
    for (long i = 0; w->pairs && i < w->npaths; i++)
        free(w->pairs[i].cells);
    free(w->pairs);
    free(w->grid);
    free(w);
}

struct workload wl_labyrinth = {
    .name = "labyrinth",
    .help = "  --x N --y N --z N   grid size (default 128 x 128 x 3)\n"
            "  --paths N           pairs to connect (default 256); the run ends when all are taken\n",
    .setup = lab_setup,
    .worker = lab_worker,
    .check = lab_check,
    .json_extra = lab_json,
    .teardown = lab_teardown,
};
