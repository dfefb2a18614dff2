/*
 * test_json_writer.c - the one JSON writer of the tools and tmbench
 * (tools/reader/json_writer.c): separators, nesting, and strings that stay valid
 * JSON whatever bytes a path, label or command line holds.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json_writer.h"

static char *buf;
static size_t len;
static FILE *mem;
static struct jw w;

static int open_doc(void **st)
{
    (void)st;
    mem = open_memstream(&buf, &len);
    assert_non_null(mem);
    jw_init(&w, mem);
    return 0;
}

static int close_doc(void **st)
{
    (void)st;
    if (mem)
        fclose(mem);
    mem = NULL;
    free(buf);
    buf = NULL;
    return 0;
}

/* The document written so far. */
static const char *doc(void)
{
    fflush(mem);
    return buf;
}

static void members_and_elements_are_separated_by_one_comma(void **st)
{
    (void)st;
    jw_object(&w);
    jw_ku64(&w, "a", 1);
    jw_key(&w, "b");
    jw_array(&w);
    jw_u64(&w, 2);
    jw_object(&w);
    jw_object_end(&w);
    jw_array(&w);
    jw_array_end(&w);
    jw_array_end(&w);
    jw_kbool(&w, "c", 0);
    jw_knull(&w, "d");
    jw_ki64(&w, "e", -3);
    jw_object_end(&w);
    assert_string_equal(doc(), "{\"a\":1,\"b\":[2,{},[]],\"c\":false,\"d\":null,\"e\":-3}");
}

static void strings_escape_quotes_backslashes_and_control_characters(void **st)
{
    (void)st;
    jw_object(&w);
    jw_kstr(&w, "p\"k", "dir/we\"ird\\name\n\t\x01\x7f.bin");
    jw_object_end(&w);
    assert_string_equal(doc(), "{\"p\\\"k\":\"dir/we\\\"ird\\\\name\\n\\t\\u0001\\u007f.bin\"}");
}

static void valid_utf8_passes_through_and_stray_bytes_become_escapes(void **st)
{
    (void)st;
    /* é (2 bytes), € (3), 𝄞 (4); then a lone continuation byte, a lead byte
     * cut short, an overlong form and a surrogate. */
    jw_str(&w, "\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e|\x80|\xe2\x82|\xc0\xaf|\xed\xa0\x80");
    assert_string_equal(doc(), "\"\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e|\\u0080|\\u00e2\\u0082|\\u00c0\\u00af|"
                               "\\u00ed\\u00a0\\u0080\"");
}

static void numbers_keep_their_decimals_and_non_finite_ones_are_null(void **st)
{
    (void)st;
    jw_array(&w);
    jw_num(&w, 1.23456, 2);
    jw_num(&w, 2.5, 0);
    jw_num(&w, NAN, 3);
    jw_num(&w, INFINITY, 1);
    jw_g(&w, 0.25);
    jw_g(&w, -INFINITY);
    jw_fmt(&w, "%d.%03d", 12, 5);
    jw_array_end(&w);
    assert_string_equal(doc(), "[1.23,2,null,null,0.25,null,12.005]");
}

static void newline_puts_the_next_element_on_its_own_line(void **st)
{
    (void)st;
    jw_object(&w);
    jw_key(&w, "e");
    jw_array(&w);
    for (int i = 0; i < 2; i++) {
        jw_newline(&w);
        jw_object(&w);
        jw_ku64(&w, "i", (uint64_t)i);
        jw_object_end(&w);
    }
    jw_newline(&w);
    jw_array_end(&w);
    jw_object_end(&w);
    assert_string_equal(doc(), "{\"e\":[\n{\"i\":0},\n{\"i\":1}\n]}");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(members_and_elements_are_separated_by_one_comma, open_doc, close_doc),
        cmocka_unit_test_setup_teardown(strings_escape_quotes_backslashes_and_control_characters, open_doc,
                                        close_doc),
        cmocka_unit_test_setup_teardown(valid_utf8_passes_through_and_stray_bytes_become_escapes, open_doc,
                                        close_doc),
        cmocka_unit_test_setup_teardown(numbers_keep_their_decimals_and_non_finite_ones_are_null, open_doc,
                                        close_doc),
        cmocka_unit_test_setup_teardown(newline_puts_the_next_element_on_its_own_line, open_doc, close_doc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
