/*
 * check_sites.c - the per-site statistics of tmcheck.
 *
 * Owns: one row per transaction site seen (attempts, commits, aborts by
 * reason, hardware abort classes, wasted time, retries per commit, read and
 * write set sizes; the attribution counts are added by check_culprit.c), and
 * the names of the reasons and hardware classes its columns carry; the
 * trace's wasted time and hardware classes (the sums of its columns).
 * Never: counts a thread's events or the trace's other totals (the driver
 * does).
 */
#include <stdlib.h>

#include "check_state.h"
#include "error.h"
#include "trace_index.h"
#include "tmtrace.h"

struct ca_site *ca_site_of(struct ca_state *s, uint32_t id)
{
    id = ca_id_slot(id);
    size_t cap = s->nsite, cap2 = s->nsite; /* one length for both arrays */
    if (ti_grow((void **)&s->site, &cap, (size_t)id + 1, sizeof *s->site) < 0 ||
        ti_grow((void **)&s->site_seen, &cap2, (size_t)id + 1, 1) < 0)
        return NULL;
    s->nsite = cap;
    s->site_seen[id] = 1;
    s->site[id].site = id;
    return &s->site[id];
}

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
    st->rs_sum += rs;
    st->ws_sum += ws;
    st->sets_n++;
    if (rs > st->rs_max)
        st->rs_max = rs;
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

int ca_site_class(struct ca_state *s, uint32_t site, unsigned cls, double wasted_ns)
{
    struct ca_site *st = ca_site_of(s, site);
    if (!st)
        return -1;
    st->cls[cls]++;
    st->cls_wasted_ns[cls] += wasted_ns;
    s->t.cls[cls]++;
    s->t.cls_wasted_ns[cls] += wasted_ns;
    return 0;
}

/* The sites seen, by id. */
int ca_site_finish(struct ca_state *s)
{
    size_t ns = 0;
    for (size_t i = 0; i < s->nsite; i++)
        ns += s->site_seen[i];
    free(s->sites_out);
    s->sites_out = malloc((ns ? ns : 1) * sizeof *s->sites_out);
    if (!s->sites_out)
        return error_set("out of memory");
    size_t k = 0;
    for (size_t i = 0; i < s->nsite; i++)
        if (s->site_seen[i])
            s->sites_out[k++] = s->site[i];
    s->nsites_out = k;
    return 0;
}

void ca_site_free(struct ca_state *s)
{
    free(s->site);
    free(s->site_seen);
    free(s->sites_out);
}

const struct ca_site *ca_sites(const struct ca_state *s, size_t *n)
{
    *n = s->nsites_out;
    return s->sites_out;
}

const char *ca_class_name(unsigned c)
{
    static const char *const names[CA_CLASSES] = {
        "true-conflict", "false-conflict", "holder-running", "holder-preempted", "holder-aborted",
        "htm-conflict", "htm-capacity", "htm-explicit", "htm-retry-only", "htm-other",
        "user-retry", "user-cancel", "conflict-free",
    };
    return c < CA_CLASSES ? names[c] : "?";
}

const char *ca_htm_class_name(unsigned c)
{
    static const char *const names[] = { "conflict", "capacity", "stm-active", "explicit", "retry-only",
                                         "unexplained" };
    return c < CA_HTM_CLASSES ? names[c] : "?";
}
