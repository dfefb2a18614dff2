/*
 * check_analysis.h - what tmcheck computes from a trace's events: the
 * options, the result types and the entry points of its analyses.
 *
 * Owns: the vocabulary the analyses share with their readers (tmcheck,
 * tmexport, the report): the consistency metrics (temporal inconsistencies,
 * grammar violations, out-of-place events, late starts, premature ends), the
 * abort analysis (conflict-free aborts, culprit attribution, hardware status
 * classes), the per-site table, the conflict matrix, the clock error. A
 * header alone, so that the analyses' shared state (check_state.h) can
 * include it without an arrow back to their driver: the entry points are
 * defined by check_driver.c, each result's getter by the module that fills
 * it (named at its declaration).
 * Never: reads files or prints (check_report.c does), exits; holds code
 * beyond the one inline stripe function.
 */
#ifndef TMT_CHECK_ANALYSIS_H
#define TMT_CHECK_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "tmtrace.h"
#include "trace_file.h"

/* Events a thread's timestamp-order view may be displaced by before the
 * view is no longer exact (counted in ca_totals.window_overflows). */
#define CA_REORDER_WINDOW 4096

enum ca_htm_class {
    CA_HTM_CONFLICT = 0,   /* CONFLICT bit */
    CA_HTM_CAPACITY,       /* CAPACITY bit */
    CA_HTM_STM_ACTIVE,     /* explicit abort with the runtime's "software transactions active" code */
    CA_HTM_EXPLICIT,       /* other explicit aborts */
    CA_HTM_RETRY_ONLY,     /* only RETRY (e.g. interrupt) */
    CA_HTM_OTHER,          /* no known bit (status 0: unexplained) */
    CA_HTM_CLASSES
};

/*
 * The one cause of each abort (format version 2 traces; version 1 traces
 * know only true, false and conflict-free). STM aborts are matched by
 * identity: a victim that found a newer version to the commit that wrote
 * it, a victim that found a stripe locked to the holder's attempt.
 */
enum ca_class {
    CA_CL_TRUE = 0,          /* a commit wrote the very word the attempt used */
    CA_CL_FALSE,             /* a commit wrote another word of the same stripe */
    CA_CL_HOLDER_RUNNING,    /* the stripe was locked by an attempt that then committed */
    CA_CL_HOLDER_PREEMPTED,  /* ... by an attempt that was descheduled or migrated meanwhile */
    CA_CL_HOLDER_ABORTED,    /* ... by an attempt that never committed */
    CA_CL_HTM_CONFLICT,      /* hardware, by status bits */
    CA_CL_HTM_CAPACITY,
    CA_CL_HTM_EXPLICIT,      /* explicit, including "software transactions active" */
    CA_CL_HTM_RETRY_ONLY,
    CA_CL_HTM_OTHER,
    CA_CL_USER_RETRY,
    CA_CL_USER_CANCEL,
    CA_CL_CONFLICT_FREE,     /* STM abort without a committed culprit or a live holder */
    CA_CL_WORD_UNKNOWN,      /* a commit wrote the stripe; whether the very word, the trace's level
                              * does not record (below the default: no write sets, no accesses) */
    CA_CL_CULPRIT_DROPPED,   /* as CONFLICT_FREE, but another thread's events were missing during the
                              * attempt (a hole in its order): its culprit may be among them */
    CA_CLASSES
};

struct ca_opts {
    unsigned stripes_log2;   /* the runtime's TMTRACE_STRIPES (default 20) */
    unsigned stripe_shift;   /* its TMTRACE_STRIPE_SHIFT (0 = not recorded: the runtime's default 4) */
    unsigned format_version; /* of the trace: 2 and up records what aborts found */
    double desched_gap_ns;   /* a gap this long inside an attempt is a deschedule (0 = default) */
    uint64_t uncertainty;    /* u, in trace time units (0 for raw traces) */
    double ns_per_unit;      /* 1 for synced traces, 1e9/tsc_hz for raw */
    int have_accesses;       /* the trace records reads and writes (level all, or sampled: detail) */
    int have_wsets;          /* version 4 at level tx: update commits record their written words */
    unsigned detail;         /* TMTRACE_DETAIL: one attempt in `detail` has its accesses (0 = none) */
    int repeated_access;     /* reads/writes repeat the previous stamp (header stamp_access REPEATED) */
    double lock_hold_ns;     /* how long a committer may hold its locks (0 = the default) */
    double event_cost_ns;    /* the tracer's cost per event, for its estimated share (0 = default) */
    uint64_t slack;          /* unordered commit stamps: how far a commit may be stamped after an
                                abort it caused, in trace time units (0 when commits are ordered) */
};

/* A reader or committer that found a stripe locked aborted because of a
 * transaction that was committing: that transaction's COMMIT record is
 * stamped after its write-back, so after the victim's abort. Such aborts look
 * that far past A for their culprit. */
#define CA_LOCK_HOLD_NS_DEFAULT 10000000.0
#define CA_DESCHED_GAP_NS_DEFAULT 500000.0
/* An unordered stamp (rdtsc) may execute before instructions that precede
 * it or after instructions that follow it, by at most the processor's
 * reorder window (a few hundred instructions, under 1 us even with cache
 * misses in flight). When COMMIT records take one, the culprit's commit is
 * looked for this much past the victim's abort (and kept this much longer),
 * so that an abort is never resolved before its culprit arrives in the
 * merged stream. */
#define CA_UNORDERED_SLACK_NS 2000.0
/* tmbench eventcost's median on the reference machine (docs/tracer.md) */
#define CA_EVENT_COST_NS_DEFAULT 25.0
/* The runtime's defaults of TMTRACE_STRIPES and TMTRACE_STRIPE_SHIFT, for a
 * trace that does not record them. */
#define CA_STRIPES_LOG2_DEFAULT 20u
#define CA_STRIPE_SHIFT_DEFAULT 4u

/* Where a thread's (or a site's) time went, in ns. The thread's wall time
 * (first to last event) is split into committed attempts, aborted attempts
 * (wasted), back-off (an abort to its retry's start) and outside
 * transactions; serial time and the tracer's estimated cost are parts of
 * those. Sites have no wall or outside time. */
struct ca_time {
    double wall_ns, committed_ns, wasted_ns, backoff_ns, outside_ns, serial_ns, tracer_ns;
    double dropped_ns;           /* from a hole in program order (dropped events) to the next START */
    uint64_t committed_n, aborted_n;
    uint64_t desched_n;          /* attempts that spanned a deschedule or a migration */
    double desched_ns;           /* their wall time (inside committed_ns and wasted_ns) */
    double desched_off_ns;       /* the part of it off the CPU (gaps of a deschedule's length) */
    uint64_t desched_aborted_n;  /* of desched_n, aborted attempts */
    double wasted_oncpu_ns;      /* wasted_ns less the aborted attempts' time off the CPU */
    double committed_median_ns, aborted_median_ns;   /* per attempt, within ~9 % */
};

struct ca_thread {
    uint32_t thread;
    uint64_t events, temporal, grammar, out_of_place, late_starts, premature_ends;
    uint64_t attempts, commits, aborts, open_at_end, window_overflows, cut_attempts;
    struct ca_time time;
};

struct ca_site {
    uint32_t site;
    uint64_t attempts, commits, aborts;
    uint64_t aborts_by_reason[TMT_ABORT_REASONS];
    uint64_t htm_class[CA_HTM_CLASSES];
    double wasted_ns;          /* sum over aborted attempts of abort - start */
    uint64_t retried_commits;  /* commits counted for retries */
    uint64_t retries_sum, retries_max;
    uint64_t rs_sum, rs_max, ws_sum, ws_max, sets_n;  /* from COMMIT records */
    uint64_t rs_n;             /* of those, the ones that counted their reads (not TF_SERIAL_UNCOUNTED) */
    uint64_t conflict_free, true_conflicts, false_conflicts;
    uint64_t cls[CA_CLASSES];  /* every abort of the site, by class */
    double cls_wasted_ns[CA_CLASSES];
    struct ca_time time;
};

struct ca_conflict {
    uint32_t victim_site, culprit_site;   /* culprit_site 0: aborts without a culprit */
    uint64_t count, true_count, false_count;
    uint64_t cls[CA_CLASSES];             /* the aborts by class */
    double wasted_ns;
};

/* An address STM aborts failed on (the victim's), with what they cost. */
struct ca_hot {
    uint64_t addr;
    uint64_t count;
    uint64_t true_count, false_count;     /* the culprit wrote this word / only others of its stripe */
    uint64_t holder_count;                /* of them, lock-holder classes */
    double wasted_ns;
    uint32_t victim_site, culprit_site;   /* of the costliest abort on it */
    double top_wasted;
    uint64_t alloc_pc, alloc_off;         /* the tmt_malloc block holding it (pc 0: none known) */
};

struct ca_totals {
    uint64_t events, transactions, attempts, commits, aborts;
    uint64_t stm_aborts, htm_aborts, user_aborts, fallbacks;
    uint64_t serial;     /* attempts that ran in serial mode (SERIAL records) */
    uint64_t detailed;   /* attempts TMTRACE_DETAIL chose (START flag DETAIL) */
    uint64_t shed;       /* attempts of a level-all trace recorded as at level tx (START flag SHED) */
    uint64_t accesses;   /* READ and WRITE records */
    uint64_t serial_by_reason[TF_SERIAL_REASONS];   /* by enum tf_serial_reason (0: other) */
    uint64_t serial_overlapped;   /* of them, attempts while another thread was in a transaction */
    uint64_t htm_injected;        /* hardware aborts of emulated attempts (TMTRACE_HTM=emulate) */
    double serial_ns;    /* time they ran alone: SERIAL to their commit or abort */
    uint64_t temporal, grammar, out_of_place, late_starts, premature_ends;
    uint64_t open_at_end, window_overflows;
    uint64_t cut_attempts;   /* attempts a hole in program order cut: their START or their end is missing */
    uint64_t conflict_free, true_conflicts, false_conflicts;
    uint64_t htm_class[CA_HTM_CLASSES];
    uint64_t cls[CA_CLASSES];          /* every abort, by class */
    double cls_wasted_ns[CA_CLASSES];
    uint64_t by_identity;              /* STM aborts matched by what they found (v2) */
    uint64_t by_time;                  /* STM aborts matched by the time window */
    uint64_t holder_unknown;           /* locked aborts whose holder the trace does not name */
    uint64_t allocs, alloc_resets;     /* ALLOC records; times the block table started over */
    double wasted_ns;
    /* clock error against the ground truth, ns */
    uint64_t truth_events;
    double err_p50, err_p99, err_max;
};

/*
 * A group of STM aborts: one victim site, one class, one word, one culprit
 * site (0: none). A lock-held abort whose holder wrote only other words of
 * the stripe is grouped as CA_CL_FALSE (false sharing while the lock was
 * held), one whose holder committed a write to the word itself as
 * CA_CL_TRUE; `held` counts the lock-held aborts of a group. Time is the program's: on-CPU wasted time
 * only; the descheduled attempts' wall time stands apart.
 */
struct ca_group {
    uint32_t victim_site, culprit_site;
    unsigned cls;
    uint64_t addr;
    uint64_t count;
    uint64_t held;                /* of count, aborts that found the stripe locked */
    uint64_t same_word_known;     /* of count, aborts whose culprit's writes are known */
    double oncpu_ns;              /* wasted time on the CPU */
    uint64_t desched_n;           /* of count, attempts descheduled or migrated */
    double desched_ns;            /* their wall time (not in oncpu_ns beyond their on-CPU part) */
    uint64_t alloc_pc, alloc_base;/* the recorded allocation holding addr (pc 0: none) */
};

/* One attributed STM abort, handed to the caller as it is resolved. */
struct ca_attribution {
    uint32_t thread, site;
    uint64_t instance;
    uint64_t start, abort;        /* trace time units */
    unsigned reason;
    int found;                    /* 0 = no culprit */
    int true_conflict;
    unsigned cls;                 /* enum ca_class */
    int by_identity;              /* matched by what the abort found, not by time */
    int same_word;                /* the culprit wrote the victim's word: 1, only other words of
                                   * its stripe: 0 (false sharing), unknown: -1 */
    uint32_t culprit_thread, culprit_site;
    uint64_t culprit_instance, culprit_commit;
    uint64_t addr;                /* the conflicting address (the victim's) */
    uint64_t pc;                  /* version 4: the code address of the access that found the
                                   * conflict (0 = not recorded: found at commit, or older trace) */
    uint32_t stack;               /* the frames above it (ABORT_STACK, ca_frame), 0 = none */
};

/* Where in the transaction: how many of a site's attributed STM aborts
 * were found at the access at code address pc (ABORT_PC), with the frames
 * `stack` above it (ca_frame_of; 0 in the locations, where stacks are not
 * told apart). */
struct ca_where {
    uint32_t site;
    uint32_t stack;
    uint64_t pc;
    uint64_t count;
};
struct ca_where_tab {
    struct ca_where *e;
    size_t cap, n;
    int sorted, failed;
};
/* One frame of a recorded stack: its return address and the frames inside
 * it (`inner`, an id; 0: the frame just above the access). */
struct ca_frame {
    uint32_t inner;
    uint64_t pc;
};

struct ca_state;
struct trace_index;

/* The run (check_driver.c). The options for the trace of `ix`: the stripes as recorded (their count's
 * log2 `stripes_log2` instead when non-zero), the abort window widened by the clock
 * uncertainty tmsync recorded (its models' largest residual), the time unit
 * of a raw trace (a TSC tick), whether reads and writes were recorded. */
void ca_opts_for_trace(const struct trace_index *ix, unsigned stripes_log2, struct ca_opts *o);

struct ca_state *ca_create(const struct ca_opts *o);
/* The threads whose END chunk counts dropped events, before any event is
 * fed: an abort no commit explains while such a thread is silent is
 * CA_CL_CULPRIT_DROPPED rather than conflict-free. 0, or -1. */
int ca_note_drops(struct ca_state *s, const struct trace_index *ix);
/* Feeds the next event in merged order. 0, or -1 (out of memory). */
int ca_event(struct ca_state *s, const struct tf_event *ev);
/* The analyses that look at one thread's events alone (the order views of
 * check_order.c, the clock error of check_clock.c) run in the merge's
 * threads, one source at a time (ti_merge_opts.order = ca_source_chunk,
 * ctx the state), instead of in ca_event: for the sources of `ix`, unless
 * two of them share a thread slot. Before the first event. 1 = split (the
 * merge must call ca_source_chunk), 0 = ca_event keeps them, -1 = out of
 * memory. */
int ca_by_source(struct ca_state *s, const struct trace_index *ix);
int ca_source_chunk(void *ctx, size_t source, struct tf_event *ev, const uint64_t *keep, size_t n);
/* Ends the stream: flushes the per-thread views and pending aborts. */
int ca_finish(struct ca_state *s);
void ca_free(struct ca_state *s);

/* One of the analyses' tables: entries and bytes as allocated now. */
struct ca_table_size {
    const char *name;
    size_t entries, bytes;
};
#define CA_TABLES 13
/* The tables that grow with the trace's distinct threads, sites,
 * addresses, conflicts and allocated blocks, and the stores bounded by
 * CA_STORE_MAX: fills out[CA_TABLES] (check_driver.c). */
void ca_table_sizes(const struct ca_state *s, struct ca_table_size out[CA_TABLES]);

/* Results (valid after ca_finish, until ca_free). The totals and threads
 * from check_driver.c, the sites and conflicts from check_tables.c, the hot
 * addresses from check_culprit.c. */
const struct ca_totals *ca_totals(const struct ca_state *s);
const struct ca_thread *ca_threads(const struct ca_state *s, size_t *n);
const struct ca_site *ca_sites(const struct ca_state *s, size_t *n);          /* sites seen, by id */
const struct ca_conflict *ca_conflicts(const struct ca_state *s, size_t *n);  /* sorted by count */
const struct ca_hot *ca_hot_addresses(const struct ca_state *s, size_t *n);  /* sorted by wasted time */
/* The groups of STM aborts (check_groups.c), by on-CPU wasted time, then
 * count; *failed set when grouping ran out of memory (the groups are then
 * partial). */
const struct ca_group *ca_groups(const struct ca_state *s, size_t *n, int *failed);
/* The code addresses at which site's aborts were found, most aborts first
 * (check_where.c; none for traces older than version 4). */
const struct ca_where *ca_where_of_site(const struct ca_state *s, uint32_t site, size_t *n);
/* The same for (access, stack) pairs of aborts with ABORT_STACK records. */
const struct ca_where *ca_stacks_of_site(const struct ca_state *s, uint32_t site, size_t *n);
/* Stack `id`'s frame (id != 0, as in ca_where.stack). */
const struct ca_frame *ca_frame_of(const struct ca_state *s, uint32_t id);
/* The recorded allocation (ALLOC) holding addr as the stream stands now:
 * its start and call site; 0 when none (check_alloc.c). */
int ca_block_at(const struct ca_state *s, uint64_t addr, uint64_t *base, uint64_t *pc);
/* Optional listener for every resolved STM abort (e.g. a listing), called
 * after the groups have counted it (check_driver.c). */
void ca_listen(struct ca_state *s, void (*fn)(void *, const struct ca_attribution *), void *ctx);
/* The analyses' own hook (check_culprit.c calls it; ca_create sets it):
 * callers use ca_listen. */
void ca_on_attribution(struct ca_state *s, void (*fn)(void *, const struct ca_attribution *), void *ctx);

/* The runtime's stripe of an address: the one function the STM locks with
 * (version 4 and before: the one it locked with then). */
static inline uint64_t ca_stripe(const struct ca_opts *o, uint64_t addr)
{
    if (o->format_version <= 4)
        return tf_stripe_index_v4(addr, o->stripes_log2, o->stripe_shift);
    return tf_stripe_index(addr, o->stripes_log2, o->stripe_shift);
}

/* The classes' names (check_sites.c). */
const char *ca_htm_class_name(unsigned c);
const char *ca_class_name(unsigned c);     /* "true-conflict", "holder-preempted", ... */

#endif
