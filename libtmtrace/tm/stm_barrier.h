/*
 * stm_barrier.h - the TL2 read and write barriers, static inline: the public
 * accessors (api/accessors.c) compile them in, so a transactional read or
 * write makes no call into another translation unit on its fast path (the
 * model is TinySTM's per-design barrier header). docs/design.md, "The hot path",
 * shows the whole path of a traced read.
 *
 * Owns: the fast halves of stm.c's reads and writes (stripe check, read-set
 * append, bloom test, redo-log append) and the byte-mask arithmetic they
 * share with stm.c. Their slow halves (a read of the thread's own write, a
 * full read set or redo log, a conflict) stay out of line in stm.c.
 * Never: allocates, calls the tracer, or touches anything but tx->stm, the
 * stripe table and the data word; included by the STM and the accessors
 * only (stm.h is the interface everyone else uses), and includes neither
 * stm.h nor anything else of the STM, so that stm.c can include it without
 * a cycle.
 */
#ifndef TMT_STM_BARRIER_H
#define TMT_STM_BARRIER_H

#include <stdint.h>

#include "trace_format.h"
#include "tx.h"
#include "tx_util.h"

/* stm.c's stripe table: set by stm_init before any transaction runs.
 * Declared hidden so that the accessors load them PC-relative, not through
 * the GOT. */
extern uintptr_t *stm_stripes __attribute__((visibility("hidden")));
extern unsigned stm_log2 __attribute__((visibility("hidden")));
extern uint64_t stm_mask __attribute__((visibility("hidden"))); /* 2^stm_log2 - 1 */
extern unsigned stm_shift __attribute__((visibility("hidden"))); /* TMTRACE_STRIPE_SHIFT */
/* The CPU has PREFETCHW (CPUID 0x80000001 ECX bit 8), which stm_commit.h
 * uses; set by stm_init. */
extern int stm_prefetchw __attribute__((visibility("hidden")));

/* Blocks of 2^stm_shift bytes (16 by default: two neighbouring words share
 * a stripe, so the table takes fewer cache misses, and since malloc aligns
 * blocks to 16 bytes which words share one depends on an object's layout,
 * never on where the allocator put it) hash onto stripes;
 * mixing the bits above the table size back in keeps regions placed a
 * multiple of the table's reach apart (two threads' heaps) from sharing
 * stripes in a pattern. tf_stripe_index with the mask kept ready. */
static inline uint64_t stm_hash_with(uintptr_t addr, unsigned shift, unsigned log2, uint64_t mask)
{
    uint64_t w = addr >> shift;
    return (w ^ (w >> log2) * TF_STRIPE_MIX >> TF_STRIPE_MIX_SHIFT) & mask;
}
static inline uint64_t stm_hash(uintptr_t addr) { return stm_hash_with(addr, stm_shift, stm_log2, stm_mask); }
static inline uintptr_t *stm_stripe(uintptr_t addr) { return &stm_stripes[stm_hash(addr)]; }

/* The table's parameters as one value, for loops over many stripes (a
 * commit's locks, a validation): copied into locals they stay in registers
 * across the atomic operations, which the compiler treats as barriers that
 * force every global and field to be loaded again. */
struct stm_table {
    uintptr_t *base;
    unsigned shift, log2;
    uint64_t mask;
};
static inline struct stm_table stm_table_now(void)
{
    return (struct stm_table){ stm_stripes, stm_shift, stm_log2, stm_mask };
}
static inline uintptr_t *stm_table_stripe(const struct stm_table *t, uintptr_t addr)
{
    return &t->base[stm_hash_with(addr, t->shift, t->log2, t->mask)];
}

/* ---- exact-size memory access -------------------------------------------- */

static inline uint32_t stm_byte_mask(uintptr_t a, unsigned size)
{
    return (((1u << size) - 1u) << (a & 7u)) & 0xffu;
}

/* The bit mask of a byte mask (byte i all ones when bit i is set), without a
 * loop: the multiplication puts bits 0-6 at bits 0, 8, ..., 48 (the shifted
 * copies are 7 bits apart, so nothing carries), bit 7 is moved to bit 56
 * directly; then every marked byte is filled. */
static inline uint64_t stm_bits(uint32_t bytes)
{
    uint64_t low = ((uint64_t)(bytes & 0x7fu) * 0x0002040810204081ull) & 0x0101010101010101ull;
    return (low | ((uint64_t)(bytes & 0x80u) << 49)) * 0xffu;
}

/* The bit mask of `size` bytes at a (naturally aligned). */
static inline uint64_t stm_size_bits(uintptr_t a, unsigned size)
{
    uint64_t b = size == 8 ? ~(uint64_t)0 : ((uint64_t)1 << (8 * size)) - 1;
    return b << (8 * (a & 7u));
}

static inline uint64_t stm_extract(uint64_t word, uintptr_t a, unsigned size)
{
    uint64_t v = word >> (8 * (a & 7u));
    return size == 8 ? v : v & (((uint64_t)1 << (8 * size)) - 1);
}

static inline uint64_t stm_bloom_bit(uintptr_t w) { return (uint64_t)1 << ((w >> 3) & 63); }

/* Whether the filter `f` has the bit of the word holding `a` (a bit test,
 * no mask built). */
static inline int stm_bloom_has(uint64_t f, uintptr_t a) { return (int)((f >> ((a >> 3) & 63)) & 1); }

/* The fast paths' one test (tx_stm.gate): clear means an untraced software
 * attempt runs and has not written the word holding `a`. */
static inline int stm_gate_open(const struct tmt_tx *tx, uintptr_t a) { return !stm_bloom_has(tx->stm.gate, a); }

/* ---- slow halves (stm.c), out of line so that the fast paths keep nothing
 * live across a call ---- */

/* A read whose stripe was locked, changed under the load or newer than rv:
 * waits for a lock's release and extends the snapshot where it can, then
 * returns the value with its read-set entry; otherwise rolls back and
 * restarts (tx_restart). */
__attribute__((noinline)) uint64_t stm_read_slow(struct tmt_tx *tx, uintptr_t a, unsigned size);
/* The read set is full: grows it, appends `a` and hands `val` back. */
__attribute__((noinline, cold)) uint64_t stm_rset_push_grow(struct tmt_tx *tx, uintptr_t a, uint64_t val);
/* A read of a word the bloom filter says this attempt may have written: one
 * copy per size (1, 4 or 8 bytes), chosen inline (the callers' sizes are
 * constants). */
__attribute__((noinline)) uint64_t stm_read_own_1(struct tmt_tx *tx, uintptr_t a);
__attribute__((noinline)) uint64_t stm_read_own_4(struct tmt_tx *tx, uintptr_t a);
__attribute__((noinline)) uint64_t stm_read_own_8(struct tmt_tx *tx, uintptr_t a);
static inline uint64_t stm_read_own(struct tmt_tx *tx, uintptr_t a, unsigned size)
{
    return size == 8 ? stm_read_own_8(tx, a) : size == 4 ? stm_read_own_4(tx, a) : stm_read_own_1(tx, a);
}
/* An append at or past wlimit: grows a full log, keeps a long one's index. */
__attribute__((noinline)) void stm_wappend_slow(struct tmt_tx *tx, uintptr_t w, uint64_t val, uint32_t bytes,
                                                uint64_t bb);
/* A write to a word the bloom filter says this attempt may have written. */
__attribute__((noinline)) void stm_write_again(struct tmt_tx *tx, uintptr_t w, uint64_t val, uint64_t bits,
                                               uint32_t bytes, uint64_t bb);

/* ---- reads ---- */

/* A stripe word rotated right by one: an unlocked word (version << 1) gives
 * its version, a locked one (address | 1) a value with the top bit set,
 * above every version. */
static inline uint64_t stm_word_version(uintptr_t v) { return (v >> 1) | ((uint64_t)v << 63); }

/* TL2 read: the stripe unlocked and unchanged around the data load, and not
 * newer than the start version, means the value belongs to the snapshot rv.
 * "Unlocked and not newer than rv" is one comparison on the rotated word.
 * Returns 1 with the value in *val, or 0 when the read needs the slow half
 * (stm_read_slow). The read set is the caller's. */
static inline int stm_load_try(struct tmt_tx *tx, uintptr_t a, unsigned size, uint64_t *val)
{
    uintptr_t *stripe = stm_stripe(a);
    uintptr_t v1 = __atomic_load_n(stripe, __ATOMIC_ACQUIRE);
    *val = tx_mem_load(a, size);
    uintptr_t v2 = __atomic_load_n(stripe, __ATOMIC_ACQUIRE);
    return v1 == v2 && stm_word_version(v1) <= tx->stm.rv;
}

static inline int stm_rset_room(const struct tx_stm *s) { return s->rn != s->rcap; }

/* A read-only attempt keeps no read set: it adds 0 (rinc) and so rewrites
 * rset[0] (rcap >= 1) instead of testing a flag. */
static inline void stm_rset_put(struct tx_stm *s, uintptr_t a)
{
    uint32_t n = s->rn;
    s->rset[n] = a;
    s->rn = n + s->rinc;
}

/* A valid read's read-set entry; hands `val` back (a full set grows out of
 * line, by a tail call). */
static inline uint64_t stm_rset_take(struct tmt_tx *tx, uintptr_t a, uint64_t val)
{
    if (TX_UNLIKELY(!stm_rset_room(&tx->stm)))
        return stm_rset_push_grow(tx, a, val);
    stm_rset_put(&tx->stm, a);
    return val;
}

/* The checked load and its read-set entry. Every way out of the common
 * case is a tail call, so the path keeps nothing live across a call. */
static inline uint64_t stm_load_checked(struct tmt_tx *tx, uintptr_t a, unsigned size)
{
    uint64_t val;
    if (TX_UNLIKELY(!stm_load_try(tx, a, size, &val)))
        return stm_read_slow(tx, a, size);
    return stm_rset_take(tx, a, val);
}

/* A transactional read of 1, 4 or 8 naturally aligned bytes, zero-extended;
 * it sees the transaction's own earlier writes. */
static inline uint64_t stm_read(struct tmt_tx *tx, uintptr_t a, unsigned size)
{
    if (TX_UNLIKELY(stm_bloom_has(tx->stm.bloom, a)))
        return stm_read_own(tx, a, size);
    return stm_load_checked(tx, a, size);
}

/* ---- writes ---- */

/* Word w (filter bit bb) becomes redo-log entry idx, the log's next, which
 * has room. The gate takes the bit too: no change unless the gate is the
 * filter, and then the fast paths must not pass the word any more. */
static inline void stm_wput(struct tx_stm *s, uint32_t idx, uintptr_t w, uint64_t val, uint32_t bytes, uint64_t bb)
{
    struct tx_wentry *e = &s->wset[idx];
    e->addr = w;
    e->value = val;
    e->mask = bytes;
    s->wn = idx + 1;
    s->bloom |= bb;
    s->gate |= bb;
}

/* Appends a new word to the redo log (`tx`, not tx->stm, is what the slow
 * half takes: one register fewer on the fast path). */
static inline void stm_wappend(struct tmt_tx *tx, uintptr_t w, uint64_t val, uint32_t bytes, uint64_t bb)
{
    struct tx_stm *s = &tx->stm;
    uint32_t idx = s->wn;
    if (TX_UNLIKELY(idx >= s->wlimit)) {
        stm_wappend_slow(tx, w, val, bytes, bb);
        return;
    }
    stm_wput(s, idx, w, val, bytes, bb);
}

/* A transactional write of 1, 4 or 8 naturally aligned bytes (the low
 * `size` bytes of v) into the redo log. */
static inline void stm_write(struct tmt_tx *tx, uintptr_t a, uint64_t v, unsigned size)
{
    struct tx_stm *s = &tx->stm;
    if (size == 8)
        a &= ~(uintptr_t)7; /* aligned by contract: lets the masks fold to constants */
    uintptr_t w = a & ~(uintptr_t)7;
    uint32_t bytes = stm_byte_mask(a, size);
    uint64_t bits = stm_size_bits(a, size);
    uint64_t val = (v << (8 * (a & 7u))) & bits;
    uint64_t bb = stm_bloom_bit(w);
    if (TX_UNLIKELY(s->bloom & bb)) {
        stm_write_again(tx, w, val, bits, bytes, bb);
        return;
    }
    stm_wappend(tx, w, val, bytes, bb);
}

/* Appends a write to the redo log and returns 1 when the word's bit is clear
 * in `filter` and the log is short of wlimit (0 in a read-only attempt,
 * STM_WLINEAR else: a longer log's appends also index it); else 0 and
 * nothing done. */
static inline int stm_write_new(struct tmt_tx *tx, uint64_t filter, uintptr_t a, uint64_t v, unsigned size)
{
    struct tx_stm *s = &tx->stm;
    if (size == 8)
        a &= ~(uintptr_t)7; /* aligned by contract: lets the masks fold to constants */
    uintptr_t w = a & ~(uintptr_t)7;
    uint64_t bb = stm_bloom_bit(w);
    uint32_t idx = s->wn;
    if (TX_UNLIKELY((filter & bb) || idx >= s->wlimit))
        return 0;
    stm_wput(s, idx, w, (v << (8 * (a & 7u))) & stm_size_bits(a, size), stm_byte_mask(a, size), bb);
    return 1;
}

/* The accessors' write: stm_write_new against the gate. When it returns 0
 * the caller takes its slow path, which dispatches on the mode and the
 * trace level and calls stm_write. */
static inline int stm_write_fast(struct tmt_tx *tx, uintptr_t a, uint64_t v, unsigned size)
{
    return stm_write_new(tx, tx->stm.gate, a, v, size);
}

#endif
