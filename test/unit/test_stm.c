/*
 * test_stm.c - the TL2 STM: atomicity (bank), opacity, exact sub-word
 * accesses, read-only transactions, the abort reasons TL2 detects, and the
 * wait for older attempts that privatization safety builds on, and a
 * leaving thread's wait for its limbo.
 * Runs with TMTRACE_HTM=off semantics (config.htm forced to off).
 */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "stm.h"
#include "tmtrace.h"
#include "test_util.h"
#include "tx.h"
#include "tx_life.h"
#include "tx_registry.h"

static void run_threads(int n, void *(*fn)(void *), void *arg)
{
    assert_int_equal(tu_run_threads(n, fn, arg), 0);
}

static int setup(void **state)
{
    (void)state;
    setenv("TMTRACE_FILE", tu_path("trace.bin"), 1); /* not in the working directory */
    assert_int_equal(tmt_init(), 0);
    config.htm = CONFIG_HTM_OFF;
    return 0;
}

/* The calling thread entered at trace level `events`; -1: the configured
 * one. Out of line: one call before the blocks' setjmp, whatever the way. */
__attribute__((noinline)) static tmt_tx *enter_at(int events)
{
    return events < 0 ? tmt_thread_enter() : tu_enter_at(events);
}

/* ---- bank ------------------------------------------------------------------ */

#define ACCOUNTS 32
#define START_BALANCE 1000

struct bank {
    long acct[ACCOUNTS];
    int transfers_per_thread;
    int writers_left;
    long audits;
    long bad_audits;
    uint64_t seed;
};

static void bank_transfer(tmt_tx *tx, struct bank *b, int from, int to, long amount)
{
    TMT_ATOMIC(tx, "bank-transfer") {
        long f = tmt_read_long(tx, &b->acct[from]);
        tmt_write_long(tx, &b->acct[from], f - amount);
        long t = tmt_read_long(tx, &b->acct[to]);
        tmt_write_long(tx, &b->acct[to], t + amount);
    } TMT_END;
}

static void *bank_writer(void *arg)
{
    struct bank *b = arg;
    tmt_tx *tx = tmt_thread_enter();
    assert_non_null(tx);
    uint64_t r = __atomic_add_fetch(&b->seed, 0x9E3779B97F4A7C15ull, __ATOMIC_RELAXED) | 1;
    for (int i = 0; i < b->transfers_per_thread; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        bank_transfer(tx, b, (int)(r % ACCOUNTS), (int)((r >> 20) % ACCOUNTS), (long)((r >> 40) % 50));
    }
    __atomic_sub_fetch(&b->writers_left, 1, __ATOMIC_RELEASE);
    tmt_thread_exit();
    return NULL;
}

static void *bank_auditor(void *arg)
{
    struct bank *b = arg;
    tmt_tx *tx = tmt_thread_enter();
    assert_non_null(tx);
    do {
        volatile long sum = 0;
        TMT_ATOMIC_FLAGS(tx, "bank-audit", TMT_TX_READ_ONLY) {
            sum = 0;
            for (int i = 0; i < ACCOUNTS; i++)
                sum += tmt_read_long(tx, &b->acct[i]);
        } TMT_END;
        b->audits++;
        if (sum != (long)ACCOUNTS * START_BALANCE)
            b->bad_audits++;
    } while (__atomic_load_n(&b->writers_left, __ATOMIC_ACQUIRE) > 0 || b->audits < 3);
    tmt_thread_exit();
    return NULL;
}

struct bank_run {
    struct bank *b;
    int writers;
    int next;
};

static void *bank_thread(void *arg)
{
    struct bank_run *r = arg;
    int me = __atomic_fetch_add(&r->next, 1, __ATOMIC_RELAXED);
    return me < r->writers ? bank_writer(r->b) : bank_auditor(r->b);
}

static void bank_run(int writers)
{
    static struct bank b;
    memset(&b, 0, sizeof b);
    for (int i = 0; i < ACCOUNTS; i++)
        b.acct[i] = START_BALANCE;
    b.transfers_per_thread = 40000 / writers;
    b.writers_left = writers;
    b.seed = 42;
    tmt_stats before, after;
    tmt_stats_get(&before);
    struct bank_run r = { &b, writers, 0 };
    run_threads(writers + 1, bank_thread, &r);
    tmt_stats_get(&after);
    long total = 0;
    for (int i = 0; i < ACCOUNTS; i++)
        total += b.acct[i];
    assert_int_equal(total, (long)ACCOUNTS * START_BALANCE);
    assert_true(b.audits >= 3);
    assert_int_equal(b.bad_audits, 0);
    assert_int_equal(after.commits - before.commits,
                     (uint64_t)(b.transfers_per_thread * writers) + (uint64_t)b.audits);
}

static void test_bank_total_is_invariant_with_1_thread(void **s) { (void)s; bank_run(1); }
static void test_bank_total_is_invariant_with_2_threads(void **s) { (void)s; bank_run(2); }
static void test_bank_total_is_invariant_with_4_threads(void **s) { (void)s; bank_run(4); }
static void test_bank_total_is_invariant_with_8_threads(void **s) { (void)s; bank_run(8); }

/* ---- opacity ---------------------------------------------------------------- */

struct probe {
    long x;
    long pad[15]; /* x and y on different stripes and cache lines */
    long y;
    int iters;
    int next;
    int observers_done;
    long updates;
    long inconsistent;
    long observed;
};

static void probe_update(tmt_tx *tx, struct probe *p)
{
    TMT_ATOMIC(tx, "probe-update") {
        long v = tmt_read_long(tx, &p->x);
        tmt_write_long(tx, &p->x, v + 1);
        tmt_write_long(tx, &p->y, v + 1);
    } TMT_END;
}

static void probe_observe(tmt_tx *tx, struct probe *p, int i)
{
    TMT_ATOMIC_FLAGS(tx, "probe-observe", (i % 2) ? TMT_TX_READ_ONLY : 0u) {
        long a = tmt_read_long(tx, &p->x);
        /* A gap in which updates commit; the check is inside the body,
         * before commit, so a doomed attempt that saw x and y disagree
         * would be counted. */
        if (i % 8 == 0)
            sched_yield(); /* even on one core, updates run in the gap */
        else
            for (volatile int spin = 0; spin < 200; spin++)
                ;
        long c = tmt_read_long(tx, &p->y);
        __atomic_add_fetch(&p->observed, 1, __ATOMIC_RELAXED);
        if (a != c)
            __atomic_add_fetch(&p->inconsistent, 1, __ATOMIC_RELAXED);
        /* Every other observer is an update transaction, which keeps a read
         * set and is validated at commit. */
        if (!(i % 2))
            tmt_write_long(tx, &p->pad[i % 15], a);
    } TMT_END;
}

static void *probe_thread(void *arg)
{
    struct probe *p = arg;
    int me = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
    tmt_tx *tx = tmt_thread_enter();
    /* Start together, so that updates and observations overlap. */
    while (__atomic_load_n(&p->next, __ATOMIC_ACQUIRE) < 4)
        sched_yield();
    if (me % 2) {
        for (int i = 0; i < p->iters; i++)
            probe_observe(tx, p, i);
        __atomic_add_fetch(&p->observers_done, 1, __ATOMIC_RELEASE);
    } else {
        /* Update until every observer is done. */
        while (__atomic_load_n(&p->observers_done, __ATOMIC_ACQUIRE) < 2) {
            probe_update(tx, p);
            __atomic_add_fetch(&p->updates, 1, __ATOMIC_RELAXED);
        }
    }
    tmt_thread_exit();
    return NULL;
}

static void test_no_transaction_ever_sees_two_paired_words_differ(void **s)
{
    (void)s;
    static struct probe p;
    memset(&p, 0, sizeof p);
    p.iters = 1500;
    run_threads(4, probe_thread, &p);
    assert_int_equal(p.x, p.y);
    assert_int_equal(p.x, p.updates);
    assert_true(p.observed >= 2 * p.iters);
    assert_int_equal(p.inconsistent, 0);
}

/* ---- sub-word exactness -------------------------------------------------------- */

struct words {
    union {
        uint64_t whole;
        int32_t i32[2];
        float f32[2];
        uint8_t u8[8];
    } w __attribute__((aligned(8)));
};

static void test_narrow_writes_leave_neighbouring_bytes_untouched(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    static struct words v;
    v.w.whole = 0x1122334455667788ull;
    TMT_ATOMIC(tx, "int-write") {
        tmt_write_i32(tx, &v.w.i32[0], -5);
    } TMT_END;
    assert_int_equal(v.w.i32[0], -5);
    assert_int_equal((uint32_t)v.w.i32[1], 0x11223344u);

    v.w.whole = 0x1122334455667788ull;
    TMT_ATOMIC(tx, "byte-write") {
        tmt_write_u8(tx, &v.w.u8[3], 0xab);
        tmt_write_u8(tx, &v.w.u8[6], 0xcd);
    } TMT_END;
    assert_true(v.w.whole == 0x11cd3344ab667788ull);

    v.w.whole = 0x1122334455667788ull;
    TMT_ATOMIC(tx, "float-write") {
        tmt_write_float(tx, &v.w.f32[1], 2.5f);
    } TMT_END;
    assert_true(v.w.f32[1] == 2.5f);
    assert_int_equal((uint32_t)v.w.i32[0], 0x55667788u);
    tmt_thread_exit();
}

static void test_narrow_reads_see_the_transactions_own_writes(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    static struct words v;
    v.w.whole = 0x1122334455667788ull;
    volatile int32_t merged = 0, low = 0;
    volatile uint8_t byte = 0;
    volatile float f = 0;
    TMT_ATOMIC(tx, "read-own") {
        tmt_write_u8(tx, &v.w.u8[1], 0xee);           /* one byte of i32[0] */
        merged = tmt_read_i32(tx, &v.w.i32[0]);        /* part log, part memory */
        tmt_write_i32(tx, &v.w.i32[1], 0x0a0b0c0d);
        byte = tmt_read_u8(tx, &v.w.u8[5]);            /* inside the logged int */
        tmt_write_float(tx, &v.w.f32[1], -1.25f);
        f = tmt_read_float(tx, &v.w.f32[1]);
        low = tmt_read_i32(tx, &v.w.i32[0]);
    } TMT_END;
    assert_int_equal((uint32_t)merged, 0x5566ee88u);
    assert_int_equal(byte, 0x0c);
    assert_true(f == -1.25f);
    assert_int_equal((uint32_t)low, 0x5566ee88u);
    assert_true(v.w.f32[1] == -1.25f);
    tmt_thread_exit();
}

struct shared_word {
    struct words v;
    int iters;
    int next;
};

/* Threads 0..3 each own one byte of the low half of a word and increment it
 * in transactions; thread 4 owns the high int and increments it with plain
 * atomic stores. A transaction that wrote back whole words (or halves) would
 * lose the other owners' updates. */
static void *owner_thread(void *arg)
{
    struct shared_word *sw = arg;
    int me = __atomic_fetch_add(&sw->next, 1, __ATOMIC_RELAXED);
    tmt_tx *tx = tmt_thread_enter();
    for (int i = 0; i < sw->iters; i++) {
        if (me < 4) {
            TMT_ATOMIC(tx, "own-byte") {
                uint8_t b = tmt_read_u8(tx, &sw->v.w.u8[me]);
                tmt_write_u8(tx, &sw->v.w.u8[me], (uint8_t)(b + 1));
            } TMT_END;
        } else if (me == 4) {
            __atomic_store_n(&sw->v.w.i32[1], __atomic_load_n(&sw->v.w.i32[1], __ATOMIC_RELAXED) + 1,
                             __ATOMIC_RELAXED);
        }
    }
    tmt_thread_exit();
    return NULL;
}

static void test_narrow_writes_stay_exact_under_concurrent_neighbour_writes(void **s)
{
    (void)s;
    static struct shared_word sw;
    memset(&sw, 0, sizeof sw);
    sw.iters = 200; /* below 256: a byte counter cannot wrap */
    run_threads(5, owner_thread, &sw);
    for (int i = 0; i < 4; i++)
        assert_int_equal(sw.v.w.u8[i], 200);
    assert_int_equal(sw.v.w.i32[1], 200);

    /* Float neighbours, both transactional, in one word. */
    static struct words fv;
    memset(&fv, 0, sizeof fv);
    tmt_tx *tx = tmt_thread_enter();
    for (int i = 0; i < 100; i++) {
        TMT_ATOMIC(tx, "float-pair") {
            float a = tmt_read_float(tx, &fv.w.f32[0]);
            tmt_write_float(tx, &fv.w.f32[0], a + 1.0f);
        } TMT_END;
    }
    assert_true(fv.w.f32[0] == 100.0f);
    assert_true(fv.w.f32[1] == 0.0f);
    tmt_thread_exit();
}

/* ---- read-only transactions ---------------------------------------------------- */

static void test_read_only_transaction_keeps_no_read_set(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    static long data[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    volatile long sum = 0;
    volatile uint32_t rn = 99;
    uint64_t clock_before = stm_clock_now();
    TMT_ATOMIC_FLAGS(tx, "ro-sum", TMT_TX_READ_ONLY) {
        sum = 0;
        for (int i = 0; i < 8; i++)
            sum += tmt_read_long(tx, &data[i]);
        rn = tx->stm.rn;
    } TMT_END;
    assert_int_equal(sum, 36);
    assert_int_equal(rn, 0);
    /* Committing it took no write version. */
    assert_true(stm_clock_now() == clock_before);
    tmt_thread_exit();
}

/* A read-only attempt adds nothing to its read set however much it reads
 * (its reads rewrite one slot), so the set never grows for it. */
static void test_read_only_reads_never_grow_the_read_set(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    enum { N = 4096 };
    static long data[N];
    for (int i = 0; i < N; i++)
        data[i] = i;
    uint32_t cap_before = tx->stm.rcap;
    volatile long sum = 0;
    volatile uint32_t rn = 99;
    TMT_ATOMIC_FLAGS(tx, "ro-many", TMT_TX_READ_ONLY) {
        sum = 0;
        for (int i = 0; i < N; i++)
            sum += tmt_read_long(tx, &data[i]);
        rn = tx->stm.rn;
    } TMT_END;
    assert_int_equal(sum, (long)N * (N - 1) / 2);
    assert_int_equal(rn, 0);
    assert_true(cap_before >= 1 && cap_before < N);
    assert_int_equal(tx->stm.rcap, cap_before);
    tmt_thread_exit();
}

/* The accessors' gate (tx_stm.gate) is open only inside an untraced
 * software attempt and only for words it has not written; everywhere else
 * the accessors take the dispatching path. */
static void gate_run(int events)
{
    tmt_tx *tx = tu_enter_at(events);
    uint64_t closed = UINT64_MAX, bit = ~(uint64_t)0;
    static long cell[2] = { 5, 6 };
    volatile uint64_t inside = 1, after_write = 0;
    volatile long own = 0;
    assert_true(tx->stm.gate == UINT64_MAX);
    assert_int_equal(tmt_read_long(tx, &cell[0]), 5); /* outside: a plain load */
    TMT_ATOMIC(tx, "gate") {
        inside = tx->stm.gate;
        tmt_write_long(tx, &cell[1], 60);
        after_write = tx->stm.gate;
        own = tmt_read_long(tx, &cell[1]);
    } TMT_END;
    if (events != CONFIG_EVENTS_ALL) {
        closed = 0; /* open: nothing written yet */
        bit = (uint64_t)1 << (((uintptr_t)&cell[1] >> 3) & 63);
    }
    assert_true(inside == closed);
    assert_true(after_write == bit);
    assert_int_equal(own, 60);
    assert_true(tx->stm.gate == UINT64_MAX);
    tmt_write_long(tx, &cell[0], 50); /* outside: a plain store */
    assert_int_equal(cell[0], 50);
    assert_int_equal(cell[1], 60);
    cell[0] = 5;
    cell[1] = 6;
    tmt_thread_exit();
}

static void test_the_accessor_gate_opens_only_inside_software_attempts(void **s)
{
    (void)s;
    gate_run(CONFIG_EVENTS_OFF);
    gate_run(CONFIG_EVENTS_TX);
    gate_run(CONFIG_EVENTS_ALL); /* recording accesses: never open */
}

static void test_read_only_block_that_writes_reruns_as_an_update(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    static long cell = 7;
    volatile int runs = 0;
    TMT_ATOMIC_FLAGS(tx, "ro-liar", TMT_TX_READ_ONLY) {
        runs++;
        long v = tmt_read_long(tx, &cell);
        tmt_write_long(tx, &cell, v * 2);
    } TMT_END;
    assert_int_equal(cell, 14);
    assert_int_equal(runs, 2);
    tmt_thread_exit();
}

/* ---- conflicts and their reasons ------------------------------------------------- */

struct duel {
    sem_t go, done;
    long x, y;
    long pad[16];
    long z;
    int also_z; /* the writer overwrites z too (what the victim read first) */
};

static void *duel_writer(void *arg)
{
    struct duel *d = arg;
    tmt_tx *tx = tmt_thread_enter();
    sem_wait(&d->go);
    TMT_ATOMIC(tx, "duel-writer") {
        tmt_write_long(tx, &d->x, tmt_read_long(tx, &d->x) + 1);
        if (d->also_z)
            tmt_write_long(tx, &d->z, 5);
    } TMT_END;
    sem_post(&d->done);
    tmt_thread_exit();
    return NULL;
}

static uint64_t site_aborts(const char *label, unsigned reason)
{
    tmt_site_stats st[64];
    size_t n = tmt_stats_sites(st, 64);
    uint64_t total = 0;
    for (size_t i = 0; i < n && i < 64; i++)
        if (strcmp(st[i].label, label) == 0)
            total += st[i].aborts_by_reason[reason];
    return total;
}

/* `read_after`: the victim reads z, then x only after the writer committed
 * (the read finds a newer version: the snapshot extends unless the writer
 * overwrote z too, `also_z`, or the block is read-only, `flags`); else it
 * read x before (commit validation fails). `attempts_expected` is 1 when
 * the victim commits at its first attempt, 2 when it aborts once for
 * `expect_reason`, counted at the site `label` (the read-after block's is
 * "duel-read-after"). */
/* The duel's victim's trace level; -1: the configured one. */
static int duel_events = -1;

static void duel(int read_after, int also_z, unsigned flags, const char *label, unsigned expect_reason,
                 int attempts_expected)
{
    static struct duel d;
    memset(&d, 0, sizeof d);
    d.also_z = also_z;
    sem_init(&d.go, 0, 0);
    sem_init(&d.done, 0, 0);
    /* The victim enters first: enter_at sets the configured level for the
     * moment of its call, which the writer's own entry must not read. */
    tmt_tx *tx = enter_at(duel_events);
    pthread_t w;
    assert_int_equal(pthread_create(&w, NULL, duel_writer, &d), 0);
    uint64_t before = site_aborts(label, expect_reason);
    volatile int attempts = 0;
    volatile long seen = -1;
    if (read_after) {
        TMT_ATOMIC_FLAGS(tx, "duel-read-after", flags) {
            (void)tmt_read_long(tx, &d.z); /* the snapshot is taken */
            if (attempts++ == 0) {
                sem_post(&d.go);
                sem_wait(&d.done);
            }
            seen = tmt_read_long(tx, &d.x);
            if (!(flags & TMT_TX_READ_ONLY))
                tmt_write_long(tx, &d.y, seen);
        } TMT_END;
        if (flags & TMT_TX_READ_ONLY)
            d.y = seen;
    } else {
        TMT_ATOMIC(tx, "duel-validate") {
            seen = tmt_read_long(tx, &d.x);
            if (attempts++ == 0) {
                sem_post(&d.go);
                sem_wait(&d.done);
            }
            tmt_write_long(tx, &d.y, seen);
        } TMT_END;
    }
    pthread_join(w, NULL);
    assert_int_equal(attempts, attempts_expected);
    assert_int_equal(seen, 1);
    assert_int_equal(d.y, 1);
    assert_int_equal(site_aborts(label, expect_reason) - before, attempts_expected - 1);
    tmt_thread_exit();
    sem_destroy(&d.go);
    sem_destroy(&d.done);
}

static void test_read_of_a_newer_stripe_extends_the_snapshot_when_earlier_reads_still_hold(void **s)
{
    (void)s;
    duel(1, 0, 0, "duel-read-after", TMT_ABORT_READ_VERSION, 1);
}

static void test_read_of_a_newer_stripe_aborts_with_read_version_when_an_earlier_read_changed(void **s)
{
    (void)s;
    duel(1, 1, 0, "duel-read-after", TMT_ABORT_READ_VERSION, 2);
}

static void test_read_only_block_cannot_extend_and_aborts_with_read_version(void **s)
{
    (void)s;
    duel(1, 0, TMT_TX_READ_ONLY, "duel-read-after", TMT_ABORT_READ_VERSION, 2);
}

/* The victim's read of x as a call of its own (the asm keeps it from
 * being a tail call), so that the read's return address lies inside this
 * function's first READ_X_SPAN bytes (more under a sanitizer, whose checks
 * of tmtrace.h's inline test of the descriptor come before the call). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define READ_X_SPAN 192
#else
#define READ_X_SPAN 64
#endif
__attribute__((noinline)) static long read_x(tmt_tx *tx, volatile long *x)
{
    long v = tmt_read_long(tx, x);
    __asm__ volatile("" ::: "memory");
    return v;
}

/* duel(1, 1, ...) at trace level `events`, the victim's second read through
 * read_x: the read's conflict names read_x's call of tmt_read_long as the
 * place it was found (abort_pc, what the ABORT_PC record carries), though
 * this program links the runtime statically. */
static void read_abort_names_the_call(int events)
{
    static struct duel d;
    memset(&d, 0, sizeof d);
    d.also_z = 1;
    sem_init(&d.go, 0, 0);
    sem_init(&d.done, 0, 0);
    tmt_tx *tx = tu_enter_at(events); /* before the writer enters: tu_enter_at sets the shared config */
    pthread_t w;
    assert_int_equal(pthread_create(&w, NULL, duel_writer, &d), 0);
    volatile int attempts = 0;
    TMT_ATOMIC(tx, "duel-read-after") {
        (void)tmt_read_long(tx, &d.z);
        if (attempts++ == 0) {
            sem_post(&d.go);
            sem_wait(&d.done);
        }
        tmt_write_long(tx, &d.y, read_x(tx, &d.x));
    } TMT_END;
    pthread_join(w, NULL);
    assert_int_equal(attempts, 2);
    uintptr_t pc = (uintptr_t)tx->stm.abort_pc, lo = (uintptr_t)&read_x;
    if (pc <= lo || pc >= lo + READ_X_SPAN)
        fail_msg("abort pc 0x%lx is not read_x's call (read_x at 0x%lx)", (unsigned long)pc, (unsigned long)lo);
    tmt_thread_exit();
    sem_destroy(&d.go);
    sem_destroy(&d.done);
}

static void test_read_abort_names_the_programs_call_of_the_read_untraced(void **s)
{
    (void)s;
    read_abort_names_the_call(CONFIG_EVENTS_TX);
}

static void test_read_abort_names_the_programs_call_of_the_read_when_accesses_are_traced(void **s)
{
    (void)s;
    read_abort_names_the_call(CONFIG_EVENTS_ALL);
}

static void test_overwritten_read_set_aborts_at_commit_validation(void **s)
{
    (void)s;
    duel(0, 0, 0, "duel-validate", TMT_ABORT_COMMIT_VALIDATE, 2);
}

/* The same on an untraced thread, whose commit of one word takes
 * stm_commit_inline's way without a loop up to the write version. */
static void test_overwritten_read_set_aborts_an_untraced_commit_of_one_word_at_validation(void **s)
{
    (void)s;
    duel_events = CONFIG_EVENTS_OFF;
    duel(0, 0, 0, "duel-validate", TMT_ABORT_COMMIT_VALIDATE, 2);
    duel_events = -1;
}

/* The same on a thread traced at tx, whose commit of one word takes that
 * way cut in two around its COMMIT record. */
static void test_overwritten_read_set_aborts_a_traced_commit_of_one_word_at_validation(void **s)
{
    (void)s;
    duel_events = CONFIG_EVENTS_TX;
    duel(0, 0, 0, "duel-validate", TMT_ABORT_COMMIT_VALIDATE, 2);
    duel_events = -1;
}

/* A stripe held locked by hand (as a committer in the middle of its commit
 * would) while another thread reads or writes a word on it. */
struct held {
    long x;
    char apart[64]; /* y on another stripe at any width up to 64 bytes */
    long y;
    int write;        /* the victim writes x blindly instead of reading it */
    int also_y;       /* ... and y too (a commit of two words) */
    int events;       /* the victim's trace level; -1: the configured one */
    tmt_tx *victim;
    long result;
};

static void *held_victim(void *arg)
{
    struct held *h = arg;
    tmt_tx *tx = enter_at(h->events);
    __atomic_store_n(&h->victim, tx, __ATOMIC_RELEASE);
    if (h->write) {
        TMT_ATOMIC(tx, "held-write") {
            tmt_write_long(tx, &h->x, 42);
            if (h->also_y)
                tmt_write_long(tx, &h->y, 43);
        } TMT_END;
    } else {
        volatile long v = 0;
        TMT_ATOMIC(tx, "held-read") {
            v = tmt_read_long(tx, &h->x);
        } TMT_END;
        h->result = v;
    }
    tmt_thread_exit();
    return NULL;
}

/* The stripe of x (of y when `hold_y`) locked by hand while the victim
 * (at trace level `events`, -1: the configured one) reads x or writes x
 * (and y when `also_y`). */
static void hold_stripe_until_aborted_at(int write, unsigned reason, int events, int also_y, int hold_y)
{
    static struct held h;
    static struct tx_lockrec fake; /* what a lock word points at */
    memset(&h, 0, sizeof h);
    h.x = 7;
    h.y = 8;
    h.write = write;
    h.also_y = also_y;
    h.events = events;
    uintptr_t *stripe = stm_stripe_word(hold_y ? (uintptr_t)&h.y : (uintptr_t)&h.x);
    assert_ptr_not_equal(stm_stripe_word((uintptr_t)&h.x), stm_stripe_word((uintptr_t)&h.y));
    uintptr_t unlocked = __atomic_load_n(stripe, __ATOMIC_ACQUIRE);
    assert_int_equal(unlocked & 1, 0);
    fake.stripe = stripe;
    fake.old = unlocked;
    __atomic_store_n(stripe, (uintptr_t)&fake | 1, __ATOMIC_RELEASE);
    tmt_stats before;
    tmt_stats_get(&before);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, held_victim, &h), 0);
    /* Wait (bounded) until the victim aborted for the expected reason. The
     * totals include exited threads: after TMTRACE_SERIAL_AFTER aborts the
     * victim runs alone, commits and may have left already. */
    tmt_stats now;
    uint64_t seen = 0;
    for (int i = 0; i < 100000 && seen == 0; i++) {
        sched_yield();
        tmt_stats_get(&now);
        seen = now.aborts_by_reason[reason] - before.aborts_by_reason[reason];
    }
    __atomic_store_n(stripe, unlocked, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    assert_true(seen >= 1);
    if (write)
        assert_int_equal(h.x, 42);
    else
        assert_int_equal(h.result, 7);
    assert_int_equal(h.y, also_y ? 43 : 8);
}

static void hold_stripe_until_aborted(int write, unsigned reason) { hold_stripe_until_aborted_at(write, reason, -1, 0, 0); }

static void test_read_of_a_locked_stripe_aborts_with_read_locked(void **s)
{
    (void)s;
    hold_stripe_until_aborted(0, TMT_ABORT_READ_LOCKED);
}

/* stm_test_busy_hook: records the polls; releases the stripe at poll
 * `busy_release_at`. */
static uintptr_t *busy_stripe_seen;
static unsigned busy_polls, busy_release_at;
static uintptr_t busy_unlocked;
static void busy_poll(uintptr_t *stripe, unsigned poll)
{
    busy_stripe_seen = stripe;
    busy_polls = poll + 1;
    if (poll == busy_release_at)
        __atomic_store_n(stripe, busy_unlocked, __ATOMIC_RELEASE);
}

/* A read that meets a lock polls the stripe until the holder releases it
 * (here at the 10th poll) and reads on in the same attempt. When the lock
 * stays held it gives up after STM_LOCK_SPINS polls and aborts, and its
 * retry first polls the stripe as long again (here the retry then releases
 * it itself, and commits). */
static void test_a_read_that_meets_a_lock_waits_for_its_release_within_a_bound(void **s)
{
    (void)s;
    static long x = 7;
    static struct tx_lockrec fake;
    uintptr_t *stripe = stm_stripe_word((uintptr_t)&x);
    tmt_tx *tx = tmt_thread_enter();
    assert_non_null(tx);
    for (int stays_locked = 0; stays_locked < 2; stays_locked++) {
        busy_unlocked = __atomic_load_n(stripe, __ATOMIC_ACQUIRE);
        fake.stripe = stripe;
        fake.old = busy_unlocked;
        __atomic_store_n(stripe, (uintptr_t)&fake | 1, __ATOMIC_RELEASE);
        busy_release_at = stays_locked ? UINT_MAX : 9;
        busy_polls = 0;
        busy_stripe_seen = NULL;
        stm_test_busy_hook = busy_poll;
        volatile int attempts = 0;
        volatile long v = 0;
        TMT_ATOMIC(tx, "busy-read") {
            if (++attempts == 2 && stays_locked)
                __atomic_store_n(stripe, busy_unlocked, __ATOMIC_RELEASE);
            v = tmt_read_long(tx, &x);
        } TMT_END;
        stm_test_busy_hook = NULL;
        assert_int_equal(v, 7);
        assert_int_equal(attempts, stays_locked ? 2 : 1);
        assert_ptr_equal(busy_stripe_seen, stripe);
        assert_int_equal(busy_polls, stays_locked ? STM_LOCK_SPINS : 10);
    }
    tmt_thread_exit();
}

static void test_commit_that_cannot_lock_a_stripe_aborts_with_commit_locked(void **s)
{
    (void)s;
    hold_stripe_until_aborted(1, TMT_ABORT_COMMIT_LOCKED);
}

/* An untraced commit of one or two words (stm_commit_inline's way without
 * a loop) that finds the stripe of either word locked writes neither: it
 * aborts with COMMIT_LOCKED while the lock stays held and commits both
 * words once it is released. */
static void test_an_untraced_commit_of_one_or_two_words_aborts_on_a_locked_stripe_of_either(void **s)
{
    (void)s;
    hold_stripe_until_aborted_at(1, TMT_ABORT_COMMIT_LOCKED, CONFIG_EVENTS_OFF, 0, 0);
    hold_stripe_until_aborted_at(1, TMT_ABORT_COMMIT_LOCKED, CONFIG_EVENTS_OFF, 1, 0);
    hold_stripe_until_aborted_at(1, TMT_ABORT_COMMIT_LOCKED, CONFIG_EVENTS_OFF, 1, 1);
}

/* The same for a traced commit of one or two words, which takes that way
 * cut in two around its COMMIT record (tx_life.c, tx_commit_stm), and goes
 * on from a lock it could not take the general way. */
static void test_a_traced_commit_of_one_or_two_words_aborts_on_a_locked_stripe_of_either(void **s)
{
    (void)s;
    hold_stripe_until_aborted_at(1, TMT_ABORT_COMMIT_LOCKED, CONFIG_EVENTS_TX, 0, 0);
    hold_stripe_until_aborted_at(1, TMT_ABORT_COMMIT_LOCKED, CONFIG_EVENTS_TX, 1, 0);
    hold_stripe_until_aborted_at(1, TMT_ABORT_COMMIT_LOCKED, CONFIG_EVENTS_TX, 1, 1);
}

/* Every byte of one block of 2^TMTRACE_STRIPE_SHIFT bytes maps to one
 * stripe and the next block to another, at 32, 16 (the default) and 8 bytes
 * (a new width takes effect at the next stm_init, with no transaction
 * running). */
static void test_a_block_of_the_stripe_width_shares_one_stripe_and_the_next_does_not(void **s)
{
    (void)s;
    static uint64_t w[16] __attribute__((aligned(64)));
    uintptr_t a = (uintptr_t)&w[4];
    int64_t saved = config.stripe_shift;
    for (int64_t shift = 5; shift >= 3; shift--) {
        config.stripe_shift = shift;
        assert_int_equal(stm_init(), 0);
        assert_int_equal(stm_stripe_shift(), (unsigned)shift);
        uintptr_t width = (uintptr_t)1 << shift;
        for (uintptr_t i = 0; i < width; i++)
            assert_true(stm_stripe_index(a + i) == stm_stripe_index(a));
        assert_true(stm_stripe_index(a) < ((uint64_t)1 << stm_stripes_log2()));
        assert_true(stm_stripe_index(a + width) != stm_stripe_index(a));
        assert_true(stm_stripe_index(a) == tf_stripe_index(a, stm_stripes_log2(), (unsigned)shift));
    }
    config.stripe_shift = saved;
    assert_int_equal(stm_init(), 0);
}

/* stm_test_released_hook: as another commit would, locks the stripe the
 * moment the commit under test released it (a record of its own). */
static struct tx_lockrec taker_rec;
static uintptr_t taker_found;
static void take_released_stripe(uintptr_t *stripe)
{
    stm_test_released_hook = NULL;
    taker_found = __atomic_load_n(stripe, __ATOMIC_SEQ_CST);
    __atomic_store_n(stripe, (uintptr_t)&taker_rec | 1, __ATOMIC_SEQ_CST);
}

/* A commit of `words` (1 or 2) whole words on one stripe, at trace level
 * `events`, whose stripe another commit locks the moment it is released:
 * that lock still holds when the commit returns. */
static void released_stripe_stays_with_its_taker(int events, int words)
{
    static uint64_t w[2] __attribute__((aligned(64)));
    uintptr_t *stripe = stm_stripe_word((uintptr_t)&w[0]);
    assert_ptr_equal(stripe, stm_stripe_word((uintptr_t)&w[1])); /* 16-byte stripes at least */
    tmt_tx *tx = enter_at(events);
    taker_found = 0;
    stm_test_released_hook = take_released_stripe;
    TMT_ATOMIC(tx, "released-taken") {
        tmt_write_long(tx, (volatile long *)&w[0], 1);
        if (words == 2)
            tmt_write_long(tx, (volatile long *)&w[1], 2);
    } TMT_END;
    stm_test_released_hook = NULL;
    uintptr_t after = __atomic_load_n(stripe, __ATOMIC_SEQ_CST);
    __atomic_store_n(stripe, taker_found, __ATOMIC_SEQ_CST); /* the taker's abort: the version back */
    tmt_thread_exit();
    assert_false(taker_found & 1); /* the hook ran after the release */
    assert_true(after == ((uintptr_t)&taker_rec | 1));
}

/* Each stripe of a commit of one or two words is released once: a second
 * release of one, after another commit locked it, would unlock that commit's
 * stripe under it. */
static void test_a_small_commit_releases_each_stripe_once_whatever_takes_it_next(void **s)
{
    (void)s;
    released_stripe_stays_with_its_taker(CONFIG_EVENTS_OFF, 1);
    released_stripe_stays_with_its_taker(CONFIG_EVENTS_OFF, 2);
    released_stripe_stays_with_its_taker(CONFIG_EVENTS_TX, 1);
    released_stripe_stays_with_its_taker(CONFIG_EVENTS_TX, 2);
}

/* Past the redo log's linear-search size every entry is found again: each
 * word is written, rewritten whole, then half of it rewritten narrowly. */
static void test_rewrites_in_a_long_redo_log_merge_into_their_entries(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    enum { N = 100 };
    static union { long whole; int32_t half[2]; } w[N];
    long seen = 0;
    TMT_ATOMIC(tx, "rewrite") {
        for (int i = 0; i < N; i++)
            tmt_write_long(tx, &w[i].whole, -1);
        for (int i = 0; i < N; i++)
            tmt_write_long(tx, &w[i].whole, (long)i << 32);
        for (int i = 0; i < N; i++)
            tmt_write_i32(tx, &w[i].half[0], i + 7);
        seen = 0;
        for (int i = 0; i < N; i++)
            seen += tmt_read_long(tx, &w[i].whole) == (((long)i << 32) | (i + 7));
    } TMT_END;
    assert_int_equal(seen, N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(w[i].half[0], i + 7);
        assert_int_equal(w[i].half[1], i);
    }
    tmt_thread_exit();
}

/* The index of a long redo log is never cleared, only made stale: a word an
 * earlier transaction wrote, read by one whose own long log shares its
 * filter bits, comes from memory; a word of the current log still comes
 * from the log, and a word never written by either reads memory too. */
static void test_an_index_entry_of_an_earlier_transaction_is_never_found(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    enum { N = 40, APART = 64 }; /* words 64 apart share a filter bit */
    long *cells = calloc(3 * APART, sizeof *cells);
    assert_non_null(cells);
    TMT_ATOMIC(tx, "first") {
        for (int i = 0; i < N; i++)
            tmt_write_long(tx, &cells[i], i);
    } TMT_END;
    for (int i = 0; i < N; i++) {
        cells[i] = -i - 1;
        cells[2 * APART + i] = 1000 + i;
    }
    volatile int old_seen = 0, own_seen = 0, never_seen = 0;
    TMT_ATOMIC(tx, "second") {
        for (int i = 0; i < N; i++)
            tmt_write_long(tx, &cells[APART + i], 100 + i);
        old_seen = own_seen = never_seen = 0;
        for (int i = 0; i < N; i++) {
            old_seen = old_seen + (tmt_read_long(tx, &cells[i]) == -i - 1);
            own_seen = own_seen + (tmt_read_long(tx, &cells[APART + i]) == 100 + i);
            never_seen = never_seen + (tmt_read_long(tx, &cells[2 * APART + i]) == 1000 + i);
        }
    } TMT_END;
    assert_int_equal(old_seen, N);
    assert_int_equal(own_seen, N);
    assert_int_equal(never_seen, N);
    free(cells);
    tmt_thread_exit();
}

/* A transaction's redo log that cannot grow (memory ran out: the test
 * build's stm_test_fail_allocs) ends the process with one line naming what
 * could not grow, not with a bare abort. Run in a child, whose stderr the
 * test reads. */
static void test_a_log_that_cannot_grow_ends_the_process_with_a_line_naming_it(void **s)
{
    (void)s;
    int fds[2];
    int pid = tu_fork_piped(fds);
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        tmt_tx *tx = tmt_thread_enter();
        if (tx == NULL)
            _exit(3);
        uint32_t cap = tx->stm.wcap;
        long *cells = calloc((size_t)cap + 1, sizeof *cells);
        stm_test_fail_allocs = 1;
        TMT_ATOMIC(tx, "cannot-grow") {
            for (uint32_t i = 0; i <= cap; i++)
                tmt_write_long(tx, &cells[i], 1);
        } TMT_END;
        _exit(0); /* not reached: the log had to grow */
    }
    char err[512] = {0};
    size_t got = 0;
    ssize_t n;
    while (got < sizeof err - 1 && (n = read(fds[0], err + got, sizeof err - 1 - got)) > 0)
        got += (size_t)n;
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
    assert_non_null(strstr(err, "libtmtrace: out of memory growing the redo log's index to "));
    assert_non_null(strstr(err, " bytes inside a transaction\n"));
}

static void large_write_set_run(int events)
{
    tmt_tx *tx = tu_enter_at(events);
    enum { N = 5000 };
    static long big[N];
    volatile long check = 0;
    TMT_ATOMIC(tx, "big") {
        for (int i = 0; i < N; i++)
            tmt_write_long(tx, &big[i], i + 1);
        check = 0;
        for (int i = 0; i < N; i++)
            check += tmt_read_long(tx, &big[i]);
    } TMT_END;
    assert_int_equal(check, (long)N * (N + 1) / 2);
    for (int i = 0; i < N; i++) {
        assert_int_equal(big[i], i + 1);
        big[i] = 0;
    }
    tmt_thread_exit();
}

static void test_large_write_sets_grow_and_commit(void **s)
{
    (void)s;
    large_write_set_run(CONFIG_EVENTS_OFF);
    large_write_set_run(CONFIG_EVENTS_TX);
    large_write_set_run(CONFIG_EVENTS_ALL);
}

/* The word appended when the redo log grows must close the accessors' gate
 * like any other: read back at once, it is the transaction's own value.
 * The log keeps its size across transactions, so the block fills what it
 * holds now with words 64 apart (one filter bit for all of them) and then
 * writes the word after the first, whose bit no other write sets. */
static void grow_then_read_run(int events)
{
    tmt_tx *tx = tu_enter_at(events);
    uint32_t cap = tx->stm.wcap;
    long *cells = calloc((size_t)cap * 64, sizeof *cells);
    assert_non_null(cells);
    volatile long seen = 0;
    TMT_ATOMIC(tx, "grow-read") {
        for (uint32_t i = 0; i < cap; i++)
            tmt_write_long(tx, &cells[(size_t)i * 64], 1);
        tmt_write_long(tx, &cells[1], 2);
        seen = tmt_read_long(tx, &cells[1]);
    } TMT_END;
    assert_true(tx->stm.wcap > cap);
    assert_int_equal(seen, 2);
    assert_int_equal(cells[1], 2);
    free(cells);
    tmt_thread_exit();
}

static void test_a_word_appended_as_the_redo_log_grows_is_read_back(void **s)
{
    (void)s;
    grow_then_read_run(CONFIG_EVENTS_OFF);
    grow_then_read_run(CONFIG_EVENTS_ALL);
}

/* ---- serial mode and contention management ----------------------------------- */

#define LONG_N 50000
#define LONG_CELL 10

/* Threads that commit small transfers between random cells until told to
 * stop: the sum of the cells never changes. */
struct movers {
    long *cells;
    int n;
    long amount;
    int stop;
    int running;
    uint64_t seed;
    pthread_t th[4];
    int nth;
};

static void *mover(void *arg)
{
    struct movers *m = arg;
    tmt_tx *tx = tmt_thread_enter();
    assert_non_null(tx);
    uint64_t r = __atomic_add_fetch(&m->seed, 0x9E3779B97F4A7C15ull, __ATOMIC_RELAXED) | 1;
    __atomic_add_fetch(&m->running, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&m->stop, __ATOMIC_ACQUIRE)) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        int i = (int)(r % (uint64_t)m->n), j = (int)((r >> 24) % (uint64_t)m->n);
        TMT_ATOMIC(tx, "small-transfer") {
            tmt_write_long(tx, &m->cells[i], tmt_read_long(tx, &m->cells[i]) - m->amount);
            tmt_write_long(tx, &m->cells[j], tmt_read_long(tx, &m->cells[j]) + m->amount);
        } TMT_END;
    }
    tmt_thread_exit();
    return NULL;
}

static void movers_start(struct movers *m, long *cells, int n, int threads)
{
    memset(m, 0, sizeof *m);
    m->cells = cells;
    m->n = n;
    m->amount = 3;
    m->nth = threads;
    for (int i = 0; i < threads; i++)
        assert_int_equal(pthread_create(&m->th[i], NULL, mover, m), 0);
    while (__atomic_load_n(&m->running, __ATOMIC_ACQUIRE) < threads)
        sched_yield();
}

static void movers_stop(struct movers *m)
{
    __atomic_store_n(&m->stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < m->nth; i++)
        pthread_join(m->th[i], NULL);
}

/* One transaction reads every cell and writes their sum while two threads
 * commit small transfers; returns the attempts it needed. Past `give_up`
 * attempts the writers stop (so a failing run ends quickly). */
static int long_reader_attempts(int give_up, int *serial_attempts)
{
    static long cells[LONG_N], total;
    for (int i = 0; i < LONG_N; i++)
        cells[i] = LONG_CELL;
    static struct movers m;
    movers_start(&m, cells, LONG_N, 2);
    tmt_tx *tx = tmt_thread_enter();
    volatile int attempts = 0, serial = 0;
    volatile long sum = 0;
    TMT_ATOMIC(tx, "long-reader") {
        serial += tx_is_serial(tx);
        if (++attempts > give_up)
            __atomic_store_n(&m.stop, 1, __ATOMIC_RELEASE);
        sum = 0;
        for (int i = 0; i < LONG_N; i++)
            sum += tmt_read_long(tx, &cells[i]);
        tmt_write_long(tx, &total, sum);
    } TMT_END;
    movers_stop(&m);
    tmt_thread_exit();
    assert_int_equal(sum, (long)LONG_N * LONG_CELL);
    assert_int_equal(total, (long)LONG_N * LONG_CELL);
    long check = 0;
    for (int i = 0; i < LONG_N; i++)
        check += cells[i];
    assert_int_equal(check, (long)LONG_N * LONG_CELL);
    *serial_attempts = serial;
    return attempts;
}

static void test_a_long_transaction_commits_within_serial_after_plus_one_attempts(void **s)
{
    (void)s;
    int64_t bounds[] = { config.serial_after, 2, 1 };
    for (size_t k = 0; k < sizeof bounds / sizeof bounds[0]; k++) {
        int64_t saved = config.serial_after;
        config.serial_after = bounds[k];
        int serial;
        int attempts = long_reader_attempts((int)bounds[k] + 1, &serial);
        config.serial_after = saved;
        if (attempts > bounds[k] + 1)
            print_error("TMTRACE_SERIAL_AFTER=%lld: %d attempts\n", (long long)bounds[k], attempts);
        assert_true(attempts <= bounds[k] + 1);
        /* The attempt past the bound is serial, and none before it. */
        assert_int_equal(serial, attempts > bounds[k] ? 1 : 0);
    }
}

/* While an irrevocable block runs, no other transaction commits: the version
 * clock and memory stay as the block left them, however long it takes. */
static void test_an_irrevocable_block_runs_alone_and_commits_in_place(void **s)
{
    (void)s;
    static struct { long acct[ACCOUNTS]; } p;
    for (int i = 0; i < ACCOUNTS; i++)
        p.acct[i] = START_BALANCE;
    static struct movers m;
    movers_start(&m, p.acct, ACCOUNTS, 3);
    tmt_tx *tx = tmt_thread_enter();
    /* Counted in the block itself: the movers may run serially too (after
     * TMTRACE_SERIAL_AFTER conflicts on a loaded machine), so the process's
     * serial count can exceed these. */
    volatile int runs = 0, serial_runs = 0;
    for (int round = 0; round < 20; round++) {
        volatile int moved = 0;
        TMT_ATOMIC_FLAGS(tx, "irrevocable", TMT_TX_IRREVOCABLE) {
            runs++;
            serial_runs += tx_is_serial(tx);
            uint64_t clock0 = stm_clock_now();
            long snap[ACCOUNTS];
            for (int i = 0; i < ACCOUNTS; i++)
                snap[i] = tmt_read_long(tx, &p.acct[i]);
            tmt_write_long(tx, &p.acct[0], snap[0] + 5);
            tmt_write_long(tx, &p.acct[1], snap[1] - 5);
            /* Written in place: plain memory already shows it. */
            if (p.acct[0] != snap[0] + 5)
                moved = 1;
            for (int k = 0; k < 200; k++)
                sched_yield(); /* give the writers every chance to run */
            for (int i = 2; i < ACCOUNTS; i++)
                if (__atomic_load_n(&p.acct[i], __ATOMIC_RELAXED) != snap[i])
                    moved = 1;
            if (stm_clock_now() != clock0)
                moved = 1;
        } TMT_END;
        assert_int_equal(moved, 0);
    }
    movers_stop(&m);
    tmt_thread_exit();
    /* Each block ran once, serially: never aborted, never retried. */
    assert_int_equal(runs, 20);
    assert_int_equal(serial_runs, 20);
    long total = 0;
    for (int i = 0; i < ACCOUNTS; i++)
        total += p.acct[i];
    assert_int_equal(total, (long)ACCOUNTS * START_BALANCE);
}

/* A thread that has run a transaction and stays in the process until told
 * to leave: the serial attempts meanwhile are not alone. */
struct joined_peer {
    int ready, leave;
};

static void *joined_peer_run(void *arg)
{
    struct joined_peer *p = arg;
    static long seen;
    tmt_tx *tx = tmt_thread_enter();
    TMT_ATOMIC(tx, "peer") {
        (void)tmt_read_long(tx, &seen);
    } TMT_END;
    __atomic_store_n(&p->ready, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&p->leave, __ATOMIC_SEQ_CST))
        sched_yield();
    tmt_thread_exit();
    return NULL;
}

/* One irrevocable (serial, in-place) transaction of this thread writing
 * `cell`: whether its commit changed the cell's stripe word. */
static int serial_write_changes_stripe(tmt_tx *tx, long *cell)
{
    uintptr_t before = __atomic_load_n(stm_stripe_word((uintptr_t)cell), __ATOMIC_SEQ_CST);
    volatile int serial = 0;
    TMT_ATOMIC_FLAGS(tx, "stamp", TMT_TX_IRREVOCABLE) {
        serial = tx_is_serial(tx);
        tmt_write_long(tx, cell, tmt_read_long(tx, cell) + 1);
    } TMT_END;
    assert_true(serial);
    return __atomic_load_n(stm_stripe_word((uintptr_t)cell), __ATOMIC_SEQ_CST) != before;
}

/* A thread alone in transactions commits in place without touching the
 * stripe table: no other attempt can have read its words before it (none
 * runs, and one that starts meanwhile waits for it and starts at a later
 * version). With another thread in transactions a serial commit stamps the
 * stripes it wrote with its version, as a software commit does. */
static void test_a_lone_serial_commit_stamps_no_stripe_and_a_shared_one_does(void **s)
{
    (void)s;
    static long cell = 1;
    tmt_tx *tx = tmt_thread_enter();
    assert_false(serial_write_changes_stripe(tx, &cell));
    assert_int_equal(cell, 2);
    struct joined_peer peer = { 0, 0 };
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, joined_peer_run, &peer), 0);
    while (!__atomic_load_n(&peer.ready, __ATOMIC_SEQ_CST))
        sched_yield();
    assert_true(serial_write_changes_stripe(tx, &cell));
    assert_int_equal(cell, 3);
    __atomic_store_n(&peer.leave, 1, __ATOMIC_SEQ_CST);
    assert_int_equal(pthread_join(th, NULL), 0);
    tmt_thread_exit();
}

/* A serial attempt writes in place, so retry and cancel must put memory back. */
static void test_cancel_and_retry_undo_an_irrevocable_block(void **s)
{
    (void)s;
    static long v[3] = { 1, 2, 3 };
    static uint8_t b = 7;
    tmt_tx *tx = tmt_thread_enter();
    TMT_ATOMIC_FLAGS(tx, "irrevocable-cancel", TMT_TX_IRREVOCABLE) {
        tmt_write_long(tx, &v[0], 100);
        tmt_write_long(tx, &v[1], 200);
        tmt_write_u8(tx, &b, 9);
        tmt_write_long(tx, &v[0], 300);
        tmt_tx_cancel(tx);
    } TMT_END;
    assert_int_equal(v[0], 1);
    assert_int_equal(v[1], 2);
    assert_int_equal(b, 7);
    volatile int runs = 0;
    TMT_ATOMIC_FLAGS(tx, "irrevocable-retry", TMT_TX_IRREVOCABLE) {
        long seen = tmt_read_long(tx, &v[2]);
        tmt_write_long(tx, &v[2], seen + 10);
        if (++runs == 1)
            tmt_tx_retry(tx);
    } TMT_END;
    assert_int_equal(runs, 2);
    assert_int_equal(v[2], 13);
    tmt_thread_exit();
}

/* ---- privatization safety (the libitm ABI's) --------------------------------- */

struct lingerer {
    long *word;
    int inside, leave, left;
};

/* A software attempt that reads a word, then stays inside until told. */
static void *linger(void *arg)
{
    struct lingerer *l = arg;
    tmt_tx *tx = tmt_thread_enter();
    TMT_ATOMIC(tx, "linger") {
        (void)tmt_read_long(tx, l->word);
        __atomic_store_n(&l->inside, 1, __ATOMIC_SEQ_CST);
        while (!__atomic_load_n(&l->leave, __ATOMIC_SEQ_CST))
            sched_yield();
    } TMT_END;
    __atomic_store_n(&l->left, 1, __ATOMIC_SEQ_CST);
    tmt_thread_exit();
    return NULL;
}

struct waiter {
    tmt_tx *self;
    uint64_t time;
    const int *released; /* the lingering attempt may end once this is set */
    int returned;
    int released_first; /* it was set when the wait returned */
};

static void *wait_older(void *arg)
{
    struct waiter *w = arg;
    txreg_wait_older(w->self, w->time);
    w->released_first = __atomic_load_n(w->released, __ATOMIC_SEQ_CST);
    __atomic_store_n(&w->returned, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

struct leaver {
    long *block;
    uint32_t limbo;        /* its limbo after the commit that freed the block */
    unsigned long fences;  /* stm_fence_others calls while it left */
    int left;
};

/* Frees a block in a transaction, then leaves. */
static void *free_then_leave(void *arg)
{
    struct leaver *l = arg;
    tmt_tx *tx = tmt_thread_enter();
    TMT_ATOMIC(tx, "free") {
        tmt_free(tx, l->block);
    } TMT_END;
    l->limbo = tx->mem.nlimbo;
    unsigned long before = __atomic_load_n(&stm_test_fences, __ATOMIC_SEQ_CST);
    tmt_thread_exit();
    l->fences = __atomic_load_n(&stm_test_fences, __ATOMIC_SEQ_CST) - before;
    __atomic_store_n(&l->left, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* A thread that leaves while another's attempt holds its limbo back waits
 * for that attempt, and fences the other CPUs once, not at every look: each
 * fence interrupts the attempts it waits for. */
static void test_a_leaving_thread_waits_for_its_limbo_and_fences_the_others_once(void **s)
{
    (void)s;
    static long word;
    struct lingerer hold = { .word = &word };
    pthread_t lt, ft;
    assert_int_equal(pthread_create(&lt, NULL, linger, &hold), 0);
    while (!__atomic_load_n(&hold.inside, __ATOMIC_SEQ_CST))
        sched_yield();
    struct leaver l = { .block = malloc(64) };
    assert_non_null(l.block);
    assert_int_equal(pthread_create(&ft, NULL, free_then_leave, &l), 0);
    usleep(50 * 1000);
    assert_false(__atomic_load_n(&l.left, __ATOMIC_SEQ_CST)); /* the lingering attempt started before the free */
    __atomic_store_n(&hold.leave, 1, __ATOMIC_SEQ_CST);
    assert_int_equal(pthread_join(ft, NULL), 0);
    assert_int_equal(pthread_join(lt, NULL), 0);
    assert_int_equal(l.limbo, 1);
    assert_int_equal(l.fences, 1);
}

struct idler {
    long word;
    int joined, go, done, leave;
};

/* An update of d's word, then `said` set, then a wait for `until`. */
static void update_then_wait(tmt_tx *tx, struct idler *d, long v, int *said, const int *until)
{
    TMT_ATOMIC(tx, "update") {
        tmt_write_long(tx, &d->word, v);
    } TMT_END;
    __atomic_store_n(said, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(until, __ATOMIC_SEQ_CST))
        sched_yield();
}

/* Joins with one update, then makes another when told, then idles. */
static void *update_then_idle(void *arg)
{
    struct idler *d = arg;
    tmt_tx *tx = tmt_thread_enter();
    update_then_wait(tx, d, 1, &d->joined, &d->go);
    update_then_wait(tx, d, 2, &d->done, &d->leave);
    tmt_thread_exit();
    return NULL;
}

static void free_one_in_a_transaction(tmt_tx *tx)
{
    void *p = malloc(32);
    assert_non_null(p);
    TMT_ATOMIC(tx, "free-one") {
        tmt_free(tx, p);
    } TMT_END;
}

/* An idle thread announces the latest clock value it has seen: the pass
 * that fences no other CPU frees what was freed before that thread's last
 * commit, where an idle thread used to hold everything back until a pass
 * that fences every CPU. */
static void test_an_idle_thread_holds_back_only_what_was_freed_after_its_last_commit(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    struct idler d = { 0 };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, update_then_idle, &d), 0);
    while (!__atomic_load_n(&d.joined, __ATOMIC_SEQ_CST))
        sched_yield();
    free_one_in_a_transaction(tx); /* before the other's second commit: held back */
    assert_int_equal(tx->mem.nlimbo, 1);
    __atomic_store_n(&d.go, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&d.done, __ATOMIC_SEQ_CST))
        sched_yield();
    /* The frees up to the next pass without fences, each after the other's
     * last commit; that pass frees the first. */
    unsigned long fences = __atomic_load_n(&stm_test_fences, __ATOMIC_SEQ_CST);
    uint32_t next = tx->mem.seen_scan_at;
    assert_true(next > 1 && next < 1024);
    for (uint32_t n = 1; n < next; n++)
        free_one_in_a_transaction(tx);
    assert_int_equal(tx->mem.nlimbo, next - 1);
    assert_int_equal(__atomic_load_n(&stm_test_fences, __ATOMIC_SEQ_CST), fences);
    __atomic_store_n(&d.leave, 1, __ATOMIC_SEQ_CST);
    assert_int_equal(pthread_join(t, NULL), 0);
    tmt_thread_exit();
}

/* With fenced begins, txreg_wait_older returns only once every software
 * attempt that started before the given time has ended; an attempt that
 * started at or after it does not hold it. Switches the process to fenced
 * begins for good, so it runs last. */
static void test_waiting_for_older_attempts_outlasts_exactly_the_attempts_that_started_before(void **s)
{
    (void)s;
    stm_fence_begins();
    static long word, other;
    tmt_tx *tx = tmt_thread_enter();
    struct lingerer old = { .word = &word };
    pthread_t lt, wt;
    assert_int_equal(pthread_create(&lt, NULL, linger, &old), 0);
    while (!__atomic_load_n(&old.inside, __ATOMIC_SEQ_CST))
        sched_yield();
    TMT_ATOMIC(tx, "privatize") {
        tmt_write_long(tx, &other, 1);
    } TMT_END;
    struct waiter w = { .self = tx, .time = stm_clock_now(), .released = &old.leave };
    assert_int_equal(pthread_create(&wt, NULL, wait_older, &w), 0);
    usleep(50 * 1000);
    assert_false(__atomic_load_n(&w.returned, __ATOMIC_SEQ_CST)); /* the lingering attempt started before */
    __atomic_store_n(&old.leave, 1, __ATOMIC_SEQ_CST);
    assert_int_equal(pthread_join(wt, NULL), 0);
    /* Not old.left: the lingerer sets it after its commit, and the wait may
     * return in between. */
    assert_true(w.released_first);
    assert_int_equal(pthread_join(lt, NULL), 0);
    struct lingerer young = { .word = &word };
    assert_int_equal(pthread_create(&lt, NULL, linger, &young), 0);
    while (!__atomic_load_n(&young.inside, __ATOMIC_SEQ_CST))
        sched_yield();
    txreg_wait_older(tx, stm_clock_now()); /* returns while the young attempt runs */
    assert_false(__atomic_load_n(&young.left, __ATOMIC_SEQ_CST));
    __atomic_store_n(&young.leave, 1, __ATOMIC_SEQ_CST);
    assert_int_equal(pthread_join(lt, NULL), 0);
    tmt_thread_exit();
}

int main(void)
{
    tx_lone_in_place = 0; /* one thread's transactions too run the paths under test */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bank_total_is_invariant_with_1_thread),
        cmocka_unit_test(test_bank_total_is_invariant_with_2_threads),
        cmocka_unit_test(test_bank_total_is_invariant_with_4_threads),
        cmocka_unit_test(test_bank_total_is_invariant_with_8_threads),
        cmocka_unit_test(test_no_transaction_ever_sees_two_paired_words_differ),
        cmocka_unit_test(test_narrow_writes_leave_neighbouring_bytes_untouched),
        cmocka_unit_test(test_narrow_reads_see_the_transactions_own_writes),
        cmocka_unit_test(test_narrow_writes_stay_exact_under_concurrent_neighbour_writes),
        cmocka_unit_test(test_read_only_transaction_keeps_no_read_set),
        cmocka_unit_test(test_read_only_reads_never_grow_the_read_set),
        cmocka_unit_test(test_the_accessor_gate_opens_only_inside_software_attempts),
        cmocka_unit_test(test_read_only_block_that_writes_reruns_as_an_update),
        cmocka_unit_test(test_read_of_a_newer_stripe_extends_the_snapshot_when_earlier_reads_still_hold),
        cmocka_unit_test(test_read_of_a_newer_stripe_aborts_with_read_version_when_an_earlier_read_changed),
        cmocka_unit_test(test_read_abort_names_the_programs_call_of_the_read_untraced),
        cmocka_unit_test(test_read_abort_names_the_programs_call_of_the_read_when_accesses_are_traced),
        cmocka_unit_test(test_read_only_block_cannot_extend_and_aborts_with_read_version),
        cmocka_unit_test(test_overwritten_read_set_aborts_at_commit_validation),
        cmocka_unit_test(test_overwritten_read_set_aborts_an_untraced_commit_of_one_word_at_validation),
        cmocka_unit_test(test_overwritten_read_set_aborts_a_traced_commit_of_one_word_at_validation),
        cmocka_unit_test(test_read_of_a_locked_stripe_aborts_with_read_locked),
        cmocka_unit_test(test_commit_that_cannot_lock_a_stripe_aborts_with_commit_locked),
        cmocka_unit_test(test_an_untraced_commit_of_one_or_two_words_aborts_on_a_locked_stripe_of_either),
        cmocka_unit_test(test_a_traced_commit_of_one_or_two_words_aborts_on_a_locked_stripe_of_either),
        cmocka_unit_test(test_a_small_commit_releases_each_stripe_once_whatever_takes_it_next),
        cmocka_unit_test(test_a_block_of_the_stripe_width_shares_one_stripe_and_the_next_does_not),
        cmocka_unit_test(test_a_read_that_meets_a_lock_waits_for_its_release_within_a_bound),
        cmocka_unit_test(test_rewrites_in_a_long_redo_log_merge_into_their_entries),
        cmocka_unit_test(test_an_index_entry_of_an_earlier_transaction_is_never_found),
        cmocka_unit_test(test_a_log_that_cannot_grow_ends_the_process_with_a_line_naming_it),
        cmocka_unit_test(test_large_write_sets_grow_and_commit),
        cmocka_unit_test(test_a_word_appended_as_the_redo_log_grows_is_read_back),
        cmocka_unit_test(test_a_long_transaction_commits_within_serial_after_plus_one_attempts),
        cmocka_unit_test(test_an_irrevocable_block_runs_alone_and_commits_in_place),
        cmocka_unit_test(test_a_lone_serial_commit_stamps_no_stripe_and_a_shared_one_does),
        cmocka_unit_test(test_cancel_and_retry_undo_an_irrevocable_block),
        cmocka_unit_test(test_a_leaving_thread_waits_for_its_limbo_and_fences_the_others_once),
        cmocka_unit_test(test_an_idle_thread_holds_back_only_what_was_freed_after_its_last_commit),
        cmocka_unit_test(test_waiting_for_older_attempts_outlasts_exactly_the_attempts_that_started_before),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
