/*
 * bench.c - the tmbench driver: option parsing, the workload option store
 * behind bench_opt_*(), per-thread random seeding, the worker threads with
 * their start barrier, the duration timer or ops budget, the backend's thread
 * enter/exit and statistics, and the one JSON line per run.
 *
 * Owns: everything a workload does not: the same file builds for the three
 * backends (libtmtrace, libitm, mutex). It must never know about a particular
 * workload, and never run workload code outside setup/worker/check/teardown.
 */
#include "bench.h"
#include "tm.h"
#include "json_writer.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#if defined(TM_ITM)
const char *const bench_backend = "libitm";
__thread uint64_t tm_commit_count;
#elif defined(TM_MUTEX)
const char *const bench_backend = "mutex";
__thread uint64_t tm_commit_count;
pthread_mutex_t tm_global_lock = PTHREAD_MUTEX_INITIALIZER;
#else
const char *const bench_backend = "libtmtrace";
__thread tmt_tx *tm_tx __attribute__((tls_model("initial-exec")));
#endif

int bench_opt_error;

/* The workload options of the current run, "--name" "value" pairs, and which
 * of them a bench_opt_*() call has looked at. */
static char **wl_args;
static int wl_nargs;
static unsigned char *wl_used;
static const char *prog_name = "tmbench";

static void bench_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void bench_err(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", prog_name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* ---- workload options -------------------------------------------------- */

/* The value of the last --name given (later options override earlier ones). */
static const char *opt_find(const char *name)
{
    const char *val = NULL;
    for (int i = 0; i + 1 < wl_nargs; i += 2) {
        if (strcmp(wl_args[i] + 2, name) == 0) {
            wl_used[i] = 1;
            val = wl_args[i + 1];
        }
    }
    return val;
}

static int parse_long(const char *text, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end)
        return -1;
    *out = v;
    return 0;
}

static int parse_double(const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || v != v)
        return -1;
    *out = v;
    return 0;
}

/* Looks up --name and parses it with parse (which takes a long * or double *).
 * Returns 1 with *out set, 0 when the option is absent, -1 after reporting a
 * value that does not parse. */
static int opt_parsed(const char *name, const char *what, int (*parse)(const char *, void *),
                      void *out)
{
    const char *text = opt_find(name);
    if (!text)
        return 0;
    if (parse(text, out) != 0) {
        bench_err("--%s: '%s' is not %s", name, text, what);
        bench_opt_error = 1;
        return -1;
    }
    return 1;
}

static int parse_long_v(const char *text, void *out) { return parse_long(text, out); }
static int parse_double_v(const char *text, void *out) { return parse_double(text, out); }

long bench_opt_long(const struct bench_opts *o, const char *name, long def, long min, long max)
{
    (void)o;
    long v;
    if (opt_parsed(name, "an integer", parse_long_v, &v) != 1)
        return def;
    if (v < min || v > max) {
        bench_err("--%s: %ld is outside [%ld, %ld]", name, v, min, max);
        bench_opt_error = 1;
        return def;
    }
    return v;
}

double bench_opt_double(const struct bench_opts *o, const char *name, double def, double min, double max)
{
    (void)o;
    double v;
    if (opt_parsed(name, "a number", parse_double_v, &v) != 1)
        return def;
    if (v < min || v > max) {
        bench_err("--%s: %g is outside [%g, %g]", name, v, min, max);
        bench_opt_error = 1;
        return def;
    }
    return v;
}

const char *bench_opt_str(const struct bench_opts *o, const char *name, const char *def)
{
    (void)o;
    const char *text = opt_find(name);
    return text ? text : def;
}

/* ---- common options ---------------------------------------------------- */

enum { OPT_THREADS = 't', OPT_DURATION = 'd', OPT_OPS = 'n', OPT_SEED = 's', OPT_PIN = 'p', OPT_HELP = 'h' };

static const struct option common_options[] = {
    { "threads", required_argument, NULL, OPT_THREADS },
    { "duration", required_argument, NULL, OPT_DURATION },
    { "ops", required_argument, NULL, OPT_OPS },
    { "seed", required_argument, NULL, OPT_SEED },
    { "pin", no_argument, NULL, OPT_PIN },
    { "help", no_argument, NULL, OPT_HELP },
    { NULL, 0, NULL, 0 },
};

/* The common option called name[0..len), or NULL. */
static const struct option *common_named(const char *name, size_t len)
{
    for (const struct option *c = common_options; c->name; c++)
        if (strlen(c->name) == len && strncmp(c->name, name, len) == 0)
            return c;
    return NULL;
}

void bench_usage(FILE *out, const struct workload *wl)
{
    fprintf(out,
            "usage: tmbench %s [options]\n"
            "common options:\n"
            "  --threads N    worker threads (default 1)\n"
            "  --duration S   seconds to run (default 1)\n"
            "  --ops N        total operations over all threads instead of a duration\n"
            "  --seed N       random seed (default 1); thread i gets its own stream\n"
            "  --pin          worker i runs only on the i-th CPU (modulo their count) of the\n"
            "                 CPUs this process may use (taskset), for the whole run\n"
            "  --help         this text\n",
            wl ? wl->name : "<workload>");
    if (wl && wl->help && wl->help[0])
        fprintf(out, "%s options:\n%s", wl->name, wl->help);
    fprintf(out, "Prints one JSON line; exit 0 = check ok, 1 = check failed, 2 = bad options.\n");
}

/* Phase 1: splits argv into the common options (into `common`, for
 * getopt_long) and the workload's "--name value" pairs (kept for
 * bench_opt_*). The count of `common`, or -1 after a one-line error. */
static int split_args(int argc, char **argv, char **common)
{
    int nc = 0;
    common[nc++] = argv[0];
    wl_nargs = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '-' && a[1] == '-' && a[2]) {
            const char *eq = strchr(a + 2, '=');
            size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
            const struct option *c = common_named(a + 2, len);
            if (c && eq && c->has_arg == no_argument) {
                bench_err("option --%s takes no value ('%s')", c->name, a);
                return -1;
            }
            if (c) {
                common[nc++] = argv[i];
                if (!eq && c->has_arg == required_argument && i + 1 < argc)
                    common[nc++] = argv[++i];
                continue;
            }
            /* A workload option: keep "--name" and its value. */
            char *name = strndup(a, len + 2);
            const char *val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
            if (!name || !val) {
                bench_err("option %s needs a value", a);
                free(name);
                return -1;
            }
            wl_args[wl_nargs++] = name;
            wl_args[wl_nargs++] = (char *)val;
        } else if (a[0] == '-' && a[1] && a[1] != '-') {
            common[nc++] = argv[i];
            if (!a[2] && strchr("tdns", a[1]) && i + 1 < argc)
                common[nc++] = argv[++i];
        } else {
            bench_err("unexpected argument '%s' (options are --name value)", a);
            return -1;
        }
    }
    return nc;
}

/* One common option's value into `o`. 0, or -1 after a one-line error. */
static int common_option(int c, const char *arg, struct bench_opts *o)
{
    long lv;
    double dv;
    switch (c) {
    case OPT_THREADS:
        if (parse_long(arg, &lv) != 0 || lv < 1 || lv > 1024) {
            bench_err("--threads: '%s' is not an integer in [1, 1024]", arg);
            return -1;
        }
        o->threads = (int)lv;
        return 0;
    case OPT_DURATION:
        if (parse_double(arg, &dv) != 0 || !(dv > 0) || dv > 86400) {
            bench_err("--duration: '%s' is not a number of seconds in (0, 86400]", arg);
            return -1;
        }
        o->duration = dv;
        return 0;
    default: { /* OPT_OPS, OPT_SEED */
        char *end;
        errno = 0;
        unsigned long long v = strtoull(arg, &end, 10);
        if (errno || end == arg || *end || arg[0] == '-') {
            bench_err("--%s: '%s' is not a non-negative integer", c == OPT_OPS ? "ops" : "seed", arg);
            return -1;
        }
        if (c == OPT_OPS)
            o->ops = v;
        else
            o->seed = v;
        return 0;
    }
    }
}

/* Splits argv (split_args), then parses the common options. Returns 0, 1
 * for --help, or -1 after a one-line error. */
static int parse_args(int argc, char **argv, struct bench_opts *o, const struct workload *wl)
{
    char **common = calloc((size_t)argc + 1, sizeof *common);
    wl_args = calloc((size_t)argc * 2 + 1, sizeof *wl_args);
    wl_used = calloc((size_t)argc * 2 + 1, 1);
    if (!common || !wl_args || !wl_used) {
        free(common);
        bench_err("out of memory");
        return -1;
    }
    int nc = split_args(argc, argv, common);
    int rc = nc < 0 ? -1 : 0;
    opterr = 0;
    optind = 1;
    int c;
    while (rc == 0 && (c = getopt_long(nc, common, ":t:d:n:s:ph", common_options, NULL)) != -1) {
        if (c == OPT_HELP) {
            rc = 1;
        } else if (c == OPT_PIN) {
            o->pin = 1;
        } else if (c == ':') {
            bench_err("option %s needs a value", common[optind - 1]);
            rc = -1;
        } else if (c == OPT_THREADS || c == OPT_DURATION || c == OPT_OPS || c == OPT_SEED) {
            rc = common_option(c, optarg, o);
        } else {
            bench_err("unknown option '%s'", common[optind - 1]);
            rc = -1;
        }
    }
    free(common);
    (void)wl;
    o->argc = wl_nargs;
    o->argv = wl_args;
    return rc;
}

static void free_args(void)
{
    for (int i = 0; i < wl_nargs; i += 2)
        free(wl_args[i]);
    free(wl_args);
    free(wl_used);
    wl_args = NULL;
    wl_used = NULL;
    wl_nargs = 0;
}

/* ---- backend hooks ----------------------------------------------------- */

struct bench_counts {
    uint64_t commits;
    uint64_t aborts;
    int aborts_known;
#if !defined(TM_ITM) && !defined(TM_MUTEX)
    tmt_stats stats;
    uint64_t writer_run_ns; /* the writer's CPU time between the snapshots */
    tmt_stats fin;          /* after tmt_shutdown: the tracer's work at exit included */
    int have_fin;
#endif
};

static int backend_init(void)
{
#if !defined(TM_ITM) && !defined(TM_MUTEX)
    if (tmt_init() != 0) {
        bench_err("libtmtrace: %s", tmt_error());
        return -1;
    }
#endif
    return 0;
}

/* Called in every thread that runs transactions, the main one included
 * (setup and check may use transactions). */
static int backend_thread_enter(void)
{
#if !defined(TM_ITM) && !defined(TM_MUTEX)
    tm_tx = tmt_thread_enter();
    if (!tm_tx) {
        bench_err("libtmtrace: %s", tmt_error());
        return -1;
    }
#endif
    return 0;
}

/* Returns the commits counted locally by this thread (libitm and mutex). */
static uint64_t backend_thread_exit(void)
{
#if !defined(TM_ITM) && !defined(TM_MUTEX)
    if (tm_tx)
        tmt_thread_exit();
    tm_tx = NULL;
    return 0;
#else
    uint64_t n = tm_commit_count;
    tm_commit_count = 0;
    return n;
#endif
}

static void backend_snapshot(struct bench_counts *c)
{
    memset(c, 0, sizeof *c);
#if !defined(TM_ITM) && !defined(TM_MUTEX)
    if (tmt_stats_get(&c->stats) == 0) {
        c->commits = c->stats.commits;
        c->aborts = c->stats.aborts;
        c->aborts_known = 1;
    }
#elif defined(TM_MUTEX)
    c->aborts_known = 1; /* a lock never aborts */
#endif
}

/* Closes the runtime after the run (the main thread leaves, the trace is
 * written to its end) and takes the tracer's final figures into c->fin, so
 * that its CPU per event counts the work at exit. Teardown comes after:
 * no workload's teardown runs a transaction. */
static void backend_finish(struct bench_counts *c)
{
#if !defined(TM_ITM) && !defined(TM_MUTEX)
    backend_thread_exit();
    /* A failed write is reported by the tracer itself (stderr); its
     * figures still hold. */
    (void)tmt_shutdown();
    if (tmt_stats_get(&c->fin) == 0)
        c->have_fin = 1;
#else
    (void)c;
#endif
}

/* ---- threads ----------------------------------------------------------- */

struct start_gate;
static void gate_arrive(struct start_gate *g);

struct bench_worker {
    struct bench_thread bt;
    const struct workload *wl;
    void *state;
    struct start_gate *start;
    uint64_t local_commits;
    uint64_t cpu_ns;        /* the worker's CPU time inside the timed part */
    long preempted;         /* involuntary context switches inside it */
    int cpu_first, cpu_last; /* the CPU it ran on as its work began and ended */
    int ktid;               /* its kernel thread id (perf sched, /proc/<pid>/task) */
    int failed;
    pthread_t tid;
} __attribute__((aligned(64)));

/* CPU time of the workers inside the timed part, summed (print_json): on a
 * machine shared with other processes it moves far less than `seconds`. */
static double bench_worker_cpu_s;

/* Each worker's share of the run, for the JSON line's "workers": where it
 * ran and how often it was preempted tell whether the workers ran side by
 * side or took turns on one CPU (which changes how often they conflict). */
struct worker_sum {
    uint64_t ops;
    double cpu_s;
    long preempted;
    int cpu_first, cpu_last, tid;
};
static struct worker_sum *bench_workers;
static int bench_nworkers;

static long thread_preemptions(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nivcsw : 0;
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* splitmix64: turns (seed, thread id) into well-spread, non-zero xorshift states. */
static uint64_t seed_mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    x ^= x >> 31;
    return x ? x : 0x2545F4914F6CDD1DULL;
}

static void *worker_main(void *arg)
{
    struct bench_worker *w = arg;
    if (backend_thread_enter() != 0)
        w->failed = 1;
    /* Every thread reaches the gate, even one that failed to enter, so
     * that the timer is never left waiting. */
    gate_arrive(w->start);
    if (!w->failed) {
        uint64_t c0 = thread_cpu_ns();
        long p0 = thread_preemptions();
        w->ktid = (int)gettid();
        w->cpu_first = sched_getcpu();
        w->wl->worker(w->state, &w->bt);
        w->cpu_last = sched_getcpu();
        w->cpu_ns = thread_cpu_ns() - c0;
        w->preempted = thread_preemptions() - p0;
    }
    w->local_commits = backend_thread_exit();
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_until(double deadline)
{
    struct timespec ts;
    ts.tv_sec = (time_t)deadline;
    ts.tv_nsec = (long)((deadline - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L)
        ts.tv_nsec = 999999999L;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* ---- output ------------------------------------------------------------ */

/* The runtime's counters (libtmtrace builds only). The tracer's figures are
 * as they stood at the end of the run, setup included (not differences): the
 * writer's CPU time and the file's bytes cannot be split at the start gate,
 * so the events they are divided by must not be either. */
#if !defined(TM_ITM) && !defined(TM_MUTEX)
/* What the tracer costs in CPU beyond the program's threads: its whole CPU
 * time (init, writer, exit) per event recorded in the process, the
 * writer's share of one CPU during the timed part, the file's bytes per
 * event, and the buffers the threads mapped themselves in steady state.
 * Null where the figures could not be read. */
static void json_tracer_cost(struct jw *w, const struct bench_counts *d, double seconds)
{
    jw_knum(w, "writer_cpu_share", seconds > 0 ? (double)d->writer_run_ns * 1e-9 / seconds : 0.0, 4);
    if (!d->have_fin) {
        jw_knull(w, "tracer_cpu_s");
        jw_knull(w, "tracer_ns_per_event");
        jw_knull(w, "bytes_per_event");
        jw_knull(w, "buffer_late_maps");
        return;
    }
    double ev = d->fin.events_recorded ? (double)d->fin.events_recorded : 1.0;
    jw_knum(w, "tracer_cpu_s", (double)d->fin.tracer_cpu_ns * 1e-9, 6);
    jw_knum(w, "tracer_ns_per_event", d->fin.events_recorded ? (double)d->fin.tracer_cpu_ns / ev : 0.0, 2);
    jw_knum(w, "bytes_per_event", d->fin.events_recorded ? (double)d->fin.trace_bytes / ev : 0.0, 3);
    jw_ku64(w, "buffer_late_maps", d->fin.buffer_late_maps);
}
#endif

static void json_runtime(struct jw *w, const struct bench_counts *d, double seconds)
{
#if !defined(TM_ITM) && !defined(TM_MUTEX)
    jw_key(w, "aborts_by_reason");
    jw_object(w);
    for (unsigned r = 1; r < TMT_ABORT_REASONS; r++)
        jw_ku64(w, tmt_abort_reason_name(r), d->stats.aborts_by_reason[r]);
    jw_object_end(w);
    jw_ku64(w, "htm_commits", d->stats.htm_commits);
    jw_ku64(w, "fallbacks", d->stats.fallbacks);
    jw_ku64(w, "events_recorded", d->stats.events_recorded);
    jw_ku64(w, "events_dropped", d->stats.events_dropped);
    jw_ku64(w, "writer_events", d->stats.writer_events);
    jw_knum(w, "writer_cpu_s", (double)d->stats.writer_cpu_ns * 1e-9, 6);
    jw_ku64(w, "trace_bytes", d->stats.trace_bytes);
    jw_ku64(w, "buffer_bytes", d->stats.buffer_bytes);
    jw_ku64(w, "buffer_inline_maps", d->stats.buffer_inline_maps);
    jw_ku64(w, "stamps_raised", d->stats.stamps_raised);
    jw_ku64(w, "attempts_shed", d->stats.attempts_shed);
    json_tracer_cost(w, d, seconds);
#else
    (void)w;
    (void)d;
    (void)seconds;
#endif
}

static void json_workers(struct jw *w)
{
    jw_key(w, "workers");
    jw_array(w);
    for (int i = 0; i < bench_nworkers; i++) {
        const struct worker_sum *s = &bench_workers[i];
        jw_object(w);
        jw_ku64(w, "ops", s->ops);
        jw_knum(w, "cpu_s", s->cpu_s, 6);
        jw_ki64(w, "preempted", s->preempted);
        jw_ki64(w, "cpu_first", s->cpu_first);
        jw_ki64(w, "cpu_last", s->cpu_last);
        jw_ki64(w, "tid", s->tid);
        jw_object_end(w);
    }
    jw_array_end(w);
}

static void print_json(const struct workload *wl, void *state, const struct bench_opts *o,
                       double seconds, uint64_t ops, const struct bench_counts *d, int check_ok,
                       const char *check_msg)
{
    struct jw w;
    jw_init(&w, stdout);
    jw_object(&w);
    jw_kstr(&w, "workload", wl->name);
    jw_kstr(&w, "backend", bench_backend);
    jw_ki64(&w, "threads", o->threads);
    jw_knum(&w, "seconds", seconds, 6);
    jw_knum(&w, "worker_cpu_s", bench_worker_cpu_s, 6);
    jw_ku64(&w, "ops", ops);
    jw_knum(&w, "ops_per_s", seconds > 0 ? (double)ops / seconds : 0.0, 1);
    jw_ku64(&w, "commits", d->commits);
    if (d->aborts_known)
        jw_ku64(&w, "aborts", d->aborts);
    else
        jw_knull(&w, "aborts");
    json_runtime(&w, d, seconds);
    jw_ku64(&w, "seed", o->seed);
    jw_key(&w, "duration");
    jw_g(&w, o->ops ? 0.0 : o->duration);
    jw_ku64(&w, "ops_budget", o->ops);
    jw_kbool(&w, "pin", o->pin);
    json_workers(&w);
    if (wl->json_extra)
        wl->json_extra(state, &w);
    jw_kstr(&w, "check", check_ok ? "ok" : "failed");
    if (!check_ok)
        jw_kstr(&w, "check_msg", check_msg);
    jw_object_end(&w);
    fputc('\n', stdout);
    fflush(stdout);
}

/* ---- the run ----------------------------------------------------------- */

/* The start gate: workers announce themselves and wait for `go`, so that the
 * timer starts when every thread is ready, and a thread that could not be
 * created leaves nobody waiting. */
struct start_gate {
    int ready;
    int go;
};

static void gate_arrive(struct start_gate *g)
{
    __atomic_add_fetch(&g->ready, 1, __ATOMIC_ACQ_REL);
    while (!__atomic_load_n(&g->go, __ATOMIC_ACQUIRE))
        sched_yield();
}

/* --pin: the CPUs this process may use, in order, into cpus[CPU_SETSIZE].
 * Their count, or -1 after a one-line error. */
static int affinity_cpus(int *cpus)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        bench_err("--pin: sched_getaffinity: %s", strerror(errno));
        return -1;
    }
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            cpus[n++] = c;
    return n;
}

/* Creates worker w, with --pin bound to `cpu` from its first instruction on
 * (cpu < 0: free to run anywhere). 0, or -1 after a one-line error. */
static int start_worker(struct bench_worker *w, int cpu)
{
    pthread_attr_t attr;
    int rc = pthread_attr_init(&attr);
    if (rc == 0 && cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        rc = pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    }
    if (rc == 0)
        rc = pthread_create(&w->tid, &attr, worker_main, w);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        if (cpu >= 0)
            bench_err("cannot create thread %d on CPU %d (--pin): %s", w->bt.id, cpu, strerror(rc));
        else
            bench_err("cannot create thread %d: %s", w->bt.id, strerror(rc));
        return -1;
    }
    return 0;
}

/* The run's per-worker figures into bench_workers and the sums. */
static void sum_workers(const struct bench_worker *w, int started, uint64_t *ops, uint64_t *local_commits)
{
    *ops = 0;
    *local_commits = 0;
    bench_worker_cpu_s = 0;
    free(bench_workers);
    bench_workers = calloc((size_t)started + 1, sizeof *bench_workers);
    bench_nworkers = bench_workers ? started : 0;
    for (int i = 0; i < started; i++) {
        bench_worker_cpu_s += (double)w[i].cpu_ns * 1e-9;
        *ops += w[i].bt.ops;
        *local_commits += w[i].local_commits;
        if (bench_workers)
            bench_workers[i] = (struct worker_sum){ w[i].bt.ops, (double)w[i].cpu_ns * 1e-9, w[i].preempted,
                                                    w[i].cpu_first, w[i].cpu_last, w[i].ktid };
    }
}

static int run_threads(const struct workload *wl, void *state, const struct bench_opts *o,
                       double *seconds, uint64_t *ops, uint64_t *local_commits)
{
    int n = o->threads;
    struct bench_worker *w = aligned_alloc(64, sizeof *w * (size_t)n);
    struct start_gate gate = { 0, 0 };
    volatile int stop = 0;
    int failed = 0, started = 0;
    static int cpus[CPU_SETSIZE];
    int ncpu = o->pin ? affinity_cpus(cpus) : 0;
    if (!w || ncpu < 0) {
        if (!w)
            bench_err("out of memory for %d threads", n);
        free(w);
        return -1;
    }
    memset(w, 0, sizeof *w * (size_t)n);
    for (int i = 0; i < n; i++) {
        w[i].bt.id = i;
        w[i].bt.rng = seed_mix(o->seed * 0x100000001B3ULL + (uint64_t)i + 1);
        w[i].bt.opts = o;
        w[i].bt.stop = &stop;
        w[i].bt.ops_budget = o->ops ? o->ops / (uint64_t)n + ((uint64_t)i < o->ops % (uint64_t)n) : 0;
        w[i].wl = wl;
        w[i].state = state;
        w[i].start = &gate;
        if (start_worker(&w[i], ncpu > 0 ? cpus[i % ncpu] : -1) != 0) {
            failed = 1;
            __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
            break;
        }
        started++;
    }
    while (__atomic_load_n(&gate.ready, __ATOMIC_ACQUIRE) < started)
        sched_yield();
    double t0 = now_s();
    __atomic_store_n(&gate.go, 1, __ATOMIC_RELEASE);
    if (!o->ops && !failed) {
        sleep_until(t0 + o->duration);
        __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    }
    for (int i = 0; i < started; i++)
        pthread_join(w[i].tid, NULL);
    *seconds = now_s() - t0;
    sum_workers(w, started, ops, local_commits);
    for (int i = 0; i < started; i++)
        failed |= w[i].failed;
    free(w);
    return failed ? -1 : 0;
}

int bench_run(const struct workload *wl, int argc, char **argv)
{
    struct bench_opts o = { .threads = 1, .duration = 1.0, .ops = 0, .seed = 1 };
    prog_name = "tmbench";
    bench_opt_error = 0;
    int rc = parse_args(argc, argv, &o, wl);
    if (rc != 0) {
        free_args();
        if (rc == 1) {
            bench_usage(stdout, wl);
            return 0;
        }
        return 2;
    }
    if (o.ops && o.ops < (uint64_t)o.threads) {
        bench_err("--ops %" PRIu64 " is smaller than --threads %d", o.ops, o.threads);
        free_args();
        return 2;
    }
    if (backend_init() != 0 || backend_thread_enter() != 0) {
        free_args();
        return 2;
    }

    void *state = NULL;
    if (wl->setup(&o, &state) != 0 || bench_opt_error) {
        if (state && wl->teardown)
            wl->teardown(state);
        backend_thread_exit();
        free_args();
        return 2;
    }
    for (int i = 0; i < wl_nargs; i += 2) {
        if (!wl_used[i]) {
            bench_err("%s: unknown option %s (see tmbench %s --help)", wl->name, wl_args[i],
                      wl->name);
            if (wl->teardown)
                wl->teardown(state);
            backend_thread_exit();
            free_args();
            return 2;
        }
    }

    struct bench_counts before, after, delta;
    double seconds = 0;
    uint64_t ops = 0, local_commits = 0;
    backend_snapshot(&before);
    int run_rc = run_threads(wl, state, &o, &seconds, &ops, &local_commits);
    backend_snapshot(&after);

    delta = after;
    delta.commits = after.commits - before.commits + local_commits;
    delta.aborts = after.aborts - before.aborts;
#if !defined(TM_ITM) && !defined(TM_MUTEX)
    for (unsigned r = 0; r < TMT_ABORT_REASONS; r++)
        delta.stats.aborts_by_reason[r] -= before.stats.aborts_by_reason[r];
    delta.stats.htm_commits -= before.stats.htm_commits;
    delta.stats.fallbacks -= before.stats.fallbacks;
    delta.writer_run_ns = after.stats.writer_cpu_ns - before.stats.writer_cpu_ns;
#endif

    char msg[512] = "";
    int check_ok = run_rc == 0;
    if (run_rc != 0)
        snprintf(msg, sizeof msg, "a worker thread could not start or enter the TM runtime");
    else if (wl->check && wl->check(state, msg, sizeof msg) != 0)
        check_ok = 0;
    if (!check_ok && !msg[0])
        snprintf(msg, sizeof msg, "check failed");
    backend_finish(&delta);
    print_json(wl, state, &o, seconds, ops, &delta, check_ok, msg);
    if (!check_ok)
        bench_err("%s: check failed: %s", wl->name, msg);

    if (wl->teardown)
        wl->teardown(state);
    backend_thread_exit();
    free_args();
    free(bench_workers);
    bench_workers = NULL;
    bench_nworkers = 0;
    return check_ok ? 0 : 1;
}
