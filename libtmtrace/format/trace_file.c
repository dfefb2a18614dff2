/*
 * trace_file.c - the trace file: header, chunk framing, metadata payloads,
 * the streaming reader with salvage, and the (optionally atomic) writer.
 * docs/format.md describes the same bytes.
 *
 * Owns: every byte of the file outside the event row encoding (codec.c).
 * Never: trusts a length, count or offset from the file before checking it
 * against the file size and the caps below; keeps more than one chunk in
 * memory; prints or exits. Every error names the file, the byte offset and
 * what is wrong.
 */
#include "trace_file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "codec.h"
#include "error.h"

/* ---- layout ------------------------------------------------------------ */

#define TF_HEADER_SIZE 576u
#define TF_HEADER_CRC_AT 572u
#define TF_STAMPS_AT 568u    /* version 2: stamp_access, stamp_boundary, stamp_commit, stamp_flags */
#define TF_CMDLINE_AT 56u
#define TF_CHUNK_HEADER_SIZE 40u
_Static_assert(sizeof(((struct tf_prepared *)0)->hdr) == TF_CHUNK_HEADER_SIZE, "a prepared chunk holds its header");
#define TF_CHUNK_HCRC_AT 36u
/* No chunk payload is larger than this, stored or raw. */
#define TF_MAX_PAYLOAD (256u << 20)
/* Element caps per chunk: what a reader will allocate at most. */
#define TF_MAX_CHUNK_EVENTS (4u * CODEC_MAX_EVENTS)
#define TF_MAX_SITES 65536u
#define TF_MAX_MODELS 4096u
#define TF_MAX_OBJECTS 4096u

#define TF_SITE_FIXED 12u     /* id, line, file length, label length */
#define TF_THREAD_SIZE 24u
#define TF_THREAD_STACK_SIZE 40u   /* with TF_THREADS_STACK: the stack's two bounds after */
#define TF_SKEW_SIZE 36u
#define TF_SAMPLE_SIZE 40u
#define TF_MODEL_FIXED 48u
#define TF_SEGMENT_SIZE 24u
#define TF_END_FIXED 8u       /* writer errors */
#define TF_END_SIGNAL_FIXED 16u   /* with TF_END_SIGNAL: writer errors, signal, reserved */
#define TF_OBJECT_FIXED 28u   /* base, start, end, path length, build-id length, pad */
#define TF_RUNINFO_SIZE 16u   /* f64 event cost, u64 reserved */

/* A decoded chunk header. */
struct tf_chunk_hdr {
    uint8_t kind, codec;
    uint16_t flags;
    uint32_t thread, count, raw_len, stored_len;
    uint32_t crc;
};

/* ---- small helpers ---------------------------------------------------------- */

static int tf_grow(void **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 4096;
    while (n < need)
        n = n > SIZE_MAX / 2 ? need : n * 2;
    void *p = realloc(*buf, n);
    if (!p)
        return -1;
    *buf = p;
    *cap = n;
    return 0;
}

static void tf_header_encode(uint8_t *b, const struct tf_header *h)
{
    memset(b, 0, TF_HEADER_SIZE);
    memcpy(b, TF_MAGIC, 8);
    codec_put_u32(b + 8, h->version ? h->version : TF_VERSION);
    codec_put_u32(b + 12, TF_HEADER_SIZE);
    codec_put_u32(b + 16, h->flags);
    codec_put_u32(b + 20, h->ref_clock);
    codec_put_u64(b + 24, h->tsc_hz);
    codec_put_u32(b + 32, h->ncpus);
    codec_put_u32(b + 36, h->pid);
    codec_put_u32(b + 40, h->events_level);
    /* Version 3 splits what was one u32 (whose value never reached 256):
     * byte 44 the stripe count's log2, byte 45 the stripe width's. */
    codec_put_u32(b + 44, h->stripes_log2);
    if ((h->version ? h->version : TF_VERSION) >= 3) {
        b[44] = (uint8_t)h->stripes_log2;
        b[45] = (uint8_t)h->stripe_shift;
    }
    if ((h->version ? h->version : TF_VERSION) >= 4)
        codec_put_u16(b + 46, (uint16_t)h->detail); /* zero before: readers of 3 see no change */
    codec_put_u64(b + 48, (uint64_t)h->wall_start_ns);
    size_t n = strnlen(h->cmdline, sizeof h->cmdline - 1);
    memcpy(b + TF_CMDLINE_AT, h->cmdline, n);
    b[TF_STAMPS_AT] = h->stamp_access;
    b[TF_STAMPS_AT + 1] = h->stamp_boundary;
    b[TF_STAMPS_AT + 2] = h->stamp_commit;
    b[TF_STAMPS_AT + 3] = h->stamp_flags;
    codec_put_u32(b + TF_HEADER_CRC_AT, codec_crc32(b, TF_HEADER_CRC_AT));
}

static void tf_chunk_hdr_encode(uint8_t *b, const struct tf_chunk_hdr *c)
{
    memset(b, 0, TF_CHUNK_HEADER_SIZE);
    codec_put_u32(b, TF_CHUNK_MAGIC);
    b[4] = c->kind;
    b[5] = c->codec;
    codec_put_u16(b + 6, c->flags);
    codec_put_u32(b + 8, c->thread);
    codec_put_u32(b + 12, c->count);
    codec_put_u32(b + 16, c->raw_len);
    codec_put_u32(b + 20, c->stored_len);
    /* bytes 24..31 reserved, zero */
    codec_put_u32(b + 32, c->crc);
    codec_put_u32(b + TF_CHUNK_HCRC_AT, codec_crc32(b, TF_CHUNK_HCRC_AT));
}

/* Checks a chunk header's own consistency. NULL if fine, else what is wrong. */
static const char *tf_chunk_hdr_decode(const uint8_t *b, struct tf_chunk_hdr *c)
{
    if (codec_get_u32(b) != TF_CHUNK_MAGIC)
        return "bad chunk magic";
    if (codec_get_u32(b + TF_CHUNK_HCRC_AT) != codec_crc32(b, TF_CHUNK_HCRC_AT))
        return "chunk header CRC mismatch";
    c->kind = b[4];
    c->codec = b[5];
    c->flags = codec_get_u16(b + 6);
    c->thread = codec_get_u32(b + 8);
    c->count = codec_get_u32(b + 12);
    c->raw_len = codec_get_u32(b + 16);
    c->stored_len = codec_get_u32(b + 20);
    c->crc = codec_get_u32(b + 32);
    if (c->kind == 0 || c->kind >= TF_CHUNK_KINDS)
        return "unknown chunk kind";
    if (c->codec > TF_CODEC_LZ4)
        return "unknown codec";
    if (c->raw_len > TF_MAX_PAYLOAD || c->stored_len > TF_MAX_PAYLOAD)
        return "chunk length over the 256 MiB limit";
    if (c->codec == TF_CODEC_NONE && c->stored_len != c->raw_len)
        return "stored and raw lengths differ in an uncompressed chunk";
    uint64_t n = c->count, raw = c->raw_len;
    switch (c->kind) {
    case TF_CHUNK_EVENTS:
        if (n > TF_MAX_CHUNK_EVENTS || n * 2 > raw)
            return "event count does not fit the payload";
        break;
    case TF_CHUNK_META_SITES:
        if (n > TF_MAX_SITES || n * TF_SITE_FIXED > raw)
            return "site count does not fit the payload";
        break;
    case TF_CHUNK_META_THREADS:
        if (c->flags & ~(unsigned)TF_THREADS_STACK)
            return "unknown META_THREADS flags";
        if (n * ((c->flags & TF_THREADS_STACK) ? TF_THREAD_STACK_SIZE : TF_THREAD_SIZE) != raw)
            return "thread count does not match the payload";
        break;
    case TF_CHUNK_META_SKEW:
        if (n * TF_SKEW_SIZE != raw)
            return "skew count does not match the payload";
        break;
    case TF_CHUNK_SAMPLES:
        if (n * TF_SAMPLE_SIZE != raw)
            return "sample count does not match the payload";
        break;
    case TF_CHUNK_MODEL:
        if (n > TF_MAX_MODELS || n * TF_MODEL_FIXED > raw)
            return "model count does not fit the payload";
        break;
    case TF_CHUNK_END:
        if (c->flags & ~(unsigned)TF_END_SIGNAL)
            return "unknown END flags";
        if (((c->flags & TF_END_SIGNAL) ? TF_END_SIGNAL_FIXED : TF_END_FIXED) + n * TF_THREAD_SIZE != raw)
            return "thread count does not match the END payload";
        break;
    case TF_CHUNK_LOADMAP:
        if (n > TF_MAX_OBJECTS || n * TF_OBJECT_FIXED > raw)
            return "object count does not fit the payload";
        break;
    case TF_CHUNK_RUNINFO:
        if (n != 1 || raw != TF_RUNINFO_SIZE)
            return "run info is not one 16-byte record";
        break;
    }
    return NULL;
}

/* ---- metadata payloads ---------------------------------------------------- */

static void tf_put_thread(uint8_t *p, const struct tf_thread_info *t)
{
    codec_put_u32(p, t->id);
    codec_put_u32(p + 4, t->os_tid);
    codec_put_u64(p + 8, t->events);
    codec_put_u64(p + 16, t->dropped);
}

static void tf_get_thread(const uint8_t *p, struct tf_thread_info *t)
{
    t->id = codec_get_u32(p);
    t->os_tid = codec_get_u32(p + 4);
    t->events = codec_get_u64(p + 8);
    t->dropped = codec_get_u64(p + 16);
    t->stack_lo = t->stack_hi = 0;
}

/* A META_THREADS chunk's n elements: with TF_THREADS_STACK, each with its
 * stack's bounds after the counts. */
static void tf_get_threads(const uint8_t *p, size_t n, unsigned flags, struct tf_thread_info *out)
{
    size_t esz = (flags & TF_THREADS_STACK) ? TF_THREAD_STACK_SIZE : TF_THREAD_SIZE;
    for (size_t i = 0; i < n; i++, p += esz) {
        tf_get_thread(p, &out[i]);
        if (flags & TF_THREADS_STACK) {
            out[i].stack_lo = codec_get_u64(p + TF_THREAD_SIZE);
            out[i].stack_hi = codec_get_u64(p + TF_THREAD_SIZE + 8);
        }
    }
}

static size_t tf_sites_size(const struct tf_site *s, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += TF_SITE_FIXED + strnlen(s[i].file, sizeof s[i].file - 1) +
                 strnlen(s[i].label, sizeof s[i].label - 1);
    return total;
}

static size_t tf_sites_encode(uint8_t *p, const struct tf_site *s, size_t n)
{
    uint8_t *start = p;
    for (size_t i = 0; i < n; i++) {
        size_t fl = strnlen(s[i].file, sizeof s[i].file - 1);
        size_t ll = strnlen(s[i].label, sizeof s[i].label - 1);
        codec_put_u32(p, s[i].id);
        codec_put_u32(p + 4, (uint32_t)s[i].line);
        codec_put_u16(p + 8, (uint16_t)fl);
        codec_put_u16(p + 10, (uint16_t)ll);
        memcpy(p + 12, s[i].file, fl);
        memcpy(p + 12 + fl, s[i].label, ll);
        p += TF_SITE_FIXED + fl + ll;
    }
    return (size_t)(p - start);
}

static const char *tf_sites_decode(const uint8_t *p, size_t len, struct tf_site *s, size_t n)
{
    const uint8_t *end = p + len;
    for (size_t i = 0; i < n; i++) {
        if ((size_t)(end - p) < TF_SITE_FIXED)
            return "site record runs past the payload";
        size_t fl = codec_get_u16(p + 8), ll = codec_get_u16(p + 10);
        if (fl >= sizeof s[i].file || ll >= sizeof s[i].label)
            return "site name too long";
        if ((size_t)(end - p) < TF_SITE_FIXED + fl + ll)
            return "site record runs past the payload";
        s[i].id = codec_get_u32(p);
        s[i].line = (int32_t)codec_get_u32(p + 4);
        memcpy(s[i].file, p + 12, fl);
        s[i].file[fl] = '\0';
        memcpy(s[i].label, p + 12 + fl, ll);
        s[i].label[ll] = '\0';
        p += TF_SITE_FIXED + fl + ll;
    }
    return p == end ? NULL : "site payload has trailing bytes";
}

static size_t tf_objects_size(const struct tf_object *o, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += TF_OBJECT_FIXED + strnlen(o[i].path, sizeof o[i].path - 1) +
                 (o[i].build_id_len < sizeof o[i].build_id ? o[i].build_id_len : sizeof o[i].build_id);
    return total;
}

static size_t tf_objects_encode(uint8_t *p, const struct tf_object *o, size_t n)
{
    uint8_t *start = p;
    for (size_t i = 0; i < n; i++) {
        size_t pl = strnlen(o[i].path, sizeof o[i].path - 1);
        size_t bl = o[i].build_id_len < sizeof o[i].build_id ? o[i].build_id_len : sizeof o[i].build_id;
        codec_put_u64(p, o[i].base);
        codec_put_u64(p + 8, o[i].start);
        codec_put_u64(p + 16, o[i].end);
        codec_put_u16(p + 24, (uint16_t)pl);
        p[26] = (uint8_t)bl;
        p[27] = 0;
        memcpy(p + TF_OBJECT_FIXED, o[i].build_id, bl);
        memcpy(p + TF_OBJECT_FIXED + bl, o[i].path, pl);
        p += TF_OBJECT_FIXED + bl + pl;
    }
    return (size_t)(p - start);
}

static const char *tf_objects_decode(const uint8_t *p, size_t len, struct tf_object *o, size_t n)
{
    const uint8_t *end = p + len;
    for (size_t i = 0; i < n; i++) {
        if ((size_t)(end - p) < TF_OBJECT_FIXED)
            return "object record runs past the payload";
        size_t pl = codec_get_u16(p + 24), bl = p[26];
        if (pl >= sizeof o[i].path || bl > sizeof o[i].build_id)
            return "object path or build-id too long";
        if ((size_t)(end - p) < TF_OBJECT_FIXED + bl + pl)
            return "object record runs past the payload";
        memset(&o[i], 0, sizeof o[i]);
        o[i].base = codec_get_u64(p);
        o[i].start = codec_get_u64(p + 8);
        o[i].end = codec_get_u64(p + 16);
        o[i].build_id_len = (uint32_t)bl;
        memcpy(o[i].build_id, p + TF_OBJECT_FIXED, bl);
        memcpy(o[i].path, p + TF_OBJECT_FIXED + bl, pl);
        p += TF_OBJECT_FIXED + bl + pl;
    }
    return p == end ? NULL : "object payload has trailing bytes";
}

static size_t tf_models_size(const struct tf_cpu_model *m, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += TF_MODEL_FIXED + (size_t)m[i].nseg * TF_SEGMENT_SIZE;
    return total;
}

static size_t tf_models_encode(uint8_t *p, const struct tf_cpu_model *m, size_t n)
{
    uint8_t *start = p;
    for (size_t i = 0; i < n; i++) {
        codec_put_u32(p, m[i].cpu);
        codec_put_u32(p + 4, m[i].used);
        codec_put_u32(p + 8, m[i].rejected);
        codec_put_u32(p + 12, m[i].nseg);
        codec_put_f64(p + 16, m[i].drift_ppm);
        codec_put_f64(p + 24, m[i].offset_ns);
        codec_put_f64(p + 32, m[i].rms_ns);
        codec_put_f64(p + 40, m[i].max_ns);
        p += TF_MODEL_FIXED;
        for (uint32_t k = 0; k < m[i].nseg; k++, p += TF_SEGMENT_SIZE) {
            codec_put_u64(p, m[i].seg[k].tsc_from);
            codec_put_f64(p + 8, m[i].seg[k].a);
            codec_put_f64(p + 16, m[i].seg[k].b);
        }
    }
    return (size_t)(p - start);
}

static const char *tf_models_decode(const uint8_t *p, size_t len, struct tf_cpu_model *m, size_t n)
{
    const uint8_t *end = p + len;
    const size_t maxseg = sizeof m->seg / sizeof m->seg[0];
    for (size_t i = 0; i < n; i++) {
        if ((size_t)(end - p) < TF_MODEL_FIXED)
            return "model record runs past the payload";
        memset(&m[i], 0, offsetof(struct tf_cpu_model, seg));
        m[i].cpu = codec_get_u32(p);
        m[i].used = codec_get_u32(p + 4);
        m[i].rejected = codec_get_u32(p + 8);
        m[i].nseg = codec_get_u32(p + 12);
        m[i].drift_ppm = codec_get_f64(p + 16);
        m[i].offset_ns = codec_get_f64(p + 24);
        m[i].rms_ns = codec_get_f64(p + 32);
        m[i].max_ns = codec_get_f64(p + 40);
        p += TF_MODEL_FIXED;
        if (m[i].nseg > maxseg)
            return "model has more than 256 segments";
        if ((size_t)(end - p) < (size_t)m[i].nseg * TF_SEGMENT_SIZE)
            return "model segments run past the payload";
        for (uint32_t k = 0; k < m[i].nseg; k++, p += TF_SEGMENT_SIZE) {
            m[i].seg[k].tsc_from = codec_get_u64(p);
            m[i].seg[k].a = codec_get_f64(p + 8);
            m[i].seg[k].b = codec_get_f64(p + 16);
        }
    }
    return p == end ? NULL : "model payload has trailing bytes";
}

/* ---- reader ---------------------------------------------------------------- */

struct tf_reader {
    int fd;
    unsigned flags;
    char *path;
    struct tf_header hdr;
    uint64_t size;          /* file size at open */
    uint64_t pos;           /* next chunk header (tf_next) */
    uint64_t skipped, skipped_bytes;
    uint8_t *stored, *raw;
    size_t stored_cap, raw_cap;
    void *elems;            /* the decoded array of the current chunk */
    size_t elems_cap;
    char damage[512];       /* what the last salvage skip was about */
    uint32_t last_crc;      /* payload CRC of the chunk tf_read_chunk just read */
    int ended;              /* tf_next passed the END chunk */
    /* EVENTS chunks seen by tf_next, by (thread, CRC, length): a chunk that
     * occurs twice would count its events twice. */
    struct tf_seen { uint64_t key, offset; } *seen;
    size_t nseen, seen_cap;
};

/* Errors carry "PATH: offset N: what"; the message is copied first because
 * `what` may be error_get()'s own buffer. */
static int tf_fail(const char *path, uint64_t off, const char *what)
{
    char msg[400];
    snprintf(msg, sizeof msg, "%s", what);
    return error_set("%s: offset %llu: %s", path, (unsigned long long)off, msg);
}

static int tf_pread_all(int fd, void *buf, size_t n, uint64_t off)
{
    uint8_t *p = buf;
    while (n > 0) {
        ssize_t got = pread(fd, p, n, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return got < 0 ? -errno : -EIO;
        p += got;
        n -= (size_t)got;
        off += (uint64_t)got;
    }
    return 0;
}

/* Opens the file and learns its size: a regular file only. 0 or -1. */
static int tf_open_file(struct tf_reader *r, const char *path)
{
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0)
        return error_set_errno(errno, "%s: cannot open", path);
    struct stat st;
    if (fstat(r->fd, &st) != 0)
        return error_set_errno(errno, "%s: cannot stat", path);
    if (!S_ISREG(st.st_mode))
        return error_set("%s: not a regular file", path);
    r->size = (uint64_t)st.st_size;
    return 0;
}

/* Checks the `have` header bytes in b: magic, version, size, CRC (a bad CRC
 * or size is damage that salvage records and reads past). 0 and *version,
 * or -1 (error set). */
static int tf_check_header(struct tf_reader *r, const uint8_t *b, size_t have, uint32_t *version)
{
    const char *path = r->path;
    if (have < 8 || memcmp(b, TF_MAGIC, 8) != 0)
        return tf_fail(path, 0, "not a trace file (bad magic)");
    if (have < 12)
        return error_set("%s: offset %zu: truncated header (needs %u bytes, %zu left)", path, have,
                         TF_HEADER_SIZE, have);
    uint32_t v = codec_get_u32(b + 8);
    if (v > TF_VERSION)
        return error_set("%s: format version %u is newer than this tool's %u", path, v, TF_VERSION);
    if (v == 0)
        return tf_fail(path, 8, "bad format version 0");
    if (have < TF_HEADER_SIZE)
        return error_set("%s: offset 0: truncated header (needs %u bytes, %zu left)", path,
                         TF_HEADER_SIZE, have);
    int crc_ok = codec_get_u32(b + TF_HEADER_CRC_AT) == codec_crc32(b, TF_HEADER_CRC_AT);
    int size_ok = codec_get_u32(b + 12) == TF_HEADER_SIZE;
    if (!crc_ok || !size_ok) {
        if (!(r->flags & TF_SALVAGE))
            return tf_fail(path, crc_ok ? 12 : TF_HEADER_CRC_AT,
                           crc_ok ? "bad header size" : "header CRC mismatch");
        /* Salvage: the fields may be wrong, the chunks may still be good. */
        snprintf(r->damage, sizeof r->damage, "%s: offset 0: header CRC mismatch (fields kept as read)",
                 path);
        r->skipped++;
    }
    *version = v;
    return 0;
}

/* The header's fields (b holds TF_HEADER_SIZE checked bytes). */
static void tf_parse_header(struct tf_header *h, const uint8_t *b, uint32_t version)
{
    h->version = version;
    h->flags = codec_get_u32(b + 16);
    h->ref_clock = codec_get_u32(b + 20);
    h->tsc_hz = codec_get_u64(b + 24);
    h->ncpus = codec_get_u32(b + 32);
    h->pid = codec_get_u32(b + 36);
    h->events_level = codec_get_u32(b + 40);
    h->stripes_log2 = version >= 3 ? b[44] : codec_get_u32(b + 44);
    h->stripe_shift = version >= 3 ? b[45] : TF_STRIPE_SHIFT_V2;
    h->detail = version >= 4 ? codec_get_u16(b + 46) : 0;
    h->wall_start_ns = (int64_t)codec_get_u64(b + 48);
    memcpy(h->cmdline, b + TF_CMDLINE_AT, sizeof h->cmdline - 1);
    h->cmdline[sizeof h->cmdline - 1] = '\0';
    if (version >= 2) {
        h->stamp_access = b[TF_STAMPS_AT];
        h->stamp_boundary = b[TF_STAMPS_AT + 1];
        h->stamp_commit = b[TF_STAMPS_AT + 2];
        h->stamp_flags = b[TF_STAMPS_AT + 3];
    }
}

struct tf_reader *tf_open(const char *path, unsigned flags)
{
    struct tf_reader *r = calloc(1, sizeof *r);
    if (!r) {
        error_set("%s: out of memory", path);
        return NULL;
    }
    r->fd = -1;
    r->flags = flags;
    r->path = strdup(path);
    if (!r->path) {
        error_set("%s: out of memory", path);
        goto fail;
    }
    if (tf_open_file(r, path) != 0)
        goto fail;
    uint8_t b[TF_HEADER_SIZE];
    size_t have = r->size < TF_HEADER_SIZE ? (size_t)r->size : TF_HEADER_SIZE;
    int rc = tf_pread_all(r->fd, b, have, 0);
    if (rc < 0) {
        error_set_errno(-rc, "%s: offset 0: cannot read the header", path);
        goto fail;
    }
    uint32_t version = 0;
    if (tf_check_header(r, b, have, &version) != 0)
        goto fail;
    tf_parse_header(&r->hdr, b, version);
    r->pos = TF_HEADER_SIZE;
    return r;
fail:
    tf_close(r);
    return NULL;
}

const struct tf_header *tf_reader_header(const struct tf_reader *r) { return &r->hdr; }
uint64_t tf_reader_skipped(const struct tf_reader *r) { return r->skipped; }
uint64_t tf_reader_skipped_bytes(const struct tf_reader *r) { return r->skipped_bytes; }
const char *tf_reader_path(const struct tf_reader *r) { return r->path; }
const char *tf_reader_damage(const struct tf_reader *r) { return r->damage; }

void tf_close(struct tf_reader *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    free(r->path);
    free(r->stored);
    free(r->raw);
    free(r->elems);
    free(r->seen);
    free(r);
}

/* Decodes a checked, decompressed payload into the reader's element array. */
static const char *tf_decode_payload(struct tf_reader *r, const struct tf_chunk_hdr *c,
                                     const uint8_t *p, struct tf_chunk *out)
{
    size_t n = c->count, esz;
    switch (c->kind) {
    case TF_CHUNK_EVENTS: esz = sizeof(struct tf_event); break;
    case TF_CHUNK_SAMPLES: esz = sizeof(struct tf_sample); break;
    case TF_CHUNK_META_SITES: esz = sizeof(struct tf_site); break;
    case TF_CHUNK_META_THREADS:
    case TF_CHUNK_END: esz = sizeof(struct tf_thread_info); break;
    case TF_CHUNK_META_SKEW: esz = sizeof(struct tf_skew); break;
    case TF_CHUNK_MODEL: esz = sizeof(struct tf_cpu_model); break;
    case TF_CHUNK_LOADMAP: esz = sizeof(struct tf_object); break;
    case TF_CHUNK_RUNINFO: esz = sizeof(struct tf_runinfo); break;
    default: return "unknown chunk kind";
    }
    if (c->kind == TF_CHUNK_EVENTS && (r->flags & TF_SKIP_EVENTS))
        return NULL;
    if (tf_grow(&r->elems, &r->elems_cap, n ? n * esz : 1) != 0)
        return "out of memory for the chunk's elements";
    switch (c->kind) {
    case TF_CHUNK_EVENTS:
        out->events = r->elems;
        if (codec_decode_events(p, c->raw_len, c->flags, c->thread, out->events, n) != 0)
            return error_get();
        return NULL;
    case TF_CHUNK_SAMPLES:
        out->samples = r->elems;
        for (size_t i = 0; i < n; i++, p += TF_SAMPLE_SIZE) {
            struct tf_sample *s = &out->samples[i];
            s->tsc = codec_get_u64(p);
            s->ref_ns = codec_get_u64(p + 8);
            s->truth_tsc = codec_get_u64(p + 16);
            s->width = codec_get_u32(p + 24);
            s->cpu = codec_get_u16(p + 28);
            s->phase = p[30];
            s->pad = p[31];
            s->thread = codec_get_u32(p + 32);
        }
        return NULL;
    case TF_CHUNK_META_SITES:
        out->sites = r->elems;
        return tf_sites_decode(p, c->raw_len, out->sites, n);
    case TF_CHUNK_END:
        out->writer_errors = codec_get_u64(p);
        out->end_signal = (c->flags & TF_END_SIGNAL) ? codec_get_u32(p + 8) : 0;
        p += (c->flags & TF_END_SIGNAL) ? TF_END_SIGNAL_FIXED : TF_END_FIXED;
        out->threads = r->elems;
        for (size_t i = 0; i < n; i++, p += TF_THREAD_SIZE)
            tf_get_thread(p, &out->threads[i]);
        return NULL;
    case TF_CHUNK_META_THREADS:
        out->threads = r->elems;
        tf_get_threads(p, n, c->flags, out->threads);
        return NULL;
    case TF_CHUNK_META_SKEW:
        out->skews = r->elems;
        for (size_t i = 0; i < n; i++, p += TF_SKEW_SIZE) {
            struct tf_skew *k = &out->skews[i];
            k->cpu = codec_get_u32(p);
            k->offset_ns = (int64_t)codec_get_u64(p + 4);
            k->drift_ppm = codec_get_f64(p + 12);
            k->change_ms = (int64_t)codec_get_u64(p + 20);
            k->drift2_ppm = codec_get_f64(p + 28);
        }
        return NULL;
    case TF_CHUNK_MODEL:
        out->models = r->elems;
        return tf_models_decode(p, c->raw_len, out->models, n);
    case TF_CHUNK_LOADMAP:
        out->objects = r->elems;
        return tf_objects_decode(p, c->raw_len, out->objects, n);
    case TF_CHUNK_RUNINFO:
        out->runinfo = r->elems;
        out->runinfo->event_cost_ns = codec_get_f64(p);
        return NULL;
    }
    return "unknown chunk kind";
}

/* Outcome of reading one chunk, for the salvage logic. */
enum tf_read_status {
    TF_READ_OK = 1,
    TF_READ_EOF = 0,
    TF_READ_BAD_HEADER = -1,  /* header unusable: resynchronise by scanning */
    TF_READ_BAD_PAYLOAD = -2, /* header good: skip its stored length */
    TF_READ_IO = -3,          /* the system failed us: no salvage */
};

/* Reads the chunk at `off`; *next gets the offset after it. The message of
 * any failure is in error_get(). */
static int tf_read_chunk(struct tf_reader *r, uint64_t off, struct tf_chunk *out, uint64_t *next)
{
    memset(out, 0, sizeof *out);
    out->offset = off;
    if (off >= r->size) {
        if (off > r->size) {
            tf_fail(r->path, off, "offset is past the end of the file");
            return TF_READ_BAD_HEADER;
        }
        return TF_READ_EOF;
    }
    uint64_t left = r->size - off;
    if (left < TF_CHUNK_HEADER_SIZE) {
        error_set("%s: offset %llu: truncated chunk header (needs %u bytes, %llu left)", r->path,
                  (unsigned long long)off, TF_CHUNK_HEADER_SIZE, (unsigned long long)left);
        return TF_READ_BAD_HEADER;
    }
    uint8_t hb[TF_CHUNK_HEADER_SIZE];
    int rc = tf_pread_all(r->fd, hb, sizeof hb, off);
    if (rc < 0) {
        error_set_errno(-rc, "%s: offset %llu: cannot read", r->path, (unsigned long long)off);
        return TF_READ_IO;
    }
    struct tf_chunk_hdr c;
    const char *bad = tf_chunk_hdr_decode(hb, &c);
    if (bad) {
        tf_fail(r->path, off, bad);
        return TF_READ_BAD_HEADER;
    }
    uint64_t need = TF_CHUNK_HEADER_SIZE + (uint64_t)c.stored_len;
    if (need > left) {
        error_set("%s: offset %llu: truncated chunk (needs %llu bytes, %llu left)", r->path,
                  (unsigned long long)off, (unsigned long long)need, (unsigned long long)left);
        return TF_READ_BAD_HEADER;
    }
    *next = off + need;
    r->last_crc = c.crc;
    out->kind = c.kind;
    out->codec = c.codec;
    out->thread = c.thread;
    out->stored_len = c.stored_len;
    out->count = c.count;
    /* An index pass needs no payload at all, unless it salvages: then only
     * a payload that checks out and decodes may enter the index, or the
     * pass that reads it again meets the damage without salvage. */
    if (c.kind == TF_CHUNK_EVENTS && (r->flags & TF_SKIP_EVENTS) && !(r->flags & TF_SALVAGE))
        return TF_READ_OK;
    if (tf_grow((void **)&r->stored, &r->stored_cap, c.stored_len + 1u) != 0 ||
        tf_grow((void **)&r->raw, &r->raw_cap, c.raw_len + 1u) != 0) {
        tf_fail(r->path, off, "out of memory for the chunk payload");
        return TF_READ_IO;
    }
    rc = tf_pread_all(r->fd, r->stored, c.stored_len, off + TF_CHUNK_HEADER_SIZE);
    if (rc < 0) {
        error_set_errno(-rc, "%s: offset %llu: cannot read", r->path, (unsigned long long)off);
        return TF_READ_IO;
    }
    if (codec_crc32(r->stored, c.stored_len) != c.crc) {
        tf_fail(r->path, off, "chunk CRC mismatch");
        return TF_READ_BAD_PAYLOAD;
    }
    const uint8_t *payload = r->stored;
    if (c.codec != TF_CODEC_NONE) {
        if (codec_decompress(c.codec, r->stored, c.stored_len, r->raw, c.raw_len) != 0) {
            tf_fail(r->path, off, error_get());
            return TF_READ_BAD_PAYLOAD;
        }
        payload = r->raw;
    }
    bad = tf_decode_payload(r, &c, payload, out);
    if (bad) {
        tf_fail(r->path, off, bad);
        return TF_READ_BAD_PAYLOAD;
    }
    return TF_READ_OK;
}

/* Salvage: the first offset > `from` holding a chunk header that checks out
 * (magic, header CRC, sane fields), or the file size if there is none. */
static uint64_t tf_resync(struct tf_reader *r, uint64_t from)
{
    uint8_t win[65536 + TF_CHUNK_HEADER_SIZE];
    uint8_t magic[4];
    codec_put_u32(magic, TF_CHUNK_MAGIC);
    uint64_t at = from + 1;
    while (at + TF_CHUNK_HEADER_SIZE <= r->size) {
        uint64_t want = r->size - at < sizeof win ? r->size - at : sizeof win;
        if (tf_pread_all(r->fd, win, (size_t)want, at) != 0)
            return r->size;
        size_t limit = (size_t)want - TF_CHUNK_HEADER_SIZE;
        for (size_t i = 0; i <= limit; i++) {
            uint8_t *hit = memchr(win + i, magic[0], limit + 1 - i);
            if (!hit)
                break;
            i = (size_t)(hit - win);
            struct tf_chunk_hdr c;
            if (memcmp(hit, magic, 4) == 0 && tf_chunk_hdr_decode(hit, &c) == NULL) {
                /* Chunks past another trace's header are that trace's. */
                if (memmem(win, i, TF_MAGIC, 8) != NULL)
                    return r->size;
                return at + i;
            }
        }
        at += limit + 1;
    }
    return r->size;
}

/* Records an EVENTS chunk; returns the offset of an identical earlier one
 * (same thread, payload CRC and length), or UINT64_MAX. */
static uint64_t tf_seen_before(struct tf_reader *r, const struct tf_chunk *c)
{
    uint64_t key = ((uint64_t)c->thread << 32 | r->last_crc) ^ (c->stored_len * UINT64_C(0x9e3779b97f4a7c15));
    key |= 1; /* 0 marks a free slot */
    if (2 * (r->nseen + 1) > r->seen_cap) {
        size_t nc = r->seen_cap ? 2 * r->seen_cap : 1024;
        struct tf_seen *n = calloc(nc, sizeof *n);
        if (!n)
            return UINT64_MAX; /* no memory: the check is skipped, nothing else */
        for (size_t i = 0; i < r->seen_cap; i++) {
            if (!r->seen[i].key)
                continue;
            size_t h = (size_t)(r->seen[i].key * UINT64_C(0xff51afd7ed558ccd)) & (nc - 1);
            while (n[h].key)
                h = (h + 1) & (nc - 1);
            n[h] = r->seen[i];
        }
        free(r->seen);
        r->seen = n;
        r->seen_cap = nc;
    }
    size_t h = (size_t)(key * UINT64_C(0xff51afd7ed558ccd)) & (r->seen_cap - 1);
    for (; r->seen[h].key; h = (h + 1) & (r->seen_cap - 1))
        if (r->seen[h].key == key)
            return r->seen[h].offset;
    r->seen[h].key = key;
    r->seen[h].offset = c->offset;
    r->nseen++;
    return UINT64_MAX;
}

/* Another trace's file header where a chunk should be: traces concatenated. */
static int tf_header_at(struct tf_reader *r, uint64_t off)
{
    uint8_t b[8];
    return off + 8 <= r->size && tf_pread_all(r->fd, b, 8, off) == 0 && memcmp(b, TF_MAGIC, 8) == 0;
}

int tf_next(struct tf_reader *r, struct tf_chunk *out)
{
    for (;;) {
        uint64_t next = r->pos;
        int st;
        if (r->ended && r->pos < r->size) {
            /* Nothing follows the END chunk in a trace; what does is not
             * part of this one (e.g. another trace appended to it). */
            tf_fail(r->path, r->pos, tf_header_at(r, r->pos) ? "another trace follows the END chunk"
                                                                : "data after the END chunk");
            st = TF_READ_BAD_HEADER;
        } else {
            st = tf_read_chunk(r, r->pos, out, &next);
        }
        if (st == TF_READ_OK && out->kind == TF_CHUNK_EVENTS) {
            uint64_t first = tf_seen_before(r, out);
            if (first != UINT64_MAX) {
                char what[128];
                snprintf(what, sizeof what, "chunk repeats the chunk at offset %llu (thread %u)",
                         (unsigned long long)first, out->thread);
                tf_fail(r->path, r->pos, what);
                st = TF_READ_BAD_PAYLOAD;
            }
        }
        if (st == TF_READ_OK) {
            r->pos = next;
            r->ended = out->kind == TF_CHUNK_END;
            return 1;
        }
        if (st == TF_READ_EOF)
            return 0;
        if (!(r->flags & TF_SALVAGE) || st == TF_READ_IO)
            return -1;
        snprintf(r->damage, sizeof r->damage, "%s", error_get());
        uint64_t to;
        if (r->ended || tf_header_at(r, r->pos))
            to = r->size; /* the rest belongs to another trace, or to none */
        else
            to = st == TF_READ_BAD_PAYLOAD ? next : tf_resync(r, r->pos);
        r->skipped++;
        r->skipped_bytes += to - r->pos;
        r->pos = to;
    }
}

int tf_read_at(struct tf_reader *r, uint64_t offset, struct tf_chunk *out)
{
    uint64_t next;
    int st = tf_read_chunk(r, offset, out, &next);
    if (st == TF_READ_OK)
        return 1;
    if (st == TF_READ_EOF)
        return tf_fail(r->path, offset, "no chunk at the end of the file");
    return -1;
}

int tf_read_events_at(struct tf_reader *r, uint64_t offset, struct tf_chunk *out, void **buf, size_t *cap)
{
    void *own = r->elems;
    size_t own_cap = r->elems_cap;
    r->elems = *buf;
    r->elems_cap = *cap;
    int rc = tf_read_at(r, offset, out);
    *buf = r->elems;
    *cap = r->elems_cap;
    r->elems = own;
    r->elems_cap = own_cap;
    return rc;
}

/* ---- writer ---------------------------------------------------------------- */

struct tf_writer {
    int fd;
    unsigned flags;
    int failed;
    char *path;
    char *tmp;               /* TF_WRITE_ATOMIC: the temporary being written */
    uint64_t bytes;          /* the file's size once the staged bytes are written */
    uint8_t *raw, *comp;
    size_t raw_cap, comp_cap;
    int direct;              /* TF_WRITE_DIRECT took: the descriptor has O_DIRECT */
    uint8_t *stage;          /* TF_DIRECT_STAGE bytes aligned to TF_DIRECT_ALIGN, or NULL */
    size_t staged;           /* bytes in `stage`, not yet in the file */
};

/* TF_WRITE_DIRECT: what an O_DIRECT write must be aligned to (the buffer,
 * the length and the file offset), the stage the bytes gather in, and how
 * many make it write its whole blocks out. 4 KiB covers the logical block
 * of the devices in use; one that needs more refuses the write, and the
 * writer goes on through the page cache (tf_stage_write). The stage is
 * larger than what it writes at a time so that it also holds the worst
 * case of a whole piece of slots (tf_write_slots): a stored chunk is
 * encoded in it rather than copied in. */
#define TF_DIRECT_ALIGN 4096u
#define TF_DIRECT_STAGE ((size_t)2 << 20)
#define TF_DIRECT_WRITE ((size_t)512 << 10)

/* Writes iov whole to the descriptor, retrying short writes; *off is the
 * file offset of its first byte and moves with every byte written (for
 * the message of a failure, and so that a partial write still counts). */
static int tf_fd_write(struct tf_writer *w, const struct iovec *iov_in, int n, uint64_t *off)
{
    struct iovec iov[4];
    size_t total = 0;
    memcpy(iov, iov_in, (size_t)n * sizeof *iov);
    for (int i = 0; i < n; i++)
        total += iov[i].iov_len;
    struct iovec *v = iov;
    while (total > 0) {
        ssize_t got = writev(w->fd, v, n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            w->failed = 1;
            return error_set_errno(got < 0 ? errno : EIO, "%s: offset %llu: write failed", w->path,
                                   (unsigned long long)*off);
        }
        *off += (uint64_t)got;
        total -= (size_t)got;
        while (n > 0 && (size_t)got >= v->iov_len) {
            got -= (ssize_t)v->iov_len;
            v++;
            n--;
        }
        if (n > 0) {
            v->iov_base = (uint8_t *)v->iov_base + got;
            v->iov_len -= (size_t)got;
        }
    }
    return 0;
}

/* Clears O_DIRECT: the rest of the file goes through the page cache. */
static void tf_direct_off(struct tf_writer *w)
{
    int fl = fcntl(w->fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(w->fd, F_SETFL, fl & ~O_DIRECT);
    w->direct = 0;
}

/* Writes the staged bytes: their whole blocks in one O_DIRECT write (at an
 * aligned offset: the stage starts at one), the tail under a block moved
 * to the stage's start; everything through the page cache at the end
 * (`last`: the tail need not be whole blocks). A direct write that fails
 * or stops short, whatever the reason, leaves the rest to the page cache,
 * which reports the error itself if there is one (a full disk, a file
 * size limit), the file holding every byte before it. */
static int tf_stage_write(struct tf_writer *w, int last)
{
    size_t done = 0;
    if (w->direct && !last) {
        size_t whole = w->staged & ~(size_t)(TF_DIRECT_ALIGN - 1);
        ssize_t got;
        do
            got = write(w->fd, w->stage, whole);
        while (got < 0 && errno == EINTR);
        if (got == (ssize_t)whole) {
            w->staged -= whole;
            memmove(w->stage, w->stage + whole, w->staged);
            return 0;
        }
        done = got > 0 ? (size_t)got : 0;
    }
    if (w->direct)
        tf_direct_off(w);
    uint64_t at = w->bytes - (w->staged - done);
    struct iovec v = { w->stage + done, w->staged - done };
    w->staged = 0;
    if (v.iov_len == 0)
        return 0;
    int rc = tf_fd_write(w, &v, 1, &at);
    w->bytes = at; /* after a failure: what the file holds */
    return rc;
}

/* Appends iov: into the stage while the descriptor has O_DIRECT (its whole
 * blocks go out in one write once TF_DIRECT_WRITE bytes gather), else
 * straight to the descriptor. */
static int tf_write_all(struct tf_writer *w, const struct iovec *iov, int n)
{
    if (!w->direct)
        return tf_fd_write(w, iov, n, &w->bytes);
    for (int i = 0; i < n; i++) {
        const uint8_t *p = iov[i].iov_base;
        size_t left = iov[i].iov_len;
        while (left > 0) {
            if (!w->direct) { /* a direct write failed: the rest goes straight out */
                struct iovec rest[4];
                int m = 0;
                rest[m++] = (struct iovec){ (void *)p, left };
                for (int j = i + 1; j < n; j++)
                    rest[m++] = iov[j];
                return tf_fd_write(w, rest, m, &w->bytes);
            }
            size_t k = TF_DIRECT_STAGE - w->staged;
            if (k > left)
                k = left;
            memcpy(w->stage + w->staged, p, k);
            w->staged += k;
            w->bytes += k;
            p += k;
            left -= k;
            if (w->staged >= TF_DIRECT_WRITE && tf_stage_write(w, 0) != 0)
                return -1;
        }
    }
    return 0;
}

/* Where a chunk of at most `need` bytes, header included, can be built in
 * the stage itself (direct mode), its whole blocks written first if the
 * rest of the stage would not hold it; NULL when the descriptor is not
 * direct (or stopped being so), or a direct write failed (w->failed). */
static uint8_t *tf_stage_room(struct tf_writer *w, size_t need)
{
    if (!w->direct || need > TF_DIRECT_STAGE - TF_DIRECT_ALIGN)
        return NULL;
    if (TF_DIRECT_STAGE - w->staged < need && (tf_stage_write(w, 0) != 0 || !w->direct))
        return NULL;
    return w->stage + w->staged;
}

/* TF_WRITE_DIRECT on a regular file whose file system takes O_DIRECT;
 * otherwise the writer stays with the page cache, saying nothing. */
static void tf_direct_on(struct tf_writer *w)
{
    struct stat st;
    int fl = fcntl(w->fd, F_GETFL);
    if (fl < 0 || fstat(w->fd, &st) != 0 || !S_ISREG(st.st_mode))
        return;
    void *p;
    if (posix_memalign(&p, TF_DIRECT_ALIGN, TF_DIRECT_STAGE) != 0)
        return;
    if (fcntl(w->fd, F_SETFL, fl | O_DIRECT) != 0) {
        free(p);
        return;
    }
    w->stage = p;
    w->direct = 1;
}

uint64_t tf_writer_durable(const struct tf_writer *w) { return w->bytes - w->staged; }

int tf_flush(struct tf_writer *w)
{
    if (w->failed || w->staged == 0)
        return 0; /* an earlier failure was reported when it happened */
    return tf_stage_write(w, 1);
}

struct tf_writer *tf_create(const char *path, const struct tf_header *hdr, unsigned flags)
{
    struct tf_writer *w = calloc(1, sizeof *w);
    if (!w) {
        error_set("%s: out of memory", path);
        return NULL;
    }
    w->fd = -1;
    /* Renaming a temporary over a device or a FIFO would replace it (run as
     * root, `-o /dev/full` replaced the device node): such an output is
     * written in place instead. */
    struct stat st;
    if ((flags & TF_WRITE_ATOMIC) && stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        flags &= ~(unsigned)TF_WRITE_ATOMIC;
    w->flags = flags;
    w->path = strdup(path);
    if (!w->path)
        goto oom;
    if (flags & TF_WRITE_ATOMIC) {
        size_t n = strlen(path);
        w->tmp = malloc(n + sizeof ".tmp.XXXXXX");
        if (!w->tmp)
            goto oom;
        memcpy(w->tmp, path, n);
        memcpy(w->tmp + n, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
        w->fd = mkostemp(w->tmp, O_CLOEXEC);
        if (w->fd < 0) {
            error_set_errno(errno, "%s: cannot create a temporary file", path);
            free(w->tmp);
            w->tmp = NULL;
            goto fail;
        }
        mode_t um = umask(0);
        umask(um);
        (void)fchmod(w->fd, 0644 & ~um);
    } else {
        w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (w->fd < 0) {
            error_set_errno(errno, "%s: cannot create", path);
            goto fail;
        }
    }
    if (flags & TF_WRITE_DIRECT)
        tf_direct_on(w);
    uint8_t b[TF_HEADER_SIZE];
    tf_header_encode(b, hdr);
    struct iovec iov = { b, sizeof b };
    if (tf_write_all(w, &iov, 1) != 0)
        goto fail;
    return w;
oom:
    error_set("%s: out of memory", path);
fail:
    tf_abandon(w);
    return NULL;
}

/* Compresses raw[0..raw_len) with `codec` into *comp (falling back to
 * storing it plainly) and makes the chunk header `hb`; *payload and
 * *stored are what follows it. Pure: a writer's or a prepared chunk's. */
static void tf_seal(const uint8_t *raw, uint8_t **comp, size_t *comp_cap, unsigned kind, unsigned flags,
                    uint32_t thread, size_t count, size_t raw_len, int codec, int level, uint8_t *hb,
                    const uint8_t **payload, size_t *stored)
{
    if (codec == TF_CODEC_LZ4 && !codec_available(TF_CODEC_LZ4))
        codec = TF_CODEC_ZLIB; /* documented fallback: the data matters more than the codec */
    *payload = raw;
    *stored = raw_len;
    unsigned used = TF_CODEC_NONE;
    if (codec == TF_CODEC_ZLIB || codec == TF_CODEC_LZ4) {
        size_t cap = codec_compress_bound(codec, raw_len);
        if (cap && tf_grow((void **)comp, comp_cap, cap) == 0) {
            size_t got = codec_compress(codec, level, raw, raw_len, *comp, cap);
            if (got) {
                *payload = *comp;
                *stored = got;
                used = (unsigned)codec;
            }
        }
    }
    struct tf_chunk_hdr c = { (uint8_t)kind, (uint8_t)used, (uint16_t)flags, thread,
                              (uint32_t)count, (uint32_t)raw_len, (uint32_t)*stored,
                              codec_crc32(*payload, *stored) };
    tf_chunk_hdr_encode(hb, &c);
}

/* Compresses w->raw[0..raw_len) with `codec` (falling back to storing it
 * plainly) and appends the chunk. Only EVENTS chunks are compressed: the
 * others are small and pass TF_CODEC_NONE (a reader accepts any codec on
 * any chunk). */
static int tf_put_chunk(struct tf_writer *w, unsigned kind, unsigned flags, uint32_t thread,
                        size_t count, size_t raw_len, int codec, int level)
{
    if (w->failed)
        return error_set("%s: an earlier write failed", w->path);
    if (raw_len > TF_MAX_PAYLOAD || count > UINT32_MAX)
        return error_set("%s: offset %llu: %s chunk of %zu bytes is over the 256 MiB limit",
                         w->path, (unsigned long long)w->bytes, tf_chunk_kind_name(kind), raw_len);
    uint8_t hb[TF_CHUNK_HEADER_SIZE];
    const uint8_t *payload;
    size_t stored;
    tf_seal(w->raw, &w->comp, &w->comp_cap, kind, flags, thread, count, raw_len, codec, level, hb, &payload,
            &stored);
    struct iovec iov[2] = { { hb, sizeof hb }, { (void *)payload, stored } };
    return tf_write_all(w, iov, 2);
}

/* Seals an EVENTS chunk encoded in the stage at `at` (its header's room,
 * then raw_len bytes) as stored, and makes it part of what is staged. */
static int tf_stage_stored(struct tf_writer *w, uint8_t *at, unsigned flags, uint32_t thread, size_t count,
                           size_t raw_len)
{
    const uint8_t *payload = at + TF_CHUNK_HEADER_SIZE;
    struct tf_chunk_hdr c = { TF_CHUNK_EVENTS, TF_CODEC_NONE, (uint16_t)flags, thread, (uint32_t)count,
                              (uint32_t)raw_len, (uint32_t)raw_len, codec_crc32(payload, raw_len) };
    tf_chunk_hdr_encode(at, &c);
    w->staged += TF_CHUNK_HEADER_SIZE + raw_len;
    w->bytes += TF_CHUNK_HEADER_SIZE + raw_len;
    return w->staged >= TF_DIRECT_WRITE ? tf_stage_write(w, 0) : 0;
}

static int tf_raw_room(struct tf_writer *w, size_t need)
{
    if (need > TF_MAX_PAYLOAD)
        return error_set("%s: offset %llu: chunk of %zu bytes is over the 256 MiB limit", w->path,
                         (unsigned long long)w->bytes, need);
    if (tf_grow((void **)&w->raw, &w->raw_cap, need ? need : 1) != 0)
        return error_set("%s: out of memory for a %zu-byte chunk", w->path, need);
    return 0;
}

_Static_assert(TF_WSET_MAX + 2 <= TF_SLOTS_PIECE, "a write set and its COMMIT fit one piece");

int tf_write_slots(struct tf_writer *w, uint32_t thread, struct tf_slot_stream *ss, int codec, int level)
{
    while (ss->left) {
        /* Room for the records the piece may hold, and a piece of no more
         * records: twice its slots (a write set packs two words a slot),
         * so that a short chunk does not grow the buffers to a full piece,
         * but at least a whole write set and its COMMIT, since a write set
         * in runs takes a few slots for up to TF_WSET_MAX words and is
         * never split between pieces. */
        size_t most = ss->left < TF_SLOTS_PIECE / 2 ? 2 * ss->left : TF_SLOTS_PIECE;
        if (most < TF_WSET_MAX + 2)
            most = TF_WSET_MAX + 2;
        if (w->failed)
            return error_set("%s: an earlier write failed", w->path);
        /* A chunk stored as encoded is encoded in the stage itself: the
         * copy into it cost as much as a sixth of the encoding. */
        uint8_t *in_stage = codec == TF_CODEC_NONE ?
            tf_stage_room(w, TF_CHUNK_HEADER_SIZE + codec_events_bound(most)) : NULL;
        if (w->failed)
            return -1; /* the stage's write failed just now, saying why */
        if (!in_stage && tf_raw_room(w, codec_events_bound(most)) != 0)
            return -1;
        uint64_t seq = ss->seq;
        size_t m;
        unsigned fl;
        long len = codec_encode_slots(in_stage ? in_stage + TF_CHUNK_HEADER_SIZE : w->raw, ss, most, &m, &fl);
        if (len < 0) {
            char why[256];
            snprintf(why, sizeof why, "%s", error_get());
            return error_set("%s: thread %u: records from %llu on are damaged: %s", w->path, thread,
                             (unsigned long long)seq, why);
        }
        if (in_stage ? tf_stage_stored(w, in_stage, fl, thread, m, (size_t)len) != 0
                     : tf_put_chunk(w, TF_CHUNK_EVENTS, fl, thread, m, (size_t)len, codec, level) != 0)
            return -1;
    }
    return 0;
}

int tf_prepare_events(struct tf_prepared *p, uint32_t thread, const struct tf_event *ev, size_t n, int codec,
                      int level)
{
    if (n > CODEC_MAX_EVENTS)
        return error_set("%zu events are more than one chunk holds (%u)", n, CODEC_MAX_EVENTS);
    size_t need = codec_events_bound(n);
    if (need > TF_MAX_PAYLOAD || tf_grow((void **)&p->raw, &p->raw_cap, need) != 0)
        return error_set("out of memory for a %zu-byte chunk", need);
    unsigned fl;
    size_t len = codec_encode_events(p->raw, ev, n, thread, &fl);   /* checks the kinds too */
    if (len == 0)
        return -1;
    tf_seal(p->raw, &p->comp, &p->comp_cap, TF_CHUNK_EVENTS, fl, (fl & CODEC_EV_MERGED) ? 0 : thread, n, len,
            codec, level, p->hdr, &p->payload, &p->stored);
    return 0;
}

int tf_write_prepared(struct tf_writer *w, const struct tf_prepared *p)
{
    if (w->failed)
        return error_set("%s: an earlier write failed", w->path);
    struct iovec iov[2] = { { (void *)p->hdr, sizeof p->hdr }, { (void *)p->payload, p->stored } };
    return tf_write_all(w, iov, 2);
}

void tf_prepared_free(struct tf_prepared *p)
{
    free(p->raw);
    free(p->comp);
    memset(p, 0, sizeof *p);
}

int tf_write_samples(struct tf_writer *w, const struct tf_sample *s, size_t n)
{
    if (tf_raw_room(w, n * TF_SAMPLE_SIZE) != 0)
        return -1;
    uint8_t *p = w->raw;
    for (size_t i = 0; i < n; i++, p += TF_SAMPLE_SIZE) {
        codec_put_u64(p, s[i].tsc);
        codec_put_u64(p + 8, s[i].ref_ns);
        codec_put_u64(p + 16, s[i].truth_tsc);
        codec_put_u32(p + 24, s[i].width);
        codec_put_u16(p + 28, s[i].cpu);
        p[30] = s[i].phase;
        p[31] = s[i].pad;
        codec_put_u32(p + 32, s[i].thread);
        codec_put_u32(p + 36, 0);
    }
    return tf_put_chunk(w, TF_CHUNK_SAMPLES, 0, 0, n, n * TF_SAMPLE_SIZE, TF_CODEC_NONE, 0);
}

int tf_write_sites(struct tf_writer *w, const struct tf_site *s, size_t n)
{
    if (n > TF_MAX_SITES)
        return error_set("%s: %zu sites is over the limit of %u per chunk", w->path, n, TF_MAX_SITES);
    if (tf_raw_room(w, tf_sites_size(s, n)) != 0)
        return -1;
    size_t len = tf_sites_encode(w->raw, s, n);
    return tf_put_chunk(w, TF_CHUNK_META_SITES, 0, 0, n, len, TF_CODEC_NONE, 0);
}

int tf_write_objects(struct tf_writer *w, const struct tf_object *o, size_t n)
{
    if (n > TF_MAX_OBJECTS)
        return error_set("%s: %zu objects is over the limit of %u per chunk", w->path, n, TF_MAX_OBJECTS);
    if (tf_raw_room(w, tf_objects_size(o, n)) != 0)
        return -1;
    size_t len = tf_objects_encode(w->raw, o, n);
    return tf_put_chunk(w, TF_CHUNK_LOADMAP, 0, 0, n, len, TF_CODEC_NONE, 0);
}

int tf_write_runinfo(struct tf_writer *w, const struct tf_runinfo *ri)
{
    if (tf_raw_room(w, TF_RUNINFO_SIZE) != 0)
        return -1;
    codec_put_f64(w->raw, ri->event_cost_ns);
    codec_put_u64(w->raw + 8, 0);
    return tf_put_chunk(w, TF_CHUNK_RUNINFO, 0, 0, 1, TF_RUNINFO_SIZE, TF_CODEC_NONE, 0);
}

int tf_write_threads(struct tf_writer *w, const struct tf_thread_info *t, size_t n)
{
    if (tf_raw_room(w, n * TF_THREAD_STACK_SIZE) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        uint8_t *p = w->raw + i * TF_THREAD_STACK_SIZE;
        tf_put_thread(p, &t[i]);
        codec_put_u64(p + TF_THREAD_SIZE, t[i].stack_lo);
        codec_put_u64(p + TF_THREAD_SIZE + 8, t[i].stack_hi);
    }
    return tf_put_chunk(w, TF_CHUNK_META_THREADS, TF_THREADS_STACK, 0, n, n * TF_THREAD_STACK_SIZE,
                        TF_CODEC_NONE, 0);
}

int tf_write_skews(struct tf_writer *w, const struct tf_skew *s, size_t n)
{
    if (tf_raw_room(w, n * TF_SKEW_SIZE) != 0)
        return -1;
    uint8_t *p = w->raw;
    for (size_t i = 0; i < n; i++, p += TF_SKEW_SIZE) {
        codec_put_u32(p, s[i].cpu);
        codec_put_u64(p + 4, (uint64_t)s[i].offset_ns);
        codec_put_f64(p + 12, s[i].drift_ppm);
        codec_put_u64(p + 20, (uint64_t)s[i].change_ms);
        codec_put_f64(p + 28, s[i].drift2_ppm);
    }
    return tf_put_chunk(w, TF_CHUNK_META_SKEW, 0, 0, n, n * TF_SKEW_SIZE, TF_CODEC_NONE, 0);
}

int tf_write_models(struct tf_writer *w, const struct tf_cpu_model *m, size_t n)
{
    if (n > TF_MAX_MODELS)
        return error_set("%s: %zu models is over the limit of %u per chunk", w->path, n, TF_MAX_MODELS);
    for (size_t i = 0; i < n; i++)
        if (m[i].nseg > sizeof m[i].seg / sizeof m[i].seg[0])
            return error_set("%s: model of cpu %u has %u segments (at most 256)", w->path, m[i].cpu,
                             m[i].nseg);
    if (tf_raw_room(w, tf_models_size(m, n)) != 0)
        return -1;
    size_t len = tf_models_encode(w->raw, m, n);
    return tf_put_chunk(w, TF_CHUNK_MODEL, 0, 0, n, len, TF_CODEC_NONE, 0);
}

int tf_write_end(struct tf_writer *w, const struct tf_thread_info *t, size_t n, uint64_t writer_errors,
                 uint32_t signal)
{
    size_t fixed = signal ? TF_END_SIGNAL_FIXED : TF_END_FIXED;
    if (tf_raw_room(w, fixed + n * TF_THREAD_SIZE) != 0)
        return -1;
    codec_put_u64(w->raw, writer_errors);
    if (signal) {
        codec_put_u32(w->raw + 8, signal);
        codec_put_u32(w->raw + 12, 0);
    }
    for (size_t i = 0; i < n; i++)
        tf_put_thread(w->raw + fixed + i * TF_THREAD_SIZE, &t[i]);
    return tf_put_chunk(w, TF_CHUNK_END, signal ? TF_END_SIGNAL : 0, 0, n, fixed + n * TF_THREAD_SIZE,
                        TF_CODEC_NONE, 0);
}

uint64_t tf_writer_bytes(const struct tf_writer *w) { return w->bytes; }

static void tf_writer_free(struct tf_writer *w)
{
    free(w->path);
    free(w->tmp);
    free(w->raw);
    free(w->comp);
    free(w->stage);
    free(w);
}

/* Makes a rename durable: fsync of the directory that holds the file. */
static void tf_fsync_dir(const char *path)
{
    char *copy = strdup(path);
    if (!copy)
        return;
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(copy);
}

int tf_finish(struct tf_writer *w, int do_fsync)
{
    int rc = 0;
    if (w->failed)
        rc = error_set("%s: not finished: an earlier write failed", w->path);
    if (rc == 0 && tf_flush(w) != 0)
        rc = -1;
    if (rc == 0 && do_fsync && fsync(w->fd) != 0)
        rc = error_set_errno(errno, "%s: fsync failed", w->path);
    if (close(w->fd) != 0 && rc == 0)
        rc = error_set_errno(errno, "%s: close failed", w->path);
    w->fd = -1;
    if (w->tmp) {
        if (rc == 0 && rename(w->tmp, w->path) != 0)
            rc = error_set_errno(errno, "%s: cannot rename %s into place", w->path, w->tmp);
        if (rc != 0)
            unlink(w->tmp);
        else if (do_fsync)
            tf_fsync_dir(w->path);
    }
    tf_writer_free(w);
    return rc;
}

void tf_abandon(struct tf_writer *w)
{
    if (!w)
        return;
    if (w->fd >= 0)
        close(w->fd);
    if (w->tmp)
        unlink(w->tmp);
    tf_writer_free(w);
}
