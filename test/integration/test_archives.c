/*
 * test_archives.c - the static libraries a program links (libtmtrace.a,
 * compat/tl2/libtl2.a) export only their API: nm finds no other defined
 * global symbol, and a program with its own `config`, `error_set`,
 * `stm_init` and `stm_commit` links against each and runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "test_util.h"

/* A sanitized build's archives call the sanitizer runtime. */
static const char *sanitize_flag(void)
{
    static char flag[64];
    if (strcmp(TMT_SANITIZE, "none") != 0 && TMT_SANITIZE[0] != '\0')
        snprintf(flag, sizeof flag, " -fsanitize=%s", TMT_SANITIZE);
    return flag;
}

/* Defined global symbols of `archive` that match none of the
 * space-separated prefixes; returns how many (and prints them). */
static int foreign_globals(const char *archive, const char *prefixes)
{
    char cmd[1024];
    static char out[1 << 20];
    snprintf(cmd, sizeof cmd, "nm -g --defined-only '%s' 2>&1", archive);
    assert_int_equal(tu_run(cmd, out, sizeof out), 0);
    int foreign = 0, globals = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        char addr[64], type[8], name[512];
        if (sscanf(line, "%63s %7s %511s", addr, type, name) != 3)
            continue; /* member names, blank lines */
        globals++;
        int ok = 0;
        char pre[256];
        snprintf(pre, sizeof pre, "%s", prefixes);
        for (char *save = NULL, *p = strtok_r(pre, " ", &save); p && !ok; p = strtok_r(NULL, " ", &save))
            ok = strncmp(name, p, strlen(p)) == 0;
        if (!ok) {
            if (foreign < 20)
                print_error("%s: global %s (%s)\n", archive, name, type);
            foreign++;
        }
    }
    assert_true(globals > 0);
    return foreign;
}

static void libtmtrace_a_exports_only_tmt_names(void **state)
{
    (void)state;
    assert_int_equal(foreign_globals(tu_build("libtmtrace/libtmtrace.a"), "tmt_"), 0);
}

static void libtl2_a_exports_only_the_tl2_api_and_tmt_names(void **state)
{
    (void)state;
    assert_int_equal(foreign_globals(tu_build("compat/tl2/libtl2.a"), "tmt_ Tx tmalloc_"), 0);
}

/* Names the runtime uses inside, defined again by the program. */
static const char *const clash =
    "int config = 7;\n"
    "int error_set(void) { return 1; }\n"
    "int stm_init(void) { return 2; }\n"
    "int stm_commit(void) { return 3; }\n"
    "static int mine(void) { return config + error_set() + stm_init() + stm_commit(); }\n";

static void build_and_run(const char *name, const char *body, const char *link)
{
    char src[300], cmd[4096], out[8192];
    snprintf(src, sizeof src, "%s", tu_path(name));
    FILE *f = fopen(src, "w");
    assert_non_null(f);
    fputs(clash, f);
    fputs(body, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cd '%s' && cc -std=gnu11 '%s' %s%s -o '%s.exe' 2>&1 && TMTRACE_EVENTS=off './%s.exe' 2>&1",
             tu_tmpdir(), src, link, sanitize_flag(), name, name);
    int rc = tu_run(cmd, out, sizeof out);
    if (rc != 0)
        print_error("%s\n%s\n", cmd, out);
    assert_int_equal(rc, 0);
}

static void a_program_with_its_own_config_links_libtmtrace_a(void **state)
{
    (void)state;
    static const char body[] =
        "#include <tmtrace.h>\n"
        "static long cell;\n"
        "int main(void)\n{\n"
        "    tmt_tx *tx = tmt_thread_enter();\n"
        "    if (tx == NULL)\n        return 10;\n"
        "    TMT_ATOMIC(tx, \"own-config\") {\n"
        "        tmt_write_long(tx, &cell, tmt_read_long(tx, &cell) + 1);\n"
        "    } TMT_END;\n"
        "    tmt_thread_exit();\n"
        "    return cell == 1 && mine() == 13 ? 0 : 11;\n}\n";
    char link[1024];
    snprintf(link, sizeof link, "-I'%s/libtmtrace/include' '%s' -lpthread -lz %s -lm", TMT_SOURCE_ROOT,
             tu_build("libtmtrace/libtmtrace.a"), TMT_LZ4_LINK);
    build_and_run("own_config.c", body, link);
}

static void a_tl2_program_with_its_own_config_links_libtl2_a(void **state)
{
    (void)state;
    static const char body[] =
        "#include <stm.h>\n"
        "static long cell;\n"
        "int main(void)\n{\n"
        "    STM_STARTUP();\n"
        "    STM_THREAD_T *Self = STM_NEW_THREAD();\n"
        "    STM_INIT_THREAD(Self, 0);\n"
        "    STM_BEGIN_WR();\n"
        "    STM_WRITE(cell, STM_READ(cell) + 1);\n"
        "    STM_END();\n"
        "    STM_FREE_THREAD(Self);\n"
        "    STM_SHUTDOWN();\n"
        "    return cell == 1 && mine() == 13 ? 0 : 11;\n}\n";
    char link[1024];
    const char *dir = tu_build("compat/tl2");
    snprintf(link, sizeof link, "-DSTM -I'%s' -L'%s' -ltl2 -lpthread", dir, dir);
    build_and_run("own_config_tl2.c", body, link);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(libtmtrace_a_exports_only_tmt_names),
        cmocka_unit_test(libtl2_a_exports_only_the_tl2_api_and_tmt_names),
        cmocka_unit_test(a_program_with_its_own_config_links_libtmtrace_a),
        cmocka_unit_test(a_tl2_program_with_its_own_config_links_libtl2_a),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
