/*
 * check_tables.c - the tables tmcheck's analyses share while the events
 * stream through: the per-site rows, the victim x culprit conflict matrix,
 * and the open-addressing table they and the block table grow with.
 *
 * Owns: the storage of the site rows (by id) and their lookup, the counting
 * of an abort's class into its site and the totals, the conflict matrix
 * (open addressing on the pair of sites) and its sorted form, the finished
 * arrays ca_sites() and ca_conflicts() hand out.
 * Never: decides what an event means (the analyses do, through here) or
 * calls an analysis or the driver: they call down to this module only.
 */
#include <stdlib.h>
#include <string.h>

#include "check_state.h"
#include "error.h"
#include "trace_index.h"

void *ca_table_rehash(void *old, size_t cap, size_t nc, size_t elem, int (*used)(const void *e),
                      size_t (*home)(const void *e, size_t nc))
{
    char *n = calloc(nc, elem);
    if (!n)
        return NULL;
    for (size_t i = 0; i < cap; i++) {
        const char *e = (const char *)old + i * elem;
        if (!used(e))
            continue;
        size_t h = home(e, nc);
        while (used(n + h * elem))
            h = (h + 1) & (nc - 1);
        memcpy(n + h * elem, e, elem);
    }
    free(old);
    return n;
}

struct ca_site *ca_site_grow(struct ca_state *s, uint32_t id)
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

/* The conflict matrix: open addressing on (victim site, culprit site). */
static size_t conflict_slot(uint32_t v, uint32_t c, size_t cap)
{
    return (size_t)(((uint64_t)v << 32 | c) * UINT64_C(0x9e3779b97f4a7c15)) & (cap - 1);
}
static int conflict_used(const void *e) { return ((const struct ca_conflict *)e)->count != 0; }
static size_t conflict_home(const void *e, size_t cap)
{
    const struct ca_conflict *x = e;
    return conflict_slot(x->victim_site, x->culprit_site, cap);
}

int ca_conflict_add(struct ca_state *s, uint32_t v, uint32_t c, unsigned cls, double wasted)
{
    if (2 * (s->cmn + 1) > s->cmcap) {
        size_t nc = s->cmcap ? 2 * s->cmcap : 64;
        struct ca_conflict *n = ca_table_rehash(s->cm, s->cmcap, nc, sizeof *n, conflict_used, conflict_home);
        if (!n)
            return error_set("out of memory");
        s->cm = n;
        s->cmcap = nc;
    }
    size_t h = conflict_slot(v, c, s->cmcap);
    while (s->cm[h].count && !(s->cm[h].victim_site == v && s->cm[h].culprit_site == c))
        h = (h + 1) & (s->cmcap - 1);
    struct ca_conflict *x = &s->cm[h];
    if (!x->count) {
        x->victim_site = v;
        x->culprit_site = c;
        s->cmn++;
    }
    x->count++;
    x->cls[cls]++;
    if (cls == CA_CL_TRUE)
        x->true_count++;
    else if (cls == CA_CL_FALSE)
        x->false_count++;
    x->wasted_ns += wasted;
    return 0;
}

static int cmp_conflict(const void *a, const void *b)
{
    const struct ca_conflict *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    if (x->victim_site != y->victim_site)
        return x->victim_site < y->victim_site ? -1 : 1;
    return (x->culprit_site > y->culprit_site) - (x->culprit_site < y->culprit_site);
}

/* The sites seen, by id; the matrix sorted by count. */
int ca_tables_finish(struct ca_state *s)
{
    size_t ns = 0;
    for (size_t i = 0; i < s->nsite; i++)
        ns += s->site_seen[i];
    free(s->sites_out);
    s->sites_out = malloc((ns ? ns : 1) * sizeof *s->sites_out);
    free(s->cm_sorted);
    s->cm_sorted = malloc((s->cmn ? s->cmn : 1) * sizeof *s->cm_sorted);
    if (!s->sites_out || !s->cm_sorted)
        return error_set("out of memory");
    size_t k = 0;
    for (size_t i = 0; i < s->nsite; i++)
        if (s->site_seen[i])
            s->sites_out[k++] = s->site[i];
    s->nsites_out = k;
    k = 0;
    for (size_t i = 0; i < s->cmcap; i++)
        if (s->cm[i].count)
            s->cm_sorted[k++] = s->cm[i];
    qsort(s->cm_sorted, k, sizeof *s->cm_sorted, cmp_conflict);
    return 0;
}

void ca_tables_free(struct ca_state *s)
{
    free(s->site);
    free(s->site_seen);
    free(s->sites_out);
    free(s->cm);
    free(s->cm_sorted);
}

const struct ca_site *ca_sites(const struct ca_state *s, size_t *n)
{
    *n = s->nsites_out;
    return s->sites_out;
}

const struct ca_conflict *ca_conflicts(const struct ca_state *s, size_t *n)
{
    *n = s->cmn;
    return s->cm_sorted;
}
