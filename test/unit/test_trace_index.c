/*
 * test_trace_index.c - the merge of tools/reader/trace_index.c, as tmsync
 * uses it with decoding threads: a held run's events stay where they were
 * decoded until the hold is released, however far the merge goes on, and
 * the merge asks the holder (its `starved` callback) before it waits for a
 * chunk a hold keeps; with keys, the runs and the order are those without.
 *
 * Owns: its trace in the test directory.
 * Never: depends on which thread decodes which chunk.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"
#include "trace_gen.h"
#include "trace_index.h"

#define PER_THREAD 40000
#define CHUNK 1024   /* small chunks: the merge passes many windows of them */

/* Two threads of interleaved stamps (runs of 1..5 events, some equal), in
 * CHUNK-event chunks. */
static const char *make_trace(void)
{
    const char *path = tu_path("index-holds.bin");
    struct tg_thread th[2] = { { 0 }, { 0 } };
    uint64_t ts = 1000;
    for (size_t i = 0; i < 2 * PER_THREAD; i++) {
        unsigned t = (i / (1 + i % 5)) % 2;
        if (th[t].n == PER_THREAD)
            t = 1 - t;
        ts += i % 3;   /* equal stamps too: ties go by thread, then seq */
        tg_add(&th[t], ts, ts, t, TF_EV_READ, 8, 1 + t, 0x1000 + 8 * (i % 512), i);
    }
    struct tf_header h = tg_header(1000000000, 2, 0);
    assert_int_equal(tg_write(path, &h, th, 2, NULL, 0, 0, CHUNK), 0);
    tg_free(&th[0]);
    tg_free(&th[1]);
    return path;
}

/* A held run and a copy of its events as the merge gave them. */
struct held {
    const struct tf_event *ev;
    struct tf_event *copy;
    size_t n;
    struct ti_slot *h;   /* NULL: the chunk was held under this tag already */
};

struct holder {
    struct ti_merge *m;
    struct held *runs;
    size_t n, cap, checked;   /* runs[checked..n) not yet compared and let go */
    uint64_t tag;
    unsigned starved;
    int changed;              /* a held run's events changed */
};

/* Compares every held run with its copy, then releases the holds. */
static void check_and_release(void *arg)
{
    struct holder *x = arg;
    for (size_t i = x->checked; i < x->n; i++)
        x->changed |= memcmp(x->runs[i].ev, x->runs[i].copy, x->runs[i].n * sizeof *x->runs[i].ev) != 0;
    for (size_t i = x->checked; i < x->n; i++) {
        if (x->runs[i].h)
            ti_merge_release(x->m, x->runs[i].h);
        free(x->runs[i].copy);
    }
    x->checked = x->n;
    x->tag++;
    x->starved++;
}

/* The merged (ts, thread, seq) of the whole trace, holding every run when
 * `hold`; keys from a map/order pair that sets them when `keys`. */
static uint64_t *merge_all(const char *path, unsigned jobs, int hold, int keys, struct holder *x, size_t *count);

static int map_raw(void *ctx, unsigned worker, struct tf_event *ev, uint64_t *keep, size_t n)
{
    (void)ctx, (void)worker;
    for (size_t i = 0; i < n; i++)
        keep[i] = ev[i].ts;
    return 0;
}

static int order_keys(void *ctx, size_t source, struct tf_event *ev, const uint64_t *keep, size_t n)
{
    (void)ctx, (void)source, (void)keep;
    uint64_t *key = (uint64_t *)(uintptr_t)keep;
    for (size_t i = 0; i < n; i++)
        key[i] = ev[i].ts;
    return 0;
}

static uint64_t *merge_all(const char *path, unsigned jobs, int hold, int keys, struct holder *x, size_t *count)
{
    struct trace_index ix;
    uint64_t skipped;
    assert_int_equal(ti_load(path, 0, &ix, &skipped), 0);
    struct tf_reader *r = tf_open(path, 0);
    assert_non_null(r);
    struct ti_merge_opts o = { .jobs = jobs, .path = path, .workers = jobs > 1 ? jobs : 0,
                               .starved = check_and_release, .starved_arg = x, .keys = keys,
                               .map = keys ? map_raw : NULL, .order = keys ? order_keys : NULL };
    x->m = ti_merge_create(r, &ix, &o);
    assert_non_null(x->m);
    uint64_t *out = calloc(3 * ix.events, sizeof *out);
    assert_non_null(out);
    const struct tf_event *ev;
    size_t k, n = 0;
    int rc;
    while ((rc = ti_merge_run(x->m, &ev, &k, 64)) == 1) {
        for (size_t i = 0; i < k && n < ix.events; i++, n++) {
            out[3 * n] = ev[i].ts;
            out[3 * n + 1] = ev[i].thread;
            out[3 * n + 2] = ev[i].seq;
        }
        if (!hold)
            continue;
        assert_int_equal(ti_grow((void **)&x->runs, &x->cap, x->n + 1, sizeof *x->runs), 0);
        struct held *h = &x->runs[x->n++];
        h->ev = ev;
        h->n = k;
        h->copy = malloc(k * sizeof *ev);
        assert_non_null(h->copy);
        memcpy(h->copy, ev, k * sizeof *ev);
        h->h = ti_merge_hold(x->m, x->tag);
    }
    assert_int_equal(rc, 0);
    check_and_release(x);
    ti_merge_free(x->m);
    tf_close(r);
    *count = n;
    assert_int_equal(n, ix.events);
    ti_free(&ix);
    return out;
}

static void a_held_run_stays_in_place_until_released(void **st)
{
    (void)st;
    const char *path = make_trace();
    for (unsigned jobs = 1; jobs <= 3; jobs += 2) {
        struct holder x = { .tag = 1 };
        size_t n;
        free(merge_all(path, jobs, 1, 0, &x, &n));
        print_message("jobs %u: %zu runs held, merge starved %u times\n", jobs, x.n, x.starved);
        assert_false(x.changed);
        /* the merge went a window past held chunks many times, and asked each time */
        assert_true(x.starved > 2 * PER_THREAD / CHUNK / 16);
        free(x.runs);
    }
}

static void runs_compared_on_keys_merge_in_the_same_order(void **st)
{
    (void)st;
    const char *path = make_trace();
    struct holder a = { .tag = 1 }, b = { .tag = 1 };
    size_t na, nb;
    uint64_t *plain = merge_all(path, 1, 0, 0, &a, &na);
    uint64_t *keyed = merge_all(path, 3, 0, 1, &b, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(plain, keyed, 3 * na * sizeof *plain);
    for (size_t i = 1; i < na; i++)
        assert_true(plain[3 * (i - 1)] <= plain[3 * i]);
    free(plain);
    free(keyed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_held_run_stays_in_place_until_released),
        cmocka_unit_test(runs_compared_on_keys_merge_in_the_same_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
