/*
 * check_sites.c - the per-site statistics of tmcheck.
 *
 * Owns: what a site's row counts of its attempts (attempts, commits, aborts
 * by reason, hardware abort classes, wasted time, retries per commit, read
 * and write set sizes; the attribution counts are added by check_culprit.c),
 * and the names of the reasons and hardware classes its columns carry; the
 * trace's wasted time and hardware classes (the sums of its columns).
 * Never: stores the rows (check_tables.c does), counts a thread's events or
 * the trace's other totals (the driver does).
 */
#include <stdlib.h>

#include "check_state.h"
#include "error.h"
#include "trace_index.h"
#include "tmtrace.h"

unsigned ca_htm_class_of(uint64_t status)
{
    if (status & 4u)
        return CA_HTM_CONFLICT;
    if (status & 8u)
        return CA_HTM_CAPACITY;
    if (status & 1u)
        return ((status >> 24) & 0xffu) == 0xffu ? CA_HTM_STM_ACTIVE : CA_HTM_EXPLICIT;
    if (status & 2u)
        return CA_HTM_RETRY_ONLY;
    return CA_HTM_OTHER;
}

int ca_site_start(struct ca_state *s, uint32_t site)
{
    struct ca_site *st = ca_site_of(s, site);
    if (!st)
        return -1;
    st->attempts++;
    return 0;
}

/* The open attempt of `t` commits: set sizes from the COMMIT record, and
 * the aborted attempts it took. */
int ca_site_commit(struct ca_state *s, const struct th *t, const struct tf_event *ev)
{
    struct ca_site *st = ca_site_of(s, t->site);
    if (!st)
        return -1;
    st->commits++;
    uint64_t rs = tf_commit_read_set(ev->value), ws = tf_commit_write_set(ev->value);
    st->ws_sum += ws;
    st->sets_n++;
    /* A serial attempt that ran in place without counting its reads has a
     * 0 there, not a read-set size: left out of the read-set figures. */
    if (!t->serial_uncounted) {
        st->rs_sum += rs;
        st->rs_n++;
        if (rs > st->rs_max)
            st->rs_max = rs;
    }
    if (ws > st->ws_max)
        st->ws_max = ws;
    st->retried_commits++;
    st->retries_sum += t->retries;
    if (t->retries > st->retries_max)
        st->retries_max = t->retries;
    return 0;
}

/* The open attempt of `t` aborts: reason, wasted time and, for a hardware
 * attempt, the class of its status word (also counted in the totals). */
int ca_site_abort(struct ca_state *s, const struct th *t, const struct tf_event *ev, int hardware)
{
    struct ca_site *st = ca_site_of(s, t->site);
    if (!st)
        return -1;
    st->aborts++;
    st->aborts_by_reason[ev->reason < TMT_ABORT_REASONS ? ev->reason : TMT_ABORT_NONE]++;
    double wasted = (double)(ev->ts > t->start_ts ? ev->ts - t->start_ts : 0) * s->o.ns_per_unit;
    st->wasted_ns += wasted;
    s->t.wasted_ns += wasted;
    if (hardware) {
        unsigned c = ca_htm_class_of(ev->value);
        st->htm_class[c]++;
        s->t.htm_class[c]++;
        static const unsigned cls[CA_HTM_CLASSES] = { CA_CL_HTM_CONFLICT, CA_CL_HTM_CAPACITY,
                                                      CA_CL_HTM_EXPLICIT, CA_CL_HTM_EXPLICIT,
                                                      CA_CL_HTM_RETRY_ONLY, CA_CL_HTM_OTHER };
        return ca_site_class(s, t->site, cls[c], wasted) < 0 ? -1
                                                               : ca_conflict_add(s, t->site, 0, cls[c], wasted);
    }
    if (ev->reason == TMT_ABORT_USER_RETRY || ev->reason == TMT_ABORT_USER_CANCEL) {
        unsigned c = ev->reason == TMT_ABORT_USER_RETRY ? CA_CL_USER_RETRY : CA_CL_USER_CANCEL;
        return ca_site_class(s, t->site, c, wasted) < 0 ? -1 : ca_conflict_add(s, t->site, 0, c, wasted);
    }
    return 0;
}

const char *ca_class_name(unsigned c)
{
    static const char *const names[CA_CLASSES] = {
        "true-conflict", "false-conflict", "holder-running", "holder-preempted", "holder-aborted",
        "htm-conflict", "htm-capacity", "htm-explicit", "htm-retry-only", "htm-other",
        "user-retry", "user-cancel", "conflict-free", "word-unknown", "culprit-dropped",
    };
    return c < CA_CLASSES ? names[c] : "?";
}

const char *ca_htm_class_name(unsigned c)
{
    static const char *const names[] = { "conflict", "capacity", "stm-active", "explicit", "retry-only",
                                         "unexplained" };
    return c < CA_HTM_CLASSES ? names[c] : "?";
}
