/*
 * accessors.c - the typed accessors of tmtrace.h (tmt_read_* and
 * tmt_write_*): the event path of every transactional read and write.
 *
 * Owns: the dispatch of an access on the attempt's mode and the trace level
 * (the STM's inline barriers when the gate is open; out of line, per size,
 * the traced software path, serial attempts, hardware attempts and plain
 * memory outside transactions) and the read/write records. In api/, not
 * beside stm_barrier.h in tm/: these are public entry points (TMT_API) that
 * join three layers below them (the STM's barriers, the hardware path and
 * serial mode, the tracer's inline hooks), while tm/ exports nothing and
 * knows no public symbol; the barriers they compile in stay the STM's.
 * Never: makes a call on the fast path (a read or write of an untraced
 * software attempt is one function body, docs/design.md, "The hot path"),
 * allocates, or holds state of its own.
 */
/* This file defines the exported readers, whose names tmtrace.h otherwise
 * maps onto its inline ones. */
#define TMT_NO_INLINE_ACCESS 1

#include <stdint.h>
#include <string.h>

#include "clock.h"
#include "htm.h"
#include "stm.h"
#include "stm_barrier.h"
#include "tmtrace.h"
#include "trace_buffer.h"
#include "trace_format.h"
#include "tx.h"
#include "tx_life.h"
#include "tx_undo.h"
#include "tx_util.h"

/* ---- accesses -------------------------------------------------------------------- */

/* The program's call of the access, for a conflict's ABORT_PC: optimised
 * builds reach stm_read_slow from the accessor by tail calls, so its own
 * return address is that call and nothing is stored. Builds that keep a
 * frame in the accessor (no optimisation, AddressSanitizer's and
 * ThreadSanitizer's instrumentation) make calls instead: there the accessor
 * names its caller in tx_stm.access_pc on its slow branch, before the call
 * (never on the fast path). */
#if !defined(__OPTIMIZE__) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define API_NAMES_CALLER 1
#else
#define API_NAMES_CALLER 0
#endif
#define API_NAME_CALLER(tx)                                                                 \
    do {                                                                                    \
        if (API_NAMES_CALLER)                                                               \
            (tx)->stm.access_pc = (uint64_t)(uintptr_t)__builtin_return_address(0);         \
    } while (0)

/* A software read recorded in the trace, every case (a word the attempt
 * may have written, a full read set). */
__attribute__((noinline)) static uint64_t api_read_traced_any(tmt_tx *tx, const volatile void *addr, unsigned size)
{
    /* stm_read_slow is called from here, not tail-called: the program's
     * call of the access (this function's return address: the accessor and
     * api_read_slow_N reach it by tail calls), unless the accessor named
     * it (API_NAMES_CALLER). */
    int mark = tx->stm.access_pc == 0;
    if (mark)
        tx->stm.access_pc = (uint64_t)(uintptr_t)__builtin_return_address(0);
    uint64_t v = stm_read(tx, (uintptr_t)addr, size);
    if (mark)
        tx->stm.access_pc = 0;
    tb_ev_read(&tx->trace, addr, v, size);
    return v;
}

/* A software read recorded in the trace, inlined into api_read_slow_N, so
 * the size is a constant. The common case: a word the attempt has not
 * written, room in the read set (tested before the load, so that no call
 * comes between the load and the record) and a value valid at rv;
 * everything else (a conflict too: api_read_traced_any reads again through
 * stm_read_slow), and a record that is not the common one, ends in a tail
 * call, so this path saves no registers. */
static inline __attribute__((always_inline)) uint64_t api_read_traced(tmt_tx *tx, const volatile void *addr,
                                                                      unsigned size)
{
    uintptr_t a = (uintptr_t)addr;
    uint64_t v;
    if (TX_UNLIKELY(stm_bloom_has(tx->stm.bloom, a) || !stm_rset_room(&tx->stm) || !stm_load_try(tx, a, size, &v)))
        return api_read_traced_any(tx, addr, size);
    stm_rset_put(&tx->stm, a);
    return tb_access(&tx->trace, TF_EV_READ, size, a, v);
}

/* A serial read, recorded at level all (out of line; api_read reads an
 * untraced one, a lone thread's mostly, itself). */
__attribute__((noinline)) static uint64_t api_read_serial(tmt_tx *tx, const volatile void *addr, unsigned size)
{
    uint64_t v = stm_serial_read(tx, (uintptr_t)addr, size);
    tb_ev_read(&tx->trace, addr, v, size);
    return v;
}

/* Every read the gate turns away: outside transactions, a word the attempt
 * may have written, tracing, serial and hardware attempts. Out of line, so
 * that the untraced path ends in a tail call into the STM and keeps nothing
 * across a call; one copy per size (api_read_slow_N), so that a traced
 * read's masks and record head fold to constants. */
static inline __attribute__((always_inline)) uint64_t api_read_slow(tmt_tx *tx, const volatile void *addr,
                                                                    unsigned size)
{
    uintptr_t a = (uintptr_t)addr;
    if (TX_LIKELY(tx->mode == TX_MODE_STM)) {
        if (TX_UNLIKELY(tb_records_accesses(&tx->trace)))
            return api_read_traced(tx, addr, size);
        /* Untraced, the gate is the bloom filter: its bit is set, so
         * stm_read would go to stm_read_own; no second test. */
        return stm_read_own(tx, a, size);
    }
    if (tx->mode == TX_MODE_NONE)
        return tx_mem_load(a, size);
    if (tx->mode == TX_MODE_SERIAL)
        return api_read_serial(tx, addr, size); /* traced: api_read reads an untraced one */
    return htm_read(tx, a, size);
}

__attribute__((noinline)) static uint64_t api_read_slow_1(tmt_tx *tx, const volatile void *addr)
{
    return api_read_slow(tx, addr, 1);
}
__attribute__((noinline)) static uint64_t api_read_slow_4(tmt_tx *tx, const volatile void *addr)
{
    return api_read_slow(tx, addr, 4);
}
__attribute__((noinline)) static uint64_t api_read_slow_8(tmt_tx *tx, const volatile void *addr)
{
    return api_read_slow(tx, addr, 8);
}

/* The gate (tx_stm.gate) is open only in an untraced software attempt, for
 * words it has not written: then the read is the STM's checked load and
 * nothing else is tested. `size` is a constant: 1, 4 or 8. */
static inline uint64_t api_read(tmt_tx *tx, const volatile void *addr, unsigned size)
{
    uintptr_t a = (uintptr_t)addr;
    if (TMT_CLOCK_FLOOR >= 2)
        clock_floor_read(); /* a measuring build's stamp per access (clock.h) */
    if (TX_LIKELY(stm_gate_open(tx, a))) {
        if (!API_NAMES_CALLER)
            return stm_load_checked(tx, a, size);
        uint64_t v;
        if (TX_LIKELY(stm_load_try(tx, a, size, &v)))
            return stm_rset_take(tx, a, v);
        API_NAME_CALLER(tx);
        return stm_read_slow(tx, a, size);
    }
    /* Behind the gate, where the STM's path does not reach: an attempt in
     * place that records no access (tmt_tx_head.in_place: a serial attempt
     * untraced or at `tx`, a lone thread's mostly, tx_life.h) reads here, with no
     * second call, and counts nothing (the count is for the COMMIT record;
     * an increment in memory per read would chain the reads). What
     * tmtrace.h's inline readers do in the program, for callers that do
     * not inline them (other languages, TMT_NO_INLINE_ACCESS). A build
     * that stamps every access keeps the flag clear (tx_life.c), so that
     * the program's reads come here, and tests the mode and level. */
    if (TMT_CLOCK_FLOOR >= 2 ? tx->mode == TX_MODE_SERIAL && !tx_traced(tx) : tx->head.in_place != 0)
        return tx_mem_load(a, size);
    API_NAME_CALLER(tx);
    return size == 8 ? api_read_slow_8(tx, addr) : size == 4 ? api_read_slow_4(tx, addr) : api_read_slow_1(tx, addr);
}

/* A software write recorded in the trace, every case (see
 * api_read_traced_any). */
__attribute__((noinline)) static void api_write_traced_any(tmt_tx *tx, volatile void *addr, uint64_t v, unsigned size)
{
    stm_write(tx, (uintptr_t)addr, v, size);
    tb_ev_write(&tx->trace, addr, v, size);
}

/* A software write recorded in the trace (see api_read_traced): the common
 * case is a word new to the redo log, with room. */
static inline __attribute__((always_inline)) void api_write_traced(tmt_tx *tx, volatile void *addr, uint64_t v,
                                                                   unsigned size)
{
    uintptr_t a = (uintptr_t)addr;
    if (TX_UNLIKELY(!stm_write_new(tx, tx->stm.bloom, a, v, size))) {
        api_write_traced_any(tx, addr, v, size);
        return;
    }
    (void)tb_access(&tx->trace, TF_EV_WRITE, size, a, v);
}

/* A serial write, recorded at level all (out of line, see api_read_serial). */
__attribute__((noinline)) static void api_write_serial(tmt_tx *tx, volatile void *addr, uint64_t v, unsigned size)
{
    stm_serial_write(tx, (uintptr_t)addr, v, size);
    tb_ev_write(&tx->trace, addr, v, size);
}

/* Every write the gate turns away (see api_read_slow), and the write that
 * fills the redo log or is the first of a read-only attempt; one copy per
 * size (api_write_slow_N). */
static inline __attribute__((always_inline)) void api_write_slow(tmt_tx *tx, volatile void *addr, uint64_t v,
                                                                 unsigned size)
{
    uintptr_t a = (uintptr_t)addr;
    /* First a serial write that records no access (at tx, or untraced in
     * a build that stamps every access; other untraced ones take
     * api_write_in_place_N): in place after logging the old bytes, the
     * size a constant. */
    if (tx->mode == TX_MODE_SERIAL && !tb_records_accesses(&tx->trace)) {
        tx_undo_write(&tx->stm.undo, &tx->stm.nundo, &tx->stm.undocap, a, v, size);
        return;
    }
    if (TX_LIKELY(tx->mode == TX_MODE_STM)) {
        if (TX_UNLIKELY(tx->stm.ro))
            tx_demote(tx, a);
        if (TX_UNLIKELY(tb_records_accesses(&tx->trace)))
            api_write_traced(tx, addr, v, size);
        else
            stm_write(tx, a, v, size);
        return;
    }
    if (tx->mode == TX_MODE_NONE) {
        tx_mem_store(a, v, size);
    } else if (tx->mode == TX_MODE_SERIAL) {
        api_write_serial(tx, addr, v, size); /* traced */
    } else {
        htm_write(tx, a, v, size);
    }
}

/* Out-of-line copies of an always-inline write path, one per size (name_1,
 * name_4, name_8), so that the size is a constant in each; and the call of
 * the copy for a constant size. */
#define API_WRITE_COPIES(name)                                                              \
    __attribute__((noinline)) static void name##_1(tmt_tx *tx, volatile void *addr, uint64_t v) \
    {                                                                                       \
        name(tx, addr, v, 1);                                                               \
    }                                                                                       \
    __attribute__((noinline)) static void name##_4(tmt_tx *tx, volatile void *addr, uint64_t v) \
    {                                                                                       \
        name(tx, addr, v, 4);                                                               \
    }                                                                                       \
    __attribute__((noinline)) static void name##_8(tmt_tx *tx, volatile void *addr, uint64_t v) \
    {                                                                                       \
        name(tx, addr, v, 8);                                                               \
    }
#define API_WRITE_CALL(name, tx, addr, v, size)                                             \
    ((size) == 8 ? name##_8(tx, addr, v) : (size) == 4 ? name##_4(tx, addr, v) : name##_1(tx, addr, v))

API_WRITE_COPIES(api_write_slow)

/* A write of an attempt in place that records no access (tmt_tx_head's
 * in_place: a serial attempt untraced or at `tx`, a lone thread's mostly): the old
 * bytes to the undo log, then the store. One copy per size
 * (api_write_in_place_N), out of line and apart from api_write_slow_N, and
 * a leaf: a full log grows in api_write_in_place_grow, reached by a tail
 * call, so that the write saves no registers. */
__attribute__((noinline, cold)) static void api_write_in_place_grow(tmt_tx *tx, volatile void *addr, uint64_t v,
                                                                    unsigned size)
{
    tx_undo_write(&tx->stm.undo, &tx->stm.nundo, &tx->stm.undocap, (uintptr_t)addr, v, size);
}
static inline __attribute__((always_inline)) void api_write_in_place(tmt_tx *tx, volatile void *addr, uint64_t v,
                                                                     unsigned size)
{
    if (TX_UNLIKELY(tx->stm.nundo == tx->stm.undocap)) {
        api_write_in_place_grow(tx, addr, v, size);
        return;
    }
    tx_undo_write(&tx->stm.undo, &tx->stm.nundo, &tx->stm.undocap, (uintptr_t)addr, v, size);
}
API_WRITE_COPIES(api_write_in_place)

/* `size` is a constant: 1, 4 or 8 (see api_read). */
static inline void api_write(tmt_tx *tx, volatile void *addr, uint64_t v, unsigned size)
{
    if (TMT_CLOCK_FLOOR >= 2)
        clock_floor_read();
    if (TX_LIKELY(stm_write_fast(tx, (uintptr_t)addr, v, size)))
        return;
    /* Behind the gate, before the general dispatch (see api_read). */
    if (tx->head.in_place)
        API_WRITE_CALL(api_write_in_place, tx, addr, v, size);
    else
        API_WRITE_CALL(api_write_slow, tx, addr, v, size);
}

TMT_API uintptr_t tmt_read_word(tmt_tx *tx, const volatile uintptr_t *addr)
{
    return (uintptr_t)api_read(tx, addr, sizeof *addr);
}
TMT_API void tmt_write_word(tmt_tx *tx, volatile uintptr_t *addr, uintptr_t value)
{
    api_write(tx, addr, value, sizeof *addr);
}
TMT_API long tmt_read_long(tmt_tx *tx, const volatile long *addr)
{
    return (long)api_read(tx, addr, sizeof *addr);
}
TMT_API void tmt_write_long(tmt_tx *tx, volatile long *addr, long value)
{
    api_write(tx, addr, (uint64_t)value, sizeof *addr);
}
TMT_API void *tmt_read_ptr(tmt_tx *tx, void *const volatile *addr)
{
    return (void *)(uintptr_t)api_read(tx, addr, sizeof *addr);
}
TMT_API void tmt_write_ptr(tmt_tx *tx, void *volatile *addr, void *value)
{
    api_write(tx, addr, (uintptr_t)value, sizeof *addr);
}
TMT_API int64_t tmt_read_i64(tmt_tx *tx, const volatile int64_t *addr)
{
    return (int64_t)api_read(tx, addr, 8);
}
TMT_API void tmt_write_i64(tmt_tx *tx, volatile int64_t *addr, int64_t value)
{
    api_write(tx, addr, (uint64_t)value, 8);
}
TMT_API int32_t tmt_read_i32(tmt_tx *tx, const volatile int32_t *addr)
{
    return (int32_t)(uint32_t)api_read(tx, addr, 4);
}
TMT_API void tmt_write_i32(tmt_tx *tx, volatile int32_t *addr, int32_t value)
{
    api_write(tx, addr, (uint32_t)value, 4);
}
TMT_API uint8_t tmt_read_u8(tmt_tx *tx, const volatile uint8_t *addr)
{
    return (uint8_t)api_read(tx, addr, 1);
}
TMT_API void tmt_write_u8(tmt_tx *tx, volatile uint8_t *addr, uint8_t value)
{
    api_write(tx, addr, value, 1);
}
TMT_API float tmt_read_float(tmt_tx *tx, const volatile float *addr)
{
    uint32_t bits = (uint32_t)api_read(tx, addr, 4);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}
TMT_API void tmt_write_float(tmt_tx *tx, volatile float *addr, float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    api_write(tx, addr, bits, 4);
}
TMT_API double tmt_read_double(tmt_tx *tx, const volatile double *addr)
{
    uint64_t bits = api_read(tx, addr, 8);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}
TMT_API void tmt_write_double(tmt_tx *tx, volatile double *addr, double value)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    api_write(tx, addr, bits, 8);
}
