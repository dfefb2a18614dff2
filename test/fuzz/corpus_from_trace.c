/*
 * corpus_from_trace.c - turns a real trace into seed inputs for the fuzz
 * targets whose input is not a trace file: the samples of one CPU in
 * fuzz_sync_model's layout and the first events in fuzz_check's layout.
 *
 * Owns: those two layouts' writers (they mirror the decoders in
 * fuzz_sync_model.c and fuzz_check.c). Usage:
 *   corpus_from_trace TRACE sync_model|check OUT [MAX]
 * Exit 0 = written, 2 = bad usage or unreadable trace (one line on stderr).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "fuzz_util.h"
#include "trace_file.h"
#include "trace_gen.h"

/* Copies every chunk, cutting SAMPLES chunks to `max` samples. */
static int trim_trace(const char *in, const char *outpath, size_t max)
{
    struct tf_reader *r = tf_open(in, 0);
    if (!r) {
        fprintf(stderr, "corpus_from_trace: %s\n", error_get());
        return 2;
    }
    struct tf_writer *w = tf_create(outpath, tf_reader_header(r), 0);
    if (!w) {
        fprintf(stderr, "corpus_from_trace: %s\n", error_get());
        tf_close(r);
        return 2;
    }
    struct tf_chunk c;
    int rc = 0, got;
    while (rc == 0 && (got = tf_next(r, &c)) == 1) {
        switch (c.kind) {
        case TF_CHUNK_META_SITES: rc = tf_write_sites(w, c.sites, c.count); break;
        case TF_CHUNK_META_THREADS: rc = tf_write_threads(w, c.threads, c.count); break;
        case TF_CHUNK_META_SKEW: rc = tf_write_skews(w, c.skews, c.count); break;
        case TF_CHUNK_SAMPLES: rc = tf_write_samples(w, c.samples, c.count < max ? c.count : max); break;
        case TF_CHUNK_EVENTS: rc = tg_write_events(w, c.thread, c.events, c.count, (int)c.codec, 1); break;
        case TF_CHUNK_MODEL: rc = tf_write_models(w, c.models, c.count); break;
        case TF_CHUNK_END: rc = tf_write_end(w, c.threads, c.count, c.writer_errors, c.end_signal); break;
        default: break;
        }
    }
    tf_close(r);
    if (rc != 0 || tf_finish(w, 0) != 0) {
        fprintf(stderr, "corpus_from_trace: %s\n", error_get());
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4 || (strcmp(argv[2], "sync_model") != 0 && strcmp(argv[2], "check") != 0 &&
                     strcmp(argv[2], "reader") != 0)) {
        fprintf(stderr, "usage: corpus_from_trace TRACE sync_model|check|reader OUT [MAX]\n");
        return 2;
    }
    size_t max = argc > 4 ? strtoul(argv[4], NULL, 10) : 200;
    if (strcmp(argv[2], "reader") == 0)
        return trim_trace(argv[1], argv[3], max);
    int samples = strcmp(argv[2], "sync_model") == 0;
    struct tf_reader *r = tf_open(argv[1], 0);
    if (!r) {
        fprintf(stderr, "corpus_from_trace: %s\n", error_get());
        return 2;
    }
    FILE *out = fopen(argv[3], "wb");
    if (!out) {
        fprintf(stderr, "corpus_from_trace: %s: cannot create\n", argv[3]);
        tf_close(r);
        return 2;
    }
    if (samples)
        fwrite("\x01\x14\x00", 1, 3, out); /* linear, ~1 ns per tick, raw TSC */
    else
        fwrite("\x14\x00\x03\x00", 1, 4, out); /* 20 stripe bits, accesses recorded */
    struct tf_chunk c;
    size_t written = 0;
    uint64_t prev_tsc = 0, prev_ref = 0, prev_ts = 0;
    int cpu = -1;
    while (written < max && tf_next(r, &c) == 1) {
        if (samples && c.kind == TF_CHUNK_SAMPLES) {
            for (size_t i = 0; i < c.count && written < max; i++) {
                const struct tf_sample *s = &c.samples[i];
                if (cpu < 0)
                    cpu = s->cpu;
                if (s->cpu != cpu)
                    continue;
                uint8_t rec[12];
                fuzz_put_le(rec, prev_tsc ? s->tsc - prev_tsc : 0, 4);
                fuzz_put_le(rec + 4, prev_ref ? s->ref_ns - prev_ref : 0, 4);
                fuzz_put_le(rec + 8, s->width > 0xffff ? 0xffff : s->width, 2);
                rec[10] = 0;
                rec[11] = s->phase % 3;
                prev_tsc = s->tsc;
                prev_ref = s->ref_ns;
                fwrite(rec, 1, sizeof rec, out);
                written++;
            }
        } else if (!samples && c.kind == TF_CHUNK_EVENTS) {
            for (size_t i = 0; i < c.count && written < max; i++) {
                const struct tf_event *e = &c.events[i];
                uint8_t rec[16];
                int64_t step = prev_ts && e->ts >= prev_ts ? (int64_t)((e->ts - prev_ts) / 7) : 1;
                rec[0] = e->kind;
                rec[1] = (uint8_t)(((e->thread ? e->thread : 1) - 1) & 7) | (uint8_t)((e->site & 31) << 3);
                rec[2] = e->reason;
                rec[3] = (uint8_t)(step > 127 ? 127 : step);
                rec[4] = 0;
                fuzz_put_le(rec + 5, e->addr >> 3, 2);
                fuzz_put_le(rec + 7, e->value, 5);
                rec[12] = 0;
                rec[13] = (uint8_t)(e->cpu & 3);
                fuzz_put_le(rec + 14, e->instance, 2);
                prev_ts = e->ts;
                fwrite(rec, 1, sizeof rec, out);
                written++;
            }
        }
    }
    tf_close(r);
    if (fclose(out) != 0) {
        fprintf(stderr, "corpus_from_trace: %s: write failed\n", argv[3]);
        return 2;
    }
    return 0;
}
