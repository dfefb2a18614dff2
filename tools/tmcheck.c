/*
 * tmcheck - checks a raw or synchronised trace for the inconsistencies that
 * unsynchronised clocks cause, and explains its aborts.
 *
 * Owns: the command line and the two passes (index, then the events in
 * merged order through check_analysis), the exit code.
 * Never: writes anything but the report and the --csv files; crashes or
 * prints more than one line on bad input.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check_analysis.h"
#include "check_report.h"
#include "error.h"
#include "trace_index.h"
#include "tool_common.h"
#include "trace_file.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tmcheck TRACE [--json] [--csv DIR] [--salvage] [--stripes LOG2]\n"
            "Checks a raw or synchronised trace: temporal inconsistencies, grammar violations\n"
            "(S (R|W)* A)* (S (R|W)* C), out-of-place events, late starts, premature commits/aborts,\n"
            "conflict-free aborts; attributes every software abort to the committed transaction\n"
            "that caused it; per-site table, conflict matrix, clock error vs ground truth.\n"
            "  -j, --json          one JSON object instead of the text report\n"
            "  -c, --csv DIR       also write DIR/sites.csv, conflicts.csv, threads.csv, aborts.csv\n"
            "  -s, --salvage       skip damaged chunks and report how many\n"
            "  -S, --stripes LOG2  the traced run's TMTRACE_STRIPES (default: as recorded in the trace)\n"
            "  -h, --help          this text\n"
            "  -V, --version       version\n"
            "exit status: 0 consistent, 1 temporal or grammar violations, 2 bad input or usage\n");
}

int main(int argc, char **argv)
{
    tool_init("tmcheck");
    static const struct option opts[] = {
        { "json", no_argument, 0, 'j' },    { "csv", required_argument, 0, 'c' },
        { "salvage", no_argument, 0, 's' }, { "stripes", required_argument, 0, 'S' },
        { "help", no_argument, 0, 'h' },    { "version", no_argument, 0, 'V' },
        { 0, 0, 0, 0 }
    };
    int json = 0;
    const char *csv = NULL;
    unsigned flags = 0;
    uint64_t stripes = 0; /* 0: as recorded in the trace */
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":jc:sS:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'c': csv = optarg; break;
        case 's': flags |= TF_SALVAGE; break;
        case 'S':
            if (tool_parse_u64("--stripes", optarg, 1, 40, &stripes) < 0)
                return TOOL_USAGE;
            break;
        case 'h': usage(stdout); return 0;
        case 'V': tool_print_version(stdout); return 0;
        default: return tool_bad_option(argv);
        }
    }
    const char *path = tool_trace_operand(argc, argv);
    if (!path)
        return TOOL_USAGE;
    if (csv && mkdir(csv, 0777) < 0 && errno != EEXIST)
        return tool_error("--csv %s: cannot create the directory: %s", csv, strerror(errno));

    struct merge_index ix;
    uint64_t skipped;
    if (mi_load(path, flags, &ix, &skipped) < 0)
        return tool_error_lib();

    int synced = (ix.hdr.flags & TF_HDR_SYNCED) != 0;
    double u = 0;
    if (synced)
        for (size_t i = 0; i < ix.nmodels; i++)
            if (ix.models[i].max_ns > u)
                u = ix.models[i].max_ns;
    struct ca_opts o = {
        .stripes_log2 = (unsigned)(stripes ? stripes : ix.hdr.stripes_log2 ? ix.hdr.stripes_log2 : 20),
        .uncertainty = (uint64_t)(u + 0.999),
        .ns_per_unit = synced || !ix.hdr.tsc_hz ? 1.0 : 1e9 / (double)ix.hdr.tsc_hz,
        .have_accesses = ix.hdr.events_level >= 2,
    };
    int rc = 0;
    struct tool_out aborts = { 0 };
    struct ca_state *st = ca_create(&o);
    struct merge *m = NULL;
    struct tf_reader *r = tf_open(path, flags);
    if (!st || !r) {
        rc = st ? tool_error_lib() : tool_error("out of memory");
        goto out;
    }
    if (csv) {
        if ((rc = cr_aborts_open(csv, &aborts)) != 0)
            goto out;
        ca_on_attribution(st, cr_abort_row, aborts.f);
    }
    m = merge_create(r, &ix, NULL, NULL);
    if (!m) {
        rc = tool_error_lib();
        goto out;
    }
    const struct tf_event *ev;
    int k;
    while ((k = merge_next(m, &ev)) == 1)
        if (ca_event(st, ev) < 0) {
            rc = tool_error("%s: %s", path, error_get());
            goto out;
        }
    if (k < 0) {
        rc = tool_error_lib();
        goto out;
    }
    if (ca_finish(st) < 0) {
        rc = tool_error("%s: %s", path, error_get());
        goto out;
    }
    struct cr_input in = {
        .path = path,
        .ix = &ix,
        .st = st,
        .synced = synced,
        .have_accesses = o.have_accesses,
        .have_truth = (ix.hdr.flags & TF_HDR_INJECTED) && ca_totals(st)->truth_events > 0,
        .dropped = mi_dropped(&ix),
        .skipped_chunks = skipped + tf_reader_skipped(r),
        .uncertainty_ns = synced ? (double)o.uncertainty : 0.0,
        .stripes_log2 = o.stripes_log2,
    };
    if (csv && ((rc = cr_csv(csv, &in)) != 0 || (rc = tool_out_commit(&aborts) < 0 ? TOOL_USAGE : 0) != 0))
        goto out;
    if (json)
        cr_json(stdout, &in);
    else
        cr_text(stdout, &in);
    fflush(stdout);
    const struct ca_totals *t = ca_totals(st);
    rc = t->temporal || t->grammar ? TOOL_FAIL : TOOL_OK;
out:
    if (aborts.f)
        tool_out_abandon(&aborts);
    merge_free(m);
    if (r)
        tf_close(r);
    ca_free(st);
    mi_free(&ix);
    return rc;
}
