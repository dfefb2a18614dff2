/*
 * bench.h - the tmbench driver's contract with its workloads.
 *
 * A workload is a `struct workload` named wl_<name> in wl_<name>.c. The
 * driver (bench.c, tmbench.c) parses the common options, calls setup() once,
 * runs worker() in `threads` threads (each entered into the TM runtime) until
 * the duration ends or the ops budget is spent, calls check(), prints one
 * JSON line and exits non-zero when the check fails.
 *
 * Common options: --threads N, --duration S, --ops N (total over threads),
 * --seed N, --pin, plus workload options (--key value), which setup() reads with
 * bench_opt_*().
 */
#ifndef TMBENCH_BENCH_H
#define TMBENCH_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct bench_opts {
    int threads;        /* --threads, default 1 */
    double duration;    /* --duration seconds, default 1 (ignored if ops > 0) */
    uint64_t ops;       /* --ops total operations, 0 = run for duration */
    uint64_t seed;      /* --seed, default 1 */
    int pin;            /* --pin: worker i on one CPU of the affinity mask */
    int argc;           /* workload options, as given */
    char **argv;
};

/* Per-thread context handed to worker(). */
struct bench_thread {
    int id;                 /* 0 .. threads-1 */
    uint64_t rng;           /* per-thread random state, seeded from --seed and id */
    uint64_t ops;           /* operations done by this thread (the worker counts) */
    const struct bench_opts *opts;
    /* driver-private */
    volatile int *stop;
    uint64_t ops_budget;    /* this thread's share of --ops, 0 = unlimited */
};

/* True while the worker should do another operation. */
static inline int bench_continue(const struct bench_thread *bt)
{
    if (bt->ops_budget)
        return bt->ops < bt->ops_budget;
    return !__atomic_load_n(bt->stop, __ATOMIC_RELAXED);
}

/* xorshift64*: fast per-thread random numbers. */
static inline uint64_t bench_rand(struct bench_thread *bt)
{
    uint64_t x = bt->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    bt->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}
static inline uint64_t bench_rand_below(struct bench_thread *bt, uint64_t n)
{
    return n ? bench_rand(bt) % n : 0;
}

struct jw;

struct workload {
    const char *name;
    const char *help;   /* one line per option: "  --range N   key range (default 1024)\n" */
    /* Parses workload options (bench_opt_*) and builds the shared state.
     * Returns 0, or -1 after printing a one-line error. */
    int (*setup)(const struct bench_opts *o, void **state);
    /* Runs operations until bench_continue() is false. */
    void (*worker)(void *state, struct bench_thread *bt);
    /* Verifies the final state: 0 = correct, else writes why into msg. */
    int (*check)(void *state, char *msg, size_t cap);
    /* Optional: extra members of the JSON line, written into its object. */
    void (*json_extra)(void *state, struct jw *w);
    void (*teardown)(void *state);
};

/* Workload options: --name value. Unknown options are an error reported by
 * the driver after setup (every option must be consumed by a bench_opt call). */
long bench_opt_long(const struct bench_opts *o, const char *name, long def, long min, long max);
double bench_opt_double(const struct bench_opts *o, const char *name, double def, double min, double max);
const char *bench_opt_str(const struct bench_opts *o, const char *name, const char *def);
/* Set when an option had a bad value; setup() should return -1. */
extern int bench_opt_error;

/* ---- the driver (bench.c), called by tmbench.c ------------------------- */

/* The backend this binary was built for: "libtmtrace", "libitm" or "mutex". */
extern const char *const bench_backend;

/* Runs one workload: argv[0] is the workload name, the rest its options.
 * Prints the JSON line on stdout. Returns the exit status: 0 ok, 1 check
 * failed (or the run could not happen), 2 bad options. */
int bench_run(const struct workload *wl, int argc, char **argv);

/* Prints the common options and, when wl is not NULL, the workload's own. */
void bench_usage(FILE *out, const struct workload *wl);

#endif
