/*
 * test_damage.c - the damage and loss matrix over REAL traces (tmbench runs
 * made by the test): truncation at every chunk boundary and at random
 * offsets, single-bit flips in the file header, a chunk header and a
 * payload, a duplicated chunk, two traces concatenated, a zero-filled tail.
 * For each, tmdump, tmcheck and tmsync either accept the file with exactly
 * its events or exit 2 with one line naming the file and the offset; with
 * --salvage they read exactly the undamaged chunks, say what they skipped,
 * and never count an event that was not in an undamaged chunk of the
 * original. Then the losses a run can meet: a full disk and an unwritable
 * output (the program still runs correctly and says what was lost), tools
 * that must not overwrite their input or leave partial outputs, SIGKILL,
 * SIGTERM and SIGINT in the middle of a run, and fork() while tracing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glob.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "error.h"
#include "tmtrace.h"
#include "trace_file.h"
#include "test_util.h"

#define MAX_CHUNKS 16384

/* Where each chunk of a trace lies and how many events it holds. */
struct chunk_map {
    size_t n;
    uint64_t size;                 /* file size */
    uint64_t off[MAX_CHUNKS];
    uint64_t len[MAX_CHUNKS];      /* chunk header + payload */
    uint32_t kind[MAX_CHUNKS];
    uint64_t events[MAX_CHUNKS];
    uint64_t total_events;
};

static struct chunk_map orig;      /* the main trace */
static char orig_path[1024];
static char *orig_bytes;
static size_t orig_len;

static char out[1 << 23];
static char err[1 << 16];

/* ---- helpers -------------------------------------------------------------- */

/* tu_path() rotates a few buffers; names kept across tool runs need their
 * own copy (freed by the group teardown). */
static char *kept[256];
static size_t nkept;

static const char *keep(const char *p)
{
    char *c = strdup(p);
    if (!c)
        abort();
    assert_true(nkept < sizeof kept / sizeof kept[0]);
    kept[nkept++] = c;
    return c;
}
#define keep_path(name) keep(tu_path(name))

static void write_file(const char *path, const void *a, size_t alen, const void *b, size_t blen)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (alen)
        assert_int_equal(fwrite(a, 1, alen, f), alen);
    if (blen)
        assert_int_equal(fwrite(b, 1, blen, f), blen);
    assert_int_equal(fclose(f), 0);
}

/* Maps a well-formed trace with the format module's own reader. */
static void map_trace(const char *path, struct chunk_map *m)
{
    memset(m, 0, sizeof *m);
    struct tf_reader *r = tf_open(path, TF_SKIP_EVENTS);
    if (!r)
        print_error("%s\n", error_get());
    assert_non_null(r);
    struct tf_chunk c;
    int rc;
    while ((rc = tf_next(r, &c)) == 1) {
        assert_true(m->n < MAX_CHUNKS);
        m->off[m->n] = c.offset;
        m->len[m->n] = 40 + c.stored_len;
        m->kind[m->n] = c.kind;
        m->events[m->n] = c.kind == TF_CHUNK_EVENTS ? c.count : 0;
        m->total_events += m->events[m->n];
        m->n++;
    }
    assert_int_equal(rc, 0);
    tf_close(r);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    m->size = (uint64_t)st.st_size;
}

/* Runs a shell command with stdout in `out` and stderr in `err`. */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[4096 + 1100];
    static char errpath[1024];
    if (!errpath[0])
        snprintf(errpath, sizeof errpath, "%s", tu_path("stderr.txt"));
    snprintf(full, sizeof full, "%s 2>'%s'", cmd, errpath);
    int rc = tu_run(full, out, sizeof out);
    size_t n = 0;
    char *e = tu_read_file(errpath, &n);
    snprintf(err, sizeof err, "%s", e ? e : "");
    free(e);
    return rc;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* The top-level integer "key" of a JSON object (its first occurrence). */
static long long json_int(const char *text, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(text, pat);
    return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

/* Events tmdump lists: one line each; a line that starts with '#' marks
 * a hole in a thread's order (a skipped chunk's events), not an event. */
static long long listed_events(const char *text)
{
    long long n = 0;
    for (const char *line = text; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : line + strlen(line))
        n += *line != '#' && *line != '\n';
    return n;
}

static const char *tool(const char *name)
{
    static char buf[4][1024];
    static int k;
    char rel[64];
    snprintf(rel, sizeof rel, "tools/%s", name);
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s", tu_build(rel));
    return buf[k];
}

/* Every tool refuses `path` with exit 2 and one line on stderr naming the
 * file and `offset` (or only "offset" when offset is UINT64_MAX). */
static void expect_refused(const char *path, uint64_t offset, const char *what)
{
    char want[64];
    if (offset == UINT64_MAX)
        snprintf(want, sizeof want, "offset");
    else
        snprintf(want, sizeof want, "offset %llu", (unsigned long long)offset);
    const char *cmds[3];
    char c0[2048], c1[2048], c2[2048];
    snprintf(c0, sizeof c0, "'%s' --summary '%s'", tool("tmdump"), path);
    snprintf(c1, sizeof c1, "'%s' --json '%s'", tool("tmcheck"), path);
    snprintf(c2, sizeof c2, "'%s' '%s' -o '%s'", tool("tmsync"), path, tu_path("refused.sync.bin"));
    cmds[0] = c0;
    cmds[1] = c1;
    cmds[2] = c2;
    for (int i = 0; i < 3; i++) {
        remove(tu_path("refused.sync.bin"));
        int rc = run("%s", cmds[i]);
        if (rc != 2 || count_lines(err) != 1 || !strstr(err, path) || !strstr(err, want))
            print_error("%s: `%s` exited %d, stderr: %s(wanted one line naming %s and '%s')\n", what, cmds[i],
                        rc, err, path, want);
        assert_int_equal(rc, 2);
        assert_int_equal(count_lines(err), 1);
        assert_non_null(strstr(err, path));
        assert_non_null(strstr(err, want));
        assert_int_equal(access(tu_path("refused.sync.bin"), F_OK), -1); /* no partial output */
    }
}

/* With --salvage every tool reads exactly `events` events (and, when
 * `skipped`, says on stderr that it skipped damage). `end_kept`: the END
 * chunk survived the damage; without it tmsync and tmcheck call the trace
 * incomplete (exit 4, which outranks 3). */
static void expect_salvaged(const char *path, long long events, int skipped, int end_kept, const char *what)
{
    /* exit 3: the output is complete but damaged chunks were skipped */
    const int want_rc = skipped ? 3 : 0, want_tool = end_kept ? want_rc : 4;
    int rc = run("'%s' --salvage '%s'", tool("tmdump"), path);
    if (rc != want_rc || listed_events(out) != events || (skipped && !strstr(err, "skip")))
        print_error("%s: tmdump --salvage exited %d, %lld events (want %lld), stderr: %s\n", what, rc,
                    listed_events(out), events, err);
    assert_int_equal(rc, want_rc);
    assert_int_equal(listed_events(out), events);
    if (skipped)
        assert_non_null(strstr(err, "skip"));

    rc = run("'%s' --salvage --json '%s'", tool("tmcheck"), path);
    if ((rc != want_tool && rc != 1) || json_int(out, "events") != events)
        print_error("%s: tmcheck --salvage exited %d, %lld events (want %lld), stderr: %s\n", what, rc,
                    json_int(out, "events"), events, err);
    assert_true(rc == want_tool || rc == 1);   /* 1: violations, which outrank the damage */
    if (!end_kept)
        assert_non_null(strstr(err, "incomplete trace: no END chunk"));
    assert_int_equal(json_int(out, "events"), events);
    if (skipped)
        assert_true(json_int(out, "skipped_chunks") >= 1);
    else
        assert_int_equal(json_int(out, "skipped_chunks"), 0);

    const char *synced = keep_path("salvaged.sync.bin");
    remove(synced);
    rc = run("'%s' --salvage '%s' -o '%s'", tool("tmsync"), path, synced);
    if (rc == 2 && strstr(err, "samples")) /* the samples were in the damage: merge only */
        rc = run("'%s' --salvage --model none '%s' -o '%s'", tool("tmsync"), path, synced);
    if (rc != want_tool)
        print_error("%s: tmsync --salvage exited %d, stderr: %s\n", what, rc, err);
    assert_int_equal(rc, want_tool);
    rc = run("'%s' --json '%s'", tool("tmcheck"), synced);
    assert_true(rc == (end_kept ? 0 : 4) || rc == 1);   /* the synchronised trace lacks what its input lacked */
    if (json_int(out, "events") != events)
        print_error("%s: the salvaged, synchronised trace has %lld events, want %lld\n", what,
                    json_int(out, "events"), events);
    assert_int_equal(json_int(out, "events"), events);
}

/* Events in the chunks that end at or before `end`. */
static long long events_before(const struct chunk_map *m, uint64_t end)
{
    long long n = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->off[i] + m->len[i] <= end)
            n += (long long)m->events[i];
    return n;
}

/* The index of the chunk that holds byte `at`. */
static size_t chunk_at(const struct chunk_map *m, uint64_t at)
{
    for (size_t i = 0; i < m->n; i++)
        if (at >= m->off[i] && at < m->off[i] + m->len[i])
            return i;
    fail_msg("offset %llu is in no chunk", (unsigned long long)at);
    return 0;
}

/* An EVENTS chunk in the middle of the file. */
static size_t middle_events_chunk(const struct chunk_map *m)
{
    for (size_t i = m->n / 2; i < m->n; i++)
        if (m->kind[i] == TF_CHUNK_EVENTS && m->events[i] > 0)
            return i;
    for (size_t i = 0; i < m->n; i++)
        if (m->kind[i] == TF_CHUNK_EVENTS && m->events[i] > 0)
            return i;
    fail_msg("no events chunk");
    return 0;
}

/* A traced tmbench run into path; returns its exit status and leaves its
 * JSON line in out. */
static int traced_run(const char *path, const char *env, const char *args)
{
    return run("TMTRACE_EVENTS=all TMTRACE_BUFFER=4096 TMTRACE_HTM=emulate TMTRACE_SAMPLE_MS=20 "
               "TMTRACE_FILE='%s' %s '%s' %s",
               path, env, tu_build("tmbench/tmbench"), args);
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(orig_path, sizeof orig_path, "%s", tu_path("orig.bin"));
    if (traced_run(orig_path, "", "bank --threads 2 --ops 1500 --accounts 16") != 0) {
        fprintf(stderr, "tmbench bank failed: %s %s\n", out, err);
        return -1;
    }
    orig_bytes = tu_read_file(orig_path, &orig_len);
    if (!orig_bytes)
        return -1;
    map_trace(orig_path, &orig);
    return orig.n >= 8 && orig.total_events > 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    free(orig_bytes);
    while (nkept)
        free(kept[--nkept]);
    return 0;
}

/* ---- the corruption matrix ---------------------------------------------- */

static void original_is_read_whole_by_every_tool(void **state)
{
    (void)state;
    assert_int_equal(orig.size, orig_len);
    assert_int_equal(orig.kind[orig.n - 1], TF_CHUNK_END);
    assert_int_equal(run("'%s' '%s'", tool("tmdump"), orig_path), 0);
    assert_int_equal(listed_events(out), (long long)orig.total_events);
    assert_int_equal(run("'%s' --json '%s'", tool("tmcheck"), orig_path), 0);
    assert_int_equal(json_int(out, "events"), (long long)orig.total_events);
    expect_salvaged(orig_path, (long long)orig.total_events, 0, 1, "undamaged");
}

/* A file cut exactly between two chunks is a trace whose writer stopped:
 * every tool reads the chunks that are there, no more, and tmsync and
 * tmcheck say that it is incomplete (its END chunk is gone). */
static void truncation_at_every_chunk_boundary_keeps_exactly_the_chunks_before_it(void **state)
{
    (void)state;
    const char *path = keep_path("cut.bin");
    for (size_t k = 1; k < orig.n; k++) {
        uint64_t end = orig.off[k];
        write_file(path, orig_bytes, end, NULL, 0);
        long long want = events_before(&orig, end);
        int rc = run("'%s' '%s'", tool("tmdump"), path);
        if (rc != 0 || listed_events(out) != want)
            print_error("cut at %llu (chunk %zu): tmdump exited %d with %lld events, want %lld: %s\n",
                        (unsigned long long)end, k, rc, listed_events(out), want, err);
        assert_int_equal(rc, 0);
        assert_int_equal(listed_events(out), want);
        rc = run("'%s' --json '%s'", tool("tmcheck"), path);
        assert_true(rc == 4 || rc == 1);
        assert_int_equal(json_int(out, "events"), want);
        assert_non_null(strstr(err, "incomplete trace: no END chunk"));
        /* tmsync needs samples; without them it refuses in one line */
        rc = run("'%s' '%s' -o '%s'", tool("tmsync"), path, tu_path("cut.sync.bin"));
        assert_true(rc == 4 || (rc == 2 && count_lines(err) == 1 && strstr(err, path)));
    }
}

static void truncation_at_random_offsets_is_refused_or_salvaged_to_whole_chunks(void **state)
{
    (void)state;
    const char *path = keep_path("torn.bin");
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 10; i++) {
        tu_xorshift(&rng);
        uint64_t first = orig.off[0];
        uint64_t end = first + 1 + rng % (orig.size - first - 1);
        size_t k = chunk_at(&orig, end);
        if (end == orig.off[k])
            end++; /* strictly inside a chunk */
        write_file(path, orig_bytes, end, NULL, 0);
        expect_refused(path, orig.off[k], "torn chunk");
        expect_salvaged(path, events_before(&orig, end), 1, 0, "torn chunk");
    }
}

/* A flipped bit in the version field reads as a file from a newer format:
 * refused in one line naming the file and the version, salvage or not (a
 * reader cannot know the layout of a newer header). */
static void bit_flip_in_the_header_version_is_refused_even_with_salvage(void **state)
{
    (void)state;
    const char *path = keep_path("flip-version.bin");
    char *copy = malloc(orig_len);
    assert_non_null(copy);
    memcpy(copy, orig_bytes, orig_len);
    copy[9] ^= 0x10;
    write_file(path, copy, orig_len, NULL, 0);
    free(copy);
    static const char *const cmds[] = {"tmdump", "tmcheck", "tmsync"};
    for (int salvage = 0; salvage < 2; salvage++)
        for (size_t i = 0; i < 3; i++) {
            int rc = run("'%s' %s '%s' %s", tool(cmds[i]), salvage ? "--salvage" : "", path,
                         i == 2 ? "-o /dev/null/x" : "");
            if (rc != 2 || count_lines(err) != 1 || !strstr(err, path) || !strstr(err, "version"))
                print_error("%s %s on a flipped version exited %d: %s\n", cmds[i], salvage ? "--salvage" : "",
                            rc, err);
            assert_int_equal(rc, 2);
            assert_int_equal(count_lines(err), 1);
            assert_non_null(strstr(err, path));
            assert_non_null(strstr(err, "version"));
        }
}

/* Any other header bit: refused (the header CRC), and salvage reads every
 * chunk, reporting the damaged header. */
static void bit_flip_elsewhere_in_the_header_is_refused_or_salvaged_whole(void **state)
{
    (void)state;
    const char *path = keep_path("flip-header.bin");
    static const size_t bytes[] = {20, 300, 571, 573};
    for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++) {
        char *copy = malloc(orig_len);
        assert_non_null(copy);
        memcpy(copy, orig_bytes, orig_len);
        copy[bytes[i]] ^= 0x10;
        write_file(path, copy, orig_len, NULL, 0);
        free(copy);
        expect_refused(path, UINT64_MAX, "header bit flip");
        expect_salvaged(path, (long long)orig.total_events, 1, 1, "header bit flip");
    }
}

static void flip(size_t at, const char *name, const char *what)
{
    const char *path = keep_path(name);
    char *copy = malloc(orig_len);
    assert_non_null(copy);
    memcpy(copy, orig_bytes, orig_len);
    copy[at] ^= 0x04;
    write_file(path, copy, orig_len, NULL, 0);
    free(copy);
    size_t k = chunk_at(&orig, at);
    expect_refused(path, orig.off[k], what);
    expect_salvaged(path, (long long)(orig.total_events - orig.events[k]), 1, orig.kind[k] != TF_CHUNK_END, what);
}

static void bit_flip_in_a_chunk_header_loses_that_chunk_only(void **state)
{
    (void)state;
    size_t k = middle_events_chunk(&orig);
    static const size_t fields[] = {0, 4, 8, 20, 24, 32, 36};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        flip((size_t)orig.off[k] + fields[i], "flip-chunk-header.bin", "chunk header bit flip");
}

static void bit_flip_in_a_payload_loses_that_chunk_only(void **state)
{
    (void)state;
    size_t k = middle_events_chunk(&orig);
    flip((size_t)(orig.off[k] + 40 + (orig.len[k] - 40) / 2), "flip-payload.bin", "payload bit flip");
    flip((size_t)(orig.off[k] + orig.len[k] - 1), "flip-payload.bin", "payload bit flip, last byte");
    /* the samples chunk too: tmsync must not fit a damaged sample */
    flip((size_t)(orig.off[1] + 40 + 7), "flip-samples.bin", "samples payload bit flip");
}

/* A chunk written twice (a writer retry, a bad copy): its events exist once. */
static void duplicated_chunk_is_refused_or_read_once(void **state)
{
    (void)state;
    size_t k = middle_events_chunk(&orig);
    uint64_t cut = orig.off[k] + orig.len[k];
    const char *path = keep_path("dup.bin");
    char *copy = malloc(orig_len + orig.len[k]);
    assert_non_null(copy);
    memcpy(copy, orig_bytes, cut);
    memcpy(copy + cut, orig_bytes + orig.off[k], orig.len[k]);
    memcpy(copy + cut + orig.len[k], orig_bytes + cut, orig_len - cut);
    write_file(path, copy, orig_len + orig.len[k], NULL, 0);
    free(copy);
    expect_refused(path, cut, "duplicated chunk");
    expect_salvaged(path, (long long)orig.total_events, 1, 1, "duplicated chunk");
}

/* A second trace appended to the first: nothing of the second is this
 * trace's, so it is damage after the first one's end. */
static void two_traces_concatenated_are_refused_or_read_as_the_first(void **state)
{
    (void)state;
    const char *other = keep_path("other.bin");
    assert_int_equal(traced_run(other, "", "bank --threads 2 --ops 300 --accounts 16"), 0);
    size_t olen;
    char *obytes = tu_read_file(other, &olen);
    assert_non_null(obytes);
    const char *path = keep_path("concat.bin");
    write_file(path, orig_bytes, orig_len, obytes, olen);
    free(obytes);
    expect_refused(path, orig_len, "concatenated traces");
    expect_salvaged(path, (long long)orig.total_events, 1, 1, "concatenated traces");
}

static void zero_filled_tail_is_refused_or_ignored(void **state)
{
    (void)state;
    const char *path = keep_path("zeros.bin");
    size_t zlen = 65536;
    char *zeros = calloc(1, zlen);
    assert_non_null(zeros);
    /* a crash on some filesystems leaves the last blocks zero: replace the
     * END chunk and beyond, and also just append */
    write_file(path, orig_bytes, orig.off[orig.n - 1], zeros, zlen);
    expect_refused(path, orig.off[orig.n - 1], "zero-filled tail");
    expect_salvaged(path, (long long)orig.total_events, 1, 0, "zero-filled tail");
    write_file(path, orig_bytes, orig_len, zeros, zlen);
    expect_refused(path, orig_len, "zeros after the end");
    expect_salvaged(path, (long long)orig.total_events, 1, 1, "zeros after the end");
    free(zeros);
}

/* ---- disk full, unwritable output, tools' outputs ------------------------ */

/* The disk fills in the middle of the run (a file size limit
 * writes past it fail with EFBIG; 512 KiB below): the program goes on and is correct, says
 * on stderr what was lost, and what was written before reads as whole
 * chunks. */
static void disk_full_mid_run_keeps_the_program_correct_and_reports_the_loss(void **state)
{
    (void)state;
    const char *path = keep_path("limited.bin");
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             /* Short sampling phases: the pre-run samples must fit well under
              * the limit, or the disk is full before the first event. */
             "trap '' XFSZ; ulimit -f 512; TMTRACE_EVENTS=all TMTRACE_BUFFER=4096 TMTRACE_HTM=emulate "
             "TMTRACE_SAMPLE_MS=5 TMTRACE_FILE='%s' '%s' bank --threads 2 --ops 40000 --accounts 16",
             path, tu_build("tmbench/tmbench"));
    int rc = run("%s", cmd);
    if (rc != 0 || !strstr(out, "\"check\":\"ok\"") || !strstr(err, path))
        print_error("tmbench on a disk that fills exited %d: %s %s\n", rc, out, err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "\"check\":\"ok\""));
    assert_non_null(strstr(err, path));
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size <= 512 * 1024);
    rc = run("'%s' --salvage '%s'", tool("tmdump"), path);
    assert_int_equal(rc, 3);   /* the chunk cut by the full disk is skipped, and said */
    assert_non_null(strstr(err, "skip"));
    assert_true(listed_events(out) > 0);
}

/* A trace file whose first write fails (the disk is full before the run)
 * cannot hold a trace at all: tmt_init fails with one line naming the
 * variable and the path, before the program runs a transaction. A disk that
 * fills in mid-run is the test above: the program goes on. */
static void full_disk_at_start_fails_tmt_init_naming_the_variable_and_path(void **state)
{
    (void)state;
    int rc = traced_run("/dev/full", "", "bank --threads 2 --ops 3000 --accounts 16");
    if (rc == 0 || !strstr(err, "TMTRACE_FILE=/dev/full"))
        print_error("tmbench with TMTRACE_FILE=/dev/full exited %d: %s %s\n", rc, out, err);
    assert_int_not_equal(rc, 0);
    assert_null(strstr(out, "\"check\""));
    assert_non_null(strstr(err, "TMTRACE_FILE=/dev/full"));
    const char *nl = strchr(err, '\n');
    assert_true(nl != NULL && nl[1] == '\0');   /* one line */
}

static void unwritable_output_fails_tmt_init_naming_the_variable_and_path(void **state)
{
    (void)state;
    /* A directory nobody may write; as root, a "directory" that is a file. */
    char path[1100];
    if (geteuid() == 0) {
        write_file(tu_path("not-a-dir"), "x", 1, NULL, 0);
        snprintf(path, sizeof path, "%s/trace.bin", tu_path("not-a-dir"));
    } else {
        assert_int_equal(mkdir(tu_path("ro"), 0555), 0);
        snprintf(path, sizeof path, "%s/trace.bin", tu_path("ro"));
    }
    int rc = traced_run(path, "", "bank --threads 2 --ops 2000 --accounts 16");
    char named[1200];
    snprintf(named, sizeof named, "TMTRACE_FILE=%s", path);
    if (rc == 0 || !strstr(err, named))
        print_error("tmbench with TMTRACE_FILE=%s exited %d: %s %s\n", path, rc, out, err);
    assert_int_not_equal(rc, 0);
    assert_null(strstr(out, "\"check\""));
    assert_non_null(strstr(err, named));
    assert_int_equal(access(path, F_OK), -1);
}

static int no_temp_left(const char *pattern)
{
    glob_t g;
    int rc = glob(pattern, 0, NULL, &g);
    size_t n = rc == 0 ? g.gl_pathc : 0;
    if (n)
        print_error("left behind: %s\n", g.gl_pathv[0]);
    if (rc == 0)
        globfree(&g);
    return n == 0;
}

static void tools_never_overwrite_their_input_or_leave_partial_output(void **state)
{
    (void)state;
    /* tmsync -o INPUT: refused, input unchanged */
    const char *in = keep_path("keep.bin");
    write_file(in, orig_bytes, orig_len, NULL, 0);
    int rc = run("'%s' '%s' -o '%s'", tool("tmsync"), in, in);
    assert_int_equal(rc, 2);
    assert_int_equal(count_lines(err), 1);
    size_t len;
    char *after = tu_read_file(in, &len);
    assert_non_null(after);
    assert_int_equal(len, orig_len);
    assert_memory_equal(after, orig_bytes, orig_len);
    free(after);
    /* the same file under another name (a symlink) is still the input */
    char link[1100];
    snprintf(link, sizeof link, "%s", tu_path("keep-link.bin"));
    assert_int_equal(symlink(in, link), 0);
    rc = run("'%s' '%s' -o '%s'", tool("tmsync"), in, link);
    assert_int_equal(rc, 2);
    after = tu_read_file(in, &len);
    assert_int_equal(len, orig_len);
    assert_memory_equal(after, orig_bytes, orig_len);
    free(after);

    /* a full disk (a file size limit: writes fail with EFBIG once the
     * output reaches 16 KiB): exit 2, one line, no output, no temporary */
    const char *full = keep_path("full-out.bin");
    rc = run("trap '' XFSZ; ulimit -f 16; '%s' '%s' -o '%s'", tool("tmsync"), in, full);
    if (rc != 2 || count_lines(err) != 1)
        print_error("tmsync into a full disk exited %d: %s\n", rc, err);
    assert_int_equal(rc, 2);
    assert_int_equal(count_lines(err), 1);
    assert_int_equal(access(full, F_OK), -1);
    char pat0[1200];
    snprintf(pat0, sizeof pat0, "%s*", full);
    assert_true(no_temp_left(pat0));

    /* an output that is not a regular file (a FIFO standing in for a device
     * such as /dev/full) is written to or refused, never replaced */
    const char *fifo = keep_path("out.fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    rc = run("(timeout 5 cat '%s' >/dev/null 2>&1 </dev/null &); '%s' '%s' -o '%s'", fifo, tool("tmsync"), in, fifo);
    struct stat fst;
    assert_int_equal(lstat(fifo, &fst), 0);
    if (!S_ISFIFO(fst.st_mode))
        print_error("tmsync -o FIFO exited %d and replaced the FIFO with a regular file\n", rc);
    assert_true(S_ISFIFO(fst.st_mode));

    /* an output directory that cannot be written */
    char dir[1100], outp[1200], pat[1300];
    if (geteuid() == 0) {
        write_file(tu_path("file-not-dir"), "x", 1, NULL, 0);
        snprintf(dir, sizeof dir, "%s", tu_path("file-not-dir"));
    } else {
        snprintf(dir, sizeof dir, "%s", tu_path("ro-out"));
        assert_int_equal(mkdir(dir, 0555), 0);
    }
    snprintf(outp, sizeof outp, "%s/out.bin", dir);
    rc = run("'%s' '%s' -o '%s'", tool("tmsync"), in, outp);
    assert_int_equal(rc, 2);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, outp));
    snprintf(pat, sizeof pat, "%s*", outp);
    assert_true(no_temp_left(pat));
    /* and no temporary next to the input either */
    snprintf(pat, sizeof pat, "%s/*.tmp*", tu_tmpdir());
    assert_true(no_temp_left(pat));
}

/* ---- signals ------------------------------------------------------------- */

/* Starts a long traced stress run (exec'd from a fork, with SIGINT and
 * SIGTERM at their defaults, as a program started from a terminal has them),
 * sends sig ms after the tracer created the trace file, waits; returns 128 +
 * the signal that ended it, or the exit status. (Before the file exists the
 * program may not even have reached tmt_init: on a loaded machine exec and
 * start-up alone can take longer than ms, and a signal then kills a program
 * that has no trace yet.) */
static int killed_run(const char *path, int sig, int ms)
{
    unlink(path);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        setenv("TMTRACE_EVENTS", "tx", 1);
        setenv("TMTRACE_BUFFER", "65536", 1);
        setenv("TMTRACE_HTM", "emulate", 1);
        setenv("TMTRACE_SAMPLE_MS", "20", 1);
        setenv("TMTRACE_FILE", path, 1);
        /* What a SIGKILL leaves is what was written: write at once (the
         * default lets a backlog wait in memory while the CPUs are busy). */
        setenv("TMTRACE_WRITER_DEFER", "0", 1);
        const char *exe = tu_build("tmbench/tmbench");
        execl(exe, exe, "stress", "--threads", "2", "--duration", "30", (char *)NULL);
        _exit(127);
    }
    struct stat st;
    for (int i = 0; i < 60000 && stat(path, &st) != 0; i++) {
        struct timespec tick = { 0, 1000000L };
        nanosleep(&tick, NULL);
    }
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
    kill(pid, sig);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

static void sigkill_leaves_every_flushed_chunk_readable(void **state)
{
    (void)state;
    const char *path = keep_path("killed.bin");
    int rc = killed_run(path, SIGKILL, 700);
    assert_int_equal(rc, 128 + SIGKILL);
    /* the strict reader: every chunk up to the torn tail, then the tail */
    struct tf_reader *r = tf_open(path, 0);
    assert_non_null(r);
    struct tf_chunk c;
    uint64_t good_end = 576, events = 0;
    int got;
    while ((got = tf_next(r, &c)) == 1) {
        good_end = c.offset + 40 + c.stored_len;
        if (c.kind == TF_CHUNK_EVENTS)
            events += c.count;
    }
    tf_close(r);
    assert_true(events > 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    if (got < 0) {
        /* only the torn tail is reported */
        expect_refused(path, good_end, "SIGKILL");
        assert_true((uint64_t)st.st_size > good_end);
    } else {
        assert_int_equal((uint64_t)st.st_size, good_end);
    }
    int rc2 = run("'%s' --salvage --json '%s'", tool("tmcheck"), path);
    /* 4 = no END chunk: the trace is incomplete (said, and it outranks 3
     * for the torn tail skipped) */
    assert_true(rc2 == 1 || rc2 == 4);
    assert_non_null(strstr(err, "incomplete trace: no END chunk"));
    assert_int_equal(json_int(out, "events"), (long long)events);
    assert_int_equal(run("'%s' --salvage --summary '%s'", tool("tmdump"), path), got < 0 ? 3 : 0);
    assert_null(strstr(out, "end chunk: present"));
}

static void signal_flushes_everything(int sig, const char *name)
{
    const char *path = keep_path(name);
    int rc = killed_run(path, sig, 700);
    assert_int_equal(rc, 128 + sig);
    static struct chunk_map sigmap;
    struct chunk_map *m = &sigmap;
    map_trace(path, m); /* strict: no damage at all */
    assert_int_equal(m->kind[m->n - 1], TF_CHUNK_END);
    assert_true(m->total_events > 0);
    /* the END chunk's counts are the events in the file: none lost */
    assert_int_equal(run("'%s' --summary '%s'", tool("tmdump"), path), 0);
    assert_non_null(strstr(out, "end chunk: present, writer errors 0"));
    long long recorded = 0;
    for (const char *p = out; (p = strstr(p, " events, ")) != NULL; p++) {
        const char *q = p;
        while (q > out && q[-1] >= '0' && q[-1] <= '9')
            q--;
        recorded += strtoll(q, NULL, 10);
    }
    assert_int_equal(recorded, (long long)m->total_events);
    int rc2 = run("'%s' --json '%s'", tool("tmcheck"), path);
    /* 4 (incomplete, said on stderr) only for what the END chunk records:
     * the signal, if the tracer marks it, or events dropped while the run
     * went on, when the writer fell behind on a loaded machine (counted,
     * not lost silently) */
    char marked[64];
    snprintf(marked, sizeof marked, "terminated by signal %d", sig);
    int said = rc2 == 4 && (json_int(out, "dropped_events") > 0 || strstr(err, marked));
    if (rc2 != 0 && !said)
        print_error("tmcheck after signal %d exited %d: %.600s %s\n", sig, rc2, out, err);
    assert_true(rc2 == 0 || said);
    assert_int_equal(json_int(out, "events"), (long long)m->total_events);
}

static void sigterm_flushes_everything(void **state)
{
    (void)state;
    signal_flushes_everything(SIGTERM, "term.bin");
}

static void sigint_flushes_everything(void **state)
{
    (void)state;
    signal_flushes_everything(SIGINT, "int.bin");
}

/* ---- a signal while the tracer starts ------------------------------------ */

static int thread_count(void)
{
    glob_t g;
    if (glob("/proc/self/task/*", GLOB_NOSORT, NULL, &g) != 0)
        return 0;
    int n = (int)g.gl_pathc;
    globfree(&g);
    return n;
}

/* Sends the process SIGINT once the tracer's sampling threads run, i.e. while
 * tmt_init is inside the tracer's start (sampling phase of 1 s). */
static void *sigint_while_sampling(void *arg)
{
    (void)arg;
    for (int i = 0; i < 60000 && thread_count() <= 2; i++) {
        struct timespec ts = { 0, 1000000L };
        nanosleep(&ts, NULL);
    }
    kill(getpid(), SIGINT);
    return NULL;
}

/* Runs as `test_damage --start-signal-program PATH`: SIGINT arrives while
 * tmt_init samples the clocks; it must end the program with a whole trace. */
static int start_signal_program(const char *path)
{
    signal(SIGINT, SIG_DFL);
    setenv("TMTRACE_EVENTS", "tx", 1);
    setenv("TMTRACE_FILE", path, 1);
    setenv("TMTRACE_SAMPLE_MS", "1000", 1);
    pthread_t th;
    if (pthread_create(&th, NULL, sigint_while_sampling, NULL) != 0)
        return 10;
    if (tmt_init() != 0)
        return 11;
    return 12; /* the held signal should have ended the program */
}

static void a_signal_while_the_tracer_starts_waits_for_it_and_flushes(void **state)
{
    (void)state;
    const char *path = keep_path("start-int.bin");
    unlink(path);
    char self[1024];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(n > 0);
    self[n] = '\0';
    int rc = run("'%s' --start-signal-program '%s'", self, path);
    assert_int_equal(rc, 128 + SIGINT);
    static struct chunk_map startmap;
    map_trace(path, &startmap); /* strict: no damage at all */
    assert_int_equal(startmap.kind[startmap.n - 1], TF_CHUNK_END);
    assert_int_equal(run("'%s' --summary '%s'", tool("tmdump"), path), 0);
    assert_non_null(strstr(out, "end chunk: present, writer errors 0"));
}

/* ---- fork while tracing -------------------------------------------------- */

static long fork_counter;

static void fork_transactions(tmt_tx *tx, int n)
{
    for (volatile int i = 0; i < n; i++) {
        TMT_ATOMIC(tx, "fork-inc") {
            tmt_write_long(tx, &fork_counter, tmt_read_long(tx, &fork_counter) + 1);
        }
        TMT_END;
    }
}

/* The parent: 200 transactions, fork, 300 more; the child: 100 and exit()
 * (a normal exit, atexit handlers and all). Runs as `test_damage
 * --fork-program PATH`, a process of its own. */
static int fork_program(const char *path)
{
    setenv("TMTRACE_EVENTS", "tx", 1);
    setenv("TMTRACE_FILE", path, 1);
    setenv("TMTRACE_SAMPLE_MS", "20", 1);
    setenv("TMTRACE_BUFFER", "4096", 1);
    if (tmt_init() != 0)
        return 10;
    tmt_tx *tx = tmt_thread_enter();
    fork_transactions(tx, 200);
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) {
        fork_transactions(tmt_self(), 100);
        tmt_thread_exit();
        exit(fork_counter == 300 ? 0 : 11);
    }
    fork_transactions(tx, 300);
    int status;
    waitpid(child, &status, 0);
    tmt_thread_exit();
    tmt_shutdown();
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 && fork_counter == 500 ? 0 : 12;
}

static void fork_while_tracing_leaves_the_parent_trace_intact(void **state)
{
    (void)state;
    const char *path = keep_path("fork.bin");
    char self[1024];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(n > 0);
    self[n] = '\0';
    int rc = run("'%s' --fork-program '%s'", self, path);
    if (rc != 0)
        print_error("the forking program exited %d: %s\n", rc, err);
    assert_int_equal(rc, 0);
    /* the parent's trace: undamaged, exactly the parent's 500 commits */
    rc = run("'%s' --json '%s'", tool("tmcheck"), path);
    if (rc != 0 || json_int(out, "commits") != 500)
        print_error("parent trace after fork: tmcheck exited %d, %lld commits (want 500): %.300s %s\n", rc,
                    json_int(out, "commits"), out, err);
    assert_int_equal(rc, 0);
    assert_int_equal(json_int(out, "commits"), 500);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--fork-program") == 0)
        return fork_program(argv[2]);
    if (argc == 3 && strcmp(argv[1], "--start-signal-program") == 0)
        return start_signal_program(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(original_is_read_whole_by_every_tool),
        cmocka_unit_test(truncation_at_every_chunk_boundary_keeps_exactly_the_chunks_before_it),
        cmocka_unit_test(truncation_at_random_offsets_is_refused_or_salvaged_to_whole_chunks),
        cmocka_unit_test(bit_flip_in_the_header_version_is_refused_even_with_salvage),
        cmocka_unit_test(bit_flip_elsewhere_in_the_header_is_refused_or_salvaged_whole),
        cmocka_unit_test(bit_flip_in_a_chunk_header_loses_that_chunk_only),
        cmocka_unit_test(bit_flip_in_a_payload_loses_that_chunk_only),
        cmocka_unit_test(duplicated_chunk_is_refused_or_read_once),
        cmocka_unit_test(two_traces_concatenated_are_refused_or_read_as_the_first),
        cmocka_unit_test(zero_filled_tail_is_refused_or_ignored),
        cmocka_unit_test(full_disk_at_start_fails_tmt_init_naming_the_variable_and_path),
        cmocka_unit_test(disk_full_mid_run_keeps_the_program_correct_and_reports_the_loss),
        cmocka_unit_test(unwritable_output_fails_tmt_init_naming_the_variable_and_path),
        cmocka_unit_test(tools_never_overwrite_their_input_or_leave_partial_output),
        cmocka_unit_test(sigkill_leaves_every_flushed_chunk_readable),
        cmocka_unit_test(sigterm_flushes_everything),
        cmocka_unit_test(sigint_flushes_everything),
        cmocka_unit_test(a_signal_while_the_tracer_starts_waits_for_it_and_flushes),
        cmocka_unit_test(fork_while_tracing_leaves_the_parent_trace_intact),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
