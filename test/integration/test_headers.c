/*
 * test_headers.c - every public header compiles on its own, as C and as C++,
 * with strict warnings: a user includes it first and nothing else.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "test_util.h"

/* Compiles `header` alone (it is included first and nothing else) with
 * strict warnings as errors in one language standard. */
static int compile_alone(const char *header, const char *std)
{
    char cmd[2048], out[8192];
    int cxx = strncmp(std, "c++", 3) == 0 || strncmp(std, "gnu++", 5) == 0;
    const char *src = tu_path(cxx ? "hdr_test.cc" : "hdr_test.c");
    FILE *f = fopen(src, "w");
    assert_non_null(f);
    fprintf(f, "#include \"%s\"\nint tmt_header_probe;\n", header);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "%s -x %s -std=%s -Wall -Wextra -Werror -pedantic-errors -fsyntax-only "
             "-I'%s/libtmtrace/include' -I'%s/compat/tl2' '%s' 2>&1",
             cxx ? "c++" : "cc", cxx ? "c++" : "c", std, TMT_SOURCE_ROOT, TMT_SOURCE_ROOT, src);
    int rc = tu_run(cmd, out, sizeof out);
    if (rc != 0)
        print_error("%s as %s:\n%s\n", header, std, out);
    return rc;
}

/* Every public header, alone, in every language mode a user may pick. */
static void every_public_header_compiles_alone_in_every_c_and_cxx_mode(void **state)
{
    (void)state;
    char out[256];
    if (tu_run("command -v c++ >/dev/null", out, sizeof out) != 0)
        fail_msg("no C++ compiler: install g++");
    static const char *const headers[] = { "tmtrace.h", "tl2.h", "stm.h" };
    static const char *const stds[] = { "c99", "c11", "c17", "gnu11", "c++17" };
    int failures = 0;
    for (size_t h = 0; h < sizeof headers / sizeof headers[0]; h++)
        for (size_t s = 0; s < sizeof stds / sizeof stds[0]; s++)
            failures += compile_alone(headers[h], stds[s]) != 0;
    assert_int_equal(failures, 0);
}

/* The Cflags pkg-config hands out are enough for a strict C99 program that
 * uses TMT_ATOMIC (not only includes the header). */
static void a_strict_c99_program_using_the_api_builds_with_the_pkg_config_flags(void **state)
{
    (void)state;
    char cmd[2048], out[8192];
    const char *src = tu_path("strict.c");
    FILE *f = fopen(src, "w");
    assert_non_null(f);
    fputs("#include <tmtrace.h>\n"
          "static long cell;\n"
          "int main(void)\n{\n"
          "    tmt_tx *tx = tmt_thread_enter();\n"
          "    if (tx == NULL)\n        return 1;\n"
          "    TMT_ATOMIC(tx, \"strict\") {\n"
          "        tmt_write_long(tx, &cell, tmt_read_long(tx, &cell) + 1);\n"
          "    } TMT_END;\n"
          "    tmt_thread_exit();\n"
          "    return cell == 1 ? 0 : 2;\n}\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "PKG_CONFIG_PATH='%s/meson-uninstalled' pkg-config --cflags libtmtrace >/dev/null 2>&1 && "
             "cc -std=c99 -Wall -Wextra -Werror -pedantic-errors $(PKG_CONFIG_PATH='%s/meson-uninstalled' "
             "pkg-config --cflags libtmtrace) -c '%s' -o '%s' 2>&1",
             TMT_BUILD_ROOT, TMT_BUILD_ROOT, src, tu_path("strict.o"));
    int rc = tu_run(cmd, out, sizeof out);
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_public_header_compiles_alone_in_every_c_and_cxx_mode),
        cmocka_unit_test(a_strict_c99_program_using_the_api_builds_with_the_pkg_config_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
