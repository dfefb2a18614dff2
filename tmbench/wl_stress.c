/*
 * wl_stress.c - the `stress` workload: the soak program of the runtime.
 *
 * Owns: a mix that runs, in every thread, bank transfers with audits, an
 * opacity probe and operations on a transactional sorted list (an integer
 * set with transactional malloc/free), and checks their invariants all the
 * time: the probe pair is equal inside every transaction that reads it
 * (opacity: even a transaction that will abort must never see it unequal),
 * every audit sees the exact bank total, and at the end the set is sorted,
 * duplicate-free and as large as the inserts minus the removes. It also
 * counts its own committed transactions, so a test can compare that count
 * with the runtime's statistics and with the trace.
 * Never: touches shared data outside a transaction while threads run, or
 * ends a run with an invariant violation unreported.
 */
#include "accounts.h"
#include "bench.h"
#include "tm.h"
#include "json_writer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct stress_node {
    long key;
    struct stress_node *next;
};

/* Per-thread counts, each on its own cache line. */
struct stress_counts {
    uint64_t commits;          /* transactions this thread completed */
    uint64_t transfers, audits, probes, probe_writes, set_ops;
    uint64_t checks;           /* invariant checks done inside transactions */
    uint64_t bad_audits, opacity_violations;
    int64_t set_delta;         /* successful inserts minus successful removes */
} __attribute__((aligned(64)));

struct stress {
    long naccounts, range, max_amount;
    long expected_total;
    int threads;
    long *accounts;
    /* The probe pair: writers keep probe[0] == probe[8] (a cache line apart
     * so they fall in different stripes). */
    long probe[16];
    struct stress_node *head;  /* sentinel: key -1 */
    long initial_size;
    long final_size;
    struct stress_counts *counts;
};

static int stress_setup(const struct bench_opts *o, void **state)
{
    long n = bench_opt_long(o, "accounts", 64, 2, 1L << 24);
    long range = bench_opt_long(o, "range", 256, 2, 1L << 24);
    if (bench_opt_error)
        return -1;
    struct stress *s = calloc(1, sizeof *s);
    if (!s) {
        fprintf(stderr, "tmbench: stress: out of memory\n");
        return -1;
    }
    *state = s;
    s->naccounts = n;
    s->range = range;
    s->max_amount = 50;
    s->threads = o->threads;
    s->accounts = malloc(sizeof *s->accounts * (size_t)n);
    s->counts = aligned_alloc(64, sizeof *s->counts * (size_t)o->threads);
    s->head = malloc(sizeof *s->head);
    if (!s->accounts || !s->counts || !s->head) {
        fprintf(stderr, "tmbench: stress: out of memory for %ld accounts\n", n);
        return -1;
    }
    memset(s->counts, 0, sizeof *s->counts * (size_t)o->threads);
    for (long i = 0; i < n; i++)
        s->accounts[i] = 1000;
    s->expected_total = 1000 * n;
    s->head->key = -1;
    s->head->next = NULL;
    /* Half the keys, even ones, so inserts and removes both succeed often.
     * Built before any thread runs, so plain malloc is fine; the list frees
     * nodes with tmt_free later, which accepts malloc'd blocks. */
    struct stress_node **tail = &s->head->next;
    for (long k = 0; k < range; k += 2) {
        struct stress_node *nd = malloc(sizeof *nd);
        if (!nd) {
            fprintf(stderr, "tmbench: stress: out of memory for the set\n");
            return -1;
        }
        nd->key = k;
        nd->next = NULL;
        *tail = nd;
        tail = &nd->next;
        s->initial_size++;
    }
    return 0;
}

/* Reads the pair and checks it inside the transaction: a violation is
 * counted at the moment it is seen, whether or not the attempt commits. */
static void stress_probe_read(struct stress *s, struct stress_counts *c)
{
    TM_BEGIN_RO("stress-probe-read");
    long a = TM_READ(s->probe[0]);
    long b = TM_READ(s->probe[8]);
    if (a != b)
        __atomic_add_fetch(&c->opacity_violations, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&c->checks, 1, __ATOMIC_RELAXED);
    TM_END;
}

static void stress_probe_write(struct stress *s, struct stress_counts *c)
{
    TM_BEGIN("stress-probe-write");
    long a = TM_READ(s->probe[0]);
    long b = TM_READ(s->probe[8]);
    if (a != b)
        __atomic_add_fetch(&c->opacity_violations, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&c->checks, 1, __ATOMIC_RELAXED);
    TM_WRITE(s->probe[0], a + 1);
    TM_WRITE(s->probe[8], a + 1);
    TM_END;
}

/* Inside a transaction: walks the sorted list to the first node whose key
 * is >= key and returns it (NULL at the end), its predecessor in *prevp. A
 * walk that meets keys out of order is an opacity violation. */
static struct stress_node *stress_walk(struct stress *s, long key, struct stress_counts *c,
                                       struct stress_node **prevp)
{
    struct stress_node *prev = s->head;
    struct stress_node *cur = TM_READ_P(prev->next);
    long last = -1;
    while (cur) {
        long k = TM_READ(cur->key);
        if (k <= last)
            __atomic_add_fetch(&c->opacity_violations, 1, __ATOMIC_RELAXED);
        last = k;
        if (k >= key)
            break;
        prev = cur;
        cur = TM_READ_P(cur->next);
    }
    *prevp = prev;
    return cur;
}

/* Set operations; each returns 1 when it changed the set. */
static int stress_insert(struct stress *s, long key, struct stress_counts *c)
{
    volatile int changed;
    TM_BEGIN("stress-set-insert");
    changed = 0;
    struct stress_node *prev;
    struct stress_node *cur = stress_walk(s, key, c, &prev);
    if (!cur || TM_READ(cur->key) != key) {
        struct stress_node *nd = TM_MALLOC(sizeof *nd);
        TM_WRITE(nd->key, key);
        TM_WRITE_P(nd->next, cur);
        TM_WRITE_P(prev->next, nd);
        changed = 1;
    }
    TM_END;
    return changed;
}

static int stress_remove(struct stress *s, long key, struct stress_counts *c)
{
    volatile int changed;
    TM_BEGIN("stress-set-remove");
    changed = 0;
    struct stress_node *prev;
    struct stress_node *cur = stress_walk(s, key, c, &prev);
    if (cur && TM_READ(cur->key) == key) {
        TM_WRITE_P(prev->next, TM_READ_P(cur->next));
        TM_FREE(cur);
        changed = 1;
    }
    TM_END;
    return changed;
}

static void stress_worker(void *state, struct bench_thread *bt)
{
    struct stress *s = state;
    struct stress_counts *c = &s->counts[bt->id];
    const uint64_t n = (uint64_t)s->naccounts;
    while (bench_continue(bt)) {
        uint64_t op = bench_rand_below(bt, 100);
        if (op < 40) {
            long from = (long)bench_rand_below(bt, n);
            long to = (long)bench_rand_below(bt, n - 1);
            if (to >= from)
                to++;
            accounts_transfer(s->accounts, from, to, 1 + (long)bench_rand_below(bt, (uint64_t)s->max_amount));
            c->transfers++;
        } else if (op < 45) {
            long total = accounts_audit(s->accounts, s->naccounts);
            c->audits++;
            c->checks++;
            if (total != s->expected_total)
                c->bad_audits++;
        } else if (op < 60) {
            stress_probe_read(s, c);
            c->probes++;
        } else if (op < 65) {
            stress_probe_write(s, c);
            c->probe_writes++;
        } else {
            long key = (long)bench_rand_below(bt, (uint64_t)s->range);
            if (op < 80)
                c->set_delta += stress_insert(s, key, c);
            else if (op < 95)
                c->set_delta -= stress_remove(s, key, c);
            else
                (void)stress_remove(s, s->range, c); /* a walk of the whole list that changes nothing */
            c->set_ops++;
        }
        c->commits++;
        bt->ops++;
    }
}

static void stress_sum(const struct stress *s, struct stress_counts *t)
{
    memset(t, 0, sizeof *t);
    for (int i = 0; i < s->threads; i++) {
        const struct stress_counts *c = &s->counts[i];
        t->commits += c->commits;
        t->transfers += c->transfers;
        t->audits += c->audits;
        t->probes += c->probes;
        t->probe_writes += c->probe_writes;
        t->set_ops += c->set_ops;
        t->checks += __atomic_load_n(&c->checks, __ATOMIC_RELAXED);
        t->bad_audits += c->bad_audits;
        t->opacity_violations += __atomic_load_n(&c->opacity_violations, __ATOMIC_RELAXED);
        t->set_delta += c->set_delta;
    }
}

static int stress_check(void *state, char *msg, size_t cap)
{
    struct stress *s = state;
    struct stress_counts t;
    stress_sum(s, &t);
    if (t.opacity_violations) {
        snprintf(msg, cap, "stress: %" PRIu64 " inconsistent snapshots seen inside transactions",
                 t.opacity_violations);
        return -1;
    }
    if (t.bad_audits) {
        snprintf(msg, cap, "stress: %" PRIu64 " audits saw a wrong bank total", t.bad_audits);
        return -1;
    }
    long total = 0;
    for (long i = 0; i < s->naccounts; i++)
        total += s->accounts[i];
    if (total != s->expected_total) {
        snprintf(msg, cap, "stress: bank total %ld != expected %ld", total, s->expected_total);
        return -1;
    }
    if (s->probe[0] != s->probe[8] || (uint64_t)s->probe[0] != t.probe_writes) {
        snprintf(msg, cap, "stress: probe pair %ld/%ld after %" PRIu64 " increments", s->probe[0],
                 s->probe[8], t.probe_writes);
        return -1;
    }
    long size = 0, last = -1;
    for (const struct stress_node *nd = s->head->next; nd; nd = nd->next) {
        if (nd->key <= last || nd->key >= s->range) {
            snprintf(msg, cap, "stress: set key %ld after %ld (unsorted, duplicate or out of range)", nd->key,
                     last);
            return -1;
        }
        last = nd->key;
        size++;
    }
    s->final_size = size;
    if (size != s->initial_size + t.set_delta) {
        snprintf(msg, cap, "stress: set has %ld keys, expected %ld + %" PRId64, size, s->initial_size,
                 t.set_delta);
        return -1;
    }
    return 0;
}

static void stress_json_extra(void *state, struct jw *w)
{
    struct stress *s = state;
    struct stress_counts t;
    stress_sum(s, &t);
    jw_ku64(w, "tx_counted", t.commits);
    jw_ku64(w, "transfers", t.transfers);
    jw_ku64(w, "audits", t.audits);
    jw_ku64(w, "probes", t.probes);
    jw_ku64(w, "probe_writes", t.probe_writes);
    jw_ku64(w, "set_ops", t.set_ops);
    jw_ku64(w, "invariant_checks", t.checks);
    jw_ku64(w, "bad_audits", t.bad_audits);
    jw_ku64(w, "opacity_violations", t.opacity_violations);
    jw_ki64(w, "set_size", s->final_size);
}

static void stress_teardown(void *state)
{
    struct stress *s = state;
    if (s->head) {
        struct stress_node *nd = s->head;
        while (nd) {
            struct stress_node *next = nd->next;
            free(nd);
            nd = next;
        }
    }
    free(s->accounts);
    free(s->counts);
    free(s);
}

const struct workload wl_stress = {
    .name = "stress",
    .help = "  --accounts N   bank accounts (default 64)\n"
            "  --range N      keys of the integer set are drawn from [0, N) (default 256)\n",
    .setup = stress_setup,
    .worker = stress_worker,
    .check = stress_check,
    .json_extra = stress_json_extra,
    .teardown = stress_teardown,
};
