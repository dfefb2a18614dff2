/*
 * test_sync.c - tmsync on generated traces with injected clock faults:
 * fitted drift and offset against the injected values, raw traces that
 * tmcheck finds inconsistent and synchronised ones it finds clean, a drift
 * change that only the piecewise model follows, merge order, fallbacks,
 * bad input, and a trace larger than the memory limit.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_util.h"
#include "trace_gen.h"

#define HZ 2000000000ull         /* 2 GHz: 0.5 ns per tick */
#define BASE 1000000000000ull    /* truth TSC at REF0 */
#define REF0 5000000000ull       /* reference ns of the first sample */
#define NCPU 4

struct fault {
    double offset_ns, drift_ppm, change_ms, drift2_ppm;   /* change_ms < 0: none */
};

static char out[1 << 17];

static uint64_t truth_at(double ref)
{
    return BASE + (uint64_t)llround((ref - (double)REF0) * (double)HZ / 1e9);
}

/* The same function as the runtime's injection (skew.h). */
static uint64_t inject(uint64_t truth, const struct fault *f)
{
    double dt = (double)(int64_t)(truth - BASE);
    double tt = f->change_ms * (double)HZ / 1e3;
    double d = f->change_ms < 0 || dt < tt ? dt * f->drift_ppm / 1e6
                                             : tt * f->drift_ppm / 1e6 + (dt - tt) * f->drift2_ppm / 1e6;
    return truth + (uint64_t)llround(f->offset_ns * (double)HZ / 1e9) + (uint64_t)llround(d);
}

static uint64_t rng_state = 88172645463325252ull;
static double noise(double amp)
{
    return ((double)(tu_xorshift(&rng_state) % 20001) / 10000.0 - 1.0) * amp;
}

static void add_sample(struct tf_sample *s, size_t *n, double ref, unsigned cpu, unsigned phase,
                       const struct fault *f, int wide)
{
    /* the midpoint is within +-20 ns of the reference reading; a wide
     * (interrupted) bracket is 5 us off */
    uint64_t tr = truth_at(ref + noise(20) + (wide ? 5000 : 0));
    s[*n] = (struct tf_sample){ .tsc = inject(tr, f), .ref_ns = (uint64_t)ref, .truth_tsc = tr,
                                .width = wide ? 20000 : 80, .cpu = (uint16_t)cpu, .phase = (uint8_t)phase };
    (*n)++;
}

/* A 2 s run: pre/post phases of 100 samples per CPU (every 25th wide), in-run
 * samples every 10 ms (if inrun), 2 threads of S R W C transactions that
 * migrate between CPUs every 7 events, `per_thread` events each. CPUs in
 * `nosample` get only 2 pre samples; events also run on CPU `extra_cpu`
 * (no samples at all) when it is < 8. */
static void gen(const char *path, const struct fault *f, int inrun, size_t per_thread, unsigned nosample,
                unsigned extra_cpu)
{
    const double dur = 2e9;
    size_t cap = NCPU * 400 + 1000;
    struct tf_sample *s = calloc(cap, sizeof *s);
    assert_non_null(s);
    size_t ns = 0;
    for (unsigned c = 0; c < NCPU; c++) {
        unsigned k = c == nosample ? 2 : 100;
        for (unsigned i = 0; i < k; i++) {
            add_sample(s, &ns, (double)REF0 + i * 5e5, c, TF_PHASE_PRE, &f[c], i % 25 == 24);
            if (c != nosample)
                add_sample(s, &ns, (double)REF0 + dur - 5e7 + i * 5e5, c, TF_PHASE_POST, &f[c], i % 25 == 24);
        }
        if (inrun && c != nosample)
            for (double t = 6e7; t < dur - 6e7; t += 1e7)
                add_sample(s, &ns, (double)REF0 + t, c, TF_PHASE_INRUN, &f[c], 0);
    }
    /* events are generated and written a chunk at a time, so that the
     * test's own memory stays small next to the tools it measures */
    const size_t chunk = 65536;
    uint64_t counts[2] = { per_thread, per_thread };
    struct tf_thread_info ti[2];
    struct tf_header h = tg_header(HZ, 2, 1);
    struct tf_writer *w = tg_begin(path, &h, 2, counts, s, ns, ti);
    assert_non_null(w);
    struct tg_thread th = { 0 };
    struct fault none = { 0, 0, -1, 0 };
    double step = (dur - 1.2e8) / (double)per_thread;
    for (unsigned t = 0; t < 2; t++) {
        uint64_t inst = 0;
        for (size_t i0 = 0; i0 < per_thread; i0 += chunk) {
            th.n = 0;
            for (size_t i = i0; i < per_thread && i < i0 + chunk; i++) {
                double ref = (double)REF0 + 6e7 + (double)i * step + t * step / 2;
                unsigned cpu = (unsigned)((i / 7 + t) % NCPU);
                if (extra_cpu < 8 && (i / 7) % 5 == 4)
                    cpu = extra_cpu;
                const struct fault *fc = cpu < NCPU ? &f[cpu] : &none;
                uint64_t tr = truth_at(ref);
                static const unsigned kinds[4] = { TF_EV_START, TF_EV_READ, TF_EV_WRITE, TF_EV_COMMIT };
                unsigned kind = kinds[i % 4];
                uint64_t addr = kind == TF_EV_START    ? i / 4 + 1
                                : kind == TF_EV_COMMIT ? 1
                                                       : 0x1000 + 8 * (i % 64) + 4096 * t;
                tg_add(&th, inject(tr, fc), tr, cpu, kind, kind == TF_EV_READ || kind == TF_EV_WRITE ? 8 : 0,
                       1 + t, addr, kind == TF_EV_COMMIT ? 1 | (1ull << 32) : 0);
            }
            assert_int_equal(tg_records(w, t + 1, i0, &inst, &th, 4096), 0);
        }
    }
    tg_free(&th);
    assert_int_equal(tg_end(w, ti, 2), 0);
    free(s);
}

static int run(const char *tool, const char *args)
{
    char cmd[4096];
    int k = snprintf(cmd, sizeof cmd, "%s %s", tu_build(tool), args);
    assert_true(k > 0 && (size_t)k < sizeof cmd);
    return tu_run(cmd, out, sizeof out);
}

/* The JSON object of CPU `cpu` in tmsync --json output. */
static const char *cpu_obj(unsigned cpu)
{
    char pat[32];
    snprintf(pat, sizeof pat, "{\"cpu\":%u,", cpu);
    const char *p = strstr(out, pat);
    assert_non_null(p);
    return p;
}

static void injected_offset_and_drift_are_fitted_and_corrected(void **st)
{
    (void)st;
    const struct fault f[NCPU] = { { 0, 0, -1, 0 }, { 250000, 120, -1, 0 }, { -80000, -50, -1, 0 }, { 0, 0, -1, 0 } };
    char in[512], a[2000];
    snprintf(in, sizeof in, "%s", tu_path("skew.bin"));
    gen(in, f, 0, 40000, 99, 99);

    snprintf(a, sizeof a, "--json '%s' 2>&1", in);
    assert_int_equal(run("tools/tmcheck", a), 1);
    assert_true(tg_json_num(out, NULL, "temporal_inconsistencies") > 100);

    snprintf(a, sizeof a, "--model linear --json '%s' 2>&1", in);
    assert_int_equal(run("tools/tmsync", a), 0);
    for (unsigned c = 0; c < NCPU; c++) {
        const char *o = cpu_obj(c);
        double drift = tg_json_num(out, o, "drift_ppm"), off = tg_json_num(out, o, "offset_ns");
        assert_true(fabs(drift - f[c].drift_ppm) < 0.2);
        assert_true(fabs(off - f[c].offset_ns) < 100);
        assert_true(tg_json_num(out, o, "rejected_width") == 8);   /* 4 wide per phase */
        assert_true(tg_json_num(out, o, "max_ns") < 100);
    }
    /* default output name, then a clean check of it */
    char synced[600];
    snprintf(synced, sizeof synced, "%s", tu_path("skew.sync.bin"));
    assert_int_equal(access(synced, F_OK), 0);
    snprintf(a, sizeof a, "--json '%s' 2>&1", synced);
    assert_int_equal(run("tools/tmcheck", a), 0);
    assert_true(tg_json_num(out, NULL, "temporal_inconsistencies") == 0);
    assert_true(tg_json_num(out, NULL, "grammar_violations") == 0);
    assert_true(tg_json_num(out, NULL, "events") == 80000);
    const char *ce = strstr(out, "\"clock_error_ns\":");
    assert_non_null(ce);
    assert_true(tg_json_num(out, ce, "max") < 200);
}

/* A path is data: its quote and backslash are escaped in --json output. */
static void json_output_escapes_the_paths(void **st)
{
    (void)st;
    const struct fault f[NCPU] = { { 0, 0, -1, 0 }, { 0, 0, -1, 0 }, { 0, 0, -1, 0 }, { 0, 0, -1, 0 } };
    char in[512], o[512], a[2000], want[1200];
    snprintf(in, sizeof in, "%s", tu_path("we\"ird\\in.bin"));
    snprintf(o, sizeof o, "%s", tu_path("we\"ird\\out.bin"));
    gen(in, f, 0, 100, 99, 99);
    snprintf(a, sizeof a, "--json -o '%s' '%s' 2>&1", o, in);
    assert_int_equal(run("tools/tmsync", a), 0);
    snprintf(want, sizeof want, "{\"input\":\"%.*s/we\\\"ird\\\\in.bin\",\"output\":\"%.*s/we\\\"ird\\\\out.bin\",",
             (int)(strrchr(in, '/') - in), in, (int)(strrchr(o, '/') - o), o);
    assert_memory_equal(out, want, strlen(want));
}

static void drift_change_needs_the_piecewise_model(void **st)
{
    (void)st;
    const struct fault f[NCPU] = { { 0, 0, -1, 0 }, { 30000, 0, 1000, 200 }, { 0, -20, 700, 80 }, { 0, 0, -1, 0 } };
    char in[512], a[2000];
    snprintf(in, sizeof in, "%s", tu_path("change.bin"));
    gen(in, f, 1, 40000, 99, 99);
    const char *lin = tu_path("change.lin.bin"), *pw = tu_path("change.pw.bin"), *au = tu_path("change.auto.bin");

    snprintf(a, sizeof a, "--model linear -o '%s' '%s' >/dev/null 2>&1", lin, in);
    assert_int_equal(run("tools/tmsync", a), 0);
    snprintf(a, sizeof a, "--json '%s' 2>&1", lin);
    assert_int_equal(run("tools/tmcheck", a), 1);
    assert_true(tg_json_num(out, NULL, "temporal_inconsistencies") > 0);

    snprintf(a, sizeof a, "--model piecewise --json -o '%s' '%s' 2>&1", pw, in);
    assert_int_equal(run("tools/tmsync", a), 0);
    assert_true(tg_json_num(out, cpu_obj(1), "segments") >= 2);
    assert_true(tg_json_num(out, cpu_obj(1), "max_ns") < 200);
    snprintf(a, sizeof a, "--json '%s' 2>&1", pw);
    assert_int_equal(run("tools/tmcheck", a), 0);
    assert_true(tg_json_num(out, NULL, "temporal_inconsistencies") == 0);

    /* auto: piecewise where drift changed, linear where it did not */
    snprintf(a, sizeof a, "--json -o '%s' '%s' 2>&1", au, in);
    assert_int_equal(run("tools/tmsync", a), 0);
    assert_non_null(strstr(cpu_obj(1), "\"model\":\"piecewise\""));
    assert_non_null(strstr(cpu_obj(2), "\"model\":\"piecewise\""));
    assert_true(strncmp(strstr(cpu_obj(0), "\"model\":"), "\"model\":\"linear\"", 16) == 0);
    snprintf(a, sizeof a, "--json '%s' 2>&1", au);
    assert_int_equal(run("tools/tmcheck", a), 0);
}

static void merge_keeps_each_threads_order_and_sorts_by_corrected_time(void **st)
{
    (void)st;
    const struct fault f[NCPU] = { { 0, 0, -1, 0 }, { 250000, 120, -1, 0 }, { -80000, -50, -1, 0 }, { 0, 0, -1, 0 } };
    char in[512], a[2000];
    snprintf(in, sizeof in, "%s", tu_path("order.bin"));
    gen(in, f, 0, 20000, 99, 99);
    const char *o = tu_path("order.out.bin");
    snprintf(a, sizeof a, "-o '%s' '%s' >/dev/null 2>&1", o, in);
    assert_int_equal(run("tools/tmsync", a), 0);
    struct tf_reader *r = tf_open(o, 0);
    assert_non_null(r);
    assert_true(tf_reader_header(r)->flags & TF_HDR_SYNCED);
    struct tf_chunk c;
    uint64_t next_seq[3] = { 0, 0, 0 }, n = 0, last_ts = 0, models = 0;
    uint32_t last_thread = 0;
    int rc;
    while ((rc = tf_next(r, &c)) == 1) {
        if (c.kind == TF_CHUNK_MODEL)
            models += c.count;
        if (c.kind != TF_CHUNK_EVENTS)
            continue;
        assert_int_equal(c.thread, 0);
        for (size_t i = 0; i < c.count; i++) {
            const struct tf_event *e = &c.events[i];
            assert_true(e->thread == 1 || e->thread == 2);
            assert_true(e->seq == next_seq[e->thread]);     /* program order kept */
            next_seq[e->thread]++;
            assert_true(e->ts > last_ts || (e->ts == last_ts && e->thread >= last_thread));
            last_ts = e->ts;
            last_thread = e->thread;
            n++;
        }
    }
    assert_int_equal(rc, 0);
    tf_close(r);
    assert_int_equal(n, 40000);
    assert_int_equal(models, NCPU);
}

/* Unordered stamps can be a tick apart (0.5 ns here): a thread's stamps on
 * one CPU, increasing in ticks, stay increasing in ns; a step back after a
 * move to another CPU is the model's business and is kept. */
static void stamps_a_fraction_of_a_ns_apart_on_one_cpu_keep_their_order(void **st)
{
    (void)st;
    struct tg_thread th[1] = { 0 };
    uint64_t t0 = 1000;
    tg_add(&th[0], t0, t0, 0, TF_EV_START, 0, 1, 1, 0);
    for (uint64_t k = 1; k <= 6; k++)
        tg_add(&th[0], t0 + k, t0 + k, 0, TF_EV_READ, 8, 1, 0x1000 + 8 * k, 0);
    tg_add(&th[0], t0 + 7, t0 + 7, 0, TF_EV_COMMIT, 0, 1, 0, 0);
    tg_add(&th[0], t0 - 100, t0 - 100, 1, TF_EV_START, 0, 1, 2, 0);   /* other CPU, 50 ns back */
    tg_add(&th[0], t0 - 99, t0 - 99, 1, TF_EV_COMMIT, 0, 1, 0, 0);
    struct tf_header h = tg_header(HZ, 2, 0);
    assert_int_equal(tg_write(tu_path("tick.bin"), &h, th, 1, NULL, 0, 0, 1000), 0);
    tg_free(&th[0]);
    char a[1024];
    snprintf(a, sizeof a, "--model none -o '%s' '%s' >/dev/null 2>&1", tu_path("tick.out.bin"), tu_path("tick.bin"));
    assert_int_equal(run("tools/tmsync", a), 0);
    struct tf_reader *r = tf_open(tu_path("tick.out.bin"), 0);
    assert_non_null(r);
    struct tf_chunk c;
    uint64_t ts[10];
    size_t n = 0;
    int rc;
    while ((rc = tf_next(r, &c)) == 1)
        for (size_t i = 0; c.kind == TF_CHUNK_EVENTS && i < c.count && n < 10; i++)
            ts[c.events[i].seq] = c.events[i].ts, n++;
    assert_int_equal(rc, 0);
    tf_close(r);
    assert_int_equal(n, 10);
    for (size_t i = 1; i < 8; i++)
        assert_true(ts[i] > ts[i - 1]);
    assert_true(ts[7] - ts[0] <= 7); /* 3.5 ns of ticks; at most 1 ns added per event */
    assert_true(ts[8] < ts[7]);      /* the other CPU's step back is kept */
}

static void too_few_samples_fall_back_and_are_reported(void **st)
{
    (void)st;
    const struct fault f[NCPU] = { { 0, 0, -1, 0 }, { 0, 0, -1, 0 }, { 0, 0, -1, 0 }, { 40000, 0, -1, 0 } };
    char in[512], a[2000];
    snprintf(in, sizeof in, "%s", tu_path("few.bin"));
    gen(in, f, 0, 20000, 3, 5);
    snprintf(a, sizeof a, "'%s' 2>&1", in);
    assert_int_equal(run("tools/tmsync", a), 0);
    assert_non_null(strstr(out, "CPU 3 has too few samples"));
    assert_non_null(strstr(out, "CPU 5 has no usable samples"));
    snprintf(a, sizeof a, "--json '%s' 2>&1", tu_path("few.sync.bin"));
    assert_int_equal(run("tools/tmcheck", a), 0);
}

/* Exit 2, one line naming `what`, and no file at `nofile`. */
static void expect_bad(const char *args, const char *what, const char *nofile)
{
    char a[2048];
    snprintf(a, sizeof a, "%s 2>&1 >/dev/null", args);
    assert_int_equal(run("tools/tmsync", a), 2);
    assert_non_null(strstr(out, what));
    char *nl = strchr(out, '\n');
    assert_true(nl == NULL || nl[1] == '\0');
    if (nofile)
        assert_int_not_equal(access(nofile, F_OK), 0);
}

/* A trace without an END chunk, or whose END names the signal that killed
 * the program, is synchronised all the same, with one line on stderr that
 * says what is missing and exit 4; the output keeps the mark, so tmcheck
 * on it says the same. A complete trace gets neither. */
static void an_incomplete_trace_is_synchronised_said_and_exits_4(void **st)
{
    (void)st;
    const struct fault f[NCPU] = { { 0, 0, -1, 0 }, { 0, 0, -1, 0 }, { 0, 0, -1, 0 }, { 0, 0, -1, 0 } };
    char in[512], o[512], a[2000];
    for (uint32_t sig = 0; sig <= 9; sig += 9) {
        snprintf(in, sizeof in, "%s", tu_path(sig ? "killed.bin" : "noend.bin"));
        snprintf(o, sizeof o, "%s", tu_path(sig ? "killed.sync.bin" : "noend.sync.bin"));
        gen(in, f, 0, 1000, 99, 99);
        assert_int_equal(tg_end_as_killed(in, sig), 0);
        const char *why = sig ? "incomplete trace: the program was terminated by signal 9 (SIGKILL); last record at "
                              : "incomplete trace: no END chunk (the run never finished its trace); last record at ";
        snprintf(a, sizeof a, "--json -o '%s' '%s' 2>&1", o, in);
        assert_int_equal(run("tools/tmsync", a), 4);
        assert_non_null(strstr(out, "tmsync: warning: "));
        assert_non_null(strstr(out, why));
        assert_non_null(strstr(out, "\"complete\":false"));
        assert_true(tg_json_num(out, NULL, "events") == 2000);
        snprintf(a, sizeof a, "--json '%s' 2>&1", o);
        assert_int_equal(run("tools/tmcheck", a), 4);
        assert_non_null(strstr(out, why));
    }
    gen(in, f, 0, 1000, 99, 99);
    snprintf(a, sizeof a, "-o '%s' '%s' 2>&1", o, in);
    assert_int_equal(run("tools/tmsync", a), 0);
    assert_null(strstr(out, "incomplete"));
}

static void bad_inputs_are_refused_with_one_line(void **st)
{
    (void)st;
    char a[1400];
    FILE *fp = fopen(tu_path("text.bin"), "wb");
    assert_non_null(fp);
    fputs("plain text, not a trace; long enough to fill a header's worth of bytes .........", fp);
    fclose(fp);
    snprintf(a, sizeof a, "'%s'", tu_path("text.bin"));
    expect_bad(a, "text.bin", tu_path("text.sync.bin"));

    /* no samples: refused, unless --model none */
    struct tg_thread th[1] = { 0 };
    for (int i = 0; i < 40; i++)
        tg_ev(&th[0], 100 + 10 * (uint64_t)i, i % 2 ? TF_EV_COMMIT : TF_EV_START, 0, 1, (uint64_t)i / 2 + 1, 0);
    struct tf_header h = tg_header(HZ, 2, 0);
    assert_int_equal(tg_write(tu_path("nos.bin"), &h, th, 1, NULL, 0, 0, 1000), 0);
    tg_free(&th[0]);
    snprintf(a, sizeof a, "'%s'", tu_path("nos.bin"));
    expect_bad(a, "no clock samples", tu_path("nos.sync.bin"));
    snprintf(a, sizeof a, "--model none '%s' >/dev/null 2>&1", tu_path("nos.bin"));
    assert_int_equal(run("tools/tmsync", a), 0);
    assert_int_equal(access(tu_path("nos.sync.bin"), F_OK), 0);

    /* synchronised twice */
    snprintf(a, sizeof a, "'%s'", tu_path("nos.sync.bin"));
    expect_bad(a, "already synchronised", tu_path("nos.sync.sync.bin"));

    /* the output may not be the input */
    snprintf(a, sizeof a, "-o '%s' '%s'", tu_path("nos.bin"), tu_path("nos.bin"));
    expect_bad(a, "nos.bin", NULL);
    assert_int_equal(access(tu_path("nos.bin"), F_OK), 0);

    /* truncated: file and offset named, no output */
    const struct fault f[NCPU] = { { 0 } };
    struct fault ff[NCPU];
    for (int c = 0; c < NCPU; c++) {
        ff[c] = f[c];
        ff[c].change_ms = -1;
    }
    gen(tu_path("cut.bin"), ff, 0, 20000, 99, 99);
    struct stat sb;
    assert_int_equal(stat(tu_path("cut.bin"), &sb), 0);
    assert_int_equal(truncate(tu_path("cut.bin"), sb.st_size - 3000), 0);
    snprintf(a, sizeof a, "'%s'", tu_path("cut.bin"));
    expect_bad(a, "offset", tu_path("cut.sync.bin"));
    assert_non_null(strstr(out, "cut.bin"));
    snprintf(a, sizeof a, "--salvage '%s' 2>&1", tu_path("cut.bin"));
    assert_int_equal(run("tools/tmsync", a), 4);   /* written, damage skipped; the END was in it: 4 outranks 3 */
    assert_non_null(strstr(out, "damaged chunks skipped"));
    assert_non_null(strstr(out, "tmsync: warning: "));
    assert_non_null(strstr(out, "incomplete trace: no END chunk"));

    expect_bad("--model cubic x.bin", "--model cubic", NULL);
    expect_bad("--nope", "--nope", NULL);
}

/* tmsync --json and the synchronised file's bytes with `jobs` decoding
 * threads, into `json` (malloc'd) and *file (malloc'd, *len bytes). */
static void sync_with_jobs(const char *in, const char *outp, unsigned jobs, char **json, char **file, size_t *len)
{
    char a[2000];
    snprintf(a, sizeof a, "--json --jobs %u '%s' -o '%s' 2>&1", jobs, in, outp);
    assert_int_equal(run("tools/tmsync", a), 0);
    *json = strdup(out);
    *file = tu_read_file(outp, len);
    assert_non_null(*json);
    assert_non_null(*file);
}

/* tmcheck --json on `path` with `jobs` decoding threads (malloc'd). */
static char *check_with_jobs(const char *path, unsigned jobs)
{
    char a[2000];
    snprintf(a, sizeof a, "--json --jobs %u '%s' 2>&1", jobs, path);
    int rc = run("tools/tmcheck", a);
    assert_true(rc == 0 || rc == 1);
    char *json = strdup(out);
    assert_non_null(json);
    return json;
}

static void every_jobs_count_gives_the_same_bytes_and_json(void **st)
{
    (void)st;
    /* a recorded trace with clock faults and migrations, as the tools meet them */
    char in[512], syn[512], a[2000];
    snprintf(in, sizeof in, "%s", tu_path("jobs.bin"));
    snprintf(syn, sizeof syn, "%s", tu_path("jobs.sync.bin"));
    snprintf(a, sizeof a,
             "TMTRACE_FILE='%s' TMTRACE_EVENTS=all TMTRACE_SKEW=1:250000:120 TMTRACE_MIGRATE=2 "
             "'%s' vacation --preset high --threads 2 --ops 3000 >/dev/null 2>&1",
             in, tu_build("tmbench/tmbench"));
    assert_int_equal(tu_run(a, out, sizeof out), 0);
    char *json1, *file1, *json4, *file4;
    size_t len1, len4;
    sync_with_jobs(in, syn, 1, &json1, &file1, &len1);
    sync_with_jobs(in, syn, 4, &json4, &file4, &len4);
    assert_string_equal(json1, json4);
    assert_int_equal(len1, len4);
    assert_memory_equal(file1, file4, len1);
    for (int k = 0; k < 2; k++) {
        const char *path = k ? syn : in;
        char *c1 = check_with_jobs(path, 1), *c3 = check_with_jobs(path, 3);
        assert_string_equal(c1, c3);
        free(c1);
        free(c3);
    }
    free(json1), free(file1), free(json4), free(file4);
}

/* Chunks of 4096 events whose stamps alternate between the threads: an
 * output chunk spans more decoded chunks than a window keeps, so the
 * merge comes to wait for chunks that output chunks in the making hold. */
static void small_interleaved_chunks_give_the_same_bytes_at_every_jobs_count(void **st)
{
    (void)st;
    const struct fault f[NCPU] = { { 0, 0, -1, 0 }, { 250000, 120, -1, 0 }, { -80000, -50, -1, 0 }, { 0, 0, -1, 0 } };
    char in[512], syn[512];
    snprintf(in, sizeof in, "%s", tu_path("small-chunks.bin"));
    snprintf(syn, sizeof syn, "%s", tu_path("small-chunks.sync.bin"));
    gen(in, f, 1, 300000, 99, 99);
    char *json1, *file1;
    size_t len1;
    sync_with_jobs(in, syn, 1, &json1, &file1, &len1);
    for (unsigned jobs = 2; jobs <= 4; jobs += 2) {
        char *json, *file;
        size_t len;
        sync_with_jobs(in, syn, jobs, &json, &file, &len);
        assert_string_equal(json1, json);
        assert_int_equal(len1, len);
        assert_memory_equal(file1, file, len1);
        free(json), free(file);
    }
    free(json1), free(file1);
    unlink(in);
    unlink(syn);
}

static void the_synchronised_trace_keeps_every_record_in_no_more_bytes(void **st)
{
    (void)st;
    char in[512], syn[512], a[2000];
    snprintf(in, sizeof in, "%s", tu_path("size.bin"));
    snprintf(syn, sizeof syn, "%s", tu_path("size.sync.bin"));
    snprintf(a, sizeof a,
             "TMTRACE_FILE='%s' TMTRACE_EVENTS=all TMTRACE_SKEW=1:250000:120 TMTRACE_MIGRATE=2 "
             "'%s' vacation --preset high --threads 2 --ops 3000 >/dev/null 2>&1",
             in, tu_build("tmbench/tmbench"));
    assert_int_equal(tu_run(a, out, sizeof out), 0);
    snprintf(a, sizeof a, "'%s' -o '%s' >/dev/null 2>&1", in, syn);
    assert_int_equal(run("tools/tmsync", a), 0);
    struct stat sr, ss;
    assert_int_equal(stat(in, &sr), 0);
    assert_int_equal(stat(syn, &ss), 0);
    print_message("raw %lld bytes, synchronised %lld bytes\n", (long long)sr.st_size, (long long)ss.st_size);
    assert_true(ss.st_size <= sr.st_size);
    struct tu_trace_counts cr, cs;
    assert_int_equal(tu_count_trace(in, &cr), 0);
    assert_int_equal(tu_count_trace(syn, &cs), 0);
    assert_true(cr.records > 100000);
    assert_int_equal(cs.records, cr.records);
    assert_int_equal(cs.commits, cr.commits);
}

/* Peak RSS of the children run so far, in MiB. */
static double children_rss_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

static void a_trace_larger_than_the_memory_limit_streams_within_it(void **st)
{
    (void)st;
    /* 6 M events: 384 MiB once decoded (64 bytes each), more than the 256 MiB limit */
    const size_t per_thread = 3000000;
    const struct fault f[NCPU] = { { 0, 0, -1, 0 }, { 250000, 120, -1, 0 }, { -80000, -50, -1, 0 }, { 0, 0, -1, 0 } };
    char in[512], a[2000];
    snprintf(in, sizeof in, "%s", tu_path("big.bin"));
    gen(in, f, 1, per_thread, 99, 99);
    assert_true(per_thread * 2 * sizeof(struct tf_event) > 256u << 20);
    snprintf(a, sizeof a, "'%s' >/dev/null 2>&1", in);
    assert_int_equal(run("tools/tmsync", a), 0);
    double rss_sync = children_rss_mib();
    snprintf(a, sizeof a, "--json '%s' 2>&1", tu_path("big.sync.bin"));
    assert_int_equal(run("tools/tmcheck", a), 0);
    double rss_all = children_rss_mib();
    assert_true(tg_json_num(out, NULL, "events") == 2.0 * per_thread);
    print_message("peak RSS: tmsync %.1f MiB, tmsync+tmcheck max %.1f MiB\n", rss_sync, rss_all);
    assert_true(rss_sync < 256.0);
    assert_true(rss_all < 256.0);
    if (!getenv("TMT_KEEP_BIG")) {
        unlink(in);
        unlink(tu_path("big.sync.bin"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(injected_offset_and_drift_are_fitted_and_corrected),
        cmocka_unit_test(json_output_escapes_the_paths),
        cmocka_unit_test(drift_change_needs_the_piecewise_model),
        cmocka_unit_test(merge_keeps_each_threads_order_and_sorts_by_corrected_time),
        cmocka_unit_test(stamps_a_fraction_of_a_ns_apart_on_one_cpu_keep_their_order),
        cmocka_unit_test(too_few_samples_fall_back_and_are_reported),
        cmocka_unit_test(an_incomplete_trace_is_synchronised_said_and_exits_4),
        cmocka_unit_test(bad_inputs_are_refused_with_one_line),
        cmocka_unit_test(a_trace_larger_than_the_memory_limit_streams_within_it),
        cmocka_unit_test(every_jobs_count_gives_the_same_bytes_and_json),
        cmocka_unit_test(small_interleaved_chunks_give_the_same_bytes_at_every_jobs_count),
        cmocka_unit_test(the_synchronised_trace_keeps_every_record_in_no_more_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
