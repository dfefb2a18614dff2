/*
 * test_docs.c - docs/environment.md is exactly what the TMTRACE_* table
 * generates, and its table renders as one (no unescaped '|' in a cell).
 * With TMT_WRITE_DOCS=1 the test writes the file instead (the way the doc is
 * made): TMT_WRITE_DOCS=1 build/test/test_docs
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "test_util.h"

static const char intro[] =
    "# Environment variables\n\n"
    "libtmtrace reads these once, in `tmt_init()`. A value that is not understood or is out of\n"
    "range makes `tmt_init()` fail with a message naming the variable; a `TMTRACE_*` name that\n"
    "is not in this table is rejected too (a typo is never ignored). Sizes take the units k, M,\n"
    "G (powers of 1024). This file is generated from the table in `libtmtrace/tracer/config.c`\n"
    "(`TMT_WRITE_DOCS=1 build/test/test_docs`); `test_docs` fails when they differ.\n\n";

static char *generate(size_t *len)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    fputs(intro, f);
    config_print_help(f, 1);
    fclose(f);
    return text;
}

static void environment_md_matches_the_config_table(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/docs/environment.md", TMT_SOURCE_ROOT);
    size_t len;
    char *want = generate(&len);
    if (getenv("TMT_WRITE_DOCS")) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fwrite(want, 1, len, f);
        fclose(f);
    }
    size_t have_len;
    char *have = tu_read_file(path, &have_len);
    if (have == NULL)
        fail_msg("%s is missing", path);
    if (have_len != len || memcmp(have, want, len) != 0)
        fail_msg("%s differs from config_print_help(.., 1); regenerate with TMT_WRITE_DOCS=1", path);
    free(have);
    free(want);
}

static void every_variable_has_a_row(void **state)
{
    (void)state;
    size_t len;
    char *text = generate(&len);
    static const char *names[] = { "TMTRACE_EVENTS", "TMTRACE_MODE", "TMTRACE_FILE", "TMTRACE_BUFFER",
                                   "TMTRACE_MEMORY", "TMTRACE_SAMPLE_MS", "TMTRACE_SKEW",
                                   "TMTRACE_MIGRATE", "TMTRACE_CLOCK", "TMTRACE_RESAMPLE_MS" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char row[64];
        snprintf(row, sizeof row, "| `%s` |", names[i]);
        assert_non_null(strstr(text, row));
    }
    free(text);
}

/* The table renders as a table: every row splits into the header's four
 * cells on its unescaped '|' (a '|' in a value or in a code span must be
 * escaped, or Markdown starts a new cell there), and every code span is
 * closed within its row. */
static void every_row_renders_as_four_cells(void **state)
{
    (void)state;
    size_t len;
    char *text = generate(&len);
    int rows = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] != '|')
            continue;
        int pipes = 0, ticks = 0;
        for (const char *p = line; *p; p++) {
            if (*p == '\\' && p[1]) {
                p++;
                continue;
            }
            pipes += *p == '|';
            ticks += *p == '`';
        }
        if (pipes != 5 || ticks % 2)
            fail_msg("docs/environment.md row does not render as 4 cells: %s", line);
        rows++;
    }
    assert_true(rows >= 12);   /* header, rule and the variables */
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(environment_md_matches_the_config_table),
        cmocka_unit_test(every_variable_has_a_row),
        cmocka_unit_test(every_row_renders_as_four_cells),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
