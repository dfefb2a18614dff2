/*
 * itm_barrier.c - the libitm ABI's memory barriers: the typed reads and
 * writes (_ITM_R*, _ITM_W* for U1..U8, F, D, E, CF, CD, CE, M64, M128, M256
 * in every RaR/RaW/RfW/WaR/WaW flavour) and the transactional memcpy,
 * memmove and memset.
 *
 * Owns: splitting any access into the naturally aligned 1-, 4- and 8-byte
 * pieces the runtime's accessors take (a 2-byte, unaligned or wider access
 * becomes several, all in the same attempt, so it stays atomic), and
 * telling the transaction's own frames (itm_own_stack, itm.h), which are
 * accessed in place, from the memory that goes through the accessors. The
 * flavours only tell the STM what it already knows, so all of a type share
 * one body. Never: touches shared memory except through the accessors
 * (plain memory only for the ABI's non-transactional side of a copy and
 * for the transaction's own frames).
 */
#include <string.h>

#include "itm.h"
#include "stm.h"
#include "trace_buffer.h"

/* ---- any size, any alignment ------------------------------------------------ */

void itm_read_bytes(struct tmt_tx *tx, void *dst, const void *src, size_t n)
{
    size_t own = tx == NULL ? n : itm_own_stack((uintptr_t)src, n);
    memcpy(dst, src, own); /* plain memory, or the transaction's own frames */
    unsigned char *d = (unsigned char *)dst + own;
    uintptr_t a = (uintptr_t)src + own;
    n -= own;
    while (n > 0) {
        if ((a & 7) == 0 && n >= 8) {
            int64_t v = tmt_read_i64(tx, (const volatile int64_t *)a);
            memcpy(d, &v, 8);
            a += 8, d += 8, n -= 8;
        } else if ((a & 3) == 0 && n >= 4) {
            int32_t v = tmt_read_i32(tx, (const volatile int32_t *)a);
            memcpy(d, &v, 4);
            a += 4, d += 4, n -= 4;
        } else {
            *d = tmt_read_u8(tx, (const volatile uint8_t *)a);
            a += 1, d += 1, n -= 1;
        }
    }
}

void itm_write_bytes(struct tmt_tx *tx, void *dst, const void *src, size_t n)
{
    if (tx == NULL) {
        memcpy(dst, src, n);
        return;
    }
    size_t own = itm_own_stack((uintptr_t)dst, n);
    if (own > 0)
        itm_own_stack_write(dst, src, own);
    const unsigned char *s = (const unsigned char *)src + own;
    uintptr_t a = (uintptr_t)dst + own;
    n -= own;
    while (n > 0) {
        if ((a & 7) == 0 && n >= 8) {
            int64_t v;
            memcpy(&v, s, 8);
            tmt_write_i64(tx, (volatile int64_t *)a, v);
            a += 8, s += 8, n -= 8;
        } else if ((a & 3) == 0 && n >= 4) {
            int32_t v;
            memcpy(&v, s, 4);
            tmt_write_i32(tx, (volatile int32_t *)a, v);
            a += 4, s += 4, n -= 4;
        } else {
            tmt_write_u8(tx, (volatile uint8_t *)a, *s);
            a += 1, s += 1, n -= 1;
        }
    }
}

/* ---- words: one accessor call when naturally aligned ------------------------ */

/* A serial attempt that records no access (a lone thread's, mostly: see
 * itm_begin) reads in place and writes in place with the runtime's undo
 * log; the barriers call those two directly rather than through the
 * accessors' dispatch, which would find the same after three calls. */
static inline int itm_in_place(const struct tmt_tx *tx)
{
    return TX_UNLIKELY(tx_is_serial(tx)) && !tb_records_accesses(&tx->trace);
}

static inline uint64_t itm_rd(const void *p, unsigned size)
{
    struct tmt_tx *tx = itm_tx;
    uintptr_t a = (uintptr_t)p;
    if (TX_LIKELY(tx != NULL && (a & (size - 1)) == 0 && size != 2)) {
        if (itm_in_place(tx))
            return stm_serial_read(tx, a, size); /* the own frames too: in place either way */
        if (!itm_own_stack(a, size)) {
            if (size == 8)
                return (uint64_t)tmt_read_i64(tx, (const volatile int64_t *)p);
            if (size == 4)
                return (uint32_t)tmt_read_i32(tx, (const volatile int32_t *)p);
            return tmt_read_u8(tx, (const volatile uint8_t *)p);
        }
    }
    uint64_t v = 0;
    itm_read_bytes(tx, &v, p, size);
    return v;
}

static inline void itm_wr(void *p, uint64_t v, unsigned size)
{
    struct tmt_tx *tx = itm_tx;
    uintptr_t a = (uintptr_t)p;
    if (TX_LIKELY(tx != NULL && (a & (size - 1)) == 0 && size != 2 && !itm_own_stack(a, size))) {
        if (itm_in_place(tx))
            stm_serial_write(tx, a, v, size);
        else if (size == 8)
            tmt_write_i64(tx, (volatile int64_t *)p, (int64_t)v);
        else if (size == 4)
            tmt_write_i32(tx, (volatile int32_t *)p, (int32_t)(uint32_t)v);
        else
            tmt_write_u8(tx, (volatile uint8_t *)p, (uint8_t)v);
        return;
    }
    itm_write_bytes(tx, p, &v, size);
}

/* Integers and the floating types that fit a word: the value's bits. */
#define ITM_WORD_BARRIERS(T, type)                                                                  \
    static inline type itm_r_##T(const type *p)                                                     \
    {                                                                                               \
        uint64_t bits = itm_rd(p, sizeof(type));                                                    \
        type v;                                                                                     \
        memcpy(&v, &bits, sizeof v);                                                                \
        return v;                                                                                   \
    }                                                                                               \
    static inline void itm_w_##T(type *p, type v)                                                   \
    {                                                                                               \
        uint64_t bits = 0;                                                                          \
        memcpy(&bits, &v, sizeof v);                                                                \
        itm_wr(p, bits, sizeof(type));                                                              \
    }

/* Wider types: their bytes, split by itm_read_bytes/itm_write_bytes.
 * `bytes` is what a store of the type writes (10 for x87 long double). */
#define ITM_WIDE_BARRIERS(T, type, bytes, attr)                                                     \
    attr static inline type itm_r_##T(const type *p)                                                \
    {                                                                                               \
        type v;                                                                                     \
        memset(&v, 0, sizeof v);                                                                    \
        itm_read_bytes(itm_tx, &v, p, bytes);                                                       \
        return v;                                                                                   \
    }                                                                                               \
    attr static inline void itm_w_##T(type *p, type v) { itm_write_bytes(itm_tx, p, &v, bytes); }

/* The seven ABI entry points of a type. */
#define ITM_BARRIERS(T, type, attr)                                                                 \
    attr ITM_ABI type _ITM_R##T(const type *p) { return itm_r_##T(p); }                             \
    attr ITM_ABI type _ITM_RaR##T(const type *p) { return itm_r_##T(p); }                           \
    attr ITM_ABI type _ITM_RaW##T(const type *p) { return itm_r_##T(p); }                           \
    attr ITM_ABI type _ITM_RfW##T(const type *p) { return itm_r_##T(p); }                           \
    attr ITM_ABI void _ITM_W##T(type *p, type v) { itm_w_##T(p, v); }                               \
    attr ITM_ABI void _ITM_WaR##T(type *p, type v) { itm_w_##T(p, v); }                             \
    attr ITM_ABI void _ITM_WaW##T(type *p, type v) { itm_w_##T(p, v); }

typedef long double _Complex itm_ce;
#define ITM_NOATTR
#define ITM_AVX __attribute__((target("avx")))

ITM_WORD_BARRIERS(U1, uint8_t)
ITM_WORD_BARRIERS(U2, uint16_t)
ITM_WORD_BARRIERS(U4, uint32_t)
ITM_WORD_BARRIERS(U8, uint64_t)
ITM_WORD_BARRIERS(F, float)
ITM_WORD_BARRIERS(D, double)
ITM_WORD_BARRIERS(M64, itm_m64)
ITM_WIDE_BARRIERS(CF, float _Complex, sizeof(float _Complex), ITM_NOATTR)
ITM_WIDE_BARRIERS(CD, double _Complex, sizeof(double _Complex), ITM_NOATTR)
ITM_WIDE_BARRIERS(E, long double, 10, ITM_NOATTR)
ITM_WIDE_BARRIERS(M128_bytes, itm_m128, sizeof(itm_m128), ITM_NOATTR)
ITM_WIDE_BARRIERS(M256_bytes, itm_m256, sizeof(itm_m256), ITM_AVX)

/* Vectors (GCC vectorises loops over shared arrays into them): aligned ones
 * are whole words, assembled in registers (a vector loaded from words just
 * stored would stall on store forwarding). */
typedef long long itm_v2di __attribute__((vector_size(16)));
typedef long long itm_v4di __attribute__((vector_size(32)));

static inline itm_m128 itm_r_M128(const itm_m128 *p)
{
    struct tmt_tx *tx = itm_tx;
    if (TX_LIKELY(tx != NULL && ((uintptr_t)p & 7) == 0 && !itm_own_stack((uintptr_t)p, sizeof *p))) {
        const volatile int64_t *q = (const volatile int64_t *)p;
        long long a = tmt_read_i64(tx, q), b = tmt_read_i64(tx, q + 1);
        return (itm_m128)(itm_v2di){ a, b };
    }
    return itm_r_M128_bytes(p);
}

static inline void itm_w_M128(itm_m128 *p, itm_m128 v)
{
    struct tmt_tx *tx = itm_tx;
    if (TX_LIKELY(tx != NULL && ((uintptr_t)p & 7) == 0 && !itm_own_stack((uintptr_t)p, sizeof *p))) {
        itm_v2di w = (itm_v2di)v;
        tmt_write_i64(tx, (volatile int64_t *)p, w[0]);
        tmt_write_i64(tx, (volatile int64_t *)p + 1, w[1]);
        return;
    }
    itm_w_M128_bytes(p, v);
}

ITM_AVX static inline itm_m256 itm_r_M256(const itm_m256 *p)
{
    struct tmt_tx *tx = itm_tx;
    if (TX_LIKELY(tx != NULL && ((uintptr_t)p & 7) == 0 && !itm_own_stack((uintptr_t)p, sizeof *p))) {
        const volatile int64_t *q = (const volatile int64_t *)p;
        long long a = tmt_read_i64(tx, q), b = tmt_read_i64(tx, q + 1);
        long long c = tmt_read_i64(tx, q + 2), d = tmt_read_i64(tx, q + 3);
        return (itm_m256)(itm_v4di){ a, b, c, d };
    }
    return itm_r_M256_bytes(p);
}

ITM_AVX static inline void itm_w_M256(itm_m256 *p, itm_m256 v)
{
    struct tmt_tx *tx = itm_tx;
    if (TX_LIKELY(tx != NULL && ((uintptr_t)p & 7) == 0 && !itm_own_stack((uintptr_t)p, sizeof *p))) {
        itm_v4di w = (itm_v4di)v;
        for (int i = 0; i < 4; i++)
            tmt_write_i64(tx, (volatile int64_t *)p + i, w[i]);
        return;
    }
    itm_w_M256_bytes(p, v);
}

/* A complex long double is two x87 values 16 bytes apart: 10 bytes each. */
static inline itm_ce itm_r_CE(const itm_ce *p)
{
    long double part[2] = { 0, 0 };
    itm_read_bytes(itm_tx, &part[0], p, 10);
    itm_read_bytes(itm_tx, &part[1], (const char *)p + sizeof(long double), 10);
    itm_ce v;
    memcpy(&v, part, sizeof v);
    return v;
}
static inline void itm_w_CE(itm_ce *p, itm_ce v)
{
    long double part[2];
    memcpy(part, &v, sizeof part);
    itm_write_bytes(itm_tx, p, &part[0], 10);
    itm_write_bytes(itm_tx, (char *)p + sizeof(long double), &part[1], 10);
}

ITM_BARRIERS(U1, uint8_t, ITM_NOATTR)
ITM_BARRIERS(U2, uint16_t, ITM_NOATTR)
ITM_BARRIERS(U4, uint32_t, ITM_NOATTR)
ITM_BARRIERS(U8, uint64_t, ITM_NOATTR)
ITM_BARRIERS(F, float, ITM_NOATTR)
ITM_BARRIERS(D, double, ITM_NOATTR)
ITM_BARRIERS(E, long double, ITM_NOATTR)
ITM_BARRIERS(CF, float _Complex, ITM_NOATTR)
ITM_BARRIERS(CD, double _Complex, ITM_NOATTR)
ITM_BARRIERS(CE, itm_ce, ITM_NOATTR)
ITM_BARRIERS(M64, itm_m64, ITM_NOATTR)
ITM_BARRIERS(M128, itm_m128, ITM_NOATTR)
ITM_BARRIERS(M256, itm_m256, ITM_AVX)

/* ---- memcpy, memmove, memset -------------------------------------------------- */

/* Copies through a bounce buffer, reading transactionally when `rt`, writing
 * transactionally when `wt`; backwards when the destination overlaps the
 * end of the source (memmove). */
static void itm_copy(void *dst, const void *src, size_t n, int rt, int wt)
{
    struct tmt_tx *tx = itm_tx;
    unsigned char buf[256];
    uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
    int back = d > s && d < s + n;
    for (size_t done = 0; done < n;) {
        size_t k = n - done < sizeof buf ? n - done : sizeof buf;
        size_t off = back ? n - done - k : done;
        itm_read_bytes(rt ? tx : NULL, buf, (const void *)(s + off), k);
        itm_write_bytes(wt ? tx : NULL, (void *)(d + off), buf, k);
        done += k;
    }
}

/* Rn: the source is not shared; Wn: neither is the destination. The aR/aW
 * qualifiers (after a read, after a write) change nothing here. */
#define ITM_COPY_FNS(name)                                                                          \
    ITM_ABI void _ITM_##name##RnWt(void *d, const void *s, size_t n) { itm_copy(d, s, n, 0, 1); }   \
    ITM_ABI void _ITM_##name##RnWtaR(void *d, const void *s, size_t n) { itm_copy(d, s, n, 0, 1); } \
    ITM_ABI void _ITM_##name##RnWtaW(void *d, const void *s, size_t n) { itm_copy(d, s, n, 0, 1); } \
    ITM_ABI void _ITM_##name##RtWn(void *d, const void *s, size_t n) { itm_copy(d, s, n, 1, 0); }   \
    ITM_ABI void _ITM_##name##RtWt(void *d, const void *s, size_t n) { itm_copy(d, s, n, 1, 1); }   \
    ITM_ABI void _ITM_##name##RtWtaR(void *d, const void *s, size_t n) { itm_copy(d, s, n, 1, 1); } \
    ITM_ABI void _ITM_##name##RtWtaW(void *d, const void *s, size_t n) { itm_copy(d, s, n, 1, 1); } \
    ITM_ABI void _ITM_##name##RtaRWn(void *d, const void *s, size_t n) { itm_copy(d, s, n, 1, 0); } \
    ITM_ABI void _ITM_##name##RtaRWt(void *d, const void *s, size_t n) { itm_copy(d, s, n, 1, 1); } \
    ITM_ABI void _ITM_##name##RtaRWtaR(void *d, const void *s, size_t n) { itm_copy(d, s, n, 1, 1); } \
    ITM_ABI void _ITM_##name##RtaRWtaW(void *d, const void *s, size_t n) { itm_copy(d, s, n, 1, 1); } \
    ITM_ABI void _ITM_##name##RtaWWn(void *d, const void *s, size_t n) { itm_copy(d, s, n, 1, 0); } \
    ITM_ABI void _ITM_##name##RtaWWt(void *d, const void *s, size_t n) { itm_copy(d, s, n, 1, 1); } \
    ITM_ABI void _ITM_##name##RtaWWtaR(void *d, const void *s, size_t n) { itm_copy(d, s, n, 1, 1); } \
    ITM_ABI void _ITM_##name##RtaWWtaW(void *d, const void *s, size_t n) { itm_copy(d, s, n, 1, 1); }

ITM_COPY_FNS(memcpy)
ITM_COPY_FNS(memmove)

static void itm_set(void *dst, int c, size_t n)
{
    struct tmt_tx *tx = itm_tx;
    unsigned char buf[256];
    memset(buf, c, n < sizeof buf ? n : sizeof buf);
    for (size_t done = 0; done < n;) {
        size_t k = n - done < sizeof buf ? n - done : sizeof buf;
        itm_write_bytes(tx, (char *)dst + done, buf, k);
        done += k;
    }
}

ITM_ABI void _ITM_memsetW(void *d, int c, size_t n) { itm_set(d, c, n); }
ITM_ABI void _ITM_memsetWaR(void *d, int c, size_t n) { itm_set(d, c, n); }
ITM_ABI void _ITM_memsetWaW(void *d, int c, size_t n) { itm_set(d, c, n); }
