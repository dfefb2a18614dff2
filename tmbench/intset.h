/*
 * intset.h - the integer-set benchmark shared by the list, rbtree and hash
 * workloads: options (--range, --update, --initial), prefill, the operation
 * mix, per-thread success counts and the size check.
 *
 * Owns: the parts of an integer-set workload that do not depend on the data
 * structure. A structure supplies the operations below; each operation is
 * one whole transaction, so the skeleton never runs inside a transaction and
 * never calls through a function pointer from transactional code.
 */
#ifndef TMBENCH_INTSET_H
#define TMBENCH_INTSET_H

#include "bench.h"

struct intset_ops {
    /* Builds an empty set; may read its own options (bench_opt_*). NULL after
     * printing a one-line error. */
    void *(*create)(const struct bench_opts *o, long range);
    /* Transactions: 1 when the set changed (insert, remove) / holds the key. */
    int (*insert)(void *set, long key);
    int (*remove)(void *set, long key);
    int (*contains)(void *set, long key);
    /* Walks the quiescent set: returns its size, or -1 with the broken
     * invariant in msg. */
    long (*check)(void *set, char *msg, size_t cap);
    /* Optional extra JSON members of the structure (no braces, may be ""). */
    void (*json_extra)(void *set, struct jw *w);   /* more members of the JSON line */
    void (*destroy)(void *set);
};

/* The workload callbacks, for a `struct workload` whose setup calls
 * intset_setup with the structure's operations. */
int intset_setup(const struct intset_ops *ops, const struct bench_opts *o, void **state);
void intset_worker(void *state, struct bench_thread *bt);
int intset_check(void *state, char *msg, size_t cap);
void intset_json_extra(void *state, struct jw *w);
void intset_teardown(void *state);

/* Defines the workload `wl` (e.g. wl_list) named `name` over a structure's
 * operations: a definition, which no function can generate. */
#define INTSET_WORKLOAD(wl, name_, ops_, help_)                                      \
    static int wl##_setup(const struct bench_opts *o, void **state)                  \
    {                                                                                \
        return intset_setup(&(ops_), o, state);                                      \
    }                                                                                \
    const struct workload wl = {                                                     \
        .name = (name_), .help = (help_), .setup = wl##_setup,                       \
        .worker = intset_worker, .check = intset_check,                              \
        .json_extra = intset_json_extra, .teardown = intset_teardown,                \
    }

#define INTSET_HELP                                                                  \
    "  --range N      keys are drawn from [0, N) (default 1024)\n"                   \
    "  --update P     percent of operations that update, half insert, half remove (default 20)\n" \
    "  --initial N    keys inserted before the run (default range/2)\n"

#endif
