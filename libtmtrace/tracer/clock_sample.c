/*
 * clock_sample.c - sampling phases, the in-run bracket and the frequency fit
 * (see clock_sample.h). Never called on the event path; never changes the
 * affinity of the calling thread (the phases pin threads of their own).
 */
#include "clock_sample.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "config.h"
#include "error.h"
#include "skew.h"

static inline clockid_t cs_clockid(int ref_clock)
{
    return ref_clock == CONFIG_CLOCK_MONOTONIC_RAW ? CLOCK_MONOTONIC_RAW : CLOCK_MONOTONIC;
}

static inline uint64_t cs_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int cs_cpus(int *cpus, int max)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return error_set_errno(errno, "sched_getaffinity");
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < max; c++)
        if (CPU_ISSET(c, &set))
            cpus[n++] = c;
    if (n == 0)
        return error_set("sched_getaffinity: no usable CPU");
    return n;
}

/* One bracket on the calling thread. Returns 1 and fills *out (phase, cpu,
 * tsc = truth_tsc, ref_ns, width; thread 0) if both rdtscp ran on the same
 * CPU, else 0 (the thread migrated in between). */
static int cs_bracket(int ref_clock, struct tf_sample *out)
{
    clockid_t id = cs_clockid(ref_clock);
    uint32_t a1, a2;
    uint64_t t1 = clock_rdtscp(&a1);
    uint64_t ns = cs_ns(id);
    uint64_t t2 = clock_rdtscp(&a2);
    if (tf_aux_cpu(a1) != tf_aux_cpu(a2) || t2 < t1)
        return 0;
    memset(out, 0, sizeof *out);
    out->tsc = out->truth_tsc = t1 + (t2 - t1) / 2;
    out->ref_ns = ns;
    out->width = (uint32_t)((t2 - t1) > UINT32_MAX ? UINT32_MAX : (t2 - t1));
    out->cpu = (uint16_t)tf_aux_cpu(a1);
    return 1;
}

/* About this many samples per CPU and phase: enough for a fit, small enough
 * to write at once. The gap between brackets is the "little dummy work". */
#define CS_TARGET 2000

struct cs_job {
    int cpu;
    unsigned phase;
    int ref_clock;
    int64_t ms;
    struct cs_set got;
    int err;
};

static int cs_push(struct cs_set *set, const struct tf_sample *s)
{
    if (set->n == set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 1024;
        struct tf_sample *p = realloc(set->s, cap * sizeof *p);
        if (p == NULL)
            return -1;
        set->s = p;
        set->cap = cap;
    }
    set->s[set->n++] = *s;
    return 0;
}

static void *cs_worker(void *arg)
{
    struct cs_job *j = arg;
    /* Named, so that a profile tells the phases' CPU apart (tmbench/writer-cost --perf). */
    (void)pthread_setname_np(pthread_self(), "tmt-sample");
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(j->cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        j->err = errno;
        return NULL;
    }
    clockid_t id = cs_clockid(j->ref_clock);
    uint64_t start = cs_ns(id), stop = start + (uint64_t)j->ms * 1000000u;
    uint64_t gap = (uint64_t)j->ms * 1000000u / CS_TARGET;
    volatile uint64_t sink = 0;
    for (uint64_t now = start, next = start; now < stop; now = cs_ns(id)) {
        if (now < next) {
            sink = sink * 6364136223846793005u + 1; /* dummy work between brackets */
            continue;
        }
        next = now + gap;
        struct tf_sample s;
        if (cs_bracket(j->ref_clock, &s) && s.cpu == (unsigned)j->cpu) {
            s.phase = (uint8_t)j->phase;
            if (cs_push(&j->got, &s) != 0) {
                j->err = ENOMEM;
                return NULL;
            }
        }
    }
    return NULL;
}

int cs_phase(unsigned phase, const int *cpus, int ncpus, int64_t ms, int ref_clock, struct cs_set *out)
{
    struct cs_job *jobs = calloc((size_t)ncpus, sizeof *jobs);
    pthread_t *tids = calloc((size_t)ncpus, sizeof *tids);
    int rc = 0;
    if (jobs == NULL || tids == NULL) {
        free(jobs);
        free(tids);
        return error_set("clock sampling: out of memory");
    }
    /* The sampling threads must not take the program's SIGTERM/SIGINT. */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int started = 0;
    for (int i = 0; i < ncpus; i++) {
        jobs[i] = (struct cs_job){ .cpu = cpus[i], .phase = phase, .ref_clock = ref_clock, .ms = ms };
        int e = pthread_create(&tids[i], NULL, cs_worker, &jobs[i]);
        if (e != 0) {
            rc = error_set_errno(e, "clock sampling: pthread_create");
            break;
        }
        started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    for (int i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    for (int i = 0; i < started; i++) {
        if (rc == 0 && jobs[i].err != 0)
            rc = error_set_errno(jobs[i].err, "clock sampling on CPU %d", jobs[i].cpu);
        for (size_t k = 0; rc == 0 && k < jobs[i].got.n; k++)
            if (cs_push(out, &jobs[i].got.s[k]) != 0)
                rc = error_set("clock sampling: out of memory");
        free(jobs[i].got.s);
    }
    free(jobs);
    free(tids);
    return rc;
}

int cs_inrun(int ref_clock, uint32_t thread, struct tf_sample *out)
{
    if (!cs_bracket(ref_clock, out))
        return 0;
    out->phase = TF_PHASE_INRUN;
    out->thread = thread;
    out->tsc = skew_apply(out->truth_tsc, out->cpu);
    return 1;
}

void cs_apply_skew(struct tf_sample *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        s[i].tsc = skew_apply(s[i].truth_tsc, s[i].cpu);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One CPU's least-squares sums, centred on its first sample (centred sums
 * keep the fit exact enough in doubles). */
struct cs_fit {
    uint64_t t0, r0;
    size_t m;
    double sx, sy, sxx, sxy, span;
};

#define CS_FIT_CPUS 4096u

uint64_t cs_fit_hz(const struct tf_sample *s, size_t n)
{
    /* One pass over the samples, each CPU's sums in its own slot: a pass
     * per possible CPU cost about 10 ms of every tmt_init. */
    struct cs_fit *fit = calloc(CS_FIT_CPUS, sizeof *fit);
    if (fit == NULL)
        return 0; /* the caller's two-point estimate */
    for (size_t i = 0; i < n; i++) {
        if (s[i].cpu >= CS_FIT_CPUS)
            continue;
        struct cs_fit *f = &fit[s[i].cpu];
        if (f->m++ == 0) {
            f->t0 = s[i].truth_tsc;
            f->r0 = s[i].ref_ns;
        }
        double x = (double)(int64_t)(s[i].ref_ns - f->r0), y = (double)(int64_t)(s[i].truth_tsc - f->t0);
        f->sx += x;
        f->sy += y;
        f->sxx += x * x;
        f->sxy += x * y;
        f->span = x > f->span ? x : f->span;
    }
    double slopes[256];
    int ns = 0;
    for (unsigned cpu = 0; cpu < CS_FIT_CPUS && ns < 256; cpu++) {
        const struct cs_fit *f = &fit[cpu];
        if (f->m < 2)
            continue;
        double den = (double)f->m * f->sxx - f->sx * f->sx;
        if (den <= 0 || f->span < 1e6) /* less than a millisecond: too short to fit */
            continue;
        slopes[ns++] = ((double)f->m * f->sxy - f->sx * f->sy) / den; /* ticks per ns */
    }
    free(fit);
    if (ns == 0)
        return 0;
    qsort(slopes, (size_t)ns, sizeof slopes[0], cmp_double);
    return (uint64_t)(slopes[ns / 2] * 1e9 + 0.5);
}

void cs_set_free(struct cs_set *set)
{
    free(set->s);
    set->s = NULL;
    set->n = set->cap = 0;
}
