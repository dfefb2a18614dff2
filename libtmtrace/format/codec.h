/*
 * codec.h - the compact encoding of event chunks and the chunk compressors.
 *
 * Owns: the row encoding of events (tag byte, zigzag varint deltas of
 * stamps, addresses, instances; see docs/format.md), little-endian field
 * helpers, CRC32, and the NONE/ZLIB/LZ4 block codecs. Pure functions on
 * memory: never touches files, never allocates more than the caller's
 * bounds allow, never trusts a length or a varint read from a payload.
 * Errors are -1 with a message (no path or offset: the caller adds them).
 */
#ifndef TMT_CODEC_H
#define TMT_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "trace_format.h"

/* Flags of an EVENTS chunk (chunk header `flags`). */
enum codec_event_flags {
    CODEC_EV_TRUTH = 1u << 0,   /* each event carries truth - ts */
    CODEC_EV_MERGED = 1u << 1,  /* each event carries its thread */
    CODEC_EV_DECODED = 1u << 2, /* written from tf_event: seq and instance explicit, cpu exact */
    CODEC_EV_THREADED = 1u << 3, /* MERGED: every predictor but the stamp's is per thread; with
                                    DECODED, seq and instance only where they break the prediction */
};

/* Most events one EVENTS chunk may hold; writers split longer runs. */
#define CODEC_MAX_EVENTS (1u << 20)
/* Worst-case encoded size of one event, and of the chunk preamble. */
#define CODEC_EVENT_MAX_BYTES 96u
#define CODEC_PREAMBLE_MAX_BYTES 32u
/* Bytes the encoder may store past the end of what it encodes (a wide
 * varint is written with one 8-byte store). */
#define CODEC_STORE_SLACK 8u

static inline size_t codec_events_bound(size_t n)
{
    return CODEC_PREAMBLE_MAX_BYTES + n * CODEC_EVENT_MAX_BYTES + CODEC_STORE_SLACK;
}

/* Encodes raw records of one thread. `truth` NULL or one stamp per record.
 * Returns the encoded length; *flags gets the chunk flags. */
size_t codec_encode_records(uint8_t *out, const struct tf_record *recs, const uint64_t *truth,
                            size_t n, uint64_t first_seq, uint64_t first_instance,
                            unsigned *flags);
/* Encodes the next records of the stream, at most `max`, exactly as
 * codec_encode_records encodes the records the slots expand to (each read
 * with tf_slot_read from the one before it), without making the records
 * first. Returns the encoded length and *count the
 * records; 0 records and -1 when the stream is malformed at ss->s. */
long codec_encode_slots(uint8_t *out, struct tf_slot_stream *ss, size_t max, size_t *count, unsigned *flags);
/* Encodes decoded events; `thread` is the chunk's thread (0 = merged). Events
 * whose thread differs from `thread` make the chunk a merged one. Returns the
 * length, or 0 with a message when out of memory or an event's kind is
 * none a reader accepts. */
size_t codec_encode_events(uint8_t *out, const struct tf_event *ev, size_t n, uint32_t thread,
                           unsigned *flags);
/* Decodes exactly n events from in[0..len); the chunk's thread fills the
 * thread of non-merged events. 0 or -1 (message). */
int codec_decode_events(const uint8_t *in, size_t len, unsigned flags, uint32_t thread,
                        struct tf_event *ev, size_t n);

/* Block compression. bound() is the output capacity compress() needs. */
size_t codec_compress_bound(int codec, size_t n);
/* Returns the compressed length, or 0 when the codec failed or would not
 * shrink the data (the caller then stores it uncompressed). */
size_t codec_compress(int codec, int level, const void *in, size_t n, void *out, size_t cap);
/* Decompresses into exactly raw_len bytes. 0 or -1 (message). */
int codec_decompress(int codec, const void *in, size_t n, void *out, size_t raw_len);
/* 1 if this build can write/read the codec. */
int codec_available(int codec);

uint32_t codec_crc32(const void *p, size_t n);

/* Throughput and size of encode+compress on a synthetic, realistic stream
 * (S R R W C patterns over a few arrays). Fills events/s and bytes/event. */
int codec_bench(int codec, int level, size_t nevents, double *events_per_s,
                double *bytes_per_event);

/* ---- little-endian fixed fields (file header, chunk header, metadata) -- */

static inline void codec_put_u16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void codec_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void codec_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void codec_put_f64(uint8_t *p, double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    codec_put_u64(p, v);
}
static inline uint16_t codec_get_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t codec_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t codec_get_u64(const uint8_t *p)
{
    return (uint64_t)codec_get_u32(p) | (uint64_t)codec_get_u32(p + 4) << 32;
}
static inline double codec_get_f64(const uint8_t *p)
{
    uint64_t v = codec_get_u64(p);
    double d;
    memcpy(&d, &v, 8);
    return d;
}

#endif
