/*
 * test_plots.c - tmplot: every subcommand runs, and every figure it names
 * exists as a non-empty PNG (with the PNG signature) and an SVG. Inputs are
 * made here: a validate-style CSV folder and a synchronised trace written
 * with the format module, so that the figures do not depend on timing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "test_util.h"
#include "tmtrace.h"
#include "trace_file.h"
#include "trace_gen.h"

static const char *tmplot(void)
{
    static char p[512];
    const char *src = getenv("TMT_SOURCE_ROOT");
    snprintf(p, sizeof p, "%s/plots/tmplot", src ? src : TMT_SOURCE_ROOT);
    return p;
}

/* The figure is a real PNG of some size, and its SVG twin exists. */
static void assert_figure(const char *base)
{
    char png[600], svg[600];
    snprintf(png, sizeof png, "%s.png", base);
    snprintf(svg, sizeof svg, "%s.svg", base);
    size_t len = 0;
    char *data = tu_read_file(png, &len);
    if (!data)
        fail_msg("missing figure %s", png);
    assert_true(len > 2000);
    assert_memory_equal(data, "\x89PNG\r\n\x1a\n", 8);
    free(data);
    data = tu_read_file(svg, &len);
    assert_non_null(data);
    assert_non_null(strstr(data, "<svg"));
    free(data);
}

/* Every line tmplot prints is a figure path: all of them must be PNGs. */
static int check_listed(const char *out)
{
    int n = 0;
    char line[600];
    const char *p = out;
    while (*p) {
        size_t k = strcspn(p, "\n");
        snprintf(line, sizeof line, "%.*s", (int)k, p);
        if (k > 4 && strcmp(line + k - 4, ".png") == 0) {
            line[k - 4] = '\0';
            assert_figure(line);
            n++;
        }
        p += k + (p[k] == '\n');
    }
    return n;
}

static void write_validate_dir(const char *dir)
{
    char path[600];
    snprintf(path, sizeof path, "%s/results.csv", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("workload,threads,scenario,model,right_model,events,temporal_before,temporal_after,"
          "grammar_before,grammar_after,out_of_place_pct_before,out_of_place_pct_after,"
          "err_p50_ns,err_p99_ns,err_max_ns,error\n", f);
    const char *scen[] = { "native", "offset", "offset+drift", "drift-change", "migrate" };
    const char *wl[] = { "bank", "vacation" };
    unsigned seed = 7;
    for (int w = 0; w < 2; w++)
        for (int t = 1; t <= 2; t++)
            for (int s = 0; s < 5; s++)
                for (int m = 0; m < 2; m++) {
                    seed = seed * 1103515245u + 12345u;
                    int before = s ? (int)(seed % 5000) + 10 : 0;
                    int right = (m == 1) == (s == 3);
                    int after = right || s != 3 ? 0 : before / 10;
                    double err = s ? (right ? 40.0 + seed % 50 : 3000.0 + seed % 9000) : -1;
                    fprintf(f, "%s,%d,%s,%s,%d,%d,%d,%d,%d,%d,%.3f,%.3f,", wl[w], t, scen[s],
                            m ? "piecewise" : "linear", right, 100000, before, after, before / 3,
                            after / 3, before / 1000.0, after / 1000.0);
                    if (err > 0)
                        fprintf(f, "%.1f,%.1f,%.1f,\n", err / 3, err, err * 2);
                    else
                        fputs(",,,\n", f);
                }
    fclose(f);
    snprintf(path, sizeof path, "%s/intrusion.csv", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("workload,threads,level,rep,seconds,ops,ns_per_op,commits,aborts,abort_rate_pct\n", f);
    const char *lv[] = { "off", "tx", "all" };
    for (int w = 0; w < 2; w++)
        for (int r = 0; r < 3; r++)
            for (int l = 0; l < 3; l++)
                fprintf(f, "%s,2,%s,%d,0.3,100000,%.1f,99000,%d,%.2f\n", wl[w], lv[l], r,
                        900.0 * (1 + 0.1 * l) + 10 * r, 1000 + 10 * r, 1.0 + 0.2 * r);
    fclose(f);
}

static void validate_figures_are_pngs_and_svgs(void **state)
{
    (void)state;
    const char *dir = tu_path("validate");
    mkdir(dir, 0755);
    write_validate_dir(dir);
    char cmd[1200], out[4096];
    snprintf(cmd, sizeof cmd, "'%s' validate '%s' 2>&1", tmplot(), dir);
    int rc = tu_run(cmd, out, sizeof out);
    if (rc != 0)
        fail_msg("tmplot validate failed: %s", out);
    char base[600];
    const char *names[] = { "inconsistencies", "grammar", "out_of_place", "clock_error", "intrusion" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(base, sizeof base, "%s/figures/%s", dir, names[i]);
        assert_figure(base);
    }
    assert_int_equal(check_listed(out), 5);
}

/* A synchronised trace of 3 threads and 3 sites with conflicts between them. */
static void write_trace(const char *path)
{
    struct tf_header h = { .version = TF_VERSION, .flags = TF_HDR_SYNCED, .tsc_hz = 2000000000ull,
                           .ncpus = 2, .pid = 99, .events_level = 2 };
    struct tf_writer *w = tf_create(path, &h, 0);
    assert_non_null(w);
    struct tf_site s[3] = { { .id = 1, .line = 1 }, { .id = 2, .line = 2 }, { .id = 3, .line = 3 } };
    const char *labels[] = { "reserve", "cancel", "update" };
    for (int i = 0; i < 3; i++) {
        snprintf(s[i].file, sizeof s[i].file, "vacation.c");
        snprintf(s[i].label, sizeof s[i].label, "%s", labels[i]);
    }
    assert_int_equal(tf_write_sites(w, s, 3), 0);
    /* Clock samples of 2 CPUs (pre and post phases, a few in-run) and the
     * linear model that fits them, with a little noise around it. */
    struct tf_sample smp[2 * 120];
    struct tf_cpu_model *mod = calloc(2, sizeof *mod);
    assert_non_null(mod);
    size_t ns = 0;
    for (uint32_t c = 0; c < 2; c++) {
        double a = 0.5 * (1 + (c ? 80e-6 : -40e-6)), b = c ? 250000.0 : -120000.0;
        mod[c] = (struct tf_cpu_model){ .cpu = c, .used = 120, .nseg = 1, .drift_ppm = c ? 80 : -40 };
        mod[c].seg[0] = (struct tf_model_segment){ .tsc_from = 0, .a = a, .b = b };
        for (int i = 0; i < 120; i++) {
            uint64_t tsc = 2000000000ull + (uint64_t)i * (i < 50 ? 200000ull : i < 70 ? 4000000ull : 300000ull)
                           + (i >= 50 ? 10000000ull : 0) + (i >= 70 ? 80000000ull : 0);
            double noise = (double)((i * 37) % 11) - 5.0;
            smp[ns++] = (struct tf_sample){ .tsc = tsc, .truth_tsc = tsc, .ref_ns = (uint64_t)(a * (double)tsc + b + noise),
                                            .width = 150, .cpu = (uint16_t)c,
                                            .phase = i < 50 ? TF_PHASE_PRE : i < 70 ? TF_PHASE_INRUN : TF_PHASE_POST };
        }
    }
    assert_int_equal(tf_write_samples(w, smp, ns), 0);
    assert_int_equal(tf_write_models(w, mod, 2), 0);
    free(mod);
    enum { N = 3 * 400 * 4 };
    struct tf_event *ev = calloc(N, sizeof *ev);
    assert_non_null(ev);
    size_t n = 0;
    uint64_t seq[4] = { 0 }, inst[4] = { 0 };
    unsigned seed = 3;
    /* Rounds: each thread runs one attempt; thread (round % 3) + 1 aborts on
     * the address the previous round's committer wrote. */
    for (int round = 0; round < 400; round++) {
        uint64_t t0 = 1000 + (uint64_t)round * 3000;
        for (uint32_t t = 1; t <= 3; t++) {
            seed = seed * 1103515245u + 12345u;
            uint32_t site = 1 + (t + (uint32_t)round) % 3;
            int aborts = round > 0 && t == (uint32_t)(round % 3) + 1;
            int hw = (seed >> 8) % 4 == 0;
            uint64_t st = t0 + t * 200 + seed % 300, addr = 0x1000 + 64 * (uint64_t)(round % 5);
            inst[t]++;
            ev[n++] = (struct tf_event){ .ts = st, .thread = t, .kind = TF_EV_START, .site = site,
                                         .instance = inst[t], .value = hw ? TF_START_HTM_EMU : 0 };
            ev[n++] = (struct tf_event){ .ts = st + 300, .thread = t, .kind = TF_EV_WRITE, .site = site,
                                         .instance = inst[t], .addr = addr };
            if (aborts)
                ev[n++] = (struct tf_event){ .ts = st + 900, .thread = t, .kind = TF_EV_ABORT, .site = site,
                                             .instance = inst[t], .addr = 0x1000 + 64 * (uint64_t)((round - 1) % 5),
                                             .reason = hw ? TMT_ABORT_HTM : 1 + seed % 4 };
            else
                ev[n++] = (struct tf_event){ .ts = st + 1100, .thread = t, .kind = TF_EV_COMMIT,
                                             .site = site, .instance = inst[t], .value = 1ull << 32 };
        }
    }
    /* merged order: by timestamp, stable per thread */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && ev[j - 1].ts > ev[j].ts; j--) {
            struct tf_event tmp = ev[j];
            ev[j] = ev[j - 1];
            ev[j - 1] = tmp;
        }
    for (size_t i = 0; i < n; i++)
        ev[i].seq = seq[ev[i].thread]++;
    assert_int_equal(tg_write_events(w, 0, ev, n, TF_CODEC_NONE, 0), 0);
    assert_int_equal(tf_finish(w, 0), 0);
    free(ev);
}

static void trace_figures_are_pngs_and_svgs(void **state)
{
    (void)state;
    const char *trace = tu_path("demo.sync.bin"), *out_dir = tu_path("trace_figs");
    write_trace(trace);
    char cmd[1600], out[4096];
    snprintf(cmd, sizeof cmd, "PATH='%s':\"$PATH\" '%s' trace '%s' --out '%s' 2>&1",
             tu_build("tools"), tmplot(), trace, out_dir);
    int rc = tu_run(cmd, out, sizeof out);
    if (rc != 0)
        fail_msg("tmplot trace failed: %s", out);
    char base[600];
    const char *names[] = { "timeline", "aborts", "conflicts" };
    for (size_t i = 0; i < 3; i++) {
        snprintf(base, sizeof base, "%s/demo_%s", out_dir, names[i]);
        assert_figure(base);
    }
    assert_int_equal(check_listed(out), 3);
}

static void fit_figures_one_per_cpu(void **state)
{
    (void)state;
    const char *trace = tu_path("fit.sync.bin"), *out_dir = tu_path("fit_figs");
    write_trace(trace);
    char cmd[1600], out[4096];
    snprintf(cmd, sizeof cmd, "PATH='%s':\"$PATH\" '%s' fit '%s' --out '%s' 2>&1", tu_build("tools"), tmplot(),
             trace, out_dir);
    int rc = tu_run(cmd, out, sizeof out);
    if (rc != 0)
        fail_msg("tmplot fit failed: %s", out);
    char base[600];
    for (int c = 0; c < 2; c++) {
        snprintf(base, sizeof base, "%s/fit_fit_cpu%d", out_dir, c);
        assert_figure(base);
    }
    assert_int_equal(check_listed(out), 2);
}

static void bad_input_is_one_line_exit_2(void **state)
{
    (void)state;
    char cmd[1200], out[2048];
    const char *cases[] = { "'%s' validate /nonexistent 2>&1 >/dev/null", "'%s' --bogus 2>&1 >/dev/null",
                            "'%s' 2>&1 >/dev/null", "'%s' trace /nonexistent --out /tmp 2>&1 >/dev/null" };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(cmd, sizeof cmd, cases[i], tmplot());
        assert_int_equal(tu_run(cmd, out, sizeof out), 2);
        assert_true(strlen(out) > 0);
        assert_int_equal(strchr(out, '\n'), out + strlen(out) - 1);
    }
    /* gnuplot missing: named, exit 2 */
    const char *dir = tu_path("validate2");
    mkdir(dir, 0755);
    write_validate_dir(dir);
    snprintf(cmd, sizeof cmd, "PATH=/nonexistent \"$(python3 -c 'import sys; print(sys.executable)')\" '%s' validate '%s' 2>&1", tmplot(), dir);
    assert_int_equal(tu_run(cmd, out, sizeof out), 2);
    assert_non_null(strstr(out, "gnuplot"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(validate_figures_are_pngs_and_svgs),
        cmocka_unit_test(trace_figures_are_pngs_and_svgs),
        cmocka_unit_test(fit_figures_one_per_cpu),
        cmocka_unit_test(bad_input_is_one_line_exit_2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
