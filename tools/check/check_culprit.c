/*
 * check_culprit.c - culprit attribution: which committed transaction caused
 * each software abort, true or false (stripe) conflict, and the addresses
 * aborts failed on.
 *
 * Owns: the sliding store of recently committed writes (hashed by stripe;
 * from the recorded writes at level all, from the commits' write sets,
 * WSET, at level tx of version 4),
 * the queue of aborts waiting until no later commit can fall inside their
 * window, the search, the holes in the threads' order that may hide a
 * culprit, the hot-address table, the attribution callback. Each
 * resolved abort is counted into the shared site rows and conflict matrix
 * (check_tables.c).
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
    s->vbucket = calloc((size_t)1 << CA_BUCKETS_LOG2, sizeof *s->vbucket);
    s->vcap = 1024;
    s->vring = malloc(s->vcap * sizeof *s->vring);
    return s->bucket && s->ring && s->vbucket && s->vring ? 0 : error_set("out of memory");
}

static size_t hash_bucket(uint64_t key)
{
    return (size_t)(key * UINT64_C(0x9e3779b97f4a7c15) >> (64 - CA_BUCKETS_LOG2));
}

/* Room for one more entry in a ring of *cap entries (a power of two)
 * holding the absolute indices [*tail, head): doubled while under
 * CA_STORE_MAX entries, else the oldest is dropped. 1 when it dropped one,
 * 0 when there was or now is room, -1 out of memory. */
static int ring_make_room(void **ring, size_t elem, uint64_t *cap, uint64_t *tail, uint64_t head)
{
    if (head - *tail < *cap)
        return 0;
    if (*cap >= CA_STORE_MAX) {
        ++*tail;
        return 1;
    }
    char *n = malloc(2 * *cap * elem);
    if (!n)
        return error_set("out of memory");
    for (uint64_t i = *tail; i < head; i++)
        memcpy(n + (i & (2 * *cap - 1)) * elem, (char *)*ring + (i & (*cap - 1)) * elem, elem);
    free(*ring);
    *ring = n;
    *cap *= 2;
    return 0;
}

/* A committed update transaction and its write version (v2 traces). */
static int version_add(struct ca_state *s, const struct th *t, const struct tf_event *ev)
{
    if (ring_make_room((void **)&s->vring, sizeof *s->vring, &s->vcap, &s->vtail, s->vhead) < 0)
        return -1;
    size_t b = hash_bucket(ev->addr);
    struct ventry *e = &s->vring[s->vhead & (s->vcap - 1)];
    *e = (struct ventry){ ev->addr, ev->ts, t->start_ts, t->instance, s->vbucket[b], t->pub.thread, t->site };
    s->vbucket[b] = ++s->vhead;
    return 0;
}

static const struct ventry *version_find(const struct ca_state *s, uint64_t version)
{
    for (uint64_t i = s->vbucket[hash_bucket(version)]; i != 0 && i - 1 >= s->vtail;) {
        const struct ventry *e = &s->vring[(i - 1) & (s->vcap - 1)];
        if (e->version == version)
            return e;
        i = e->prev;
    }
    return NULL;
}

static int store_add(struct ca_state *s, uint64_t addr, uint64_t commit, const struct th *t)
{
    /* Full at CA_STORE_MAX: the oldest is forgotten, and attribution of
     * very long attempts may miss it. */
    int dropped = ring_make_room((void **)&s->ring, sizeof *s->ring, &s->rcap, &s->rtail, s->rhead);
    if (dropped < 0)
        return -1;
    s->store_truncated += (uint64_t)dropped;
    uint64_t st = ca_stripe(&s->o, addr);
    size_t b = hash_bucket(st);
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
    uint64_t keep = s->o.uncertainty + s->o.slack;
    horizon = horizon > keep ? horizon - keep : 0;
    while (s->rtail < s->rhead && s->ring[s->rtail & (s->rcap - 1)].commit < horizon)
        s->rtail++;
    while (s->vtail < s->vhead && s->vring[s->vtail & (s->vcap - 1)].commit < horizon)
        s->vtail++;
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
    for (uint64_t i = s->bucket[hash_bucket(stripe)]; i != 0 && i - 1 >= s->rtail;) {
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

/* The address an attributed abort failed on: counted with its cost. */
static int hot_add(struct ca_state *s, const struct ca_attribution *a, double wasted)
{
    if (a->addr == 0)
        return 0;
    if (2 * (s->hotn + 1) > s->hotcap) {
        size_t nc = s->hotcap ? 2 * s->hotcap : 256;
        struct ca_hot *n = calloc(nc, sizeof *n);
        if (!n)
            return error_set("out of memory");
        for (size_t i = 0; i < s->hotcap; i++) {
            if (!s->hot[i].count)
                continue;
            size_t h = hash_bucket(s->hot[i].addr) & (nc - 1);
            while (n[h].count)
                h = (h + 1) & (nc - 1);
            n[h] = s->hot[i];
        }
        free(s->hot);
        s->hot = n;
        s->hotcap = nc;
    }
    size_t h = hash_bucket(a->addr) & (s->hotcap - 1);
    while (s->hot[h].count && s->hot[h].addr != a->addr)
        h = (h + 1) & (s->hotcap - 1);
    struct ca_hot *x = &s->hot[h];
    if (!x->count) {
        x->addr = a->addr;
        s->hotn++;
        const struct ca_block *b = ca_alloc_find(s, a->addr);
        if (b) {
            x->alloc_pc = ca_block_pc(b);
            x->alloc_off = a->addr - b->addr;
        }
    }
    x->count++;
    x->true_count += a->same_word == 1;
    x->false_count += a->same_word == 0;
    x->holder_count += a->cls >= CA_CL_HOLDER_RUNNING && a->cls <= CA_CL_HOLDER_ABORTED;
    x->wasted_ns += wasted;
    if (wasted >= x->top_wasted) {
        x->top_wasted = wasted;
        x->victim_site = a->site;
        x->culprit_site = a->culprit_site;
    }
    return 0;
}

/* The end of the span in which commits can explain this abort. */
static uint64_t window_end(const struct ca_state *s, const struct pending *p)
{
    uint64_t hi = p->a.abort + s->o.uncertainty + s->o.slack;
    if (found_locked(p->a.reason) && s->o.format_version < 2)
        hi += (uint64_t)(s->o.lock_hold_ns / s->o.ns_per_unit);
    return hi;
}

/* Searches the abort record's own location; `*match` becomes the attempt's
 * address that made the best match so far, when one of them did. */
static void search_recorded(const struct ca_state *s, const struct pending *p, uint64_t lo, uint64_t hi,
                            int earliest, struct best *b, uint64_t *match)
{
    if (p->a.reason != TMT_ABORT_COMMIT_VALIDATE || s->o.format_version >= 2) {
        /* Every other abort (and every abort from format version 2 on)
         * records the address it failed on. */
        search(s, p, ca_stripe(&s->o, p->rec), 1, p->rec >> 3, 1, lo, hi, earliest, b);
        return;
    }
    /* Commit-time validation knows only the stripe that changed. Which word
     * the attempt read there is in its recorded reads: a commit that wrote
     * that very word is a true conflict, even though the abort record names
     * a stripe. Without recorded accesses on the stripe, true and false
     * cannot be told apart and the match counts as false. */
    uint64_t stripe = p->rec & ((UINT64_C(1) << s->o.stripes_log2) - 1);
    int seen = 0;
    for (size_t i = 0; i < p->nacc; i++) {
        if (ca_stripe(&s->o, p->acc[i].addr) != stripe)
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

/* Time-window attribution: the best conflicting commit inside the window. */
static void resolve_by_time(struct ca_state *s, struct pending *p)
{
    uint64_t u = s->o.uncertainty;
    uint64_t lo = p->a.start > u ? p->a.start - u : 0, hi = p->a.abort + u;
    struct best b = { 0, NULL };
    uint64_t match_addr = 0;
    if (p->rec)
        search_recorded(s, p, lo, hi, 0, &b, &match_addr);
    for (size_t i = 0; i < p->nacc; i++) {
        const struct best before = b;
        search(s, p, ca_stripe(&s->o, p->acc[i].addr), 1, p->acc[i].addr >> 3, 0, lo, hi, 0, &b);
        if (b.e != before.e)
            match_addr = p->acc[i].addr;
    }
    /* Nothing inside the window, but the stripe was locked: the holder was
     * committing and its commit is the first one on that stripe after A. */
    if (!b.e && p->rec && found_locked(p->a.reason) && s->o.format_version < 2)
        search_recorded(s, p, hi + 1, window_end(s, p), 1, &b, &match_addr);
    if (!b.e)
        return;
    p->a.found = 1;
    p->a.cls = (b.prio & 1) ? CA_CL_TRUE : CA_CL_FALSE;
    p->a.same_word = p->a.cls == CA_CL_TRUE;
    p->a.culprit_thread = b.e->thread;
    p->a.culprit_site = b.e->site;
    p->a.culprit_instance = b.e->instance;
    p->a.culprit_commit = b.e->commit;
    p->a.addr = match_addr ? match_addr : p->rec;
}

/* Did the identified culprit (committed) write the word the victim failed
 * on? 1 yes, 0 only other words of that stripe, -1 unknown (its writes are
 * not in the store: a level that records neither accesses nor write sets,
 * dropped, or it never committed). */
static int word_match(const struct ca_state *s, const struct pending *p)
{
    uint64_t stripe = ca_stripe(&s->o, p->rec);
    int seen = 0;
    for (uint64_t i = s->bucket[hash_bucket(stripe)]; i != 0 && i - 1 >= s->rtail;) {
        const struct centry *e = &s->ring[(i - 1) & (s->rcap - 1)];
        i = e->prev;
        if (e->stripe != stripe || e->thread != p->a.culprit_thread || e->instance != p->a.culprit_instance)
            continue;
        if (e->word == p->rec >> 3)
            return 1;
        seen = 1;
    }
    return seen ? 0 : -1;
}

/* True or false conflict with the identified commit. Without its writes in
 * the store the stripe is all that is known: the class says so rather than
 * guess. */
static unsigned word_class(const struct ca_state *s, const struct pending *p)
{
    int m = word_match(s, p);
    return m == 1 ? CA_CL_TRUE : m == 0 ? CA_CL_FALSE : CA_CL_WORD_UNKNOWN;
}

/* The holder's attempt among its thread's recently ended ones (NULL if
 * the trace does not have it). */
static const struct ended *holder_attempt(const struct ca_state *s, const struct pending *p)
{
    if (p->holder == 0 || p->holder >= s->nth || !s->th[p->holder].live)
        return NULL;
    const struct th *h = &s->th[p->holder];
    uint32_t n = h->nended < h->ended_cap ? h->nended : h->ended_cap;
    /* A thread's instances only grow: newest first, the search stops once
     * it is further back than the one wanted (a ring spans far fewer than
     * the 2^31 instances the record's low bits tell apart). */
    uint64_t want = (h->instance - p->holder_inst) & TF_ABORT_INSTANCE_MASK;
    for (uint32_t k = 1; k <= n; k++) {
        const struct ended *e = &h->ended[(h->nended - k) % h->ended_cap];
        uint64_t back = (h->instance - e->instance) & TF_ABORT_INSTANCE_MASK;
        if (back == want)
            return e;
        if (back > want)
            break;
    }
    return NULL;
}

/* The holder's attempt when it committed before the thread's ring of
 * ended attempts begins, from the index of commits by version: the
 * aborting thread read the lock and was then descheduled for longer than
 * the ring keeps (under the sanitizers, with a test beside it, 8 ms while
 * the holder committed 14,500 more times). Its commit came after the
 * aborted attempt began (the lock was held after that start), so the scan
 * goes back from the newest commit only as far as that start. 1 with
 * `out` filled, 0 when none is found (the holder aborted, or its commit
 * fell out of the index). */
static int holder_committed_earlier(const struct ca_state *s, const struct pending *p, struct ended *out)
{
    if (p->holder == 0 || p->holder >= s->nth || !s->th[p->holder].live)
        return 0;
    uint64_t from = p->a.start > s->o.uncertainty ? p->a.start - s->o.uncertainty : 0;
    for (uint64_t i = s->vhead; i > s->vtail; i--) {
        const struct ventry *v = &s->vring[(i - 1) & (s->vcap - 1)];
        if (v->commit < from)
            break;
        if (v->thread == p->holder && (v->instance & TF_ABORT_INSTANCE_MASK) == p->holder_inst) {
            *out = (struct ended){ .instance = v->instance, .start = v->start, .end = v->commit,
                                   .site = v->site, .committed = 1 };
            return 1;
        }
    }
    return 0;
}

/* The holder's attempt is still running, or its write set is still to
 * come (the abort waits for both). */
static int holder_open(const struct ca_state *s, const struct pending *p)
{
    if (!p->held || p->holder == 0 || p->holder >= s->nth)
        return 0;
    const struct th *h = &s->th[p->holder];
    return (h->in_tx || h->wset_left) && (h->instance & TF_ABORT_INSTANCE_MASK) == p->holder_inst;
}

/* The commit whose version the abort found still has words of its write
 * set to come (its thread records them after the COMMIT). */
static int version_wset_open(const struct ca_state *s, const struct pending *p)
{
    if (!(s->o.have_wsets || s->t.shed) || p->held || p->version == 0)
        return 0; /* no write set can be still to come */
    const struct ventry *v = version_find(s, p->version);
    if (!v || v->thread >= s->nth)
        return 0;
    const struct th *c = &s->th[v->thread];
    return c->wset_left && c->wset_commit == v->commit;
}

/* Attribution by identity (format version 2): the commit that wrote the
 * version found, or the attempt that held the lock found. */
static void resolve_by_identity(struct ca_state *s, struct pending *p)
{
    if (p->held) {
        const struct ended *e = holder_attempt(s, p);
        if (!e && p->have_holder_e)
            e = &p->holder_e;
        int open = holder_open(s, p);
        if (!e && !open) {
            s->t.holder_unknown++;
            return;
        }
        const struct th *h = &s->th[p->holder];
        p->a.found = 1;
        p->a.by_identity = 1;
        p->a.culprit_thread = p->holder;
        p->a.culprit_site = e ? e->site : h->site;
        p->a.culprit_instance = e ? e->instance : h->instance;
        p->a.culprit_commit = e && e->committed ? e->end : 0;
        p->a.addr = p->rec;
        if (e ? e->descheduled : (h->migrated || (double)h->max_gap * s->o.ns_per_unit >= s->o.desched_gap_ns))
            p->a.cls = CA_CL_HOLDER_PREEMPTED;
        else if (e && !e->committed)
            p->a.cls = CA_CL_HOLDER_ABORTED;
        else
            p->a.cls = CA_CL_HOLDER_RUNNING;
        p->a.same_word = word_match(s, p);
        return;
    }
    const struct ventry *v = p->version ? version_find(s, p->version) : NULL;
    if (!v || v->thread == p->a.thread)
        return;
    p->a.found = 1;
    p->a.by_identity = 1;
    p->a.culprit_thread = v->thread;
    p->a.culprit_site = v->site;
    p->a.culprit_instance = v->instance;
    p->a.culprit_commit = v->commit;
    p->a.addr = p->rec;
    p->a.cls = word_class(s, p);
    p->a.same_word = p->a.cls == CA_CL_TRUE;
}

int ca_culprit_hole(struct ca_state *s, uint32_t thread, uint64_t from, uint64_t to)
{
    if (s->nholes == s->holes_cap) {
        size_t n = s->holes_cap ? 2 * s->holes_cap : 64;
        struct ca_hole *h = realloc(s->holes, n * sizeof *h);
        if (!h)
            return error_set("out of memory");
        s->holes = h;
        s->holes_cap = n;
    }
    s->holes[s->nholes++] = (struct ca_hole){ from, to, thread };
    return 0;
}

/* Whether another thread's events were missing while the aborted attempt
 * ran (p's window): a hole found in its order that overlaps the window, or
 * a thread whose END chunk counts drops and that has been silent since
 * before the abort (a hole not found yet: the next event after it comes
 * later in the merged order). An abort no commit in the trace explains may
 * then have its culprit among the missing events. */
static int culprit_maybe_dropped(const struct ca_state *s, const struct pending *p)
{
    uint64_t start = p->a.start, end = p->a.abort + s->o.uncertainty;
    for (size_t i = s->nholes; i-- > 0;) {
        const struct ca_hole *h = &s->holes[i];
        if (h->to <= start)
            break; /* the holes before it ended earlier still */
        if (h->thread != p->a.thread && h->from < end)
            return 1;
    }
    for (size_t k = 0; k < s->ndropping; k++) {
        uint32_t u = s->dropping[k];
        if (u != p->a.thread && u < s->nth && s->th[u].live && s->th[u].last_ev_ts < p->a.abort)
            return 1;
    }
    return 0;
}

static int resolve(struct ca_state *s, struct pending *p)
{
    if (s->o.format_version >= 2)
        resolve_by_identity(s, p);
    if (!p->a.found && s->o.have_accesses)
        resolve_by_time(s, p);
    struct ca_site *vs = ca_site_of(s, p->a.site);
    if (!vs)
        return -1;
    double wasted = (double)(p->a.abort > p->a.start ? p->a.abort - p->a.start : 0) * s->o.ns_per_unit;
    if (!p->a.found) {
        p->a.cls = culprit_maybe_dropped(s, p) ? CA_CL_CULPRIT_DROPPED : CA_CL_CONFLICT_FREE;
        p->a.addr = p->rec;
    }
    p->a.true_conflict = p->a.cls == CA_CL_TRUE;
    if (p->a.cls == CA_CL_TRUE) {
        vs->true_conflicts++;
        s->t.true_conflicts++;
    } else if (p->a.cls == CA_CL_FALSE) {
        vs->false_conflicts++;
        s->t.false_conflicts++;
    } else if (p->a.cls == CA_CL_CONFLICT_FREE) {
        vs->conflict_free++;
        s->t.conflict_free++;
    }
    if (p->a.found)
        s->t.by_identity += p->a.by_identity, s->t.by_time += !p->a.by_identity;
    if (ca_site_class(s, p->a.site, p->a.cls, wasted) < 0 ||
        ca_conflict_add(s, p->a.site, p->a.found ? p->a.culprit_site : 0, p->a.cls, wasted) < 0 ||
        (p->a.found && hot_add(s, &p->a, wasted) < 0))
        return -1;
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
        if (!all && (window_end(s, p) >= s->now || holder_open(s, p) || version_wset_open(s, p)))
            break;
        if (p->awaits_holder) {
            p->awaits_holder = 0;
            s->holders_awaited--;
        }
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
    p->a.same_word = -1;
    p->rec = ev->addr;
    if (s->o.format_version >= 2) {
        p->held = tf_abort_is_held(ev->value);
        if (p->held) {
            p->holder = tf_abort_holder_thread(ev->value);
            p->holder_inst = tf_abort_holder_instance(ev->value);
            const struct ended *e = holder_attempt(s, p);
            if (e) {
                p->holder_e = *e;
                p->have_holder_e = 1;
            } else if (holder_open(s, p)) {
                p->awaits_holder = 1;
                s->holders_awaited++;
            } else {
                p->have_holder_e = holder_committed_earlier(s, p, &p->holder_e);
            }
        } else {
            p->version = ev->value;
        }
    } else if (found_locked(ev->reason) && ev->value <= UINT32_MAX) {
        p->holder = (uint32_t)ev->value;
    }
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

void ca_culprit_holder_ended(struct ca_state *s, const struct th *t, const struct ended *e)
{
    for (size_t i = 0; s->holders_awaited && i < s->pcount; i++) {
        struct pending *p = &s->pend[(s->phead + i) % s->pcap];
        if (p->awaits_holder && &s->th[p->holder] == t && (e->instance & TF_ABORT_INSTANCE_MASK) == p->holder_inst) {
            p->holder_e = *e;
            p->have_holder_e = 1;
            p->awaits_holder = 0;
            s->holders_awaited--;
        }
    }
}

/* A read or write of the open attempt: kept while it runs. */
int ca_culprit_access(struct ca_state *s, struct th *t, const struct tf_event *ev)
{
    if (!s->o.have_accesses)
        return 0;
    if (ti_grow((void **)&t->acc, &t->capacc, t->nacc + 1, sizeof *t->acc) < 0)
        return -1;
    t->acc[t->nacc++] = (struct access){ ev->addr, ev->kind == TF_EV_WRITE };
    return 0;
}

/* The open attempt committed: its writes enter the store, and (v2) its
 * write version the index of commits by version. */
int ca_culprit_commit(struct ca_state *s, struct th *t, const struct tf_event *ev)
{
    if (s->o.have_accesses)
        for (size_t i = 0; i < t->nacc; i++)
            if (t->acc[i].write && store_add(s, t->acc[i].addr, ev->ts, t) < 0)
                return -1;
    if (s->o.format_version >= 2 && ev->addr != 0 && version_add(s, t, ev) < 0)
        return -1;
    /* Level tx, version 4: an update commit whose writes were not recorded
     * one by one (TMTRACE_DETAIL did not choose it) records its write set
     * next, one WSET per redo-log entry; so does one shed at level all.
     * Serial commits write in place and record none. */
    int wrote = 0;
    for (size_t i = 0; i < t->nacc && !wrote; i++)
        wrote = t->acc[i].write;
    int wsets = s->o.have_wsets || t->shed;
    t->wset_left = wsets && ev->addr != 0 && !wrote && !t->serial ? tf_commit_write_set(ev->value) : 0;
    t->wset_commit = ev->ts;
    return 0;
}

int ca_culprit_wset(struct ca_state *s, struct th *t, const struct tf_event *ev)
{
    if (!t->wset_left)
        return 0;
    t->wset_left--;
    return store_add(s, ev->addr, t->wset_commit, t);
}

/* The thread's latest pending abort when it is its current attempt's (the
 * ABORT just before), else NULL. */
static struct pending *pending_now(struct ca_state *s, const struct th *t)
{
    for (size_t i = s->pcount; i-- > 0;) {
        struct pending *p = &s->pend[(s->phead + i) % s->pcap];
        if (p->a.thread == t->pub.thread)
            return p->a.instance == t->instance ? p : NULL;
    }
    return NULL;
}

void ca_culprit_abort_pc(struct ca_state *s, const struct th *t, const struct tf_event *ev)
{
    struct pending *p = pending_now(s, t);
    if (p && p->a.pc == 0)
        p->a.pc = ev->addr;
}

void ca_culprit_abort_stack(struct ca_state *s, const struct th *t, const struct tf_event *ev)
{
    struct pending *p = pending_now(s, t);
    /* Frames come outwards after their ABORT_PC: depth 1 starts the stack. */
    if (!p || p->a.pc == 0 || (ev->value == 1) != (p->a.stack == 0))
        return;
    uint32_t id = ca_frame_push(s, p->a.stack, ev->addr);
    if (id)
        p->a.stack = id;
}

/* The open attempt aborted in the software path: wait for its window. A
 * version 1 trace needs the accesses to attribute anything. */
int ca_culprit_abort(struct ca_state *s, struct th *t, const struct tf_event *ev)
{
    return s->o.have_accesses || s->o.format_version >= 2 ? queue_abort(s, t, ev) : 0;
}

/* After every event: resolves what can be, forgets what cannot matter. */
int ca_culprit_step_slow(struct ca_state *s)
{
    if (resolve_ready(s, 0) < 0)
        return -1;
    if (++s->since_prune >= CA_PRUNE_EVERY) {
        s->since_prune = 0;
        prune(s);
    }
    return 0;
}

static int cmp_hot(const void *a, const void *b)
{
    const struct ca_hot *x = a, *y = b;
    if (x->wasted_ns != y->wasted_ns)
        return x->wasted_ns < y->wasted_ns ? 1 : -1;
    return (x->addr > y->addr) - (x->addr < y->addr);
}

/* The end of the stream: resolves every pending abort, sorts the
 * addresses. */
int ca_culprit_finish(struct ca_state *s)
{
    if (resolve_ready(s, 1) < 0)
        return -1;
    free(s->hot_sorted);
    s->hot_sorted = malloc((s->hotn ? s->hotn : 1) * sizeof *s->hot_sorted);
    if (!s->hot_sorted)
        return error_set("out of memory");
    size_t k = 0;
    for (size_t i = 0; i < s->hotcap; i++)
        if (s->hot[i].count)
            s->hot_sorted[k++] = s->hot[i];
    qsort(s->hot_sorted, k, sizeof *s->hot_sorted, cmp_hot);
    return 0;
}

const struct ca_hot *ca_hot_addresses(const struct ca_state *s, size_t *n)
{
    *n = s->hotn;
    return s->hot_sorted;
}

void ca_culprit_free(struct ca_state *s)
{
    for (size_t i = 0; i < s->pcount; i++)
        free(s->pend[(s->phead + i) % s->pcap].acc);
    free(s->ring);
    free(s->bucket);
    free(s->vring);
    free(s->vbucket);
    free(s->pend);
    free(s->hot);
    free(s->hot_sorted);
    free(s->holes);
    free(s->dropping);
}

void ca_on_attribution(struct ca_state *s, void (*fn)(void *, const struct ca_attribution *), void *ctx)
{
    s->cb = fn;
    s->cbctx = ctx;
}

