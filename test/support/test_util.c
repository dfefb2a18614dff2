/*
 * test_util.c - helpers shared by the tests (see test_util.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "test_util.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "tmtrace.h"
#include "trace_file.h"

static char tmpdir[256];

/* ---- fork under AddressSanitizer ----------------------------------------------- */

/* GCC 12's libasan takes no lock of its allocator around fork() (it has no
 * fork interceptor): a child of a process whose other threads were inside
 * its allocator at that instant inherits a size class's lock held for
 * ever, and LeakSanitizer's check at exit, which locks every size class,
 * then waits for ever. Seen with gdb in a child of test_fork's
 * fork_untraced (LockAllocator), and as test_damage's forking child that
 * never exited. So a child forked while its parent had other threads (the
 * tracer's writer and refill threads, the program's) leaves that check out
 * (__lsan_is_turned_off, LeakSanitizer's documented hook); every process
 * forked from a single thread keeps it, as does every test's own process.
 * The count is read with plain system calls: the prepare handler runs
 * beside the other threads, and must not wait on the allocator itself. */
static int tu_lsan_off;
static int tu_fork_threads;
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void) { return tu_lsan_off; }

static int tu_threads_now(void)
{
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 2; /* not known: as if there were others */
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    const char *p = strstr(buf, "\nThreads:");
    return p ? atoi(p + strlen("\nThreads:")) : 2;
}

static void tu_fork_prepare(void) { tu_fork_threads = tu_threads_now(); }
static void tu_fork_child(void) { tu_lsan_off |= tu_fork_threads > 1; }

__attribute__((constructor)) static void tu_fork_watch(void)
{
    (void)pthread_atfork(tu_fork_prepare, NULL, tu_fork_child);
}

static void tu_cleanup(void)
{
    if (tmpdir[0] && getenv("TMT_KEEP_TMP") == NULL) {
        char cmd[320];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "warning: could not remove %s\n", tmpdir);
    }
}

const char *tu_tmpdir(void)
{
    if (!tmpdir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s/tmtrace-test-XXXXXX", base ? base : "/tmp");
        if (mkdtemp(tmpdir) == NULL) {
            perror("mkdtemp");
            abort();
        }
        atexit(tu_cleanup);
    }
    return tmpdir;
}

const char *tu_path(const char *name)
{
    static char bufs[8][512];
    static int next;
    char *b = bufs[next++ & 7];
    snprintf(b, 512, "%s/%s", tu_tmpdir(), name);
    return b;
}

const char *tu_build(const char *rel)
{
    static char bufs[8][512];
    static int next;
    char *b = bufs[next++ & 7];
    const char *root = getenv("TMT_BUILD_ROOT");
    snprintf(b, 512, "%s/%s", root ? root : TMT_BUILD_ROOT, rel);
    return b;
}

int tu_run(const char *cmd, char *out, size_t cap)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = 0;
    char tmp[4096];
    size_t got;
    while ((got = fread(tmp, 1, sizeof tmp, p)) > 0) {
        if (out && cap > 1 && n < cap - 1) {
            size_t take = got < cap - 1 - n ? got : cap - 1 - n;
            memcpy(out + n, tmp, take);
            n += take;
        }
    }
    if (out && cap)
        out[n] = '\0';
    int st = pclose(p);
    if (st == -1)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

char *tu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)sz + 1);
    if (buf && fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[sz] = '\0';
        if (len)
            *len = (size_t)sz;
    }
    return buf;
}

struct tmt_tx *tu_enter_at(int events)
{
    int saved = config.events;
    config.events = events;
    struct tmt_tx *tx = tmt_thread_enter();
    config.events = saved;
    return tx;
}

uint64_t tu_xorshift(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

int tu_run_threads(int n, void *(*fn)(void *), void *arg)
{
    pthread_t th[16];
    int started = 0;
    while (started < n && started < 16 && pthread_create(&th[started], NULL, fn, arg) == 0)
        started++;
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    return started == n ? 0 : -1;
}

char *tu_read_in(const char *dir, const char *name, size_t *len)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return NULL;
    return tu_read_file(path, len);
}

int tu_fork_piped(int fds[2])
{
    fflush(NULL);
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    close(fds[pid == 0 ? 0 : 1]);
    return (int)pid;
}

/* One event of a thread's program order; `shed` is its state (1: inside a
 * shed attempt). */
static void count_event(struct tu_trace_counts *out, const struct tf_event *e, uint8_t *shed)
{
    out->commits += e->kind == TF_EV_COMMIT;
    out->allocs += e->kind == TF_EV_ALLOC;
    if (e->kind == TF_EV_START) {
        *shed = (tf_start_flags(e->value) & TF_START_SHED) != 0;
        out->shed += *shed;
    }
    out->shed_accesses += *shed && (e->kind == TF_EV_READ || e->kind == TF_EV_WRITE);
    out->shed_wsets += *shed && e->kind == TF_EV_WSET;
}

int tu_count_trace(const char *path, struct tu_trace_counts *out)
{
    *out = (struct tu_trace_counts){ 0 };
    struct tf_reader *r = tf_open(path, 0);
    if (r == NULL)
        return -1;
    out->pid = tf_reader_header(r)->pid;
    struct tf_chunk c;
    int rc;
    uint8_t shed[256] = { 0 }; /* by thread id (mod 256): in a shed attempt, or after its COMMIT */
    while ((rc = tf_next(r, &c)) == 1) {
        if (c.kind == TF_CHUNK_EVENTS) {
            out->records += c.count;
            for (size_t i = 0; i < c.count; i++)
                count_event(out, &c.events[i], &shed[c.thread & 255]);
        } else if (c.kind == TF_CHUNK_END) {
            out->have_end = 1;
            out->end_signal = c.end_signal;
        }
    }
    tf_close(r);
    return rc < 0 ? -1 : 0;
}

uint64_t tu_site_aborts(const char *label)
{
    tmt_site_stats s[16];
    size_t n = tmt_stats_sites(s, 16);
    uint64_t a = 0;
    for (size_t i = 0; i < n && i < 16; i++)
        if (strcmp(s[i].label, label) == 0)
            a += s[i].aborts;
    return a;
}
