/*
 * check_driver.c - tmcheck's analyses driven over the events of a trace,
 * which stream through once in merged order.
 *
 * Owns: the driver: the entry points check_analysis.h declares for a run
 * (options, create, feed, finish, free, the totals and the threads), the
 * per-thread records, the trace's and each thread's totals (attempts,
 * commits, aborts by path, transactions, retries), and the order in which
 * every event is handed to the analyses (check_order.c, check_culprit.c,
 * check_clock.c, check_sites.c, check_time.c, check_alloc.c,
 * check_groups.c; see check_state.h), the caller's listener for resolved
 * aborts (after the groups). The analyses never call back here: what they share lives
 * below them in check_tables.c.
 * Never: does I/O; keeps state that grows with the trace's length.
 */
#include "check_analysis.h"

#include <stdlib.h>
#include <string.h>

#include "check_state.h"
#include "error.h"
#include "trace_index.h"
#include "tmtrace.h"

/* Stripes out of range (not recorded, or a damaged header read with
 * --salvage) are the runtime's defaults: the analysis hashes with these and
 * the report prints them, so both go through here. */
static void ca_stripes_sane(struct ca_opts *o)
{
    if (o->stripes_log2 < 1 || o->stripes_log2 > 40)
        o->stripes_log2 = CA_STRIPES_LOG2_DEFAULT;
    if (o->stripe_shift < TF_STRIPE_SHIFT_MIN || o->stripe_shift > TF_STRIPE_SHIFT_MAX)
        o->stripe_shift = CA_STRIPE_SHIFT_DEFAULT;
}

/* Every resolved STM abort: into its group, then to the caller's listener. */
static void on_resolved(void *ctx, const struct ca_attribution *a)
{
    struct ca_state *s = ctx;
    ca_group_add(s, a);
    ca_where_add(s, a);
    if (s->user_cb)
        s->user_cb(s->user_ctx, a);
}

struct ca_state *ca_create(const struct ca_opts *o)
{
    struct ca_state *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->o = *o;
    ca_stripes_sane(&s->o);
    if (!(s->o.ns_per_unit > 0))
        s->o.ns_per_unit = 1;
    if (!(s->o.lock_hold_ns > 0))
        s->o.lock_hold_ns = CA_LOCK_HOLD_NS_DEFAULT;
    if (!(s->o.desched_gap_ns > 0))
        s->o.desched_gap_ns = CA_DESCHED_GAP_NS_DEFAULT;
    if (!(s->o.event_cost_ns > 0))
        s->o.event_cost_ns = CA_EVENT_COST_NS_DEFAULT;
    s->nsrc = 1;
    if (!(s->src = calloc(1, sizeof *s->src)) || ca_culprit_create(s) < 0) {
        ca_free(s);
        return NULL;
    }
    ca_on_attribution(s, on_resolved, s);
    return s;
}

void ca_listen(struct ca_state *s, void (*fn)(void *, const struct ca_attribution *), void *ctx)
{
    s->user_cb = fn;
    s->user_ctx = ctx;
}

void ca_opts_for_trace(const struct trace_index *ix, unsigned stripes_log2, struct ca_opts *o)
{
    int synced = (ix->hdr.flags & TF_HDR_SYNCED) != 0;
    double u = 0;
    for (size_t i = 0; synced && i < ix->nmodels; i++)
        if (ix->models[i].max_ns > u)
            u = ix->models[i].max_ns;
    *o = (struct ca_opts){
        .stripes_log2 = stripes_log2 ? stripes_log2 : ix->hdr.stripes_log2,
        .stripe_shift = ix->hdr.stripe_shift,
        .uncertainty = (uint64_t)(u + 0.999),
        .ns_per_unit = synced || !ix->hdr.tsc_hz ? 1.0 : 1e9 / (double)ix->hdr.tsc_hz,
        .have_accesses = ix->hdr.events_level >= 2 || ix->hdr.detail > 0,
        .have_wsets = ix->hdr.version >= 4 && ix->hdr.events_level == 1,
        .detail = ix->hdr.detail,
        .format_version = ix->hdr.version,
        .repeated_access = ix->hdr.stamp_access == TF_STAMP_REPEATED,
        .event_cost_ns = ix->runinfo.event_cost_ns,   /* 0: CA_EVENT_COST_NS_DEFAULT */
    };
    ca_stripes_sane(o);
    if (ix->hdr.stamp_commit == TF_STAMP_UNORDERED)
        o->slack = (uint64_t)(CA_UNORDERED_SLACK_NS / o->ns_per_unit + 0.999);
}

int ca_note_drops(struct ca_state *s, const struct trace_index *ix)
{
    free(s->dropping);
    s->dropping = malloc((ix->nend ? ix->nend : 1) * sizeof *s->dropping);
    if (!s->dropping)
        return error_set("out of memory");
    s->ndropping = 0;
    for (size_t k = 0; k < ix->nend; k++)
        if (ix->end[k].dropped)
            s->dropping[s->ndropping++] = ca_id_slot(ix->end[k].id);
    return 0;
}

static struct th *thread_of(struct ca_state *s, uint32_t id)
{
    id = ca_id_slot(id);
    if (ti_grow((void **)&s->th, &s->nth, (size_t)id + 1, sizeof *s->th) < 0)
        return NULL;
    struct th *t = &s->th[id];
    if (!t->live) {
        t->live = 1;
        t->pub.thread = id;
    }
    return t;
}

/* A serial attempt ends: it ran alone from its SERIAL record to here. */
static void serial_end(struct ca_state *s, struct th *t, uint64_t ts)
{
    if (t->serial && ts > t->serial_ts)
        s->t.serial_ns += (double)(ts - t->serial_ts) * s->o.ns_per_unit;
    if (t->serial) {
        s->serial_open--;
        s->t.serial_overlapped += t->serial_overlap;
    }
    t->serial = 0;
}

/* Thread `t` is in a transaction while others run serial attempts (or
 * starts one itself while others are in theirs): those kept it waiting. */
static void serial_meets(struct ca_state *s, struct th *t)
{
    if (!s->serial_open && !t->serial)
        return;
    for (size_t i = 0; i < s->nth; i++) {
        struct th *o = &s->th[i];
        if (o == t || !o->in_tx)
            continue;
        if (o->serial)
            o->serial_overlap = 1;
        else if (t->serial)
            t->serial_overlap = 1;
    }
}

static void on_serial(struct ca_state *s, struct th *t, const struct tf_event *ev)
{
    s->t.serial++;
    s->t.serial_by_reason[ev->reason < TF_SERIAL_REASONS ? ev->reason : 0]++;
    t->serial = 1;
    t->serial_ts = ev->ts;
    t->serial_uncounted = (ev->value & TF_SERIAL_UNCOUNTED) != 0;
    t->serial_overlap = 0;
    s->serial_open++;
    serial_meets(s, t);
}

static int on_start(struct ca_state *s, struct th *t, const struct tf_event *ev)
{
    if (t->in_tx) {
        t->pub.open_at_end++;   /* the previous attempt never ended */
        s->t.open_at_end++;
        serial_end(s, t, ev->ts);
    }
    if (ca_site_start(s, ev->site) < 0)
        return -1;
    s->t.attempts++;
    s->t.detailed += (tf_start_flags(ev->value) & TF_START_DETAIL) != 0;
    t->shed = (tf_start_flags(ev->value) & TF_START_SHED) != 0;
    s->t.shed += (uint64_t)t->shed;
    t->pub.attempts++;
    t->in_tx = 1;
    t->late = t->has_ops = 0;
    t->start_ts = ev->ts;
    t->op_max = 0;
    t->site = ev->site;
    t->instance = ev->instance;
    t->htm = (ev->value & (TF_START_HTM | TF_START_HTM_EMU)) != 0;
    t->htm_emu = (ev->value & TF_START_HTM_EMU) != 0;
    t->serial = 0;
    t->serial_uncounted = 0;
    serial_meets(s, t);
    t->nacc = 0;
    t->wset_left = 0; /* a write set cut short (dropped) waits no longer */
    t->max_gap = t->off_sum = 0;
    t->migrated = 0;
    return 0;
}


/* Makes room in t's ring of ended attempts for one ending at `ts`: it
 * doubles while the entry it would overwrite ended within
 * CA_ENDED_WINDOW_NS (up to CA_ENDED_MAX), each attempt keeping its slot
 * (number % capacity). 0, or -1 when the first ring cannot be had. */
static int ended_room(struct ca_state *s, struct th *t, uint64_t ts)
{
    uint32_t cap = t->ended_cap;
    if (cap != 0 && (t->nended < cap || cap >= CA_ENDED_MAX ||
                     (double)(ts - t->ended[t->nended % cap].end) * s->o.ns_per_unit >= CA_ENDED_WINDOW_NS))
        return 0;
    uint32_t ncap = cap ? 2 * cap : CA_ENDED_KEEP;
    struct ended *n = malloc((size_t)ncap * sizeof *n);
    if (n == NULL)
        return cap ? 0 : -1; /* the ring as it is: fewer holders found, nothing wrong */
    for (uint32_t a = t->nended - (t->nended < cap ? t->nended : cap); a != t->nended; a++)
        n[a % ncap] = t->ended[a % cap];
    free(t->ended);
    t->ended = n;
    t->ended_cap = ncap;
    return 0;
}

/* The open attempt ended: remembered for the aborts that name it as the
 * holder of a lock they found. */
static void attempt_ended(struct ca_state *s, struct th *t, uint64_t ts, int committed)
{
    if (ended_room(s, t, ts) != 0)
        return;
    struct ended *e = &t->ended[t->nended++ % t->ended_cap];
    e->instance = t->instance;
    e->start = t->start_ts;
    e->end = ts;
    e->site = t->site;
    e->committed = (uint8_t)committed;
    e->descheduled = t->migrated || (double)t->max_gap * s->o.ns_per_unit >= s->o.desched_gap_ns;
    ca_culprit_holder_ended(s, t, e);
}

/* Gaps and core changes inside the open attempt (deschedules, migrations). */
static void attempt_progress(const struct ca_state *s, struct th *t, const struct tf_event *ev)
{
    if (ev->kind != TF_EV_START && t->in_tx) {
        uint64_t gap = ev->ts > t->last_ev_ts ? ev->ts - t->last_ev_ts : 0;
        if (gap > t->max_gap)
            t->max_gap = gap;
        if ((double)gap * s->o.ns_per_unit >= s->o.desched_gap_ns)
            t->off_sum += gap;
        if (ev->cpu != t->last_cpu)
            t->migrated = 1;
    }
    t->last_ev_ts = ev->ts;
    t->last_cpu = ev->cpu;
}

/* A hole in t's program order before `ev`: its sequence number is not the
 * one after the thread's last event (its first event's is 0). The tracer
 * numbers the events it drops (no buffer was free) and the writer those it
 * failed to write; --salvage skips chunks. The attempt open at the hole
 * lost its end there, and until the next START the events are those of an
 * attempt whose START was lost: both are cut attempts, counted apart and
 * left out of the attempts' analyses and times (not breaks of the grammar,
 * not attempts without an end, and the time the hole spans is no
 * deschedule: check_time.c keeps it as the dropped events' time). */
static int thread_hole(struct ca_state *s, struct th *t, const struct tf_event *ev)
{
    if (ca_culprit_hole(s, ca_id_slot(ev->thread), t->pub.events ? t->last_ev_ts : ev->ts, ev->ts) < 0)
        return -1;
    ca_time_hole(t, ev->ts);
    if (t->in_tx) {
        t->pub.cut_attempts++;
        s->t.cut_attempts++;
        serial_end(s, t, t->last_ev_ts); /* alone until its last event in the trace, not across the hole */
        t->in_tx = 0;
    }
    t->headless = 1;
    t->instance = ev->instance; /* an ABORT_PC after the hole is its attempt's (check_culprit.c, pending_now) */
    t->wset_left = 0;
    t->nacc = 0;
    return 0;
}

/* An end in t's program order that no START of the trace opened: after a
 * hole, the end of an attempt whose START was lost (thread_hole). */
static void headless_end(struct ca_state *s, struct th *t)
{
    if (!t->headless)
        return;
    t->pub.cut_attempts++;
    s->t.cut_attempts++;
    t->headless = 0;
}

static int on_commit(struct ca_state *s, struct th *t, const struct tf_event *ev)
{
    serial_end(s, t, ev->ts);
    if (ca_site_commit(s, t, ev) < 0)
        return -1;
    s->t.commits++;
    s->t.transactions++;
    t->pub.commits++;
    t->retries = 0;
    if (ca_culprit_commit(s, t, ev) < 0)
        return -1;
    attempt_ended(s, t, ev->ts, 1);
    ca_order_attempt_end(s, t, ev->ts);
    return 0;
}

static int on_abort(struct ca_state *s, struct th *t, const struct tf_event *ev)
{
    int hardware = ev->reason == TMT_ABORT_HTM || t->htm;
    serial_end(s, t, ev->ts);
    if (ca_site_abort(s, t, ev, hardware) < 0)
        return -1;
    s->t.aborts++;
    t->pub.aborts++;
    if (hardware) {
        s->t.htm_aborts++;
        s->t.htm_injected += t->htm_emu;
    } else if (ev->reason >= TMT_ABORT_READ_LOCKED && ev->reason <= TMT_ABORT_COMMIT_VALIDATE) {
        s->t.stm_aborts++;
        if (ca_culprit_abort(s, t, ev) < 0 || ca_group_abort(s, t) < 0)
            return -1;
    } else {
        s->t.user_aborts++;
    }
    if (ev->reason == TMT_ABORT_USER_CANCEL) {   /* the transaction ends here */
        s->t.transactions++;
        t->retries = 0;
    } else {
        t->retries++;
    }
    attempt_ended(s, t, ev->ts, 0);
    ca_order_attempt_end(s, t, ev->ts);
    return 0;
}

int ca_by_source(struct ca_state *s, const struct trace_index *ix)
{
    /* a raw trace's source is one thread: split unless two share a slot */
    for (size_t i = 0; i + 1 < ix->nsrc; i++)
        if (ca_id_slot(ix->src[i].thread) == ca_id_slot(ix->src[i + 1].thread))
            return 0;
    if (s->t.events || ix->nsrc < 1)
        return 0;
    struct ca_source *src = calloc(ix->nsrc, sizeof *src);
    if (!src)
        return error_set("out of memory");
    for (size_t k = 0; k < s->nsrc; k++)
        ca_order_free(&s->src[k].views);
    free(s->src);
    s->src = src;
    s->nsrc = ix->nsrc;
    s->src_apart = 1;
    return 1;
}

int ca_source_chunk(void *ctx, size_t source, struct tf_event *ev, const uint64_t *keep, size_t n)
{
    struct ca_state *s = ctx;
    struct ca_source *src = &s->src[source];
    (void)keep;
    if (ca_order_events(s, &src->views, ev, n) < 0)
        return -1;
    ca_clock_events(s, &src->clock, ev, n);
    return 0;
}

int ca_event(struct ca_state *s, const struct tf_event *ev)
{
    struct th *t = thread_of(s, ev->thread);
    if (!t)
        return -1;
    if (ca_after_hole(t->pub.events != 0, t->next_seq, ev->seq) && thread_hole(s, t, ev) < 0)
        return -1;
    t->next_seq = ev->seq + 1;
    s->t.events++;
    t->pub.events++;
    if (ev->ts > s->now)
        s->now = ev->ts;
    if (!s->src_apart) {
        if (ca_order_events(s, &s->src[0].views, ev, 1) < 0)
            return -1;
        ca_clock_events(s, &s->src[0].clock, ev, 1);
    }
    attempt_progress(s, t, ev);
    if (ca_time_event(s, t, ev) < 0)
        return -1;
    int rc = 0;
    switch (ev->kind) {
    case TF_EV_START:
        t->headless = 0;
        rc = on_start(s, t, ev);
        break;
    case TF_EV_READ:
    case TF_EV_WRITE:
        s->t.accesses++;
        if (t->in_tx) {
            ca_order_access(t, ev->ts);
            rc = ca_culprit_access(s, t, ev);
        }
        break;
    case TF_EV_COMMIT:
        if (t->in_tx)
            rc = on_commit(s, t, ev);
        else
            headless_end(s, t);
        break;
    case TF_EV_ABORT:
        if (t->in_tx)
            rc = on_abort(s, t, ev);
        else
            headless_end(s, t);
        break;
    case TF_EV_FALLBACK:
        s->t.fallbacks++;
        break;
    case TF_EV_ALLOC:
        rc = ca_alloc_event(s, ev);
        break;
    case TF_EV_WSET:
        rc = ca_culprit_wset(s, t, ev);
        break;
    case TF_EV_ABORT_PC:
        ca_culprit_abort_pc(s, t, ev);
        break;
    case TF_EV_ABORT_STACK:
        ca_culprit_abort_stack(s, t, ev);
        break;
    case TF_EV_SERIAL:
        if (t->in_tx && !t->serial)
            on_serial(s, t, ev);
        break;
    default:
        break;
    }
    return rc < 0 ? -1 : ca_culprit_step(s);
}

static int threads_finish(struct ca_state *s)
{
    for (size_t k = 0; k < s->nsrc; k++) {
        if (ca_order_finish(s, &s->src[k].views, thread_of) < 0)
            return -1;
        ca_clock_add(s, &s->src[k].clock);
        memset(&s->src[k].clock, 0, sizeof s->src[k].clock);
    }
    for (size_t i = 0; i < s->nth; i++) {
        struct th *t = &s->th[i];
        if (!t->live)
            continue;
        if (t->in_tx) {
            t->pub.open_at_end++;
            s->t.open_at_end++;
            t->in_tx = 0;
        }
    }
    return 0;
}

static int threads_out(struct ca_state *s)
{
    free(s->threads_out);
    s->threads_out = malloc((s->nth ? s->nth : 1) * sizeof *s->threads_out);
    if (!s->threads_out)
        return error_set("out of memory");
    size_t k = 0;
    for (size_t i = 0; i < s->nth; i++)
        if (s->th[i].live)
            s->threads_out[k++] = s->th[i].pub;
    s->nthreads_out = k;
    return 0;
}

int ca_finish(struct ca_state *s)
{
    if (threads_finish(s) < 0 || ca_culprit_finish(s) < 0 || ca_groups_finish(s) < 0)
        return -1;
    ca_where_finish(s);
    ca_clock_finish(s);
    if (ca_time_finish(s) < 0)
        return -1;
    if (ca_tables_finish(s) < 0 || threads_out(s) < 0)
        return -1;
    return 0;
}

void ca_free(struct ca_state *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nth; i++) {
        free(s->th[i].acc);
        free(s->th[i].off);
        free(s->th[i].ended);
    }
    for (size_t k = 0; k < s->nsrc; k++)
        ca_order_free(&s->src[k].views);
    free(s->src);
    ca_time_free(s);
    ca_alloc_free(s);
    ca_culprit_free(s);
    ca_groups_free(s);
    ca_where_free(s);
    ca_tables_free(s);
    free(s->th);
    free(s->threads_out);
    free(s);
}

void ca_table_sizes(const struct ca_state *s, struct ca_table_size out[CA_TABLES])
{
    size_t thr = s->nth * sizeof *s->th, views = 0, nviews = 0, hists = 0, nhists = 0, pend = 0;
    for (size_t i = 0; i < s->nth; i++) {
        const struct th *t = &s->th[i];
        thr += t->capacc * sizeof *t->acc + t->off_cap * sizeof *t->off + (t->hist ? sizeof *t->hist : 0) +
               (size_t)t->ended_cap * sizeof *t->ended;
    }
    for (size_t k = 0; k < s->nsrc; k++) {
        views += s->src[k].views.n * sizeof *s->src[k].views.v + sizeof s->src[k];
        for (size_t i = 0; i < s->src[k].views.n; i++)
            if (s->src[k].views.v[i]) {
                nviews++;
                views += sizeof **s->src[k].views.v + 2 * CA_REORDER_WINDOW * sizeof(struct ro_ent);
            }
    }
    for (size_t i = 0; i < s->nsite_hist; i++)
        if (s->site_hist[i]) {
            nhists++;
            hists += sizeof **s->site_hist;
        }
    for (size_t i = 0; i < s->pcount; i++)
        pend += s->pend[(s->phead + i) % s->pcap].nacc * sizeof(struct access);
    const size_t buckets = (size_t)1 << CA_BUCKETS_LOG2;
    out[0] = (struct ca_table_size){ "threads", s->nth, thr };
    out[1] = (struct ca_table_size){ "order views", nviews, views };
    out[2] = (struct ca_table_size){ "site rows", s->nsite, s->nsite * (sizeof *s->site + 1) };
    out[3] = (struct ca_table_size){ "site durations", nhists, hists + s->nsite_hist * sizeof *s->site_hist };
    out[4] = (struct ca_table_size){ "commit store", (size_t)s->rcap,
                                     (size_t)s->rcap * sizeof *s->ring + buckets * sizeof *s->bucket };
    out[5] = (struct ca_table_size){ "commits by version", (size_t)s->vcap,
                                     (size_t)s->vcap * sizeof *s->vring + buckets * sizeof *s->vbucket };
    out[6] = (struct ca_table_size){ "pending aborts", s->pcap, s->pcap * sizeof *s->pend + pend };
    out[7] = (struct ca_table_size){ "conflict matrix", s->cmcap, s->cmcap * sizeof *s->cm };
    out[8] = (struct ca_table_size){ "hot addresses", s->hotcap, s->hotcap * sizeof *s->hot };
    out[9] = (struct ca_table_size){ "abort groups", s->grpcap, s->grpcap * sizeof *s->grp };
    out[10] = (struct ca_table_size){ "abort code addresses", s->where.cap, s->where.cap * sizeof *s->where.e };
    out[11] = (struct ca_table_size){ "abort stacks", s->stacks.cap,
                                      s->stacks.cap * sizeof *s->stacks.e + s->framecap * sizeof *s->frames +
                                          s->frame_index_cap * sizeof *s->frame_index };
    out[12] = (struct ca_table_size){ "allocated blocks", s->alloc_cap, s->alloc_cap * sizeof *s->allocs };
}

const struct ca_totals *ca_totals(const struct ca_state *s) { return &s->t; }

const struct ca_thread *ca_threads(const struct ca_state *s, size_t *n)
{
    *n = s->nthreads_out;
    return s->threads_out;
}
