/*
 * wl_eventcost.c - `tmbench eventcost`: what one recorded event costs.
 *
 * Times the tracer's event hooks (start, read, write, commit) called
 * back-to-back on a thread attached to the tracer, against bare clock reads
 * (rdtscp, rdtsc, and the tracer's unordered stamp rdpid; rdtsc; rdpid)
 * timed the same way in the same run. Reports the median over many short
 * runs per kind (short runs keep most of them free of a chunk hand-over and
 * of interrupts; the median says what the common case costs). Owns nothing
 * but its measurement; never checks anything (check() is always ok).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "clock.h"
#include "config.h"
#include "trace_buffer.h"
#include "json_writer.h"

#define EC_KINDS 4
#define EC_CLOCKS 3  /* bare clock reads: rdtscp, rdtsc, rdpid; rdtsc; rdpid */

struct ec_state {
    long runs;             /* --runs */
    long batch;            /* --batch: events per timed run */
    int measured;          /* atomic: the first worker measures, others idle */
    double kind_ns[EC_KINDS];
    double all_ns;
    double clock_ns[EC_CLOCKS];
    uint64_t events;
};

static const char *const ec_names[EC_KINDS] = { "start", "read", "write", "commit" };
static const char *const ec_clocks[EC_CLOCKS] = { "rdtscp", "rdtsc", "rdpid_rdtsc" };

static int ec_setup(const struct bench_opts *o, void **state)
{
    struct ec_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return -1;
    s->runs = bench_opt_long(o, "runs", 201, 5, 100000);
    s->batch = bench_opt_long(o, "batch", 1000, 10, 1000000);
    if (bench_opt_error) {
        free(s);
        return -1;
    }
    *state = s;
    return 0;
}

static inline uint64_t ec_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int ec_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double ec_median(double *v, size_t n)
{
    qsort(v, n, sizeof v[0], ec_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static volatile long ec_cell;

/* One timed run of `n` events of `kind` (0..3), or of `n` bare clock reads
 * (kind -1 rdtscp, -2 rdtsc, -3 the bracketed stamp), in ns per event. */
static double ec_run(struct tb_thread *t, int kind, long n, uint64_t *instance)
{
    uint64_t sink = 0;
    uint64_t t0 = ec_ns();
    switch (kind) {
    case 0:
        for (long i = 0; i < n; i++)
            tb_ev_start(t, 1, ++*instance, 0, 0);
        break;
    case 1:
        for (long i = 0; i < n; i++)
            tb_ev_read(t, &ec_cell, (uint64_t)i, 8);
        break;
    case 2:
        for (long i = 0; i < n; i++)
            tb_ev_write(t, &ec_cell, (uint64_t)i, 8);
        break;
    case 3:
        for (long i = 0; i < n; i++)
            tb_ev_commit(t, (uint64_t)i, 2, 1);
        break;
    case -1:
        for (long i = 0; i < n; i++) {
            uint32_t aux;
            sink += clock_rdtscp(&aux) + aux;
        }
        break;
    case -2:
        for (long i = 0; i < n; i++)
            sink += __rdtsc();
        break;
    default:
        for (long i = 0; i < n; i++) {
            uint32_t aux;
            sink += clock_rdtsc_on_cpu(&aux) + aux;
        }
        break;
    }
    uint64_t t1 = ec_ns();
    __asm__ volatile("" : : "r"(sink));
    return (double)(t1 - t0) / (double)n;
}

static void ec_worker(void *state, struct bench_thread *bt)
{
    struct ec_state *s = state;
    if (__atomic_exchange_n(&s->measured, 1, __ATOMIC_ACQ_REL))
        return;
    struct tb_thread t;
    if (tb_attach(&t) != 0)
        return;
    size_t runs = (size_t)s->runs;
    double *all_v = calloc(runs * EC_KINDS, sizeof *all_v);
    double *v[EC_KINDS + EC_CLOCKS];
    int ok = all_v != NULL;
    for (int k = 0; k < EC_KINDS + EC_CLOCKS; k++)
        ok &= (v[k] = calloc(runs, sizeof(double))) != NULL;
    if (ok) {
        uint64_t instance = 0;
        /* Interleaved, so that drift in the machine's state hits all alike. */
        for (size_t r = 0; r < runs; r++) {
            for (int c = 0; c < EC_CLOCKS; c++)
                v[EC_KINDS + c][r] = ec_run(&t, -1 - c, s->batch, &instance);
            for (int k = 0; k < EC_KINDS; k++) {
                v[k][r] = ec_run(&t, k, s->batch, &instance);
                all_v[r * EC_KINDS + (size_t)k] = v[k][r];
            }
            s->events += (uint64_t)s->batch * EC_KINDS;
        }
        for (int k = 0; k < EC_KINDS; k++)
            s->kind_ns[k] = ec_median(v[k], runs);
        for (int c = 0; c < EC_CLOCKS; c++)
            s->clock_ns[c] = ec_median(v[EC_KINDS + c], runs);
        s->all_ns = ec_median(all_v, runs * EC_KINDS);
    }
    free(all_v);
    for (int k = 0; k < EC_KINDS + EC_CLOCKS; k++)
        free(v[k]);
    tb_detach(&t);
    bt->ops = s->events;
}

static int ec_check(void *state, char *msg, size_t cap)
{
    struct ec_state *s = state;
    if (s->clock_ns[0] <= 0) {
        snprintf(msg, cap, "no measurement was taken");
        return 1;
    }
    return 0;
}

static void ec_json(void *state, struct jw *w)
{
    struct ec_state *s = state;
    static const char *const level[] = { "off", "tx", "all" };
    jw_kstr(w, "events_level", level[config.events % 3]);
    jw_ki64(w, "runs", s->runs);
    jw_ki64(w, "batch", s->batch);
    jw_knum(w, "ns_per_event", s->all_ns, 2);
    for (int c = 0; c < EC_CLOCKS; c++) {
        char key[32];
        snprintf(key, sizeof key, "%s_ns", ec_clocks[c]);
        jw_knum(w, key, s->clock_ns[c], 2);
    }
    jw_knum(w, "ratio_to_rdtscp", s->clock_ns[0] > 0 ? s->all_ns / s->clock_ns[0] : 0.0, 3);
    jw_knum(w, "ratio_to_rdtsc", s->clock_ns[1] > 0 ? s->all_ns / s->clock_ns[1] : 0.0, 3);
    for (int k = 0; k < 4; k++) {
        char key[32];
        snprintf(key, sizeof key, "%s_ns", ec_names[k]);
        jw_knum(w, key, s->kind_ns[k], 2);
    }
}

static void ec_teardown(void *state) { free(state); }

const struct workload wl_eventcost = {
    .name = "eventcost",
    .help = "  --runs N    timed runs per event kind (default 201)\n"
            "  --batch N   events per timed run (default 1000)\n",
    .setup = ec_setup,
    .worker = ec_worker,
    .check = ec_check,
    .json_extra = ec_json,
    .teardown = ec_teardown,
};
