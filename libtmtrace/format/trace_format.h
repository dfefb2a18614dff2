/*
 * trace_format.h - the vocabulary of the trace format: every name, enum and
 * record rule that the runtime's event path, the file reader/writer and the
 * tools share. docs/format.md describes the same things for people.
 *
 * Owns: the format's magic and version, the event kinds, START flags, abort,
 * fallback and serial reasons with their printed names, the in-memory event
 * record (struct tf_record) and the decoded event (struct tf_event) the codec
 * makes of it, the rules for packing the record's fields (START and
 * COMMIT values, the STM abort value, a write set's packed words in the
 * slot stream, TSC_AUX -> CPU, address -> stripe),
 * the header's flags and stamp kinds, the chunk kinds, END flags and codecs.
 * Never: declares the reader or writer (trace_file.h), touches memory other
 * than its arguments, allocates, or includes more than the public header:
 * the runtime's hot path includes it.
 */
#ifndef TMT_TRACE_FORMAT_H
#define TMT_TRACE_FORMAT_H

#include <stdint.h>

#include "tmtrace.h" /* enum tmt_abort_reason: the ABORT record's reason */

#define TF_MAGIC "TMTRACE\0"           /* 8 bytes at offset 0 */
#define TF_VERSION 5                   /* bump on any incompatible change; readers keep reading 1-4 */
#define TF_CHUNK_MAGIC 0x4b4e4843u     /* "CHNK" little-endian */

/* ---- event kinds and their reasons -------------------------------------- */

enum tf_event_kind {
    TF_EV_START = 1,    /* transaction attempt starts */
    TF_EV_READ = 2,
    TF_EV_WRITE = 3,
    TF_EV_COMMIT = 4,
    TF_EV_ABORT = 5,
    TF_EV_FALLBACK = 6, /* hardware path gives up; the STM takes over */
    TF_EV_SERIAL = 7,   /* the attempt runs alone from here (serial, irrevocable) to its end (v2) */
    TF_EV_ALLOC = 8,    /* tmt_malloc returned a block: address, size and call site (v2) */
    TF_EV_WSET = 9,     /* a word the COMMIT before it wrote: address and byte mask (v4) */
    TF_EV_ABORT_PC = 10, /* the code address of the access at which the ABORT before it was found (v4) */
    TF_EV_ABORT_STACK = 11, /* a caller's frame above that access (v4, TMTRACE_ABORT_STACK) */
    TF_EV_KINDS = 12
};

/* The kinds that repeat the stamp of the record before them (WSET,
 * ABORT_PC, ABORT_STACK): no clock read, after an attempt's end. */
#define TF_EV_BIT(kind) (UINT64_C(1) << (kind))
#define TF_EV_REPEATS_STAMP (TF_EV_BIT(TF_EV_WSET) | TF_EV_BIT(TF_EV_ABORT_PC) | TF_EV_BIT(TF_EV_ABORT_STACK))
static inline int tf_event_repeats_stamp(unsigned kind)
{
    return kind < 64 && (TF_EV_REPEATS_STAMP >> kind & 1);
}

/* The `value` of an ALLOC record: the call site (a return address, < 2^48
 * in user space) and the size in bytes in the top 16 bits, TF_ALLOC_SIZE_MAX
 * meaning that size or more. */
#define TF_ALLOC_SIZE_MAX 0xffffu
static inline uint64_t tf_alloc_value(uint64_t size, uint64_t pc)
{
    return (size < TF_ALLOC_SIZE_MAX ? size : TF_ALLOC_SIZE_MAX) << 48 | (pc & ((UINT64_C(1) << 48) - 1));
}
static inline uint64_t tf_alloc_size(uint64_t value) { return value >> 48; }
static inline uint64_t tf_alloc_pc(uint64_t value) { return value & ((UINT64_C(1) << 48) - 1); }

/* Flags of a START record (tf_record.value, see tf_start_value) and of decoded events. */
enum tf_start_flags {
    TF_START_HTM = 1u << 0,      /* real hardware attempt */
    TF_START_HTM_EMU = 1u << 1,  /* emulated hardware attempt */
    TF_START_READ_ONLY = 1u << 2,
    TF_START_RETRY = 1u << 3,    /* a retry of an aborted attempt of the same transaction */
    TF_START_SERIAL = 1u << 4,   /* serial (irrevocable) attempt; a SERIAL record follows (v2) */
    TF_START_DETAIL = 1u << 5,   /* TMTRACE_DETAIL chose this attempt: its reads and writes are
                                  * recorded, the others' are not (v4) */
    TF_START_SHED = 1u << 6      /* level all: this attempt was recorded as at level tx (no reads or
                                  * writes; its commit's write set follows it), because buffers ran
                                  * short while the tracer kept to its share of a CPU (v4 from this
                                  * flag's introduction) */
};

/* The reason of an ABORT record is the public enum tmt_abort_reason
 * (tmtrace.h): TMT_ABORT_NONE .. TMT_ABORT_HTM, TMT_ABORT_REASONS of them. */

/* Why an attempt runs in serial mode (SERIAL record, `reason`). */
enum tf_serial_reason {
    TF_SERIAL_CONTENTION = 1, /* TMTRACE_SERIAL_AFTER conflict aborts of this transaction */
    TF_SERIAL_REQUESTED = 2,  /* the program asked for it (TMT_TX_IRREVOCABLE, libitm's serial mode) */
    TF_SERIAL_ALONE = 3,      /* the runtime's choice: the thread is the only one in transactions (libitm's way) */
    TF_SERIAL_REASONS = 4
};
/* SERIAL record `value` bits (v4; 0 before): the attempt's reads are not
 * counted (it ran in place through the native API at a level that records
 * no access): its COMMIT's read-set field is 0, not a count. */
#define TF_SERIAL_UNCOUNTED 1u

/* Why the hardware path gave up (FALLBACK record, `reason`). */
enum tf_fallback_reason {
    TF_FB_NO_RETRY = 1,   /* status without the RETRY bit */
    TF_FB_CAPACITY = 2,   /* status with CAPACITY */
    TF_FB_ATTEMPTS = 3,   /* TMTRACE_HTM_RETRIES attempts used up */
    TF_FB_FLAGS = 4,      /* the transaction asked for the STM (e.g. nested, TMT_TX_NO_HTM) */
    TF_FB_REASONS = 5
};

/* Printed names ("start", "read-locked", "capacity", ...). Out of range:
 * "?" for kinds, chunk kinds and codecs, "unknown" for reasons. */
const char *tf_event_kind_name(unsigned kind);
const char *tf_abort_reason_name(unsigned reason);
const char *tf_fallback_reason_name(unsigned reason);
const char *tf_serial_reason_name(unsigned reason);
const char *tf_chunk_kind_name(unsigned kind);
const char *tf_codec_name(unsigned codec);

/* ---- the event record (32 bytes; most accesses are stored in 16, below) ---- */

/*
 * One event as the event path stores it: fixed size, no pointers. Field use
 * by kind (all little-endian on disk once decoded):
 *
 *   kind      addr                         value
 *   START     instance id                  tf_start_value(flags, attempt)
 *   READ      address read                 value read (zero-extended), size in `reason`
 *   WRITE     address written              value written, size in `reason`
 *   COMMIT    write version (TL2 clock; 0 for read-only and hardware commits)
 *                                          tf_commit_value(read-set size, write-set size)
 *   ABORT     conflicting address (0 = unknown; version 1: the stripe index
 *             for COMMIT_VALIDATE)         HTM status word (TMT_ABORT_HTM); for
 *                                          STM aborts what the attempt found on
 *                                          the stripe: tf_abort_held() when it
 *                                          was locked, else the version found
 *                                          (version 1: the holder's thread id
 *                                          for READ_LOCKED/COMMIT_LOCKED, else 0)
 *   FALLBACK  0                            HTM status word of the last attempt
 *   ALLOC     block address                tf_alloc_value(size, call site)
 *   SERIAL    conflict aborts of the transaction before this attempt
 *                                          0
 *   WSET      word address (multiple of 8) byte mask (bit i: byte i of the word)
 *   ABORT_PC  code address of the access   0
 *   ABORT_STACK return address of a caller depth (1: the caller of the function
 *             above the access             holding the access, then outwards)
 *
 * WSET, ABORT_PC and ABORT_STACK repeat the stamp and CPU of the record
 * before them (no clock read). The WSET records after a COMMIT, up to the thread's next
 * START, are that commit's write set, recorded after its locks were
 * released, by an attempt whose reads and writes were not recorded (level
 * tx, an attempt TMTRACE_DETAIL did not choose, or one shed at level all:
 * TF_START_SHED). In the event path's
 * slot stream they are stored in bulk (tf_wset_*, below).
 *
 * `reason`: READ/WRITE access size in bytes; ABORT enum tmt_abort_reason;
 * FALLBACK enum tf_fallback_reason; SERIAL enum tf_serial_reason. `site` is
 * the site id of the enclosing transaction (START carries it; the others
 * repeat it). `aux` is the raw TSC_AUX of the instruction that stamped `tsc`
 * ((node << 12) | cpu on Linux; tf_aux_cpu). The thread is the chunk's; the
 * instance of non-START events is the one of the START before them in the
 * thread's program order.
 */
struct tf_record {
    uint8_t kind;   /* first: its byte tells a full record from a compact one (below) */
    uint8_t reason;
    uint16_t site;
    uint32_t aux;
    uint64_t tsc;
    uint64_t addr;
    uint64_t value;
};

_Static_assert(sizeof(struct tf_record) == 32, "tf_record is 32 bytes");

/*
 * The event path's stream is an array of 16-byte slots. A full record
 * (struct tf_record) takes two; the common records take one, as a compact
 * record that leaves out what the record before it in the same stream
 * already says: its CPU (aux) and most of its stamp, which is the previous
 * record's plus a step. The first byte of a slot tells them apart: a full
 * record's is its kind (below 0x80), a compact one's has TF_COMPACT_TAG and
 * its class in bits 0-1.
 *
 *   READ / WRITE (class 0 / 1): an access of 1, 2, 4 or 8 bytes
 *     head   bits 2-3 log2 of the size, bits 4-6 and 8-16 the step (low 3
 *            and high 9 bits, at most TF_ACCESS_STEP_MAX), bits 17-63 the
 *            address (user-space addresses have 47 bits)
 *     value  the value read or written (zero-extended); site: the previous
 *            record's
 *   START (class 2)
 *     head   bits 2-6 the start flags' low 5 bits, bits 8-31 the step (at
 *            most TF_BOUNDARY_STEP_MAX), bits 32-47 the site, bits 48-61
 *            the attempt, bits 62-63 the flags' bits 5-6 (DETAIL, SHED:
 *            the attempts sampling and shedding make are compact too)
 *     value  the instance id (below 2^63), or, with bit 63 set, the
 *            read-only COMMIT that ended the attempt (tf_start_fold, below)
 *   COMMIT (class 3)
 *     head   bits 2-6 the entries of the write set it carries (below; 0:
 *            none), bits 8-31 the step, bits 32-47 the read-set size, bits
 *            48-63 the write-set size
 *     value  the write version; site: the previous record's
 *
 * The first record of a stream is therefore always full, and so is any
 * record that does not fit: another CPU, a larger step, an odd size, a high
 * address, a set of 65536 or more, an injected clock (whose truth column
 * runs per slot). Halving the bytes of the common records halves the memory
 * the event path fills, which is what tracing costs beyond its clock reads.
 */
struct tf_slot {
    uint64_t head;
    uint64_t value;
};

_Static_assert(sizeof(struct tf_slot) * 2 == sizeof(struct tf_record), "a full record is two slots");

#define TF_COMPACT_TAG 0x80u
enum tf_compact_class { TF_COMPACT_READ = 0, TF_COMPACT_WRITE = 1, TF_COMPACT_START = 2, TF_COMPACT_COMMIT = 3 };
#define TF_ACCESS_STEP_MAX 0xfffu
#define TF_BOUNDARY_STEP_MAX 0xffffffu
#define TF_ACCESS_ADDR_BITS 47

/* Whether an access of `size` bytes at `addr` can be a compact record
 * (the step and the CPU are the caller's to check). */
static inline int tf_access_fits(uint64_t addr, unsigned size)
{
    return (size == 1 || size == 2 || size == 4 || size == 8) && (addr >> TF_ACCESS_ADDR_BITS) == 0;
}

/* The head of a compact access record; `step` <= TF_ACCESS_STEP_MAX and
 * tf_access_fits(addr, size). */
static inline uint64_t tf_access_head(int write, unsigned size, uint64_t step, uint64_t addr)
{
    unsigned lg = size == 8 ? 3u : size == 4 ? 2u : size == 2 ? 1u : 0u;
    return addr << 17 | (step >> 3) << 8 | TF_COMPACT_TAG | (step & 7u) << 4 | lg << 2 |
           (write ? TF_COMPACT_WRITE : TF_COMPACT_READ);
}

/* The head of a compact START (tf_start_fits, `site` < 65536, `step` <=
 * TF_BOUNDARY_STEP_MAX) and of a compact COMMIT (set sizes below 65536). */
static inline int tf_start_fits(unsigned flags, unsigned attempt, uint64_t instance)
{
    return (flags >> 7 | attempt >> 14 | instance >> 63) == 0;
}
static inline uint64_t tf_start_head(unsigned flags, uint64_t step, unsigned site, unsigned attempt)
{
    return (uint64_t)(flags >> 5) << 62 | (uint64_t)attempt << 48 | (uint64_t)site << 32 | step << 8 |
           TF_COMPACT_TAG | (flags & 31u) << 2 | TF_COMPACT_START;
}
static inline uint64_t tf_commit_head(uint64_t step, uint32_t read_set, uint32_t write_set)
{
    return (uint64_t)write_set << 48 | (uint64_t)read_set << 32 | step << 8 | TF_COMPACT_TAG | TF_COMPACT_COMMIT;
}

/* A compact COMMIT may carry the commit's write set: the entries, in the
 * run form of a WSET record (below), right after it, tf_wset_slots(e)
 * slots for e entries (1 to TF_COMMIT_CARRY_MAX) whose words add up to the
 * COMMIT's write-set size n (1 to TF_WSET_MAX). It stands for the COMMIT
 * and n WSET records with its stamp, CPU and site, as a WSET record after
 * it would. A full WSET record costs two slots more: this is the form of a
 * commit's write set that fits (runs of words below 2^47, few entries).
 * The head of such a COMMIT: */
#define TF_COMMIT_CARRY_MAX 31u
static inline uint64_t tf_commit_carry(uint64_t commit_head, uint32_t entries)
{
    return commit_head | (uint64_t)entries << 2;
}
/* The entries a compact record carries after it (0: not a COMMIT that
 * carries a write set). */
static inline uint32_t tf_commit_carried(const struct tf_slot *s)
{
    return (s->head & 3u) == TF_COMPACT_COMMIT ? (uint32_t)(s->head >> 2 & TF_COMMIT_CARRY_MAX) : 0;
}
/* The words of the write set a compact COMMIT carries: its write-set size. */
static inline uint64_t tf_commit_carried_words(const struct tf_slot *s) { return s->head >> 48; }

/* Read as a byte: a full record's first byte was stored as its kind. */
static inline int tf_slot_is_compact(const struct tf_slot *s)
{
    return (*(const unsigned char *)s & TF_COMPACT_TAG) != 0;
}

/* START value: the flags in the low 16 bits, the attempt number above. */
static inline uint64_t tf_start_value(uint32_t flags, uint32_t attempt)
{
    return flags | (uint64_t)attempt << 16;
}
/* The START value a compact START's head holds (tf_start_head). */
static inline uint64_t tf_start_head_value(uint64_t h)
{
    return tf_start_value((uint32_t)((h >> 2 & 31u) | (h >> 62) << 5), (uint32_t)(h >> 48 & 0x3fffu));
}
static inline uint32_t tf_start_flags(uint64_t value) { return (uint32_t)(value & 0xffffu); }
static inline uint32_t tf_start_attempt(uint64_t value) { return (uint32_t)(value >> 16); }

/* COMMIT value: read-set size in the low 32 bits, write-set size above. */
static inline uint64_t tf_commit_value(uint32_t read_set, uint32_t write_set)
{
    return read_set | (uint64_t)write_set << 32;
}
static inline uint32_t tf_commit_read_set(uint64_t value) { return (uint32_t)value; }
static inline uint32_t tf_commit_write_set(uint64_t value) { return (uint32_t)(value >> 32); }

/* A compact access's class, kind, size in bytes and stamp step. */
static inline int tf_compact_is_access(const struct tf_slot *s) { return (s->head & 2u) == 0; }
static inline unsigned tf_compact_kind(const struct tf_slot *s)
{
    return (s->head & 3u) == TF_COMPACT_WRITE ? TF_EV_WRITE : TF_EV_READ;
}
static inline unsigned tf_compact_size(const struct tf_slot *s) { return 1u << (s->head >> 2 & 3u); }
static inline uint64_t tf_compact_step(const struct tf_slot *s)
{
    return (s->head >> 4 & 7u) | (s->head >> 8 & 0x1ffu) << 3;
}

/* A compact record: the previous record `r` with what the slot changes. */
static inline void tf_compact_apply(const struct tf_slot *s, struct tf_record *r)
{
    uint64_t h = s->head;
    switch (h & 3u) {
    case TF_COMPACT_READ:
    case TF_COMPACT_WRITE:
        r->kind = (uint8_t)tf_compact_kind(s);
        r->reason = (uint8_t)tf_compact_size(s);
        r->tsc += tf_compact_step(s);
        r->addr = h >> 17;
        r->value = s->value;
        return;
    case TF_COMPACT_START:
        r->kind = TF_EV_START;
        r->reason = 0;
        r->tsc += h >> 8 & TF_BOUNDARY_STEP_MAX;
        r->site = (uint16_t)(h >> 32);
        r->addr = s->value;
        r->value = tf_start_head_value(h);
        return;
    default:
        r->kind = TF_EV_COMMIT;
        r->reason = 0;
        r->tsc += h >> 8 & TF_BOUNDARY_STEP_MAX;
        r->addr = s->value;
        r->value = tf_commit_value((uint32_t)(h >> 32 & 0xffffu), (uint32_t)(h >> 48));
        return;
    }
}

/* A compact START whose attempt ended in a read-only commit with nothing
 * recorded in between (no write version, no write set) holds that COMMIT
 * too: the runtime rewrites the START's value in place at the commit
 * (one 8-byte store, so that a snapshot copies one form or the other)
 * instead of taking a slot for it. The value then says TF_START_FOLDED,
 * the COMMIT's stamp step after the START (bits 0-23) and its read-set
 * size (bits 32-47); the START's instance id is the one before it in the
 * stream plus one (the previous START's, or the chunk's first instance),
 * which the runtime checks before it folds. The slot stands for the START
 * and the COMMIT: two records, the COMMIT with the START's CPU and site. */
#define TF_START_FOLDED (UINT64_C(1) << 63)
static inline uint64_t tf_start_fold(uint64_t step, uint32_t read_set)
{
    return TF_START_FOLDED | (uint64_t)read_set << 32 | step;
}
/* Whether the compact slot s is a START that holds its COMMIT. */
static inline int tf_start_folded(const struct tf_slot *s)
{
    return (s->head & 3u) == TF_COMPACT_START && (s->value & TF_START_FOLDED) != 0;
}
/* The head and value of a compact COMMIT that the folded START at s holds:
 * what the slot would hold had the COMMIT taken one of its own. */
static inline uint64_t tf_fold_commit_head(const struct tf_slot *s)
{
    return ((s->value >> 32 & 0xffffu) << 32) | (s->value & TF_BOUNDARY_STEP_MAX) << 8 | TF_COMPACT_TAG |
           TF_COMPACT_COMMIT;
}
/* The START record `r` read from the folded slot s becomes its COMMIT. */
static inline void tf_fold_commit(const struct tf_slot *s, struct tf_record *r)
{
    struct tf_slot c = { tf_fold_commit_head(s), 0 };
    tf_compact_apply(&c, r);
}

/*
 * A write set in the slot stream: a full record of kind TF_EV_WSET whose
 * `addr` is the count of words n (1 to TF_WSET_MAX; a longer write set, or
 * one cut by the end of a chunk, continues in more such records), then the
 * packed entries, two per slot (head first; an odd count leaves the last
 * one 0): tf_wset_entries of them, in tf_wset_slots(entries) raw slots.
 * Its `value` says how they are packed:
 *   0  one entry per word, tf_wset_pack(word, mask);
 *   e  e entries (1 to n), each tf_wset_pack_run(word, mask, k): k + 1
 *      words from `word` on, 8 bytes apart, each written with `mask`, so
 *      that an array's words take one entry (a word at or above 2^47 has
 *      no room for k: such a write set takes the first form).
 * The record expands to n records of kind TF_EV_WSET (one per word) with
 * the full record's stamp, CPU and site; tools never see the packed form.
 * A COMMIT that carries its write set (tf_commit_carry, above) needs no
 * such record: the run form's entries follow it directly.
 */
#define TF_WSET_MAX 4096u
#define TF_WSET_RUN_SHIFT 52 /* where the run's extra words start in an entry */
#define TF_WSET_RUN_MAX 4095u
#define TF_WSET_RUN_WORDS ((uint64_t)1 << 47) /* words below this have room for a run */
static inline uint64_t tf_wset_slots(uint64_t n) { return (n + 1) / 2; }
static inline uint64_t tf_wset_pack(uint64_t word, uint32_t mask) { return (word >> 3) << 8 | (mask & 0xffu); }
static inline uint64_t tf_wset_pack_run(uint64_t word, uint32_t mask, uint32_t k)
{
    return (uint64_t)k << TF_WSET_RUN_SHIFT | tf_wset_pack(word, mask);
}
static inline uint64_t tf_wset_word(uint64_t packed) { return (packed >> 8) << 3; }
static inline uint32_t tf_wset_mask(uint64_t packed) { return (uint32_t)(packed & 0xffu); }
/* An entry of the run form: its first word and its extra words. */
static inline uint64_t tf_wset_run_word(uint64_t packed)
{
    return tf_wset_word(packed & (((uint64_t)1 << TF_WSET_RUN_SHIFT) - 1));
}
static inline uint32_t tf_wset_run_extra(uint64_t packed) { return (uint32_t)(packed >> TF_WSET_RUN_SHIFT); }
/* The entries of the write-set record `r` (its `value`, or n in the first
 * form). */
static inline uint64_t tf_wset_entries(const struct tf_record *r) { return r->value ? r->value : r->addr; }
/* The i-th packed entry of a write set whose entries start at slot w (a
 * WSET record's third slot, or the slot after a COMMIT that carries them). */
static inline uint64_t tf_wset_at(const struct tf_slot *w, uint64_t i)
{
    w += i / 2;
    return (i & 1) ? w->value : w->head;
}
/* The slots a compact COMMIT at s that carries a write set takes with it,
 * `left` slots from s on: 1 + tf_wset_slots(its entries), or 0 when the
 * record is not well formed (a write-set size of 0 or above TF_WSET_MAX,
 * more entries than words, cut at the end). */
static inline size_t tf_commit_carry_slots(const struct tf_slot *s, size_t left)
{
    uint64_t e = tf_commit_carried(s), n = tf_commit_carried_words(s);
    if (n == 0 || n > TF_WSET_MAX || e > n || 1 + tf_wset_slots(e) > left)
        return 0;
    return 1 + (size_t)tf_wset_slots(e);
}

/* Reads the record that starts at s[0], with `n` slots left, into *r, which
 * holds the record before it on entry when `have_prev` (a compact record
 * takes its CPU, site and stamp from there); `instance` is the instance id
 * in force before it (a folded START's is one more). Returns the slots the
 * record takes (1, 2, a write set's 2 + tf_wset_slots, or a COMMIT's with the
 * write set it carries: tf_commit_carry_slots; *r is the COMMIT; a folded
 * START's 1: *r is the START, tf_fold_commit makes the COMMIT), or 0
 * where the stream is not well formed: a compact record with no record
 * before it, a full record cut at the end, a kind out of range, a write
 * set's count 0, too large or cut at the end. */
static inline unsigned tf_slot_read(const struct tf_slot *s, size_t n, int have_prev, uint64_t instance,
                                    struct tf_record *r)
{
    if (tf_slot_is_compact(s)) {
        unsigned took = tf_commit_carried(s) ? (unsigned)tf_commit_carry_slots(s, n) : 1;
        if (!have_prev || took == 0)
            return 0;
        tf_compact_apply(s, r);
        if (tf_start_folded(s))
            r->addr = instance + 1;
        return took;
    }
    const struct tf_record *f = (const struct tf_record *)(const void *)s;
    if (n < 2 || f->kind == 0 || f->kind >= TF_EV_KINDS)
        return 0;
    if (f->kind == TF_EV_WSET && (f->addr == 0 || f->addr > TF_WSET_MAX || f->value > f->addr ||
                                  tf_wset_slots(tf_wset_entries(f)) > n - 2))
        return 0;
    *r = *f;
    return f->kind == TF_EV_WSET ? 2 + (unsigned)tf_wset_slots(tf_wset_entries(f)) : 2;
}

/* A thread's slot stream, read one piece at a time (codec_encode_slots,
 * tf_write_slots): the reader advances it. */
struct tf_slot_stream {
    const struct tf_slot *s;  /* the next slot */
    const uint64_t *truth;    /* NULL, or one uninjected TSC per slot, from s on */
    size_t left;              /* slots left */
    struct tf_record prev;    /* the record before s, when have_prev */
    int have_prev;
    uint64_t seq;             /* sequence number of the record at s */
    uint64_t instance;        /* instance id of the latest START before s */
};

/* The records of n slots, which hold whole records. */
size_t tf_slots_records(const struct tf_slot *s, size_t n);

/* An event as the codec decodes it and the tools work on it: a record
 * with its thread, sequence number and instance made explicit, its CPU
 * decoded and its stamp in the trace's time base. */
struct tf_event {
    uint64_t ts;        /* raw TSC (raw trace) or ns on the reference clock (synced) */
    uint64_t truth;     /* ground truth: uninjected TSC (raw) or ns (synced); 0 if none */
    uint64_t addr;
    uint64_t value;
    uint64_t instance;  /* dynamic attempt id (per thread) */
    uint64_t seq;       /* index of the event in its thread's program order */
    uint32_t thread;    /* tracer thread id (dense, from 1) */
    uint32_t site;
    uint16_t cpu;
    uint8_t kind;       /* enum tf_event_kind */
    uint8_t reason;
};

/* TSC_AUX -> CPU: Linux keeps (node << 12) | cpu there, so a CPU number has
 * 12 bits and there are at most TF_AUX_CPUS of them. */
#define TF_AUX_CPUS 4096u
static inline unsigned tf_aux_cpu(uint32_t aux) { return aux & (TF_AUX_CPUS - 1); }

/*
 * The `value` of an STM abort record (format version 2): what the aborting
 * attempt found on the conflicting stripe. Locked: TF_ABORT_HELD | the
 * holder's attempt (low 31 bits of its instance id) << 32 | the holder's
 * thread id (0 = unknown). Unlocked: the stripe's version, i.e. the write
 * version of the commit that last wrote it (always < 2^63).
 */
#define TF_ABORT_HELD (UINT64_C(1) << 63)
#define TF_ABORT_INSTANCE_MASK UINT64_C(0x7fffffff)

static inline uint64_t tf_abort_held(uint32_t thread, uint64_t instance)
{
    return TF_ABORT_HELD | (instance & TF_ABORT_INSTANCE_MASK) << 32 | thread;
}
static inline int tf_abort_is_held(uint64_t value) { return (value & TF_ABORT_HELD) != 0; }
static inline uint32_t tf_abort_holder_thread(uint64_t value) { return (uint32_t)value; }
static inline uint64_t tf_abort_holder_instance(uint64_t value)
{
    return (value >> 32) & TF_ABORT_INSTANCE_MASK;
}

/*
 * The lock stripe an address maps to, in a table of 2^log2 stripes each
 * covering 2^shift bytes. The STM locks with it and the tools attribute
 * conflicts with it, so it lives here, once. Blocks (addr >> shift) go in
 * groups of 2^log2, the table's reach: a block's stripe is its place in its
 * group XORed with the group number times an odd constant, from bit 36 of
 * the product (a fixed shift: no variable one on every access; the widest
 * table, 2^28, still takes every bit of the group). Consecutive blocks take
 * consecutive stripes (a table line serves an array's neighbours), and two
 * groups take unrelated offsets however far apart they lie. Version 4 and
 * before XORed the group number itself (tf_stripe_index_v4): two regions a
 * small multiple of the reach apart then collided block for block at a
 * small fixed distance, and glibc's thread heaps are 64 MiB apart, four
 * reaches of the default table, so each thread's allocations shared
 * stripes with the other's neighbouring ones (docs/design.md, "TL2 as
 * built"). Traces before version 3 hashed 8-byte words.
 */
#define TF_STRIPE_MIX UINT64_C(0x9E3779B97F4A7C15)
#define TF_STRIPE_MIX_SHIFT 36u
#define TF_STRIPE_SHIFT_V2 3u
/* The widths a run may record (TMTRACE_STRIPE_SHIFT): one 8-byte word to
 * one 4 KiB page. */
#define TF_STRIPE_SHIFT_MIN 3u
#define TF_STRIPE_SHIFT_MAX 12u
/* The stripe counts' log2 a run accepts (TMTRACE_STRIPES); tmcheck --stripes too. */
#define TF_STRIPES_LOG2_MIN 10u
#define TF_STRIPES_LOG2_MAX 28u
static inline uint64_t tf_stripe_index(uint64_t addr, unsigned log2, unsigned shift)
{
    uint64_t w = addr >> shift;
    return (w ^ (w >> log2) * TF_STRIPE_MIX >> TF_STRIPE_MIX_SHIFT) & ((UINT64_C(1) << log2) - 1);
}
static inline uint64_t tf_stripe_index_v4(uint64_t addr, unsigned log2, unsigned shift)
{
    uint64_t w = addr >> shift;
    return (w ^ (w >> log2)) & ((UINT64_C(1) << log2) - 1);
}

/* ---- header ----------------------------------------------------------- */

enum tf_header_flags {
    TF_HDR_SYNCED = 1u << 0,   /* timestamps are reference ns, events merged */
    TF_HDR_INJECTED = 1u << 1, /* clock faults were injected; truth present */
    TF_HDR_COUNTED = 1u << 2,  /* a measuring build's: stamps count records, not ticks */
};

/* How the records of one class were stamped (header, version 2). */
enum tf_stamp {
    TF_STAMP_UNKNOWN = 0,    /* not recorded (version 1: rdtscp, or repeated with TMTRACE_STAMP=boundary) */
    TF_STAMP_ORDERED = 1,    /* rdtscp: taken after every earlier instruction */
    TF_STAMP_UNORDERED = 2,  /* rdpid; rdtsc; rdpid naming one CPU: may be taken a few dozen cycles early */
    TF_STAMP_REPEATED = 3    /* no clock read: the stamp and CPU of the thread's previous stamped record */
};

/* Header stamp_flags. */
enum tf_stamp_flags {
    /* A thread's stamps on one CPU strictly increase in program order (an
     * unordered stamp that would not was raised at record time; stamps on
     * different CPUs are never adjusted). Repeated stamps equal the one
     * they repeat. */
    TF_STAMP_CPU_INCREASING = 1u << 0
};

/* ---- chunks ----------------------------------------------------------- */
/* A site known only by its code address (a call of the libitm ABI's
 * _ITM_beginTransaction): file "", line 0 and a label of this prefix
 * followed by the run-time address in hex ("pc:0x55d0c0de1234"). Tools
 * name it `function (file:line)` through the trace's load map. */
#define TF_SITE_PC_PREFIX "pc:0x"

enum tf_chunk_kind {
    TF_CHUNK_META_SITES = 1,   /* struct tf_site[] */
    TF_CHUNK_META_THREADS = 2, /* struct tf_thread_info[] (thread starts) */
    TF_CHUNK_META_SKEW = 3,    /* struct tf_skew[] */
    TF_CHUNK_SAMPLES = 4,      /* struct tf_sample[] */
    TF_CHUNK_EVENTS = 5,       /* one thread's contiguous run of records */
    TF_CHUNK_MODEL = 6,        /* struct tf_cpu_model[] (synced traces) */
    TF_CHUNK_END = 7,          /* struct tf_thread_info[] with final counts, + writer errors */
    TF_CHUNK_LOADMAP = 8,      /* struct tf_object[] (format version 2) */
    TF_CHUNK_RUNINFO = 9,      /* struct tf_runinfo (one; format version 2) */
    TF_CHUNK_KINDS = 10
};

/* Flags of an END chunk (chunk header `flags`; 0 in traces before them,
 * which readers of every version 1-3 trace accept). */
enum tf_end_flags {
    /* The fixed part is 16 bytes: writer_errors, then a u32 signal that
     * terminated the program (the END was written from the tracer's signal
     * path) and a u32 reserved. Without it the fixed part is writer_errors
     * alone and the program ended on its own. Writers set it only with a
     * signal, so an ordinary run's trace stays readable by older readers. */
    TF_END_SIGNAL = 1u << 0,
};

/* Flags of a META_THREADS chunk (chunk header `flags`; 0 in traces before
 * them). */
enum tf_threads_flags {
    /* Each element is 40 bytes: the 24 of tf_thread_info's counts, then the
     * thread's stack as u64 lowest and u64 one-past-highest address (both 0:
     * not known). Without it, elements are 24 bytes and no stack is known.
     * Set by every writer of format version 4 from this flag's introduction
     * (a reader that predates it refuses such a chunk's size). */
    TF_THREADS_STACK = 1u << 0,
};

enum tf_codec { TF_CODEC_NONE = 0, TF_CODEC_ZLIB = 1, TF_CODEC_LZ4 = 2, TF_CODECS = 3 };

/* Which phase of the run a clock sample was taken in (SAMPLES chunk). */
enum tf_sample_phase { TF_PHASE_PRE = 0, TF_PHASE_POST = 1, TF_PHASE_INRUN = 2 };

#endif
