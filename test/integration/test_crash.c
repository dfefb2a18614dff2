/*
 * test_crash.c - a traced program that a fatal signal ends keeps its trace:
 * every record its threads had published is in the file, the END chunk
 * names the signal, and the program ends as it would untraced (the same
 * wait status, a core dump included). A stack overflow too, and a program's
 * own handlers, installed before or after tmt_init, still run.
 *
 * Each case is a fresh child of the test (its own TMTRACE_* environment and
 * tmt_init): a worker thread records its transactions and stays attached,
 * the main thread records its own, then one of them dies. The same child
 * runs untraced (TMTRACE_EVENTS=off) for the status to compare with.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "error.h"
#include "tmtrace.h"
#include "tx_life.h"
#include "trace_file.h"
#include "test_util.h"

#define MAIN_TXS 3000   /* START, READ, WRITE, COMMIT each: dozens of 4 KiB buffers */
#define WORKER_TXS 700
#define RECORDS_PER_TX 4

/* How the child dies. */
enum crash { CRASH_SEGV, CRASH_BUS, CRASH_FPE, CRASH_ILL, CRASH_ABRT, CRASH_OVERFLOW, CRASH_TERM };

static enum crash child_crash;
static int child_own_handler;    /* 1: before tmt_init, 2: after it (the program's handler exits 40 + sig) */
static long cells[2][8];
static sem_t worker_done, worker_go;

static void record(tmt_tx *tx, long *c, int n)
{
    for (int i = 0; i < n; i++) {
        TMT_ATOMIC(tx, "crash") {
            long a = tmt_read_long(tx, &c[i % 8]);
            tmt_write_long(tx, &c[(i + 1) % 8], a + i);
        } TMT_END;
    }
}

/* Deeper than any stack (`depth` never runs out); each frame keeps its
 * buffer. */
static int recurse(volatile char *up, unsigned long depth)
{
    volatile char buf[512];
    buf[0] = up ? up[0] : 1;
    if (depth == 0)
        return buf[0];
    return recurse(buf, depth - 1) + buf[1];
}

static void die(enum crash how)
{
    switch (how) {
    case CRASH_SEGV: {
        /* A page the program may not touch (no null pointer: UBSan would
         * report the store before it faults). */
        volatile char *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            exit(80);
        p[0] = 1;
        break;
    }
    case CRASH_BUS: {
        /* A shared mapping past the end of its (empty) file. */
        char path[] = "/tmp/tmt-crash-XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0)
            exit(81);
        unlink(path);
        volatile char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
            exit(82);
        p[0] = 1;
        break;
    }
    case CRASH_FPE:
        /* The instruction itself (a division by zero in C is for UBSan to
         * report first). */
        __asm__ volatile("xorl %%ecx, %%ecx\n\tmovl $1, %%eax\n\tcltd\n\tidivl %%ecx" ::: "eax", "ecx", "edx");
        break;
    case CRASH_ILL:
        __builtin_trap();
    case CRASH_ABRT:
        abort();
    case CRASH_OVERFLOW:
        (void)recurse(NULL, ~0ul);
        break;
    case CRASH_TERM:
        raise(SIGTERM);
        break;
    }
    exit(83); /* it did not die */
}

static void *worker(void *arg)
{
    (void)arg;
    tmt_tx *tx = tmt_thread_enter();
    if (tx == NULL)
        exit(84);
    record(tx, cells[1], WORKER_TXS);
    sem_post(&worker_done);
    /* Attached, its last buffer partly filled, until told to overflow. */
    while (sem_wait(&worker_go) != 0)
        ;
    die(CRASH_OVERFLOW);
    return NULL;
}

static void own_handler(int sig) { _exit(40 + sig); }

static void own_handler_info(int sig, siginfo_t *info, void *uc)
{
    (void)uc;
    _exit(info != NULL && info->si_signo == sig ? 40 + sig : 1);
}

static int crash_signal(enum crash how)
{
    static const int sig[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSEGV, SIGTERM };
    return sig[how];
}

/* The program's own handler for the crash's signal: SA_SIGINFO for a fault,
 * a plain one for SIGABRT. */
static void install_own_handler(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    if (child_crash == CRASH_ABRT) {
        sa.sa_handler = own_handler;
    } else {
        sa.sa_sigaction = own_handler_info;
        sa.sa_flags = SA_SIGINFO;
    }
    sigemptyset(&sa.sa_mask);
    if (sigaction(crash_signal(child_crash), &sa, NULL) != 0)
        exit(85);
}

static void child_main(void)
{
    if (child_own_handler == 1)
        install_own_handler();
    if (tmt_init() != 0) {
        fprintf(stderr, "child: %s\n", tmt_error());
        exit(90);
    }
    if (child_own_handler == 2)
        install_own_handler();
    sem_init(&worker_done, 0, 0);
    sem_init(&worker_go, 0, 0);
    pthread_t w;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256u << 10); /* a short overflow */
    if (pthread_create(&w, &attr, worker, NULL) != 0)
        exit(86);
    while (sem_wait(&worker_done) != 0)
        ;
    tmt_tx *tx = tmt_thread_enter();
    if (tx == NULL)
        exit(87);
    record(tx, cells[0], MAIN_TXS);
    if (child_crash == CRASH_OVERFLOW) {
        sem_post(&worker_go);
        pthread_join(w, NULL);
        exit(88);
    }
    die(child_crash);
}

/* Runs the crash in a child with the environment `env` and core dumps on
 * (written in the test's directory, removed after); returns its status. */
static int run_crash(const char *const *env, enum crash how, int own_handler_when)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* A program as it starts: the test runner's own crash handlers are
         * not its. */
        static const int fatal[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM };
        for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
            signal(fatal[i], SIG_DFL);
        clearenv();
        for (; *env; env++)
            putenv((char *)*env);
        setenv("TMT_KEEP_TMP", "1", 1);
        struct rlimit core = { RLIM_INFINITY, RLIM_INFINITY };
        (void)setrlimit(RLIMIT_CORE, &core);
        if (chdir(tu_tmpdir()) != 0)
            exit(89);
        child_crash = how;
        child_own_handler = own_handler_when;
        child_main();
        exit(99);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -f '%s'/core '%s'/core.*", tu_tmpdir(), tu_tmpdir());
    (void)tu_run(cmd, NULL, 0);
    return status;
}

/* The trace's counts, or the test fails naming why it cannot be read. */
static struct tu_trace_counts count_trace(const char *path)
{
    struct tu_trace_counts t;
    if (tu_count_trace(path, &t) != 0)
        fail_msg("%s: %s", path, error_get());
    return t;
}

/* The crash, traced into `name` (or untraced) with the program's own
 * handler installed `when` (0: none); returns the child's status. */
static int crash_run(enum crash how, int when, const char *name, int traced)
{
    char file[300];
    snprintf(file, sizeof file, "TMTRACE_FILE=%s", tu_path(name));
    const char *env[] = { file, traced ? "TMTRACE_EVENTS=all" : "TMTRACE_EVENTS=off", "TMTRACE_HTM=off",
                          "TMTRACE_SAMPLE_MS=5", "TMTRACE_BUFFER=4k", "TMTRACE_PREFAULT=1M", NULL };
    return run_crash(env, how, when);
}

/* The trace `name` holds every record of the child and an END chunk that
 * names the crash's signal. */
static void check_flushed(enum crash how, const char *name)
{
    struct tu_trace_counts t = count_trace(tu_path(name));
    assert_int_equal(t.records, (uint64_t)(MAIN_TXS + WORKER_TXS) * RECORDS_PER_TX);
    assert_true(t.have_end);
    assert_int_equal(t.end_signal, crash_signal(how));
}

/* The crash traced and untraced: the same status, and a trace with every
 * record and the signal in its END chunk. */
static void check_crash(enum crash how, const char *name)
{
    int plain = crash_run(how, 0, name, 0);
    assert_true(WIFSIGNALED(plain));
    assert_int_equal(WTERMSIG(plain), crash_signal(how));
    int status = crash_run(how, 0, name, 1);
    if (status != plain)
        fail_msg("%s: traced status %#x, untraced %#x", name, (unsigned)status, (unsigned)plain);
    check_flushed(how, name);
}

static void a_segmentation_fault_keeps_every_record_and_ends_as_untraced(void **state)
{
    (void)state;
    check_crash(CRASH_SEGV, "segv.bin");
}

static void a_bus_error_keeps_every_record_and_ends_as_untraced(void **state)
{
    (void)state;
    check_crash(CRASH_BUS, "bus.bin");
}

static void a_division_by_zero_keeps_every_record_and_ends_as_untraced(void **state)
{
    (void)state;
    check_crash(CRASH_FPE, "fpe.bin");
}

static void an_illegal_instruction_keeps_every_record_and_ends_as_untraced(void **state)
{
    (void)state;
    check_crash(CRASH_ILL, "ill.bin");
}

static void an_abort_keeps_every_record_and_ends_as_untraced(void **state)
{
    (void)state;
    check_crash(CRASH_ABRT, "abrt.bin");
}

static void a_stack_overflow_in_a_traced_thread_keeps_every_record(void **state)
{
    (void)state;
    check_crash(CRASH_OVERFLOW, "overflow.bin");
}

static void a_sigterm_flushes_the_trace_and_its_end_names_it(void **state)
{
    (void)state;
    check_crash(CRASH_TERM, "term.bin");
}

/* The program's handler runs after the flush (installed before tmt_init,
 * chained) or instead of the tracer's (installed after it). */
static void check_own_handler(enum crash how, int when, const char *name, int flushed)
{
    int status = crash_run(how, when, name, 1);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 40 + crash_signal(how))
        fail_msg("%s: status %#x, not the program's handler's exit %d", name, (unsigned)status,
                 40 + crash_signal(how));
    if (flushed)
        check_flushed(how, name);
}

static void a_handler_installed_before_init_runs_after_the_flush(void **state)
{
    (void)state;
    check_own_handler(CRASH_SEGV, 1, "own-before-segv.bin", 1);
    check_own_handler(CRASH_ABRT, 1, "own-before-abrt.bin", 1);
}

static void a_handler_installed_after_init_keeps_working(void **state)
{
    (void)state;
    check_own_handler(CRASH_SEGV, 2, "own-after-segv.bin", 0);
    check_own_handler(CRASH_FPE, 2, "own-after-fpe.bin", 0);
}

int main(void)
{
    tx_lone_in_place = 0; /* the records counted are a software attempt's, one thread's too */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_segmentation_fault_keeps_every_record_and_ends_as_untraced),
        cmocka_unit_test(a_bus_error_keeps_every_record_and_ends_as_untraced),
        cmocka_unit_test(a_division_by_zero_keeps_every_record_and_ends_as_untraced),
        cmocka_unit_test(an_illegal_instruction_keeps_every_record_and_ends_as_untraced),
        cmocka_unit_test(an_abort_keeps_every_record_and_ends_as_untraced),
        cmocka_unit_test(a_stack_overflow_in_a_traced_thread_keeps_every_record),
        cmocka_unit_test(a_sigterm_flushes_the_trace_and_its_end_names_it),
        cmocka_unit_test(a_handler_installed_before_init_runs_after_the_flush),
        cmocka_unit_test(a_handler_installed_after_init_keeps_working),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
