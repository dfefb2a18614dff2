/*
 * intset.c - the integer-set benchmark skeleton (see intset.h): options,
 * prefill, the random operation mix and the final size/invariant check.
 *
 * Owns: counting. It must never touch a set's memory itself; everything goes
 * through the structure's operations.
 */
#include "intset.h"
#include "json_writer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One thread's successful updates, on its own cache line. */
struct intset_counts {
    uint64_t inserts;
    uint64_t removes;
    uint64_t hits;
} __attribute__((aligned(64)));

struct intset {
    const struct intset_ops *ops;
    void *set;
    long range;
    long update_pct;
    long initial;
    int threads;
    long final_size;
    struct intset_counts *counts;
};

int intset_setup(const struct intset_ops *ops, const struct bench_opts *o, void **state)
{
    long range = bench_opt_long(o, "range", 1024, 1, 1L << 40);
    long update = bench_opt_long(o, "update", 20, 0, 100);
    long initial = bench_opt_long(o, "initial", range / 2, 0, range);
    if (bench_opt_error)
        return -1;
    struct intset *s = calloc(1, sizeof *s);
    if (!s) {
        fprintf(stderr, "tmbench: out of memory\n");
        return -1;
    }
    s->counts = aligned_alloc(64, sizeof *s->counts * (size_t)o->threads);
    if (!s->counts) {
        free(s);
        fprintf(stderr, "tmbench: out of memory\n");
        return -1;
    }
    memset(s->counts, 0, sizeof *s->counts * (size_t)o->threads);
    s->ops = ops;
    s->range = range;
    s->update_pct = update;
    s->initial = initial;
    s->threads = o->threads;
    s->final_size = -1;
    s->set = ops->create(o, range);
    *state = s;
    if (!s->set || bench_opt_error)
        return -1;

    /* Prefill with distinct random keys, from a stream of its own so that the
     * workers' streams do not depend on the prefill. */
    struct bench_thread fill = { .rng = (o->seed ^ 0xA0761D6478BD642FULL) | 1 };
    long have = 0;
    while (have < initial) {
        long key = (long)bench_rand_below(&fill, (uint64_t)range);
        have += ops->insert(s->set, key);
    }
    return 0;
}

void intset_worker(void *state, struct bench_thread *bt)
{
    struct intset *s = state;
    struct intset_counts c = { 0, 0, 0 };
    const uint64_t range = (uint64_t)s->range;
    const uint64_t update = (uint64_t)s->update_pct;
    while (bench_continue(bt)) {
        long key = (long)bench_rand_below(bt, range);
        uint64_t dice = bench_rand_below(bt, 200);
        if (dice < update)
            c.inserts += (uint64_t)s->ops->insert(s->set, key);
        else if (dice < 2 * update)
            c.removes += (uint64_t)s->ops->remove(s->set, key);
        else
            c.hits += (uint64_t)s->ops->contains(s->set, key);
        bt->ops++;
    }
    s->counts[bt->id] = c;
}

int intset_check(void *state, char *msg, size_t cap)
{
    struct intset *s = state;
    long size = s->ops->check(s->set, msg, cap);
    if (size < 0)
        return -1;
    s->final_size = size;
    int64_t expect = s->initial;
    for (int i = 0; i < s->threads; i++)
        expect += (int64_t)s->counts[i].inserts - (int64_t)s->counts[i].removes;
    if (size != expect) {
        snprintf(msg, cap, "size %ld != prefill %ld + inserts - removes = %" PRId64, size,
                 s->initial, expect);
        return -1;
    }
    return 0;
}

void intset_json_extra(void *state, struct jw *w)
{
    struct intset *s = state;
    uint64_t ins = 0, rem = 0, hits = 0;
    for (int i = 0; i < s->threads; i++) {
        ins += s->counts[i].inserts;
        rem += s->counts[i].removes;
        hits += s->counts[i].hits;
    }
    jw_ki64(w, "range", s->range);
    jw_ki64(w, "update", s->update_pct);
    jw_ki64(w, "initial", s->initial);
    jw_ki64(w, "size", s->final_size);
    jw_ku64(w, "inserts", ins);
    jw_ku64(w, "removes", rem);
    jw_ku64(w, "found", hits);
    if (s->ops->json_extra)
        s->ops->json_extra(s->set, w);
}

void intset_teardown(void *state)
{
    struct intset *s = state;
    if (s->set)
        s->ops->destroy(s->set);
    free(s->counts);
    free(s);
}
