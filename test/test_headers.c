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

static void compile_alone(const char *header, const char *lang, const char *compiler)
{
    char cmd[2048], out[8192];
    const char *src = tu_path("hdr_test.c");
    FILE *f = fopen(src, "w");
    assert_non_null(f);
    fprintf(f, "#include \"%s\"\nint tmt_header_probe;\n", header);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "%s -x %s -std=%s -Wall -Wextra -Werror -pedantic-errors -fsyntax-only "
             "-I'%s/libtmtrace/include' '%s' 2>&1",
             compiler, lang, strcmp(lang, "c") == 0 ? "gnu11" : "gnu++17", TMT_SOURCE_ROOT, src);
    int rc = tu_run(cmd, out, sizeof out);
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
}

static void test_tmtrace_h_compiles_alone_as_c(void **state)
{
    (void)state;
    compile_alone("tmtrace.h", "c", "cc");
}

static void test_tmtrace_h_compiles_alone_as_cxx(void **state)
{
    (void)state;
    char out[256];
    if (tu_run("command -v c++ >/dev/null", out, sizeof out) != 0)
        fail_msg("no C++ compiler: install g++");
    compile_alone("tmtrace.h", "c++", "c++");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tmtrace_h_compiles_alone_as_c),
        cmocka_unit_test(test_tmtrace_h_compiles_alone_as_cxx),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
