/*
 * test_trace_buffer.c - the tracer's buffers, writer and life cycle driven
 * through the event hooks the runtime calls (tb_ev_*), each case in a forked
 * child with its own TMTRACE_* environment, the trace read back with the
 * format module's reader.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock_sample.h"
#include "config.h"
#include "error.h"
#include "site.h"
#include "tb_threads.h"
#include "trace_buffer.h"
#include "trace_file.h"
#include "trace_writer.h"
#include "tracer.h"
#include "test_util.h"
#include "trace_gen.h"

extern char **environ;

/* ---- running a traced child -------------------------------------------- */

/* Sets the child's TMTRACE_* environment: NULL-terminated "NAME=VALUE". */
static void child_env(const char *const *env)
{
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; *e; e++)
            if (strncmp(*e, "TMTRACE_", 8) == 0) {
                char name[128];
                snprintf(name, sizeof name, "%.*s", (int)strcspn(*e, "="), *e);
                unsetenv(name);
                again = 1;
                break;
            }
    }
    for (; *env; env++)
        putenv((char *)*env);
}

/* Runs body in a child that loaded the config and started the tracer; the
 * child exits with body's result. Returns the child's wait status. */
static int run_child(const char *const *env, int (*body)(void *), void *arg)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        child_env(env);
        if (config_load() != 0 || tracer_init() != 0) {
            fprintf(stderr, "child: %s\n", error_get());
            _exit(90);
        }
        int rc = body(arg);
        if (tracer_shutdown() != 0) {
            fprintf(stderr, "child shutdown: %s\n", error_get());
            _exit(91);
        }
        _exit(rc);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

/* Runs body traced into tu_path(name) with short sampling phases and up to
 * three more settings (NULL = none); returns the child's wait status. */
static int trace_child(const char *name, const char *a, const char *b, const char *c, int (*body)(void *),
                       void *arg)
{
    char file[300];
    snprintf(file, sizeof file, "TMTRACE_FILE=%s", tu_path(name));
    /* Level all with a stamp per access unless a, b or c say otherwise. */
    const char *env[] = { file, "TMTRACE_SAMPLE_MS=5", "TMTRACE_EVENTS=all", "TMTRACE_STAMP=each", a, b, c, NULL };
    return run_child(env, body, arg);
}

static void assert_child_ok(int status)
{
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("child status %#x", status);
}

/* ---- reading a trace back ------------------------------------------------- */

struct readback {
    struct tf_header hdr;
    struct tf_event *ev;
    size_t nev, capev;
    struct tf_sample *smp;
    size_t nsmp, capsmp;
    struct tf_thread_info end[16];
    size_t nend;
    int have_end;
    uint64_t writer_errors;
    int threads_before_events; /* every EVENTS chunk came after its thread's META_THREADS */
    char site_label[128];
    int error;                 /* tf_next returned -1 */
    struct tf_skew skew[8];
    size_t nskew;
    uint64_t stack_lo, stack_hi;   /* thread 1's stack (META_THREADS) */
};

static void grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return;
    *cap = need * 2;
    *p = realloc(*p, *cap * size);
    assert_non_null(*p);
}

static void read_trace(const char *path, struct readback *rb)
{
    memset(rb, 0, sizeof *rb);
    rb->threads_before_events = 1;
    struct tf_reader *r = tf_open(path, 0);
    if (r == NULL)
        fail_msg("%s", error_get());
    rb->hdr = *tf_reader_header(r);
    uint32_t announced[64] = { 0 };
    struct tf_chunk c;
    int rc;
    while ((rc = tf_next(r, &c)) == 1) {
        switch (c.kind) {
        case TF_CHUNK_EVENTS:
            if (c.thread >= 64 || !announced[c.thread])
                rb->threads_before_events = 0;
            grow((void **)&rb->ev, &rb->capev, rb->nev + c.count, sizeof *rb->ev);
            memcpy(rb->ev + rb->nev, c.events, c.count * sizeof *c.events);
            rb->nev += c.count;
            break;
        case TF_CHUNK_SAMPLES:
            grow((void **)&rb->smp, &rb->capsmp, rb->nsmp + c.count, sizeof *rb->smp);
            memcpy(rb->smp + rb->nsmp, c.samples, c.count * sizeof *c.samples);
            rb->nsmp += c.count;
            break;
        case TF_CHUNK_META_THREADS:
            for (size_t i = 0; i < c.count; i++)
                if (c.threads[i].id < 64)
                    announced[c.threads[i].id] = 1;
            for (size_t i = 0; i < c.count; i++)
                if (c.threads[i].id == 1) {
                    rb->stack_lo = c.threads[i].stack_lo;
                    rb->stack_hi = c.threads[i].stack_hi;
                }
            break;
        case TF_CHUNK_META_SITES:
            if (c.count > 0)
                snprintf(rb->site_label, sizeof rb->site_label, "%s", c.sites[0].label);
            break;
        case TF_CHUNK_META_SKEW:
            rb->nskew = c.count < 8 ? c.count : 8;
            memcpy(rb->skew, c.skews, rb->nskew * sizeof *c.skews);
            break;
        case TF_CHUNK_END:
            rb->have_end = 1;
            rb->nend = c.count < 16 ? c.count : 16;
            memcpy(rb->end, c.threads, rb->nend * sizeof *c.threads);
            rb->writer_errors = c.writer_errors;
            break;
        }
    }
    rb->error = rc < 0;
    tf_close(r);
}

static void free_trace(struct readback *rb)
{
    free(rb->ev);
    free(rb->smp);
}

/* ---- bodies ----------------------------------------------------------------- */

static tmt_site the_site = TMT_SITE_INIT("round-trip");
static long cells[4];

/* One transaction of every record kind, then a second that aborts. */
static int body_every_kind(void *arg)
{
    (void)arg;
    struct tb_thread t;
    if (tb_attach(&t) != 0)
        return 10;
    uint32_t site = site_id(&the_site);
    tb_ev_start(&t, site, 1, TF_START_HTM_EMU, 0);
    tb_ev_abort(&t, TMT_ABORT_HTM, 0, TMT_HTM_CONFLICT | TMT_HTM_RETRY);
    tb_ev_fallback(&t, TF_FB_ATTEMPTS, TMT_HTM_CONFLICT | TMT_HTM_RETRY);
    tb_ev_start(&t, site, 2, TF_START_RETRY, 16383); /* the largest attempt a compact START holds */
    tb_ev_read(&t, &cells[0], 41, 8);
    tb_ev_write(&t, &cells[1], 0xdeadbeef, 4);
    tb_ev_abort(&t, TMT_ABORT_READ_VERSION, 0x1234, 0);
    tb_ev_start(&t, site, 3, TF_START_RETRY, 16384); /* a full START */
    tb_ev_read(&t, &cells[2], 7, 1);
    tb_ev_commit(&t, 99, 1, 0);
    tb_detach(&t);
    return tracer_events_recorded() == 10 && tracer_events_dropped() == 0 ? 0 : 11;
}

struct expect {
    uint8_t kind, reason;
    uint64_t addr, value, instance;
};

static void every_record_kind_round_trips_through_the_file(void **state)
{
    (void)state;
    assert_child_ok(trace_child("kinds.bin", NULL, NULL, NULL, body_every_kind, NULL));
    struct readback rb;
    read_trace(tu_path("kinds.bin"), &rb);
    const uint32_t st = TMT_HTM_CONFLICT | TMT_HTM_RETRY;
    const struct expect want[] = {
        { TF_EV_START, 0, 1, TF_START_HTM_EMU, 1 },
        { TF_EV_ABORT, TMT_ABORT_HTM, 0, st, 1 },
        { TF_EV_FALLBACK, TF_FB_ATTEMPTS, 0, st, 1 },
        { TF_EV_START, 0, 2, TF_START_RETRY | (uint64_t)16383 << 16, 2 },
        { TF_EV_READ, 8, (uintptr_t)&cells[0], 41, 2 },
        { TF_EV_WRITE, 4, (uintptr_t)&cells[1], 0xdeadbeef, 2 },
        { TF_EV_ABORT, TMT_ABORT_READ_VERSION, 0x1234, 0, 2 },
        { TF_EV_START, 0, 3, TF_START_RETRY | (uint64_t)16384 << 16, 3 },
        { TF_EV_READ, 1, (uintptr_t)&cells[2], 7, 3 },
        { TF_EV_COMMIT, 0, 99, 1, 3 },
    };
    assert_false(rb.error);
    assert_int_equal(rb.nev, 10);
    uint64_t last = 0;
    for (size_t i = 0; i < rb.nev; i++) {
        const struct tf_event *e = &rb.ev[i];
        assert_int_equal(e->kind, want[i].kind);
        assert_int_equal(e->reason, want[i].reason);
        assert_int_equal(e->addr, want[i].addr);
        assert_int_equal(e->value, want[i].value);
        assert_int_equal(e->instance, want[i].instance);
        assert_int_equal(e->seq, i);
        assert_int_equal(e->thread, 1);
        assert_int_equal(e->site, 1);
        assert_int_equal(e->truth, 0); /* nothing injected */
        assert_true(e->ts >= last);
        last = e->ts;
    }
    assert_true(rb.threads_before_events);
    /* the thread's stack, taken at attach: the forked child ran the body on
     * its main thread, whose stack is a copy of this one's */
    if ((uintptr_t)&rb < rb.stack_lo || (uintptr_t)&rb >= rb.stack_hi)
        fail_msg("stack [0x%llx, 0x%llx) does not hold %p", (unsigned long long)rb.stack_lo,
                 (unsigned long long)rb.stack_hi, (void *)&rb);
    assert_string_equal(rb.site_label, "round-trip");
    assert_true(rb.have_end);
    assert_int_equal(rb.nend, 1);
    assert_int_equal(rb.end[0].events, 10);
    assert_int_equal(rb.end[0].dropped, 0);
    assert_int_equal(rb.writer_errors, 0);
    assert_int_equal(rb.hdr.events_level, CONFIG_EVENTS_ALL);
    assert_int_equal(rb.hdr.stripes_log2, config.stripes_log2); /* tmcheck hashes stripes with it */
    assert_true(rb.hdr.tsc_hz > 100000000u);
    assert_int_equal(rb.hdr.flags & TF_HDR_INJECTED, 0);
    /* Every record, commits included, takes the cheap stamp where the CPU
     * has rdpid (only the rare SERIAL record waits). */
    assert_int_equal(rb.hdr.version, TF_VERSION);
    assert_int_equal(rb.hdr.stamp_access, clock_has_rdpid() ? TF_STAMP_UNORDERED : TF_STAMP_ORDERED);
    assert_int_equal(rb.hdr.stamp_boundary, clock_has_rdpid() ? TF_STAMP_UNORDERED : TF_STAMP_ORDERED);
    assert_int_equal(rb.hdr.stamp_commit, clock_has_rdpid() ? TF_STAMP_UNORDERED : TF_STAMP_ORDERED);
    assert_true(rb.hdr.stamp_flags & TF_STAMP_CPU_INCREASING);
    free_trace(&rb);
}

static void boundary_stamps_make_reads_and_writes_repeat_the_previous_stamp(void **state)
{
    (void)state;
    assert_child_ok(
        trace_child("boundary.bin", "TMTRACE_STAMP=boundary", NULL, NULL, body_every_kind, NULL));
    struct readback rb;
    read_trace(tu_path("boundary.bin"), &rb);
    assert_int_equal(rb.nev, 10);
    size_t repeated = 0;
    for (size_t i = 1; i < rb.nev; i++) {
        const struct tf_event *e = &rb.ev[i];
        if (e->kind == TF_EV_READ || e->kind == TF_EV_WRITE) {
            assert_int_equal(e->ts, rb.ev[i - 1].ts);
            assert_int_equal(e->cpu, rb.ev[i - 1].cpu);
            repeated++;
        } else {
            assert_true(e->ts > rb.ev[i - 1].ts); /* boundaries read the clock */
        }
    }
    assert_int_equal(repeated, 3);
    assert_int_equal(rb.hdr.stamp_access, TF_STAMP_REPEATED); /* tmcheck's temporal rule reads it */
    free_trace(&rb);
}

/* Pins the calling thread to the CPU it runs on and attaches it to the
 * tracer: 0, 9 when it cannot be pinned, 10 when it cannot attach. */
/* The thread's records so far in its current chunk, expanded from the
 * event path's slots (with the truth column when the clock is injected);
 * returns how many. */
static struct tf_record chunk_recs[1 << 17];
static uint64_t chunk_truth[1 << 17];

static size_t chunk_records(const struct tb_thread *t)
{
    size_t used;
    long n = tg_slots_expand(t->base, (size_t)(t->cur - t->base), t->truth, NULL,
                             t->chunk ? t->chunk->first_instance : 0, chunk_recs,
                             t->truth ? chunk_truth : NULL, sizeof chunk_recs / sizeof chunk_recs[0], &used);
    return n < 0 ? 0 : (size_t)n;
}

/* The k-th last record of the chunk (1: the last one). */
static const struct tf_record *last_rec(const struct tb_thread *t, size_t k)
{
    size_t n = chunk_records(t);
    return n >= k ? &chunk_recs[n - k] : &chunk_recs[0];
}

static int pin_and_attach(struct tb_thread *t)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0)
        return 9;
    return tb_attach(t) != 0 ? 10 : 0;
}

/* On one CPU: a stamp at or below the thread's previous one (by at most
 * TB_RAISE_MAX ticks) becomes previous + 1 and is counted; a larger step
 * back is recorded as read. The record before it is stamped ahead of the
 * clock by hand (tb_access_late with a later stamp) to stand for one whose
 * rdtsc was taken late against the next one's, as an unordered rdtsc may
 * be (in-run samples are off: their clock_gettime would carry the next
 * stamp past the moved one). */
static int body_raise(void *arg)
{
    (void)arg;
    struct tb_thread t;
    int pinned = pin_and_attach(&t);
    if (pinned != 0)
        return pinned;
    /* A slow build or a preemption may let the clock pass the moved stamp
     * before the read is stamped (then nothing is raised): try again. */
    int rc = 12;
    for (int i = 0; i < 1000 && rc == 12; i++) {
        tb_ev_start(&t, 1, (uint64_t)i + 1, 0, 0);
        uint64_t ahead = t.last_tsc + 4000;
        (void)tb_access_late(&t, TF_EV_READ, 8, (uint64_t)(uintptr_t)&cells[1], 3, ahead, t.last_aux);
        uint64_t before = tb_total_raised();
        tb_ev_read(&t, &cells[0], 1, 8);
        uint64_t got = last_rec(&t, 1)->tsc;
        if (last_rec(&t, 2)->tsc != ahead)
            rc = 15; /* the record before was not stamped as asked */
        else if (got <= ahead)
            rc = 11; /* recorded at or below the previous stamp */
        else if (tb_total_raised() != before)
            rc = got == ahead + 1 && tb_total_raised() == before + 1 ? 0 : 11;
        tb_ev_commit(&t, 0, 2, 0);
    }
    tb_ev_start(&t, 1, 5000, 0, 0);
    uint64_t raised = tb_total_raised();
    (void)tb_access_late(&t, TF_EV_READ, 8, (uint64_t)(uintptr_t)&cells[1], 3, t.last_tsc + 1000000000u,
                         t.last_aux);
    tb_ev_write(&t, &cells[0], 2, 8);
    if (rc == 0 && (last_rec(&t, 1)->tsc >= last_rec(&t, 2)->tsc || tb_total_raised() != raised))
        rc = 13; /* a step back of a second is recorded as read */
    tb_ev_commit(&t, 0, 1, 1);
    tb_detach(&t);
    if (rc == 0 && tracer_stamps_raised() != raised)
        rc = 14; /* still counted once the thread left */
    return rc;
}

static void a_stamp_that_would_go_back_on_its_cpu_is_raised_and_counted(void **state)
{
    (void)state;
    assert_child_ok(trace_child("raise.bin", "TMTRACE_RESAMPLE_MS=0", NULL, NULL, body_raise, NULL));
}

/* Reads and writes of 1, 2, 4 or 8 bytes on the CPU of the record before
 * them, within TF_ACCESS_STEP_MAX ticks of it, take one slot, and so do
 * starts and commits within TF_BOUNDARY_STEP_MAX ticks; anything else takes
 * two; both expand back to exactly what was recorded. */
static int body_compact(void *arg)
{
    (void)arg;
    struct tb_thread t;
    int pinned = pin_and_attach(&t);
    if (pinned != 0)
        return pinned;
    tb_ev_start(&t, 3, 1, 0, 0);
    const struct tf_slot *from = t.cur;
    tb_ev_read(&t, &cells[0], 7, 8);                                /* compact */
    tb_ev_write(&t, &cells[1], 0xffffffffffffffffull, 8);           /* compact */
    tb_ev_read(&t, (char *)&cells[2] + 1, 0x42, 1);                 /* compact */
    tb_ev_read(&t, &cells[2], 0x123456, 3);                         /* odd size: full */
    tb_ev_write(&t, (void *)(uintptr_t)(UINT64_C(1) << 50), 9, 8);  /* high address: full */
    struct timespec nap = { 0, 2000000 };
    nanosleep(&nap, NULL);
    tb_ev_read(&t, &cells[3], 5, 4);                                /* 2 ms later: full */
    size_t slots = (size_t)(t.cur - from);
    size_t n = chunk_records(&t);
    if (n < 7)
        return 12;
    const struct tf_record *r = &chunk_recs[n - 7];
    /* Which accesses were compact follows from what was recorded: with
     * boundary stamps (step 0, one CPU) the three that fit and the last one;
     * with a stamp each, those that fit and came on the START's CPU within
     * TF_ACCESS_STEP_MAX ticks of the record before (a sanitizer's slow
     * build may take longer), never the one 2 ms later. */
    size_t want_slots = 0;
    for (int i = 1; i <= 6; i++)
        want_slots += tf_access_fits(r[i].addr, r[i].reason) && r[i].aux == r[i - 1].aux &&
                              r[i].tsc - r[i - 1].tsc <= TF_ACCESS_STEP_MAX
                          ? 1
                          : 2;
    if (slots != want_slots || (!t.stamp_each && slots != 3 + 2 + 2 + 1))
        return 11;
    static const struct { uint8_t kind, size; uint64_t value; } want[6] = {
        { TF_EV_READ, 8, 7 }, { TF_EV_WRITE, 8, 0xffffffffffffffffull }, { TF_EV_READ, 1, 0x42 },
        { TF_EV_READ, 3, 0x123456 }, { TF_EV_WRITE, 8, 9 }, { TF_EV_READ, 4, 5 },
    };
    const uint64_t addr[6] = { (uintptr_t)&cells[0], (uintptr_t)&cells[1], (uintptr_t)&cells[2] + 1,
                               (uintptr_t)&cells[2], UINT64_C(1) << 50, (uintptr_t)&cells[3] };
    for (int i = 0; i < 6; i++) {
        const struct tf_record *a = &r[i + 1];
        if (a->kind != want[i].kind || a->reason != want[i].size || a->value != want[i].value ||
            a->addr != addr[i] || a->site != 3 || a->aux != r[0].aux)
            return 13 + i;
        if (t.stamp_each ? a->tsc <= r[i].tsc : a->tsc != r[0].tsc)
            return 20; /* one CPU (pinned): every stamp after the one before, or the START's */
    }
    if (t.stamp_each && r[6].tsc - r[5].tsc <= TF_ACCESS_STEP_MAX)
        return 21;
    tb_ev_commit(&t, 77, 4, 2);
    /* A START and a COMMIT right after the record before them: one slot each. */
    const struct tf_slot *at = t.cur;
    tb_ev_start(&t, 9, 2, TF_START_RETRY | TF_START_READ_ONLY, 1);
    tb_ev_commit(&t, 0, 70000, 3); /* a read set of 65536 or more: full */
    if (t.cur - at != 1 + 2)
        return 22;
    n = chunk_records(&t);
    r = &chunk_recs[n - 3];
    if (r[0].kind != TF_EV_COMMIT || r[0].addr != 77 || r[0].value != tf_commit_value(4, 2) || r[0].site != 3 ||
        r[1].kind != TF_EV_START || r[1].site != 9 || r[1].addr != 2 || r[1].aux != r[0].aux ||
        r[1].value != tf_start_value(TF_START_RETRY | TF_START_READ_ONLY, 1) || r[1].tsc <= r[0].tsc ||
        r[2].kind != TF_EV_COMMIT || r[2].site != 9 || r[2].value != tf_commit_value(70000, 3))
        return 23;
    tb_detach(&t);
    return 0;
}

static void accesses_close_to_the_record_before_them_take_one_slot_and_expand_exactly(void **state)
{
    (void)state;
    for (int boundary = 0; boundary < 2; boundary++) {
        assert_child_ok(trace_child("compact.bin", "TMTRACE_RESAMPLE_MS=0",
                                    boundary ? "TMTRACE_STAMP=boundary" : "TMTRACE_STAMP=each", NULL,
                                    body_compact, NULL));
        struct readback rb;
        read_trace(tu_path("compact.bin"), &rb);
        assert_false(rb.error);
        assert_int_equal(rb.nev, 10);
        assert_int_equal(rb.ev[1].addr, (uintptr_t)&cells[0]);
        assert_int_equal(rb.ev[8].site, 9);
        assert_int_equal(rb.ev[8].instance, 2);
        assert_int_equal(rb.ev[2].value, 0xffffffffffffffffull);
        assert_int_equal(rb.ev[5].addr, UINT64_C(1) << 50);
        free_trace(&rb);
    }
}

static void a_slot_stream_that_starts_compact_or_ends_mid_record_is_refused(void **state)
{
    (void)state;
    struct tf_slot s[3];
    struct tf_record full = { .kind = TF_EV_START, .tsc = 100, .aux = 1, .site = 2, .addr = 5 };
    memcpy(&s[0], &full, sizeof full);
    s[2].head = tf_access_head(1, 4, 17, 0x1000);
    s[2].value = 6;
    struct tf_record out[3];
    size_t used;
    assert_int_equal(tg_slots_expand(s, 3, NULL, NULL, 0, out, NULL, 3, &used), 2);
    assert_true(out[1].kind == TF_EV_WRITE && out[1].reason == 4 && out[1].tsc == 117 && out[1].aux == 1 &&
                out[1].site == 2 && out[1].addr == 0x1000 && out[1].value == 6);
    assert_int_equal(tf_slots_records(s, 3), 2);
    assert_int_equal(tg_slots_expand(&s[2], 1, NULL, NULL, 0, out, NULL, 3, &used), -1); /* no record before */
    assert_int_equal(used, 0);
    assert_int_equal(tg_slots_expand(&s[2], 1, NULL, &full, 0, out, NULL, 3, &used), 1); /* given one */
    assert_int_equal(tg_slots_expand(s, 1, NULL, NULL, 0, out, NULL, 3, &used), -1);     /* cut */
    /* compact START and COMMIT after a full record */
    /* every flag bit and the largest attempt a compact START holds */
    s[1].head = tf_start_head(TF_START_RETRY | TF_START_DETAIL | TF_START_SHED, 1000, 7, 16383);
    s[1].value = 6;
    s[2].head = tf_commit_head(TF_BOUNDARY_STEP_MAX, 65535, 1);
    s[2].value = 99;
    struct tf_slot t3[4];
    memcpy(t3, &full, sizeof full);
    t3[2] = s[1];
    t3[3] = s[2];
    assert_int_equal(tg_slots_expand(t3, 4, NULL, NULL, 0, out, NULL, 3, &used), 3);
    assert_true(out[1].kind == TF_EV_START && out[1].tsc == 1100 && out[1].site == 7 && out[1].addr == 6 &&
                out[1].value == tf_start_value(TF_START_RETRY | TF_START_DETAIL | TF_START_SHED, 16383) &&
                out[1].aux == 1 && out[1].reason == 0);
    assert_true(out[2].kind == TF_EV_COMMIT && out[2].tsc == 1100 + TF_BOUNDARY_STEP_MAX && out[2].site == 7 &&
                out[2].addr == 99 && out[2].value == tf_commit_value(65535, 1));
    s[0].head = 0; /* kind 0 */
    assert_int_equal(tg_slots_expand(s, 3, NULL, NULL, 0, out, NULL, 3, &used), -1);
}

/* Under an injected clock 10% slow, stamps a tick apart must still strictly
 * increase on one CPU: the truth of each read below is raised to the
 * previous one + 1 (the previous stamp moved ahead by hand, as in
 * body_raise), and 10% of such pairs round to one injected tick. */
static int body_inject_slow(void *arg)
{
    (void)arg;
    struct tb_thread t;
    int pinned = pin_and_attach(&t);
    if (pinned != 0)
        return pinned;
    int rc = 0, pairs = 0;
    for (int i = 0; i < 200 && rc == 0; i++) {
        tb_ev_start(&t, 1, (uint64_t)i + 1, 0, 0);
        /* Each pair of reads starts 4000 ticks behind a moved stamp, so
         * that both are raised even where a read takes a thousand ticks (a
         * sanitizer's build). */
        for (int k = 0; k < 10; k += 2) {
            uint32_t aux;
            t.last_raw = clock_rdtscp(&aux) + 4000;
            tb_ev_read(&t, &cells[0], 1, 8);
            tb_ev_read(&t, &cells[0], 1, 8);
        }
        /* Expanded after the reads: expanding takes longer than the 4000 ticks. */
        size_t n = chunk_records(&t);
        for (size_t k = n - 9; k < n; k++)
            if (chunk_truth[k] == chunk_truth[k - 1] + 1) {
                pairs++;
                if (chunk_recs[k].tsc <= chunk_recs[k - 1].tsc)
                    rc = 11; /* the injected clock stood still or went back */
            }
        tb_ev_commit(&t, 0, 1, 0);
    }
    tb_detach(&t);
    return rc == 0 && pairs < 100 ? 12 : rc; /* too few pairs a tick apart to tell */
}

static void an_injected_slow_clock_keeps_a_cpus_stamps_increasing(void **state)
{
    (void)state;
    char skew[4096] = "TMTRACE_SKEW=";
    long n = sysconf(_SC_NPROCESSORS_CONF);
    for (long c = 0; c < n && c < 128; c++)
        snprintf(skew + strlen(skew), sizeof skew - strlen(skew), "%s%ld:0:-100000", c ? "," : "", c);
    assert_child_ok(trace_child("inject.bin", "TMTRACE_RESAMPLE_MS=0", skew, NULL, body_inject_slow, NULL));
}

static void level_tx_records_no_reads_or_writes(void **state)
{
    (void)state;
    /* The body expects 10 records; under tx it sees 7, so it reports 11. */
    int status = trace_child("tx.bin", "TMTRACE_EVENTS=tx", NULL, NULL, body_every_kind, NULL);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 11);
    struct readback rb;
    read_trace(tu_path("tx.bin"), &rb);
    assert_int_equal(rb.nev, 7);
    for (size_t i = 0; i < rb.nev; i++) {
        assert_int_not_equal(rb.ev[i].kind, TF_EV_READ);
        assert_int_not_equal(rb.ev[i].kind, TF_EV_WRITE);
    }
    assert_int_equal(rb.hdr.events_level, CONFIG_EVENTS_TX);
    free_trace(&rb);
}

/* At tx, 300 attempts that each end in a read-only commit right after
 * their START, a third of them shed and a third chosen by TMTRACE_DETAIL
 * (flags of their own, in a compact START too): the COMMIT folds into the
 * START's slot, unless the START's
 * instance is not the one before it plus one (attempt 150), the read set
 * has 65536 entries or more (attempt 200: a full COMMIT) or the commit's
 * stamp is not the common case (another CPU, too far: rare, pinned). An
 * update commit never folds. Returns 0, or 11-14 on a slot or record
 * count that breaks those rules. */
static uint64_t fold_instance(uint64_t i) { return i < 150 ? i : i + 850; }
static uint32_t fold_read_set(uint64_t i) { return i == 200 ? 70000u : (uint32_t)i; }
static unsigned fold_flags(uint64_t i)
{
    return TF_START_READ_ONLY | (i % 3 == 1 ? TF_START_SHED : i % 3 == 2 ? TF_START_DETAIL : 0u);
}

static int body_fold(void *arg)
{
    (void)arg;
    struct tb_thread t;
    int pinned = pin_and_attach(&t);
    if (pinned != 0)
        return pinned;
    tb_ev_abort(&t, TMT_ABORT_READ_VERSION, 8, 9); /* the chunk's first record: full */
    size_t folded = 0;
    for (uint64_t i = 1; i <= 300; i++) {
        const struct tf_slot *s = t.cur;
        int64_t fulls = t.fulls;
        tb_ev_start(&t, 3, fold_instance(i), fold_flags(i), 0);
        tb_ev_commit(&t, 0, fold_read_set(i), 0);
        int one = t.cur == s + 1;
        if (one && (i == 150 || i == 200 || t.fulls != fulls - 1))
            return 11;
        folded += (size_t)one;
    }
    const struct tf_slot *s = t.cur;
    tb_ev_start(&t, 3, 1151, 0, 0);
    tb_ev_commit(&t, 77, 1, 0);
    if (t.cur != s + 2)
        return 12; /* a COMMIT with a write version takes a slot of its own */
    /* What the writer counts of a chunk it cannot write is what the thread counted */
    size_t slots = (size_t)(t.cur - t.base);
    if (tf_slots_records(t.base, slots) != slots - (size_t)t.fulls)
        return 14;
    tb_detach(&t);
    return folded >= 250 ? 0 : 13;
}

static void a_read_only_commit_right_after_its_start_shares_its_slot_and_reads_back_as_both(void **state)
{
    (void)state;
    assert_child_ok(trace_child("fold.bin", "TMTRACE_EVENTS=tx", "TMTRACE_RESAMPLE_MS=0", NULL, body_fold, NULL));
    struct readback rb;
    read_trace(tu_path("fold.bin"), &rb);
    assert_false(rb.error);
    assert_int_equal(rb.nev, 1 + 600 + 2);
    for (uint64_t i = 1; i <= 300; i++) {
        const struct tf_event *st = &rb.ev[2 * i - 1], *c = &rb.ev[2 * i];
        assert_int_equal(st->kind, TF_EV_START);
        assert_int_equal(st->addr, fold_instance(i));
        assert_int_equal(st->instance, fold_instance(i));
        assert_int_equal(st->value, tf_start_value(fold_flags(i), 0));
        assert_int_equal(st->site, 3);
        assert_int_equal(c->kind, TF_EV_COMMIT);
        assert_int_equal(c->addr, 0);
        assert_int_equal(c->value, tf_commit_value(fold_read_set(i), 0));
        assert_int_equal(c->instance, fold_instance(i));
        assert_int_equal(c->site, 3);
        assert_int_equal(c->seq, st->seq + 1);
        assert_true(c->ts > st->ts);
    }
    assert_int_equal(rb.ev[602].addr, 77);
    free_trace(&rb);
}

/* A redo log as the runtime keeps it: word address, value, byte mask. */
struct wlog {
    uint64_t addr, value;
    uint32_t mask, pad;
};

/* A thread at tx on the empty scratch buffer `buf` of `n` slots, as after
 * a record (the next may be compact), with no clock faults injected. */
static void scratch_at_tx(struct tb_thread *t, struct tf_slot *buf, size_t n)
{
    memset(t, 0, sizeof *t);
    memset(buf, 0, n * sizeof *buf);
    t->base = t->cur = buf;
    t->end = buf + n - 1;
    t->level = CONFIG_EVENTS_TX;
    t->fast_stamp = 1;
    tb_set_compact(t, 1);
}

/* One write set recorded on a scratch buffer after a full record (as after
 * a COMMIT); returns the slots the WSET record took and expands it into
 * `out` (one record per word). */
static size_t wset_on_scratch(const struct wlog *log, uint32_t n, struct tf_record *out)
{
    static struct tf_slot buf[64];
    struct tb_thread t;
    scratch_at_tx(&t, buf, 64);
    struct tf_slot *s = t.cur;
    tb_ev_wset(&t, &log[0].addr, &log[0].mask, sizeof log[0], n);
    size_t used = (size_t)(t.cur - s), got = 0;
    struct tf_record ref = { 0 };
    ref.kind = TF_EV_COMMIT;
    long m = tg_slots_expand(s, used, NULL, &ref, 0, out, NULL, 4096, &got);
    assert_int_equal(m, (long)n);
    assert_int_equal(got, used);
    return used;
}

/* A commit's write set of `n` words recorded on a scratch buffer as the
 * runtime records it (tb_ev_commit_carry, then tb_ev_wset), after an ABORT
 * that sets the stamp's CPU; expands the slots into `out` (the COMMIT,
 * then one record per word) and returns the slots they took, 0 when the
 * COMMIT could not be compact (its stamp on another CPU than the ABORT's:
 * the caller tries again). */
static size_t commit_on_scratch(const struct wlog *log, uint32_t n, struct tf_record *out)
{
    static struct tf_slot buf[64];
    struct tb_thread t;
    scratch_at_tx(&t, buf, 64);
    tb_ev_abort(&t, TMT_ABORT_READ_VERSION, 8, 9);
    struct tf_slot *s = t.cur;
    tb_ev_commit_carry(&t, 77, 3, n);
    tb_ev_wset(&t, &log[0].addr, &log[0].mask, sizeof log[0], n);
    if (!tf_slot_is_compact(s))
        return 0;
    size_t used = (size_t)(t.cur - s), got = 0;
    struct tf_record ref;
    memcpy(&ref, buf, sizeof ref);
    long m = tg_slots_expand(s, used, NULL, &ref, 0, out, NULL, 4096, &got);
    assert_int_equal(m, (long)n + 1);
    assert_int_equal(got, used);
    assert_null(t.carry);
    return used;
}

/* A commit's write set rides in the slots right after its COMMIT: one or
 * two words take one slot more than the COMMIT (a WSET record after it
 * took three more), and read back as the COMMIT and one WSET record per
 * word with its stamp. A word at or above 2^47, which has no room in the
 * run form, leaves the COMMIT alone and the words to a WSET record. */
static void a_commit_carries_its_write_set_in_the_slot_after_it_unless_a_word_is_too_high(void **state)
{
    (void)state;
    struct wlog log[2] = { { 0x10000, 1, 0xff, 0 }, { 0x30008, 2, 0x0f, 0 } };
    struct tf_record out[4];
    for (int high = 0; high < 2; high++) {
        log[1].addr = high ? (uint64_t)1 << 47 : 0x30008;
        for (uint32_t n = 1; n <= 2; n++) {
            size_t used = 0;
            for (int tries = 0; used == 0 && tries < 100; tries++)
                used = commit_on_scratch(log, n, out);
            size_t want = high && n == 2 ? 1 + 2 + tf_wset_slots(2) : 1 + tf_wset_slots(n);
            assert_int_equal(used, want);
            assert_int_equal(out[0].kind, TF_EV_COMMIT);
            assert_int_equal(out[0].addr, 77);
            assert_int_equal(tf_commit_write_set(out[0].value), n);
            for (uint32_t i = 0; i < n; i++) {
                assert_int_equal(out[1 + i].kind, TF_EV_WSET);
                assert_int_equal(out[1 + i].tsc, out[0].tsc);
                assert_int_equal(out[1 + i].addr, log[i].addr);
                assert_int_equal(out[1 + i].value, log[i].mask);
            }
        }
    }
}

/* An array of 12 words written whole (mask 0xff), a word elsewhere, the
 * word after it with another mask, and the next with that mask too. */
enum { ARRAY_LOG = 15, ARRAY_COMMITS = 300 };
static void array_log(struct wlog *log)
{
    uint32_t n = 0;
    for (; n < 12; n++)
        log[n] = (struct wlog){ 0x10000 + 8 * n, n, 0xff, 0 };
    log[n++] = (struct wlog){ 0x20000, 1, 0x0f, 0 };
    log[n++] = (struct wlog){ 0x20008, 2, 0xf0, 0 };
    log[n++] = (struct wlog){ 0x20010, 3, 0xf0, 0 };
}

/* ARRAY_COMMITS commits of that write set, as the runtime records them at tx. */
static int body_array_commits(void *arg)
{
    (void)arg;
    struct wlog log[ARRAY_LOG];
    array_log(log);
    struct tb_thread t;
    if (tb_attach(&t) != 0)
        return 10;
    for (uint64_t i = 1; i <= ARRAY_COMMITS; i++) {
        tb_ev_start(&t, site_id(&the_site), i, 0, 0);
        tb_ev_commit_carry(&t, i, 0, ARRAY_LOG);
        tb_ev_wset(&t, &log[0].addr, &log[0].mask, sizeof log[0], ARRAY_LOG);
    }
    tb_detach(&t);
    return 0;
}

/* A write set records its words as runs: words 8 bytes apart with one mask
 * take one entry (an array written whole: one slot pair for 12 words), and
 * read back word for word, from the slots and from a trace file written
 * with chunks small enough to cut write sets; a word at or above 2^47 has
 * no room for a run, and its write set takes one entry per word. */
static void an_array_written_whole_takes_one_write_set_entry_and_reads_back_word_for_word(void **state)
{
    (void)state;
    struct wlog log[16];
    uint32_t n = ARRAY_LOG;
    array_log(log);
    struct tf_record out[16];
    for (int high = 0; high < 2; high++) {
        if (high)
            log[n - 1].addr = (uint64_t)1 << 47;
        size_t used = wset_on_scratch(log, n, out);
        /* three runs (12 words, 1, 2), or one entry per word */
        size_t want = 2 + tf_wset_slots(high ? n : 3);
        assert_int_equal(used, want);
        for (uint32_t i = 0; i < n; i++) {
            assert_int_equal(out[i].kind, TF_EV_WSET);
            assert_int_equal(out[i].addr, log[i].addr);
            assert_int_equal(out[i].value, log[i].mask);
        }
    }
    array_log(log);
    assert_child_ok(trace_child("array.bin", "TMTRACE_EVENTS=tx", "TMTRACE_BUFFER=4096", NULL, body_array_commits,
                                NULL));
    struct readback rb;
    read_trace(tu_path("array.bin"), &rb);
    assert_false(rb.error);
    size_t words = 0;
    for (size_t i = 0; i < rb.nev; i++) {
        if (rb.ev[i].kind != TF_EV_WSET)
            continue;
        const struct wlog *w = &log[words++ % ARRAY_LOG];
        assert_int_equal(rb.ev[i].addr, w->addr);
        assert_int_equal(rb.ev[i].value, w->mask);
    }
    assert_int_equal(words, (size_t)ARRAY_COMMITS * ARRAY_LOG);
    free_trace(&rb);
}

/* DETAIL_ATTEMPTS attempts as the runtime records them at tx: START, the
 * read and write (recorded only in an attempt TMTRACE_DETAIL chose), the
 * COMMIT and the write set (recorded only in the others). */
enum { DETAIL_ATTEMPTS = 4000, DETAIL_N = 8 };
/* `n` update commits of `words` (at most 3) written words each, recorded
 * as the runtime records them: START, a read and a write (recorded only in
 * an attempt the level says so), COMMIT and the write set (recorded only
 * at tx); with `others`, each followed by an ALLOC and an ABORT. */
static int update_commits(uint32_t site, uint64_t n, uint32_t words, int others)
{
    struct tb_thread t;
    if (tb_attach(&t) != 0)
        return 10;
    struct {
        uint64_t addr, value;
        uint32_t mask, pad;
    } log[3] = { { (uint64_t)(uintptr_t)&cells[1], 5, 0xff, 0 }, { (uint64_t)(uintptr_t)&cells[2], 6, 0x0f, 0 },
                 { (uint64_t)(uintptr_t)&cells[3], 7, 0x80, 0 } };
    for (uint64_t i = 1; i <= n; i++) {
        tb_ev_start(&t, site, i, 0, 0);
        tb_ev_read(&t, &cells[0], 4, 8);
        tb_ev_write(&t, &cells[1], 5, 8);
        tb_ev_commit_carry(&t, i, 1, words);
        tb_ev_wset(&t, &log[0].addr, &log[0].mask, sizeof log[0], words);
        if (others) {
            tb_ev_alloc(&t, &cells[4], 8, &the_site);
            tb_ev_abort(&t, TMT_ABORT_READ_VERSION, (uint64_t)(uintptr_t)&cells[1], i);
        }
    }
    tb_detach(&t);
    return 0;
}

static int body_detail(void *arg)
{
    (void)arg;
    return update_commits(site_id(&the_site), DETAIL_ATTEMPTS, 3, 0);
}

static void detail_records_one_attempt_in_n_with_its_accesses_and_flags_it(void **state)
{
    (void)state;
    char n[32];
    snprintf(n, sizeof n, "TMTRACE_DETAIL=%d", DETAIL_N);
    /* Small chunks: many hand-overs, write sets cut by a chunk's end too. */
    assert_child_ok(trace_child("detail.bin", "TMTRACE_EVENTS=tx", n, "TMTRACE_BUFFER=4096", body_detail, NULL));
    struct readback rb;
    read_trace(tu_path("detail.bin"), &rb);
    assert_int_equal(rb.hdr.detail, DETAIL_N);
    size_t detailed = 0, starts = 0;
    for (size_t i = 0; i < rb.nev; i++) {
        if (rb.ev[i].kind != TF_EV_START)
            continue;
        starts++;
        int chosen = (tf_start_flags(rb.ev[i].value) & TF_START_DETAIL) != 0;
        detailed += (size_t)chosen;
        /* chosen: READ WRITE COMMIT; the others: COMMIT and three WSET
         * (a chunk's end may cut them into two records: the same words) */
        assert_true(i + 3 < rb.nev || (!chosen && i + 4 < rb.nev));
        if (chosen) {
            assert_int_equal(rb.ev[i + 1].kind, TF_EV_READ);
            assert_int_equal(rb.ev[i + 2].kind, TF_EV_WRITE);
            assert_int_equal(rb.ev[i + 3].kind, TF_EV_COMMIT);
        } else {
            assert_int_equal(rb.ev[i + 1].kind, TF_EV_COMMIT);
            static const uint64_t masks[3] = { 0xff, 0x0f, 0x80 };
            for (size_t k = 0; k < 3; k++) {
                assert_int_equal(rb.ev[i + 2 + k].kind, TF_EV_WSET);
                assert_int_equal(rb.ev[i + 2 + k].addr, (uint64_t)(uintptr_t)&cells[1 + k]);
                assert_int_equal(rb.ev[i + 2 + k].value, masks[k]);
                assert_int_equal(rb.ev[i + 2 + k].ts, rb.ev[i + 1].ts); /* no clock read: the commit's stamp */
            }
        }
    }
    assert_int_equal(starts, DETAIL_ATTEMPTS);
    /* Each word of a write set is a record: the program order has no gap
     * where a chunk was handed over after write sets. */
    for (size_t i = 0; i < rb.nev; i++)
        assert_int_equal(rb.ev[i].seq, i);
    /* One in N: 500 expected, a standard deviation of 21. */
    assert_true(detailed > DETAIL_ATTEMPTS / DETAIL_N * 3 / 4 && detailed < DETAIL_ATTEMPTS / DETAIL_N * 5 / 4);
    free_trace(&rb);
}

static void level_off_writes_no_trace_file(void **state)
{
    (void)state;
    int status = trace_child("off.bin", "TMTRACE_EVENTS=off", NULL, NULL, body_every_kind, NULL);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 11); /* nothing recorded */
    struct stat st;
    assert_int_equal(stat(tu_path("off.bin"), &st), -1);
}

/* Many events through tiny chunks. */
#define MANY 20000
static int body_many(void *arg)
{
    const char *watch = arg;
    struct tb_thread t;
    if (tb_attach(&t) != 0)
        return 10;
    struct stat before, after;
    if (watch && stat(watch, &before) != 0)
        return 12;
    for (uint64_t i = 0; i < MANY / 2; i++) {
        tb_ev_start(&t, 1, i + 1, 0, 0);
        tb_ev_commit(&t, i, 0, 0);
    }
    if (watch) {
        struct timespec ts = { 0, 100 * 1000000 };
        nanosleep(&ts, NULL);
        if (stat(watch, &after) != 0 || after.st_size != before.st_size)
            return 13; /* memory mode touched the disk during the run */
    }
    tb_detach(&t);
    return tracer_events_recorded() + tracer_events_dropped() == MANY ? 0 : 11;
}

static void check_many(const char *path, int expect_drops)
{
    struct readback rb;
    read_trace(path, &rb);
    assert_false(rb.error);
    assert_true(rb.have_end);
    assert_int_equal(rb.end[0].events, rb.nev);
    assert_int_equal(rb.end[0].events + rb.end[0].dropped, MANY);
    if (expect_drops)
        assert_true(rb.end[0].dropped > 0);
    else
        assert_int_equal(rb.nev, MANY);
    for (size_t i = 0; i < rb.nev; i++) {
        if (i > 0)
            assert_true(rb.ev[i].seq > rb.ev[i - 1].seq); /* program order, gaps where dropped */
        assert_int_equal(rb.ev[i].kind, rb.ev[i].seq % 2 ? TF_EV_COMMIT : TF_EV_START);
        assert_int_equal(rb.ev[i].instance, rb.ev[i].seq / 2 + 1);
    }
    free_trace(&rb);
}

static void stream_mode_writes_every_event_through_small_chunks(void **state)
{
    (void)state;
    assert_child_ok(
        trace_child("stream.bin", "TMTRACE_BUFFER=4096", "TMTRACE_MEMORY=4M", NULL, body_many, NULL));
    check_many(tu_path("stream.bin"), 0);
}

static void memory_mode_writes_nothing_until_exit(void **state)
{
    (void)state;
    assert_child_ok(trace_child("memory.bin", "TMTRACE_BUFFER=4096", "TMTRACE_MODE=memory", NULL, body_many,
                                (void *)tu_path("memory.bin")));
    check_many(tu_path("memory.bin"), 0);
}

/* EVENTS chunks of `path` stored compressed and stored as encoded. */
static void count_chunk_codecs(const char *path, size_t *packed, size_t *plain)
{
    struct tf_reader *r = tf_open(path, 0);
    assert_non_null(r);
    struct tf_chunk c;
    *packed = *plain = 0;
    while (tf_next(r, &c) == 1)
        if (c.kind == TF_CHUNK_EVENTS)
            ++*(c.codec == TF_CODEC_NONE ? plain : packed);
    tf_close(r);
}

/* TMTRACE_CODEC=auto, where compressing would cost the program (memory
 * mode writes everything at exit), measures both ways and keeps trying the
 * one it did not choose: the trace mixes chunks stored as encoded and
 * compressed, every event intact, where lz4 compresses every chunk. */
static void codec_auto_at_exit_measures_both_codecs_and_keeps_every_event(void **state)
{
    (void)state;
    size_t packed, plain;
    assert_child_ok(trace_child("auto.bin", "TMTRACE_BUFFER=4096", "TMTRACE_MODE=memory", "TMTRACE_CODEC=auto",
                                body_many, NULL));
    check_many(tu_path("auto.bin"), 0);
    count_chunk_codecs(tu_path("auto.bin"), &packed, &plain);
    assert_true(packed >= 1 && plain >= 1);
    assert_child_ok(trace_child("lz4.bin", "TMTRACE_BUFFER=4096", "TMTRACE_MODE=memory", "TMTRACE_CODEC=lz4",
                                body_many, NULL));
    count_chunk_codecs(tu_path("lz4.bin"), &packed, &plain);
    assert_true(packed > 1 && plain == 0);
}

static void events_beyond_the_memory_cap_are_dropped_and_counted(void **state)
{
    (void)state;
    assert_child_ok(trace_child("drop.bin", "TMTRACE_BUFFER=4096", "TMTRACE_MEMORY=64k", "TMTRACE_MODE=memory",
                                body_many, NULL));
    check_many(tu_path("drop.bin"), 1);
}

/* A thread past TMTRACE_MEMORY records on in its discard area, through the
 * inline path (a COMMIT after a START is one compact slot), and every event
 * is counted recorded or dropped once it detaches. */
static int body_drops_inline(void *arg)
{
    (void)arg;
    struct tb_thread t;
    if (tb_attach(&t) != 0)
        return 10;
    uint64_t i = 0;
    while (t.chunk != NULL && i < MANY / 2) {
        tb_ev_start(&t, 1, i + 1, 0, 0);
        tb_ev_commit(&t, i, 0, 0);
        i++;
    }
    if (t.chunk != NULL)
        return 11; /* the cap never reached */
    for (uint64_t k = 0; k < 3 * 512; k++, i++) {
        tb_ev_start(&t, 1, i + 1, 0, 0);
        const struct tf_slot *s = t.cur;
        tb_ev_commit(&t, i, 0, 0);
        if (s == NULL || (t.cur != s + 1 && t.cur > t.base + 2))
            return 12; /* the drop took the out-of-line path (or the area just began again) */
    }
    tb_detach(&t);
    return tracer_events_recorded() + tracer_events_dropped() == 2 * i ? 0 : 13;
}

static void a_thread_past_the_memory_cap_drops_on_the_inline_path(void **state)
{
    (void)state;
    assert_child_ok(trace_child("drop-inline.bin", "TMTRACE_BUFFER=4096", "TMTRACE_MEMORY=64k", "TMTRACE_MODE=memory",
                                body_drops_inline, NULL));
}

/* The file may grow by 64 KiB more than init wrote into it (staged bytes
 * included: TMTRACE_FILE_IO=direct writes the file's first 512 KiB at the
 * end): the writer fails during the run or at its end. */
static int body_file_limit(void *arg)
{
    if (freopen(tu_path("limit.err"), "w", stderr) == NULL || tw_bytes() == 0)
        return 14;
    setvbuf(stderr, NULL, _IONBF, 0);
    signal(SIGXFSZ, SIG_IGN);
    rlim_t max = (rlim_t)tw_bytes() + (64 << 10);
    struct rlimit lim = { max, max };
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
        return 15;
    return body_many(arg);
}

static void failing_writer_in(const char *file_io);

/* Whether the file is written directly or through the page cache, the
 * records the file lacks are the ones counted lost: with direct writes
 * those of every chunk whose bytes were still staged when a write failed. */
static void a_failing_writer_is_reported_once_and_the_program_goes_on(void **state)
{
    (void)state;
    for (int direct = 0; direct < 2; direct++)
        failing_writer_in(direct ? "TMTRACE_FILE_IO=direct" : "TMTRACE_FILE_IO=cached");
}

static void failing_writer_in(const char *file_io)
{
    int status = trace_child("limit.bin", "TMTRACE_BUFFER=4096", "TMTRACE_CODEC=none", file_io, body_file_limit, NULL);
    /* body_many's own count still adds up (11 would say it does not); the
     * shutdown reports the failure (91). */
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 91);
    char *err = tu_read_file(tu_path("limit.err"), NULL);
    assert_non_null(err);
    const char *line = strstr(err, "libtmtrace: ");
    if (line == NULL || strstr(line, "limit.bin: trace incomplete after ") == NULL ||
        strstr(line, "File too large; ") == NULL || strstr(line, " events lost") == NULL)
        fail_msg("stderr was '%s'", err);
    assert_null(strstr(line + 1, "libtmtrace: limit.bin: write failed")); /* once */
    unsigned long long chunks, lost;
    assert_int_equal(sscanf(strstr(line, "after "), "after %llu chunks", &chunks), 1);
    assert_int_equal(sscanf(strstr(line, "; ") + 2, "%llu events lost", &lost), 1);
    assert_true(chunks > 0);
    assert_true(lost > 0 && lost < MANY);
    free(err);
    /* What was written before the limit reads back, in program order. */
    struct tf_reader *r = tf_open(tu_path("limit.bin"), TF_SALVAGE);
    assert_non_null(r);
    struct tf_chunk c;
    size_t events = 0;
    while (tf_next(r, &c) == 1)
        events += c.kind == TF_CHUNK_EVENTS ? c.count : 0;
    tf_close(r);
    assert_true(events > 0);
    if (events + lost != MANY)
        fail_msg("%s: %zu events in the file and %llu lost, of %d", file_io, events, lost, MANY);
}

/* A trace that cannot be created fails init (90: the child's tmt_init
 * returned -1) and leaves nothing behind; test_misuse checks the message. */
static void an_uncreatable_trace_fails_init_and_creates_nothing(void **state)
{
    (void)state;
    int status = trace_child("no-such-dir/x.bin", NULL, NULL, NULL, body_many, NULL);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 90)
        fail_msg("child status %#x", status);
    assert_int_equal(access(tu_path("no-such-dir/x.bin"), F_OK), -1);
}

static int body_cpus_and_inrun(void *arg)
{
    (void)arg;
    struct tb_thread t;
    if (tb_attach(&t) != 0)
        return 10;
    for (int i = 0; i < 30; i++) {
        tb_ev_start(&t, 1, (uint64_t)i + 1, 0, 0);
        tb_ev_read(&t, &cells[0], 0, 8);
        tb_ev_commit(&t, 0, 1, 0);
        struct timespec ts = { 0, 2 * 1000000 };
        nanosleep(&ts, NULL);
    }
    tb_detach(&t);
    return 0;
}

static void sampling_phases_cover_every_cpu_and_inrun_samples_appear(void **state)
{
    (void)state;
    assert_child_ok(trace_child("samples.bin", "TMTRACE_SAMPLE_MS=10", "TMTRACE_RESAMPLE_MS=5", NULL,
                                body_cpus_and_inrun, NULL));
    struct readback rb;
    read_trace(tu_path("samples.bin"), &rb);
    int cpus[1024];
    int ncpus = cs_cpus(cpus, 1024);
    assert_true(ncpus > 0);
    for (int c = 0; c < ncpus; c++) {
        size_t pre = 0, post = 0;
        for (size_t i = 0; i < rb.nsmp; i++) {
            if (rb.smp[i].cpu != cpus[c])
                continue;
            pre += rb.smp[i].phase == TF_PHASE_PRE;
            post += rb.smp[i].phase == TF_PHASE_POST;
        }
        if (pre < 10 || post < 10)
            fail_msg("CPU %d: %zu pre, %zu post samples", cpus[c], pre, post);
    }
    size_t inrun = 0;
    for (size_t i = 0; i < rb.nsmp; i++)
        if (rb.smp[i].phase == TF_PHASE_INRUN) {
            assert_int_equal(rb.smp[i].thread, 1);
            inrun++;
        }
    /* 30 transactions 2 ms apart, a sample due every 5 ms: about 12. */
    assert_true(inrun >= 5 && inrun <= 31);
    free_trace(&rb);
}

static int body_migrating(void *arg)
{
    (void)arg;
    struct tb_thread t;
    if (tb_attach(&t) != 0)
        return 10;
    for (int i = 0; i < 60; i++) {
        tb_ev_start(&t, 1, (uint64_t)i + 1, 0, 0);
        tb_ev_commit(&t, 0, 0, 0);
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    tb_detach(&t);
    return 0;
}

static void forced_migrations_spread_a_thread_over_the_cpus(void **state)
{
    (void)state;
    int cpus[1024];
    int ncpus = cs_cpus(cpus, 1024);
    assert_child_ok(
        trace_child("migrate.bin", "TMTRACE_MIGRATE=5", "TMTRACE_EVENTS=tx", NULL, body_migrating, NULL));
    struct readback rb;
    read_trace(tu_path("migrate.bin"), &rb);
    assert_int_equal(rb.nev, 120);
    int seen[1024] = { 0 }, distinct = 0, moves = 0;
    for (size_t i = 0; i < rb.nev; i++) {
        if (rb.ev[i].cpu < 1024 && !seen[rb.ev[i].cpu]++)
            distinct++;
        moves += i > 0 && rb.ev[i].cpu != rb.ev[i - 1].cpu;
    }
    /* About 60 ms of run, a move due every 5 ms, checked on each start: the
     * thread cycles through every usable CPU (a few at least). */
    int want = ncpus < 4 ? ncpus : 4;
    if (distinct < want || (ncpus >= 2 && moves < 4))
        fail_msg("%d CPUs seen, %d moves, %d usable CPUs", distinct, moves, ncpus);
    free_trace(&rb);
}

/* Update commits of two words at tx, each followed by an ALLOC and an
 * ABORT. */
static int body_wsets(void *arg)
{
    (void)arg;
    return update_commits(1, 20, 2, 1);
}

/* The inline write set, ALLOC and ABORT leave the clock's faults to their
 * out-of-line paths: with them injected, every record keeps its true
 * stamp, and each WSET the COMMIT's it follows. */
/* TMTRACE_SKEW=... in `skew`: the first (at most 8) CPUs of the affinity
 * mask offset by base + step * i ns, no drift; returns how many. */
static int skew_first_cpus(char *skew, size_t size, int base, int step)
{
    int cpus[1024];
    int ncpus = cs_cpus(cpus, 1024);
    snprintf(skew, size, "TMTRACE_SKEW=");
    for (int c = 0; c < ncpus && c < 8; c++)
        snprintf(skew + strlen(skew), size - strlen(skew), "%s%d:%d:0", c ? "," : "", cpus[c], base + step * c);
    return ncpus < 8 ? ncpus : 8;
}

static void write_sets_allocs_and_aborts_keep_their_truth_with_the_clock_injected(void **state)
{
    (void)state;
    char skew[512];
    (void)skew_first_cpus(skew, sizeof skew, 100000, 0);
    assert_child_ok(trace_child("wskew.bin", "TMTRACE_EVENTS=tx", skew, NULL, body_wsets, NULL));
    struct readback rb;
    read_trace(tu_path("wskew.bin"), &rb);
    assert_true(rb.hdr.flags & TF_HDR_INJECTED);
    assert_int_equal(rb.nev, 20 * 6); /* START, COMMIT, a WSET per word, ALLOC, ABORT */
    for (size_t i = 0; i < rb.nev; i++) {
        assert_true(rb.ev[i].truth != 0);
        if (rb.ev[i].kind == TF_EV_WSET) {
            size_t c = rb.ev[i - 1].kind == TF_EV_COMMIT ? i - 1 : i - 2;
            assert_int_equal(rb.ev[c].kind, TF_EV_COMMIT);
            assert_true(rb.ev[i].truth == rb.ev[c].truth && rb.ev[i].ts == rb.ev[c].ts);
        }
    }
    free_trace(&rb);
}

static void injected_offsets_shift_every_tsc_exactly_and_truth_reads_back(void **state)
{
    (void)state;
    char skew[512];
    int nskewed = skew_first_cpus(skew, sizeof skew, -500000, 250000);
    assert_child_ok(trace_child("skew.bin", skew, "TMTRACE_RESAMPLE_MS=1", NULL, body_cpus_and_inrun, NULL));
    struct readback rb;
    read_trace(tu_path("skew.bin"), &rb);
    assert_true(rb.hdr.flags & TF_HDR_INJECTED);
    assert_int_equal(rb.nskew, (size_t)nskewed);
    double hz = (double)rb.hdr.tsc_hz;
    assert_int_equal(rb.nev, 90);
    for (size_t i = 0; i < rb.nev + rb.nsmp; i++) {
        int64_t got;
        unsigned cpu;
        if (i < rb.nev) {
            assert_true(rb.ev[i].truth != 0);
            got = (int64_t)(rb.ev[i].ts - rb.ev[i].truth);
            cpu = rb.ev[i].cpu;
        } else {
            got = (int64_t)(rb.smp[i - rb.nev].tsc - rb.smp[i - rb.nev].truth_tsc);
            cpu = rb.smp[i - rb.nev].cpu;
        }
        int64_t want = 0;
        for (size_t k = 0; k < rb.nskew; k++)
            if (rb.skew[k].cpu == cpu)
                want = llround((double)rb.skew[k].offset_ns * hz / 1e9);
        assert_int_equal(got, want);
    }
    free_trace(&rb);
}

/* ---- killed children ---------------------------------------------------- */

static int body_busy(void *arg)
{
    int fd = *(int *)arg;
    struct tb_thread t;
    if (tb_attach(&t) != 0)
        return 10;
    if (write(fd, "r", 1) != 1)
        return 12;
    for (uint64_t i = 1;; i++) {
        tb_ev_start(&t, 1, i, 0, 0);
        tb_ev_write(&t, &cells[i & 3], i, 8);
        tb_ev_commit(&t, i, 0, 1);
    }
    return 0;
}

/* Starts a busy traced child, waits until it runs (and the file has grown
 * past `min_bytes`), sends `sig`; returns the wait status. */
static int kill_busy_child(const char *const *env, const char *path, off_t min_bytes, int sig)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        child_env(env);
        if (config_load() != 0 || tracer_init() != 0)
            _exit(90);
        _exit(body_busy(&p[1]));
    }
    close(p[1]);
    char c;
    assert_int_equal(read(p[0], &c, 1), 1);
    close(p[0]);
    struct stat st;
    for (int i = 0; i < 2000; i++) {
        struct timespec ts = { 0, 5 * 1000000 };
        nanosleep(&ts, NULL);
        if (stat(path, &st) == 0 && st.st_size >= min_bytes)
            break;
    }
    kill(pid, sig);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

static void sigkill_leaves_every_flushed_chunk_readable(void **state)
{
    (void)state;
    char file[300];
    snprintf(file, sizeof file, "TMTRACE_FILE=%s", tu_path("kill.bin"));
    const char *env[] = { file, "TMTRACE_SAMPLE_MS=5", "TMTRACE_BUFFER=64k", "TMTRACE_MEMORY=32M", NULL };
    int status = kill_busy_child(env, tu_path("kill.bin"), 200000, SIGKILL);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    struct readback rb;
    read_trace(tu_path("kill.bin"), &rb);
    /* A chunk cut by the kill may end the file; everything before reads. */
    assert_false(rb.have_end);
    assert_true(rb.nev >= 2048);
    for (size_t i = 1; i < rb.nev; i++)
        assert_true(rb.ev[i].seq > rb.ev[i - 1].seq);
    free_trace(&rb);
}

static void check_sigterm(const char *name, const char *mode)
{
    char file[300], m[64];
    snprintf(file, sizeof file, "TMTRACE_FILE=%s", tu_path(name));
    snprintf(m, sizeof m, "TMTRACE_MODE=%s", mode);
    const char *env[] = { file, m, "TMTRACE_SAMPLE_MS=5", "TMTRACE_BUFFER=64k", "TMTRACE_MEMORY=32M", NULL };
    int status = kill_busy_child(env, tu_path(name), strcmp(mode, "stream") == 0 ? 200000 : 0, SIGTERM);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    struct readback rb;
    read_trace(tu_path(name), &rb);
    assert_false(rb.error);
    assert_true(rb.have_end);
    assert_int_equal(rb.nend, 1);
    assert_int_equal(rb.end[0].events, rb.nev);
    assert_true(rb.nev > 0);
    /* A busy loop outruns any writer: drops are allowed but must add up. */
    for (size_t i = 1; i < rb.nev; i++)
        assert_true(rb.ev[i].seq > rb.ev[i - 1].seq);
    assert_true(rb.ev[rb.nev - 1].seq + 1 <= rb.end[0].events + rb.end[0].dropped);
    free_trace(&rb);
}

static void sigterm_leaves_a_complete_trace_in_stream_mode(void **state)
{
    (void)state;
    check_sigterm("term-stream.bin", "stream");
}

static void sigterm_leaves_a_complete_trace_in_memory_mode(void **state)
{
    (void)state;
    check_sigterm("term-memory.bin", "memory");
}

/* ---- hand-over closed while the thread records ------------------------- */

/* What a signal does to a thread that runs on: hand-over closes under it.
 * Returns 0, or which expectation failed. */
static int closed_under(struct tb_thread *t)
{
    if (t->base == NULL)
        return 10;
    tb_ev_start(t, 1, 1, 0, 0);
    const volatile struct tf_record *first = (const volatile struct tf_record *)(void *)t->base;
    uint64_t stamp = first->tsc;
    size_t cap = (size_t)(t->end - t->base);
    uint64_t before = tb_total_dropped();
    tb_close();
    for (uint64_t i = 2; i <= cap + 10; i++) {
        tb_ev_start(t, 1, i, 0, 0);
        tb_ev_commit(t, i, 0, 0);
    }
    if (t->chunk != NULL)
        return 11; /* no fresh chunk once closed */
    /* The full chunk left the thread but its memory is still there: a
     * snapshot on the writer thread may be copying it at this moment. */
    if (first->tsc != stamp || first->kind != TF_EV_START)
        return 12;
    if (tb_total_dropped() - before != 1 + 2 * (uint64_t)(cap + 9))
        return 13; /* every record of the chunk, then every later event */
    return 0;
}

static int body_closed_under_the_thread(void *arg)
{
    (void)arg;
    struct tb_thread t;
    if (tb_attach(&t) != 0)
        return 9;
    int rc = closed_under(&t);
    tb_detach(&t);
    return rc;
}

static void a_chunk_filled_after_hand_over_closed_is_dropped_and_stays_readable(void **state)
{
    (void)state;
    assert_child_ok(trace_child("closed.bin", "TMTRACE_BUFFER=64k", "TMTRACE_MODE=stream", NULL,
                                body_closed_under_the_thread, NULL));
    struct readback rb;
    read_trace(tu_path("closed.bin"), &rb);
    assert_false(rb.error);
    assert_true(rb.have_end);
    /* nothing recorded after the close reaches the file, all is counted */
    assert_int_equal(rb.nev, 0);
    assert_int_equal(rb.nend, 1);
    assert_int_equal(rb.end[0].events, 0);
    /* closed_under's loop ran once per slot of the chunk but its last, plus 9 */
    assert_int_equal(rb.end[0].dropped, 1 + 2 * (64 * 1024 / sizeof(struct tf_slot) - 1 + 9));
    free_trace(&rb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_record_kind_round_trips_through_the_file),
        cmocka_unit_test(a_commit_carries_its_write_set_in_the_slot_after_it_unless_a_word_is_too_high),
        cmocka_unit_test(an_array_written_whole_takes_one_write_set_entry_and_reads_back_word_for_word),
        cmocka_unit_test(boundary_stamps_make_reads_and_writes_repeat_the_previous_stamp),
        cmocka_unit_test(a_stamp_that_would_go_back_on_its_cpu_is_raised_and_counted),
        cmocka_unit_test(accesses_close_to_the_record_before_them_take_one_slot_and_expand_exactly),
        cmocka_unit_test(a_slot_stream_that_starts_compact_or_ends_mid_record_is_refused),
        cmocka_unit_test(an_injected_slow_clock_keeps_a_cpus_stamps_increasing),
        cmocka_unit_test(level_tx_records_no_reads_or_writes),
        cmocka_unit_test(a_read_only_commit_right_after_its_start_shares_its_slot_and_reads_back_as_both),
        cmocka_unit_test(detail_records_one_attempt_in_n_with_its_accesses_and_flags_it),
        cmocka_unit_test(level_off_writes_no_trace_file),
        cmocka_unit_test(stream_mode_writes_every_event_through_small_chunks),
        cmocka_unit_test(memory_mode_writes_nothing_until_exit),
        cmocka_unit_test(codec_auto_at_exit_measures_both_codecs_and_keeps_every_event),
        cmocka_unit_test(events_beyond_the_memory_cap_are_dropped_and_counted),
        cmocka_unit_test(a_thread_past_the_memory_cap_drops_on_the_inline_path),
        cmocka_unit_test(a_failing_writer_is_reported_once_and_the_program_goes_on),
        cmocka_unit_test(an_uncreatable_trace_fails_init_and_creates_nothing),
        cmocka_unit_test(sampling_phases_cover_every_cpu_and_inrun_samples_appear),
        cmocka_unit_test(forced_migrations_spread_a_thread_over_the_cpus),
        cmocka_unit_test(injected_offsets_shift_every_tsc_exactly_and_truth_reads_back),
        cmocka_unit_test(write_sets_allocs_and_aborts_keep_their_truth_with_the_clock_injected),
        cmocka_unit_test(sigkill_leaves_every_flushed_chunk_readable),
        cmocka_unit_test(sigterm_leaves_a_complete_trace_in_stream_mode),
        cmocka_unit_test(sigterm_leaves_a_complete_trace_in_memory_mode),
        cmocka_unit_test(a_chunk_filled_after_hand_over_closed_is_dropped_and_stays_readable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
