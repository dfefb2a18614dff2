/*
 * check_groups.c - the resolved STM aborts in groups of one victim site,
 * one class, one word and one culprit site, with the time each group cost
 * the program on the CPU and, apart, the wall time of its descheduled
 * attempts.
 *
 * Owns: the group table (open addressing, keyed by the four), each
 * thread's queue of aborted attempts' time off the CPU (until their
 * attribution), the regrouping of lock-held aborts by what the holder wrote
 * (only other words of the stripe: a false conflict; the word itself, then
 * committed: a true one), the order of the groups.
 * Never: charges time off the CPU to a group; names data (the report folds
 * words into objects); keeps more than one entry per group.
 */
#include <stdlib.h>
#include <string.h>

#include "check_state.h"
#include "error.h"

static size_t group_hash(uint32_t victim, uint32_t culprit, unsigned cls, uint64_t addr)
{
    uint64_t k = addr ^ ((uint64_t)victim << 40) ^ ((uint64_t)culprit << 20) ^ cls;
    return (size_t)(k * UINT64_C(0x9e3779b97f4a7c15) >> 20);
}

static int grp_used(const void *e) { return ((const struct ca_group *)e)->count != 0; }

static size_t grp_home(const void *e, size_t nc)
{
    const struct ca_group *g = e;
    return group_hash(g->victim_site, g->culprit_site, g->cls, g->addr) & (nc - 1);
}

/* The aborted attempt of `t` waits for its attribution: its time off the
 * CPU kept, in order, until then. */
int ca_group_abort(struct ca_state *s, struct th *t)
{
    /* Only the aborts check_culprit.c queues are attributed (and popped). */
    if (!s->o.have_accesses && s->o.format_version < 2)
        return 0;
    if (t->off_n == t->off_cap) {
        size_t nc = t->off_cap ? 2 * t->off_cap : 8;
        struct ca_off *n = malloc(nc * sizeof *n);
        if (!n)
            return error_set("out of memory");
        for (size_t i = 0; i < t->off_n; i++)
            n[i] = t->off[(t->off_head + i) % t->off_cap];
        free(t->off);
        t->off = n;
        t->off_cap = nc;
        t->off_head = 0;
    }
    int desched = t->migrated || (double)t->max_gap * s->o.ns_per_unit >= s->o.desched_gap_ns;
    t->off[(t->off_head + t->off_n++) % t->off_cap] =
        (struct ca_off){ t->start_ts, ca_attempt_off_ns(s, t), (uint8_t)desched };
    return 0;
}

/* The victim attempt's time off the CPU, and whether it was descheduled or
 * migrated: taken from its thread's queue (aborts are attributed in the
 * order they happened; one the analysis never queued is skipped). */
static double victim_off_ns(struct ca_state *s, const struct ca_attribution *a, int *desched)
{
    *desched = 0;
    uint32_t id = ca_id_slot(a->thread);
    if (id >= s->nth)
        return 0;
    struct th *t = &s->th[id];
    while (t->off_n) {
        struct ca_off o = t->off[t->off_head];
        if (o.start > a->start)
            break;
        t->off_head = (t->off_head + 1) % t->off_cap;
        t->off_n--;
        if (o.start == a->start) {
            *desched = o.descheduled;
            return o.off_ns;
        }
    }
    return 0;
}

/* The class an abort is grouped under: a lock-held abort whose holder
 * wrote only other words of the stripe is false sharing; one whose holder
 * then committed a write to the very word is a true conflict that met the
 * writer inside its commit (which of the two the victim saw is a matter of
 * timing, not of the data). */
static unsigned group_class(const struct ca_attribution *a)
{
    if (a->cls >= CA_CL_HOLDER_RUNNING && a->cls <= CA_CL_HOLDER_ABORTED && a->same_word == 0)
        return CA_CL_FALSE;
    if (a->cls == CA_CL_HOLDER_RUNNING && a->same_word == 1)
        return CA_CL_TRUE;
    return a->cls;
}

static struct ca_group *group_slot(struct ca_state *s, uint32_t victim, uint32_t culprit, unsigned cls,
                                   uint64_t addr)
{
    if (2 * (s->grpn + 1) > s->grpcap) {
        size_t nc = s->grpcap ? 2 * s->grpcap : 256;
        struct ca_group *n = ca_table_rehash(s->grp, s->grpcap, nc, sizeof *n, grp_used, grp_home);
        if (!n)
            return NULL;
        s->grp = n;
        s->grpcap = nc;
    }
    size_t h = group_hash(victim, culprit, cls, addr) & (s->grpcap - 1);
    for (;; h = (h + 1) & (s->grpcap - 1)) {
        struct ca_group *g = &s->grp[h];
        if (!g->count) {
            *g = (struct ca_group){ .victim_site = victim, .culprit_site = culprit, .cls = cls, .addr = addr };
            const struct ca_block *b = ca_alloc_find(s, addr);
            if (b) {
                g->alloc_pc = ca_block_pc(b);
                g->alloc_base = b->addr;
            }
            s->grpn++;
            return g;
        }
        if (g->victim_site == victim && g->culprit_site == culprit && g->cls == cls && g->addr == addr)
            return g;
    }
}

void ca_group_add(struct ca_state *s, const struct ca_attribution *a)
{
    unsigned cls = group_class(a);
    uint32_t culprit = a->found ? a->culprit_site : 0;
    struct ca_group *g = group_slot(s, a->site, culprit, cls, a->addr);
    if (!g) {
        s->grp_failed = 1;
        return;
    }
    int desched;
    double wall = (double)(a->abort > a->start ? a->abort - a->start : 0) * s->o.ns_per_unit;
    double off = victim_off_ns(s, a, &desched);
    g->count++;
    g->held += a->cls >= CA_CL_HOLDER_RUNNING && a->cls <= CA_CL_HOLDER_ABORTED;
    /* Which word a culprit wrote is known only when writes reach the
     * commit store (recorded accesses, or commits' write sets): below
     * that, the analysis counts the stripe as the word. */
    g->same_word_known += a->same_word >= 0 && (s->o.have_accesses || s->rhead > 0);
    g->oncpu_ns += wall > off ? wall - off : 0;
    g->desched_n += desched;
    g->desched_ns += desched ? wall : 0;
}

static int cmp_group(const void *a, const void *b)
{
    const struct ca_group *x = a, *y = b;
    if (x->oncpu_ns != y->oncpu_ns)
        return x->oncpu_ns < y->oncpu_ns ? 1 : -1;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return (x->addr > y->addr) - (x->addr < y->addr);
}

int ca_groups_finish(struct ca_state *s)
{
    free(s->grp_sorted);
    s->grp_sorted = malloc((s->grpn ? s->grpn : 1) * sizeof *s->grp_sorted);
    if (!s->grp_sorted) {
        s->grp_failed = 1;
        return 0;   /* the report goes on without groups, and says so */
    }
    size_t k = 0;
    for (size_t i = 0; i < s->grpcap; i++)
        if (s->grp[i].count)
            s->grp_sorted[k++] = s->grp[i];
    qsort(s->grp_sorted, k, sizeof *s->grp_sorted, cmp_group);
    s->grpn = k;
    return 0;
}

const struct ca_group *ca_groups(const struct ca_state *s, size_t *n, int *failed)
{
    *n = s->grp_sorted ? s->grpn : 0;
    if (failed)
        *failed = s->grp_failed;
    return s->grp_sorted;
}

void ca_groups_free(struct ca_state *s)
{
    free(s->grp);
    free(s->grp_sorted);
}
