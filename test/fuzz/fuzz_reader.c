/*
 * fuzz_reader.c - libFuzzer target for the trace reader (trace_file.c and
 * the codecs under it).
 *
 * Owns: turning an arbitrary byte string into a trace file and reading it
 * the way the tools do: header, then every chunk with tf_next, strictly and
 * with TF_SALVAGE, with and without decoding events, and every chunk again
 * by offset with tf_read_at. Asserts what the reader promises: no crash, a
 * chunk's arrays hold `count` elements, offsets grow, a strict read stops at
 * the first damage, and salvage never hands over more chunks than fit.
 * Never: writes outside its one anonymous in-memory file, or prints.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "trace_file.h"

#define FUZZ_MAX_OFFSETS 256

/* Touches every element the chunk says it has, so ASan sees any overrun. */
static uint64_t fuzz_touch(const struct tf_chunk *c)
{
    uint64_t h = c->kind ^ c->thread;
    for (size_t i = 0; i < c->count; i++) {
        if (c->events)
            h += c->events[i].ts ^ c->events[i].kind;
        else if (c->samples)
            h += c->samples[i].tsc;
        else if (c->sites)
            h += c->sites[i].id + strnlen(c->sites[i].file, sizeof c->sites[i].file);
        else if (c->threads)
            h += c->threads[i].events;
        else if (c->skews)
            h += c->skews[i].cpu;
        else if (c->models)
            h += c->models[i].nseg;
    }
    if (c->models)
        for (size_t i = 0; i < c->count; i++)
            if (c->models[i].nseg > 256)
                abort(); /* a model the evaluator would walk past seg[] */
    return h;
}

static void fuzz_read_all(const char *path, unsigned flags, uint64_t size)
{
    struct tf_reader *r = tf_open(path, flags);
    if (!r)
        return;
    (void)tf_reader_header(r);
    struct tf_chunk c;
    uint64_t offsets[FUZZ_MAX_OFFSETS];
    size_t noff = 0;
    uint64_t last = 0, chunks = 0;
    volatile uint64_t sink = 0;
    int rc;
    while ((rc = tf_next(r, &c)) == 1) {
        if (c.offset < last || c.offset >= size)
            abort(); /* chunks come in file order, inside the file */
        last = c.offset + 1;
        chunks++;
        sink += fuzz_touch(&c);
        if (noff < FUZZ_MAX_OFFSETS)
            offsets[noff++] = c.offset;
    }
    /* A chunk has a header of at least 8 bytes: no reader can find more
     * chunks than that allows, salvage or not. */
    if (chunks > size / 8)
        abort();
    if (tf_reader_skipped(r) && !(flags & TF_SALVAGE))
        abort(); /* a strict reader never skips */
    (void)tf_reader_damage(r);
    for (size_t i = 0; i < noff; i++)
        if (tf_read_at(r, offsets[i], &c) == 1)
            sink += fuzz_touch(&c);
    tf_close(r);
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    if (fd < 0) {
        fd = memfd_create("fuzz_trace", 0);
        if (fd < 0)
            abort();
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        abort();
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    fuzz_read_all(path, 0, size);
    fuzz_read_all(path, TF_SALVAGE, size);
    fuzz_read_all(path, TF_SALVAGE | TF_SKIP_EVENTS, size);
    return 0;
}
