/*
 * codec.c - row encoding of events and block compression (see codec.h and
 * docs/format.md, "EVENTS payload").
 *
 * Each event is a tag byte followed by varints. Every field is predicted
 * from the previous event (stamp, CPU, site, address, instance, sequence
 * number) so that a typical transactional stream costs a few bytes per event
 * before compression. The decoder checks every read against the end of the
 * payload: a corrupt payload is an error, never an out-of-bounds access.
 * The chunks' CRC-32 is zlib's, computed by carry-less multiplication where
 * the CPU has it.
 */
#include "codec.h"

#include <stdlib.h>
#include <time.h>
#include <zlib.h>
#ifdef TMT_HAVE_LZ4
#include <lz4.h>
#endif

#include "error.h"

/* LZ4's acceleration for event chunks (see codec_compress). */
#ifndef CODEC_LZ4_ACCELERATION
#define CODEC_LZ4_ACCELERATION 8
#endif

/* Tag byte: kind in bits 0-2 (0: the kind, 8 and up, follows as one byte
 * after the tag), then which fields follow. */
enum {
    CODEC_TAG_KIND = 7u,
    CODEC_TAG_SITE = 1u << 3,   /* site differs from the previous event's */
    CODEC_TAG_AUX = 1u << 4,    /* CPU (TSC_AUX) differs */
    CODEC_TAG_REASON = 1u << 5, /* reason differs from the last of this kind */
    CODEC_TAG_ALT = 1u << 6,    /* READ/WRITE: value relative to the address; ABORT: address
                                   relative to the last accessed address */
    CODEC_TAG_THREAD = 1u << 7, /* THREADED: the thread id follows (it differs from the last row's) */
};
/* THREADED|DECODED: the row's instance and seq differ from the prediction
 * and follow; on disk bit 7 of an escaped kind byte (any kind escapes). */
#define CODEC_ESC_ORDER 0x80u
#define CODEC_ROW_ORDER (1u << 8)   /* the decoder's note of it, beside the tag's bits */

/* Threads with their own seq/instance predictor in merged chunks; higher
 * ids share slot 0 (correct, just less compact). */
#define CODEC_THREAD_SLOTS 1024u

/* The predictors of every field but the stamp: one set per chunk, or per
 * thread in a THREADED chunk. */
struct codec_fields {
    uint64_t aux;
    uint64_t site;
    uint64_t addr;      /* last READ/WRITE address */
    uint64_t version;   /* last COMMIT write version */
    uint8_t reason[TF_EV_KINDS];  /* last reason per kind */
};

struct codec_thread_pred {
    uint64_t seq;       /* last seq + 1 */
    uint64_t instance;
    struct codec_fields f;   /* THREADED chunks only */
};

struct codec_pred {
    uint64_t tsc;
    uint32_t thread;                /* merged chunks: the last row's thread */
    struct codec_fields *f;         /* &shared, or the current thread's (THREADED) */
    struct codec_fields shared;
    struct codec_thread_pred *tp;   /* current thread's slot */
    struct codec_thread_pred slot0;
    struct codec_thread_pred *slots; /* merged chunks only */
    struct codec_thread_pred *held;  /* CODEC_HELD: the slot slot0 is a copy of (NULL: none) */
};

/* Encoder flag beside the chunk's (never on disk), for THREADED chunks: the
 * current thread's predictors are a copy in slot0, where tp and f stay, and
 * go back to their slot when the thread changes. Fields of a local the
 * output's byte stores cannot alias, where a slot's must be read again
 * after every byte written. */
#define CODEC_HELD (1u << 16)

/* Selects thread `id`'s state in a merged chunk. */
static inline void codec_select_thread(struct codec_pred *st, uint64_t id, unsigned flags)
{
    st->thread = (uint32_t)id;
    struct codec_thread_pred *slot = (id < CODEC_THREAD_SLOTS) ? &st->slots[id] : &st->slots[0];
    if (flags & CODEC_HELD) {
        if (st->held)
            *st->held = st->slot0;
        st->slot0 = *slot;
        st->held = slot;
        return;
    }
    st->tp = slot;
    if (flags & CODEC_EV_THREADED)
        st->f = &st->tp->f;
}

/* The current thread's predictors (see CODEC_HELD). */
static inline struct codec_thread_pred *codec_tp(struct codec_pred *st, unsigned flags)
{
    return (flags & CODEC_HELD) ? &st->slot0 : st->tp;
}
static inline struct codec_fields *codec_f(struct codec_pred *st, unsigned flags)
{
    return (flags & CODEC_HELD) ? &st->slot0.f : st->f;
}

static inline uint64_t codec_zz(uint64_t delta) { return (delta << 1) ^ (uint64_t)((int64_t)delta >> 63); }
static inline uint64_t codec_unzz(uint64_t v) { return (v >> 1) ^ (uint64_t)-(int64_t)(v & 1); }

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "a wide varint's store puts group i in byte i");
/* The bytes of a varint below 2^56 whose highest set bit is bit i: i / 7 + 1. */
#define CODEC_SEVEN(n) n, n, n, n, n, n, n
static const uint8_t codec_varint_len[56] = { CODEC_SEVEN(1), CODEC_SEVEN(2), CODEC_SEVEN(3), CODEC_SEVEN(4),
                                              CODEC_SEVEN(5), CODEC_SEVEN(6), CODEC_SEVEN(7), CODEC_SEVEN(8) };
#undef CODEC_SEVEN
/* A varint of 4 to 8 bytes (v below 2^56): its 7-bit groups spread to
 * bytes and the continuation bits set in registers, then one 8-byte store
 * (the bytes past the varint are scratch: CODEC_STORE_SLACK). Heap
 * addresses (an allocation's, a write set's far steps) take 6 to 7 bytes,
 * and a loop of a step per byte mispredicts its exit on most of them. */
static inline __attribute__((always_inline)) uint8_t *codec_put_varint_wide(uint8_t *p, uint64_t v)
{
    /* The groups spread in three halvings: 28-bit halves to 32-bit lanes,
     * 14-bit quarters to 16-bit lanes, 7-bit groups to bytes. */
    uint64_t x = (v & 0xfffffff) | (v << 4 & 0xfffffff00000000);
    x = (x & 0x00003fff00003fff) | (x << 2 & 0x3fff00003fff0000);
    x = (x & 0x007f007f007f007f) | (x << 1 & 0x7f007f007f007f00);
    unsigned n = codec_varint_len[63 - __builtin_clzll(v)]; /* a load, not a division by 7 */
    x |= 0x8080808080808080u >> (72 - 8 * n); /* the continuation bits of bytes 0 to n - 2 */
    memcpy(p, &x, 8); /* little-endian: byte i holds group i */
    return p + n;
}

static inline __attribute__((always_inline)) uint8_t *codec_put_varint(uint8_t *p, uint64_t v)
{
    /* Most fields are one to three bytes: keep those off the loop. */
    if (v < 0x80) {
        *p = (uint8_t)v;
        return p + 1;
    }
    if (v < 0x4000) {
        p[0] = (uint8_t)(v | 0x80);
        p[1] = (uint8_t)(v >> 7);
        return p + 2;
    }
    if (v < 0x200000) {   /* and many of the others three */
        p[0] = (uint8_t)(v | 0x80);
        p[1] = (uint8_t)(v >> 7 | 0x80);
        p[2] = (uint8_t)(v >> 14);
        return p + 3;
    }
    if (v < (uint64_t)1 << 56)
        return codec_put_varint_wide(p, v);
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* A varint of 2 to 8 bytes with 8 bytes to read at p: its value, in one
 * load and three merges of its 7-bit groups instead of a step per byte.
 * NULL when it is longer (the byte loop then reads it). */
static inline __attribute__((always_inline)) const uint8_t *codec_get_varint8(const uint8_t *p, uint64_t *v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t x;
    memcpy(&x, p, 8);
    uint64_t stop = ~x & 0x8080808080808080ull;   /* the bytes without a continuation bit */
    if (!stop)
        return NULL;
    unsigned bits = (unsigned)__builtin_ctzll(stop) + 1;   /* through the last byte's top bit */
    if (bits < 64)
        x &= (1ull << bits) - 1;
    x &= 0x7f7f7f7f7f7f7f7full;
    x = (x & 0x007f007f007f007full) | (x & 0x7f007f007f007f00ull) >> 1;
    x = (x & 0x00003fff00003fffull) | (x & 0x3fff00003fff0000ull) >> 2;
    x = (x & 0x000000000fffffffull) | (x & 0x0fffffff00000000ull) >> 4;
    *v = x;
    return p + bits / 8;
#else
    (void)p;
    (void)v;
    return NULL;
#endif
}

/* codec_get_varint byte by byte: near the payload's end, and for 9 or 10 bytes. */
static __attribute__((noinline)) const uint8_t *codec_get_varint_bytes(const uint8_t *p, const uint8_t *end,
                                                                      uint64_t *v)
{
    uint64_t r = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (p >= end)
            return NULL;
        uint8_t b = *p++;
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return p;
        }
    }
    return NULL;
}

/* Reads a varint; NULL if it runs past `end` or is longer than 10 bytes.
 * `room`: the caller knows that 8 bytes at p are in the payload. */
static inline __attribute__((always_inline)) const uint8_t *codec_get_varint_in(const uint8_t *p, const uint8_t *end,
                                                                               uint64_t *v, int room)
{
    if ((room || p < end) && *p < 0x80) {
        *v = *p;
        return p + 1;
    }
    if (room || end - p >= 8) {
        if (p[1] < 0x80) {   /* most of the rest are two bytes */
            *v = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
            return p + 2;
        }
        if (p[2] < 0x80) {   /* and many of the others three */
            *v = (uint64_t)(p[0] & 0x7f) | (uint64_t)(p[1] & 0x7f) << 7 | (uint64_t)p[2] << 14;
            return p + 3;
        }
        const uint8_t *q = codec_get_varint8(p, v);
        if (q)
            return q;
    }
    return codec_get_varint_bytes(p, end, v);
}

static inline __attribute__((always_inline)) const uint8_t *codec_get_varint(const uint8_t *p, const uint8_t *end,
                                                                            uint64_t *v)
{
    return codec_get_varint_in(p, end, v, 0);
}

/* One event in the encoder's neutral form. */
struct codec_item {
    uint64_t tsc, truth, addr, value, instance, seq;
    uint32_t thread, site, aux;
    uint8_t kind, reason;
};

/* A READ's or WRITE's own fields: the address as a delta from the last
 * access, the value relative to the address when that is shorter (ALT in
 * *tag). */
static inline __attribute__((always_inline)) uint8_t *codec_put_access(uint8_t *p, struct codec_fields *f,
                                                                      unsigned *tag, uint64_t addr,
                                                                      uint64_t value)
{
    p = codec_put_varint(p, codec_zz(addr - f->addr));
    f->addr = addr;
    uint64_t d = codec_zz(value - addr);
    if (d < value) {
        *tag |= CODEC_TAG_ALT;
        return codec_put_varint(p, d);
    }
    return codec_put_varint(p, value);
}

/* The stamp, as a delta from the previous event's. */
static inline uint8_t *codec_put_stamp(uint8_t *p, struct codec_pred *st, uint64_t tsc)
{
    p = codec_put_varint(p, codec_zz(tsc - st->tsc));
    st->tsc = tsc;
    return p;
}

/* The reason (an access's size), when it differs from the last event of the
 * same kind (REASON in *tag). */
static inline uint8_t *codec_put_reason(uint8_t *p, struct codec_fields *f, unsigned *tag, unsigned kind,
                                        uint8_t reason)
{
    if (reason == f->reason[kind])
        return p;
    *tag |= CODEC_TAG_REASON;
    *p++ = reason;
    f->reason[kind] = reason;
    return p;
}

/* A START's own fields: the instance id as a delta from the thread's last
 * (which it becomes), then flags and attempt. */
static inline uint8_t *codec_put_start(uint8_t *p, struct codec_thread_pred *tp, uint64_t instance, uint64_t value)
{
    p = codec_put_varint(p, codec_zz(instance - tp->instance));
    tp->instance = instance;
    return codec_put_varint(p, value);
}

/* A COMMIT's own fields: the write version as a delta from the last, then
 * the read-set and write-set sizes. */
static inline uint8_t *codec_put_commit(uint8_t *p, struct codec_fields *f, uint64_t version, uint64_t value)
{
    p = codec_put_varint(p, codec_zz(version - f->version));
    f->version = version;
    p = codec_put_varint(p, value & 0xffffffffu);
    return codec_put_varint(p, value >> 32);
}

/* A WSET's own fields: its word as a step from the last address (a write
 * set's words are mostly close), then the byte mask. */
static inline uint8_t *codec_put_wset_word(uint8_t *p, struct codec_fields *f, uint64_t addr, uint64_t mask)
{
    p = codec_put_varint(p, codec_zz(addr - f->addr));
    f->addr = addr;
    return codec_put_varint(p, mask);
}

static inline __attribute__((always_inline)) uint8_t *codec_encode_one(uint8_t *p, struct codec_pred *st, const struct codec_item *it,
                                        unsigned flags)
{
    uint8_t *tag = p++;
    unsigned ki = it->kind < TF_EV_KINDS ? it->kind : 0;
    unsigned t = ki & CODEC_TAG_KIND;
    /* THREADED: the thread only when it changes (most rows continue the
     * last one's), and (DECODED) the order pair only off the prediction */
    int threaded = (flags & CODEC_EV_THREADED) != 0;
    int new_thread = (flags & CODEC_EV_MERGED) && (!threaded || it->thread != st->thread);
    if (new_thread)
        codec_select_thread(st, it->thread, flags);
    struct codec_thread_pred *tp = codec_tp(st, flags);
    struct codec_fields *f = codec_f(st, flags);
    unsigned order = 0;
    uint64_t pred = 0;   /* DECODED: the row's predicted instance; a START's is its address */
    if (flags & CODEC_EV_DECODED)
        pred = ki == TF_EV_START ? it->addr : tp->instance;
    if (threaded && (flags & CODEC_EV_DECODED))
        order = it->instance != pred || it->seq != tp->seq ? CODEC_ESC_ORDER : 0;
    if (ki > CODEC_TAG_KIND || order) {
        t = 0;   /* escaped: the kind follows the tag */
        *p++ = (uint8_t)(ki | order);
    }
    if (new_thread) {
        p = codec_put_varint(p, it->thread);
        t |= threaded ? CODEC_TAG_THREAD : 0;
    }
    p = codec_put_stamp(p, st, it->tsc);
    if (it->site != f->site) {
        t |= CODEC_TAG_SITE;
        p = codec_put_varint(p, it->site);
        f->site = it->site;
    }
    if (it->aux != f->aux) {
        t |= CODEC_TAG_AUX;
        p = codec_put_varint(p, codec_zz((uint64_t)it->aux - f->aux));
        f->aux = it->aux;
    }
    p = codec_put_reason(p, f, &t, ki, it->reason);
    switch (ki) {
    case TF_EV_START:
        p = codec_put_start(p, tp, it->addr, it->value);
        break;
    case TF_EV_READ:
    case TF_EV_WRITE:
        p = codec_put_access(p, f, &t, it->addr, it->value);
        break;
    case TF_EV_COMMIT:
        p = codec_put_commit(p, f, it->addr, it->value);
        break;
    case TF_EV_WSET:
        p = codec_put_wset_word(p, f, it->addr, it->value);
        break;
    case TF_EV_ABORT:
        if (codec_zz(it->addr - f->addr) < it->addr) {
            t |= CODEC_TAG_ALT;
            p = codec_put_varint(p, codec_zz(it->addr - f->addr));
        } else {
            p = codec_put_varint(p, it->addr);
        }
        p = codec_put_varint(p, it->value);
        break;
    default:
        p = codec_put_varint(p, it->addr);
        p = codec_put_varint(p, it->value);
        break;
    }
    if (flags & CODEC_EV_TRUTH)
        p = codec_put_varint(p, codec_zz(it->truth - it->tsc));
    if (flags & CODEC_EV_DECODED) {
        if (!threaded || order) {
            p = codec_put_varint(p, codec_zz(it->instance - pred));
            p = codec_put_varint(p, codec_zz(it->seq - tp->seq));
        }
        tp->instance = it->instance;
        tp->seq = it->seq + 1;
    }
    *tag = (uint8_t)t;
    return p;
}

/* A record of a thread's own stream as the row codec_encode_one writes. */
static inline void codec_item_of(struct codec_item *it, const struct tf_record *r, uint64_t truth)
{
    it->tsc = r->tsc;
    it->truth = truth;
    it->addr = r->addr;
    it->value = r->value;
    it->site = r->site;
    it->aux = r->aux;
    it->kind = r->kind;
    it->reason = r->reason;
}

/* Fresh predictor state; a merged chunk gets one seq/instance slot per
 * thread id. 0, or -1 when that table cannot be allocated. */
static inline __attribute__((always_inline)) int codec_pred_init(struct codec_pred *st, uint64_t first_seq, uint64_t first_instance,
                           unsigned flags)
{
    memset(st, 0, sizeof *st);
    /* READ/WRITE accesses are mostly 8 bytes wide. */
    st->shared.reason[TF_EV_READ] = 8;
    st->shared.reason[TF_EV_WRITE] = 8;
    st->f = &st->shared;
    st->slot0.seq = first_seq;
    st->slot0.instance = first_instance;
    st->slot0.f = st->shared;
    st->tp = &st->slot0;
    if (flags & CODEC_EV_MERGED) {
        st->slots = malloc(CODEC_THREAD_SLOTS * sizeof *st->slots);
        if (!st->slots)
            return -1;
        for (unsigned k = 0; k < CODEC_THREAD_SLOTS; k++)
            st->slots[k] = st->slot0;
    }
    return 0;
}

size_t codec_encode_records(uint8_t *out, const struct tf_record *recs, const uint64_t *truth,
                            size_t n, uint64_t first_seq, uint64_t first_instance,
                            unsigned *flags)
{
    unsigned fl = truth ? CODEC_EV_TRUTH : 0;
    struct codec_pred st;
    codec_pred_init(&st, first_seq, first_instance, fl); /* no table: cannot fail */
    uint8_t *p = codec_put_varint(codec_put_varint(out, first_seq), first_instance);
    struct codec_item it = { 0 };
    for (size_t i = 0; i < n; i++) {
        codec_item_of(&it, &recs[i], truth ? truth[i] : 0);
        p = codec_encode_one(p, &st, &it, fl);
    }
    *flags = fl;
    return (size_t)(p - out);
}

/* A compact START's or COMMIT's row, from its slot's head `h` and value
 * `v`: its stamp is the previous record's plus the slot's step, whose
 * zigzag is twice it; st->tsc and the record are the caller's to update (a
 * COMMIT keeps the previous record's site, a START names its own). The same
 * bytes as codec_encode_one. */
static inline __attribute__((always_inline)) uint8_t *codec_boundary_row(uint8_t *p, struct codec_pred *st,
                                                                        uint64_t h, uint64_t v)
{
    uint8_t *tag = p;
    p = codec_put_varint(p + 1, (h >> 8 & TF_BOUNDARY_STEP_MAX) << 1);
    unsigned t;
    if ((h & 3u) == TF_COMPACT_START) {
        uint64_t site = (uint16_t)(h >> 32);
        t = TF_EV_START;
        if (site != st->f->site) {
            t |= CODEC_TAG_SITE;
            p = codec_put_varint(p, site);
            st->f->site = site;
        }
        p = codec_put_reason(p, st->f, &t, TF_EV_START, 0);
        p = codec_put_start(p, st->tp, v, tf_start_head_value(h));
    } else {
        t = TF_EV_COMMIT;
        p = codec_put_reason(p, st->f, &t, TF_EV_COMMIT, 0);
        p = codec_put_commit(p, st->f, v, tf_commit_value((uint32_t)(h >> 32 & 0xffffu), (uint32_t)(h >> 48)));
    }
    *tag = (uint8_t)t;
    return p;
}

/* A compact START or COMMIT alone: its row, and `r`, the previous record,
 * becomes it (tf_compact_apply's boundary cases, on the branch the row
 * took). A folded START's row is the START's, whose instance is the last
 * one's plus one (trace_format.h). */
static inline __attribute__((always_inline)) uint8_t *codec_slot_boundary(uint8_t *p, struct codec_pred *st,
                                                                         struct tf_record *r,
                                                                         const struct tf_slot *s)
{
    uint64_t h = s->head;
    uint64_t v = tf_start_folded(s) ? st->tp->instance + 1 : s->value;
    p = codec_boundary_row(p, st, h, v);
    r->tsc = st->tsc += h >> 8 & TF_BOUNDARY_STEP_MAX;
    r->reason = 0;
    r->addr = v;
    if ((h & 3u) == TF_COMPACT_START) {
        r->kind = TF_EV_START;
        r->site = (uint16_t)(h >> 32);
        r->value = tf_start_head_value(h);
    } else {
        r->kind = TF_EV_COMMIT;
        r->value = tf_commit_value((uint32_t)(h >> 32 & 0xffffu), (uint32_t)(h >> 48));
    }
    return p;
}

/* The compact records from *sp on, at most `most` (at least one), encoded
 * from their slots, each as codec_encode_one would encode the record it
 * stands for. An access's predictors (stamp, last address, the sizes of
 * READ and WRITE) stay in registers for the run: stored through the byte
 * pointer, they were reloaded for every field. A compact access keeps the
 * previous record's site and CPU and its stamp step is the slot's (a
 * step's zigzag is twice it), so its row needs no test of them. `r` holds
 * the previous record and becomes the run's last; *took gets the slots
 * (records) encoded. */
static inline __attribute__((always_inline)) uint8_t *codec_compact_run(uint8_t *p, struct codec_pred *st,
                                                                       struct tf_record *r,
                                                                       const struct tf_slot **sp,
                                                                       const uint64_t **tp, size_t most,
                                                                       size_t *took, uint64_t *instance,
                                                                       unsigned fl)
{
    const struct tf_slot *s = *sp, *end = s + most, *last = NULL;
    const uint64_t *truth = *tp;
    struct codec_fields *f = st->f;
    uint64_t tsc = st->tsc, addr = f->addr;
    unsigned size_read = f->reason[TF_EV_READ], size_write = f->reason[TF_EV_WRITE];
    for (; s < end; s++) {
        uint64_t h = s->head;
        if (!(h & TF_COMPACT_TAG))
            break;
        if (h & 2u) { /* a START or a COMMIT: rarer, through the predictors in memory */
            if (tf_commit_carried(s) || tf_start_folded(s))
                break; /* the loop's, which counts the records beyond the slot */
            tsc += h >> 8 & TF_BOUNDARY_STEP_MAX;
            p = codec_boundary_row(p, st, h, s->value);
            if ((h & 3u) == TF_COMPACT_START) {
                *instance = s->value;
                r->site = (uint16_t)(h >> 32); /* the run's later records keep it */
            }
        } else {
            unsigned write = (unsigned)h & 1u, size = 1u << (h >> 2 & 3u);
            uint64_t step = (h >> 4 & 7u) | (h >> 8 & 0x1ffu) << 3, a = h >> 17, v = s->value;
            uint8_t *tag = p;
            unsigned t = TF_EV_READ + write;
            tsc += step;
            p = codec_put_varint(p + 1, step << 1);
            if (size != (write ? size_write : size_read)) {
                t |= CODEC_TAG_REASON;
                *p++ = (uint8_t)size;
                if (write)
                    size_write = size;
                else
                    size_read = size;
            }
            p = codec_put_varint(p, codec_zz(a - addr));
            addr = a;
            uint64_t d = codec_zz(v - a);
            if (d < v) {
                t |= CODEC_TAG_ALT;
                p = codec_put_varint(p, d);
            } else {
                p = codec_put_varint(p, v);
            }
            *tag = (uint8_t)t;
        }
        last = s;
        if (fl & CODEC_EV_TRUTH) {
            p = codec_put_varint(p, codec_zz(*truth - tsc));
            truth++;
        }
    }
    if (last) { /* the previous record of what follows: the run's last (all but its stamp) */
        tf_compact_apply(last, r);
        r->tsc = tsc;
    }
    st->tsc = tsc;
    f->addr = addr;
    f->reason[TF_EV_READ] = (uint8_t)size_read;
    f->reason[TF_EV_WRITE] = (uint8_t)size_write;
    *took = (size_t)(s - *sp);
    *sp = s;
    *tp = truth;
    return p;
}

_Static_assert((unsigned)TF_EV_WSET > (unsigned)CODEC_TAG_KIND, "a WSET row's kind follows its tag");
/* Whether a write set's row must set the predictors (its stamp, site, CPU
 * or reason differ from the row before it) rather than repeat them. */
static inline int codec_wset_first_row(const struct codec_pred *st, const struct codec_item *it)
{
    return it->tsc != st->tsc || it->site != st->f->site || it->aux != st->f->aux ||
           it->reason != st->f->reason[TF_EV_WSET];
}

/* A later word's row of a write set (see codec_slot_wset). */
static inline __attribute__((always_inline)) uint8_t *codec_wset_row(uint8_t *p, uint64_t word, uint64_t prev,
                                                                     uint32_t mask, uint64_t truth_step, unsigned fl)
{
    p[0] = 0;
    p[1] = TF_EV_WSET;
    p[2] = 0;
    p = codec_put_varint(p + 3, codec_zz(word - prev));
    p = codec_put_varint(p, mask);
    if (fl & CODEC_EV_TRUTH)
        p = codec_put_varint(p, truth_step);
    return p;
}

/* A write set in runs (trace_format.h) whose entries, from slot s on,
 * cover more words than they are: each entry's words in turn. */
static uint8_t *codec_slot_wset_runs(uint8_t *p, struct codec_pred *st, struct codec_item *it,
                                     const struct tf_slot *s, unsigned fl)
{
    uint64_t n = it->addr, e = it->value, j = 0;
    uint64_t w = tf_wset_at(s, 0), word = tf_wset_run_word(w);
    uint32_t extra = tf_wset_run_extra(w), mask = tf_wset_mask(w);
    int first = codec_wset_first_row(st, it);
    uint64_t truth_step = codec_zz(it->truth - it->tsc), addr = st->f->addr;
    for (uint64_t i = 0; i < n; i++) {
        if (first) {
            it->addr = word;
            it->value = mask;
            p = codec_encode_one(p, st, it, fl);
            first = 0;
        } else {
            p = codec_wset_row(p, word, addr, mask, truth_step, fl);
        }
        addr = word;
        if (extra) {
            extra--;
            word += 8;
        } else if (++j < e) {
            w = tf_wset_at(s, j);
            word = tf_wset_run_word(w);
            extra = tf_wset_run_extra(w);
            mask = tf_wset_mask(w);
        } else {
            break; /* the runs cover fewer words than the record counts: a stream never so */
        }
    }
    st->f->addr = addr;
    return p;
}

/* A write set's words (the entries from slot s on, of the record whose
 * fields `it` holds), one event each with the record's stamp, CPU, site
 * and truth. The first word's
 * row sets the predictors to those where they differ; each later row
 * differs from the one before only in its word and mask, so it is written
 * as codec_encode_one would write it without asking what changed: the tag
 * (the kind escaped, no field flagged), the kind, a stamp step of 0, the
 * word, the mask and the truth's constant step (the writer's rows at `tx`
 * are mostly these). One entry per word here
 * (either form: a run with no extra word packs as the first form does);
 * codec_slot_wset_runs takes the others. */
static uint8_t *codec_slot_wset(uint8_t *p, struct codec_pred *st, struct codec_item *it, const struct tf_slot *s,
                                unsigned fl)
{
    uint64_t n = it->addr, w = tf_wset_at(s, 0), i = 0;
    if (it->value != 0 && it->value != n)
        return codec_slot_wset_runs(p, st, it, s, fl);
    /* The first word's row too, when the record repeats the stamp, site
     * and CPU of the one before it (a commit's write set, mostly) */
    if (codec_wset_first_row(st, it)) {
        it->addr = tf_wset_word(w);
        it->value = tf_wset_mask(w);
        p = codec_encode_one(p, st, it, fl);
        i = 1;
    }
    uint64_t truth_step = codec_zz(it->truth - it->tsc), addr = st->f->addr; /* in a register */
    for (; i < n; i++) {
        w = tf_wset_at(s, i);
        p = codec_wset_row(p, tf_wset_word(w), addr, tf_wset_mask(w), truth_step, fl);
        addr = tf_wset_word(w);
    }
    st->f->addr = addr;
    return p;
}

/* The words of the write set that the compact COMMIT at s carries
 * (trace_format.h), after that COMMIT's row, whose fields `it` holds: as a
 * WSET record's after it, with its stamp, CPU, site and truth. */
static uint8_t *codec_slot_carried(uint8_t *p, struct codec_pred *st, struct codec_item *it,
                                   const struct tf_slot *s, unsigned fl)
{
    it->kind = TF_EV_WSET;
    it->reason = 0;
    it->addr = tf_commit_carried_words(s);
    it->value = tf_commit_carried(s);
    return codec_slot_wset(p, st, it, s + 1, fl);
}

/* The COMMIT that the folded START at s holds, after that START's row,
 * which `r` holds and which becomes the COMMIT: its row (as a compact
 * COMMIT's in a slot of its own), then its truth, the slot's. */
static inline __attribute__((always_inline)) uint8_t *codec_slot_fold_commit(uint8_t *p, struct codec_pred *st,
                                                                            struct tf_record *r,
                                                                            const struct tf_slot *s,
                                                                            uint64_t truth, unsigned fl)
{
    struct tf_slot c = { tf_fold_commit_head(s), 0 };
    p = codec_slot_boundary(p, st, r, &c);
    if (fl & CODEC_EV_TRUTH)
        p = codec_put_varint(p, codec_zz(truth - r->tsc));
    return p;
}

/* A compact START or COMMIT alone (codec_slots_loop's), stamped `truth`:
 * its row, then those of the records beyond its slot, the words of the
 * write set a COMMIT carries or a folded START's COMMIT. `r`, the previous
 * record, becomes the last of them; *instance follows a START. */
static inline __attribute__((always_inline)) uint8_t *codec_slot_boundary_whole(uint8_t *p, struct codec_pred *st,
                                                                               struct codec_item *it,
                                                                               struct tf_record *r,
                                                                               const struct tf_slot *s,
                                                                               uint64_t truth, uint64_t *instance,
                                                                               unsigned fl)
{
    p = codec_slot_boundary(p, st, r, s);
    if (r->kind == TF_EV_START)
        *instance = r->addr;
    if (fl & CODEC_EV_TRUTH)
        p = codec_put_varint(p, codec_zz(truth - r->tsc));
    if (tf_start_folded(s))
        return codec_slot_fold_commit(p, st, r, s, truth, fl);
    if (tf_commit_carried(s)) {
        codec_item_of(it, r, truth);
        p = codec_slot_carried(p, st, it, s, fl);
    }
    return p;
}

/* Whether the compact slot s is a folded START whose two rows set no
 * predictor but the stamp's: it names the site of the record before it and
 * neither kind's last reason differs from 0 (so at level tx, nearly every
 * read-only attempt); and both rows fit in the `room` left, with no truth
 * column (`fl`) to write. */
static inline int codec_fold_plain(const struct codec_pred *st, const struct tf_slot *s, unsigned fl, size_t room)
{
    return !(fl & CODEC_EV_TRUTH) && room >= 2 && tf_start_folded(s) && (uint16_t)(s->head >> 32) == st->f->site &&
           (st->f->reason[TF_EV_START] | st->f->reason[TF_EV_COMMIT]) == 0;
}

/* Such a slot's START and COMMIT rows, byte for byte what
 * codec_slot_boundary_whole writes for them, with the fields that cannot
 * differ written as constants (the tags, the instance's step of 1, the
 * write-set size 0) and the predictors read once, before the output's
 * bytes are stored (a byte store may alias them). `r` becomes the COMMIT;
 * *instance follows the START. No truth column (a chunk with one goes the
 * general way). */
static inline __attribute__((always_inline)) uint8_t *codec_slot_fold_plain(uint8_t *p, struct codec_pred *st,
                                                                           struct tf_record *r,
                                                                           const struct tf_slot *s,
                                                                           uint64_t *instance)
{
    uint64_t h = s->head, v = s->value;
    uint64_t step_start = h >> 8 & TF_BOUNDARY_STEP_MAX, step_commit = v & TF_BOUNDARY_STEP_MAX;
    uint32_t read_set = (uint32_t)(v >> 32 & 0xffffu);
    uint64_t inst = st->tp->instance + 1, version = st->f->version, tsc = st->tsc + step_start + step_commit;
    p[0] = TF_EV_START;
    p = codec_put_varint(p + 1, step_start << 1);
    p[0] = 2; /* codec_zz(1): the instance after the last */
    p = codec_put_varint(p + 1, tf_start_head_value(h));
    p[0] = TF_EV_COMMIT;
    p = codec_put_varint(p + 1, step_commit << 1);
    p = codec_put_varint(p, codec_zz(0 - version));
    p = codec_put_varint(p, read_set);
    *p++ = 0; /* the write-set size */
    st->tp->instance = inst;
    st->f->version = 0;
    st->tsc = tsc;
    *instance = inst;
    *r = (struct tf_record){ .tsc = tsc, .aux = r->aux, .kind = TF_EV_COMMIT, .site = (uint16_t)(h >> 32),
                             .value = tf_commit_value(read_set, 0) };
    return p;
}

/* The row or rows of the record `r` read from slot s by tf_slot_read (not
 * a compact one after another of the piece): a write set's words, or the
 * record, then, when it `carries` one, the words of the write set the
 * COMMIT carries. */
static inline __attribute__((always_inline)) uint8_t *codec_slot_full(uint8_t *p, struct codec_pred *st,
                                                                    struct codec_item *it,
                                                                    const struct tf_record *r,
                                                                    const struct tf_slot *s, int carries,
                                                                    uint64_t truth, unsigned fl)
{
    codec_item_of(it, r, truth);
    if (r->kind == TF_EV_WSET)
        return codec_slot_wset(p, st, it, s + 2, fl);
    p = codec_encode_one(p, st, it, fl);
    return carries ? codec_slot_carried(p, st, it, s, fl) : p;
}

/* The loop of codec_encode_slots, for one value of `fl` (inlined with it
 * constant: the truth column's test leaves the loop). */
static inline __attribute__((always_inline)) long codec_slots_loop(uint8_t *out, struct tf_slot_stream *ss,
                                                                 size_t max, size_t *count, unsigned fl)
{
    struct codec_pred st;
    codec_pred_init(&st, ss->seq, ss->instance, fl); /* no table: cannot fail */
    uint8_t *p = codec_put_varint(codec_put_varint(out, ss->seq), ss->instance);
    const struct tf_slot *s = ss->s;
    const uint64_t *truth = ss->truth;
    size_t left = ss->left, k = 0;
    struct tf_record r = ss->prev;
    int have = ss->have_prev;
    uint64_t instance = ss->instance;
    struct codec_item it = { 0 };
    int whole = 1; /* 0: stopped before a write set that would pass `max` */
    for (; k < max && left; k++) {
        if (k && tf_slot_is_compact(s)) {
            if (codec_fold_plain(&st, s, fl, max - k)) { /* a START and its COMMIT: the loop's step and k++ */
                p = codec_slot_fold_plain(p, &st, &r, s++, &instance);
                k++, left--;
                continue;
            }
            /* The common records (one slot each), from the slots alone: a run up to the next full
             * record or COMMIT that carries a write set, or a boundary alone (at `tx`, where a run's
             * set-up costs more than its one row), with the words it carries */
            uint32_t carried = tf_commit_carried(s);
            int folded = tf_start_folded(s);
            if (!carried && !folded &&
                (tf_compact_is_access(s) || (left > 1 && max - k > 1 && tf_slot_is_compact(s + 1) &&
                                             !tf_commit_carried(s + 1) && !tf_start_folded(s + 1)))) {
                size_t took;
                p = codec_compact_run(p, &st, &r, &s, &truth, max - k < left ? max - k : left, &took, &instance,
                                      fl);
                k += took - 1; /* and the loop's step */
                left -= took;
                continue;
            }
            size_t took = carried ? tf_commit_carry_slots(s, left) : 1;
            /* the records after the slot's first: a write set's words, a folded START's COMMIT */
            uint64_t beyond = carried ? tf_commit_carried_words(s) : (uint64_t)folded;
            if (took == 0 || k + 1 + beyond > max) {
                whole = took == 0; /* malformed, or the next piece takes the write set whole */
                break;
            }
            p = codec_slot_boundary_whole(p, &st, &it, &r, s, (fl & CODEC_EV_TRUTH) ? *truth : 0, &instance, fl);
            k += beyond;
            s += took;
            left -= took;
            if (fl & CODEC_EV_TRUTH)
                truth += took;
            continue;
        }
        struct tf_record before = r; /* the next piece's previous record, if this one is left to it */
        unsigned took = tf_slot_read(s, left, have, instance, &r);
        if (took == 0)
            break;
        /* The records it stands for: a write set's words, a COMMIT's and
         * those of the write set it carries, a folded START and its COMMIT */
        int carries = took > 1 && tf_slot_is_compact(s);
        int folded = tf_slot_is_compact(s) && tf_start_folded(s);
        uint64_t records = r.kind == TF_EV_WSET ? r.addr : carries ? 1 + tf_commit_carried_words(s) : 1u + folded;
        if (k + records > max) {
            r = before;
            whole = 0; /* the next piece takes the write set whole */
            break;
        }
        have = 1;
        p = codec_slot_full(p, &st, &it, &r, s, carries, (fl & CODEC_EV_TRUTH) ? *truth : 0, fl);
        k += records - 1;
        if (r.kind == TF_EV_START)
            instance = r.addr;
        if (folded)
            p = codec_slot_fold_commit(p, &st, &r, s, (fl & CODEC_EV_TRUTH) ? *truth : 0, fl);
        s += took;
        left -= took;
        if (fl & CODEC_EV_TRUTH)
            truth += took;
    }
    *count = k;
    if (k < max && left && (whole || k == 0)) /* stopped at a malformed slot */
        return -1;
    struct tf_slot_stream next = { s, truth, left, r, have, ss->seq + k, instance };
    *ss = next;
    return p - out;
}

long codec_encode_slots(uint8_t *out, struct tf_slot_stream *ss, size_t max, size_t *count, unsigned *flags)
{
    *flags = ss->truth ? CODEC_EV_TRUTH : 0;
    long len = ss->truth ? codec_slots_loop(out, ss, max, count, CODEC_EV_TRUTH)
                         : codec_slots_loop(out, ss, max, count, 0);
    if (len < 0) {
        size_t good = *count;
        *count = 0;
        return error_set("the slot after record %zu of the piece is not a well-formed record", good);
    }
    return len;
}

/* What codec_events_loop saw that decides a chunk's flags. */
struct codec_seen {
    uint64_t truth;   /* the OR of the events' truth: nonzero when one has it */
    uint32_t other;   /* nonzero when an event's thread is not the chunk's */
    unsigned bad;     /* bit 8 set when an event's kind is none a reader accepts */
};

/* The loop of codec_encode_events, inlined once per common `fl`. It notes
 * what decides the flags as it goes, without a branch: the events are read
 * once, not once for the flags and again to encode them. */
static inline __attribute__((always_inline)) uint8_t *codec_events_loop(uint8_t *restrict p, struct codec_pred *restrict st,
                                                                       const struct tf_event *ev, size_t n,
                                                                       unsigned fl, uint32_t thread,
                                                                       struct codec_seen *seen)
{
    struct codec_item it = { 0 };
    struct codec_seen s = { 0, 0, 0 };
    for (size_t i = 0; i < n; i++) {
        const struct tf_event *e = &ev[i];
        if (!(fl & CODEC_EV_TRUTH))   /* a flag already on needs no note */
            s.truth |= e->truth;
        if (!(fl & CODEC_EV_MERGED))
            s.other |= e->thread ^ thread;
        s.bad |= (uint8_t)(e->kind - 1u) + (256u - (TF_EV_KINDS - 1u));   /* bit 8: kind 0 or too high */
        it.tsc = e->ts;
        it.truth = e->truth;
        it.addr = e->addr;
        it.value = e->value;
        it.instance = e->instance;
        it.seq = e->seq;
        it.thread = e->thread;
        it.site = e->site;
        it.aux = e->cpu;
        it.kind = e->kind;
        it.reason = e->reason;
        p = codec_encode_one(p, st, &it, fl);
    }
    *seen = s;
    return p;
}

/* Encodes the chunk with flags `fl`; the length, or 0 when out of memory. */
static size_t codec_events_with(uint8_t *out, const struct tf_event *ev, size_t n, uint32_t thread,
                                unsigned fl, struct codec_seen *seen)
{
    uint64_t first_seq = n ? ev[0].seq : 0, first_inst = n ? ev[0].instance : 0;
    struct codec_pred st;
    if (codec_pred_init(&st, first_seq, first_inst, fl) != 0)
        return 0;
    uint8_t *p = codec_put_varint(codec_put_varint(out, first_seq), first_inst);
    /* tmsync's merged chunks, with and without truth, with constant flags */
    const unsigned synced = CODEC_EV_MERGED | CODEC_EV_THREADED | CODEC_EV_DECODED;
    if (fl == synced)
        p = codec_events_loop(p, &st, ev, n, synced | CODEC_HELD, thread, seen);
    else if (fl == (synced | CODEC_EV_TRUTH))
        p = codec_events_loop(p, &st, ev, n, synced | CODEC_EV_TRUTH | CODEC_HELD, thread, seen);
    else
        p = codec_events_loop(p, &st, ev, n, fl, thread, seen);
    free(st.slots);
    return (size_t)(p - out);
}

size_t codec_encode_events(uint8_t *out, const struct tf_event *ev, size_t n, uint32_t thread,
                           unsigned *flags)
{
    /* The flags are those of every event (TRUTH when one has a truth,
     * MERGED when one is not the chunk's thread), guessed from the first
     * and the chunk's thread; a wrong guess (a flag the guess left off) is
     * encoded again with it. The bytes are those the flags make. */
    unsigned fl = CODEC_EV_DECODED | (n && ev[0].truth ? CODEC_EV_TRUTH : 0) |
                  (thread == 0 ? CODEC_EV_MERGED | CODEC_EV_THREADED : 0);
    for (;;) {
        struct codec_seen seen;
        size_t len = codec_events_with(out, ev, n, thread, fl, &seen);
        if (len == 0) {
            error_set("out of memory encoding %zu events", n);
            return 0;
        }
        for (size_t i = 0; (seen.bad & 0x100u) && i < n; i++)
            if (ev[i].kind == 0 || ev[i].kind >= TF_EV_KINDS) {
                error_set("event %zu has invalid kind %u", i, ev[i].kind);
                return 0;
            }
        unsigned need = fl | (seen.truth ? CODEC_EV_TRUTH : 0) |
                        (seen.other ? CODEC_EV_MERGED | CODEC_EV_THREADED : 0);
        if (need == fl) {
            *flags = fl;
            return len;
        }
        fl = need;
    }
}

/* Decoder flag beside the chunk's (never on disk): at least CODEC_ROOM_BYTES
 * of the payload are left, more than one row reads even when corrupt (3
 * bytes of tag, kind and reason, 10 varints of at most 10 bytes) plus the 8
 * bytes a varint read loads at once: reads need not check the end. */
#define CODEC_ROOM (1u << 17)
#define CODEC_ROOM_BYTES 128

/* The decoder's varint read, bailing out of codec_decode_events on damage. */
/* A payload being decoded: the next byte and the end. p becomes NULL when a
 * varint runs past the end or is malformed. */
struct codec_rd {
    const uint8_t *p, *end;
};

#define CODEC_GET(var)                                          \
    do {                                                        \
        if ((r->p = codec_get_varint_in(r->p, r->end, &(var), (flags & CODEC_ROOM) != 0)) == NULL) \
            return -1;                                          \
    } while (0)

/* One event's tag, thread (merged chunks), stamp, site, CPU and reason.
 * *tag gets the tag byte. 0 or -1 (corrupt). */
static inline __attribute__((always_inline)) int codec_decode_head(struct codec_rd *r, struct codec_pred *st, unsigned flags, uint32_t thread,
                                    struct tf_event *e, unsigned *tag)
{
    uint64_t v;
    if (!(flags & CODEC_ROOM) && r->p >= r->end)
        return -1;
    unsigned t = *r->p++;
    unsigned kind = t & CODEC_TAG_KIND;
    int threaded = (flags & CODEC_EV_THREADED) != 0;
    if (kind == 0) {   /* escaped kind */
        if (!(flags & CODEC_ROOM) && r->p >= r->end)
            return -1;
        unsigned b = *r->p++;
        if (threaded && (flags & CODEC_EV_DECODED) && (b & CODEC_ESC_ORDER)) {
            t |= CODEC_ROW_ORDER;
            b &= ~CODEC_ESC_ORDER;
            if (b == 0 || b >= TF_EV_KINDS)
                return -1;
        } else if (b <= CODEC_TAG_KIND || b >= TF_EV_KINDS) {
            return -1;
        }
        kind = b;
    }
    e->kind = (uint8_t)kind;
    e->thread = thread;
    if (flags & CODEC_EV_MERGED) {
        if (!threaded || (t & CODEC_TAG_THREAD)) {
            CODEC_GET(v);
            if (v > UINT32_MAX)
                return -1;
            codec_select_thread(st, v, flags);
        }
        e->thread = st->thread;
    }
    CODEC_GET(v);
    st->tsc += codec_unzz(v);
    e->ts = st->tsc;
    if (t & CODEC_TAG_SITE) {
        CODEC_GET(v);
        st->f->site = v;
    }
    e->site = (uint32_t)st->f->site;
    if (t & CODEC_TAG_AUX) {
        CODEC_GET(v);
        st->f->aux += codec_unzz(v);
    }
    e->cpu = (flags & CODEC_EV_DECODED) ? (uint16_t)st->f->aux : (uint16_t)tf_aux_cpu((uint32_t)st->f->aux);
    if (t & CODEC_TAG_REASON) {
        if (!(flags & CODEC_ROOM) && r->p >= r->end)
            return -1;
        st->f->reason[kind] = *r->p++;
    }
    e->reason = st->f->reason[kind];
    *tag = t;
    return 0;
}

/* The kind's own fields: address and value. 0 or -1. */
static inline __attribute__((always_inline)) int codec_decode_fields(struct codec_rd *r, struct codec_pred *st, unsigned flags,
                                                                    unsigned t, struct tf_event *e)
{
    uint64_t v, w;
    switch (e->kind) {
    case TF_EV_START:
        CODEC_GET(v);
        e->addr = st->tp->instance + codec_unzz(v);
        CODEC_GET(e->value);
        break;
    case TF_EV_READ:
    case TF_EV_WRITE:
        CODEC_GET(v);
        st->f->addr += codec_unzz(v);
        e->addr = st->f->addr;
        CODEC_GET(v);
        e->value = (t & CODEC_TAG_ALT) ? e->addr + codec_unzz(v) : v;
        break;
    case TF_EV_COMMIT:
        CODEC_GET(v);
        st->f->version += codec_unzz(v);
        e->addr = st->f->version;
        CODEC_GET(v);
        CODEC_GET(w);
        e->value = tf_commit_value((uint32_t)v, (uint32_t)w);
        break;
    case TF_EV_ABORT:
        CODEC_GET(v);
        e->addr = (t & CODEC_TAG_ALT) ? st->f->addr + codec_unzz(v) : v;
        CODEC_GET(e->value);
        break;
    case TF_EV_WSET:
        CODEC_GET(v);
        st->f->addr += codec_unzz(v);
        e->addr = st->f->addr;
        CODEC_GET(e->value);
        break;
    default:
        CODEC_GET(e->addr);
        CODEC_GET(e->value);
        break;
    }
    return 0;
}

/* Ground truth, instance and program-order index. 0 or -1. */
static inline __attribute__((always_inline)) int codec_decode_order(struct codec_rd *r, struct codec_pred *st, unsigned flags, unsigned t,
                                     struct tf_event *e)
{
    uint64_t v;
    if (e->kind == TF_EV_START && !(flags & CODEC_EV_DECODED))
        st->tp->instance = e->addr;
    e->truth = 0;
    if (flags & CODEC_EV_TRUTH) {
        CODEC_GET(v);
        e->truth = e->ts + codec_unzz(v);
    }
    if (flags & CODEC_EV_DECODED) {
        uint64_t pred = e->kind == TF_EV_START ? e->addr : st->tp->instance;
        e->instance = pred;
        e->seq = st->tp->seq;
        if (!(flags & CODEC_EV_THREADED) || (t & CODEC_ROW_ORDER)) {
            CODEC_GET(v);
            e->instance = pred + codec_unzz(v);
            CODEC_GET(v);
            e->seq = st->tp->seq + codec_unzz(v);
        }
        st->tp->instance = e->instance;
    } else {
        e->instance = st->tp->instance;
        e->seq = st->tp->seq;
    }
    st->tp->seq = e->seq + 1;
    return 0;
}

/* One row. 0 or -1 (corrupt). */
static inline __attribute__((always_inline)) int codec_decode_row(struct codec_rd *r, struct codec_pred *st, unsigned flags,
                                                                 uint32_t thread, struct tf_event *e)
{
    unsigned t;
    return codec_decode_head(r, st, flags, thread, e, &t) != 0 || codec_decode_fields(r, st, flags, t, e) != 0 ||
                   codec_decode_order(r, st, flags, t, e) != 0
               ? -1
               : 0;
}

/* Decodes up to n events; returns how many decoded before the payload
 * turned out corrupt (n: all). Inlined once per common value of `flags`. */
static inline __attribute__((always_inline)) size_t codec_decode_loop(struct codec_rd *r, struct codec_pred *st,
                                                                     unsigned flags, uint32_t thread,
                                                                     struct tf_event *ev, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        /* far from the payload's end no read of the row can pass it */
        int bad = r->end - r->p >= CODEC_ROOM_BYTES ? codec_decode_row(r, st, flags | CODEC_ROOM, thread, &ev[i])
                                                    : codec_decode_row(r, st, flags, thread, &ev[i]);
        if (bad)
            return i;
    }
    return n;
}

int codec_decode_events(const uint8_t *in, size_t len, unsigned flags, uint32_t thread,
                        struct tf_event *ev, size_t n)
{
    struct codec_rd rd = { in, in + len }, *r = &rd;
    uint64_t first_seq = 0, first_inst = 0;
    size_t i = 0;
    struct codec_pred st;
    codec_pred_init(&st, 0, 0, 0);
    if ((r->p = codec_get_varint(r->p, r->end, &first_seq)) == NULL ||
        (r->p = codec_get_varint(r->p, r->end, &first_inst)) == NULL)
        goto corrupt;
    if (codec_pred_init(&st, first_seq, first_inst, flags) != 0)
        return error_set("out of memory decoding %zu events", n);
    /* the flags of a recorder's chunk and of tmsync's, as constants: their
     * tests leave the loop */
    const unsigned synced = CODEC_EV_MERGED | CODEC_EV_THREADED | CODEC_EV_DECODED;
    switch (flags) {
    case 0: i = codec_decode_loop(r, &st, 0, thread, ev, n); break;
    case CODEC_EV_TRUTH: i = codec_decode_loop(r, &st, CODEC_EV_TRUTH, thread, ev, n); break;
    case synced: i = codec_decode_loop(r, &st, synced, thread, ev, n); break;
    case synced | CODEC_EV_TRUTH: i = codec_decode_loop(r, &st, synced | CODEC_EV_TRUTH, thread, ev, n); break;
    default: i = codec_decode_loop(r, &st, flags, thread, ev, n); break;
    }
    if (i < n)
        goto corrupt;
    free(st.slots);
    if (r->p != r->end)
        return error_set("event payload has %zu bytes after its %zu events", (size_t)(r->end - r->p), n);
    return 0;
corrupt:
    free(st.slots);
    return error_set("corrupt event payload at event %zu of %zu (byte %zu of %zu)", i, n,
                     (size_t)(r->p ? r->p - in : 0), len);
}
#undef CODEC_GET

/* ---- block codecs ------------------------------------------------------ */

int codec_available(int codec)
{
    switch (codec) {
    case TF_CODEC_NONE:
    case TF_CODEC_ZLIB:
        return 1;
    case TF_CODEC_LZ4:
#ifdef TMT_HAVE_LZ4
        return 1;
#else
        return 0;
#endif
    default:
        return 0;
    }
}

size_t codec_compress_bound(int codec, size_t n)
{
    switch (codec) {
    case TF_CODEC_ZLIB:
        return compressBound((uLong)n);
#ifdef TMT_HAVE_LZ4
    case TF_CODEC_LZ4:
        return n > (size_t)LZ4_MAX_INPUT_SIZE ? 0 : (size_t)LZ4_compressBound((int)n);
#endif
    default:
        return n;
    }
}

size_t codec_compress(int codec, int level, const void *in, size_t n, void *out, size_t cap)
{
    switch (codec) {
    case TF_CODEC_ZLIB: {
        uLongf got = (uLongf)cap;
        if (level < 1 || level > 9)
            level = Z_BEST_SPEED;
        if (compress2(out, &got, in, (uLong)n, level) != Z_OK)
            return 0;
        return got < n ? (size_t)got : 0;
    }
#ifdef TMT_HAVE_LZ4
    case TF_CODEC_LZ4: {
        if (n > (size_t)LZ4_MAX_INPUT_SIZE || cap > (size_t)INT32_MAX)
            return 0;
        /* TMTRACE_CODEC_LEVEL is zlib's. LZ4 runs accelerated: the
         * writer's time per event is what must keep up with the program,
         * and a row-encoded chunk has few long matches to lose, so the
         * files grow much less than LZ4's time shrinks (figures:
         * docs/format.md, "Codecs"). */
        int got = LZ4_compress_fast(in, out, (int)n, (int)cap, CODEC_LZ4_ACCELERATION);
        (void)level;
        return got > 0 && (size_t)got < n ? (size_t)got : 0;
    }
#endif
    default:
        return 0;
    }
}

int codec_decompress(int codec, const void *in, size_t n, void *out, size_t raw_len)
{
    switch (codec) {
    case TF_CODEC_NONE:
        if (n != raw_len)
            return error_set("stored length %zu differs from raw length %zu", n, raw_len);
        memcpy(out, in, n);
        return 0;
    case TF_CODEC_ZLIB: {
        uLongf got = (uLongf)raw_len;
        int rc = uncompress(out, &got, in, (uLong)n);
        if (rc != Z_OK || got != raw_len)
            return error_set("zlib payload does not inflate to %zu bytes", raw_len);
        return 0;
    }
    case TF_CODEC_LZ4:
#ifdef TMT_HAVE_LZ4
        if (n > (size_t)INT32_MAX || raw_len > (size_t)INT32_MAX ||
            LZ4_decompress_safe(in, out, (int)n, (int)raw_len) != (int)raw_len)
            return error_set("lz4 payload does not decompress to %zu bytes", raw_len);
        return 0;
#else
        return error_set("chunk uses the lz4 codec, which this build lacks");
#endif
    default:
        return error_set("unknown codec %d", codec);
    }
}

/* zlib's CRC-32 of n bytes, continuing from `c` (0 to start). */
static uLong crc32_zlib(uLong c, const Bytef *b, size_t n)
{
    while (n > 0) {
        uInt take = n > 0x40000000u ? 0x40000000u : (uInt)n;
        c = crc32(c, b, take);
        b += take;
        n -= take;
    }
    return c;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* The same CRC-32 by carry-less multiplication, 64 bytes per step (the
 * folding of Intel's "Fast CRC Computation for Generic Polynomials Using
 * PCLMULQDQ", reflected): the reader and the writer check every chunk's
 * payload, and zlib's table-driven loop was about 4 instructions a byte.
 * `raw` is the register without zlib's inversions; n a multiple of 16, at
 * least 64. The constants are x^k mod P(x) for the fold distances
 * (512 + 32, 512 - 32, 128 + 32, 128 - 32, 64), then P(x) and its Barrett
 * quotient, all bit-reflected. */
__attribute__((target("pclmul,sse4.1"))) static uint32_t crc32_fold(uint32_t raw, const uint8_t *p, size_t n)
{
    const __m128i k12 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);
    const __m128i k34 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);
    const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124);
    const __m128i pu = _mm_set_epi64x(0x1f7011641, 0x1db710641);
    const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
    __m128i x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)raw));
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    for (p += 64, n -= 64; n >= 64; p += 64, n -= 64) {
#define CRC_FOLD(x, k, next) \
    x = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), next)
        CRC_FOLD(x0, k12, _mm_loadu_si128((const __m128i *)p));
        CRC_FOLD(x1, k12, _mm_loadu_si128((const __m128i *)(p + 16)));
        CRC_FOLD(x2, k12, _mm_loadu_si128((const __m128i *)(p + 32)));
        CRC_FOLD(x3, k12, _mm_loadu_si128((const __m128i *)(p + 48)));
    }
    CRC_FOLD(x0, k34, x1);
    CRC_FOLD(x0, k34, x2);
    CRC_FOLD(x0, k34, x3);
    for (; n >= 16; p += 16, n -= 16)
        CRC_FOLD(x0, k34, _mm_loadu_si128((const __m128i *)p));
#undef CRC_FOLD
    /* 128 -> 64 bits, then 64 -> 32, then Barrett's reduction */
    x0 = _mm_xor_si128(_mm_srli_si128(x0, 8), _mm_clmulepi64_si128(k34, x0, 0x01));
    x0 = _mm_xor_si128(_mm_srli_si128(x0, 4), _mm_clmulepi64_si128(_mm_and_si128(x0, mask32), k5, 0x00));
    __m128i t = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(x0, mask32), pu, 0x10), mask32);
    x0 = _mm_xor_si128(x0, _mm_clmulepi64_si128(t, pu, 0x00));
    return (uint32_t)_mm_extract_epi32(x0, 1);
}

/* 1 when the CPU has PCLMULQDQ and SSE4.1 (asked once). */
static int crc32_fold_ok(void)
{
    static int ok = -1;   /* every thread computes the same value: a benign race, made atomic */
    int v = __atomic_load_n(&ok, __ATOMIC_RELAXED);
    if (v < 0) {
        __builtin_cpu_init();
        v = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
        __atomic_store_n(&ok, v, __ATOMIC_RELAXED);
    }
    return v;
}
#endif

uint32_t codec_crc32(const void *p, size_t n)
{
    const Bytef *b = p;
#if defined(__x86_64__) && defined(__GNUC__)
    if (n >= 64 && crc32_fold_ok()) {
        size_t head = n & ~(size_t)15;
        uint32_t raw = crc32_fold(0xffffffffu, b, head);
        return (uint32_t)crc32_zlib(raw ^ 0xffffffffu, b + head, n - head);
    }
#endif
    return (uint32_t)crc32_zlib(crc32(0L, Z_NULL, 0), b, n);
}

/* ---- benchmark ----------------------------------------------------------- */

/* A deterministic stream shaped like a real trace: transactions of a START,
 * a few reads, a write or two, and a COMMIT (sometimes an ABORT), touching
 * two arrays and a list, TSC steps of 30-300 ticks, small values. */
static void codec_bench_stream(struct tf_record *r, size_t n)
{
    uint64_t x = 88172645463325252ull, tsc = 1000000, inst = 1, version = 1;
    const uint64_t arrays[3] = { 0x7f1200001000ull, 0x7f1200100000ull, 0x5600a0000000ull };
    size_t i = 0;
    while (i < n) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint16_t site = (uint16_t)(1 + (x >> 60) % 3);
        uint32_t aux = (uint32_t)((x >> 20) & 1);
        unsigned reads = 2 + (unsigned)((x >> 8) % 4), writes = 1 + (unsigned)((x >> 12) % 2);
        int abort = (x >> 16) % 10 == 0;
        const uint64_t base = arrays[(x >> 30) % 3];
        r[i++] = (struct tf_record){ .tsc = tsc += 30 + (x >> 40) % 270, .aux = aux, .kind = TF_EV_START,
                                     .site = site, .addr = inst++, .value = TF_START_HTM_EMU };
        for (unsigned k = 0; k < reads + writes && i < n; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            uint64_t a = base + 8 * ((x >> 20) % 512);
            uint64_t v = (x >> 50) % 4 == 0 ? base + 64 * ((x >> 10) % 64) : (x >> 33) % 1000;
            r[i++] = (struct tf_record){ .tsc = tsc += 30 + (x >> 40) % 270, .aux = aux,
                                         .kind = k < reads ? TF_EV_READ : TF_EV_WRITE, .reason = 8,
                                         .site = site, .addr = a, .value = v };
        }
        if (i < n)
            r[i++] = abort ? (struct tf_record){ .tsc = tsc += 30 + (x >> 45) % 270, .aux = aux,
                                                  .kind = TF_EV_ABORT, .reason = 2, .site = site,
                                                  .addr = base + 8 * ((x >> 24) % 512) }
                           : (struct tf_record){ .tsc = tsc += 30 + (x >> 45) % 270, .aux = aux,
                                                  .kind = TF_EV_COMMIT, .site = site, .addr = ++version,
                                                  .value = reads | (uint64_t)writes << 32 };
    }
}

int codec_bench(int codec, int level, size_t nevents, double *events_per_s, double *bytes_per_event)
{
    const size_t chunk = 65536;
    if (nevents < chunk)
        nevents = chunk;
    struct tf_record *recs = malloc(nevents * sizeof *recs);
    uint8_t *enc = malloc(codec_events_bound(chunk));
    size_t cap = codec_compress_bound(codec, codec_events_bound(chunk));
    uint8_t *out = malloc(cap ? cap : 1);
    if (!recs || !enc || !out) {
        free(recs), free(enc), free(out);
        return error_set("out of memory for the codec benchmark");
    }
    codec_bench_stream(recs, nevents);
    struct timespec t0, t1;
    size_t total = 0;
    /* CPU time of this thread: the figure is per core even on a busy machine. */
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    for (size_t off = 0; off < nevents; off += chunk) {
        size_t m = nevents - off < chunk ? nevents - off : chunk;
        unsigned fl;
        size_t raw = codec_encode_records(enc, recs + off, NULL, m, off, recs[off].addr, &fl);
        size_t got = codec == TF_CODEC_NONE ? 0 : codec_compress(codec, level, enc, raw, out, cap);
        total += (got ? got : raw) + 40; /* + the chunk header */
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    *events_per_s = s > 0 ? (double)nevents / s : 0;
    *bytes_per_event = (double)total / (double)nevents;
    free(recs), free(enc), free(out);
    return 0;
}
