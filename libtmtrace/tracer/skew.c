/*
 * skew.c - TMTRACE_SKEW parsing, the exact injection function and the forced
 * migrations of TMTRACE_MIGRATE (see skew.h). Never allocates, never prints.
 */
#include "skew.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"
#include "trace_file.h"

/* Per-CPU parameters converted to ticks once, so skew_apply is arithmetic only. */
struct skew_cpu {
    int on;
    int has_change;
    int64_t offset_ticks;
    int64_t change_ticks;     /* dt at which the drift changes */
    double drift;             /* fraction, D / 1e6 */
    double drift2;
};

/* round() of the injection function (skew.h): half away from zero, for
 * values within int64_t. Here rather than libm's llround, which the
 * runtime's other link lines do not need: libtl2.a is linked with -ltl2
 * -lpthread alone (compat/tl2). Exact: below 2^52 the fraction of `x`
 * is representable, above it `x` is whole. */
static int64_t skew_round(double x)
{
    int64_t whole = (int64_t)x; /* toward zero */
    double frac = x - (double)whole;
    return whole + (frac >= 0.5) - (frac <= -0.5);
}

static struct skew_cpu skew_cpus[SKEW_MAX_CPUS];
static uint64_t skew_base;
static int skew_on;

static int parse_num(const char *p, const char *stop, int integer, double *out, const char **next)
{
    char *end;
    errno = 0;
    double v = integer ? (double)strtoll(p, &end, 10) : strtod(p, &end);
    if (errno != 0 || end == p || end > stop || !isfinite(v))
        return -1;
    *out = v;
    *next = end;
    return 0;
}

/* One "CPU:OFFSET_NS:DRIFT_PPM[@T_MS:DRIFT2_PPM]" item in [p, stop). */
static int parse_item(const char *p, const char *stop, struct tf_skew *s)
{
    int len = (int)(stop - p);
    double cpu, off, drift, t = -1, d2 = 0;
    const char *q;
    if (parse_num(p, stop, 1, &cpu, &q) != 0 || *q != ':' || cpu < 0 || cpu >= SKEW_MAX_CPUS)
        return error_set("TMTRACE_SKEW: '%.*s': expected CPU (0..%d) first", len, p, SKEW_MAX_CPUS - 1);
    if (parse_num(q + 1, stop, 1, &off, &q) != 0 || *q != ':' || fabs(off) > 1e15)
        return error_set("TMTRACE_SKEW: '%.*s': expected OFFSET_NS (whole ns) after the CPU", len, p);
    if (parse_num(q + 1, stop, 0, &drift, &q) != 0 || fabs(drift) > 1e5)
        return error_set("TMTRACE_SKEW: '%.*s': expected DRIFT_PPM (|ppm| <= 100000) after the offset",
                         len, p);
    if (q < stop && *q == '@') {
        if (parse_num(q + 1, stop, 1, &t, &q) != 0 || *q != ':' || t < 0)
            return error_set("TMTRACE_SKEW: '%.*s': expected T_MS (>= 0) after '@'", len, p);
        if (parse_num(q + 1, stop, 0, &d2, &q) != 0 || fabs(d2) > 1e5)
            return error_set("TMTRACE_SKEW: '%.*s': expected DRIFT2_PPM after T_MS", len, p);
    }
    if (q != stop)
        return error_set("TMTRACE_SKEW: '%.*s': unexpected '%.*s'", len, p, (int)(stop - q), q);
    s->cpu = (uint32_t)cpu;
    s->offset_ns = (int64_t)off;
    s->drift_ppm = drift;
    s->change_ms = (int64_t)t;
    s->drift2_ppm = d2;
    return 0;
}

int skew_parse(const char *text, struct tf_skew *out, size_t max)
{
    size_t n = 0;
    if (text == NULL || *text == '\0')
        return 0;
    for (const char *p = text;;) {
        const char *stop = strchr(p, ',');
        if (stop == NULL)
            stop = p + strlen(p);
        if (stop == p)
            return error_set("TMTRACE_SKEW=%s: empty item", text);
        if (n == max)
            return error_set("TMTRACE_SKEW=%s: more than %zu items", text, max);
        if (parse_item(p, stop, &out[n]) != 0)
            return -1;
        for (size_t i = 0; i < n; i++)
            if (out[i].cpu == out[n].cpu)
                return error_set("TMTRACE_SKEW: CPU %u is listed twice", (unsigned)out[n].cpu);
        n++;
        if (*stop == '\0')
            break;
        p = stop + 1;
    }
    return (int)n;
}

void skew_init(const struct tf_skew *s, size_t n, uint64_t tsc_hz, uint64_t base_tsc)
{
    memset(skew_cpus, 0, sizeof skew_cpus);
    skew_base = base_tsc;
    skew_on = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i].cpu >= SKEW_MAX_CPUS)
            continue;
        struct skew_cpu *c = &skew_cpus[s[i].cpu];
        c->on = 1;
        c->offset_ticks = skew_round((double)s[i].offset_ns * (double)tsc_hz / 1e9);
        c->drift = s[i].drift_ppm / 1e6;
        c->has_change = s[i].change_ms >= 0;
        c->change_ticks = c->has_change ? skew_round((double)s[i].change_ms * (double)tsc_hz / 1e3) : 0;
        c->drift2 = s[i].drift2_ppm / 1e6;
        skew_on = 1;
    }
}

int skew_active(void) { return skew_on; }

uint64_t skew_apply(uint64_t truth, unsigned cpu)
{
    if (cpu >= SKEW_MAX_CPUS || !skew_cpus[cpu].on)
        return truth;
    const struct skew_cpu *c = &skew_cpus[cpu];
    int64_t dt = (int64_t)(truth - skew_base);
    double d;
    if (c->has_change && dt >= c->change_ticks)
        d = (double)c->change_ticks * c->drift + (double)(dt - c->change_ticks) * c->drift2;
    else
        d = (double)dt * c->drift;
    return truth + (uint64_t)(c->offset_ticks + skew_round(d));
}

uint64_t skew_stamp(uint64_t truth, uint32_t aux) { return skew_apply(truth, tf_aux_cpu(aux)); }

/* ---- forced migrations ------------------------------------------------------ */

static int skew_mig_cpus[CPU_SETSIZE];
static int skew_mig_n;

void skew_migrate_cpus(const int *cpus, int n)
{
    skew_mig_n = n < CPU_SETSIZE ? n : CPU_SETSIZE;
    memcpy(skew_mig_cpus, cpus, (size_t)skew_mig_n * sizeof cpus[0]);
}

void skew_migrate(void)
{
    if (skew_mig_n < 2)
        return;
    uint32_t aux;
    clock_rdtscp(&aux);
    unsigned now = tf_aux_cpu(aux);
    int next = skew_mig_cpus[0];
    for (int i = 0; i < skew_mig_n; i++)
        if ((unsigned)skew_mig_cpus[i] == now) {
            next = skew_mig_cpus[(i + 1) % skew_mig_n];
            break;
        }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(next, &set);
    (void)sched_setaffinity(0, sizeof set, &set);
}
