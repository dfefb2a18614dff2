/*
 * test_install.c - `meson install` into a fresh staging folder (DESTDIR)
 * gives a user everything: the four tools, tmplot with its gnuplot scripts,
 * the TL2 compatibility headers, libtl2.a and libtmtrace-tl2.pc, the docs and
 * a man page per tool (tmplot's too); and the installed files work: the
 * tools on a traced run, tmplot drawing from the installed scripts, `man
 * TOOL`, a TL2 program built through pkg-config, and programs built through
 * `pkg-config --define-prefix` with the libdir the build chose (Debian's
 * multiarch lib/x86_64-linux-gnu here).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_util.h"

/* tmcheck's JSON grows with the aborts (triage, data, addresses): a run
 * that aborts a few hundred times writes about 100 KB, and "consistent"
 * is its last key. */
static char out[1 << 22];
static char prefix[1024];   /* DESTDIR + the configured prefix */
static char libdir[1024];   /* DESTDIR + the configured libdir */

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < sizeof cmd);
    return tu_run(cmd, out, sizeof out);
}

/* The folder of the one installed file whose path matches `pattern`. */
static void installed_dir(const char *destdir, const char *pattern, char *dir, size_t cap)
{
    assert_int_equal(sh("find '%s' -path '%s' | head -n 1", destdir, pattern), 0);
    char *nl = strchr(out, '\n');
    if (!nl)
        fail_msg("nothing installed matches %s", pattern);
    *nl = '\0';
    char *slash = strrchr(out, '/');
    assert_non_null(slash);
    *slash = '\0';
    size_t n = strlen(out);
    assert_true(n < cap);
    memcpy(dir, out, n + 1);
}

static int install(void **st)
{
    (void)st;
    const char *destdir = tu_path("stage");
    if (sh("meson install -C '%s' --no-rebuild --quiet --destdir '%s' 2>&1", tu_build(""), destdir) != 0) {
        fprintf(stderr, "meson install failed: %s\n", out);
        return -1;
    }
    char bindir[1024];
    installed_dir(destdir, "*/bin/tmcheck", bindir, sizeof bindir);
    snprintf(prefix, sizeof prefix, "%.*s", (int)(strrchr(bindir, '/') - bindir), bindir);
    installed_dir(destdir, "*/libtl2.a", libdir, sizeof libdir);
    return 0;
}

static void assert_installed(const char *dir, const char *rel)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    if (access(path, F_OK) != 0)
        fail_msg("meson install did not install %s", path);
}

static void every_tool_tmplot_tl2_file_doc_and_man_page_is_installed(void **st)
{
    (void)st;
    static const char *const files[] = {
        "bin/tmdump", "bin/tmsync", "bin/tmcheck", "bin/tmexport", "bin/tmplot",
        "share/libtmtrace/plots/common.gp", "share/libtmtrace/plots/fit.gp",
        "share/libtmtrace/python/tmtrace_py/__init__.py",
        "include/tmtrace.h", "include/tl2/tl2.h", "include/tl2/stm.h",
        "share/man/man1/tmdump.1", "share/man/man1/tmsync.1", "share/man/man1/tmcheck.1",
        "share/man/man1/tmexport.1", "share/man/man1/tmplot.1",
        "share/doc/libtmtrace/README.md", "share/doc/libtmtrace/json.md", "share/doc/libtmtrace/environment.md",
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        assert_installed(prefix, files[i]);
    assert_installed(libdir, "libtl2.a");
    assert_installed(libdir, "pkgconfig/libtmtrace-tl2.pc");
    assert_installed(libdir, "pkgconfig/libtmtrace.pc");
    for (const char *t = "tmdump\0tmsync\0tmcheck\0tmexport\0tmplot\0"; *t; t += strlen(t) + 1) {
        char path[2048];
        snprintf(path, sizeof path, "%s/bin/%s", prefix, t);
        assert_int_equal(access(path, X_OK), 0);
    }
}

static void installed_tools_run_on_a_traced_run(void **st)
{
    (void)st;
    const char *raw = tu_path("run.bin"), *synced = tu_path("run.sync.bin");
    assert_int_equal(sh("TMTRACE_FILE='%s' TMTRACE_SAMPLE_MS=5 '%s' bank --threads 2 --ops 2000 >/dev/null 2>&1", raw,
                        tu_build("tmbench/tmbench")),
                     0);
    assert_int_equal(sh("'%s/bin/tmsync' -o '%s' '%s' 2>&1", prefix, synced, raw), 0);
    assert_non_null(strstr(out, "events, model auto"));
    assert_int_equal(sh("'%s/bin/tmcheck' --json '%s' 2>&1", prefix, synced), 0);
    if (strstr(out, "\"consistent\":true") == NULL) {
        size_t n = strlen(out);
        fail_msg("tmcheck --json on the synchronised run (%zu bytes) is not consistent; it ends: %s", n,
                 out + (n > 400 ? n - 400 : 0));
    }
    assert_int_equal(sh("'%s/bin/tmdump' --limit 1 '%s' 2>&1", prefix, synced), 0);
    assert_non_null(strstr(out, " ns start T"));
    assert_int_equal(sh("'%s/bin/tmexport' -o '%s' '%s' 2>&1", prefix, tu_path("run.json"), synced), 0);
    assert_int_equal(access(tu_path("run.json"), F_OK), 0);
    for (const char *t = "tmdump\0tmsync\0tmcheck\0tmexport\0tmplot\0"; *t; t += strlen(t) + 1) {
        assert_int_equal(sh("cd / && '%s/bin/%s' -V 2>&1", prefix, t), 0);
        assert_non_null(strstr(out, "libtmtrace"));
    }
}

/* `man TOOL` with the installed pages on MANPATH shows the --help text,
 * tmplot's (whose commands each have a section) too. */
static void man_finds_every_tools_page(void **st)
{
    (void)st;
    for (const char *t = "tmdump\0tmsync\0tmcheck\0tmexport\0tmplot\0"; *t; t += strlen(t) + 1) {
        assert_int_equal(sh("MANPATH='%s/share/man' MANWIDTH=200 man %s 2>&1 | col -b", prefix, t), 0);
        if (!strstr(out, "NAME") || !strstr(out, "EXIT STATUS") || !strstr(out, "--version"))
            fail_msg("man %s: %s", t, out);
    }
    /* an option's help of several lines keeps them apart: tmsync's models */
    assert_int_equal(sh("MANPATH='%s/share/man' MANWIDTH=200 man tmsync 2>&1 | col -b", prefix), 0);
    const char *lin = strstr(out, "linear: "), *pw = strstr(out, "piecewise: in");
    if (!lin || !pw || !memchr(lin, '\n', (size_t)(pw - lin)))
        fail_msg("man tmsync runs the --model values into one line: %s", out);
    assert_int_equal(sh("MANPATH='%s/share/man' MANWIDTH=200 man tmplot 2>&1 | col -b", prefix), 0);
    if (!strstr(out, "COMMANDS") || !strstr(out, "--max-attempts") || !strstr(out, "--man"))
        fail_msg("man tmplot has no commands' options: %s", out);
}

/* The installed tmplot draws with the installed gnuplot scripts and finds
 * the installed tools on PATH. */
static void installed_tmplot_draws_with_its_scripts(void **st)
{
    (void)st;
    const char *raw = tu_path("plot.bin"), *figs = tu_path("figs");
    assert_int_equal(sh("TMTRACE_FILE='%s' TMTRACE_SAMPLE_MS=5 '%s' hash --ops 500 >/dev/null 2>&1", raw,
                        tu_build("tmbench/tmbench")),
                     0);
    int rc = sh("cd / && PATH='%s/bin':\"$PATH\" tmplot fit --out '%s' '%s' 2>&1", prefix, figs, raw);
    if (rc != 0 || !strstr(out, "_fit_cpu"))
        fail_msg("installed tmplot fit exited %d: %s", rc, out);
}

/* A program of the public API, built and run from the staged files through
 * `pkg-config --define-prefix`, which finds the prefix from where the .pc
 * file lies: the -I and -L it hands out must be the staged include folder
 * and libdir (not PREFIX/lib/include, the prefix two folders above a
 * multiarch pkgconfig folder), and the TL2 client builds the same way. */
static void programs_build_through_pkg_config_define_prefix(void **st)
{
    (void)st;
    char flag[64] = "";
    if (strcmp(TMT_SANITIZE, "none") != 0 && TMT_SANITIZE[0] != '\0')
        snprintf(flag, sizeof flag, " -fsanitize=%s", TMT_SANITIZE);
    const char *pc = "PKG_CONFIG_PATH='%s/pkgconfig' pkg-config --define-prefix";
    char cmd[1200];
    snprintf(cmd, sizeof cmd, pc, libdir);
    /* the folders it names hold the header and the library */
    /* Only each word's leading -I or -L goes: the staging folder's random
     * name (tmtrace-test-XXXXXX) may itself hold "-I" or "-L". */
    assert_int_equal(sh("for w in $(%s --cflags-only-I libtmtrace); do d=\"${w#-I}\"; "
                        "test -f \"$d/tmtrace.h\" && echo found; done; true", cmd), 0);
    if (!strstr(out, "found"))
        fail_msg("pkg-config --define-prefix --cflags libtmtrace names no folder with tmtrace.h");
    int lrc = sh("for w in $(%s --libs-only-L libtmtrace); do d=\"${w#-L}\"; "
                 "if test -f \"$d/libtmtrace.so\"; then echo found; else echo \"$d:\"; ls -la \"$d\"; fi; done 2>&1", cmd);
    if (lrc != 0 || !strstr(out, "found"))
        fail_msg("pkg-config --define-prefix --libs libtmtrace names no folder with libtmtrace.so (exit %d): %s",
                 lrc, out);
    const char *src = tu_path("api_client.c"), *exe = tu_path("api_client");
    FILE *f = fopen(src, "w");
    assert_non_null(f);
    fputs("#include <stdio.h>\n#include <tmtrace.h>\nstatic long n;\nint main(void)\n{\n"
          "    if (tmt_init() != 0 || !tmt_thread_enter())\n        return 1;\n"
          "    tmt_tx *tx = tmt_self();\n    for (int i = 0; i < 10; i++) {\n"
          "        TMT_ATOMIC(tx, \"inc\") {\n            tmt_write_long(tx, &n, tmt_read_long(tx, &n) + 1);\n"
          "        } TMT_END;\n    }\n    printf(\"n=%ld\\n\", n);\n    tmt_thread_exit();\n"
          "    return tmt_shutdown() == 0 ? 0 : 1;\n}\n", f);
    fclose(f);
    int rc = sh("cc $(%s --cflags libtmtrace) '%s' -o '%s' $(%s --libs libtmtrace)%s 2>&1", cmd, src, exe, cmd, flag);
    if (rc != 0)
        fail_msg("a program did not build through pkg-config --define-prefix: %s", out);
    assert_int_equal(sh("LD_LIBRARY_PATH='%s' TMTRACE_EVENTS=off '%s' 2>&1", libdir, exe), 0);
    assert_non_null(strstr(out, "n=10"));
    exe = tu_path("tl2_client_dp");
    rc = sh("cc $(%s --cflags libtmtrace-tl2) '%s/test/compat/tl2_client.c' -o '%s' $(%s --libs libtmtrace-tl2)%s 2>&1",
            cmd, TMT_SOURCE_ROOT, exe, cmd, flag);
    if (rc != 0)
        fail_msg("the TL2 client did not build through pkg-config --define-prefix: %s", out);
    assert_int_equal(sh("TMTRACE_EVENTS=off '%s' 2>&1", exe), 0);
    assert_non_null(strstr(out, "bad_audits=0"));
}

/* A TL2 program builds unchanged from the installed files, through
 * libtmtrace-tl2.pc (pkg-config's sysroot maps the staging folder). */
static void tl2_program_builds_with_the_installed_pkg_config_file(void **st)
{
    (void)st;
    char flag[64] = "";
    if (strcmp(TMT_SANITIZE, "none") != 0 && TMT_SANITIZE[0] != '\0')
        snprintf(flag, sizeof flag, " -fsanitize=%s", TMT_SANITIZE);
    const char *exe = tu_path("tl2_client");
    int rc = sh("export PKG_CONFIG_SYSROOT_DIR='%s' PKG_CONFIG_PATH='%s/pkgconfig'; "
                "cc $(pkg-config --cflags libtmtrace-tl2) '%s/test/compat/tl2_client.c' -o '%s' "
                "$(pkg-config --libs libtmtrace-tl2)%s 2>&1",
                tu_path("stage"), libdir, TMT_SOURCE_ROOT, exe, flag);
    if (rc != 0)
        fail_msg("the TL2 client did not build from the installed files: %s", out);
    assert_int_equal(sh("TMTRACE_EVENTS=off '%s' 2>&1", exe), 0);
    assert_non_null(strstr(out, "bad_audits=0"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_tool_tmplot_tl2_file_doc_and_man_page_is_installed),
        cmocka_unit_test(installed_tools_run_on_a_traced_run),
        cmocka_unit_test(man_finds_every_tools_page),
        cmocka_unit_test(installed_tmplot_draws_with_its_scripts),
        cmocka_unit_test(tl2_program_builds_with_the_installed_pkg_config_file),
        cmocka_unit_test(programs_build_through_pkg_config_define_prefix),
    };
    return cmocka_run_group_tests(tests, install, NULL);
}
