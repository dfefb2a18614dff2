/*
 * test_codec.c - the event row encoding and the block codecs: exact round
 * trips on ordinary and extreme values, and damaged payloads rejected
 * without reading out of bounds. Prints the codec benchmark figures.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codec.h"
#include "error.h"
#include "test_util.h"
#include "trace_gen.h"
#include "trace_file.h"

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint64_t rnd(void) { return tu_xorshift(&rng); }

/* Values that stress the deltas: extremes, sign changes, small numbers. */
static uint64_t wild(void)
{
    static const uint64_t edge[] = { 0, 1, 127, 128, 0x7fffffffffffffffull, 0x8000000000000000ull,
                                     UINT64_MAX, UINT64_MAX - 1, 0xffffffffull, 0x100000000ull };
    switch (rnd() % 4) {
    case 0: return edge[rnd() % (sizeof edge / sizeof edge[0])];
    case 1: return rnd() % 300;
    default: return rnd();
    }
}

static void fill_records(struct tf_record *r, uint64_t *truth, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        r[i].tsc = wild();
        r[i].aux = (uint32_t)wild();
        /* every kind, those past the tag's 3 bits (escaped) too */
        r[i].kind = (uint8_t)(1 + rnd() % (TF_EV_KINDS - 1));
        r[i].reason = (uint8_t)wild();
        r[i].site = (uint16_t)wild();
        r[i].addr = wild();
        r[i].value = wild();
        truth[i] = wild();
    }
}

static void test_records_round_trip_exactly_even_with_extreme_values(void **s)
{
    (void)s;
    enum { N = 20000 };
    struct tf_record *r = malloc(N * sizeof *r);
    uint64_t *truth = malloc(N * sizeof *truth);
    uint8_t *buf = malloc(codec_events_bound(N));
    struct tf_event *ev = malloc(N * sizeof *ev);
    assert_true(r && truth && buf && ev);
    fill_records(r, truth, N);
    for (int with_truth = 0; with_truth < 2; with_truth++) {
        unsigned fl;
        size_t len = codec_encode_records(buf, r, with_truth ? truth : NULL, N, 12345, UINT64_MAX, &fl);
        assert_true(len <= codec_events_bound(N));
        assert_int_equal(fl & CODEC_EV_TRUTH, with_truth ? CODEC_EV_TRUTH : 0);
        assert_int_equal(codec_decode_events(buf, len, fl, 42, ev, N), 0);
        uint64_t inst = UINT64_MAX;
        for (size_t i = 0; i < N; i++) {
            if (r[i].kind == TF_EV_START)
                inst = r[i].addr;
            assert_int_equal(ev[i].ts, r[i].tsc);
            assert_int_equal(ev[i].cpu, tf_aux_cpu(r[i].aux));
            assert_int_equal(ev[i].kind, r[i].kind);
            assert_int_equal(ev[i].reason, r[i].reason);
            assert_int_equal(ev[i].site, r[i].site);
            assert_int_equal(ev[i].addr, r[i].addr);
            assert_int_equal(ev[i].value, r[i].value);
            assert_int_equal(ev[i].thread, 42);
            assert_int_equal(ev[i].seq, 12345 + i);
            assert_int_equal(ev[i].instance, inst);
            assert_int_equal(ev[i].truth, with_truth ? truth[i] : 0);
        }
    }
    free(r), free(truth), free(buf), free(ev);
}

static void test_decoded_events_round_trip_merged_or_per_thread(void **s)
{
    (void)s;
    enum { N = 5000 };
    struct tf_event *in = calloc(N, sizeof *in), *ev = calloc(N, sizeof *ev);
    uint8_t *buf = malloc(codec_events_bound(N));
    assert_true(in && ev && buf);
    for (int merged = 0; merged < 2; merged++) {
        for (size_t i = 0; i < N; i++) {
            in[i] = (struct tf_event){ wild(), rnd() % 3 ? 0 : wild(), wild(), wild(), wild(), wild(),
                                       merged ? (uint32_t)(rnd() % 3000) : 5, (uint32_t)wild(),
                                       (uint16_t)wild(), (uint8_t)(1 + rnd() % (TF_EV_KINDS - 1)), (uint8_t)wild() };
        }
        unsigned fl;
        size_t len = codec_encode_events(buf, in, N, merged ? 0 : 5, &fl);
        assert_true(len > 0 && len <= codec_events_bound(N));
        assert_int_equal(!!(fl & CODEC_EV_MERGED), merged);
        assert_int_equal(codec_decode_events(buf, len, fl, merged ? 0 : 5, ev, N), 0);
        assert_int_equal(tg_first_event_diff(ev, in, N), N);
    }
    free(in), free(ev), free(buf);
}

/* A payload of exactly `len` heap bytes, so that ASan sees any overread. */
static int decode_copy(const uint8_t *src, size_t len, unsigned fl, struct tf_event *ev, size_t n)
{
    uint8_t *p = malloc(len ? len : 1);
    assert_non_null(p);
    memcpy(p, src, len);
    int rc = codec_decode_events(p, len, fl, 1, ev, n);
    free(p);
    return rc;
}

static void test_every_truncated_or_padded_payload_is_rejected(void **s)
{
    (void)s;
    enum { N = 300 };
    struct tf_record r[N];
    uint64_t truth[N];
    struct tf_event ev[N];
    uint8_t buf[codec_events_bound(N) + 1];
    fill_records(r, truth, N);
    unsigned fl;
    size_t len = codec_encode_records(buf, r, truth, N, 0, 0, &fl);
    for (size_t cut = 0; cut < len; cut++) {
        assert_int_equal(decode_copy(buf, cut, fl, ev, N), -1);
        assert_non_null(strstr(error_get(), "corrupt event payload"));
    }
    buf[len] = 0;
    assert_int_equal(decode_copy(buf, len + 1, fl, ev, N), -1);
    assert_non_null(strstr(error_get(), "after its"));
    assert_int_equal(decode_copy(buf, len, fl, ev, N), 0);
}

static void test_corrupted_payloads_never_read_out_of_bounds(void **s)
{
    (void)s;
    enum { N = 200 };
    struct tf_record r[N];
    uint64_t truth[N];
    struct tf_event ev[N];
    uint8_t buf[codec_events_bound(N)], bad[codec_events_bound(N)];
    fill_records(r, truth, N);
    unsigned fl;
    size_t len = codec_encode_records(buf, r, truth, N, 0, 0, &fl);
    int rejected = 0;
    for (int trial = 0; trial < 3000; trial++) {
        memcpy(bad, buf, len);
        for (int k = 0; k < 1 + trial % 5; k++)
            bad[rnd() % len] = (uint8_t)rnd();
        unsigned f = trial % 7 == 0 ? (unsigned)(rnd() % 8) : fl;
        int rc = decode_copy(bad, len, f, ev, N);
        assert_true(rc == 0 || rc == -1);
        rejected += rc == -1;
    }
    assert_true(rejected > 0);
}

static void test_block_codecs_round_trip_and_refuse_wrong_lengths(void **s)
{
    (void)s;
    enum { N = 100000 };
    uint8_t *in = malloc(N), *out = malloc(N + 1);
    assert_true(in && out);
    for (size_t i = 0; i < N; i++)
        in[i] = (uint8_t)(i % 251 < 200 ? i % 7 : rnd());
    const int codecs[] = { TF_CODEC_ZLIB, TF_CODEC_LZ4 };
    for (size_t k = 0; k < 2; k++) {
        int c = codecs[k];
        if (!codec_available(c))
            continue;
        size_t cap = codec_compress_bound(c, N);
        uint8_t *z = malloc(cap);
        assert_non_null(z);
        size_t zn = codec_compress(c, 6, in, N, z, cap);
        assert_true(zn > 0 && zn < N);
        assert_int_equal(codec_decompress(c, z, zn, out, N), 0);
        assert_memory_equal(in, out, N);
        assert_int_equal(codec_decompress(c, z, zn, out, N - 1), -1);
        assert_int_equal(codec_decompress(c, z, zn / 2, out, N), -1);
        free(z);
    }
    /* Incompressible data is reported as "store it plainly". */
    for (size_t i = 0; i < N; i++)
        in[i] = (uint8_t)rnd();
    size_t cap = codec_compress_bound(TF_CODEC_ZLIB, N);
    uint8_t *z = malloc(cap);
    assert_non_null(z);
    assert_int_equal(codec_compress(TF_CODEC_ZLIB, 1, in, N, z, cap), 0);
    free(z);
    assert_int_equal(codec_decompress(TF_CODEC_NONE, in, N, out, N), 0);
    assert_int_equal(codec_decompress(TF_CODEC_NONE, in, N, out, N - 1), -1);
    assert_int_equal(codec_decompress(9, in, N, out, N), -1);
    free(in), free(out);
}

static void test_realistic_stream_encodes_far_below_the_record_size(void **s)
{
    (void)s;
    /* Figures for the report; the assertion is only the format's point:
     * an event costs a fraction of its 32-byte record. */
    const int codecs[] = { TF_CODEC_NONE, TF_CODEC_LZ4, TF_CODEC_ZLIB };
    for (size_t k = 0; k < 3; k++) {
        if (!codec_available(codecs[k]))
            continue;
        double eps, bpe;
        assert_int_equal(codec_bench(codecs[k], 1, 1u << 20, &eps, &bpe), 0);
        printf("codec %s: %.1f M events/s encode+compress, %.2f bytes/event\n",
               tf_codec_name((unsigned)codecs[k]), eps / 1e6, bpe);
        assert_true(eps > 0);
        assert_true(bpe > 1.0 && bpe < 16.0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_records_round_trip_exactly_even_with_extreme_values),
        cmocka_unit_test(test_decoded_events_round_trip_merged_or_per_thread),
        cmocka_unit_test(test_every_truncated_or_padded_payload_is_rejected),
        cmocka_unit_test(test_corrupted_payloads_never_read_out_of_bounds),
        cmocka_unit_test(test_block_codecs_round_trip_and_refuse_wrong_lengths),
        cmocka_unit_test(test_realistic_stream_encodes_far_below_the_record_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
