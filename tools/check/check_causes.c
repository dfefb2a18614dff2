/*
 * check_causes.c - what leads tmcheck's report: where the wasted time went
 * and why (see check_causes.h).
 *
 * Owns: the top-sites summary, the top conflicting addresses and cache lines
 * named through the load map, the abort classes table, the triage lines
 * (one per finding: the site, its share of the wasted time, the dominant
 * class, the address and the culprit site), and the time breakdown tables.
 * Never: changes a number.
 */
#include "check_causes.h"

#include <stdlib.h>
#include <string.h>

#include "json_writer.h"
#include "check_triage.h"
#include "symbols.h"

#define CX_TOP_SITES 5
#define CX_TOP_ADDRS 10
#define CX_TOP_LINES 5

static int cmp_site_waste(const void *a, const void *b)
{
    const struct ca_site *x = a, *y = b;
    if (x->time.wasted_oncpu_ns != y->time.wasted_oncpu_ns)
        return x->time.wasted_oncpu_ns < y->time.wasted_oncpu_ns ? 1 : -1;
    if (x->aborts != y->aborts)
        return x->aborts < y->aborts ? 1 : -1;
    return (x->site > y->site) - (x->site < y->site);
}

struct ca_site *cx_sites_by_waste(const struct ca_state *st, size_t *n)
{
    const struct ca_site *s = ca_sites(st, n);
    struct ca_site *c = malloc((*n ? *n : 1) * sizeof *c);
    if (!c) {
        *n = 0;
        return NULL;
    }
    if (*n)
        memcpy(c, s, *n * sizeof *c);
    qsort(c, *n, sizeof *c, cmp_site_waste);
    return c;
}

struct cx_line {
    uint64_t line;
    uint64_t count, words;
    const struct ca_hot *top;   /* its address with the most aborts (names the line) */
};

static int cmp_line_waste(const void *a, const void *b)
{
    const struct cx_line *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return (x->line > y->line) - (x->line < y->line);
}

static int cmp_hot_addr(const void *a, const void *b)
{
    uint64_t x = (*(const struct ca_hot *const *)a)->addr, y = (*(const struct ca_hot *const *)b)->addr;
    return (x > y) - (x < y);
}

/* The 64-byte lines of the hot addresses, by aborts; *n lines. */
static struct cx_line *hot_lines(const struct ca_state *st, size_t *n)
{
    size_t nh;
    const struct ca_hot *h = ca_hot_addresses(st, &nh);
    const struct ca_hot **byaddr = malloc((nh ? nh : 1) * sizeof *byaddr);
    struct cx_line *l = malloc((nh ? nh : 1) * sizeof *l);
    *n = 0;
    if (!byaddr || !l) {
        free(byaddr);
        free(l);
        return NULL;
    }
    for (size_t i = 0; i < nh; i++)
        byaddr[i] = &h[i];
    qsort(byaddr, nh, sizeof *byaddr, cmp_hot_addr);
    for (size_t i = 0; i < nh; i++) {
        const struct ca_hot *x = byaddr[i];
        uint64_t line = x->addr >> 6;
        if (*n == 0 || l[*n - 1].line != line)
            l[(*n)++] = (struct cx_line){ line, 0, 0, x };
        struct cx_line *c = &l[*n - 1];
        c->count += x->count;
        c->words++;
        if (x->count > c->top->count)
            c->top = x;
    }
    free(byaddr);
    qsort(l, *n, sizeof *l, cmp_line_waste);
    return l;
}

/* A hot address by its one name (cx_word_name). */
static void hot_name(struct sym_table *sym, const struct ca_hot *h, char *out, size_t cap)
{
    char obj[CX_OBJ_NAME], fld[64];
    cx_word_name(sym, h->addr, h->alloc_pc, h->addr - h->alloc_off, obj, fld, out, cap);
}

static double share(double a, double b) { return b > 0 ? 100.0 * a / b : 0.0; }

/* The sites by the time their aborted attempts ran on the CPU, counts beside. */
static void text_top_sites(FILE *f, const struct cr_input *in, const struct ca_site *s, size_t ns)
{
    const struct ca_totals *t = ca_totals(in->st);
    double total = cx_oncpu_wasted(in);
    char nb[600];
    fprintf(f, "\ntop sites by on-CPU wasted time (%.3f ms on the CPU in %llu %s)\n", total / 1e6,
            (unsigned long long)t->aborts, cx_aborts(t->aborts));
    for (size_t i = 0; i < ns && i < CX_TOP_SITES && s[i].aborts; i++)
        fprintf(f, "  %5.1f%%  %s: %llu %s of %llu attempts, %.3f ms\n", share(s[i].time.wasted_oncpu_ns, total),
                cx_site_name(in->ix, s[i].site, nb, sizeof nb), (unsigned long long)s[i].aborts,
                cx_aborts(s[i].aborts),
                (unsigned long long)s[i].attempts, s[i].time.wasted_oncpu_ns / 1e6);
}
static int cmp_hot_count(const void *a, const void *b)
{
    const struct ca_hot *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return (x->addr > y->addr) - (x->addr < y->addr);
}

/* The words by abort count (their time is in the data and triage above,
 * on the CPU; here it would include the descheduled attempts). */
static void text_top_addresses(FILE *f, const struct cr_input *in)
{
    size_t nh, nl;
    const struct ca_hot *h0 = ca_hot_addresses(in->st, &nh);
    struct ca_hot *h = malloc((nh ? nh : 1) * sizeof *h);
    if (!nh || !h) {
        free(h);
        return;
    }
    memcpy(h, h0, nh * sizeof *h);
    qsort(h, nh, sizeof *h, cmp_hot_count);
    char name[700];
    fprintf(f, "\ntop conflicting words (by aborts)\n");
    for (size_t i = 0; i < nh && i < CX_TOP_ADDRS; i++) {
        hot_name(in->sym, &h[i], name, sizeof name);
        fprintf(f, "  %s (0x%llx): %llu %s (the culprit wrote this word %llu, only others of its stripe %llu, "
                "not known %llu; %llu found it locked)\n", name, (unsigned long long)h[i].addr,
                (unsigned long long)h[i].count, cx_aborts(h[i].count), (unsigned long long)h[i].true_count,
                (unsigned long long)h[i].false_count,
                (unsigned long long)(h[i].count - h[i].true_count - h[i].false_count),
                (unsigned long long)h[i].holder_count);
    }
    free(h);
    struct cx_line *l = hot_lines(in->st, &nl);
    if (l && nl) {
        fprintf(f, "top cache lines (by aborts)\n");
        for (size_t i = 0; i < nl && i < CX_TOP_LINES; i++) {
            hot_name(in->sym, l[i].top, name, sizeof name);
            fprintf(f, "  line of %s (0x%llx): %llu %s on %llu words\n", name,
                    (unsigned long long)(l[i].line << 6), (unsigned long long)l[i].count, cx_aborts(l[i].count),
                    (unsigned long long)l[i].words);
        }
    }
    free(l);
}

static void text_classes(FILE *f, const struct cr_input *in)
{
    const struct ca_totals *t = ca_totals(in->st);
    fprintf(f, "\nabort classes%s\n", in->format_version >= 2 ? " (STM aborts matched by what they found)"
                                                              : " (version 1 trace: STM aborts matched by time)");
    for (unsigned c = 0; c < CA_CLASSES; c++)
        if (t->cls[c] || c == CA_CL_CONFLICT_FREE)
            fprintf(f, "  %-18s %9llu  %12.3f ms of wall time\n", ca_class_name(c), (unsigned long long)t->cls[c],
                    t->cls_wasted_ns[c] / 1e6);
    if (t->by_identity || t->by_time)
        fprintf(f, "  attributed by identity %llu, by time window %llu\n", (unsigned long long)t->by_identity,
                (unsigned long long)t->by_time);
    if (t->holder_unknown)
        fprintf(f, "  note: %llu aborts found a lock whose holder's attempt is not in the trace\n",
                (unsigned long long)t->holder_unknown);
    if (!in->synced)
        fprintf(f, "  note: this trace is not synchronised: run tmsync on it first; attribution across "
                "threads compares stamps of different clocks\n");
}

static double ms(double ns) { return ns / 1e6; }

/* Per thread: the parts of its wall time, and their sum against it. */
#define CX_TIME_THREADS 16   /* threads listed in the text; all of them in --json */

/* The sums of the threads' times. */
static struct ca_time threads_time(const struct cr_input *in)
{
    size_t nt;
    const struct ca_thread *th = ca_threads(in->st, &nt);
    struct ca_time all = { 0 };
    for (size_t i = 0; i < nt; i++) {
        const struct ca_time *x = &th[i].time;
        all.wall_ns += x->wall_ns;
        all.committed_ns += x->committed_ns;
        all.wasted_ns += x->wasted_ns;
        all.backoff_ns += x->backoff_ns;
        all.outside_ns += x->outside_ns;
        all.dropped_ns += x->dropped_ns;
        all.serial_ns += x->serial_ns;
        all.tracer_ns += x->tracer_ns;
        all.desched_n += x->desched_n;
        all.desched_ns += x->desched_ns;
        all.desched_off_ns += x->desched_off_ns;
        all.desched_aborted_n += x->desched_aborted_n;
        all.wasted_oncpu_ns += x->wasted_oncpu_ns;
    }
    return all;
}

/* One row of the time table; the dropped events' column only when some
 * thread has any (`dropped`). */
static void time_row(FILE *f, const char *who, const struct ca_time *x, int dropped)
{
    double sum = x->committed_ns + x->wasted_ns + x->backoff_ns + x->outside_ns + x->dropped_ns;
    fprintf(f, "  %6s %10.3f %10.3f %10.3f %10.3f %9.3f %10.3f", who, ms(x->wall_ns), ms(x->committed_ns),
            ms(x->wasted_ns), ms(x->wasted_oncpu_ns), ms(x->backoff_ns), ms(x->outside_ns));
    if (dropped)
        fprintf(f, " %10.3f", ms(x->dropped_ns));
    fprintf(f, " %9.3f %9.3f %7.2f%%  %llu (%.3f)\n", ms(x->serial_ns), ms(x->tracer_ns), share(sum, x->wall_ns),
            (unsigned long long)x->desched_n, ms(x->desched_ns));
}

/* Per thread: the parts of its wall time, and their sum against it; a
 * total row (the sums over all threads). */
static void text_time_threads(FILE *f, const struct cr_input *in)
{
    size_t nt;
    const struct ca_thread *th = ca_threads(in->st, &nt);
    struct ca_time all = threads_time(in);
    int dropped = all.dropped_ns > 0;
    fprintf(f, "\nwhere the time goes (ms; tracer = events x %.1f ns %s, an estimate inside the others%s)\n"
            "  %6s %10s %10s %10s %10s %9s %10s", in->event_cost_ns,
            in->event_cost_measured ? "(measured at init)" : "(assumed: the trace has no calibration)",
            dropped ? "; dropped = from a hole in the thread's events to its next start" : "", "thread", "wall",
            "committed", "wasted", "on-CPU", "backoff", "outside");
    if (dropped)
        fprintf(f, " %10s", "dropped");
    fprintf(f, " %9s %9s %8s  %s\n", "serial", "tracer", "sum/wall", "descheduled attempts (ms)");
    char id[16];
    for (size_t i = 0; i < nt && i < CX_TIME_THREADS; i++) {
        snprintf(id, sizeof id, "%u", th[i].thread);
        time_row(f, id, &th[i].time, dropped);
    }
    if (nt > CX_TIME_THREADS)
        fprintf(f, "  ... %zu more threads (--json lists all)\n", nt - CX_TIME_THREADS);
    if (nt > 1)
        time_row(f, "all", &all, dropped);
}

/* Per site, by wasted time: sums beside medians per attempt. */
static void text_time_sites(FILE *f, const struct cr_input *in, const struct ca_site *s, size_t ns)
{
    char nb[600];
    fprintf(f, "  %-40s %10s %9s %10s %10s %9s %9s %9s  %s\n", "site (ms; median per attempt in us)", "committed",
            "median", "wasted", "on-CPU", "median", "backoff", "tracer", "descheduled attempts (ms)");
    for (size_t i = 0; i < ns; i++) {
        const struct ca_time *x = &s[i].time;
        fprintf(f, "  %-40s %10.3f %9.1f %10.3f %10.3f %9.1f %9.3f %9.3f  %llu (%.3f)\n",
                cx_site_name(in->ix, s[i].site, nb, sizeof nb), ms(x->committed_ns), x->committed_median_ns / 1e3,
                ms(x->wasted_ns), ms(x->wasted_oncpu_ns), x->aborted_median_ns / 1e3, ms(x->backoff_ns), ms(x->tracer_ns),
                (unsigned long long)x->desched_n, ms(x->desched_ns));
    }
}

/* Above this estimated share of the threads' time, the report warns that
 * the tracer may have changed what it measured. */
#define CX_TRACER_WARN 0.05

static const char *level_name(uint32_t level)
{
    return level == 0 ? "off" : level == 1 ? "tx" : level == 2 ? "all" : "unknown";
}

/* The tracer's own share and the descheduled attempts, before any ranking. */
static void text_head(FILE *f, const struct cr_input *in)
{
    struct ca_time all = threads_time(in);
    double sh = all.wall_ns > 0 ? all.tracer_ns / all.wall_ns : 0;
    fprintf(f, "\ntracer: an estimated %.1f%% of the threads' time (level %s, %.1f ns per event, %s)\n", 100 * sh,
            level_name(in->ix->hdr.events_level), in->event_cost_ns, in->event_cost_measured ? "measured" : "assumed");
    if (sh > CX_TRACER_WARN)
        fprintf(f, "  note: abort rates may differ from an untraced run%s\n",
                in->ix->hdr.events_level >= 2 ? "; level tx (TMTRACE_EVENTS=tx) records far fewer events" : "");
    if (all.desched_n)
        fprintf(f, "descheduled: %llu attempts descheduled or migrated (%llu aborted), %.3f ms of wall time, "
                "%.3f ms of it off the CPU: more threads than CPUs, or other load; not charged to any site or "
                "data below\n", (unsigned long long)all.desched_n, (unsigned long long)all.desched_aborted_n,
                all.desched_ns / 1e6, all.desched_off_ns / 1e6);
    else
        fprintf(f, "descheduled: no attempt spanned a deschedule or a migration\n");
    const struct ca_totals *t = ca_totals(in->st);
    if (t->cls[CA_CL_HOLDER_PREEMPTED])
        fprintf(f, "  and %llu aborts found a lock whose holder was descheduled: their lines come last in the "
                "triage\n", (unsigned long long)t->cls[CA_CL_HOLDER_PREEMPTED]);
}

void cx_text(FILE *f, const struct cr_input *in)
{
    size_t ns;
    struct ca_site *s = cx_sites_by_waste(in->st, &ns);
    text_head(f, in);
    text_top_sites(f, in, s, ns);
    cx_triage_text(f, in);
    text_top_addresses(f, in);
    text_classes(f, in);
    text_time_threads(f, in);
    text_time_sites(f, in, s, ns);
    const char *notes = sym_notes(in->sym);
    if (notes[0])
        fprintf(f, "symbol notes:\n%s", notes);
    free(s);
}

static void json_classes(struct jw *w, const uint64_t *n, const double *wasted)
{
    jw_object(w);
    for (unsigned c = 0; c < CA_CLASSES; c++) {
        jw_key(w, ca_class_name(c));
        jw_object(w);
        jw_ku64(w, "count", n[c]);
        jw_knum(w, "wasted_ns", wasted[c], 0);
        jw_object_end(w);
    }
    jw_object_end(w);
}

static void json_top_sites(struct jw *w, const struct cr_input *in)
{
    char nb[700];
    size_t ns;
    struct ca_site *s = cx_sites_by_waste(in->st, &ns);
    jw_key(w, "top_sites");
    jw_array(w);
    for (size_t i = 0; i < ns && s; i++) {
        jw_object(w);
        jw_ku64(w, "site", s[i].site);
        jw_kstr(w, "name", cx_site_name(in->ix, s[i].site, nb, sizeof nb));
        jw_knum(w, "wasted_ns", s[i].wasted_ns, 0);
        jw_knum(w, "oncpu_wasted_ns", s[i].time.wasted_oncpu_ns, 0);
        jw_ku64(w, "aborts", s[i].aborts);
        jw_key(w, "classes");
        json_classes(w, s[i].cls, s[i].cls_wasted_ns);
        jw_object_end(w);
    }
    jw_array_end(w);
    free(s);
}

static void json_time(struct jw *w, const struct ca_time *x)
{
    jw_object(w);
    jw_knum(w, "wall_ns", x->wall_ns, 0);
    jw_knum(w, "committed_ns", x->committed_ns, 0);
    jw_knum(w, "wasted_ns", x->wasted_ns, 0);
    jw_knum(w, "backoff_ns", x->backoff_ns, 0);
    jw_knum(w, "outside_ns", x->outside_ns, 0);
    jw_knum(w, "dropped_ns", x->dropped_ns, 0);
    jw_knum(w, "serial_ns", x->serial_ns, 0);
    jw_knum(w, "tracer_ns", x->tracer_ns, 0);
    jw_ku64(w, "committed_attempts", x->committed_n);
    jw_ku64(w, "aborted_attempts", x->aborted_n);
    jw_knum(w, "committed_median_ns", x->committed_median_ns, 0);
    jw_knum(w, "aborted_median_ns", x->aborted_median_ns, 0);
    jw_ku64(w, "descheduled_attempts", x->desched_n);
    jw_knum(w, "descheduled_ns", x->desched_ns, 0);
    jw_knum(w, "descheduled_off_cpu_ns", x->desched_off_ns, 0);
    jw_ku64(w, "descheduled_aborted", x->desched_aborted_n);
    jw_knum(w, "wasted_oncpu_ns", x->wasted_oncpu_ns, 0);
    jw_object_end(w);
}

/* One thread's or site's entry: {"<id_key>": id, "time": {...}}. */
static void json_time_of(struct jw *w, const char *id_key, uint64_t id, const struct ca_time *x)
{
    jw_object(w);
    jw_ku64(w, id_key, id);
    jw_key(w, "time");
    json_time(w, x);
    jw_object_end(w);
}

/* "time": per thread and per site (sites by wasted time). */
static void json_time_all(struct jw *w, const struct cr_input *in)
{
    size_t nt, ns;
    const struct ca_thread *th = ca_threads(in->st, &nt);
    struct ca_site *s = cx_sites_by_waste(in->st, &ns);
    jw_key(w, "time");
    jw_object(w);
    jw_knum(w, "event_cost_ns", in->event_cost_ns, 1);
    jw_kbool(w, "event_cost_measured", in->event_cost_measured);
    jw_key(w, "threads");
    jw_array(w);
    for (size_t i = 0; i < nt; i++)
        json_time_of(w, "thread", th[i].thread, &th[i].time);
    jw_array_end(w);
    jw_key(w, "sites");
    jw_array(w);
    for (size_t i = 0; s && i < ns; i++)
        json_time_of(w, "site", s[i].site, &s[i].time);
    jw_array_end(w);
    jw_object_end(w);
    free(s);
}

static void json_top_addresses(struct jw *w, const struct cr_input *in)
{
    char nb[700], hex[32];
    size_t nh;
    const struct ca_hot *h = ca_hot_addresses(in->st, &nh);
    jw_key(w, "top_addresses");
    jw_array(w);
    for (size_t i = 0; i < nh && i < 100; i++) {
        hot_name(in->sym, &h[i], nb, sizeof nb);
        snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)h[i].addr);
        jw_object(w);
        jw_kstr(w, "address", hex);
        jw_kstr(w, "name", nb);
        jw_ku64(w, "aborts", h[i].count);
        jw_ku64(w, "true", h[i].true_count);
        jw_ku64(w, "false", h[i].false_count);
        jw_ku64(w, "lock_held", h[i].holder_count);
        jw_knum(w, "wasted_ns", h[i].wasted_ns, 0);
        jw_ku64(w, "victim_site", h[i].victim_site);
        jw_ku64(w, "culprit_site", h[i].culprit_site);
        jw_object_end(w);
    }
    jw_array_end(w);
}

void cx_json(struct jw *w, const struct cr_input *in)
{
    const struct ca_totals *t = ca_totals(in->st);
    jw_key(w, "classes");
    json_classes(w, t->cls, t->cls_wasted_ns);
    jw_key(w, "attribution");
    jw_object(w);
    jw_ku64(w, "by_identity", t->by_identity);
    jw_ku64(w, "by_time", t->by_time);
    jw_ku64(w, "holder_unknown", t->holder_unknown);
    jw_object_end(w);
    struct ca_time all = threads_time(in);
    jw_key(w, "tracer");
    jw_object(w);
    jw_kstr(w, "level", level_name(in->ix->hdr.events_level));
    jw_knum(w, "share", all.wall_ns > 0 ? all.tracer_ns / all.wall_ns : 0.0, 6);
    jw_kbool(w, "warn", all.wall_ns > 0 && all.tracer_ns / all.wall_ns > CX_TRACER_WARN);
    jw_object_end(w);
    jw_ku64(w, "descheduled_attempts", all.desched_n);
    jw_ku64(w, "descheduled_aborted", all.desched_aborted_n);
    jw_knum(w, "descheduled_wall_ns", all.desched_ns, 0);
    jw_knum(w, "descheduled_off_cpu_ns", all.desched_off_ns, 0);
    jw_knum(w, "oncpu_wasted_ns", all.wasted_oncpu_ns, 0);
    cx_triage_json(w, in);
    json_top_sites(w, in);
    json_time_all(w, in);
    json_top_addresses(w, in);
}
