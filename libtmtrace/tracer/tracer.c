/*
 * tracer.c - the tracer's life cycle (see tracer.h): init opens the trace,
 * runs the pre-run sampling phase and starts the writer; shutdown (explicit,
 * at exit, or on a signal that ends the process) writes everything, the
 * post-run samples, the site names and the END chunk.
 *
 * Owns: the tracer's state, the trace file's life, the handlers of the
 * signals that end a process (SIGTERM, SIGINT; SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL, SIGABRT) and what the program's own action for them was.
 *
 * Never on the event path. The signal handlers do only async-signal-safe
 * things: they ask the writer thread to flush and wait for it a bounded
 * time (no encoding, no allocation), then let the signal do what it would
 * have done untraced.
 */
#include "tracer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "abort_pc.h"
#include "clock.h"
#include "clock_sample.h"
#include "config.h"
#include "error.h"
#include "loadmap.h"
#include "skew.h"
#include "tb_pool.h"
#include "tb_threads.h"
#include "trace_buffer.h"
#include "trace_file.h"
#include "trace_writer.h"

enum { TR_IDLE = 0, TR_ACTIVE = 1, TR_CLOSED = 2, TR_STARTING = 3 };

static int tr_state;                 /* atomic */
static struct tf_writer *tr_file;
static int tr_cpus[CPU_SETSIZE];
static int tr_ncpus;
static int tr_atexit_done;
static pid_t tr_pid;                 /* the process that owns the trace file */
static int tr_pending;               /* atomic: a signal held while the tracer starts, 0 = none */
static char tr_path[4096];           /* TMTRACE_FILE with %p replaced by the process id */
/* The tracer's own CPU time outside the program's threads (tmt_stats'
 * tracer_cpu_ns): the process's CPU time while tracer_init and
 * tracer_shutdown run (the program waits in them: the pre-run sampling
 * threads, the writer's last drain, the tail of the trace), plus the
 * writer thread's CPU time before shutdown. */
static uint64_t tr_init_cpu, tr_exit_cpu, tr_writer_cpu_before_exit; /* atomic */
static int tr_exited; /* atomic: tracer_shutdown finished, tr_exit_cpu holds the tail */

static uint64_t tr_process_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* TMTRACE_FILE with every %p replaced by the pid (%% is a %): a forked
 * child then writes a trace of its own. */
static void tr_expand_path(void)
{
    size_t o = 0;
    for (const char *p = config.file; *p && o + 24 < sizeof tr_path; p++) {
        if (p[0] == '%' && (p[1] == 'p' || p[1] == '%')) {
            o += (size_t)(p[1] == 'p' ? snprintf(tr_path + o, sizeof tr_path - o, "%ld", (long)getpid())
                                      : snprintf(tr_path + o, sizeof tr_path - o, "%%"));
            p++;
        } else {
            tr_path[o++] = *p;
        }
    }
    tr_path[o] = '\0';
}

static void tr_cmdline(char *out, size_t cap)
{
    out[0] = '\0';
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, out, cap - 1);
    close(fd);
    if (n <= 0)
        return;
    out[n] = '\0';
    for (ssize_t i = 0; i + 1 < n; i++)
        if (out[i] == '\0')
            out[i] = ' ';
}

/* The objects mapped now (executable and shared libraries), so that tools
 * can symbolise addresses offline. Not being able to list them is no error. */
static int tr_write_loadmap(void)
{
    enum { TR_MAX_OBJECTS = 1024 };
    struct tf_object *objs = calloc(TR_MAX_OBJECTS, sizeof *objs);
    if (objs == NULL)
        return 0;
    size_t n = loadmap_collect(objs, TR_MAX_OBJECTS);
    int rc = n ? tf_write_objects(tr_file, objs, n) : 0;
    free(objs);
    return rc;
}

/* The tail of the trace: names of sites, END with per-thread counts and
 * the signal that ends the process (0: none). */
static void tr_write_end(int sig)
{
    tw_write_new_sites();
    size_t cap = 64, n;
    struct tf_thread_info *info = NULL;
    for (;;) {
        struct tf_thread_info *p = realloc(info, cap * sizeof *p);
        if (p == NULL)
            break;
        info = p;
        n = tb_threads_all(info, cap);
        if (n < cap)
            break;
        cap *= 2;
    }
    if (info == NULL)
        n = 0;
    for (size_t i = 0; i < n; i++) {
        info[i].events = tw_thread_written(info[i].id);
        info[i].dropped += tw_thread_lost(info[i].id);
    }
    errno = 0;
    if (tr_file == NULL)
        ; /* nothing to write into: the loss is reported on stderr */
    else if (tw_errors() == 0 && tf_write_end(tr_file, info, n, 0, (unsigned)sig) != 0)
        tw_note_error(0, 0);
    else if (tw_errors() != 0)
        (void)tf_write_end(tr_file, info, n, tw_errors(), (unsigned)sig); /* best effort: the disk may be full */
    free(info);
}

static void tr_report_errors(void)
{
    if (tw_errors() == 0)
        return;
    fprintf(stderr, "libtmtrace: %s: trace incomplete after %llu chunks: %s; %llu events lost\n", tr_path,
            (unsigned long long)tw_chunks_written(), tw_first_error(), (unsigned long long)tw_lost());
}

/* `bytes` as TMTRACE_* sizes are written: 64k, 2G, or plain bytes. */
static void tr_size_text(int64_t bytes, char *out, size_t cap)
{
    static const char unit[] = { 'G', 'M', 'k' };
    for (int i = 0; i < 3; i++) {
        int64_t one = (int64_t)1 << (10 * (3 - i));
        if (bytes >= one && bytes % one == 0) {
            snprintf(out, cap, "%lld%c", (long long)(bytes / one), unit[i]);
            return;
        }
    }
    snprintf(out, cap, "%lld", (long long)bytes);
}

/* At exit, when attempts were shed at level all: how many, why, and what
 * gives every access. */
static void tr_report_shed(uint64_t n)
{
    if (n == 0)
        return;
    fprintf(stderr, "libtmtrace: %s: %llu attempts recorded without their reads and writes (shed, as at "
                    "TMTRACE_EVENTS=tx: tmcheck still explains their aborts): buffers ran short while the tracer's "
                    "threads kept to TMTRACE_WRITER_SHARE=%lld%% of a CPU; for every access raise "
                    "TMTRACE_WRITER_SHARE (100: no shedding), TMTRACE_PREFAULT, or leave a CPU free\n",
            tr_path, (unsigned long long)n, (long long)config.writer_share);
}

/* At exit, one line when the threads dropped `n` events while the trace
 * was open (tb_chunk_full): how many, why, and what to change. A thread
 * drops when no populated buffer is free and none may be mapped: beyond
 * TMTRACE_MEMORY, or while the tracer's threads are over their share of a
 * CPU with every CPU busy (the pool is held, trace_writer.c), or both;
 * when not even one buffer of TMTRACE_BUFFER fits TMTRACE_MEMORY, every
 * event was dropped. (What threads still running record after the trace
 * closed is lost whatever the variables say.) */
static void tr_report_drops(uint64_t n)
{
    if (n == 0)
        return;
    char memory[32], buffer[32];
    tr_size_text(config.memory_bytes, memory, sizeof memory);
    tr_size_text(config.buffer_bytes, buffer, sizeof buffer);
    if (tb_pool_capacity() == 0) {
        fprintf(stderr, "libtmtrace: %s: %llu events dropped: TMTRACE_MEMORY=%s cannot hold one buffer of "
                        "TMTRACE_BUFFER=%s; raise TMTRACE_MEMORY or lower TMTRACE_BUFFER\n", tr_path,
                (unsigned long long)n, memory, buffer);
        return;
    }
    int held = tb_pool_held_refusals() != 0, full = tb_pool_reached_limit() || !held;
    char why[160];
    if (held)
        snprintf(why, sizeof why, "%sno buffer was free while the tracer's threads kept to TMTRACE_WRITER_SHARE=%lld%% "
                 "of a CPU", full ? " and " : "", (long long)config.writer_share);
    else
        snprintf(why, sizeof why, " while the writer kept to TMTRACE_WRITER_SHARE=%lld%% of a CPU",
                 (long long)config.writer_share);
    fprintf(stderr, "libtmtrace: %s: %llu events dropped: %s%s%s; raise %s%sTMTRACE_WRITER_SHARE, leave a CPU "
                    "free, or record less (TMTRACE_EVENTS=tx, TMTRACE_DETAIL)\n", tr_path, (unsigned long long)n,
            full ? "the trace buffers reached TMTRACE_MEMORY=" : "", full ? memory : "", why,
            full ? "TMTRACE_MEMORY, " : "", held ? "TMTRACE_PREFAULT (buffers populated before the run), " : "");
}

/* The signals that end a process, which the tracer handles: SIGTERM and
 * SIGINT only where the program kept the default action (its own handler
 * wins: the program decides whether it ends); from TR_FIRST_FATAL on, those
 * whose default is a core dump, always, the program's own action run after
 * the flush. */
#define TR_NSIGS 7
#define TR_FIRST_FATAL 2
static const int tr_sigs[TR_NSIGS] = { SIGTERM, SIGINT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
static struct sigaction tr_old[TR_NSIGS]; /* the program's action before the tracer's */
static int tr_installed;                  /* atomic: bit i, tr_sigs[i] has the tracer's handler */
static int tr_end_signal;                 /* atomic: the signal whose handler flushes the trace */
static int tr_sig_flushing;               /* atomic: a signal's flush runs (or ran) */
/* A flush gives up after this long without a chunk written. */
#define TR_FLUSH_STALL_MS 2000

/* Runs on the writer thread once it wrote the queue after a fatal signal.
 * The program's threads run on meanwhile: closing hand-over and then
 * sealing the queue (which writes what was offered before the seal) leaves
 * each thread's records either in the file or counted as dropped. Nothing
 * here frees memory those threads may still touch. */
static void tr_on_signal(void)
{
    tb_close();
    tw_seal();
    tb_snapshot_all(tw_write_now);
    tr_write_end(__atomic_load_n(&tr_end_signal, __ATOMIC_ACQUIRE));
    tw_file_done(); /* the tail is in the file: its final size */
    if (tr_file != NULL)
        (void)tf_finish(tr_file, 0);
    tr_file = NULL;
}

/* From a handler of `sig`: the first signal of the traced process closes
 * the tracer and has the writer finish the trace, its END marked with
 * `sig`; a signal on another thread meanwhile waits for that flush too
 * (its default action would end the process in the middle of it). Both
 * wait while the writer makes progress. */
static void tr_flush_for(int sig)
{
    if (getpid() != tr_pid)
        return; /* a forked child without a tracer of its own */
    int expect = TR_ACTIVE;
    if (__atomic_compare_exchange_n(&tr_state, &expect, TR_CLOSED, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&tr_end_signal, sig, __ATOMIC_RELEASE);
        __atomic_store_n(&tr_sig_flushing, 1, __ATOMIC_RELEASE);
        (void)tw_signal_flush(TR_FLUSH_STALL_MS);
    } else if (__atomic_load_n(&tr_sig_flushing, __ATOMIC_ACQUIRE)) {
        (void)tw_signal_flush(TR_FLUSH_STALL_MS);
    }
}

static void tr_signal(int sig)
{
    int saved = errno;
    /* While the tracer starts, the signal waits for it (tracer_init raises
     * it again once the trace can be closed properly). */
    if (getpid() == tr_pid && __atomic_load_n(&tr_state, __ATOMIC_ACQUIRE) == TR_STARTING) {
        __atomic_store_n(&tr_pending, sig, __ATOMIC_RELEASE);
        errno = saved;
        return;
    }
    tr_flush_for(sig);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    pthread_sigmask(SIG_UNBLOCK, &s, NULL);
    raise(sig);
    errno = saved;
}

/* The program's handler `old` of `sig`, run as the kernel would have run
 * it: its mask (and `sig` unless SA_NODEFER) blocked, its action reset
 * first with SA_RESETHAND. */
static void tr_call_handler(int sig, const struct sigaction *old, siginfo_t *info, void *uc)
{
    if (old->sa_flags & SA_RESETHAND) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, NULL);
    }
    sigset_t block = old->sa_mask, self;
    sigemptyset(&self);
    sigaddset(&self, sig);
    pthread_sigmask(SIG_BLOCK, &block, NULL);
    pthread_sigmask((old->sa_flags & SA_NODEFER) ? SIG_UNBLOCK : SIG_BLOCK, &self, NULL);
    if (old->sa_flags & SA_SIGINFO)
        old->sa_sigaction(sig, info, uc);
    else
        old->sa_handler(sig);
}

/* What the signal does once the trace is flushed: what it would have done
 * untraced, the program's action `old` being in place again. A fault that
 * an instruction raised (a kernel si_code) is raised again by that
 * instruction when the handler returns, and reaches the program's handler
 * or the default action as if the tracer had not been there (a core dump
 * shows the program's frames). Otherwise (SIGABRT, or a signal sent): the
 * program's handler runs from here, an ignored signal stays ignored, and
 * the default action is taken by raising the signal again. */
static void tr_chain(int sig, const struct sigaction *old, siginfo_t *info, void *uc)
{
    if (sig != SIGABRT && info != NULL && info->si_code > 0)
        return;
    if (old->sa_handler == SIG_IGN)
        return;
    if (old->sa_handler != SIG_DFL) {
        tr_call_handler(sig, old, info, uc);
        return;
    }
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    pthread_sigmask(SIG_UNBLOCK, &s, NULL);
    raise(sig);
}

static int tr_sig_index(int sig)
{
    for (int i = 0; i < TR_NSIGS; i++)
        if (tr_sigs[i] == sig)
            return i;
    return -1;
}

/* SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT: on the thread's alternate stack
 * (sig_stack.h), so that a stack overflow is flushed too. */
static void tr_fatal(int sig, siginfo_t *info, void *uc)
{
    int saved = errno;
    int i = tr_sig_index(sig);
    if (i < 0)
        return; /* installed for tr_sigs only */
    if (__atomic_load_n(&tr_state, __ATOMIC_ACQUIRE) != TR_STARTING)
        tr_flush_for(sig); /* a fault while the tracer starts has no writer to flush */
    /* From here on the signal is the program's: this handler's work is
     * done. */
    struct sigaction old = tr_old[i];
    sigaction(sig, &old, NULL);
    __atomic_fetch_and(&tr_installed, ~(1 << i), __ATOMIC_ACQ_REL);
    tr_chain(sig, &old, info, uc);
    errno = saved;
}

static int tr_is_ours(const struct sigaction *sa)
{
    return (sa->sa_flags & SA_SIGINFO) ? sa->sa_sigaction == tr_fatal : sa->sa_handler == tr_signal;
}

/* The tracer's action for tr_sigs[i]. Either handler runs with the other
 * signals that end the process blocked: one ending is flushed at a time. */
static void tr_action(int i, struct sigaction *sa)
{
    memset(sa, 0, sizeof *sa);
    sigemptyset(&sa->sa_mask);
    sigaddset(&sa->sa_mask, SIGTERM);
    sigaddset(&sa->sa_mask, SIGINT);
    if (i < TR_FIRST_FATAL) {
        sa->sa_handler = tr_signal;
        sa->sa_flags = SA_RESTART; /* it returns only while the tracer starts */
    } else {
        sa->sa_sigaction = tr_fatal;
        sa->sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    }
}

/* A forked child that starts a tracer of its own keeps the handlers it
 * inherited, and with them the program's actions saved before. */
static void tr_install_handlers(void)
{
    for (int i = 0; i < TR_NSIGS; i++) {
        struct sigaction cur, sa;
        if (sigaction(tr_sigs[i], NULL, &cur) != 0)
            continue;
        if (tr_is_ours(&cur)) {
            __atomic_fetch_or(&tr_installed, 1 << i, __ATOMIC_ACQ_REL);
            continue;
        }
        if (i < TR_FIRST_FATAL && cur.sa_handler != SIG_DFL)
            continue;
        tr_action(i, &sa);
        if (sigaction(tr_sigs[i], &sa, &tr_old[i]) == 0)
            __atomic_fetch_or(&tr_installed, 1 << i, __ATOMIC_ACQ_REL);
    }
}

/* Gives the program its actions back, where the tracer's handler is still
 * installed: a handler the program installed since stays. */
static void tr_remove_handlers(void)
{
    int on = __atomic_exchange_n(&tr_installed, 0, __ATOMIC_ACQ_REL);
    for (int i = 0; i < TR_NSIGS; i++) {
        struct sigaction cur;
        if ((on & 1 << i) && sigaction(tr_sigs[i], NULL, &cur) == 0 && tr_is_ours(&cur))
            sigaction(tr_sigs[i], &tr_old[i], NULL);
    }
}

static void tr_atexit(void) { (void)tracer_shutdown(); }

static uint64_t tr_ref_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* When the sampling phase was too short for a fit (TMTRACE_SAMPLE_MS of a
 * millisecond or two): the TSC against the clock over at least 10 ms since
 * init, sleeping for the rest. */
static uint64_t tr_two_point_hz(uint64_t tsc0, uint64_t ns0)
{
    uint64_t now = tr_ref_ns();
    if (now - ns0 < 10000000u) {
        uint64_t left = 10000000u - (now - ns0);
        struct timespec ts = { 0, (long)left };
        nanosleep(&ts, NULL);
    }
    uint32_t aux;
    uint64_t tsc1 = clock_rdtscp(&aux);
    uint64_t ns1 = tr_ref_ns();
    return ns1 > ns0 && tsc1 > tsc0 ? (uint64_t)((double)(tsc1 - tsc0) * 1e9 / (double)(ns1 - ns0) + 0.5) : 0;
}

static int tr_sample(unsigned phase, struct cs_set *set)
{
    return cs_phase(phase, tr_cpus, tr_ncpus, config.sample_ms, config.clock, set);
}

static void tr_fork_prepare(void)
{
    tw_fork_prepare();
    tb_fork_prepare();
}

static void tr_fork_parent(void)
{
    tb_fork_release();
    tw_fork_parent();
}

/* The child has no writer thread and the file is the parent's. With %p in
 * TMTRACE_FILE it starts a tracer of its own (a new file, its own sampling
 * phase, its own writer); without, it records nothing (tb_fork_child says
 * so at its first event). */
static int tr_child_traced;

static void tr_fork_child(void)
{
    tb_fork_child();
    tw_fork_child();
    tr_child_traced = 0;
    if (__atomic_load_n(&tr_state, __ATOMIC_ACQUIRE) != TR_ACTIVE)
        return;
    __atomic_store_n(&tr_state, TR_IDLE, __ATOMIC_RELEASE);
    tf_abandon(tr_file); /* closes the parent's descriptor, writes nothing */
    tr_file = NULL;
    if (strstr(config.file, "%p") == NULL)
        return;
    if (tracer_init() == 0)
        tr_child_traced = 1;
    else
        fprintf(stderr, "libtmtrace: process %ld (forked): no trace: %s\n", (long)getpid(), error_get());
}

void tracer_fork_thread(struct tb_thread *t) { tb_fork_thread(t, tr_child_traced); }

/* The trace header's fields but the start time: the format, the clock, the
 * machine, the process and how events are stamped. */
static void tr_fill_header(struct tf_header *hdr, uint64_t hz)
{
    hdr->version = TF_VERSION;
    hdr->flags = (skew_active() ? TF_HDR_INJECTED : 0) | (TMT_STAMP_COUNTER ? TF_HDR_COUNTED : 0);
    hdr->tsc_hz = hz;
    hdr->ref_clock = config.clock == CONFIG_CLOCK_MONOTONIC_RAW ? 1 : 0;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    hdr->ncpus = (uint32_t)(online > 0 ? online : tr_ncpus);
    hdr->pid = (uint32_t)getpid();
    hdr->events_level = (uint32_t)config.events;
    hdr->detail = config.events == CONFIG_EVENTS_TX ? (uint32_t)config.detail : 0;
    hdr->stripes_log2 = (uint32_t)config.stripes_log2;
    hdr->stripe_shift = (uint32_t)config.stripe_shift;
    /* Must match tb_clock: unordered where the CPU has
     * rdpid (only SERIAL records stay ordered); boundary reads/writes repeat. */
    uint8_t cheap = clock_has_rdpid() ? TF_STAMP_UNORDERED : TF_STAMP_ORDERED;
    hdr->stamp_access = config.stamp == CONFIG_STAMP_BOUNDARY ? TF_STAMP_REPEATED : cheap;
    hdr->stamp_boundary = cheap;
    hdr->stamp_commit = cheap;
    hdr->stamp_flags = TF_STAMP_CPU_INCREASING;
    tr_cmdline(hdr->cmdline, sizeof hdr->cmdline);
}

/* The writer runs: the tracer flushes at exit and survives fork (handlers
 * registered once per process; tracer_init publishes the state). */
static void tr_go_active(void)
{
    if (!tr_atexit_done) {
        tr_atexit_done = 1;
        atexit(tr_atexit);
        /* A thread that forks waits until the writer is between two writes
         * and no thread holds the pool or the thread table: a writer caught
         * inside malloc would leave the child's allocator locked for ever. */
        (void)pthread_atfork(tr_fork_prepare, tr_fork_parent, tr_fork_child);
    }
}

/* The start proper: sampling phase, file, writer (tracer_init around it). */
static int tr_start(void)
{
    static struct tf_skew skews[SKEW_MAX_CPUS];
    int nskew = skew_parse(config.skew, skews, SKEW_MAX_CPUS);
    if (nskew < 0)
        return -1;
    tr_ncpus = cs_cpus(tr_cpus, CPU_SETSIZE);
    if (tr_ncpus < 0 || tw_set_cpus(tr_cpus, tr_ncpus) != 0)
        return -1;

    struct tf_header hdr;
    memset(&hdr, 0, sizeof hdr);
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    hdr.wall_start_ns = (int64_t)wall.tv_sec * 1000000000 + wall.tv_nsec;
    uint32_t aux;
    uint64_t base = clock_rdtscp(&aux), base_ns = tr_ref_ns();

    /* The pool's arena is populated after this phase (tb_setup), not
     * during it: work on the sampling threads' CPUs widens their brackets. */
    struct cs_set pre = { 0 };
    if (tr_sample(TF_PHASE_PRE, &pre) != 0) {
        cs_set_free(&pre);
        return -1;
    }
    uint64_t hz = cs_fit_hz(pre.s, pre.n);
    if (hz == 0)
        hz = tr_two_point_hz(base, base_ns);
    if (hz == 0) {
        cs_set_free(&pre);
        return error_set("libtmtrace: could not estimate the TSC frequency");
    }
    skew_init(skews, (size_t)nskew, hz, base);
    cs_apply_skew(pre.s, pre.n);

    tr_fill_header(&hdr, hz);

    /* Tracing must never stop the program: a trace that cannot be created
     * or written (no permission, full disk) turns into a writer that counts
     * every event as lost and says so on stderr at exit. */
    char open_error[512] = "";
    tr_expand_path();
    errno = 0;
    tr_file = tf_create(tr_path, &hdr, config.file_io == CONFIG_FILE_IO_DIRECT ? TF_WRITE_DIRECT : 0);
    if (tr_file == NULL) {
        /* Nothing could ever be recorded: say so now, naming the variable. */
        int e = errno;
        cs_set_free(&pre);
        return error_set("TMTRACE_FILE=%s: cannot create %s: %s", config.file, tr_path,
                         e ? strerror(e) : "unknown error");
    }
    if ((nskew > 0 && tf_write_skews(tr_file, skews, (size_t)nskew) != 0) ||
             tf_write_samples(tr_file, pre.s, pre.n) != 0 || tr_write_loadmap() != 0)
        snprintf(open_error, sizeof open_error, "%s", error_get());
    cs_set_free(&pre);
    tb_setup(hz, tr_cpus, tr_ncpus, tw_offer);
    /* The tracer's own cost per event, for tmcheck's estimate of its share
     * of the run's time. */
    struct tf_runinfo ri = { tb_event_cost_ns() };
    if (tr_file != NULL && !open_error[0] && tf_write_runinfo(tr_file, &ri) != 0)
        snprintf(open_error, sizeof open_error, "%s", error_get());
    if (tw_start(tr_file, config.mode, tr_on_signal, open_error[0] ? open_error : NULL) != 0) {
        tb_close();
        tf_abandon(tr_file);
        tr_file = NULL;
        return -1;
    }
    if (open_error[0]) {
        fprintf(stderr, "libtmtrace: %s; the program runs on and its events are counted as lost\n",
                open_error);
    }
    tr_go_active();
    return 0;
}

/* The handlers go in before the trace file is created: a SIGTERM/SIGINT
 * between the two ended the program with a trace that had no END chunk. A
 * signal that arrives while the tracer starts is held and raised again at
 * the end, when it flushes the trace (or, if the start failed, takes its
 * default action). */
int tracer_init(void)
{
    if (config.events == CONFIG_EVENTS_OFF || __atomic_load_n(&tr_state, __ATOMIC_ACQUIRE) == TR_ACTIVE)
        return 0;
    tr_pid = getpid();
    apc_init(); /* before any thread can abort */
    uint64_t cpu0 = tr_process_cpu_ns();
    __atomic_store_n(&tr_exited, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&tr_exit_cpu, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&tr_state, TR_STARTING, __ATOMIC_RELEASE);
    tr_install_handlers();
    int rc = tr_start();
    if (rc != 0)
        tb_teardown(); /* the arena tr_start may have mapped */
    __atomic_store_n(&tr_init_cpu, tr_process_cpu_ns() - cpu0, __ATOMIC_RELAXED);
    __atomic_store_n(&tr_state, rc == 0 ? TR_ACTIVE : TR_IDLE, __ATOMIC_RELEASE);
    if (rc != 0)
        tr_remove_handlers();
    int sig = __atomic_exchange_n(&tr_pending, 0, __ATOMIC_ACQ_REL);
    if (sig != 0)
        raise(sig);
    return rc;
}

int tracer_shutdown(void)
{
    /* A forked child inherits the state but not the writer thread, and the
     * file belongs to the parent: the child leaves both alone. */
    if (getpid() != tr_pid)
        return 0;
    int expect = TR_ACTIVE;
    if (!__atomic_compare_exchange_n(&tr_state, &expect, TR_CLOSED, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return 0;
    uint64_t cpu0 = tr_process_cpu_ns();
    __atomic_store_n(&tr_writer_cpu_before_exit, tw_cpu_ns(), __ATOMIC_RELAXED);
    tr_remove_handlers();
    /* Threads that did not leave (e.g. exit() from a traced thread) run on:
     * as on a signal, hand-over closes and the queue is written and sealed
     * before their partial chunks are copied, so a chunk they hand over
     * later is counted as dropped instead of repeating the copied records. */
    uint64_t dropped = tb_total_dropped(), shed = tb_total_shed();
    tb_close();
    tw_stop();
    tb_snapshot_all(tw_write_now);

    int rc = 0;
    struct cs_set post = { 0 };
    if (tr_sample(TF_PHASE_POST, &post) == 0) {
        cs_apply_skew(post.s, post.n);
        errno = 0;
        if (tw_errors() == 0 && tf_write_samples(tr_file, post.s, post.n) != 0)
            tw_note_error(0, 0);
    } else {
        rc = -1;
    }
    cs_set_free(&post);
    tr_write_end(0);
    tw_file_done(); /* the tail is in the file: its final size */
    errno = 0;
    if (tr_file != NULL && tf_finish(tr_file, 0) != 0 && tw_errors() == 0)
        tw_note_error(0, 0);
    tr_file = NULL;
    tr_report_errors();
    tr_report_shed(shed);
    tr_report_drops(dropped);
    if (tw_errors() != 0 && rc == 0)
        rc = error_set("libtmtrace: %s: write failed: %s; %llu events lost", tr_path, tw_first_error(),
                       (unsigned long long)tw_lost());
    tb_teardown();
    __atomic_store_n(&tr_exit_cpu, tr_process_cpu_ns() - cpu0, __ATOMIC_RELAXED);
    __atomic_store_n(&tr_exited, 1, __ATOMIC_RELEASE);
    return rc;
}

/* Records lost by the writer count as dropped, not recorded: the two add up
 * to the events the program produced. */
uint64_t tracer_events_recorded(void) { return tb_total_recorded() - tw_lost(); }
uint64_t tracer_events_dropped(void) { return tb_total_dropped() + tw_lost(); }
uint64_t tracer_writer_events(void) { return tw_records_written(); }
uint64_t tracer_writer_cpu_ns(void) { return tw_cpu_ns(); }
uint64_t tracer_trace_bytes(void) { return tw_bytes(); }
uint64_t tracer_buffer_bytes(void) { return tb_pool_bytes(); }
uint64_t tracer_buffer_inline_maps(void) { return tb_inline_growths(); }
uint64_t tracer_buffer_late_maps(void) { return tb_late_growths(); }

uint64_t tracer_cpu_ns(void)
{
    uint64_t init = __atomic_load_n(&tr_init_cpu, __ATOMIC_RELAXED);
    if (!__atomic_load_n(&tr_exited, __ATOMIC_ACQUIRE))
        return init + tw_cpu_ns();
    return init + __atomic_load_n(&tr_writer_cpu_before_exit, __ATOMIC_RELAXED) +
           __atomic_load_n(&tr_exit_cpu, __ATOMIC_RELAXED);
}
uint64_t tracer_stamps_raised(void) { return tb_total_raised(); }
uint64_t tracer_attempts_shed(void) { return tb_total_shed(); }
