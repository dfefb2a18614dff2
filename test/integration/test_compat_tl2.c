/*
 * test_compat_tl2.c - the TL2 compatibility directory: build/compat/tl2/
 * holds tl2.h, stm.h and a self-contained libtl2.a, and a TL2-style client
 * (test/compat/tl2_client.c) builds with exactly
 *     cc -DSTM -I$DIR tl2_client.c -L$DIR -ltl2 -lpthread
 * and runs correctly: totals conserved, audits consistent, and the 4 bytes
 * next to every int and float written through STM_WRITE / STM_WRITE_F
 * untouched.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test_util.h"
#include "trace_file.h"

static const char *source_root(void)
{
    const char *s = getenv("TMT_SOURCE_ROOT");
    return s ? s : TMT_SOURCE_ROOT;
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

/* A sanitized build's libtl2.a calls the sanitizer runtime, which only the
 * matching -fsanitize flag links in; every other build uses the documented
 * command line and nothing else. */
static const char *sanitize_flag(void)
{
    static char flag[64];
    if (strcmp(TMT_SANITIZE, "none") != 0 && TMT_SANITIZE[0] != '\0')
        snprintf(flag, sizeof flag, " -fsanitize=%s", TMT_SANITIZE);
    return flag;
}

/* Builds the client once into the temporary directory (a.out). */
static const char *client(void)
{
    static int built;
    static char exe[600];
    if (!built) {
        char cmd[2048], out[8192];
        const char *dir = tu_build("compat/tl2");
        snprintf(cmd, sizeof cmd, "cd '%s' && cc -DSTM -I'%s' '%s/test/compat/tl2_client.c' -L'%s' -ltl2 -lpthread%s 2>&1",
                 tu_tmpdir(), dir, source_root(), dir, sanitize_flag());
        int rc = tu_run(cmd, out, sizeof out);
        if (rc != 0)
            fprintf(stderr, "build failed (%d): %s\n%s\n", rc, cmd, out);
        assert_int_equal(rc, 0);
        snprintf(exe, sizeof exe, "%s", tu_path("a.out"));
        built = 1;
    }
    return exe;
}

/* Runs the client with the given environment prefix; checks its report. */
static void run_client(const char *env)
{
    char cmd[1024], out[4096];
    snprintf(cmd, sizeof cmd, "%s '%s' 2>&1", env, client());
    int rc = tu_run(cmd, out, sizeof out);
    if (rc != 0)
        fprintf(stderr, "%s\n-> %d: %s\n", cmd, rc, out);
    assert_int_equal(rc, 0);
    /* 64 records of 1000, 10 and 2.0; all moves conserve the sums. */
    assert_non_null(strstr(out, "total=64000 count=640 weight=128.00"));
    assert_non_null(strstr(out, "guard_int=untouched"));
    assert_non_null(strstr(out, "guard_float=untouched"));
    assert_non_null(strstr(out, "links=permutation"));
    assert_non_null(strstr(out, "bad_audits=0"));
    assert_non_null(strstr(out, "cell=42"));
    assert_non_null(strstr(out, "local=restored")); /* TxStoreLocal undone by an abort */
    assert_non_null(strstr(out, "plain=2\n"));     /* two transactions begun by TxStart */
}

static void compat_dir_holds_tl2_h_stm_h_and_libtl2_a(void **state)
{
    (void)state;
    char path[700];
    const char *dir = tu_build("compat/tl2");
    const char *files[] = { "tl2.h", "stm.h", "libtl2.a" };
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        if (!is_file(path))
            fprintf(stderr, "missing: %s\n", path);
        assert_true(is_file(path));
    }
}

static void libtl2_needs_nothing_beyond_libc_and_pthread(void **state)
{
    (void)state;
    /* Linking succeeds with only -lpthread: no zlib, lz4 or libm symbol is
     * left for the program to supply. */
    assert_true(is_file(client()));
}

static void client_conserves_sums_and_leaves_subword_neighbours_untouched(void **state)
{
    (void)state;
    run_client("TMTRACE_EVENTS=off");
}

static void client_is_correct_on_the_emulated_hardware_path(void **state)
{
    (void)state;
    run_client("TMTRACE_EVENTS=off TMTRACE_HTM=emulate");
}

/* The sites of the trace at `path`, one "FILE:LINE LABEL\n" each, FILE
 * without its folders. */
static void trace_sites(const char *path, char *out, size_t cap)
{
    struct tf_reader *r = tf_open(path, TF_SKIP_EVENTS);
    assert_non_null(r);
    struct tf_chunk c;
    size_t at = 0;
    int rc;
    out[0] = '\0';
    while ((rc = tf_next(r, &c)) == 1) {
        for (size_t i = 0; c.kind == TF_CHUNK_META_SITES && i < c.count; i++) {
            const char *base = strrchr(c.sites[i].file, '/');
            at += (size_t)snprintf(out + at, cap - at, "%s:%d %s\n", base ? base + 1 : c.sites[i].file,
                                   (int)c.sites[i].line, c.sites[i].label);
            assert_true(at < cap);
        }
    }
    assert_int_equal(rc, 0);
    tf_close(r);
}

static void client_traced_writes_a_trace(void **state)
{
    (void)state;
    char env[700];
    snprintf(env, sizeof env, "TMTRACE_EVENTS=tx TMTRACE_FILE='%s'", tu_path("tl2.bin"));
    run_client(env);
    assert_true(is_file(tu_path("tl2.bin")));
    /* every STM_BEGIN and every TxStart call is a site of its own,
     * labelled with its function (read from the trace itself, so that the
     * sanitizer builds, which have no tools, check it too) */
    char out[4096];
    trace_sites(tu_path("tl2.bin"), out, sizeof out);
    assert_non_null(strstr(out, "tl2_client.c:60 worker\n"));
    assert_non_null(strstr(out, "tl2_client.c:73 worker\n"));
    assert_non_null(strstr(out, "tl2_client.c:106 plain_txstart\n"));
    assert_non_null(strstr(out, "tl2_client.c:110 plain_txstart\n"));
    assert_non_null(strstr(out, "tl2_client.c:141 main\n"));
    assert_null(strstr(out, " TxStart\n"));
    /* the program's malloc and calloc (stm.h: tmalloc_reserve) outside a
     * transaction record their blocks, as STM_MALLOC inside one does: the
     * main thread's calloc of the shared array before TxOnce and its thread
     * descriptor, its malloc of `cell` and the STM_MALLOC; nothing else */
    struct tu_trace_counts n;
    assert_int_equal(tu_count_trace(tu_path("tl2.bin"), &n), 0);
    assert_int_equal(n.allocs, 3);
}

static void client_reports_every_commit_at_shutdown(void **state)
{
    (void)state;
    char cmd[1024], out[4096];
    snprintf(cmd, sizeof cmd, "TMTRACE_EVENTS=off '%s' 2>&1 >/dev/null", client());
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    /* 3 rounds of 4 threads of 20000 transactions, then the allocating one
     * the local-store one and the two begun by TxStart; the line is on
     * stderr, the program's own output stays as it was. */
    assert_non_null(strstr(out, "TL2 system shutdown: commits=240004 aborts="));
}

static void client_stops_at_startup_naming_a_bad_runtime_setting(void **state)
{
    (void)state;
    char cmd[1024], out[4096];
    /* TL2's TxOnce cannot return an error: the program stops (abort) after
     * one line that names the variable. */
    snprintf(cmd, sizeof cmd, "(TMTRACE_HTM=sometimes '%s' 2>&1 >/dev/null) 2>/dev/null", client());
    int rc = tu_run(cmd, out, sizeof out);
    assert_int_not_equal(rc, 0);
    assert_true(strncmp(out, "libtl2: TxOnce: ", 16) == 0);
    assert_non_null(strstr(out, "TMTRACE_HTM"));
    char *nl = strchr(out, '\n');
    assert_non_null(nl);
    assert_int_equal(nl[1], '\0');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(compat_dir_holds_tl2_h_stm_h_and_libtl2_a),
        cmocka_unit_test(libtl2_needs_nothing_beyond_libc_and_pthread),
        cmocka_unit_test(client_conserves_sums_and_leaves_subword_neighbours_untouched),
        cmocka_unit_test(client_is_correct_on_the_emulated_hardware_path),
        cmocka_unit_test(client_traced_writes_a_trace),
        cmocka_unit_test(client_reports_every_commit_at_shutdown),
        cmocka_unit_test(client_stops_at_startup_naming_a_bad_runtime_setting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
