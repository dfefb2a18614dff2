/*
 * test_config.c - the TMTRACE_* table: defaults, sizes with units, every
 * variable's bad value rejected with its name, unknown names rejected.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "error.h"

struct kv {
    const char *name, *value;
};

static const char *get_one(const char *name, void *ctx)
{
    const struct kv *kv = ctx;
    return strcmp(name, kv->name) == 0 ? kv->value : NULL;
}

static int load_one(const char *name, const char *value)
{
    struct kv kv = { name, value };
    return config_load_from(get_one, &kv, NULL);
}

/* One bad value per variable; the test below checks that the list covers
 * the whole table, so a new variable cannot go untested. */
static const struct kv bad[] = {
    { "TMTRACE_EVENTS", "some" },        { "TMTRACE_MODE", "disk" },
    { "TMTRACE_FILE", "" },              { "TMTRACE_FILE_IO", "odirect" }, { "TMTRACE_BUFFER", "12Q" },
    { "TMTRACE_MEMORY", "1k" },          { "TMTRACE_SAMPLE_MS", "0" },
    { "TMTRACE_RESAMPLE_MS", "-1" },     { "TMTRACE_CLOCK", "realtime" },
    { "TMTRACE_SKEW", "1:2" },           { "TMTRACE_MIGRATE", "abc" },
    { "TMTRACE_CODEC", "gzip" },         { "TMTRACE_CODEC_LEVEL", "10" },
    { "TMTRACE_HTM", "yes" },            { "TMTRACE_HTM_RETRIES", "-1" },
    { "TMTRACE_HTM_EMU_ABORT", "101" },  { "TMTRACE_HTM_EMU_CAPACITY", "0" },
    { "TMTRACE_HTM_EMU_EXPLICIT", "x" }, { "TMTRACE_STRIPES", "5" },
    { "TMTRACE_SEED", "-3" },           { "TMTRACE_STAMP", "sometimes" },
    { "TMTRACE_PREFAULT", "1X" },        { "TMTRACE_WRITER_CPU", "-2" },
    { "TMTRACE_SERIAL_AFTER", "0" },      { "TMTRACE_STRIPE_SHIFT", "2" },
    { "TMTRACE_WRITER_NICE", "20" },      { "TMTRACE_WRITER_DEFER", "lots" },
    { "TMTRACE_DETAIL", "65536" },       { "TMTRACE_WRITER_SHARE", "101" },
    { "TMTRACE_ABORT_STACK", "17" },
};

static void every_variable_rejects_a_bad_value_naming_itself(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(load_one(bad[i].name, bad[i].value), -1);
        if (strstr(error_get(), bad[i].name) == NULL)
            fail_msg("%s=%s gave '%s'", bad[i].name, bad[i].value, error_get());
        /* A failed load leaves the defaults in force. */
        assert_int_equal(config.events, CONFIG_EVENTS_TX);
    }
}

static void the_bad_value_list_covers_the_whole_table(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    config_print_help(f, 1);
    fclose(f);
    int rows = 0;
    for (char *p = strstr(text, "| `TMTRACE_"); p; p = strstr(p + 1, "| `TMTRACE_")) {
        char name[64];
        assert_int_equal(sscanf(p + 3, "%63[A-Z0-9_]", name), 1);
        int found = 0;
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
            found |= strcmp(bad[i].name, name) == 0;
        if (!found)
            fail_msg("%s has no bad-value case", name);
        rows++;
    }
    assert_int_equal(rows, (int)(sizeof bad / sizeof bad[0]));
    free(text);
}

static void sizes_take_units(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int64_t bytes;
    } ok[] = { { "4096", 4096 }, { "64k", 65536 }, { "4M", 4194304 }, { "1G", 1073741824 },
               { "512KiB", 524288 }, { "2MB", 2097152 } };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        assert_int_equal(load_one("TMTRACE_BUFFER", ok[i].text), 0);
        assert_int_equal(config.buffer_bytes, ok[i].bytes);
    }
    int64_t v;
    assert_int_equal(config_parse_size("4T", &v), -1);
    assert_int_equal(config_parse_size("-4k", &v), -1);
    assert_int_equal(config_parse_size("k", &v), -1);
    assert_int_equal(config_parse_size("99999999999999999999", &v), -1);
}

static void good_values_are_stored(void **state)
{
    (void)state;
    assert_int_equal(load_one("TMTRACE_EVENTS", "all"), 0);
    assert_int_equal(config.events, CONFIG_EVENTS_ALL);
    assert_int_equal(load_one("TMTRACE_MODE", "memory"), 0);
    assert_int_equal(config.mode, CONFIG_MODE_MEMORY);
    assert_int_equal(load_one("TMTRACE_SKEW", "1:250000:120@10:5"), 0);
    assert_string_equal(config.skew, "1:250000:120@10:5");
    assert_int_equal(load_one("TMTRACE_CODEC_LEVEL", "6"), 0);
    assert_int_equal(config.codec_level, 6);
    assert_int_equal(load_one("TMTRACE_DETAIL", "16"), 0);
    assert_int_equal(config.detail, 16);
    assert_int_equal(load_one("TMTRACE_ABORT_STACK", "16"), 0);
    assert_int_equal(config.abort_stack, 16);
    config_reset();
    /* The default explains every abort at the least cost (docs/tracer.md). */
    assert_int_equal(config.events, CONFIG_EVENTS_TX);
    assert_int_equal(config.stamp, CONFIG_STAMP_BOUNDARY);
    assert_int_equal(config.detail, 0);
    assert_int_equal(config.abort_stack, 0);
    assert_int_equal(config.buffer_bytes, 1 << 20);
    assert_string_equal(config.file, "trace.bin");
}

static const char *get_none(const char *name, void *ctx)
{
    (void)name;
    (void)ctx;
    return NULL;
}

static void unknown_tmtrace_names_are_rejected(void **state)
{
    (void)state;
    char *names[] = { "PATH=/bin", "TMTRACE_EVENTS=all", "TMTRACE_BUFER=4M", NULL };
    assert_int_equal(config_load_from(get_none, NULL, names), -1);
    assert_non_null(strstr(error_get(), "TMTRACE_BUFER"));
    char *fine[] = { "PATH=/bin", "TMTRACE_EVENTS=all", "TMTRACE=x", NULL };
    assert_int_equal(config_load_from(get_none, NULL, fine), 0); /* "TMTRACE" alone is not ours */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_variable_rejects_a_bad_value_naming_itself),
        cmocka_unit_test(the_bad_value_list_covers_the_whole_table),
        cmocka_unit_test(sizes_take_units),
        cmocka_unit_test(good_values_are_stored),
        cmocka_unit_test(unknown_tmtrace_names_are_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
