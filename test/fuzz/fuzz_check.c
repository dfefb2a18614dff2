/*
 * fuzz_check.c - libFuzzer target for tmcheck's analyses (check_analysis.h)
 * on arbitrary event streams.
 *
 * Owns: decoding a byte string into analysis options and a stream of events
 * (any kind byte, a few threads and sites, timestamps that may run
 * backwards, addresses that collide), feeding them through ca_event and
 * ca_finish, and asserting that the results add up: every event counted
 * once, commits + aborts never exceed attempts, the per-thread and
 * per-site tables sum to the totals, every resolved abort is in one group,
 * and the report's folds of the groups (data objects, triage lines) keep
 * every abort and never more on-CPU time than the groups had.
 * Never: reads files or prints.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_analysis.h"
#include "check_triage.h"
#include "fuzz_util.h"
#include "trace_index.h"

#define FUZZ_EVENT_BYTES 16

static void fuzz_attribution(void *ctx, const struct ca_attribution *a)
{
    uint64_t *n = ctx;
    if (a->found && a->culprit_thread == 0 && a->culprit_instance == 0 && a->culprit_commit == 0)
        n[1]++;  /* counted only so the callback reads every field */
    n[0]++;
}

/* The groups hold every resolved abort once; the folds by object and by
 * triage line keep their counts and never add on-CPU time. */
static void check_groups(const struct ca_state *s, uint64_t resolved)
{
    size_t ng;
    int failed;
    const struct ca_group *g = ca_groups(s, &ng, &failed);
    uint64_t n = 0;
    double oncpu = 0;
    for (size_t i = 0; i < ng; i++) {
        if (g[i].desched_n > g[i].count || !(g[i].oncpu_ns >= 0))
            abort();
        n += g[i].count;
        oncpu += g[i].oncpu_ns;
    }
    if (failed)
        return;
    if (n != resolved)
        abort();
    struct trace_index ix;
    memset(&ix, 0, sizeof ix);
    struct cr_input in = { .ix = &ix, .st = s, .stripe_shift = 4 };
    for (int by_object = 0; by_object < 2; by_object++) {
        size_t nf;
        struct cx_fold *f = cx_fold_groups(&in, by_object, &nf);
        if (!f)
            continue;
        uint64_t fn = 0;
        double fo = 0;
        for (size_t i = 0; i < nf; i++)
            if (f[i].cls < CA_CL_HTM_CONFLICT || f[i].cls > CA_CL_HTM_OTHER) {
                fn += f[i].count;
                fo += f[i].oncpu_ns;
            }
        free(f);
        if (fn != n || fo > oncpu * (1 + 1e-9) + 1e-6)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    struct ca_opts o = {
        .stripes_log2 = 1 + data[0] % 24,
        .stripe_shift = data[0] >> 5,   /* 0-7: 0-2 fall back to the default */
        .uncertainty = data[1] & 0x80 ? data[1] & 0x7f : 0,
        .ns_per_unit = data[2] & 1 ? 1.0 : 0.37,
        .have_accesses = data[2] >> 1 & 1,
    };
    uint64_t instance_mode = data[3];
    data += 4;
    size -= 4;
    struct ca_state *s = ca_create(&o);
    if (!s)
        return 0;
    /* the threads whose END chunk would count drops: the bits above the first */
    struct tf_thread_info end[7];
    memset(end, 0, sizeof end);
    for (unsigned i = 0; i < 7; i++) {
        end[i].id = i + 1;
        end[i].dropped = instance_mode >> (i + 1) & 1;
    }
    struct trace_index drops = { .end = end, .nend = 7 };
    if (ca_note_drops(s, &drops) != 0)
        abort();
    uint64_t attributions[2] = { 0, 0 };
    ca_listen(s, fuzz_attribution, attributions);
    uint64_t ts = 1000, fed = 0, seq[8] = {0}, inst[8] = {0};
    for (; size >= FUZZ_EVENT_BYTES; data += FUZZ_EVENT_BYTES, size -= FUZZ_EVENT_BYTES) {
        struct tf_event ev;
        memset(&ev, 0, sizeof ev);
        ev.kind = (uint8_t)(data[0] % (TF_EV_KINDS + 1));
        ev.thread = 1 + (data[1] & 7);
        ev.site = data[1] >> 3;
        ev.reason = data[2];
        /* mostly forward, sometimes back: tmcheck must count, not trust */
        int64_t step = (int8_t)data[3];
        ts = step < 0 && (uint64_t)-step > ts ? 0 : (uint64_t)((int64_t)ts + step * 7);
        ev.ts = ts;
        ev.truth = data[4] & 1 ? ts + (data[4] >> 1) : 0;
        ev.addr = fuzz_le(data + 5, 2) << 3;
        ev.value = fuzz_le(data + 7, 5) << (data[12] & 31);
        ev.cpu = data[13] & 3;
        unsigned th = ev.thread & 7;
        if (ev.kind == TF_EV_START)
            inst[th] = instance_mode & 1 ? fuzz_le(data + 14, 2) : inst[th] + 1;
        ev.instance = inst[th];
        /* now and then a hole in the thread's order, as dropped events leave */
        if (data[13] & 0x80)
            seq[th] += 1 + (data[13] >> 2 & 0x1f);
        ev.seq = seq[th]++;
        if (ca_event(s, &ev) != 0)
            break;
        fed++;
    }
    if (ca_finish(s) == 0) {
        const struct ca_totals *t = ca_totals(s);
        if (t->events != fed)
            abort();
        if (t->commits + t->aborts > t->attempts)
            abort();
        if (t->stm_aborts + t->htm_aborts + t->user_aborts > t->aborts)
            abort();
        size_t nth, nsite;
        const struct ca_thread *th = ca_threads(s, &nth);
        uint64_t ev_sum = 0, c_sum = 0, a_sum = 0, at_sum = 0, cut_sum = 0;
        for (size_t i = 0; i < nth; i++) {
            if (th[i].commits + th[i].aborts > th[i].attempts)
                abort();
            if (!(th[i].time.dropped_ns >= 0)) /* and not NaN */
                abort();
            cut_sum += th[i].cut_attempts;
            ev_sum += th[i].events;
            c_sum += th[i].commits;
            a_sum += th[i].aborts;
            at_sum += th[i].attempts;
        }
        if (ev_sum != t->events || c_sum != t->commits || a_sum != t->aborts || at_sum != t->attempts ||
            cut_sum != t->cut_attempts)
            abort();
        const struct ca_site *si = ca_sites(s, &nsite);
        c_sum = a_sum = at_sum = 0;
        for (size_t i = 0; i < nsite; i++) {
            if (si[i].commits + si[i].aborts > si[i].attempts)
                abort();
            c_sum += si[i].commits;
            a_sum += si[i].aborts;
            at_sum += si[i].attempts;
        }
        if (c_sum != t->commits || a_sum != t->aborts || at_sum != t->attempts)
            abort();
        if (attributions[0] > t->stm_aborts)
            abort();  /* at most one callback per software abort */
        check_groups(s, attributions[0]);
        size_t nconf;
        (void)ca_conflicts(s, &nconf);
    }
    ca_free(s);
    return 0;
}
