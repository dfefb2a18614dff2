/*
 * tmcheck - checks a raw or synchronised trace for the inconsistencies that
 * unsynchronised clocks cause, and explains its aborts.
 *
 * Owns: the command line and the two passes (index, then the events in
 * merged order through the analyses, check_analysis.h), the exit code.
 * Never: writes anything but the report and the --csv files; crashes or
 * prints more than one line on bad input.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check_analysis.h"
#include "check_compare.h"
#include "check_report.h"
#include "symbols.h"
#include "error.h"
#include "trace_complete.h"
#include "trace_index.h"
#include "tool_common.h"
#include "tool_doc.h"
#include "trace_file.h"

static const struct tool_option check_options[] = {
    { "-j, --json", "one JSON object instead of the text report (keys: docs/json.md)" },
    { "-c, --csv DIR", "also write DIR/sites.csv, conflicts.csv, threads.csv, aborts.csv" },
    { "-s, --salvage", "skip damaged chunks, say so on stderr and report how many" },
    { "    --compare BEFORE", "the change from BEFORE to TRACE (two synchronised traces of one\n"
                             "program, before and after a fix): per site, data object and triage\n"
                             "group, aborts and on-CPU wasted time; commits per second" },
    { "-S, --stripes LOG2", "the traced run's TMTRACE_STRIPES, 10 to 28 (default: as recorded)" },
    { "-J, --jobs N", TOOL_JOBS_HELP },
    { "    --tables", "also print on stderr the size of each analysis table that grows with the\n"
                     "trace's distinct threads, sites, addresses and allocated blocks" },
    { "-h, --help", "this text" },
    { "    --man", "this text as a man page (troff)" },
    { "-V, --version", "the version" },
    { NULL, NULL },
};

static const struct tool_doc check_doc = {
    .name = "tmcheck",
    .purpose = "check a trace for the inconsistencies unsynchronised clocks cause and explain its aborts",
    .synopsis = "tmcheck TRACE [--json] [--csv DIR] [--salvage] [--stripes LOG2] [--jobs N] [--tables]\n"
                "tmcheck --compare BEFORE AFTER [--json] [--salvage] [--stripes LOG2] [--jobs N]",
    .description =
        "Checks a raw or synchronised trace and explains its aborts. The report opens with\n"
        "the trace's totals and the tracer's estimated share of the threads' time (with a\n"
        "warning above 5%), then the attempts that were descheduled or migrated, on a\n"
        "line of their own: their time off the CPU is charged to no site or data. Then\n"
        "the sites by on-CPU wasted time, the data objects (a symbol, down to the struct\n"
        "member through DWARF, or the blocks of an allocation site) and the triage: one\n"
        "line per group of software aborts (victim site, class, data, culprit site) with\n"
        "its count, its share of the on-CPU wasted time and advice that can apply; each\n"
        "software abort is attributed to the committed transaction or the lock holder\n"
        "that caused it. Then the words by abort count, the abort classes, where each\n"
        "thread's and site's time went, the per-site table, the conflict matrix, and the\n"
        "consistency checks: temporal inconsistencies, grammar violations\n"
        "(S (R|W)* A)* (S (R|W)* C), out-of-place events, late starts, premature\n"
        "commits/aborts, and the clock error against the ground truth when injected.\n"
        "With --compare, the change between two traces of one program instead.",
    .options = check_options,
    .exit_status = "0  consistent, and the trace is complete\n"
                   "1  temporal or grammar violations\n"
                   "2  bad input or usage (one line on stderr)\n"
                   "3  consistent, but --salvage skipped damaged chunks\n"
                   "4  no violations in the records present, but the trace is incomplete: no END chunk,\n"
                   "   the program was terminated by a signal, or events were dropped (one line on stderr)\n"
                   "Where several apply, the first of 2, 1, 4, 3 is the status.",
};

struct check_args {
    const char *path;
    const char *csv;
    const char *before;   /* --compare BEFORE (the operand is AFTER) */
    int json;
    int tables;         /* --tables */
    unsigned flags;
    uint64_t stripes;   /* 0: as recorded in the trace */
    unsigned jobs;
};

/* 0: go on; otherwise the tool's exit code (--help, --version, bad usage) + 1. */
static int parse_args(int argc, char **argv, struct check_args *a)
{
    static const struct option opts[] = {
        { "json", no_argument, 0, 'j' },    { "csv", required_argument, 0, 'c' },
        { "salvage", no_argument, 0, 's' }, { "stripes", required_argument, 0, 'S' },
        { "help", no_argument, 0, 'h' },    { "version", no_argument, 0, 'V' },
        { "man", no_argument, 0, 'M' },     { "jobs", required_argument, 0, 'J' },
        { "compare", required_argument, 0, 'C' }, { "tables", no_argument, 0, 'T' },
        { 0, 0, 0, 0 }
    };
    *a = (struct check_args){ .jobs = tool_jobs_default() };
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":jc:sS:J:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'j': a->json = 1; break;
        case 'c': a->csv = optarg; break;
        case 'C': a->before = optarg; break;
        case 'T': a->tables = 1; break;
        case 's': a->flags |= TF_SALVAGE; break;
        case 'S':
            if (tool_parse_u64("--stripes", optarg, TF_STRIPES_LOG2_MIN, TF_STRIPES_LOG2_MAX, &a->stripes) < 0)
                return TOOL_USAGE + 1;
            break;
        case 'J':
            if (tool_parse_jobs(optarg, &a->jobs) < 0)
                return TOOL_USAGE + 1;
            break;
        case 'h': tool_doc_help(stdout, &check_doc); return TOOL_OK + 1;
        case 'M': tool_doc_man(stdout, &check_doc); return TOOL_OK + 1;
        case 'V': tool_print_version(stdout); return TOOL_OK + 1;
        default: return tool_bad_option(argv) + 1;
        }
    }
    a->path = tool_trace_operand(argc, argv);
    if (!a->path)
        return TOOL_USAGE + 1;
    if (a->before && a->csv)
        return tool_error("--compare: no --csv with it (run tmcheck --csv on each trace)") + 1;
    if (a->csv && mkdir(a->csv, 0777) < 0 && errno != EEXIST)
        return tool_error("--csv %s: cannot create the directory: %s", a->csv, strerror(errno)) + 1;
    return 0;
}

/* Pass 2: every event in merged order through the analysis. 0, or the exit
 * code after a one-line message. */
/* The merge's per-source callback (ca_by_source split the analyses): one
 * source's chunk through the analyses of one thread's events, and into
 * that source's span. */
struct by_source {
    struct ca_state *st;
    struct tc_span *span;
};

static int source_chunk(void *ctx, size_t source, struct tf_event *ev, const uint64_t *keep, size_t n)
{
    struct by_source *b = ctx;
    struct tc_span sp = b->span[source];
    for (size_t i = 0; i < n; i++)
        tc_span_add(&sp, ev[i].ts);
    b->span[source] = sp;
    return ca_source_chunk(b->st, source, ev, keep, n);
}

static int analyse(const struct check_args *a, const char *path, struct tf_reader *r, const struct trace_index *ix,
                   struct ca_state *st, struct tc_span *span)
{
    struct by_source bs = { st, calloc(ix->nsrc + 1, sizeof *bs.span) };
    int split = bs.span ? ca_by_source(st, ix) : -1;
    if (split < 0) {
        free(bs.span);
        return tool_error("%s: %s", path, bs.span ? error_get() : "out of memory");
    }
    struct ti_merge_opts o = { .jobs = a->jobs, .path = path, .open_flags = a->flags };
    if (split) {   /* the per-thread analyses and the span in the merge's threads */
        o.order = source_chunk;
        o.ctx = &bs;
    }
    struct ti_merge *m = ti_merge_create(r, ix, &o);
    if (!m) {
        free(bs.span);
        return tool_error_lib();
    }
    const struct tf_event *ev;
    int k, rc = 0;
    while ((k = ti_merge_next(m, &ev)) == 1) {
        if (!split)
            tc_span_add(span, ev->ts);
        if (ca_event(st, ev) < 0) {
            rc = tool_error("%s: %s", path, error_get());
            break;
        }
    }
    ti_merge_free(m);
    for (size_t i = 0; i < ix->nsrc; i++)
        tc_span_join(span, &bs.span[i]);
    free(bs.span);
    if (rc == 0 && k < 0)
        rc = tool_error_lib();
    if (rc == 0 && ca_finish(st) < 0)
        rc = tool_error("%s: %s", path, error_get());
    return rc;
}

/* The report, the --csv files; the exit code from the verdicts (1, then
 * 4, then 3: see check_doc), each warning on stderr whatever the code. */
static int report(const struct check_args *a, const struct cr_input *in, struct tool_out *aborts)
{
    int rc;
    if (a->csv && ((rc = cr_csv(a->csv, in)) != 0 || (rc = tool_out_commit(aborts) < 0 ? TOOL_USAGE : 0) != 0))
        return rc;
    if (a->json)
        cr_json(stdout, in);
    else
        cr_text(stdout, in);
    fflush(stdout);
    const struct ca_totals *t = ca_totals(in->st);
    rc = t->temporal || t->grammar ? TOOL_FAIL : TOOL_OK;
    if (in->skipped_chunks) {
        tool_error("warning: %s: --salvage skipped %" PRIu64 " damaged chunks; their events are missing", a->path,
                   in->skipped_chunks);
        if (rc == TOOL_OK)
            rc = TOOL_SALVAGED;
    }
    int incomplete = tc_warn(a->path, in->verdict);
    return rc == TOOL_FAIL || incomplete == TOOL_OK ? rc : incomplete;
}

/* One trace analysed: what its report is made from. */
struct run {
    struct trace_index ix;
    struct sym_table *sym;
    struct ca_state *st;
    struct tf_reader *r;
    struct tool_out aborts;
    struct cr_abort_rows rows;
    struct tc_verdict verdict;
    struct cr_input in;
};

static void run_close(struct run *x)
{
    sym_close(x->sym);
    if (x->aborts.f)
        tool_out_abandon(&x->aborts);
    if (x->r)
        tf_close(x->r);
    ca_free(x->st);
    ti_free(&x->ix);
}

/* Loads and analyses the trace at `path` (its aborts.csv too with --csv).
 * 0, or the exit code after a one-line message; run_close either way. */
static int run_open(const struct check_args *a, const char *path, struct run *x)
{
    memset(x, 0, sizeof *x);
    uint64_t skipped;
    if (ti_load(path, a->flags, &x->ix, &skipped) < 0)
        return tool_error_lib();
    const struct trace_index *ix = &x->ix;
    struct ca_opts o;
    ca_opts_for_trace(ix, (unsigned)a->stripes, &o);
    int rc, synced = (ix->hdr.flags & TF_HDR_SYNCED) != 0;
    x->sym = sym_open(ix->objects, ix->nobjects);
    if (x->sym && sym_set_stacks(x->sym, ix->threads, ix->nthreads) < 0) {
        sym_close(x->sym);
        x->sym = NULL;   /* out of memory, said below */
    }
    if (x->sym)
        sym_name_sites(x->sym, x->ix.sites, x->ix.nsites);
    x->st = ca_create(&o);
    x->r = tf_open(path, a->flags);
    if (!x->st || !x->r || !x->sym)
        return x->st && x->sym ? tool_error_lib() : tool_error("out of memory");
    if (ca_note_drops(x->st, ix) < 0)
        return tool_error("out of memory");
    x->rows = (struct cr_abort_rows){ NULL, ix, x->sym, x->st };
    if (a->csv) {
        if ((rc = cr_aborts_open(a->csv, &x->aborts)) != 0)
            return rc;
        x->rows.f = x->aborts.f;
        ca_listen(x->st, cr_abort_row, &x->rows);
    }
    struct tc_span span = { .ns_per_unit = o.ns_per_unit };
    if ((rc = analyse(a, path, x->r, ix, x->st, &span)) != 0)
        return rc;
    tc_judge(ix, &span, &x->verdict);
    x->in = (struct cr_input){
        .path = path,
        .ix = ix,
        .st = x->st,
        .synced = synced,
        .have_accesses = o.have_accesses,
        .have_truth = (ix->hdr.flags & TF_HDR_INJECTED) && ca_totals(x->st)->truth_events > 0,
        .dropped = ti_dropped(ix),
        .skipped_chunks = skipped + tf_reader_skipped(x->r),
        .verdict = &x->verdict,
        .uncertainty_ns = synced ? (double)o.uncertainty : 0.0,
        .stripes_log2 = o.stripes_log2,
        .stripe_shift = o.stripe_shift,
        .format_version = ix->hdr.version,
        .event_cost_ns = o.event_cost_ns > 0 ? o.event_cost_ns : CA_EVENT_COST_NS_DEFAULT,
        .event_cost_measured = o.event_cost_ns > 0,
        .sym = x->sym,
        .span_ns = span.records ? (double)(span.last - span.first) * o.ns_per_unit : 0.0,
    };
    return 0;
}

/* --compare BEFORE AFTER: both analysed, then the change. */
static int compare(const struct check_args *a)
{
    struct run *x = calloc(2, sizeof *x);
    if (!x)
        return tool_error("out of memory");
    int rc = run_open(a, a->before, &x[0]);
    if (rc == 0)
        rc = run_open(a, a->path, &x[1]);
    if (rc == 0) {
        if (a->json)
            cr_compare_json(stdout, &x[0].in, &x[1].in);
        else
            cr_compare_text(stdout, &x[0].in, &x[1].in);
    }
    run_close(&x[0]);
    run_close(&x[1]);
    free(x);
    return rc;
}

/* --tables: one line per table on stderr, then their sum. */
static void print_tables(const struct ca_state *st)
{
    struct ca_table_size t[CA_TABLES];
    ca_table_sizes(st, t);
    size_t sum = 0;
    for (size_t i = 0; i < CA_TABLES; i++) {
        fprintf(stderr, "tmcheck: table %-22s %12zu entries %10.1f MiB\n", t[i].name, t[i].entries,
                (double)t[i].bytes / 1048576.0);
        sum += t[i].bytes;
    }
    fprintf(stderr, "tmcheck: tables in all %44.1f MiB\n", (double)sum / 1048576.0);
}

int main(int argc, char **argv)
{
    tool_init("tmcheck");
    struct check_args a;
    int done = parse_args(argc, argv, &a);
    if (done)
        return done - 1;
    if (a.before)
        return compare(&a);
    struct run x;
    int rc = run_open(&a, a.path, &x);
    if (rc == 0 && a.tables)
        print_tables(x.st);
    if (rc == 0)
        rc = report(&a, &x.in, &x.aborts);
    run_close(&x);
    return rc;
}
