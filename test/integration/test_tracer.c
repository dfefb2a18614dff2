/*
 * test_tracer.c - the tracer as a program sees it: transactions written with
 * the public API (tmtrace.h) in a forked child with its own TMTRACE_*
 * environment, the trace read back and checked record by record.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "error.h"
#include "tmtrace.h"
#include "tx_life.h"
#include "tx_registry.h"
#include "trace_file.h"
#include "trace_writer.h"
#include "test_util.h"

/* The child's environment is exactly the settings given (nothing inherited
 * from the test runner can change its configuration), over level all with a
 * stamp per access, which these tests read back. */
static void child_env(const char *const *env)
{
    clearenv();
    putenv((char *)"TMTRACE_EVENTS=all");
    putenv((char *)"TMTRACE_STAMP=each");
    for (; *env; env++)
        putenv((char *)*env);
}

/* Runs in the child before tmt_init when set (e.g. to narrow its CPUs). */
static void (*child_pre_init)(void);

/* The child runs body after tmt_init and exits with its result without
 * calling tmt_shutdown: the trace must be finished at exit. */
static int run_child(const char *const *env, int (*body)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        child_env(env);
        setenv("TMT_KEEP_TMP", "1", 1); /* the parent's temporary directory outlives this exit() */
        if (child_pre_init)
            child_pre_init();
        if (tmt_init() != 0) {
            fprintf(stderr, "child: %s\n", tmt_error());
            exit(90);
        }
        exit(body());
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

struct trace {
    struct tf_header hdr;
    struct tf_event *ev;
    size_t n, cap;
    struct tf_thread_info end[8];
    size_t nend;
    int have_end;
};

static void load(const char *path, struct trace *t)
{
    memset(t, 0, sizeof *t);
    struct tf_reader *r = tf_open(path, 0);
    if (r == NULL)
        fail_msg("%s", error_get());
    t->hdr = *tf_reader_header(r);
    struct tf_chunk c;
    int rc;
    while ((rc = tf_next(r, &c)) == 1) {
        if (c.kind == TF_CHUNK_EVENTS) {
            if (t->n + c.count > t->cap) {
                t->cap = (t->n + c.count) * 2;
                t->ev = realloc(t->ev, t->cap * sizeof *t->ev);
                assert_non_null(t->ev);
            }
            memcpy(t->ev + t->n, c.events, c.count * sizeof *c.events);
            t->n += c.count;
        } else if (c.kind == TF_CHUNK_END) {
            t->have_end = 1;
            t->nend = c.count < 8 ? c.count : 8;
            memcpy(t->end, c.threads, t->nend * sizeof *c.threads);
        }
    }
    if (rc < 0)
        fail_msg("%s", error_get());
    tf_close(r);
}

/* ---- software transactions ---------------------------------------------- */

static volatile long cells[8];

static int body_stm(void)
{
    tmt_tx *tx = tmt_thread_enter();
    if (tx == NULL)
        return 10;
    static volatile int tries;
    for (long i = 0; i < 20; i++) {
        TMT_ATOMIC(tx, "transfer") {
            long a = tmt_read_long(tx, &cells[i % 8]);
            tmt_write_long(tx, &cells[(i + 1) % 8], a + 100 + i);
        } TMT_END;
    }
    tries = 0;
    TMT_ATOMIC(tx, "retry-once") {
        (void)tmt_read_long(tx, &cells[0]);
        if (tries++ == 0)
            tmt_tx_retry(tx);
    } TMT_END;
    TMT_ATOMIC(tx, "cancelled") {
        tmt_write_long(tx, &cells[3], -1);
        tmt_tx_cancel(tx);
    } TMT_END;
    tmt_stats st;
    tmt_stats_get(&st);
    tmt_thread_exit();
    return st.events_dropped == 0 && cells[3] != -1 ? 0 : 11;
}

static void stm_transactions_read_back_in_program_order(void **state)
{
    (void)state;
    char file[300];
    snprintf(file, sizeof file, "TMTRACE_FILE=%s", tu_path("stm.bin"));
    const char *env[] = { file, "TMTRACE_SAMPLE_MS=5", "TMTRACE_HTM=off", NULL };
    int status = run_child(env, body_stm);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct trace t;
    load(tu_path("stm.bin"), &t);
    assert_true(t.have_end);
    /* 20 transfers: START READ WRITE COMMIT; retry: START READ ABORT START READ
     * COMMIT; cancel: START WRITE ABORT. */
    assert_int_equal(t.n, 20 * 4 + 6 + 3);
    for (long i = 0; i < 20; i++) {
        const struct tf_event *e = &t.ev[i * 4];
        assert_int_equal(e[0].kind, TF_EV_START);
        assert_int_equal(e[1].kind, TF_EV_READ);
        assert_int_equal(e[1].addr, (uintptr_t)&cells[i % 8]);
        assert_int_equal(e[1].reason, sizeof(long));
        assert_int_equal(e[2].kind, TF_EV_WRITE);
        assert_int_equal(e[2].addr, (uintptr_t)&cells[(i + 1) % 8]);
        assert_int_equal(e[2].value, e[1].value + 100 + (uint64_t)i); /* the value written */
        assert_int_equal(e[3].kind, TF_EV_COMMIT);
        assert_true(e[3].addr > 0);                       /* write version */
        assert_int_equal(e[3].value, 1 | (uint64_t)1 << 32); /* read set 1, write set 1 */
        for (int k = 1; k < 4; k++)
            assert_int_equal(e[k].instance, e[0].instance);
        if (i > 0)
            assert_true(e[3].addr > t.ev[(i - 1) * 4 + 3].addr); /* TL2 clock advances */
    }
    const struct tf_event *r = &t.ev[80];
    assert_int_equal(r[2].kind, TF_EV_ABORT);
    assert_int_equal(r[2].reason, TMT_ABORT_USER_RETRY);
    assert_int_equal(r[3].kind, TF_EV_START);
    assert_true(r[3].value & TF_START_RETRY);
    assert_int_equal(r[5].kind, TF_EV_COMMIT);
    assert_int_equal(t.ev[88].kind, TF_EV_ABORT);
    assert_int_equal(t.ev[88].reason, TMT_ABORT_USER_CANCEL);
    assert_true(t.ev[0].site != r[0].site); /* sites are told apart */
    size_t total = 0;
    for (size_t i = 0; i < t.nend; i++)
        total += t.end[i].events;
    assert_int_equal(total, t.n);
    free(t.ev);
}

/* ---- serial mode ------------------------------------------------------------ */

static int body_serial(void)
{
    tmt_tx *tx = tmt_thread_enter();
    if (tx == NULL)
        return 10;
    TMT_ATOMIC_FLAGS(tx, "alone", TMT_TX_IRREVOCABLE) {
        long a = tmt_read_long(tx, &cells[0]);
        tmt_write_long(tx, &cells[1], a + 1);
    } TMT_END;
    TMT_ATOMIC(tx, "plain") {
        tmt_write_long(tx, &cells[2], 5);
    } TMT_END;
    tmt_stats st;
    tmt_stats_get(&st);
    tmt_thread_exit();
    return st.serial == 1 && st.events_dropped == 0 ? 0 : 11;
}

/* A serial attempt: START with the serial flag, SERIAL (why, aborts before),
 * its accesses, COMMIT with a write version; the hardware path is skipped
 * (no hardware START) even when it is on. */
static void serial_attempts_are_recorded_with_their_reason(void **state)
{
    (void)state;
    char file[300];
    snprintf(file, sizeof file, "TMTRACE_FILE=%s", tu_path("serial.bin"));
    const char *env[] = { file, "TMTRACE_SAMPLE_MS=5", "TMTRACE_HTM=emulate", "TMTRACE_HTM_EMU_ABORT=0",
                          "TMTRACE_HTM_EMU_EXPLICIT=0", NULL };
    int status = run_child(env, body_serial);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct trace t;
    load(tu_path("serial.bin"), &t);
    assert_int_equal(t.hdr.version, TF_VERSION);
    assert_int_equal(t.n, 5 + 2); /* the hardware attempt records START and COMMIT only */
    assert_int_equal(t.ev[0].kind, TF_EV_START);
    assert_true(t.ev[0].value & TF_START_SERIAL);
    assert_false(t.ev[0].value & (TF_START_HTM | TF_START_HTM_EMU));
    assert_int_equal(t.ev[1].kind, TF_EV_SERIAL);
    assert_int_equal(t.ev[1].reason, TF_SERIAL_REQUESTED);
    assert_int_equal(t.ev[1].addr, 0);
    assert_int_equal(t.ev[2].kind, TF_EV_READ);
    assert_int_equal(t.ev[3].kind, TF_EV_WRITE);
    assert_int_equal(t.ev[4].kind, TF_EV_COMMIT);
    assert_true(t.ev[4].addr > 0);
    assert_int_equal(t.ev[4].value, 1 | (uint64_t)1 << 32);
    /* The next block runs on the (emulated) hardware path again. */
    assert_int_equal(t.ev[5].kind, TF_EV_START);
    assert_true(t.ev[5].value & TF_START_HTM_EMU);
    for (size_t i = 5; i < t.n; i++)
        assert_int_not_equal(t.ev[i].kind, TF_EV_SERIAL);
    free(t.ev);
}

/* A lone thread's transactions: three reads, two writes; whether each
 * attempt ran in place (the head's flag) is the exit status's bits. */
static int body_lone(void)
{
    tx_lone_in_place = 1; /* off for the other tests (main) */
    txreg_lone_after = 0; /* in place from the first (settling: test_api) */
    tmt_tx *tx = tmt_thread_enter();
    if (tx == NULL)
        return 100;
    const struct tmt_tx_head *head = (const struct tmt_tx_head *)(const void *)tx;
    int in_place = 0;
    for (int i = 0; i < 3; i++) {
        volatile int flag = 0;
        TMT_ATOMIC(tx, "lone") {
            flag = head->in_place != 0;
            long a = tmt_read_long(tx, &cells[0]) + tmt_read_long(tx, &cells[1]) + tmt_read_long(tx, &cells[2]);
            tmt_write_long(tx, &cells[3], a + i);
            tmt_write_long(tx, &cells[4], a - i);
        } TMT_END;
        in_place |= flag << i;
    }
    tmt_thread_exit();
    return in_place;
}

/* The events of body_lone at `level`, each attempt START, SERIAL, its
 * accesses when recorded, COMMIT; returns the child's exit status. */
static int lone_trace(const char *level, struct trace *t)
{
    char file[300], events[64];
    snprintf(file, sizeof file, "TMTRACE_FILE=%s", tu_path("lone.bin"));
    snprintf(events, sizeof events, "TMTRACE_EVENTS=%s", level);
    const char *env[] = { file, events, "TMTRACE_SAMPLE_MS=5", NULL };
    int status = run_child(env, body_lone);
    assert_true(WIFEXITED(status));
    load(tu_path("lone.bin"), t);
    return WEXITSTATUS(status);
}

/* A thread alone at `tx` runs in place (its reads are plain loads): each
 * attempt's START says serial, its SERIAL says alone and that its reads are
 * not counted, and its COMMIT gives 0 reads and both writes. At `all` the
 * thread reads through the barrier, and the same attempts record their
 * reads and writes, with counted reads. */
static void a_lone_thread_at_tx_runs_in_place_and_its_serial_says_its_reads_are_uncounted(void **state)
{
    (void)state;
    for (int all = 0; all <= 1; all++) {
        struct trace t;
        int in_place = lone_trace(all ? "all" : "tx", &t);
        assert_int_equal(in_place, all ? 0 : 7);
        size_t per = all ? 2 + 5 + 1 : 3; /* START, SERIAL, (3 reads, 2 writes), COMMIT */
        assert_int_equal(t.n, 3 * per);
        for (size_t a = 0; a < 3; a++) {
            const struct tf_event *e = &t.ev[a * per];
            assert_int_equal(e[0].kind, TF_EV_START);
            assert_true(e[0].value & TF_START_SERIAL);
            assert_int_equal(e[1].kind, TF_EV_SERIAL);
            assert_int_equal(e[1].reason, TF_SERIAL_ALONE);
            assert_int_equal(e[1].value, all ? 0 : TF_SERIAL_UNCOUNTED);
            assert_int_equal(e[per - 1].kind, TF_EV_COMMIT);
            assert_int_equal(e[per - 1].value, (all ? 3 : 0) | (uint64_t)2 << 32);
            if (all) {
                assert_int_equal(e[2].kind, TF_EV_READ);
                assert_int_equal(e[6].kind, TF_EV_WRITE);
            }
        }
        free(t.ev);
    }
}

/* ---- the hardware path ---------------------------------------------------- */

static int body_htm(void)
{
    tmt_tx *tx = tmt_thread_enter();
    if (tx == NULL)
        return 10;
    for (long i = 0; i < 400; i++) {
        TMT_ATOMIC(tx, "hw") {
            long a = tmt_read_long(tx, &cells[i % 8]);
            tmt_write_long(tx, &cells[(i + 3) % 8], a + 1);
        } TMT_END;
    }
    tmt_thread_exit();
    return 0;
}

static void hardware_attempts_have_no_accesses_and_carry_status_and_fallbacks(void **state)
{
    (void)state;
    char file[300];
    snprintf(file, sizeof file, "TMTRACE_FILE=%s", tu_path("htm.bin"));
    const char *env[] = { file, "TMTRACE_SAMPLE_MS=5", "TMTRACE_HTM=emulate", "TMTRACE_HTM_EMU_ABORT=40",
                          "TMTRACE_HTM_EMU_EXPLICIT=10", "TMTRACE_HTM_RETRIES=2", "TMTRACE_SEED=7", NULL };
    int status = run_child(env, body_htm);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct trace t;
    load(tu_path("htm.bin"), &t);
    size_t hw_starts = 0, hw_commits = 0, hw_aborts = 0, fallbacks = 0, stm_after_fallback = 0;
    int in_hw = 0, after_fb = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct tf_event *e = &t.ev[i];
        switch (e->kind) {
        case TF_EV_START:
            in_hw = (e->value & (TF_START_HTM | TF_START_HTM_EMU)) != 0;
            hw_starts += in_hw;
            if (after_fb && !in_hw)
                stm_after_fallback++;
            after_fb = 0;
            break;
        case TF_EV_READ:
        case TF_EV_WRITE:
            if (in_hw)
                fail_msg("event %zu: access recorded inside a hardware attempt", i);
            break;
        case TF_EV_COMMIT:
            hw_commits += in_hw;
            if (in_hw)
                assert_int_equal(e->addr, 0); /* no TL2 version on the hardware path */
            in_hw = 0;
            break;
        case TF_EV_ABORT:
            if (in_hw) {
                assert_int_equal(e->reason, TMT_ABORT_HTM);
                assert_true(e->value != 0); /* the status word */
                hw_aborts++;
            }
            in_hw = 0;
            break;
        case TF_EV_FALLBACK:
            assert_true(e->reason >= TF_FB_NO_RETRY && e->reason <= TF_FB_FLAGS);
            fallbacks++;
            after_fb = 1;
            break;
        }
    }
    assert_true(hw_starts > 100);
    assert_true(hw_commits > 50);
    assert_true(hw_aborts > 20);
    assert_true(fallbacks > 0);
    assert_int_equal(stm_after_fallback, fallbacks); /* each fallback is followed by an STM attempt */
    free(t.ev);
}

/* ---- threads ---------------------------------------------------------------- */

static void *thread_main(void *arg)
{
    (void)arg;
    tmt_tx *tx = tmt_thread_enter();
    for (long i = 0; i < 1000; i++) {
        TMT_ATOMIC(tx, "mt") {
            long a = tmt_read_long(tx, &cells[0]);
            tmt_write_long(tx, &cells[0], a + 1);
        } TMT_END;
    }
    tmt_thread_exit();
    return NULL;
}

static int body_threads(void)
{
    pthread_t a, b;
    pthread_create(&a, NULL, thread_main, NULL);
    pthread_create(&b, NULL, thread_main, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return tmt_shutdown() == 0 ? 0 : 12;
}

/* exit() from one worker while the others run transactions: the atexit
 * shutdown runs beside them. Every worker counts its commits before it
 * records them, so the commits in the trace of each thread plus what the
 * END chunk counts as dropped cover what it did before the trace ended. */
static int exit_started;

static void *exit_worker(void *arg)
{
    int exiter = arg != NULL;
    tmt_tx *tx = tmt_thread_enter();
    /* All three run transactions before one of them exits (a thread that
     * entered after the shutdown would get no descriptor). */
    __atomic_add_fetch(&exit_started, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(&exit_started, __ATOMIC_ACQUIRE) < 3)
        sched_yield();
    for (long i = 0;; i++) {
        TMT_ATOMIC(tx, "exit-race") {
            long a = tmt_read_long(tx, &cells[exiter ? 1 : 2]);
            tmt_write_long(tx, &cells[exiter ? 1 : 2], a + 1);
        } TMT_END;
        if (exiter && i == 3000)
            exit(0);
    }
    return NULL;
}

static int body_exit_from_worker(void)
{
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, exit_worker, i == 0 ? (void *)1 : NULL);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL); /* never returns: worker 0 exits the process */
    return 20;
}

static void exit_from_a_worker_while_others_run_transactions_is_clean(void **state)
{
    (void)state;
    char file[300];
    snprintf(file, sizeof file, "TMTRACE_FILE=%s", tu_path("exit.bin"));
    const char *env[] = { file, "TMTRACE_SAMPLE_MS=5", "TMTRACE_HTM=emulate", "TMTRACE_BUFFER=16k",
                          "TMTRACE_RESAMPLE_MS=1", NULL };
    int status = run_child(env, body_exit_from_worker);
    /* Under TSan a data race makes the child exit 66. */
    if (!WIFEXITED(status))
        fail_msg("child killed by signal %d", WTERMSIG(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    struct trace t;
    load(tu_path("exit.bin"), &t);
    assert_true(t.have_end);
    assert_int_equal(t.nend, 3);
    size_t per[4] = { 0 };
    for (size_t i = 0; i < t.n; i++) {
        assert_true(t.ev[i].thread >= 1 && t.ev[i].thread <= 3);
        per[t.ev[i].thread]++;
    }
    /* Each thread's records in the file are exactly what END says it wrote:
     * none repeated by the shutdown snapshot, none missing. */
    for (size_t k = 0; k < 3; k++)
        assert_int_equal(t.end[k].events, per[t.end[k].id]);
    free(t.ev);
}

static void each_thread_has_its_own_id_and_end_counts_match(void **state)
{
    (void)state;
    char file[300];
    snprintf(file, sizeof file, "TMTRACE_FILE=%s", tu_path("mt.bin"));
    const char *env[] = { file, "TMTRACE_SAMPLE_MS=5", "TMTRACE_HTM=off", "TMTRACE_EVENTS=tx", NULL };
    int status = run_child(env, body_threads);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct trace t;
    load(tu_path("mt.bin"), &t);
    assert_true(t.have_end);
    assert_int_equal(t.nend, 2);
    size_t commits[3] = { 0 }, per[3] = { 0 };
    for (size_t i = 0; i < t.n; i++) {
        assert_true(t.ev[i].thread == 1 || t.ev[i].thread == 2);
        assert_int_not_equal(t.ev[i].kind, TF_EV_READ); /* level tx */
        per[t.ev[i].thread]++;
        commits[t.ev[i].thread] += t.ev[i].kind == TF_EV_COMMIT;
    }
    assert_int_equal(commits[1], 1000);
    assert_int_equal(commits[2], 1000);
    for (size_t k = 0; k < 2; k++)
        assert_int_equal(t.end[k].events, per[t.end[k].id]);
    free(t.ev);
}

/* ---- the writer's figures ------------------------------------------------- */

#define WRITER_TXS 20000 /* 4 records each: about 600 chunks of TMTRACE_BUFFER=4k */

/* The child's stats, mid-run and after shutdown, for the parent to check
 * (an exit status could only say that something differed). */
struct writer_stats {
    tmt_stats during, after;
};

/* A child's figures for the parent to check (an exit status could only say
 * that something differed): 0, or 13 when they could not be written. */
static int save_for_parent(const char *name, const void *p, size_t n)
{
    FILE *f = fopen(tu_path(name), "wb");
    if (f == NULL || fwrite(p, n, 1, f) != 1 || fclose(f) != 0)
        return 13;
    return 0;
}

/* n transactions, 4 records each: start, read, write, commit. */
static void pass_counter(tmt_tx *tx, long n)
{
    for (long i = 0; i < n; i++) {
        TMT_ATOMIC(tx, "counter") {
            long a = tmt_read_long(tx, &cells[i % 8]);
            tmt_write_long(tx, &cells[(i + 1) % 8], a + 1);
        } TMT_END;
    }
}

static int body_writer(void)
{
    tmt_tx *tx = tmt_thread_enter();
    if (tx == NULL)
        return 10;
    pass_counter(tx, WRITER_TXS);
    /* Chunks were handed over all along: give the stream writer up to 5 s
     * to write one and take its CPU time, while this thread stays attached. */
    struct writer_stats ws;
    memset(&ws, 0, sizeof ws);
    for (int ms = 0; ms < 5000; ms++) {
        tmt_stats_get(&ws.during);
        if (ws.during.writer_events > 0 && ws.during.writer_cpu_ns > 0)
            break;
        nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
    }
    tmt_thread_exit();
    if (tmt_shutdown() != 0)
        return 12;
    tmt_stats_get(&ws.after);
    return save_for_parent("writer-stats.bin", &ws, sizeof ws);
}

static void writer_events_cpu_time_and_trace_bytes_match_the_file_written(void **state)
{
    (void)state;
    char file[300];
    snprintf(file, sizeof file, "TMTRACE_FILE=%s", tu_path("writer.bin"));
    const char *env[] = { file, "TMTRACE_SAMPLE_MS=5", "TMTRACE_HTM=off", "TMTRACE_MODE=stream",
                          "TMTRACE_BUFFER=4k", "TMTRACE_WRITER_DEFER=0", NULL };
    int status = run_child(env, body_writer);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    size_t len;
    struct writer_stats *ws = (struct writer_stats *)tu_read_file(tu_path("writer-stats.bin"), &len);
    assert_non_null(ws);
    assert_int_equal(len, sizeof *ws);
    const tmt_stats *d = &ws->during, *a = &ws->after;

    /* While the run goes on: the writer is behind the threads, never ahead. */
    assert_true(d->writer_events > 0);
    assert_true(d->writer_events <= d->events_recorded);
    assert_true(d->writer_cpu_ns > 0);
    assert_true(d->trace_bytes > 0);
    assert_true(d->trace_bytes < a->trace_bytes);

    /* After shutdown: every recorded event is in the file, the CPU time only
     * grew, and the byte count is the file's size to the byte (tail and END
     * chunk included). */
    assert_int_equal(a->events_dropped, 0);
    assert_int_equal(a->writer_events, a->events_recorded);
    assert_true(a->writer_cpu_ns >= d->writer_cpu_ns);
    struct stat st;
    assert_int_equal(stat(tu_path("writer.bin"), &st), 0);
    assert_int_equal(a->trace_bytes, (uint64_t)st.st_size);
    struct trace t;
    load(tu_path("writer.bin"), &t);
    assert_true(t.have_end);
    assert_int_equal(t.n, (size_t)WRITER_TXS * 4);
    assert_int_equal(a->writer_events, t.n);
    free(t.ev);
    free(ws);
}

#define ARENA_TXS 5000 /* 4 records each: 20000 records, 640 KiB, well inside the arena */

/* A child's last step: its thread's stats for the parent, then it leaves. */
static int stats_for_parent(const char *name)
{
    tmt_stats st;
    tmt_stats_get(&st);
    tmt_thread_exit();
    return save_for_parent(name, &st, sizeof st);
}

/* Runs `body` in a child with `env` (the trace in `trace`) and returns the
 * stats it saved under `name` (the caller frees them). */
static tmt_stats *child_stats(const char **env, const char *trace, int (*body)(void), const char *name)
{
    static char file[300];
    snprintf(file, sizeof file, "TMTRACE_FILE=%s", tu_path(trace));
    env[0] = file;
    int status = run_child(env, body);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    size_t len;
    tmt_stats *st = (tmt_stats *)tu_read_file(tu_path(name), &len);
    assert_non_null(st);
    assert_int_equal(len, sizeof *st);
    return st;
}

static int body_arena(void)
{
    tmt_tx *tx = tmt_thread_enter();
    if (tx == NULL)
        return 10;
    pass_counter(tx, ARENA_TXS);
    return stats_for_parent("arena-stats.bin");
}

static void memory_mode_records_into_buffers_populated_at_init(void **state)
{
    (void)state;
    const char *env[] = { NULL, "TMTRACE_SAMPLE_MS=5", "TMTRACE_HTM=off", "TMTRACE_MODE=memory",
                          "TMTRACE_BUFFER=4k", "TMTRACE_PREFAULT=4M", NULL };
    tmt_stats *st = child_stats(env, "arena.bin", body_arena, "arena-stats.bin");
    /* 4 MiB were mapped before the first event and the run needed less: no
     * thread ever mapped a buffer itself, and nothing was mapped beyond
     * the arena but the attached thread's reserve (4 buffers of ~7 KiB). */
    assert_true(st->events_recorded > 0 && st->events_recorded <= (uint64_t)ARENA_TXS * 4);
    assert_int_equal(st->events_dropped, 0);
    assert_int_equal(st->buffer_inline_maps, 0);
    assert_true(st->buffer_bytes >= (4u << 20) - (16u << 10));
    assert_true(st->buffer_bytes <= (4u << 20) + (64u << 10));
    free(st);
}

#define TRANSIENT_THREADS 300

static void *transient_main(void *arg)
{
    (void)arg;
    tmt_tx *tx = tmt_thread_enter();
    if (tx == NULL)
        return (void *)1;
    pass_counter(tx, 1);
    tmt_thread_exit();
    return NULL;
}

/* Threads that each enter, run one transaction and leave, one after the
 * other. */
static int body_transient(void)
{
    for (int i = 0; i < TRANSIENT_THREADS; i++) {
        pthread_t th;
        void *r;
        if (pthread_create(&th, NULL, transient_main, NULL) != 0)
            return 11;
        pthread_join(th, &r);
        if (r != NULL)
            return 10;
    }
    tmt_stats st;
    tmt_stats_get(&st);
    return save_for_parent("transient-stats.bin", &st, sizeof st);
}

static void threads_that_come_and_go_keep_their_records_but_not_a_buffer_each(void **state)
{
    (void)state;
    /* Memory mode keeps what is handed over until exit: a leaving thread
     * that handed over its 1 MiB buffer for 4 records would hold it there,
     * 300 MiB in all. Held instead: the reserve of 4 buffers (a fifth when
     * the writer tops it up while a thread holds one) and 300 copies of
     * 2.7 KiB (the header's room for clock samples, and 4 records). */
    const char *env[] = { NULL, "TMTRACE_SAMPLE_MS=5", "TMTRACE_HTM=off", "TMTRACE_MODE=memory",
                          "TMTRACE_EVENTS=all", "TMTRACE_BUFFER=1M", "TMTRACE_PREFAULT=4M", NULL };
    tmt_stats *st = child_stats(env, "transient.bin", body_transient, "transient-stats.bin");
    assert_int_equal(st->events_dropped, 0);
    assert_int_equal(st->events_recorded, (uint64_t)TRANSIENT_THREADS * 4);
    assert_true(st->buffer_bytes <= (8u << 20));
    free(st);
    struct trace t;
    load(tu_path("transient.bin"), &t);
    assert_true(t.have_end);
    assert_int_equal(t.n, (size_t)TRANSIENT_THREADS * 4);
    /* Each thread's four records, in program order, under its own id. */
    static const unsigned kinds[4] = { TF_EV_START, TF_EV_READ, TF_EV_WRITE, TF_EV_COMMIT };
    for (size_t i = 0; i < t.n; i++) {
        assert_int_equal(t.ev[i].kind, kinds[i % 4]);
        assert_int_equal(t.ev[i].thread, t.ev[i - i % 4].thread);
        if (i % 4 == 0 && i > 0)
            assert_int_not_equal(t.ev[i].thread, t.ev[i - 4].thread);
    }
    free(t.ev);
}

/* Bursts of 8192 transactions (32768 records, 8 buffers of 64 KiB) with a
 * pause after each: a steady recording rate that the writer can follow. */
#define STEADY_BURSTS 60
#define STEADY_BURST_TXS 8192
#define STEADY_BUFFER (64u << 10)

static int body_steady(void)
{
    tmt_tx *tx = tmt_thread_enter();
    if (tx == NULL)
        return 10;
    for (int i = 0; i < STEADY_BURSTS; i++) {
        pass_counter(tx, STEADY_BURST_TXS);
        nanosleep(&(struct timespec){ 0, 5000000 }, NULL);
    }
    return stats_for_parent("steady-stats.bin");
}

static void a_steady_all_level_run_takes_its_buffers_from_the_writers_reserve(void **state)
{
    (void)state;
    /* Memory mode recycles nothing: every buffer is a fresh one, mapped by
     * the writer ahead of demand or by the thread when the reserve is dry. */
    const char *env[] = { NULL, "TMTRACE_SAMPLE_MS=5", "TMTRACE_HTM=off", "TMTRACE_MODE=memory",
                          "TMTRACE_EVENTS=all", "TMTRACE_BUFFER=64k", "TMTRACE_PREFAULT=256k", NULL };
    tmt_stats *st = child_stats(env, "steady.bin", body_steady, "steady-stats.bin");
    assert_int_equal(st->events_dropped, 0);
    /* Counted per buffer handed over: all but the last one's (at most a
     * buffer of compact, 16-byte records). */
    assert_true(st->events_recorded + STEADY_BUFFER / sizeof(struct tf_slot) >=
                (uint64_t)STEADY_BURSTS * STEADY_BURST_TXS * 4);
    /* A burst takes 8 buffers (16 bytes a record; more where a record
     * cannot be compact): a fixed reserve of 4 runs dry in each one and the
     * thread maps many of its buffers itself. A reserve sized from the rate
     * is mapped by the writer during the pauses: the thread maps only while
     * it grows, in the first bursts. Memory mode frees nothing, so the
     * buffers held are the buffers used. */
    uint64_t used = st->buffer_bytes / STEADY_BUFFER;
    assert_true(used >= 450);
    assert_true(st->buffer_inline_maps * 16 <= used);
    /* The run takes less than a second: whatever the thread mapped, it
     * mapped before the steady state that buffer_late_maps counts. */
    assert_int_equal(st->buffer_late_maps, 0);
    free(st);
}

/* Bursts that need more buffers than the reserve the thread found when it
 * entered, made only after the first second: every buffer the thread maps
 * itself then counts as mapped in steady state. */
static int body_late(void)
{
    nanosleep(&(struct timespec){ 1, 100000000 }, NULL);
    tmt_tx *tx = tmt_thread_enter();
    if (tx == NULL)
        return 10;
    for (int i = 0; i < 4; i++)
        pass_counter(tx, STEADY_BURST_TXS);
    return stats_for_parent("late-stats.bin");
}

static void no_refill(void) { tb_pool_test_no_refill(1); }

static void buffers_a_thread_maps_a_second_after_init_count_as_late_maps(void **state)
{
    (void)state;
    /* Nothing tops the reserve up: the 4 buffers of the thread's reserve
     * run dry in the first burst, and the thread maps the rest itself. */
    const char *env[] = { NULL, "TMTRACE_SAMPLE_MS=5", "TMTRACE_HTM=off", "TMTRACE_MODE=memory",
                          "TMTRACE_EVENTS=all", "TMTRACE_BUFFER=64k", "TMTRACE_PREFAULT=256k", NULL };
    child_pre_init = no_refill;
    tmt_stats *st = child_stats(env, "late.bin", body_late, "late-stats.bin");
    child_pre_init = NULL;
    assert_int_equal(st->events_dropped, 0);
    assert_true(st->buffer_inline_maps > 0);
    assert_int_equal(st->buffer_late_maps, st->buffer_inline_maps);
    free(st);
}

/* Records into memory (nothing is written during the run) and saves the
 * stats before and after tmt_shutdown. */
static int body_exit_cpu(void)
{
    tmt_tx *tx = tmt_thread_enter();
    if (tx == NULL)
        return 10;
    pass_counter(tx, 200000);
    tmt_stats st[2];
    tmt_stats_get(&st[0]);
    tmt_thread_exit();
    if (tmt_shutdown() != 0)
        return 11;
    tmt_stats_get(&st[1]);
    return save_for_parent("exit-cpu-stats.bin", st, sizeof st);
}

static void the_tracers_cpu_time_counts_the_writing_at_exit(void **state)
{
    (void)state;
    static char file[300];
    snprintf(file, sizeof file, "TMTRACE_FILE=%s", tu_path("exit-cpu.bin"));
    const char *env[] = { file, "TMTRACE_SAMPLE_MS=5", "TMTRACE_HTM=off", "TMTRACE_MODE=memory", NULL };
    int status = run_child(env, body_exit_cpu);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    size_t len;
    tmt_stats *st = (tmt_stats *)tu_read_file(tu_path("exit-cpu-stats.bin"), &len);
    assert_non_null(st);
    assert_int_equal(len, 2 * sizeof *st);
    /* Before shutdown: init and a writer that wrote nothing. After: the
     * 800 000 records encoded at exit too, far more than a millisecond. */
    assert_true(st[0].tracer_cpu_ns > 0 && st[0].tracer_cpu_ns >= st[0].writer_cpu_ns);
    assert_int_equal(st[0].writer_events, 0);
    assert_true(st[1].writer_events >= 800000);
    assert_true(st[1].tracer_cpu_ns >= st[0].tracer_cpu_ns + 1000000);
    free(st);
}

/* The child may run on one CPU only, which its one traced thread uses. */
static void one_cpu(void)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0)
        exit(91);
}

/* WRITER_TXS transactions in 150 bursts 2 ms apart: about 0.3 s in which
 * the thread records in every one of the writer's looks (one per 20-50 ms)
 * without ever filling the populated pool. */
static void record_steadily(tmt_tx *tx)
{
    for (int i = 0; i < 150; i++) {
        pass_counter(tx, WRITER_TXS / 150);
        nanosleep(&(struct timespec){ 0, 2000000 }, NULL);
    }
}

/* Waits up to 5 s for the writer to have written every event handed over
 * (a thread's exit hands over its last chunk: the count can still grow). */
static void wait_written(tmt_stats *st)
{
    for (int ms = 0; ms < 5000; ms++) {
        tmt_stats_get(st);
        if (st->writer_events >= st->events_recorded)
            break;
        nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
    }
}

static int body_defer(void)
{
    tmt_tx *tx = tmt_thread_enter();
    if (tx == NULL)
        return 10;
    record_steadily(tx);
    struct writer_stats ws;
    memset(&ws, 0, sizeof ws);
    tmt_stats_get(&ws.during);
    tmt_thread_exit();
    /* No thread runs now: the writer catches up without waiting for the end. */
    wait_written(&ws.after);
    return save_for_parent("defer-stats.bin", &ws, sizeof ws);
}

static int body_idle(void)
{
    tmt_tx *tx = tmt_thread_enter();
    if (tx == NULL)
        return 10;
    pass_counter(tx, WRITER_TXS);
    /* Attached but recording nothing (as a main thread in pthread_join):
     * the CPU is free, so the writer writes what was handed over. */
    struct writer_stats ws;
    memset(&ws, 0, sizeof ws);
    tmt_stats_get(&ws.during);
    wait_written(&ws.after);
    tmt_thread_exit();
    return save_for_parent("idle-stats.bin", &ws, sizeof ws);
}

/* What a busy writer took: its CPU time while the thread recorded without
 * a pause for SHARE_RUN_NS on the one CPU, against that wall time. */
#define SHARE_RUN_NS 3000000000ll
struct share_run {
    tmt_stats during;
    int64_t wall_ns;
    uint64_t writer_mapped_in_share; /* tw_test_mapped_in_share, during the run */
};

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static int body_share(void)
{
    tmt_tx *tx = tmt_thread_enter();
    if (tx == NULL)
        return 10;
    struct share_run sr;
    int64_t t0 = mono_ns();
    while (mono_ns() - t0 < SHARE_RUN_NS)
        pass_counter(tx, 2048);
    tmt_stats_get(&sr.during);
    sr.wall_ns = mono_ns() - t0;
    sr.writer_mapped_in_share = tw_test_mapped_in_share();
    tmt_thread_exit();
    return save_for_parent("share-stats.bin", &sr, sizeof sr);
}

static void one_cpu_no_refill(void)
{
    one_cpu();
    tb_pool_test_no_refill(1); /* the writer's CPU time is then its writing alone */
}

/* body_share's figures, once its child (exit `status`) is done. */
static struct share_run *share_stats(int status)
{
    child_pre_init = NULL;
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    size_t len;
    struct share_run *sr = (struct share_run *)tu_read_file(tu_path("share-stats.bin"), &len);
    assert_non_null(sr);
    assert_int_equal(len, sizeof *sr);
    return sr;
}

/* The share is TMTRACE_WRITER_SHARE, here under a third of the default's,
 * over a run long enough that the default's tenth would break the bound
 * (the bound's slack absorbs a loaded machine's scheduling). */
#define SHARE_PCT 3
static int run_child_stderr(const char *const *env, int (*body)(void), char *err, size_t cap);

/* body_share in a child (`pre` runs before tmt_init) at level all with
 * boundary stamps, 64k buffers, the writer at nice 0 and a share of
 * SHARE_PCT, the trace in `trace`, with the settings `memory` (prefault,
 * memory, deferral); its figures, and its stderr in `err` unless NULL. */
static struct share_run *share_run_at_all(const char *trace, const char *const memory[3], void (*pre)(void),
                                          char *err, size_t cap)
{
    char file[300], share[64];
    snprintf(file, sizeof file, "TMTRACE_FILE=%s", tu_path(trace));
    snprintf(share, sizeof share, "TMTRACE_WRITER_SHARE=%d", SHARE_PCT);
    const char *env[] = { file, share, "TMTRACE_SAMPLE_MS=5", "TMTRACE_HTM=off", "TMTRACE_MODE=stream",
                          "TMTRACE_EVENTS=all", "TMTRACE_BUFFER=64k", memory[0], memory[1], memory[2],
                          "TMTRACE_STAMP=boundary", "TMTRACE_WRITER_NICE=0", NULL };
    child_pre_init = pre;
    return share_stats(err ? run_child_stderr(env, body_share, err, cap) : run_child(env, body_share));
}

static void with_no_cpu_to_spare_the_writer_takes_at_most_TMTRACE_WRITER_SHARE_of_one(void **state)
{
    (void)state;
    /* Recording every access with boundary stamps, without a pause, gives
     * the writer more to do than a tenth of a CPU can: at the thread's own
     * priority, with no share kept, it took 29 % of the wall time. */
    static const char *const memory[3] = { "TMTRACE_PREFAULT=0", "TMTRACE_MEMORY=128M", "TMTRACE_WRITER_DEFER=0" };
    struct share_run *sr = share_run_at_all("share.bin", memory, one_cpu_no_refill, NULL, 0);
    assert_true(sr->during.writer_events > 0);
    /* The share of the wall time, and one window's worth of slack (the
     * chunk that crosses the share, the writer's start). */
    if (sr->during.writer_cpu_ns > (uint64_t)(sr->wall_ns * SHARE_PCT / 100 + 150000000ll))
        fail_msg("writer CPU %llu ns over %lld ns of wall time", (unsigned long long)sr->during.writer_cpu_ns,
                 (long long)sr->wall_ns);
    free(sr);
}

/* Runs `body` in a child confined to one CPU, the trace in `trace`, stream
 * mode with deferral on; returns the writer_stats it saved as `stats`. */
static struct writer_stats *one_cpu_run(const char *trace, int (*body)(void), const char *stats)
{
    char file[300];
    snprintf(file, sizeof file, "TMTRACE_FILE=%s", tu_path(trace));
    const char *env[] = { file, "TMTRACE_SAMPLE_MS=5", "TMTRACE_HTM=off", "TMTRACE_MODE=stream",
                          "TMTRACE_BUFFER=4k", "TMTRACE_WRITER_DEFER=64M", NULL };
    child_pre_init = one_cpu;
    int status = run_child(env, body);
    child_pre_init = NULL;
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    size_t len;
    struct writer_stats *ws = (struct writer_stats *)tu_read_file(tu_path(stats), &len);
    assert_non_null(ws);
    assert_int_equal(len, sizeof *ws);
    return ws;
}

static void a_deferring_writer_maps_buffers_while_memory_allows_and_writes_when_it_does_not(void **state)
{
    (void)state;
    const uint64_t limit = 64u << 20;
    /* The CPUs are the program's and the backlog is small: defer as long as
     * the pool may map another chunk (its advice says whether it is short
     * of chunks with no room left; on memory the kernel has at hand, mapping
     * one costs less than encoding it). */
    assert_int_equal(tw_test_defer_rule(1u << 20, limit, 0, 1), 1);
    /* Short of chunks with TMTRACE_MEMORY reached: only writing frees one. */
    assert_int_equal(tw_test_defer_rule(1u << 20, limit, 1, 1), 0);
    /* The backlog reached its limit, or a CPU is free: write. */
    assert_int_equal(tw_test_defer_rule(limit, limit, 0, 1), 0);
    assert_int_equal(tw_test_defer_rule(1u << 20, limit, 0, 0), 0);
}

/* TMTRACE_CODEC=auto: each way measured once first, stored as encoded
 * first; then the one that cost the writer less CPU per record, the other
 * one chunk in 64, whether or not a CPU is to spare (the rule has no such
 * input: a compression on an idle CPU is tracer CPU all the same). */
static void codec_auto_takes_the_cheaper_way_and_tries_the_other_one_chunk_in_64(void **state)
{
    (void)state;
    assert_int_equal(tw_test_auto_pick(0, 0, 1), 0);
    assert_int_equal(tw_test_auto_pick(100, 0, 2), 1);
    unsigned packed = 0, plain = 0;
    for (unsigned nth = 3; nth < 3 + 64 * 10; nth++) {
        packed += (unsigned)tw_test_auto_pick(100, 300, nth); /* stored is cheaper */
        plain += (unsigned)!tw_test_auto_pick(300, 100, nth); /* compressed is cheaper */
    }
    assert_int_equal(packed, 10);
    assert_int_equal(plain, 10);
    assert_int_equal(tw_test_auto_pick(100, 300, 64), 1);
    assert_int_equal(tw_test_auto_pick(100, 300, 65), 0);
}

/* TMTRACE_CODEC=auto's cost figure: the first chunk sets it; a chunk that
 * cost three times as much (a direct write, a host's preemption) moves it
 * by an eighth, not by half; a cheaper one takes it halfway down at once. */
static void codec_auto_lets_one_dear_chunk_move_its_figure_little_and_a_cheap_one_much(void **state)
{
    (void)state;
    assert_int_equal(tw_test_auto_next(0, 1600), 1600);
    assert_int_equal(tw_test_auto_next(0, 0), 1);
    assert_int_equal(tw_test_auto_next(1600, 4800), 1800);
    assert_int_equal(tw_test_auto_next(1600, 800), 1200);
    /* Ten dear chunks in a row do raise it: a codec that became dearer is
     * seen so within tens of chunks. */
    uint64_t c = 1600;
    for (int i = 0; i < 10; i++)
        c = tw_test_auto_next(c, 4800);
    assert_true(c > 3000 && c < 4800);
}

static void an_attached_thread_that_records_nothing_leaves_the_writer_free(void **state)
{
    (void)state;
    struct writer_stats *ws = one_cpu_run("idle.bin", body_idle, "idle-stats.bin");
    /* Written while the thread was still attached. */
    assert_true(ws->during.events_recorded > 0);
    assert_true(ws->after.writer_events >= ws->during.events_recorded);
    free(ws);
}

static void while_every_cpu_runs_a_traced_thread_the_writer_defers_until_one_exits(void **state)
{
    (void)state;
    struct writer_stats *ws = one_cpu_run("defer.bin", body_defer, "defer-stats.bin");
    /* Hundreds of full buffers were handed over while the thread recorded
     * (all but the last, which holds at most 4096 bytes of 16-byte
     * records), and none was written: the writer did not take the CPU
     * from it. */
    assert_true(ws->during.events_recorded >= (uint64_t)(WRITER_TXS / 150) * 150 * 4 - 4096 / sizeof(struct tf_slot));
    assert_int_equal(ws->during.writer_events, 0);
    /* Once it exited, everything it recorded was written. */
    assert_int_equal(ws->after.writer_events, ws->after.events_recorded);
    assert_int_equal(ws->after.events_dropped, 0);
    struct trace t;
    load(tu_path("defer.bin"), &t);
    assert_true(t.have_end);
    assert_int_equal(t.n, (size_t)(WRITER_TXS / 150) * 150 * 4);
    free(t.ev);
    free(ws);
}

static void a_writer_cpu_outside_the_affinity_mask_fails_init(void **state)
{
    (void)state;
    char file[300];
    snprintf(file, sizeof file, "TMTRACE_FILE=%s", tu_path("wcpu.bin"));
    const char *bad[] = { file, "TMTRACE_SAMPLE_MS=1", "TMTRACE_WRITER_CPU=1023", NULL };
    int status = run_child(bad, body_arena);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 90);
    const char *good[] = { file, "TMTRACE_SAMPLE_MS=1", "TMTRACE_HTM=off", "TMTRACE_WRITER_CPU=0", NULL };
    status = run_child(good, body_arena);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---- drops said at exit ---------------------------------------------------- */

#define DROP_TXS 20000 /* 80000 records, 1.25 MiB of compact ones */

static int body_drop(void)
{
    tmt_tx *tx = tmt_thread_enter();
    if (tx == NULL)
        return 10;
    pass_counter(tx, DROP_TXS);
    return 0; /* the line comes at exit */
}

/* run_child with the child's stderr read into `err` (NUL-terminated). */
static int run_child_stderr(const char *const *env, int (*body)(void), char *err, size_t cap)
{
    int fds[2];
    int pid = tu_fork_piped(fds);
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[1]);
        /* The grandchild's stderr is the pipe; _exit: the test's temporary
         * directory is the parent's to remove. */
        _exit(run_child(env, body) == 0 ? 0 : 70);
    }
    size_t n = 0;
    ssize_t got;
    while (n + 1 < cap && (got = read(fds[0], err + n, cap - 1 - n)) > 0)
        n += (size_t)got;
    err[n] = '\0';
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

/* The one line of `err` that says events were dropped; fails unless there
 * is exactly one. */
static const char *drop_line(const char *err)
{
    const char *line = strstr(err, " events dropped: ");
    if (line == NULL || strstr(line + 1, " events dropped: ") != NULL)
        fail_msg("not one line of dropped events on stderr:\n%s", err);
    while (line > err && line[-1] != '\n')
        line--;
    return line;
}

/* The count the line names, the records the trace holds: together, every
 * event the program produced. */
static void check_drop_count(const char *line, const char *trace)
{
    const char *num = strstr(line, ".bin: ");
    assert_non_null(num);
    unsigned long long dropped = strtoull(num + 6, NULL, 10);
    struct trace t;
    load(tu_path(trace), &t);
    if (dropped == 0 || dropped + t.n != (unsigned long long)DROP_TXS * 4)
        fail_msg("%llu dropped + %zu in the trace != %d events", dropped, t.n, DROP_TXS * 4);
    free(t.ev);
}

/* body_drop into the trace `name` with the settings `memory` (mode, buffer,
 * memory); its stderr in `err`. At share 100 no attempt is shed (recorded
 * with fewer events), so that every event is either in the trace or
 * counted dropped. */
static void drop_run(const char *name, const char *const memory[3], char *err, size_t cap)
{
    char file[300];
    snprintf(file, sizeof file, "TMTRACE_FILE=%s", tu_path(name));
    const char *env[] = { file, "TMTRACE_SAMPLE_MS=5", "TMTRACE_HTM=off", "TMTRACE_WRITER_SHARE=100",
                          memory[0], memory[1], memory[2], NULL };
    int status = run_child_stderr(env, body_drop, err, cap);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The same run with the refill thread on and the writer deferring (its
 * backlog may grow to 256M beyond a 1M arena populated at init): the
 * chunks the thread fills must be mapped and populated during the run, which
 * takes the refill thread more than the share (29 % of the CPU here without
 * it). The refill thread keeps to a share of its own, the writer to its
 * own, and what the refill thread cannot map the thread drops; it never
 * maps a chunk itself once the first second is over (with the share not
 * held to, here, it maps thousands). At level all it sheds its attempts'
 * reads and writes before it drops: the attempts it records without them
 * carry their write sets, and a thread that dropped had shed first. */
static void with_no_cpu_to_spare_the_refill_threads_mapping_counts_in_the_share_and_the_thread_sheds_then_drops(
    void **state)
{
    (void)state;
    char err[4096];
    static const char *const memory[3] = { "TMTRACE_PREFAULT=1M", "TMTRACE_MEMORY=2G", "TMTRACE_WRITER_DEFER=256M" };
    struct share_run *sr = share_run_at_all("share-refill.bin", memory, one_cpu, err, sizeof err);
    if (sr->during.writer_cpu_ns > (uint64_t)(sr->wall_ns * 2 * SHARE_PCT / 100 + 2 * 150000000ll))
        fail_msg("writer and refill CPU %llu ns over %lld ns of wall time",
                 (unsigned long long)sr->during.writer_cpu_ns, (long long)sr->wall_ns);
    assert_int_equal(sr->during.buffer_late_maps, 0);
    /* A build that records slowly (under a sanitizer) may leave the refill
     * thread enough within its share: then nothing is dropped. Otherwise the
     * exit line names the share, not TMTRACE_MEMORY, which was never
     * reached. */
    if (sr->during.events_dropped > 0) {
        const char *line = drop_line(err);
        assert_non_null(strstr(line, "kept to TMTRACE_WRITER_SHARE=3% of a CPU"));
        assert_non_null(strstr(line, "raise TMTRACE_PREFAULT"));
        assert_null(strstr(line, "TMTRACE_MEMORY"));
    } else if (strstr(err, "dropped") != NULL) {
        fail_msg("nothing dropped, but stderr says: %s", err);
    }
    struct tu_trace_counts tc;
    assert_int_equal(tu_count_trace(tu_path("share-refill.bin"), &tc), 0);
    if (sr->during.events_dropped > 0)
        assert_true(tc.shed > 0);
    if (tc.shed > 0)
        assert_true(tc.shed_wsets > 0);
    assert_int_equal(tc.shed_accesses, 0);
    /* Counted as they start (those that went to the discard area too), and
     * named at exit. */
    assert_true(sr->during.attempts_shed >= tc.shed);
    if (sr->during.attempts_shed > 0)
        assert_non_null(strstr(err, "attempts recorded without their reads and writes (shed"));
    else
        assert_null(strstr(err, "shed"));
    free(sr);
}

/* The writer past its deferral and its room (TMTRACE_WRITER_DEFER=0: the
 * pool may not grow beyond what tmt_init populated before it writes), a
 * thread that records faster than a share of 3 encodes, one CPU: the
 * writer gives each chunk it wrote back to the pool and leaves the mapping
 * of fresh ones to the refill thread, spending its own share on encoding.
 * When it mapped too (a pool topped up after each chunk written), it spent
 * two thirds of its share at `all` populating fresh memory (docs/tracer.md,
 * "The tracer's share of a CPU"). */
static void with_no_cpu_to_spare_the_writer_spends_its_share_writing_and_the_refill_thread_maps(void **state)
{
    (void)state;
    static const char *const memory[3] = { "TMTRACE_PREFAULT=1M", "TMTRACE_MEMORY=2G", "TMTRACE_WRITER_DEFER=0" };
    struct share_run *sr = share_run_at_all("share-give-back.bin", memory, one_cpu, NULL, 0);
    assert_true(sr->during.writer_events > 0);
    if (sr->writer_mapped_in_share != 0)
        fail_msg("the writer mapped %llu chunks while the share bound",
                 (unsigned long long)sr->writer_mapped_in_share);
    free(sr);
}

static void a_process_that_dropped_events_names_the_count_and_the_variable_at_exit(void **state)
{
    (void)state;
    char err[4096];
    static const char *const small[3] = { "TMTRACE_MODE=memory", "TMTRACE_BUFFER=64k", "TMTRACE_MEMORY=512k" };
    drop_run("drop-memory.bin", small, err, sizeof err);
    const char *line = drop_line(err);
    assert_non_null(strstr(line, "raise TMTRACE_MEMORY"));
    assert_non_null(strstr(line, "TMTRACE_WRITER_SHARE")); /* the writer's share decides how fast buffers drain */
    assert_null(strstr(line, "TMTRACE_BUFFER"));
    check_drop_count(line, "drop-memory.bin");
    /* Not even one buffer fits: every event is dropped, and the line says
     * which of the two to change. */
    static const char *const none[3] = { "TMTRACE_MODE=stream", "TMTRACE_BUFFER=1M", "TMTRACE_MEMORY=65536" };
    drop_run("drop-none.bin", none, err, sizeof err);
    line = drop_line(err);
    assert_non_null(strstr(line, "TMTRACE_MEMORY=64k cannot hold one buffer of TMTRACE_BUFFER=1M"));
    check_drop_count(line, "drop-none.bin");
}

static void a_process_that_dropped_nothing_says_nothing_at_exit(void **state)
{
    (void)state;
    char err[4096];
    static const char *const enough[3] = { "TMTRACE_MODE=memory", "TMTRACE_BUFFER=64k", "TMTRACE_MEMORY=8M" };
    drop_run("drop-no.bin", enough, err, sizeof err);
    if (strstr(err, "dropped") != NULL)
        fail_msg("stderr without drops: %s", err);
}

int main(void)
{
    tx_lone_in_place = 0; /* the records counted are a software attempt's, one thread's too */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stm_transactions_read_back_in_program_order),
        cmocka_unit_test(serial_attempts_are_recorded_with_their_reason),
        cmocka_unit_test(a_lone_thread_at_tx_runs_in_place_and_its_serial_says_its_reads_are_uncounted),
        cmocka_unit_test(hardware_attempts_have_no_accesses_and_carry_status_and_fallbacks),
        cmocka_unit_test(each_thread_has_its_own_id_and_end_counts_match),
        cmocka_unit_test(exit_from_a_worker_while_others_run_transactions_is_clean),
        cmocka_unit_test(writer_events_cpu_time_and_trace_bytes_match_the_file_written),
        cmocka_unit_test(memory_mode_records_into_buffers_populated_at_init),
        cmocka_unit_test(threads_that_come_and_go_keep_their_records_but_not_a_buffer_each),
        cmocka_unit_test(a_steady_all_level_run_takes_its_buffers_from_the_writers_reserve),
        cmocka_unit_test(buffers_a_thread_maps_a_second_after_init_count_as_late_maps),
        cmocka_unit_test(the_tracers_cpu_time_counts_the_writing_at_exit),
        cmocka_unit_test(with_no_cpu_to_spare_the_writer_takes_at_most_TMTRACE_WRITER_SHARE_of_one),
        cmocka_unit_test(
            with_no_cpu_to_spare_the_refill_threads_mapping_counts_in_the_share_and_the_thread_sheds_then_drops),
        cmocka_unit_test(with_no_cpu_to_spare_the_writer_spends_its_share_writing_and_the_refill_thread_maps),
        cmocka_unit_test(while_every_cpu_runs_a_traced_thread_the_writer_defers_until_one_exits),
        cmocka_unit_test(a_deferring_writer_maps_buffers_while_memory_allows_and_writes_when_it_does_not),
        cmocka_unit_test(codec_auto_takes_the_cheaper_way_and_tries_the_other_one_chunk_in_64),
        cmocka_unit_test(codec_auto_lets_one_dear_chunk_move_its_figure_little_and_a_cheap_one_much),
        cmocka_unit_test(an_attached_thread_that_records_nothing_leaves_the_writer_free),
        cmocka_unit_test(a_writer_cpu_outside_the_affinity_mask_fails_init),
        cmocka_unit_test(a_process_that_dropped_events_names_the_count_and_the_variable_at_exit),
        cmocka_unit_test(a_process_that_dropped_nothing_says_nothing_at_exit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
