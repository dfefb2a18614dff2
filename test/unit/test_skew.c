/*
 * test_skew.c - TMTRACE_SKEW parsing and the exact injection function.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "error.h"
#include "skew.h"
#include "trace_file.h"

static void parse_reads_offset_drift_and_drift_change(void **state)
{
    (void)state;
    struct tf_skew s[4];
    int n = skew_parse("1:250000:120,0:-1000:5.5@200:-30", s, 4);
    assert_int_equal(n, 2);
    assert_int_equal(s[0].cpu, 1);
    assert_int_equal(s[0].offset_ns, 250000);
    assert_true(s[0].drift_ppm == 120.0);
    assert_int_equal(s[0].change_ms, -1);
    assert_int_equal(s[1].cpu, 0);
    assert_int_equal(s[1].offset_ns, -1000);
    assert_true(s[1].drift_ppm == 5.5);
    assert_int_equal(s[1].change_ms, 200);
    assert_true(s[1].drift2_ppm == -30.0);
}

static void empty_text_means_no_injection(void **state)
{
    (void)state;
    struct tf_skew s[1];
    assert_int_equal(skew_parse("", s, 1), 0);
    skew_init(s, 0, 2000000000u, 0);
    assert_false(skew_active());
    assert_int_equal(skew_apply(123456789, 0), 123456789);
}

static void bad_items_are_rejected_naming_the_variable_and_the_part(void **state)
{
    (void)state;
    static const char *bad[][2] = {
        { "x:1:2", "x:1:2" },          { "1:2", "1:2" },           { "1:2:3@", "1:2:3@" },
        { "1:2:3@5", "1:2:3@5" },      { "1:2:3,,2:0:0", "empty" }, { "1:2:3,1:4:5", "CPU 1" },
        { "1:2:3x", "x" },             { "99999:0:0", "99999" },     { "1:2.5:3", "1:2.5:3" },
        { "1:2:3@-4:5", "1:2:3@-4:5" }, { "0:0:1e9", "0:0:1e9" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct tf_skew s[4];
        assert_int_equal(skew_parse(bad[i][0], s, 4), -1);
        const char *msg = error_get();
        if (strstr(msg, "TMTRACE_SKEW") == NULL || strstr(msg, bad[i][1]) == NULL)
            fail_msg("'%s' gave '%s'", bad[i][0], msg);
    }
}

/* Parses one item and installs it for a TSC of `hz` whose init stamp is `base`. */
static void install(const char *text, uint64_t hz, uint64_t base)
{
    struct tf_skew s[1];
    assert_int_equal(skew_parse(text, s, 1), 1);
    skew_init(s, 1, hz, base);
    assert_true(skew_active());
}

static void offset_is_added_exactly_in_ticks(void **state)
{
    (void)state;
    uint64_t base = 1000000000000ull;
    install("1:250000:0", 2000000000u, base); /* 2 GHz: 250 us = 500000 ticks */
    for (uint64_t t = base - 5000; t < base + 50000000000ull; t += 7777777777ull)
        assert_int_equal(skew_apply(t, 1) - t, 500000);
    assert_int_equal(skew_apply(base + 99, 0), base + 99); /* CPU 0 not listed */
}

static void drift_grows_with_time_since_init_and_changes_at_t(void **state)
{
    (void)state;
    uint64_t base = 5000000000ull;
    install("2:0:120@100:-40", 1000000000u, base); /* 1 GHz: 100 ms = 1e8 ticks */
    assert_int_equal(skew_apply(base, 2), base);
    /* 50 ms in: 5e7 ticks * 120e-6 = 6000 ticks */
    assert_int_equal(skew_apply(base + 50000000, 2), base + 50000000 + 6000);
    /* 300 ms in: 1e8 * 120e-6 + 2e8 * -40e-6 = 12000 - 8000 */
    assert_int_equal(skew_apply(base + 300000000, 2), base + 300000000 + 4000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_reads_offset_drift_and_drift_change),
        cmocka_unit_test(empty_text_means_no_injection),
        cmocka_unit_test(bad_items_are_rejected_naming_the_variable_and_the_part),
        cmocka_unit_test(offset_is_added_exactly_in_ticks),
        cmocka_unit_test(drift_grows_with_time_since_init_and_changes_at_t),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
