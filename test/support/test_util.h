/*
 * test_util.h - small helpers shared by the tests: temporary directories,
 * running a command, paths into the build tree.
 */
#ifndef TMT_TEST_UTIL_H
#define TMT_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* A fresh temporary directory (removed by tu_cleanup at exit). */
const char *tu_tmpdir(void);
/* tu_tmpdir()/name, in a static rotating buffer. */
const char *tu_path(const char *name);
/* The build tree's path for a relative name, e.g. "tools/tmdump". */
const char *tu_build(const char *rel);
/* Runs a shell command; returns its exit status (or -1). Output goes to
 * out (if not NULL), NUL-terminated, at most cap bytes. */
int tu_run(const char *cmd, char *out, size_t cap);
/* Reads a whole file; caller frees. NULL if missing. */
char *tu_read_file(const char *path, size_t *len);
/* Reads dir/name whole (tu_read_file); NULL if missing or the path is too long. */
char *tu_read_in(const char *dir, const char *name, size_t *len);
/* Forks with a pipe from the child to the parent (stdio flushed first):
 * the child gets 0 and keeps only fds[1], the parent the child's pid and
 * keeps only fds[0]; -1 when the pipe or the fork fails. */
int tu_fork_piped(int fds[2]);
/* Runs fn(arg) in n threads (at most 16) and joins them; 0, or -1 when a
 * thread cannot be created (those started are joined). */
int tu_run_threads(int n, void *(*fn)(void *), void *arg);
/* Enters the calling thread (tmt_thread_enter) at the trace level `events`
 * (enum config_events; a thread takes the level when it enters), for tests
 * of paths that only untraced, or only fully traced, threads take. */
struct tmt_tx *tu_enter_at(int events);
/* xorshift64 (13, 7, 17): steps *state (never 0) and returns it, so that a
 * test's random data is the same on every run. */
uint64_t tu_xorshift(uint64_t *state);

/* What a trace file holds, counted with the format's reader. */
struct tu_trace_counts {
    uint64_t records;     /* event records */
    uint64_t commits;     /* of them, COMMITs */
    uint64_t allocs;      /* of them, ALLOCs */
    int have_end;         /* an END chunk */
    unsigned end_signal;  /* the signal END names, 0 none */
    uint32_t pid;         /* the header's process id */
    uint64_t shed;        /* STARTs flagged TF_START_SHED (level all, recorded as at tx) */
    uint64_t shed_accesses; /* READ and WRITE records inside those attempts (none is expected) */
    uint64_t shed_wsets;  /* WSET records after their COMMITs */
};
/* Counts the trace at `path` into *out; 0, or -1 when it cannot be read
 * (error_get() says why). */
int tu_count_trace(const char *path, struct tu_trace_counts *out);

/* Aborts so far of the sites labelled `label` (tmt_stats_sites). */
uint64_t tu_site_aborts(const char *label);

#endif
