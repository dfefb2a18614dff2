/*
 * tx_util.h - the small tools every TM engine uses: branch hints, the spin
 * pause, exact-size atomic loads and stores of shared data, a per-thread
 * counter bump, the descriptor's random numbers, and the geometric growth of
 * a transaction's logs with the one way out when that fails.
 *
 * Owns: nothing but these helpers, and (tx_util.c) the two places where the
 * runtime prints on its own and stops the process: tx_misuse and
 * tx_out_of_memory. Never: knows the descriptor, the tracer or any engine
 * (it includes only the C library), so every module of tm/, api/ and itm/
 * may include it without an edge back.
 */
#ifndef TMT_TX_UTIL_H
#define TMT_TX_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#if defined(__GNUC__)
#define TX_LIKELY(x) __builtin_expect(!!(x), 1)
#define TX_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define TX_LIKELY(x) (x)
#define TX_UNLIKELY(x) (x)
#endif

/* API misuse the program cannot go on from (a transaction left open, retry
 * outside one): one line on stderr naming the call and the fix, then abort().
 * With tx_out_of_memory, the only places the runtime prints on its own. */
__attribute__((noreturn, cold)) void tx_misuse(const char *what);
/* A transaction's own memory (a log, the lock array, the per-site
 * counters) cannot grow: the attempt has no way to fail to its caller, so one
 * line on stderr names what and to how many bytes, then abort(). */
__attribute__((noreturn, cold)) void tx_out_of_memory(const char *what, size_t bytes);

/* Per-thread counter increment: the owner is the only writer, readers use
 * relaxed loads, so no read-modify-write is needed. */
static inline void tx_count(uint64_t *c) { __atomic_store_n(c, *c + 1, __ATOMIC_RELAXED); }

/* xorshift64* on a thread's own state (the descriptor's rng). */
static inline uint64_t tx_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* Doubles a log's capacity (first size `min`): the one allocation on a
 * transaction's path (realloc). Running out of memory in the middle of a
 * transaction leaves no consistent way to go on, so it ends the process
 * (tx_out_of_memory); logs are kept across transactions, so this is rare. */
static inline void *tx_grow(void *p, uint32_t *cap, size_t elem, uint32_t min)
{
    uint32_t n = *cap ? *cap * 2 : min;
    void *q = realloc(p, (size_t)n * elem);
    if (q == NULL)
        tx_out_of_memory("a transaction's log", (size_t)n * elem);
    *cap = n;
    return q;
}

static inline void tx_pause(void) { __builtin_ia32_pause(); }

/* Exact-size loads and stores of shared data (1, 4 or 8 naturally aligned
 * bytes). Acquire/release so that TL2's check "stripe unchanged around the
 * data load" is also sound in the C11 model; on x86 these are plain moves. */
static inline uint64_t tx_mem_load(uintptr_t a, unsigned size)
{
    switch (size) {
    case 8: return __atomic_load_n((uint64_t *)a, __ATOMIC_ACQUIRE);
    case 4: return __atomic_load_n((uint32_t *)a, __ATOMIC_ACQUIRE);
    default: return __atomic_load_n((uint8_t *)a, __ATOMIC_ACQUIRE);
    }
}

static inline void tx_mem_store(uintptr_t a, uint64_t v, unsigned size)
{
    switch (size) {
    case 8: __atomic_store_n((uint64_t *)a, v, __ATOMIC_RELEASE); break;
    case 4: __atomic_store_n((uint32_t *)a, (uint32_t)v, __ATOMIC_RELEASE); break;
    default: __atomic_store_n((uint8_t *)a, (uint8_t)v, __ATOMIC_RELEASE); break;
    }
}

#endif
