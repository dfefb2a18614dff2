/*
 * check_culprit.c - culprit attribution: which committed transaction caused
 * each software abort, true or false (stripe) conflict, and the conflict
 * matrix of sites.
 *
 * Owns: the sliding store of recently committed writes (hashed by stripe),
 * the queue of aborts waiting until no later commit can fall inside their
 * window, the search, the victim x culprit matrix, the attribution callback.
 * Never: keeps a committed write older than the oldest open attempt's window
 * (memory is bounded by the concurrency of the trace, not its length).
 */
#include <stdlib.h>
#include <string.h>

#include "check_state.h"
#include "error.h"
#include "tmtrace.h"
#include "trace_index.h"

/* Aborts caused by a stripe that another transaction held locked. */
static int found_locked(unsigned reason)
{
    return reason == TMT_ABORT_READ_LOCKED || reason == TMT_ABORT_COMMIT_LOCKED;
}

int ca_culprit_create(struct ca_state *s)
{
    s->bucket = calloc((size_t)1 << CA_BUCKETS_LOG2, sizeof *s->bucket);
    s->rcap = 1024;
    s->ring = malloc(s->rcap * sizeof *s->ring);
    return s->bucket && s->ring ? 0 : error_set("out of memory");
}

static int store_add(struct ca_state *s, uint64_t addr, uint64_t commit, const struct th *t)
{
    if (s->rhead - s->rtail == s->rcap) {
        if (s->rcap >= CA_STORE_MAX) {
            s->rtail++;   /* forget the oldest: attribution of very long attempts may miss it */
            s->store_truncated++;
        } else {
            struct centry *n = malloc(2 * s->rcap * sizeof *n);
            if (!n)
                return error_set("out of memory");
            for (uint64_t i = s->rtail; i < s->rhead; i++)
                n[i & (2 * s->rcap - 1)] = s->ring[i & (s->rcap - 1)];
            free(s->ring);
            s->ring = n;
            s->rcap *= 2;
        }
    }
    uint64_t st = ca_stripe(addr, s->o.stripes_log2);
    size_t b = (size_t)(st * UINT64_C(0x9e3779b97f4a7c15) >> (64 - CA_BUCKETS_LOG2));
    struct centry *e = &s->ring[s->rhead & (s->rcap - 1)];
    e->stripe = st;
    e->word = addr >> 3;
    e->commit = commit;
    e->start = t->start_ts;
    e->instance = t->instance;
    e->thread = t->pub.thread;
    e->site = t->site;
    e->prev = s->bucket[b];
    s->bucket[b] = ++s->rhead;   /* index + 1 */
    return 0;
}

static void prune(struct ca_state *s)
{
    uint64_t horizon = s->now;
    for (size_t i = 0; i < s->nth; i++)
        if (s->th[i].in_tx && s->th[i].start_ts < horizon)
            horizon = s->th[i].start_ts;
    for (size_t i = 0; i < s->pcount; i++) {
        const struct pending *p = &s->pend[(s->phead + i) % s->pcap];
        if (p->a.start < horizon)
            horizon = p->a.start;
    }
    horizon = horizon > s->o.uncertainty ? horizon - s->o.uncertainty : 0;
    while (s->rtail < s->rhead && s->ring[s->rtail & (s->rcap - 1)].commit < horizon)
        s->rtail++;
}

struct best {
    int prio;
    const struct centry *e;
};

/* Among conflicting commits in [lo, hi]: the highest priority, then the
 * latest (or, for a lock holder found past the abort, the earliest). */
static void search(const struct ca_state *s, const struct pending *p, uint64_t stripe, int has_word, uint64_t word,
                   int recorded, uint64_t lo, uint64_t hi, int earliest, struct best *b)
{
    size_t bk = (size_t)(stripe * UINT64_C(0x9e3779b97f4a7c15) >> (64 - CA_BUCKETS_LOG2));
    for (uint64_t i = s->bucket[bk]; i != 0 && i - 1 >= s->rtail;) {
        const struct centry *e = &s->ring[(i - 1) & (s->rcap - 1)];
        i = e->prev;
        if (e->stripe != stripe || e->thread == p->a.thread || e->commit < lo || e->commit > hi)
            continue;
        /* Past the abort only the lock holder counts: an attempt that had
         * started by then (and is the recorded holder, when known). */
        if (earliest && (e->start > p->a.abort + s->o.uncertainty || (p->holder && e->thread != p->holder)))
            continue;
        int prio = (recorded ? 2 : 0) + (has_word && e->word == word);
        if (!b->e || prio > b->prio ||
            (prio == b->prio && (earliest ? e->commit < b->e->commit : e->commit > b->e->commit))) {
            b->e = e;
            b->prio = prio;
        }
    }
}

static int conflict_add(struct ca_state *s, uint32_t v, uint32_t c, int is_true, double wasted)
{
    if (2 * (s->cmn + 1) > s->cmcap) {
        size_t nc = s->cmcap ? 2 * s->cmcap : 64;
        struct ca_conflict *n = calloc(nc, sizeof *n);
        if (!n)
            return error_set("out of memory");
        for (size_t i = 0; i < s->cmcap; i++) {
            if (!s->cm[i].count)
                continue;
            size_t h = (((uint64_t)s->cm[i].victim_site << 32 | s->cm[i].culprit_site) *
                        UINT64_C(0x9e3779b97f4a7c15)) & (nc - 1);
            while (n[h].count)
                h = (h + 1) & (nc - 1);
            n[h] = s->cm[i];
        }
        free(s->cm);
        s->cm = n;
        s->cmcap = nc;
    }
    size_t h = (((uint64_t)v << 32 | c) * UINT64_C(0x9e3779b97f4a7c15)) & (s->cmcap - 1);
    while (s->cm[h].count && !(s->cm[h].victim_site == v && s->cm[h].culprit_site == c))
        h = (h + 1) & (s->cmcap - 1);
    struct ca_conflict *x = &s->cm[h];
    if (!x->count) {
        x->victim_site = v;
        x->culprit_site = c;
        s->cmn++;
    }
    x->count++;
    if (is_true)
        x->true_count++;
    else
        x->false_count++;
    x->wasted_ns += wasted;
    return 0;
}

/* The end of the span in which commits can explain this abort. */
static uint64_t window_end(const struct ca_state *s, const struct pending *p)
{
    uint64_t hi = p->a.abort + s->o.uncertainty;
    if (found_locked(p->a.reason))
        hi += (uint64_t)(s->o.lock_hold_ns / s->o.ns_per_unit);
    return hi;
}

/* Searches the abort record's own location; `*match` becomes the attempt's
 * address that made the best match so far, when one of them did. */
static void search_recorded(const struct ca_state *s, const struct pending *p, uint64_t lo, uint64_t hi,
                            int earliest, struct best *b, uint64_t *match)
{
    unsigned L = s->o.stripes_log2;
    if (p->a.reason != TMT_ABORT_COMMIT_VALIDATE) {
        /* Every other abort records the address it failed on. */
        search(s, p, ca_stripe(p->rec, L), 1, p->rec >> 3, 1, lo, hi, earliest, b);
        return;
    }
    /* Commit-time validation knows only the stripe that changed. Which word
     * the attempt read there is in its recorded reads: a commit that wrote
     * that very word is a true conflict, even though the abort record names
     * a stripe. Without recorded accesses on the stripe, true and false
     * cannot be told apart and the match counts as false. */
    uint64_t stripe = p->rec & ((UINT64_C(1) << L) - 1);
    int seen = 0;
    for (size_t i = 0; i < p->nacc; i++) {
        if (ca_stripe(p->acc[i].addr, L) != stripe)
            continue;
        const struct best before = *b;
        search(s, p, stripe, 1, p->acc[i].addr >> 3, 1, lo, hi, earliest, b);
        if (b->e != before.e || b->prio != before.prio)
            *match = p->acc[i].addr;
        seen = 1;
    }
    if (!seen)
        search(s, p, stripe, 0, 0, 1, lo, hi, earliest, b);
}

static int resolve(struct ca_state *s, struct pending *p)
{
    uint64_t u = s->o.uncertainty;
    uint64_t lo = p->a.start > u ? p->a.start - u : 0, hi = p->a.abort + u;
    unsigned L = s->o.stripes_log2;
    struct best b = { 0, NULL };
    uint64_t match_addr = 0;
    if (p->rec)
        search_recorded(s, p, lo, hi, 0, &b, &match_addr);
    for (size_t i = 0; i < p->nacc; i++) {
        const struct best before = b;
        search(s, p, ca_stripe(p->acc[i].addr, L), 1, p->acc[i].addr >> 3, 0, lo, hi, 0, &b);
        if (b.e != before.e)
            match_addr = p->acc[i].addr;
    }
    /* Nothing inside the window, but the stripe was locked: the holder was
     * committing and its commit is the first one on that stripe after A. */
    if (!b.e && p->rec && found_locked(p->a.reason))
        search_recorded(s, p, hi + 1, window_end(s, p), 1, &b, &match_addr);
    struct ca_site *vs = ca_site_of(s, p->a.site);
    if (!vs)
        return -1;
    double wasted = (double)(p->a.abort > p->a.start ? p->a.abort - p->a.start : 0) * s->o.ns_per_unit;
    if (b.e) {
        p->a.found = 1;
        p->a.true_conflict = b.prio & 1;
        p->a.culprit_thread = b.e->thread;
        p->a.culprit_site = b.e->site;
        p->a.culprit_instance = b.e->instance;
        p->a.culprit_commit = b.e->commit;
        p->a.addr = match_addr ? match_addr : p->rec;
        if (p->a.true_conflict) {
            vs->true_conflicts++;
            s->t.true_conflicts++;
        } else {
            vs->false_conflicts++;
            s->t.false_conflicts++;
        }
        if (conflict_add(s, p->a.site, b.e->site, p->a.true_conflict, wasted) < 0)
            return -1;
    } else {
        p->a.found = 0;
        vs->conflict_free++;
        s->t.conflict_free++;
    }
    if (s->cb)
        s->cb(s->cbctx, &p->a);
    free(p->acc);
    p->acc = NULL;
    return 0;
}

/* Resolves the queued aborts whose window has closed (all commits that could
 * fall inside it have been seen), or all of them at the end. */
static int resolve_ready(struct ca_state *s, int all)
{
    while (s->pcount) {
        struct pending *p = &s->pend[s->phead];
        if (!all && window_end(s, p) >= s->now)
            break;
        if (resolve(s, p) < 0)
            return -1;
        s->phead = (s->phead + 1) % s->pcap;
        s->pcount--;
    }
    return 0;
}

static int queue_abort(struct ca_state *s, struct th *t, const struct tf_event *ev)
{
    if (s->pcount == s->pcap) {
        size_t nc = s->pcap ? 2 * s->pcap : 64;
        struct pending *n = malloc(nc * sizeof *n);
        if (!n)
            return error_set("out of memory");
        for (size_t i = 0; i < s->pcount; i++)
            n[i] = s->pend[(s->phead + i) % s->pcap];
        free(s->pend);
        s->pend = n;
        s->pcap = nc;
        s->phead = 0;
    }
    struct pending *p = &s->pend[(s->phead + s->pcount) % s->pcap];
    memset(p, 0, sizeof *p);
    p->a.thread = t->pub.thread;
    p->a.site = t->site;
    p->a.instance = t->instance;
    p->a.start = t->start_ts;
    p->a.abort = ev->ts;
    p->a.reason = ev->reason;
    p->rec = ev->addr;
    if (found_locked(ev->reason) && ev->value <= UINT32_MAX)
        p->holder = (uint32_t)ev->value;
    if (t->nacc) {
        p->acc = malloc(t->nacc * sizeof *p->acc);
        if (!p->acc)
            return error_set("out of memory");
        memcpy(p->acc, t->acc, t->nacc * sizeof *p->acc);
        p->nacc = t->nacc;
    }
    s->pcount++;
    return 0;
}

/* A read or write of the open attempt: kept while it runs. */
int ca_culprit_access(struct ca_state *s, struct th *t, const struct tf_event *ev)
{
    if (!s->o.have_accesses)
        return 0;
    if (mi_grow((void **)&t->acc, &t->capacc, t->nacc + 1, sizeof *t->acc) < 0)
        return -1;
    t->acc[t->nacc++] = (struct access){ ev->addr, ev->kind == TF_EV_WRITE };
    return 0;
}

/* The open attempt committed at `ts`: its writes enter the store. */
int ca_culprit_commit(struct ca_state *s, struct th *t, uint64_t ts)
{
    if (s->o.have_accesses)
        for (size_t i = 0; i < t->nacc; i++)
            if (t->acc[i].write && store_add(s, t->acc[i].addr, ts, t) < 0)
                return -1;
    return 0;
}

/* The open attempt aborted in the software path: wait for its window. */
int ca_culprit_abort(struct ca_state *s, struct th *t, const struct tf_event *ev)
{
    return s->o.have_accesses ? queue_abort(s, t, ev) : 0;
}

/* After every event: resolves what can be, forgets what cannot matter. */
int ca_culprit_step(struct ca_state *s)
{
    if (resolve_ready(s, 0) < 0)
        return -1;
    if (++s->since_prune >= CA_PRUNE_EVERY) {
        s->since_prune = 0;
        prune(s);
    }
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

/* The end of the stream: resolves every pending abort, sorts the matrix. */
int ca_culprit_finish(struct ca_state *s)
{
    if (resolve_ready(s, 1) < 0)
        return -1;
    free(s->cm_sorted);
    s->cm_sorted = malloc((s->cmn ? s->cmn : 1) * sizeof *s->cm_sorted);
    if (!s->cm_sorted)
        return error_set("out of memory");
    size_t k = 0;
    for (size_t i = 0; i < s->cmcap; i++)
        if (s->cm[i].count)
            s->cm_sorted[k++] = s->cm[i];
    qsort(s->cm_sorted, k, sizeof *s->cm_sorted, cmp_conflict);
    return 0;
}

void ca_culprit_free(struct ca_state *s)
{
    for (size_t i = 0; i < s->pcount; i++)
        free(s->pend[(s->phead + i) % s->pcap].acc);
    free(s->ring);
    free(s->bucket);
    free(s->pend);
    free(s->cm);
    free(s->cm_sorted);
}

void ca_on_attribution(struct ca_state *s, void (*fn)(void *, const struct ca_attribution *), void *ctx)
{
    s->cb = fn;
    s->cbctx = ctx;
}

const struct ca_conflict *ca_conflicts(const struct ca_state *s, size_t *n)
{
    *n = s->cmn;
    return s->cm_sorted;
}
