/*
 * test_htm.c - the hybrid control flow, exercised through the emulated
 * hardware path (this machine has no RTM): retries, fallbacks for each
 * reason, the explicit abort while software transactions run and the wait
 * for them, explicit user aborts, nesting, and atomicity of a bank mixing
 * emulated hardware and software transactions. Also: `auto` without RTM is
 * exactly `off`.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "htm.h"
#include "tmtrace.h"
#include "test_util.h"
#include "trace_file.h"
#include "tb_pool.h"
#include "trace_gen.h"
#include "tx.h"
#include "tx_life.h"
#include "tx_util.h"
#include "tx_registry.h"

static int setup(void **state)
{
    (void)state;
    setenv("TMTRACE_FILE", tu_path("trace.bin"), 1); /* not in the working directory */
    setenv("TMTRACE_EVENTS", "all", 1); /* the records of every access */
    assert_int_equal(tmt_init(), 0);
    return 0;
}

/* Emulation with a chosen abort mix; every test starts from here. */
static int emulate(void **state)
{
    (void)state;
    config.htm = CONFIG_HTM_EMULATE;
    config.htm_retries = 5;
    config.htm_emu_abort_pct = 0;
    config.htm_emu_explicit_pct = 0;
    config.htm_emu_capacity = 4096;
    config.seed = 7;
    return 0;
}

static tmt_stats delta(const tmt_stats *before)
{
    tmt_stats now, d;
    tmt_stats_get(&now);
    d.commits = now.commits - before->commits;
    d.aborts = now.aborts - before->aborts;
    for (unsigned r = 0; r < TMT_ABORT_REASONS; r++)
        d.aborts_by_reason[r] = now.aborts_by_reason[r] - before->aborts_by_reason[r];
    d.htm_commits = now.htm_commits - before->htm_commits;
    d.htm_aborts = now.htm_aborts - before->htm_aborts;
    d.fallbacks = now.fallbacks - before->fallbacks;
    d.serial = now.serial - before->serial;
    return d;
}

/* One increment of *cell with `touches` extra reads; returns the mode the
 * body ran in (of its last attempt). */
static int increment(tmt_tx *tx, long *cell, int touches)
{
    volatile int mode = 0;
    TMT_ATOMIC(tx, "htm-increment") {
        long v = tmt_read_long(tx, cell);
        for (int i = 0; i < touches; i++)
            v += 0 * tmt_read_long(tx, cell);
        tmt_write_long(tx, cell, v + 1);
        mode = tx->mode;
    } TMT_END;
    return mode;
}

/* One increment and what it did to the global statistics. */
struct outcome {
    int mode;
    tmt_stats d;
};

static struct outcome measured_increment(tmt_tx *tx, long *cell, int touches)
{
    tmt_stats before;
    tmt_stats_get(&before);
    struct outcome o;
    o.mode = increment(tx, cell, touches);
    o.d = delta(&before);
    return o;
}

static void test_auto_without_rtm_behaves_exactly_like_off(void **s)
{
    (void)s;
    config.htm = CONFIG_HTM_AUTO;
    tmt_tx *tx = tmt_thread_enter();
    static long cell;
    tmt_stats before;
    tmt_stats_get(&before);
    int mode = 0;
    for (int i = 0; i < 100; i++)
        mode = increment(tx, &cell, 0);
    tmt_stats d = delta(&before);
    assert_int_equal(cell, 100);
    if (htm_rtm_usable()) {
        /* A machine with RTM takes the hardware path under auto. */
        assert_int_equal(htm_path(), TX_MODE_HTM);
    } else {
        assert_int_equal(htm_path(), TX_MODE_NONE);
        assert_int_equal(mode, TX_MODE_STM);
        assert_int_equal(d.htm_commits + d.htm_aborts + d.fallbacks, 0);
        assert_int_equal(d.commits, 100);
        /* Software transactions do not even announce themselves. */
        assert_int_equal(tx->htm.sw_counted, 0);
    }
    tmt_thread_exit();
}

static void test_attempts_without_injected_aborts_commit_in_hardware(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    static long cell;
    struct outcome o = measured_increment(tx, &cell, 3);
    tmt_stats d = o.d;
    assert_int_equal(o.mode, TX_MODE_HTM_EMU);
    assert_int_equal(cell, 1);
    assert_int_equal(d.htm_commits, 1);
    assert_int_equal(d.commits, 1);
    assert_int_equal(d.htm_aborts + d.fallbacks, 0);
    tmt_thread_exit();
}

static void test_conflicts_are_retried_then_fall_back_when_attempts_run_out(void **s)
{
    (void)s;
    config.htm_emu_abort_pct = 100; /* every attempt: CONFLICT|RETRY */
    tmt_tx *tx = tmt_thread_enter();
    static long cell;
    cell = 0;
    struct outcome o = measured_increment(tx, &cell, 20);
    tmt_stats d = o.d;
    assert_int_equal(o.mode, TX_MODE_STM);
    /* The aborted attempts' writes were undone: one increment in all. */
    assert_int_equal(cell, 1);
    assert_int_equal(d.htm_aborts, 5);
    assert_int_equal(d.aborts_by_reason[TMT_ABORT_HTM], 5);
    assert_int_equal(d.fallbacks, 1);
    assert_int_equal(d.htm_commits, 0);
    assert_int_equal(d.commits, 1);
    assert_int_equal(tx->htm.last_status, TMT_HTM_CONFLICT | TMT_HTM_RETRY);
    tmt_thread_exit();
}

static void test_status_without_retry_falls_back_at_once(void **s)
{
    (void)s;
    config.htm_emu_explicit_pct = 100;
    tmt_tx *tx = tmt_thread_enter();
    static long cell;
    struct outcome o = measured_increment(tx, &cell, 20);
    assert_int_equal(o.mode, TX_MODE_STM);
    assert_int_equal(o.d.htm_aborts, 1);
    assert_int_equal(o.d.fallbacks, 1);
    assert_true(tx->htm.last_status & TMT_HTM_EXPLICIT);
    assert_false(tx->htm.last_status & TMT_HTM_RETRY);
    assert_int_equal(tmt_htm_abort_code(tx->htm.last_status), HTM_CODE_EMU_EXPLICIT);
    tmt_thread_exit();
}

static void test_capacity_overflow_falls_back_at_once(void **s)
{
    (void)s;
    config.htm_emu_capacity = 8;
    tmt_tx *tx = tmt_thread_enter();
    static long cell;
    cell = 0;
    struct outcome small = measured_increment(tx, &cell, 2);  /* 4 accesses: fits */
    struct outcome large = measured_increment(tx, &cell, 20); /* 22 accesses: does not */
    assert_int_equal(small.mode, TX_MODE_HTM_EMU);
    assert_int_equal(small.d.htm_aborts, 0);
    assert_int_equal(large.mode, TX_MODE_STM);
    assert_int_equal(cell, 2);
    assert_int_equal(large.d.htm_aborts, 1);
    assert_int_equal(large.d.fallbacks, 1);
    assert_int_equal(tx->htm.last_status, TMT_HTM_CAPACITY);
    tmt_thread_exit();
}

static void test_zero_retries_means_software_only(void **s)
{
    (void)s;
    config.htm_retries = 0;
    tmt_tx *tx = tmt_thread_enter();
    static long cell;
    struct outcome o = measured_increment(tx, &cell, 0);
    assert_int_equal(o.mode, TX_MODE_STM);
    assert_int_equal(o.d.htm_aborts + o.d.htm_commits + o.d.fallbacks, 0);
    tmt_thread_exit();
}

/* ---- software transaction active: explicit abort, wait, retry ------------- */

struct overlap {
    long cell;
    tmt_tx *hw;   /* the thread whose hardware attempt must be refused */
    uint64_t hw_aborts0; /* its descriptor's count before (kept across threads) */
    int hw_ready;
};

static void *software_holder(void *arg)
{
    struct overlap *o = arg;
    tmt_tx *tx = tmt_thread_enter();
    TMT_ATOMIC_FLAGS(tx, "sw-holder", TMT_TX_NO_HTM) {
        tmt_write_long(tx, &o->cell, tmt_read_long(tx, &o->cell) + 10);
        /* Stay inside until the hardware side was refused once (at most
         * ~10 s, so that a broken exclusion fails the test, not hangs it). */
        time_t give_up = time(NULL) + 10;
        while ((!__atomic_load_n(&o->hw_ready, __ATOMIC_ACQUIRE) ||
                __atomic_load_n(&o->hw->stats.htm_aborts, __ATOMIC_RELAXED) == o->hw_aborts0) &&
               time(NULL) < give_up)
            usleep(10);
    } TMT_END;
    tmt_thread_exit();
    return NULL;
}

static void test_software_activity_aborts_hardware_explicitly_and_it_waits(void **s)
{
    (void)s;
    static struct overlap o;
    memset(&o, 0, sizeof o);
    tmt_tx *tx = tmt_thread_enter();
    o.hw = tx;
    o.hw_aborts0 = tx->stats.htm_aborts;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, software_holder, &o), 0);
    tmt_stats before;
    tmt_stats_get(&before);
    /* The holder is inside its software transaction (it announced itself
     * before taking its start version). */
    while (tx_oldest_active_rv() == UINT64_MAX)
        tx_pause();
    __atomic_store_n(&o.hw_ready, 1, __ATOMIC_RELEASE);
    int mode = increment(tx, &o.cell, 0);
    pthread_join(th, NULL);
    tmt_stats d = delta(&before);
    assert_int_equal(mode, TX_MODE_HTM_EMU);
    assert_int_equal(o.cell, 11);
    assert_int_equal(tx->stats.htm_aborts - o.hw_aborts0, 1);
    assert_int_equal(tx->htm.last_status, TMT_HTM_EXPLICIT | (TMT_HTM_CODE_STM_ACTIVE << 24));
    assert_int_equal(d.fallbacks, 0);
    assert_int_equal(d.htm_commits, 1);
    tmt_thread_exit();
}

/* ---- user aborts and nesting inside hardware attempts ------------------------- */

static void test_user_retry_in_hardware_reruns_on_the_software_path(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    static long cell;
    cell = 0;
    volatile int runs = 0, first_mode = 0, last_mode = 0;
    TMT_ATOMIC(tx, "hw-retry") {
        if (runs++ == 0)
            first_mode = tx->mode;
        tmt_write_long(tx, &cell, tmt_read_long(tx, &cell) + 1);
        last_mode = tx->mode;
        if (runs == 1)
            tmt_tx_retry(tx);
    } TMT_END;
    assert_int_equal(first_mode, TX_MODE_HTM_EMU);
    assert_int_equal(last_mode, TX_MODE_STM);
    assert_int_equal(cell, 1);
    assert_int_equal(tmt_htm_abort_code(tx->htm.last_status), HTM_CODE_USER_RETRY);
    tmt_thread_exit();
}

static void test_user_cancel_in_hardware_undoes_and_skips(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    static long cell = 4;
    volatile int runs = 0, mode = 0, after = 0;
    TMT_ATOMIC(tx, "hw-cancel") {
        runs++;
        mode = tx->mode;
        tmt_write_long(tx, &cell, 1000);
        tmt_tx_cancel(tx);
        after = 1;
    } TMT_END;
    assert_int_equal(mode, TX_MODE_HTM_EMU);
    assert_int_equal(runs, 1);
    assert_int_equal(after, 0);
    assert_int_equal(cell, 4);
    tmt_thread_exit();
}

static void test_nested_block_asking_for_the_stm_moves_the_whole_transaction(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    static long cell;
    cell = 0;
    volatile int outer_runs = 0, inner_mode = 0;
    tmt_stats before;
    tmt_stats_get(&before);
    TMT_ATOMIC(tx, "hw-outer") {
        outer_runs++;
        tmt_write_long(tx, &cell, tmt_read_long(tx, &cell) + 1);
        TMT_ATOMIC_FLAGS(tx, "stm-inner", TMT_TX_NO_HTM) {
            inner_mode = tx->mode;
        } TMT_END;
    } TMT_END;
    tmt_stats d = delta(&before);
    assert_int_equal(outer_runs, 2);
    assert_int_equal(inner_mode, TX_MODE_STM);
    assert_int_equal(cell, 1);
    assert_int_equal(d.fallbacks, 1);
    assert_int_equal(d.commits, 1);
    tmt_thread_exit();
}

/* ---- where the event hooks fire ------------------------------------------------ */

/* The records this thread wrote since `from` (the current chunk holds them:
 * a fresh thread's first chunk has room for thousands), expanded from the
 * event path's slots. */
struct recs {
    const struct tf_record *r;
    size_t n;
};

static struct recs since(tmt_tx *tx, const struct tf_slot *from)
{
    /* Compact records take their stamp from the record before them: the
     * chunk is expanded from its start. */
    static struct tf_record out[1 << 16];
    const struct tb_thread *t = &tx->trace;
    size_t n = (size_t)(t->cur - t->base), used;
    uint64_t first = t->chunk ? t->chunk->first_instance : 0;
    long k = tg_slots_expand(t->base, n, NULL, NULL, first, out, NULL, 1 << 16, &used);
    assert_true(k >= 0 && used == n);
    size_t before = tf_slots_records(t->base, (size_t)(from - t->base));
    struct recs got = { out + before, (size_t)k - before };
    return got;
}

static void expect_kinds(struct recs got, const uint8_t *kinds, size_t n)
{
    assert_int_equal(got.n, n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(got.r[i].kind, kinds[i]);
}

static void test_software_attempt_records_start_reads_writes_commit_in_order(void **s)
{
    (void)s;
    config.htm = CONFIG_HTM_OFF;
    tmt_tx *tx = tmt_thread_enter();
    assert_int_equal(tx->trace.level, CONFIG_EVENTS_ALL);
    static long a = 5, b;
    static int32_t c;
    const struct tf_slot *m = tx->trace.cur;
    TMT_ATOMIC(tx, "hooks-sw") {
        long v = tmt_read_long(tx, &a);
        tmt_write_long(tx, &b, v + 1);
        tmt_write_i32(tx, &c, -2);
    } TMT_END;
    struct recs got = since(tx, m);
    static const uint8_t kinds[] = { TF_EV_START, TF_EV_READ, TF_EV_WRITE, TF_EV_WRITE, TF_EV_COMMIT };
    expect_kinds(got, kinds, sizeof kinds);
    const struct tf_record *r = got.r;
    assert_int_equal(r[0].addr, tx->instance);           /* instance id */
    assert_int_equal(r[0].value, 0);                     /* no flags, attempt 0 */
    assert_true(r[1].addr == (uintptr_t)&a && r[1].value == 5 && r[1].reason == 8);
    assert_true(r[2].addr == (uintptr_t)&b && r[2].value == 6 && r[2].reason == 8);
    assert_true(r[3].addr == (uintptr_t)&c && r[3].value == 0xfffffffeu && r[3].reason == 4);
    assert_true(r[4].addr != 0);                         /* the write version */
    assert_int_equal(r[4].value, 1 | (uint64_t)2 << 32); /* 1 read, 2 words written */
    for (size_t i = 0; i < got.n; i++)
        assert_int_equal(r[i].site, tx->site_id);
    tmt_thread_exit();
}

static void test_aborted_software_attempt_records_abort_then_a_retry_start(void **s)
{
    (void)s;
    config.htm = CONFIG_HTM_OFF;
    tmt_tx *tx = tmt_thread_enter();
    const struct tf_slot *m = tx->trace.cur;
    volatile int runs = 0;
    TMT_ATOMIC_FLAGS(tx, "hooks-retry", TMT_TX_READ_ONLY) {
        if (runs++ == 0)
            tmt_tx_retry(tx);
    } TMT_END;
    struct recs got = since(tx, m);
    static const uint8_t kinds[] = { TF_EV_START, TF_EV_ABORT, TF_EV_START, TF_EV_COMMIT };
    expect_kinds(got, kinds, sizeof kinds);
    assert_int_equal(got.r[0].value, TF_START_READ_ONLY);
    assert_int_equal(got.r[1].reason, TMT_ABORT_USER_RETRY);
    assert_int_equal(got.r[2].value, TF_START_READ_ONLY | TF_START_RETRY | (1u << 16));
    assert_int_equal(got.r[2].addr, got.r[0].addr + 1); /* a new instance per attempt */
    assert_int_equal(got.r[3].addr, 0);                 /* read-only: no write version */
    tmt_thread_exit();
}

static void test_hardware_attempts_record_no_accesses_and_fallback_is_recorded(void **s)
{
    (void)s;
    tmt_tx *tx = tmt_thread_enter();
    static long cell;
    const struct tf_slot *m = tx->trace.cur;
    increment(tx, &cell, 2); /* commits in emulated hardware */
    struct recs got = since(tx, m);
    static const uint8_t hw[] = { TF_EV_START, TF_EV_COMMIT };
    expect_kinds(got, hw, sizeof hw);
    assert_int_equal(got.r[0].value, TF_START_HTM_EMU);
    assert_int_equal(got.r[1].addr, 0);

    config.htm_emu_explicit_pct = 100; /* abort without RETRY: fall back at once */
    m = tx->trace.cur;
    increment(tx, &cell, 0);
    got = since(tx, m);
    static const uint8_t fb[] = { TF_EV_START, TF_EV_ABORT, TF_EV_FALLBACK, TF_EV_START,
                                  TF_EV_READ,  TF_EV_WRITE, TF_EV_COMMIT };
    expect_kinds(got, fb, sizeof fb);
    assert_int_equal(got.r[1].reason, TMT_ABORT_HTM);
    assert_int_equal(got.r[1].value, TMT_HTM_EXPLICIT | (HTM_CODE_EMU_EXPLICIT << 24));
    assert_int_equal(got.r[2].reason, TF_FB_NO_RETRY);
    assert_int_equal(got.r[2].value, got.r[1].value);
    assert_int_equal(got.r[3].value, TF_START_RETRY | (1u << 16));
    tmt_thread_exit();
}

/* ---- bank under the hybrid ------------------------------------------------------- */

#define H_ACCOUNTS 16

struct hbank {
    int32_t acct[H_ACCOUNTS]; /* 4-byte accounts: hybrid and sub-word at once */
    int per_thread;
    int running;
    long audits, bad;
    int next;
    unsigned audit_flags;
};

static void hbank_transfer(tmt_tx *tx, struct hbank *b, int from, int to)
{
    TMT_ATOMIC(tx, "hbank-transfer") {
        int32_t f = tmt_read_i32(tx, &b->acct[from]);
        tmt_write_i32(tx, &b->acct[from], f - 3);
        int32_t t = tmt_read_i32(tx, &b->acct[to]);
        tmt_write_i32(tx, &b->acct[to], t + 3);
    } TMT_END;
}

static void *hbank_thread(void *arg)
{
    struct hbank *b = arg;
    int me = __atomic_fetch_add(&b->next, 1, __ATOMIC_RELAXED);
    tmt_tx *tx = tmt_thread_enter();
    uint64_t r = 0x1234567ull * (uint64_t)(me + 1);
    if (me == 0) {
        do {
            volatile int32_t sum = 0;
            TMT_ATOMIC_FLAGS(tx, "hbank-audit", b->audit_flags) {
                sum = 0;
                for (int i = 0; i < H_ACCOUNTS; i++)
                    sum += tmt_read_i32(tx, &b->acct[i]);
            } TMT_END;
            b->audits++;
            b->bad += sum != H_ACCOUNTS * 100;
        } while (__atomic_load_n(&b->running, __ATOMIC_ACQUIRE) > 0 || b->audits < 3);
    } else {
        for (int i = 0; i < b->per_thread; i++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            hbank_transfer(tx, b, (int)(r % H_ACCOUNTS), (int)((r >> 17) % H_ACCOUNTS));
        }
        __atomic_sub_fetch(&b->running, 1, __ATOMIC_RELEASE);
    }
    tmt_thread_exit();
    return NULL;
}

static void hbank_flags(int writers, unsigned audit_flags)
{
    /* The documented default mix. */
    config.htm_emu_abort_pct = 10;
    config.htm_emu_explicit_pct = 2;
    static struct hbank b;
    memset(&b, 0, sizeof b);
    for (int i = 0; i < H_ACCOUNTS; i++)
        b.acct[i] = 100;
    b.per_thread = 20000 / writers;
    b.running = writers;
    b.audit_flags = audit_flags;
    tmt_stats before;
    tmt_stats_get(&before);
    assert_int_equal(tu_run_threads(writers + 1, hbank_thread, &b), 0);
    tmt_stats d = delta(&before);
    int32_t total = 0;
    for (int i = 0; i < H_ACCOUNTS; i++)
        total += b.acct[i];
    assert_int_equal(total, H_ACCOUNTS * 100);
    assert_int_equal(b.bad, 0);
    assert_int_equal(d.commits, (uint64_t)(b.per_thread * writers) + (uint64_t)b.audits);
    /* Both paths really ran. */
    assert_true(d.htm_commits > 0);
    assert_true(d.fallbacks > 0);
    assert_true(d.commits > d.htm_commits);
    if (audit_flags & TMT_TX_IRREVOCABLE)
        assert_int_equal(d.serial, (uint64_t)b.audits);
}

static void hbank(int writers) { hbank_flags(writers, TMT_TX_READ_ONLY); }

/* Serial audits exclude emulated hardware attempts and software ones alike. */
static void test_serial_audits_see_a_consistent_bank_on_the_hybrid(void **s)
{
    (void)s;
    hbank_flags(3, TMT_TX_IRREVOCABLE);
}

/* A nested irrevocable block inside a hardware attempt reruns the whole
 * transaction in serial mode. */
static void test_nested_irrevocable_block_moves_the_transaction_to_serial_mode(void **s)
{
    (void)s;
    config.htm_emu_abort_pct = 0;
    config.htm_emu_explicit_pct = 0;
    tmt_tx *tx = tmt_thread_enter();
    static long cell;
    cell = 0;
    volatile int outer_runs = 0, first_mode = 0, inner_mode = 0;
    tmt_stats before;
    tmt_stats_get(&before);
    TMT_ATOMIC(tx, "hw-outer-serial") {
        if (outer_runs++ == 0)
            first_mode = tx->mode;
        tmt_write_long(tx, &cell, tmt_read_long(tx, &cell) + 1);
        TMT_ATOMIC_FLAGS(tx, "serial-inner", TMT_TX_IRREVOCABLE) {
            inner_mode = tx->mode;
        } TMT_END;
    } TMT_END;
    tmt_stats d = delta(&before);
    assert_int_equal(first_mode, TX_MODE_HTM_EMU);
    assert_int_equal(outer_runs, 2);
    assert_int_equal(inner_mode, TX_MODE_SERIAL);
    assert_int_equal(cell, 1);
    assert_int_equal(d.serial, 1);
    assert_int_equal(d.commits, 1);
    tmt_thread_exit();
}

static void test_bank_is_atomic_on_the_hybrid_with_1_writer(void **s) { (void)s; hbank(1); }
static void test_bank_is_atomic_on_the_hybrid_with_2_writers(void **s) { (void)s; hbank(2); }
static void test_bank_is_atomic_on_the_hybrid_with_4_writers(void **s) { (void)s; hbank(4); }
static void test_bank_is_atomic_on_the_hybrid_with_8_writers(void **s) { (void)s; hbank(8); }

int main(void)
{
    tx_lone_in_place = 0; /* one thread's transactions too run the paths under test */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_auto_without_rtm_behaves_exactly_like_off, emulate),
        cmocka_unit_test_setup(test_attempts_without_injected_aborts_commit_in_hardware, emulate),
        cmocka_unit_test_setup(test_conflicts_are_retried_then_fall_back_when_attempts_run_out, emulate),
        cmocka_unit_test_setup(test_status_without_retry_falls_back_at_once, emulate),
        cmocka_unit_test_setup(test_capacity_overflow_falls_back_at_once, emulate),
        cmocka_unit_test_setup(test_zero_retries_means_software_only, emulate),
        cmocka_unit_test_setup(test_software_activity_aborts_hardware_explicitly_and_it_waits, emulate),
        cmocka_unit_test_setup(test_user_retry_in_hardware_reruns_on_the_software_path, emulate),
        cmocka_unit_test_setup(test_user_cancel_in_hardware_undoes_and_skips, emulate),
        cmocka_unit_test_setup(test_nested_block_asking_for_the_stm_moves_the_whole_transaction, emulate),
        cmocka_unit_test_setup(test_software_attempt_records_start_reads_writes_commit_in_order, emulate),
        cmocka_unit_test_setup(test_aborted_software_attempt_records_abort_then_a_retry_start, emulate),
        cmocka_unit_test_setup(test_hardware_attempts_record_no_accesses_and_fallback_is_recorded, emulate),
        cmocka_unit_test_setup(test_bank_is_atomic_on_the_hybrid_with_1_writer, emulate),
        cmocka_unit_test_setup(test_bank_is_atomic_on_the_hybrid_with_2_writers, emulate),
        cmocka_unit_test_setup(test_bank_is_atomic_on_the_hybrid_with_4_writers, emulate),
        cmocka_unit_test_setup(test_bank_is_atomic_on_the_hybrid_with_8_writers, emulate),
        cmocka_unit_test_setup(test_serial_audits_see_a_consistent_bank_on_the_hybrid, emulate),
        cmocka_unit_test_setup(test_nested_irrevocable_block_moves_the_transaction_to_serial_mode, emulate),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
