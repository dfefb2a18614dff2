/*
 * check_analysis.c - the metrics of tmcheck, computed while the events of a
 * trace stream through once in merged order.
 *
 * Owns: per-thread state (the last stamp in program order, a bounded
 * timestamp-ordered view for the grammar and out-of-place checks, the open
 * attempt and its accesses), the sliding store of recently committed writes
 * that attribution searches, the queue of aborts waiting for their window to
 * close, the per-site table, the conflict matrix and the clock-error
 * histogram.
 * Never: keeps state older than the oldest open attempt's window (memory is
 * bounded by the concurrency of the trace, not its length); does I/O.
 */
#include "check_analysis.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "sync_merge.h"
#include "tmtrace.h"

#define CA_BUCKETS_LOG2 16            /* hash buckets of the commit store */
#define CA_STORE_MAX (1u << 21)       /* committed writes kept at most (~100 MB) */
#define CA_PRUNE_EVERY 4096
#define CA_HIST_SUB 32                /* clock error histogram: 32 steps per power of two */
#define CA_HIST_N (64 * CA_HIST_SUB)
#define CA_MAX_ID (1u << 22)          /* thread and site ids above this share one slot */

enum { G_OUT = 0, G_IN, G_SKIP };

struct ro_ent {
    uint64_t ts;
    uint64_t prog;      /* program-order index | kind << 56 */
};

struct access {
    uint64_t addr;
    uint8_t write;
};

struct th {
    struct ca_thread pub;
    int seen;
    uint64_t last_ts;
    uint64_t prog;
    /* timestamp-ordered view: a sorted ring of the last CA_REORDER_WINDOW events */
    struct ro_ent *ring;
    uint32_t rhead, rcount;
    uint64_t emitted, last_emit_ts;
    int have_emit;
    int gstate;
    /* the open attempt, in program order */
    int in_tx, late, has_ops, htm;
    uint64_t start_ts, op_max, instance;
    uint32_t site;
    struct access *acc;
    size_t nacc, capacc;
    uint64_t retries;   /* aborted attempts since this thread's last commit or cancel */
};

struct centry {
    uint64_t stripe, word, commit, instance;
    uint64_t start;     /* the committed attempt's start stamp */
    uint64_t prev;      /* absolute index + 1 of the previous entry of the bucket, 0 = none */
    uint32_t thread, site;
};

/* Aborts caused by a stripe that another transaction held locked. */
static int found_locked(unsigned reason)
{
    return reason == TMT_ABORT_READ_LOCKED || reason == TMT_ABORT_COMMIT_LOCKED;
}

struct pending {
    struct ca_attribution a;
    uint64_t rec;       /* the abort record's address or stripe (0 = unknown) */
    uint32_t holder;    /* locked aborts: the lock holder's thread (0 = unknown) */
    struct access *acc;
    size_t nacc;
};

struct ca_state {
    struct ca_opts o;
    struct ca_totals t;
    struct th *th;
    size_t nth;
    struct ca_site *site;
    size_t nsite;
    uint8_t *site_seen;
    /* commit store */
    struct centry *ring;
    uint64_t rcap, rtail, rhead;   /* absolute indices */
    uint64_t *bucket;
    uint64_t store_truncated;
    /* pending aborts, FIFO */
    struct pending *pend;
    size_t phead, pcount, pcap;
    uint64_t now;                  /* largest stamp seen */
    uint64_t since_prune;
    /* conflict matrix: open addressing */
    struct ca_conflict *cm;
    size_t cmcap, cmn;
    struct ca_conflict *cm_sorted;
    struct ca_site *sites_out;
    size_t nsites_out;
    struct ca_thread *threads_out;
    size_t nthreads_out;
    /* clock error */
    uint64_t hist[CA_HIST_N];
    double err_max;
    void (*cb)(void *, const struct ca_attribution *);
    void *cbctx;
};

struct ca_state *ca_create(const struct ca_opts *o)
{
    struct ca_state *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->o = *o;
    if (s->o.stripes_log2 < 1 || s->o.stripes_log2 > 40)
        s->o.stripes_log2 = 20;
    if (!(s->o.ns_per_unit > 0))
        s->o.ns_per_unit = 1;
    if (!(s->o.lock_hold_ns > 0))
        s->o.lock_hold_ns = CA_LOCK_HOLD_NS_DEFAULT;
    s->bucket = calloc((size_t)1 << CA_BUCKETS_LOG2, sizeof *s->bucket);
    s->rcap = 1024;
    s->ring = malloc(s->rcap * sizeof *s->ring);
    if (!s->bucket || !s->ring) {
        ca_free(s);
        return NULL;
    }
    return s;
}

void ca_on_attribution(struct ca_state *s, void (*fn)(void *, const struct ca_attribution *), void *ctx)
{
    s->cb = fn;
    s->cbctx = ctx;
}

static struct th *thread_of(struct ca_state *s, uint32_t id)
{
    if (id >= CA_MAX_ID)
        id = CA_MAX_ID - 1;
    if (id >= s->nth) {
        size_t cap = s->nth;
        if (mi_grow((void **)&s->th, &cap, (size_t)id + 1, sizeof *s->th) < 0)
            return NULL;
        s->nth = cap;
    }
    struct th *t = &s->th[id];
    if (!t->ring) {
        t->ring = malloc(CA_REORDER_WINDOW * sizeof *t->ring);
        if (!t->ring) {
            error_set("out of memory");
            return NULL;
        }
        t->pub.thread = id;
    }
    return t;
}

static struct ca_site *site_of(struct ca_state *s, uint32_t id)
{
    if (id >= CA_MAX_ID)
        id = CA_MAX_ID - 1;
    if (id >= s->nsite) {
        size_t cap = s->nsite, cap2 = s->nsite;
        if (mi_grow((void **)&s->site, &cap, (size_t)id + 1, sizeof *s->site) < 0 ||
            mi_grow((void **)&s->site_seen, &cap2, (size_t)id + 1, 1) < 0)
            return NULL;
        s->nsite = cap;
    }
    s->site_seen[id] = 1;
    s->site[id].site = id;
    return &s->site[id];
}

/* ---- the timestamp-ordered view ----------------------------------------- */

static void grammar_step(struct ca_state *s, struct th *t, unsigned kind)
{
    switch (t->gstate) {
    case G_IN:
        if (kind == TF_EV_COMMIT || kind == TF_EV_ABORT)
            t->gstate = G_OUT;
        else if (kind == TF_EV_START) {
            /* a start inside a transaction: break, resynchronise at this S */
            t->pub.grammar++;
            s->t.grammar++;
        }
        break;
    case G_OUT:
        if (kind == TF_EV_START)
            t->gstate = G_IN;
        else {
            t->pub.grammar++;
            s->t.grammar++;
            t->gstate = G_SKIP;
        }
        break;
    default: /* G_SKIP: wait for the next start */
        if (kind == TF_EV_START)
            t->gstate = G_IN;
        break;
    }
}

static void emit(struct ca_state *s, struct th *t, const struct ro_ent *e)
{
    uint64_t prog = e->prog & ((UINT64_C(1) << 56) - 1);
    unsigned kind = (unsigned)(e->prog >> 56);
    if (prog != t->emitted) {
        t->pub.out_of_place++;
        s->t.out_of_place++;
    }
    t->emitted++;
    if (t->have_emit && e->ts < t->last_emit_ts) {
        t->pub.window_overflows++;
        s->t.window_overflows++;
    }
    t->last_emit_ts = e->ts;
    t->have_emit = 1;
    if (kind != TF_EV_FALLBACK)
        grammar_step(s, t, kind);
}

static inline void view_push(struct ca_state *s, struct th *t, uint64_t ts, uint64_t prog, unsigned kind)
{
    const uint32_t W = CA_REORDER_WINDOW;
    if (t->rcount == W) {
        emit(s, t, &t->ring[t->rhead]);
        t->rhead = (t->rhead + 1) % W;
        t->rcount--;
    }
    /* insertion from the back: in-order stamps cost one comparison */
    uint32_t pos = t->rcount;
    while (pos > 0) {
        const struct ro_ent *p = &t->ring[(t->rhead + pos - 1) % W];
        if (p->ts <= ts)
            break;
        t->ring[(t->rhead + pos) % W] = *p;
        pos--;
    }
    t->ring[(t->rhead + pos) % W] = (struct ro_ent){ ts, prog | (uint64_t)kind << 56 };
    t->rcount++;
}

static void view_flush(struct ca_state *s, struct th *t)
{
    while (t->rcount) {
        emit(s, t, &t->ring[t->rhead]);
        t->rhead = (t->rhead + 1) % CA_REORDER_WINDOW;
        t->rcount--;
    }
}

/* ---- committed writes ----------------------------------------------------- */

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

/* ---- attribution ---------------------------------------------------------- */

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
    struct ca_site *vs = site_of(s, p->a.site);
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

/* ---- events ----------------------------------------------------------------- */

static unsigned htm_class(uint64_t status)
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

/* An attempt ends (commit or abort) at `ts`: late start / premature end. */
static void attempt_end(struct ca_state *s, struct th *t, uint64_t ts)
{
    if (t->late) {
        t->pub.late_starts++;
        s->t.late_starts++;
    }
    if (t->has_ops && t->op_max > ts) {
        t->pub.premature_ends++;
        s->t.premature_ends++;
    }
    t->in_tx = 0;
}

static void hist_add(struct ca_state *s, double err_ns)
{
    if (err_ns > s->err_max)
        s->err_max = err_ns;
    /* A damaged trace can put a stamp and its truth up to 2^64 apart:
     * converting a double at or past 2^64 to uint64_t is undefined. */
    uint64_t v = err_ns < 18446744073709549568.0 ? (uint64_t)(err_ns + 0.5) : UINT64_MAX;
    size_t k;
    if (v < CA_HIST_SUB)
        k = (size_t)v;
    else {
        int msb = 63 - __builtin_clzll(v);
        int shift = msb - 5;   /* keep 5 bits below the leading one: 32 steps */
        k = (size_t)(shift + 1) * CA_HIST_SUB + (size_t)((v >> shift) & (CA_HIST_SUB - 1));
    }
    if (k >= CA_HIST_N)
        k = CA_HIST_N - 1;
    s->hist[k]++;
    s->t.truth_events++;
}

/* Upper bound of a histogram bucket. */
static double hist_value(size_t k)
{
    if (k < CA_HIST_SUB)
        return (double)k;
    size_t shift = k / CA_HIST_SUB - 1;
    uint64_t base = (uint64_t)(CA_HIST_SUB + k % CA_HIST_SUB) << shift;
    return (double)(base + (UINT64_C(1) << shift) - 1);
}

static double hist_quantile(const struct ca_state *s, double q)
{
    uint64_t n = s->t.truth_events;
    if (!n)
        return 0;
    uint64_t want = (uint64_t)ceil(q * (double)n), acc = 0;
    if (want == 0)
        want = 1;
    for (size_t k = 0; k < CA_HIST_N; k++) {
        acc += s->hist[k];
        if (acc >= want)
            return fmin(hist_value(k), s->err_max);
    }
    return s->err_max;
}

int ca_event(struct ca_state *s, const struct tf_event *ev)
{
    struct th *t = thread_of(s, ev->thread);
    if (!t)
        return -1;
    s->t.events++;
    t->pub.events++;
    if (t->seen && ev->ts <= t->last_ts) {
        t->pub.temporal++;
        s->t.temporal++;
    }
    t->seen = 1;
    t->last_ts = ev->ts;
    if (ev->ts > s->now)
        s->now = ev->ts;
    if (ev->truth)
        hist_add(s, fabs((double)ev->ts - (double)ev->truth) * s->o.ns_per_unit);
    view_push(s, t, ev->ts, t->prog++, ev->kind);

    switch (ev->kind) {
    case TF_EV_START: {
        if (t->in_tx) {
            t->pub.open_at_end++;   /* the previous attempt never ended */
            s->t.open_at_end++;
        }
        struct ca_site *st = site_of(s, ev->site);
        if (!st)
            return -1;
        st->attempts++;
        s->t.attempts++;
        t->pub.attempts++;
        t->in_tx = 1;
        t->late = t->has_ops = 0;
        t->start_ts = ev->ts;
        t->op_max = 0;
        t->site = ev->site;
        t->instance = ev->instance;
        t->htm = (ev->value & (TF_START_HTM | TF_START_HTM_EMU)) != 0;
        t->nacc = 0;
        break;
    }
    case TF_EV_READ:
    case TF_EV_WRITE:
        if (!t->in_tx)
            break;
        if (ev->ts < t->start_ts)
            t->late = 1;
        if (ev->ts > t->op_max)
            t->op_max = ev->ts;
        t->has_ops = 1;
        if (s->o.have_accesses) {
            if (mi_grow((void **)&t->acc, &t->capacc, t->nacc + 1, sizeof *t->acc) < 0)
                return -1;
            t->acc[t->nacc++] = (struct access){ ev->addr, ev->kind == TF_EV_WRITE };
        }
        break;
    case TF_EV_COMMIT: {
        if (!t->in_tx)
            break;
        struct ca_site *st = site_of(s, t->site);
        if (!st)
            return -1;
        st->commits++;
        s->t.commits++;
        s->t.transactions++;
        t->pub.commits++;
        uint64_t rs = ev->value & 0xffffffffu, ws = ev->value >> 32;
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
        t->retries = 0;
        if (s->o.have_accesses)
            for (size_t i = 0; i < t->nacc; i++)
                if (t->acc[i].write && store_add(s, t->acc[i].addr, ev->ts, t) < 0)
                    return -1;
        attempt_end(s, t, ev->ts);
        break;
    }
    case TF_EV_ABORT: {
        if (!t->in_tx)
            break;
        struct ca_site *st = site_of(s, t->site);
        if (!st)
            return -1;
        st->aborts++;
        s->t.aborts++;
        t->pub.aborts++;
        st->aborts_by_reason[ev->reason < 8 ? ev->reason : 0]++;
        double wasted = (double)(ev->ts > t->start_ts ? ev->ts - t->start_ts : 0) * s->o.ns_per_unit;
        st->wasted_ns += wasted;
        s->t.wasted_ns += wasted;
        if (ev->reason == 7 || t->htm) {
            unsigned c = htm_class(ev->value);
            st->htm_class[c]++;
            s->t.htm_class[c]++;
            s->t.htm_aborts++;
        } else if (ev->reason >= 1 && ev->reason <= 4) {
            s->t.stm_aborts++;
            if (s->o.have_accesses && queue_abort(s, t, ev) < 0)
                return -1;
        } else {
            s->t.user_aborts++;
        }
        if (ev->reason == 6) {   /* cancel: the transaction ends here */
            s->t.transactions++;
            t->retries = 0;
        } else {
            t->retries++;
        }
        attempt_end(s, t, ev->ts);
        break;
    }
    case TF_EV_FALLBACK:
        s->t.fallbacks++;
        break;
    default:
        break;
    }
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

int ca_finish(struct ca_state *s)
{
    for (size_t i = 0; i < s->nth; i++) {
        struct th *t = &s->th[i];
        if (!t->ring)
            continue;
        view_flush(s, t);
        if (t->in_tx) {
            t->pub.open_at_end++;
            s->t.open_at_end++;
            t->in_tx = 0;
        }
    }
    if (resolve_ready(s, 1) < 0)
        return -1;
    s->t.err_p50 = hist_quantile(s, 0.50);
    s->t.err_p99 = hist_quantile(s, 0.99);
    s->t.err_max = s->err_max;
    /* compact outputs */
    free(s->cm_sorted);
    s->cm_sorted = malloc((s->cmn ? s->cmn : 1) * sizeof *s->cm_sorted);
    free(s->sites_out);
    size_t ns = 0;
    for (size_t i = 0; i < s->nsite; i++)
        ns += s->site_seen[i];
    s->sites_out = malloc((ns ? ns : 1) * sizeof *s->sites_out);
    if (!s->cm_sorted || !s->sites_out)
        return error_set("out of memory");
    size_t k = 0;
    for (size_t i = 0; i < s->cmcap; i++)
        if (s->cm[i].count)
            s->cm_sorted[k++] = s->cm[i];
    qsort(s->cm_sorted, k, sizeof *s->cm_sorted, cmp_conflict);
    k = 0;
    for (size_t i = 0; i < s->nsite; i++)
        if (s->site_seen[i])
            s->sites_out[k++] = s->site[i];
    s->nsites_out = k;
    free(s->threads_out);
    s->threads_out = malloc((s->nth ? s->nth : 1) * sizeof *s->threads_out);
    if (!s->threads_out)
        return error_set("out of memory");
    k = 0;
    for (size_t i = 0; i < s->nth; i++)
        if (s->th[i].ring)
            s->threads_out[k++] = s->th[i].pub;
    s->nthreads_out = k;
    return 0;
}

void ca_free(struct ca_state *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nth; i++) {
        free(s->th[i].ring);
        free(s->th[i].acc);
    }
    for (size_t i = 0; i < s->pcount; i++)
        free(s->pend[(s->phead + i) % s->pcap].acc);
    free(s->th);
    free(s->site);
    free(s->site_seen);
    free(s->ring);
    free(s->bucket);
    free(s->pend);
    free(s->cm);
    free(s->cm_sorted);
    free(s->sites_out);
    free(s->threads_out);
    free(s);
}

const struct ca_totals *ca_totals(const struct ca_state *s) { return &s->t; }

const struct ca_thread *ca_threads(const struct ca_state *s, size_t *n)
{
    *n = s->nthreads_out;
    return s->threads_out;
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

const char *ca_reason_name(unsigned reason)
{
    static const char *const names[] = { "none", "read-locked", "read-version", "commit-locked",
                                         "commit-validate", "user-retry", "user-cancel", "htm" };
    return reason < 8 ? names[reason] : "?";
}

const char *ca_htm_class_name(unsigned c)
{
    static const char *const names[] = { "conflict", "capacity", "stm-active", "explicit", "retry-only",
                                         "unexplained" };
    return c < CA_HTM_CLASSES ? names[c] : "?";
}
