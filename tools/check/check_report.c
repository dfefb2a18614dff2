/*
 * check_report.c - tmcheck's text report, JSON object and CSV files.
 *
 * Owns: presentation only: names of sites, units, quoting.
 * Never: changes a number it is given, or leaves a half-written CSV file.
 */
#include "check_report.h"

#include <stdlib.h>
#include <string.h>

#include "check_causes.h"
#include "check_triage.h"
#include "json_writer.h"
#include "symbols.h"
#include "tool_common.h"

static const char *site_name(const struct trace_index *ix, uint32_t id, char *buf, size_t cap)
{
    return cx_site_name(ix, id, buf, cap);
}

/* Width of the widest site name, so that no name is cut. */
static int name_width(const struct cr_input *in)
{
    char nb[600];
    size_t w = 4;
    for (size_t i = 0; i < in->ix->nsites; i++) {
        size_t l = strlen(site_name(in->ix, in->ix->sites[i].id, nb, sizeof nb));
        if (l > w)
            w = l;
    }
    return (int)w;
}

static void csv_str(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static double pct(uint64_t a, uint64_t b) { return b ? 100.0 * (double)a / (double)b : 0.0; }
static double mean(uint64_t sum, uint64_t n) { return n ? (double)sum / (double)n : 0.0; }

/* Which results the dropped events could have changed. The checks of
 * order and grammar start again after each hole they leave in a thread's
 * program order, and the attempts a hole cuts are counted apart. */
static const char *dropped_note(void)
{
    return "the counts and times of attempts, commits and aborts lack the dropped ones, an abort whose culprit's "
           "commit was dropped has no culprit, and the attempts the drops cut are left out (cut attempts)";
}

/* The accesses of the run estimated from those of the attempts
 * TMTRACE_DETAIL chose (each attempt as likely as any other). */
static double detail_scaled(const struct ca_totals *t)
{
    return t->detailed ? (double)t->accesses * (double)t->attempts / (double)t->detailed : 0.0;
}

/* What the trace's level can tell: the head of the report. */
static void text_level(FILE *f, const struct cr_input *in, const struct ca_totals *t)
{
    const struct tf_header *h = &in->ix->hdr;
    if (h->events_level == 1 && h->version >= 4)
        fprintf(f, "level tx with write sets: every software abort's class, culprit and word as at level all\n");
    else if (h->events_level == 1)
        fprintf(f, "level tx without write sets (format version %u): which word a culprit wrote is unknown at "
                "this level\n", h->version);
    if (h->detail)
        fprintf(f, "sampled detail (TMTRACE_DETAIL=%u): %llu of %llu attempts recorded with their reads and "
                "writes; their %llu accesses scale to an estimated %.0f for the run\n", h->detail,
                (unsigned long long)t->detailed, (unsigned long long)t->attempts, (unsigned long long)t->accesses,
                detail_scaled(t));
    if (t->shed)
        fprintf(f, "shed: %llu of %llu attempts recorded as at level tx (their write sets, not their reads and "
                "writes): buffers ran short while the tracer kept to TMTRACE_WRITER_SHARE\n",
                (unsigned long long)t->shed, (unsigned long long)t->attempts);
}

/* Trace, totals, consistency. */
static void text_totals(FILE *f, const struct cr_input *in, const struct ca_totals *t)
{
    size_t nthreads;
    ca_threads(in->st, &nthreads);
    fprintf(f, "%s: %s trace, %llu events, %zu threads\n", in->path, in->synced ? "synchronised" : "raw",
            (unsigned long long)t->events, nthreads);
    fprintf(f, "transactions %llu, attempts %llu, commits %llu, aborts %llu (stm %llu, htm %llu, user %llu), "
            "fallbacks %llu\n",
            (unsigned long long)t->transactions, (unsigned long long)t->attempts, (unsigned long long)t->commits,
            (unsigned long long)t->aborts, (unsigned long long)t->stm_aborts, (unsigned long long)t->htm_aborts,
            (unsigned long long)t->user_aborts, (unsigned long long)t->fallbacks);
    if (t->htm_injected)
        fprintf(f, "of the htm aborts, %llu injected by the emulation (TMTRACE_HTM=emulate), not by hardware\n",
                (unsigned long long)t->htm_injected);
    text_level(f, in, t);
    if (t->serial)
        fprintf(f, "serial attempts %llu (the program's request %llu, the runtime's policy after repeated conflicts "
                "%llu, a thread alone in transactions %llu), %.3f ms alone; %llu of them while another thread had a "
                "transaction to run%s\n",
                (unsigned long long)t->serial, (unsigned long long)t->serial_by_reason[TF_SERIAL_REQUESTED],
                (unsigned long long)t->serial_by_reason[TF_SERIAL_CONTENTION],
                (unsigned long long)t->serial_by_reason[TF_SERIAL_ALONE], t->serial_ns / 1e6,
                (unsigned long long)t->serial_overlapped,
                t->serial_overlapped ? " (it waited)" : ": nothing waited");
    fprintf(f, "dropped events %llu%s\n", (unsigned long long)in->dropped, in->ix->have_end ? "" : " (no END chunk)");
    if (t->cut_attempts)
        fprintf(f, "cut attempts %llu (their start or their end is among the missing events: no commit or abort "
                "counted for them, and not analysed)\n", (unsigned long long)t->cut_attempts);
    if (in->dropped)
        fprintf(f, "note: %s\n", dropped_note());
    if (in->skipped_chunks)
        fprintf(f, "note: %llu damaged chunks skipped (--salvage); their events are missing\n",
                (unsigned long long)in->skipped_chunks);
    if (!in->verdict->complete)
        fprintf(f, "incomplete trace: %s\n", in->verdict->line);
    cx_text(f, in);
    fprintf(f, "\nconsistency\n");
    fprintf(f, "  temporal inconsistencies  %llu\n", (unsigned long long)t->temporal);
    fprintf(f, "  grammar violations        %llu\n", (unsigned long long)t->grammar);
    fprintf(f, "  out-of-place events       %llu (%.4f%%)\n", (unsigned long long)t->out_of_place,
            pct(t->out_of_place, t->events));
    fprintf(f, "  late starts               %llu\n", (unsigned long long)t->late_starts);
    fprintf(f, "  premature commits/aborts  %llu\n", (unsigned long long)t->premature_ends);
    if (t->open_at_end)
        fprintf(f, "  attempts without an end  %llu\n", (unsigned long long)t->open_at_end);
    if (t->window_overflows)
        fprintf(f, "  note: %llu events displaced by more than %u positions: timestamp order is approximate\n",
                (unsigned long long)t->window_overflows, CA_REORDER_WINDOW);
}

/* Abort attribution, hardware classes, clock error. */
static void text_aborts(FILE *f, const struct cr_input *in, const struct ca_totals *t)
{
    fprintf(f, "\naborts (window widened by %.1f ns)\n", in->uncertainty_ns);
    if (in->have_accesses || in->format_version >= 2) {
        fprintf(f, "  conflict-free stm aborts  %llu of %llu\n", (unsigned long long)t->conflict_free,
                (unsigned long long)t->stm_aborts);
        fprintf(f, "  true conflicts            %llu\n", (unsigned long long)t->true_conflicts);
        fprintf(f, "  false (stripe) conflicts  %llu\n", (unsigned long long)t->false_conflicts);
    } else {
        fprintf(f, "  conflict-free aborts: not available (the trace has no read/write events)\n");
    }
    for (unsigned c = 0; c < CA_HTM_CLASSES; c++)
        if (t->htm_class[c])
            fprintf(f, "  htm %-20s  %llu\n", ca_htm_class_name(c), (unsigned long long)t->htm_class[c]);
    if (in->have_truth)
        fprintf(f, "\nclock error vs ground truth (%llu events): p50 %.0f ns, p99 %.0f ns, max %.0f ns\n",
                (unsigned long long)t->truth_events, t->err_p50, t->err_p99, t->err_max);

}

#define CR_WHERE_TOP 3   /* abort locations listed under each site in the text report */

/* A code address where aborts were found, as `function (file:line)` when
 * the trace's objects say so, else its closest name, else the address. The
 * address is the access's return address: its call is the byte before. */
static const char *where_name(const struct cr_input *in, uint64_t pc, char *buf, size_t cap)
{
    if (!in->sym || (!sym_code(in->sym, pc - 1, buf, cap) && !strchr(buf, '+')))
        snprintf(buf, cap, "0x%llx", (unsigned long long)pc);
    return buf;
}

#define CR_STACK_TOP 3   /* abort stacks listed under each site in the text report */
#define CR_STACK_MAX 17  /* the access and TMTRACE_ABORT_STACK's 16 frames at most */

/* The access and the frames above it of stack entry `w`, innermost first:
 * how many (at most CR_STACK_MAX). */
static size_t stack_pcs(const struct cr_input *in, const struct ca_where *w, uint64_t *pcs)
{
    uint64_t out[CR_STACK_MAX];
    size_t n = 0;
    for (const struct ca_frame *f = ca_frame_of(in->st, w->stack); f && n < CR_STACK_MAX - 1;
         f = ca_frame_of(in->st, f->inner))
        out[n++] = f->pc;
    pcs[0] = w->pc;
    for (size_t i = 0; i < n; i++)
        pcs[1 + i] = out[n - 1 - i];
    return n + 1;
}

/* A site's most frequent abort stacks: the access, then each frame out. */
static void text_stacks(FILE *f, const struct cr_input *in, uint32_t site)
{
    char nb[600];
    uint64_t pcs[CR_STACK_MAX];
    size_t n;
    const struct ca_where *w = ca_stacks_of_site(in->st, site, &n);
    for (size_t i = 0; i < n && i < CR_STACK_TOP; i++) {
        size_t k = stack_pcs(in, &w[i], pcs);
        fprintf(f, "      stack %llu:", (unsigned long long)w[i].count);
        for (size_t j = 0; j < k; j++)
            fprintf(f, "%s%s", j ? " < " : " ", where_name(in, pcs[j], nb, sizeof nb));
        fputc('\n', f);
    }
    if (n > CR_STACK_TOP)
        fprintf(f, "      stack: %zu other stacks\n", n - CR_STACK_TOP);
}

/* The top code addresses at which a site's attributed aborts were found;
 * then those found at commit validation, which no access found (no
 * ABORT_PC), when the site has places at all. */
static void text_where(FILE *f, const struct cr_input *in, const struct ca_site *s)
{
    char nb[600];
    size_t n;
    const struct ca_where *w = ca_where_of_site(in->st, s->site, &n);
    for (size_t i = 0; i < n && i < CR_WHERE_TOP; i++)
        fprintf(f, "      found at %-40s %llu\n", where_name(in, w[i].pc, nb, sizeof nb),
                (unsigned long long)w[i].count);
    if (n > CR_WHERE_TOP)
        fprintf(f, "      found at %zu other places\n", n - CR_WHERE_TOP);
    uint64_t at_commit = s->aborts_by_reason[TMT_ABORT_COMMIT_LOCKED] + s->aborts_by_reason[TMT_ABORT_COMMIT_VALIDATE];
    if (n > 0 && at_commit)
        fprintf(f, "      found at %-40s %llu\n", "commit (no access)", (unsigned long long)at_commit);
    text_stacks(f, in, s->site);
}

static void text_sites(FILE *f, const struct cr_input *in)
{
    char nb[600];
    int w = name_width(in);
    size_t ns;
    struct ca_site *s = cx_sites_by_waste(in->st, &ns);
    fprintf(f, "\nsites (by wasted time)\n  %-*s %9s %9s %9s %7s %12s %8s %6s %8s %6s %8s %6s\n", w, "site",
            "attempts", "commits", "aborts", "rate%", "wasted_ns", "retries", "max", "rs_mean", "max", "ws_mean",
            "max");
    for (size_t i = 0; i < ns; i++) {
        /* "-" where no commit counted its reads (in place, TF_SERIAL_UNCOUNTED) */
        char rs[2][24] = { "-", "-" };
        if (s[i].rs_n != 0) {
            snprintf(rs[0], sizeof rs[0], "%.1f", mean(s[i].rs_sum, s[i].rs_n));
            snprintf(rs[1], sizeof rs[1], "%llu", (unsigned long long)s[i].rs_max);
        }
        fprintf(f, "  %-*s %9llu %9llu %9llu %7.2f %12.0f %8.2f %6llu %8s %6s %8.1f %6llu\n", w,
                site_name(in->ix, s[i].site, nb, sizeof nb), (unsigned long long)s[i].attempts,
                (unsigned long long)s[i].commits, (unsigned long long)s[i].aborts, pct(s[i].aborts, s[i].attempts),
                s[i].wasted_ns, mean(s[i].retries_sum, s[i].retried_commits), (unsigned long long)s[i].retries_max,
                rs[0], rs[1], mean(s[i].ws_sum, s[i].sets_n), (unsigned long long)s[i].ws_max);
        for (unsigned r = 1; r < TMT_ABORT_REASONS; r++)
            if (s[i].aborts_by_reason[r])
                fprintf(f, "      %-16s %llu\n", tf_abort_reason_name(r), (unsigned long long)s[i].aborts_by_reason[r]);
        for (unsigned c = 0; c < CA_CLASSES; c++)
            if (s[i].cls[c])
                fprintf(f, "      = %-14s %llu\n", ca_class_name(c), (unsigned long long)s[i].cls[c]);
        text_where(f, in, &s[i]);
    }
    free(s);
}

/* The conflict matrix and the per-thread table. */
static void text_conflicts_threads(FILE *f, const struct cr_input *in)
{
    char nb[600], nb2[600];
    int w = name_width(in);
    size_t nc;
    const struct ca_conflict *c = ca_conflicts(in->st, &nc);
    if (nc) {
        fprintf(f, "\nconflicts (victim <- culprit; (none): aborts without a culprit)\n  %-*s %-*s %9s %7s %7s %7s %12s\n",
                w, "victim", w, "culprit", "count", "true", "false", "other", "wasted_ns");
        for (size_t i = 0; i < nc; i++)
            fprintf(f, "  %-*s %-*s %9llu %7llu %7llu %7llu %12.0f\n", w,
                    site_name(in->ix, c[i].victim_site, nb, sizeof nb), w,
                    site_name(in->ix, c[i].culprit_site, nb2, sizeof nb2), (unsigned long long)c[i].count,
                    (unsigned long long)c[i].true_count, (unsigned long long)c[i].false_count,
                    (unsigned long long)(c[i].count - c[i].true_count - c[i].false_count), c[i].wasted_ns);
    }
    size_t nt;
    const struct ca_thread *th = ca_threads(in->st, &nt);
    fprintf(f, "\nthreads\n  %6s %10s %9s %9s %9s %9s %9s\n", "thread", "events", "temporal", "grammar",
            "out_of_pl", "late", "premature");
    for (size_t i = 0; i < nt; i++)
        fprintf(f, "  %6u %10llu %9llu %9llu %9llu %9llu %9llu\n", th[i].thread, (unsigned long long)th[i].events,
                (unsigned long long)th[i].temporal, (unsigned long long)th[i].grammar,
                (unsigned long long)th[i].out_of_place, (unsigned long long)th[i].late_starts,
                (unsigned long long)th[i].premature_ends);
}

void cr_text(FILE *f, const struct cr_input *in)
{
    const struct ca_totals *t = ca_totals(in->st);
    text_totals(f, in, t);
    text_aborts(f, in, t);
    text_sites(f, in);
    text_conflicts_threads(f, in);
    int complete = in->verdict->complete;
    if (t->temporal || t->grammar)
        fprintf(f, "\nINCONSISTENT: temporal or grammar violations found%s\n",
                complete ? "" : " (and the trace is incomplete)");
    else if (!complete)
        fprintf(f, "\nINCOMPLETE: no temporal or grammar violations in the records present, but the trace "
                   "lost records (see \"incomplete trace\" above)\n");
    else
        fprintf(f, "\nconsistent: no temporal or grammar violations\n");
}

/* Trace, totals, consistency, attribution, abort causes, hardware classes,
 * clock error. */
static void json_totals(struct jw *w, const struct cr_input *in, const struct ca_totals *t)
{
    jw_kstr(w, "file", in->path);
    jw_kbool(w, "synced", in->synced);
    jw_ku64(w, "events", t->events);
    jw_ku64(w, "transactions", t->transactions);
    jw_ku64(w, "attempts", t->attempts);
    jw_ku64(w, "commits", t->commits);
    jw_ku64(w, "aborts", t->aborts);
    jw_ku64(w, "stm_aborts", t->stm_aborts);
    jw_ku64(w, "htm_aborts", t->htm_aborts);
    jw_ku64(w, "user_aborts", t->user_aborts);
    jw_ku64(w, "fallbacks", t->fallbacks);
    if (in->ix->hdr.detail) {
        jw_key(w, "detail");
        jw_object(w);
        jw_ku64(w, "period", in->ix->hdr.detail);
        jw_ku64(w, "detailed_attempts", t->detailed);
        jw_ku64(w, "accesses", t->accesses);
        jw_knum(w, "accesses_estimated", detail_scaled(t), 0);
        jw_object_end(w);
    }
    jw_ku64(w, "shed_attempts", t->shed);
    jw_ku64(w, "serial_attempts", t->serial);
    jw_ku64(w, "serial_requested", t->serial_by_reason[TF_SERIAL_REQUESTED]);
    jw_ku64(w, "serial_contention", t->serial_by_reason[TF_SERIAL_CONTENTION]);
    jw_ku64(w, "serial_alone", t->serial_by_reason[TF_SERIAL_ALONE]);
    jw_ku64(w, "serial_overlapped", t->serial_overlapped);
    jw_ku64(w, "htm_injected", t->htm_injected);
    jw_knum(w, "serial_ns", t->serial_ns, 0);
    jw_ku64(w, "dropped_events", in->dropped);
    jw_ku64(w, "skipped_chunks", in->skipped_chunks);
    if (in->dropped)
        jw_kstr(w, "dropped_note", dropped_note());
    tc_json(w, in->verdict);
    jw_ku64(w, "temporal_inconsistencies", t->temporal);
    jw_ku64(w, "grammar_violations", t->grammar);
    jw_key(w, "out_of_place_events");
    jw_object(w);
    jw_ku64(w, "count", t->out_of_place);
    jw_knum(w, "percent", pct(t->out_of_place, t->events), 6);
    jw_object_end(w);
    jw_ku64(w, "late_starts", t->late_starts);
    jw_ku64(w, "premature_ends", t->premature_ends);
    jw_ku64(w, "open_attempts", t->open_at_end);
    jw_ku64(w, "cut_attempts", t->cut_attempts);
    jw_ku64(w, "reorder_window_overflows", t->window_overflows);
    jw_knum(w, "uncertainty_ns", in->uncertainty_ns, 3);
    jw_ku64(w, "stripes_log2", in->stripes_log2);
    jw_ku64(w, "stripe_shift", in->stripe_shift);
    static const char *const attr[3] = { "conflict_free_aborts", "true_conflicts", "false_conflicts" };
    const uint64_t attr_n[3] = { t->conflict_free, t->true_conflicts, t->false_conflicts };
    for (int k = 0; k < 3; k++)
        if (in->have_accesses || in->format_version >= 2)
            jw_ku64(w, attr[k], attr_n[k]);
        else
            jw_knull(w, attr[k]);
    cx_json(w, in);
    jw_knum(w, "wasted_ns", t->wasted_ns, 0);
    jw_key(w, "htm_abort_classes");
    jw_object(w);
    for (unsigned c = 0; c < CA_HTM_CLASSES; c++)
        jw_ku64(w, ca_htm_class_name(c), t->htm_class[c]);
    jw_object_end(w);
    if (in->have_truth) {
        jw_key(w, "clock_error_ns");
        jw_object(w);
        jw_ku64(w, "events", t->truth_events);
        jw_knum(w, "p50", t->err_p50, 1);
        jw_knum(w, "p99", t->err_p99, 1);
        jw_knum(w, "max", t->err_max, 1);
        jw_object_end(w);
    }
}

/* A site's abort stacks (all of them), most aborts first. */
static void json_stacks(struct jw *w, const struct cr_input *in, uint32_t site)
{
    char nb[600];
    uint64_t pcs[CR_STACK_MAX];
    size_t n;
    const struct ca_where *st = ca_stacks_of_site(in->st, site, &n);
    jw_key(w, "abort_stacks");
    jw_array(w);
    for (size_t i = 0; i < n; i++) {
        size_t k = stack_pcs(in, &st[i], pcs);
        jw_object(w);
        jw_key(w, "frames");
        jw_array(w);
        for (size_t j = 0; j < k; j++)
            jw_str(w, where_name(in, pcs[j], nb, sizeof nb));
        jw_array_end(w);
        jw_ku64(w, "aborts", st[i].count);
        jw_object_end(w);
    }
    jw_array_end(w);
}

static void json_site(struct jw *w, const struct cr_input *in, const struct ca_site *s)
{
    char nb[600];
    jw_object(w);
    jw_ku64(w, "site", s->site);
    jw_kstr(w, "name", site_name(in->ix, s->site, nb, sizeof nb));
    jw_ku64(w, "attempts", s->attempts);
    jw_ku64(w, "commits", s->commits);
    jw_ku64(w, "aborts", s->aborts);
    jw_knum(w, "abort_rate", s->attempts ? (double)s->aborts / (double)s->attempts : 0.0, 6);
    jw_key(w, "aborts_by_reason");
    jw_object(w);
    for (unsigned r = 1; r < TMT_ABORT_REASONS; r++)
        jw_ku64(w, tf_abort_reason_name(r), s->aborts_by_reason[r]);
    jw_object_end(w);
    jw_knum(w, "wasted_ns", s->wasted_ns, 0);
    jw_knum(w, "retries_per_commit_mean", mean(s->retries_sum, s->retried_commits), 4);
    jw_ku64(w, "retries_per_commit_max", s->retries_max);
    jw_knum(w, "read_set_mean", mean(s->rs_sum, s->rs_n), 3);
    jw_ku64(w, "read_set_counted", s->rs_n);
    jw_ku64(w, "read_set_max", s->rs_max);
    jw_knum(w, "write_set_mean", mean(s->ws_sum, s->sets_n), 3);
    jw_ku64(w, "write_set_max", s->ws_max);
    jw_ku64(w, "conflict_free_aborts", s->conflict_free);
    jw_ku64(w, "true_conflicts", s->true_conflicts);
    jw_ku64(w, "false_conflicts", s->false_conflicts);
    size_t n;
    const struct ca_where *at = ca_where_of_site(in->st, s->site, &n);
    jw_key(w, "abort_locations");
    jw_array(w);
    for (size_t i = 0; i < n; i++) {
        char hex[24];
        snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)at[i].pc);
        jw_object(w);
        jw_kstr(w, "pc", hex);
        jw_kstr(w, "location", where_name(in, at[i].pc, nb, sizeof nb));
        jw_ku64(w, "aborts", at[i].count);
        jw_object_end(w);
    }
    jw_array_end(w);
    json_stacks(w, in, s->site);
    jw_object_end(w);
}

static void json_conflicts_threads(struct jw *w, const struct cr_input *in)
{
    size_t nc, nt;
    const struct ca_conflict *c = ca_conflicts(in->st, &nc);
    jw_key(w, "conflicts");
    jw_array(w);
    for (size_t i = 0; i < nc; i++) {
        jw_object(w);
        jw_ku64(w, "victim_site", c[i].victim_site);
        jw_ku64(w, "culprit_site", c[i].culprit_site);
        jw_ku64(w, "count", c[i].count);
        jw_ku64(w, "true", c[i].true_count);
        jw_ku64(w, "false", c[i].false_count);
        jw_knum(w, "wasted_ns", c[i].wasted_ns, 0);
        jw_key(w, "classes");
        jw_object(w);
        for (unsigned k = 0; k < CA_CLASSES; k++)
            if (c[i].cls[k])
                jw_ku64(w, ca_class_name(k), c[i].cls[k]);
        jw_object_end(w);
        jw_object_end(w);
    }
    jw_array_end(w);
    const struct ca_thread *th = ca_threads(in->st, &nt);
    jw_key(w, "threads");
    jw_array(w);
    for (size_t i = 0; i < nt; i++) {
        jw_object(w);
        jw_ku64(w, "thread", th[i].thread);
        jw_ku64(w, "events", th[i].events);
        jw_ku64(w, "temporal_inconsistencies", th[i].temporal);
        jw_ku64(w, "grammar_violations", th[i].grammar);
        jw_ku64(w, "out_of_place_events", th[i].out_of_place);
        jw_ku64(w, "late_starts", th[i].late_starts);
        jw_ku64(w, "premature_ends", th[i].premature_ends);
        jw_ku64(w, "attempts", th[i].attempts);
        jw_ku64(w, "commits", th[i].commits);
        jw_ku64(w, "aborts", th[i].aborts);
        jw_ku64(w, "cut_attempts", th[i].cut_attempts);
        jw_object_end(w);
    }
    jw_array_end(w);
}

void cr_json(FILE *f, const struct cr_input *in)
{
    const struct ca_totals *t = ca_totals(in->st);
    struct jw w;
    jw_init(&w, f);
    jw_object(&w);
    json_totals(&w, in, t);
    size_t ns;
    const struct ca_site *s = ca_sites(in->st, &ns);
    jw_key(&w, "sites");
    jw_array(&w);
    for (size_t i = 0; i < ns; i++)
        json_site(&w, in, &s[i]);
    jw_array_end(&w);
    json_conflicts_threads(&w, in);
    jw_kbool(&w, "consistent", !(t->temporal || t->grammar));
    jw_object_end(&w);
    fputc('\n', f);
}

static int csv_file(const char *dir, const char *name, struct tool_out *o)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (!p)
        return tool_error("out of memory");
    snprintf(p, n, "%s/%s", dir, name);
    int rc = tool_out_open(o, p, NULL);
    free(p);
    return rc < 0 ? TOOL_USAGE : 0;
}

int cr_aborts_open(const char *dir, struct tool_out *o)
{
    memset(o, 0, sizeof *o);
    if (csv_file(dir, "aborts.csv", o) != 0)
        return TOOL_USAGE;
    fprintf(o->f, "thread,site,instance,start,abort,reason,conflict,culprit_thread,culprit_site,"
            "culprit_instance,culprit_commit,address,class,by_identity,site_name,culprit_site_name,"
            "address_name\n");
    return 0;
}

void cr_abort_row(void *ctx, const struct ca_attribution *a)
{
    const struct cr_abort_rows *x = ctx;
    FILE *f = x->f;
    char vn[600], cn[600], an[700];
    fprintf(f, "%u,%u,%llu,%llu,%llu,%s,", a->thread, a->site, (unsigned long long)a->instance,
            (unsigned long long)a->start, (unsigned long long)a->abort, tf_abort_reason_name(a->reason));
    if (a->found)
        fprintf(f, "%s,%u,%u,%llu,%llu,0x%llx,%s,%d,",
                a->cls == CA_CL_TRUE ? "true" : a->cls == CA_CL_FALSE ? "false" : "held", a->culprit_thread,
                a->culprit_site, (unsigned long long)a->culprit_instance, (unsigned long long)a->culprit_commit,
                (unsigned long long)a->addr, ca_class_name(a->cls), a->by_identity);
    else
        fprintf(f, "none,,,,,0x%llx,%s,0,", (unsigned long long)a->addr, ca_class_name(a->cls));
    csv_str(f, cx_site_name(x->ix, a->site, vn, sizeof vn));
    fputc(',', f);
    csv_str(f, a->found ? cx_site_name(x->ix, a->culprit_site, cn, sizeof cn) : "");
    fputc(',', f);
    if (a->addr) {
        char obj[CX_OBJ_NAME], fld[64];
        uint64_t base = 0, pc = 0;
        if (x->st)
            ca_block_at(x->st, a->addr, &base, &pc);
        cx_word_name(x->sym, a->addr, pc, base, obj, fld, an, sizeof an);
    }
    csv_str(f, a->addr ? an : "");
    fputc('\n', f);
}

int cr_csv(const char *dir, const struct cr_input *in)
{
    struct tool_out o[3];
    memset(o, 0, sizeof o);
    char nb[300];
    static const char *const names[3] = { "sites.csv", "conflicts.csv", "threads.csv" };
    for (int k = 0; k < 3; k++)
        if (csv_file(dir, names[k], &o[k]) != 0) {
            for (int j = 0; j < k; j++)
                tool_out_abandon(&o[j]);
            return TOOL_USAGE;
        }
    size_t ns, nc, nt;
    const struct ca_site *s = ca_sites(in->st, &ns);
    FILE *f = o[0].f;
    fprintf(f, "site,name,attempts,commits,aborts,abort_rate");
    for (unsigned r = 1; r < TMT_ABORT_REASONS; r++)
        fprintf(f, ",aborts_%s", tf_abort_reason_name(r));
    fprintf(f, ",wasted_ns,retries_mean,retries_max,read_set_mean,read_set_max,write_set_mean,write_set_max,"
            "conflict_free_aborts,true_conflicts,false_conflicts\n");
    for (size_t i = 0; i < ns; i++) {
        fprintf(f, "%u,", s[i].site);
        csv_str(f, site_name(in->ix, s[i].site, nb, sizeof nb));
        fprintf(f, ",%llu,%llu,%llu,%.6f", (unsigned long long)s[i].attempts, (unsigned long long)s[i].commits,
                (unsigned long long)s[i].aborts, s[i].attempts ? (double)s[i].aborts / (double)s[i].attempts : 0.0);
        for (unsigned r = 1; r < TMT_ABORT_REASONS; r++)
            fprintf(f, ",%llu", (unsigned long long)s[i].aborts_by_reason[r]);
        fprintf(f, ",%.0f,%.4f,%llu,%.3f,%llu,%.3f,%llu,%llu,%llu,%llu\n", s[i].wasted_ns,
                mean(s[i].retries_sum, s[i].retried_commits), (unsigned long long)s[i].retries_max,
                mean(s[i].rs_sum, s[i].rs_n), (unsigned long long)s[i].rs_max, mean(s[i].ws_sum, s[i].sets_n),
                (unsigned long long)s[i].ws_max, (unsigned long long)s[i].conflict_free,
                (unsigned long long)s[i].true_conflicts, (unsigned long long)s[i].false_conflicts);
    }
    const struct ca_conflict *c = ca_conflicts(in->st, &nc);
    f = o[1].f;
    fprintf(f, "victim_site,victim_name,culprit_site,culprit_name,count,true_conflicts,false_conflicts,wasted_ns");
    for (unsigned k = 0; k < CA_CLASSES; k++)
        fprintf(f, ",%s", ca_class_name(k));
    fputc('\n', f);
    for (size_t i = 0; i < nc; i++) {
        fprintf(f, "%u,", c[i].victim_site);
        csv_str(f, site_name(in->ix, c[i].victim_site, nb, sizeof nb));
        fprintf(f, ",%u,", c[i].culprit_site);
        csv_str(f, site_name(in->ix, c[i].culprit_site, nb, sizeof nb));
        fprintf(f, ",%llu,%llu,%llu,%.0f", (unsigned long long)c[i].count, (unsigned long long)c[i].true_count,
                (unsigned long long)c[i].false_count, c[i].wasted_ns);
        for (unsigned k = 0; k < CA_CLASSES; k++)
            fprintf(f, ",%llu", (unsigned long long)c[i].cls[k]);
        fputc('\n', f);
    }
    const struct ca_thread *th = ca_threads(in->st, &nt);
    f = o[2].f;
    fprintf(f, "thread,events,temporal_inconsistencies,grammar_violations,out_of_place_events,late_starts,"
            "premature_ends,attempts,commits,aborts,dropped_events,cut_attempts\n");
    for (size_t i = 0; i < nt; i++) {
        uint64_t dropped = 0;
        for (size_t k = 0; k < in->ix->nend; k++)
            if (in->ix->end[k].id == th[i].thread)
                dropped = in->ix->end[k].dropped;
        fprintf(f, "%u,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu\n", th[i].thread,
                (unsigned long long)th[i].events, (unsigned long long)th[i].temporal,
                (unsigned long long)th[i].grammar, (unsigned long long)th[i].out_of_place,
                (unsigned long long)th[i].late_starts, (unsigned long long)th[i].premature_ends,
                (unsigned long long)th[i].attempts, (unsigned long long)th[i].commits,
                (unsigned long long)th[i].aborts, (unsigned long long)dropped,
                (unsigned long long)th[i].cut_attempts);
    }
    for (int k = 0; k < 3; k++)
        if (tool_out_commit(&o[k]) < 0) {
            for (int j = k + 1; j < 3; j++)
                tool_out_abandon(&o[j]);
            return TOOL_USAGE;
        }
    return 0;
}
