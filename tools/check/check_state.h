/*
 * check_state.h - the state tmcheck's analyses share while the events of a
 * trace stream through once in merged order, and the steps each analysis
 * offers the driver (check_driver.c).
 *
 * Owns: struct ca_state and the per-thread record; the split of the work,
 * each module calling only those below it (driver -> analyses -> tables):
 *   check_order.c    program order vs timestamp order: temporal
 *                    inconsistencies, grammar, out-of-place events, late
 *                    starts, premature ends;
 *   check_culprit.c  the store of recently committed writes, the queue of
 *                    aborts waiting for their window, culprit attribution,
 *                    the hot addresses;
 *   check_clock.c    the clock-error histogram against the ground truth;
 *   check_sites.c    what a site's row counts, the names of its columns;
 *   check_time.c     where each thread's and site's time went;
 *   check_alloc.c    the blocks tmt_malloc returned, by address;
 *   check_groups.c   the resolved STM aborts grouped by (victim site,
 *                    class, word, culprit site), with their on-CPU and
 *                    descheduled time;
 *   check_where.c    the code addresses at which each site's STM aborts
 *                    were found, counted;
 *   check_tables.c   what the analyses share: the site rows, the conflict
 *                    matrix, the open-addressing table they grow with.
 * Never: included outside tools/check/; does I/O.
 */
#ifndef TMT_CHECK_STATE_H
#define TMT_CHECK_STATE_H

#include "check_analysis.h"   /* the result types; a header alone: no arrow to the driver */

#define CA_BUCKETS_LOG2 16            /* hash buckets of the commit store */
#define CA_STORE_MAX (1u << 21)       /* committed writes kept at most (~100 MB) */
#define CA_PRUNE_EVERY 4096
#define CA_HIST_SUB 32                /* clock error histogram: 32 steps per power of two */
#define CA_HIST_N (64 * CA_HIST_SUB)
#define CA_MAX_ID (1u << 22)          /* thread and site ids above this share one slot */
/* Ended attempts kept per thread for holder lookups: at least the last
 * CA_ENDED_KEEP, and as many more (up to CA_ENDED_MAX) as ended within the
 * last CA_ENDED_WINDOW_NS. An abort's record comes some time after it read
 * the holder's identity off the lock (its rollback, a chunk handed over,
 * a deschedule); a holder whose attempts take nanoseconds ends a hundred of
 * them in a microsecond. */
#define CA_ENDED_KEEP 64
#define CA_ENDED_MAX 65536
#define CA_ENDED_WINDOW_NS 100000.0

/* The slot of a thread or site id: ids from CA_MAX_ID on share the last. */
static inline uint32_t ca_id_slot(uint32_t id) { return id < CA_MAX_ID ? id : CA_MAX_ID - 1; }

enum { G_OUT = 0, G_IN, G_SKIP };

struct ro_ent {
    uint64_t ts;
    uint64_t prog;      /* program-order index | CA_PROG_HOLE | kind << 56 */
};
/* In ro_ent.prog: the event follows a hole in its thread's program order
 * (a sequence number skipped: events dropped before it, or chunks skipped
 * with --salvage); below it, the index. */
#define CA_PROG_HOLE (UINT64_C(1) << 55)
#define CA_PROG_INDEX (CA_PROG_HOLE - 1)

/* Whether an event numbered `seq` follows a hole in its thread's program
 * order: the thread's first event is numbered 0, each next one the number
 * after the last (`next`), unless events were dropped or skipped between. */
static inline int ca_after_hole(int seen, uint64_t next, uint64_t seq) { return seq != (seen ? next : 0); }

struct access {
    uint64_t addr;
    uint8_t write;
};

/* check_order.c: a thread's events in program order against their stamps,
 * and what that counted. Apart from struct th so that the merge's threads
 * can run it on each source's chunks while the driver takes the merged
 * events (ca_order_chunk). */
struct ca_view {
    uint32_t id;         /* the thread's slot */
    int seen;
    uint64_t last_ts;
    uint64_t next_seq;   /* the sequence number that follows the last event's */
    uint64_t prog;
    /* timestamp-ordered view of the last CA_REORDER_WINDOW events: a sorted
     * ring, and behind it (ring + CA_REORDER_WINDOW) a heap of those that
     * came out of order */
    struct ro_ent *ring;
    uint32_t rhead, rcount, hcount;
    uint64_t emitted, last_emit_ts;
    int gstate;
    uint64_t temporal, grammar, out_of_place, window_overflows;
};

/* The views one source's events reach, by thread slot. */
struct ca_views {
    struct ca_view **v;
    size_t n;
};

/* check_clock.c: the histogram of |stamp - truth| in ns. */
struct ca_clock {
    uint64_t hist[CA_HIST_N];
    uint64_t n;
    double err_max;
};

/* What the analyses that look at one source's events alone keep of it
 * (check_driver.c: ca_by_source). */
struct ca_source {
    struct ca_views views;
    struct ca_clock clock;
};

struct th {
    struct ca_thread pub;
    int live;            /* the thread has had an event */
    /* the open attempt, in program order */
    int in_tx, late, has_ops, htm, htm_emu, serial;
    int shed;            /* the open attempt was shed (TF_START_SHED): its write set follows its commit */
    int serial_overlap;  /* the serial attempt met another thread's transaction */
    uint64_t serial_ts;  /* the open attempt's SERIAL stamp (time alone) */
    int serial_uncounted; /* the open attempt's SERIAL says its reads were not counted (TF_SERIAL_UNCOUNTED) */
    uint64_t start_ts, op_max, instance;
    uint32_t site;
    struct access *acc;
    size_t nacc, capacc;
    /* check_culprit.c: the last commit's write set still to come (WSET) */
    uint64_t wset_commit;
    uint32_t wset_left;
    uint64_t retries;   /* aborted attempts since this thread's last commit or cancel */
    /* holes in the thread's program order (check_driver.c, thread_hole) */
    uint64_t next_seq;  /* the sequence number that follows the last event's */
    int headless;       /* since a hole, no START yet: an end that comes is of an attempt whose START was lost */
    /* the open attempt's deschedules: longest gap between its events, the sum
     * of its gaps of a deschedule's length, core change */
    uint64_t last_ev_ts, max_gap, off_sum;
    uint16_t last_cpu;
    int migrated;
    /* the attempts that ended lately, for aborts that name them as lock holder */
    struct ended {
        uint64_t instance, start, end;
        uint32_t site;
        uint8_t committed, descheduled;
    } *ended;           /* a ring of ended_cap (check_driver.c, attempt_ended) */
    uint32_t ended_cap;
    /* check_groups.c: the thread's STM aborts waiting for attribution, in
     * order, with their time off the CPU (a FIFO ring, as the culprit
     * queue resolves them) */
    struct ca_off {
        uint64_t start;
        double off_ns;
        uint8_t descheduled;
    } *off;
    size_t off_head, off_n, off_cap;
    uint32_t nended;    /* ended attempts so far (the ring holds the last ended_cap) */
    /* check_time.c: the thread's timeline */
    uint64_t tl_first, tl_last, tl_end;
    int have_first, end_was_abort;
    int in_hole;        /* since a hole, no START yet: the time from hole_ts on is the dropped events' */
    uint64_t hole_ts;
    struct ca_dur_hist *hist;
};

/* Attempt durations, log-spaced (8 steps per power of two), for medians. */
#define CA_DUR_SUB 8
#define CA_DUR_N (64 * CA_DUR_SUB)
struct ca_dur_hist {
    uint32_t committed[CA_DUR_N], aborted[CA_DUR_N];
};

/* A block tmt_malloc returned (check_alloc.c): its ALLOC record's value
 * kept as recorded, size and call site packed (16 bytes a block, not 24:
 * the table holds up to CA_ALLOC_MAX of them). */
struct ca_block {
    uint64_t addr, value;
};
/* Its size (TF_ALLOC_SIZE_MAX: that size or more) and call site. */
static inline uint64_t ca_block_size(const struct ca_block *b) { return tf_alloc_size(b->value); }
static inline uint64_t ca_block_pc(const struct ca_block *b) { return tf_alloc_pc(b->value); }

/* A commit with its write version, for aborts that found that version. */
struct ventry {
    uint64_t version, commit, start, instance;
    uint64_t prev;      /* absolute index + 1 of the previous entry of the bucket, 0 = none */
    uint32_t thread, site;
};

struct centry {
    uint64_t stripe, word, commit, instance;
    uint64_t start;     /* the committed attempt's start stamp */
    uint64_t prev;      /* absolute index + 1 of the previous entry of the bucket, 0 = none */
    uint32_t thread, site;
};

struct pending {
    struct ca_attribution a;
    uint64_t rec;       /* the abort record's address or stripe (0 = unknown) */
    uint32_t holder;    /* locked aborts: the lock holder's thread (0 = unknown) */
    int held;           /* v2: the abort record names the holder's attempt */
    uint64_t holder_inst;   /* its instance, low 31 bits */
    uint64_t version;   /* v2, not held: the version found (0 = none) */
    struct ended holder_e;  /* the holder's attempt as it ended before the abort was queued */
    int have_holder_e;      /* (a busy holder may end more attempts than its ring keeps before it resolves) */
    int awaits_holder;      /* counted in holders_awaited: the copy is taken when the holder's attempt ends */
    struct access *acc;
    size_t nacc;
};

struct ca_state {
    struct ca_opts o;
    struct ca_totals t;
    uint64_t now;                  /* largest stamp seen */
    unsigned serial_open;          /* threads in a serial attempt now */
    struct th *th;                 /* by thread id */
    size_t nth;
    /* the per-source analyses (the order views, the clock error): one
     * source, the driver's, unless ca_by_source split them by the merge's */
    struct ca_source *src;
    size_t nsrc;
    int src_apart;                 /* the merge runs them (ca_source_chunk), not ca_event */
    struct ca_thread *threads_out;
    size_t nthreads_out;
    /* check_tables.c: the site rows */
    struct ca_site *site;          /* by site id */
    size_t nsite;
    uint8_t *site_seen;
    struct ca_site *sites_out;
    size_t nsites_out;
    /* check_culprit.c: the commit store */
    struct centry *ring;
    uint64_t rcap, rtail, rhead;   /* absolute indices */
    uint64_t *bucket;
    uint64_t store_truncated;
    /* check_culprit.c: commits by write version (v2) */
    struct ventry *vring;
    uint64_t vcap, vtail, vhead;
    uint64_t *vbucket;
    /* check_culprit.c: the holes in the threads' order, in the order they
     * were found (their ends ascend in merged order) */
    struct ca_hole {
        uint64_t from, to;   /* the last event before the hole, the first after it */
        uint32_t thread;
    } *holes;
    size_t nholes, holes_cap;
    uint32_t *dropping;            /* the threads whose END chunk counts drops (ca_note_drops) */
    size_t ndropping;
    /* check_culprit.c: pending aborts, FIFO */
    struct pending *pend;
    size_t phead, pcount, pcap;
    size_t holders_awaited;        /* queued aborts whose holder's attempt was open when queued, not yet copied */
    uint64_t since_prune;
    /* check_tables.c: the conflict matrix, open addressing */
    struct ca_conflict *cm;
    size_t cmcap, cmn;
    struct ca_conflict *cm_sorted;
    /* check_culprit.c: the addresses aborts failed on, open addressing */
    struct ca_hot *hot;
    size_t hotcap, hotn;
    struct ca_hot *hot_sorted;
    void (*cb)(void *, const struct ca_attribution *);
    void *cbctx;
    /* check_driver.c: the caller's listener (ca_listen), after the groups */
    void (*user_cb)(void *, const struct ca_attribution *);
    void *user_ctx;
    /* check_groups.c: groups, open addressing; sorted at the end */
    struct ca_group *grp;
    size_t grpcap, grpn;
    struct ca_group *grp_sorted;
    int grp_failed;                /* out of memory while grouping (the report says so) */
    /* check_where.c: (site, pc) counts and (site, pc, stack) counts, open
     * addressing, by site then count at the end; the stacks' frames */
    struct ca_where_tab where, stacks;
    struct ca_frame *frames;       /* frames[id - 1]: a stack's outermost frame and the rest */
    size_t nframes, framecap;
    uint32_t *frame_index;         /* open addressing over frames, 0 = empty */
    size_t frame_index_cap;
    /* check_alloc.c: blocks by start address, open addressing */
    struct ca_block *allocs;
    size_t alloc_cap, alloc_n;
    /* check_time.c: duration histograms by site id */
    struct ca_dur_hist **site_hist;
    size_t nsite_hist;
    /* check_clock.c: the sources' histograms added up at the end */
    struct ca_clock clock;
};

/* check_tables.c: an open-addressing table (a power of two of slots,
 * linear probing) moved into a new zeroed one of nc slots; the old one is
 * freed. used(e): the slot holds an entry; home(e, nc): its first slot.
 * NULL out of memory (the old table kept). */
void *ca_table_rehash(void *old, size_t cap, size_t nc, size_t elem, int (*used)(const void *e),
                      size_t (*home)(const void *e, size_t nc));
/* check_tables.c (0, or -1 with the message set: out of memory): the row of
 * a site (NULL out of memory); an abort's class counted in its site and the
 * totals; one abort into the conflict matrix (culprit site 0: none), by
 * class; the finished arrays (sites by id, the matrix by count). */
struct ca_site *ca_site_grow(struct ca_state *s, uint32_t id);
/* Inline: the analyses ask for the open attempt's site on every event. */
static inline struct ca_site *ca_site_of(struct ca_state *s, uint32_t id)
{
    uint32_t k = ca_id_slot(id);
    return k < s->nsite && s->site_seen[k] ? &s->site[k] : ca_site_grow(s, id);
}
int ca_site_class(struct ca_state *s, uint32_t site, unsigned cls, double wasted_ns);
int ca_conflict_add(struct ca_state *s, uint32_t victim, uint32_t culprit, unsigned cls, double wasted_ns);
int ca_tables_finish(struct ca_state *s);
void ca_tables_free(struct ca_state *s);

/* check_order.c (0, or -1 with the message set: out of memory). The
 * views' event in merged order when the merge does not run them; the views
 * emptied and their counts added to the threads and totals at the end. */
int ca_order_events(struct ca_state *s, struct ca_views *vs, const struct tf_event *ev, size_t n);
void ca_order_access(struct th *t, uint64_t ts);
void ca_order_attempt_end(struct ca_state *s, struct th *t, uint64_t ts);
int ca_order_finish(struct ca_state *s, struct ca_views *vs, struct th *(*thread_of)(struct ca_state *, uint32_t));
void ca_order_free(struct ca_views *vs);

/* check_culprit.c (0, or -1 with the message set: out of memory) */
int ca_culprit_create(struct ca_state *s);
int ca_culprit_access(struct ca_state *s, struct th *t, const struct tf_event *ev);
int ca_culprit_commit(struct ca_state *s, struct th *t, const struct tf_event *ev);
/* Thread t's attempt `e` ended: the queued aborts that name it as their
 * lock's holder keep a copy (they may resolve after t has ended more than
 * its ring keeps, CA_ENDED_KEEP or more). */
void ca_culprit_holder_ended(struct ca_state *s, const struct th *t, const struct ended *e);
int ca_culprit_abort(struct ca_state *s, struct th *t, const struct tf_event *ev);
/* Version 4: a word of the write set of thread t's last commit; the code
 * address of the access at which its last abort was found. */
int ca_culprit_wset(struct ca_state *s, struct th *t, const struct tf_event *ev);
void ca_culprit_abort_pc(struct ca_state *s, const struct th *t, const struct tf_event *ev);
/* An ABORT_STACK record: one frame more of that abort's stack. */
void ca_culprit_abort_stack(struct ca_state *s, const struct th *t, const struct tf_event *ev);
/* A hole in thread `thread`'s order between its events at `from` and `to`. */
int ca_culprit_hole(struct ca_state *s, uint32_t thread, uint64_t from, uint64_t to);
int ca_culprit_step_slow(struct ca_state *s);
/* After every event: resolves the aborts whose window has passed, prunes
 * the store now and then (inline: nothing to do on most events). */
static inline int ca_culprit_step(struct ca_state *s)
{
    if (s->pcount == 0 && s->since_prune + 1 < CA_PRUNE_EVERY) {
        s->since_prune++;
        return 0;
    }
    return ca_culprit_step_slow(s);
}
int ca_culprit_finish(struct ca_state *s);
void ca_culprit_free(struct ca_state *s);

/* The class of a hardware abort's status word (check_sites.c). */
unsigned ca_htm_class_of(uint64_t status);

/* check_alloc.c */
int ca_alloc_event(struct ca_state *s, const struct tf_event *ev);
const struct ca_block *ca_alloc_find(const struct ca_state *s, uint64_t addr);
void ca_alloc_free(struct ca_state *s);

/* check_time.c (0, or -1 with the message set: out of memory) */
int ca_time_event(struct ca_state *s, struct th *t, const struct tf_event *ev);
void ca_time_hole(struct th *t, uint64_t ts);
int ca_time_finish(struct ca_state *s);
void ca_time_free(struct ca_state *s);

/* check_groups.c: one resolved STM abort into its group; sorting; freeing.
 * An attempt's time off the CPU (0 on it throughout), from the trace. */
void ca_group_add(struct ca_state *s, const struct ca_attribution *a);
int ca_group_abort(struct ca_state *s, struct th *t);   /* an STM abort of t's open attempt queued */
int ca_groups_finish(struct ca_state *s);
void ca_groups_free(struct ca_state *s);
/* check_where.c: one resolved STM abort's code address counted (pc 0: not);
 * the table ordered; freeing. */
void ca_where_add(struct ca_state *s, const struct ca_attribution *a);
/* The stack `parent` with `pc` one frame further out: its id (0 out of
 * memory, which leaves the abort's stack as it was). */
uint32_t ca_frame_push(struct ca_state *s, uint32_t parent, uint64_t pc);
void ca_where_finish(struct ca_state *s);
void ca_where_free(struct ca_state *s);
double ca_attempt_off_ns(const struct ca_state *s, const struct th *t);

/* check_clock.c */
void ca_clock_events(const struct ca_state *s, struct ca_clock *c, const struct tf_event *ev, size_t n);
/* Adds a source's histogram to the state's. */
void ca_clock_add(struct ca_state *s, const struct ca_clock *c);
void ca_clock_finish(struct ca_state *s);

/* check_sites.c (0, or -1 with the message set: out of memory) */
int ca_site_start(struct ca_state *s, uint32_t site);
int ca_site_commit(struct ca_state *s, const struct th *t, const struct tf_event *ev);
int ca_site_abort(struct ca_state *s, const struct th *t, const struct tf_event *ev, int hardware);

#endif
