/*
 * stm.h - TL2's STM_* programming layer over tl2.h, for programs written
 * against TL2 0.9.6 (and the STAMP suite): STM_THREAD_T, STM_SELF,
 * STM_BEGIN_RD/WR ... STM_END, STM_READ/WRITE(_P/_F), STM_MALLOC/FREE.
 *
 * Unlike the original, every accessor is exact on the variable's size: the
 * macros dispatch on sizeof(var), so STM_WRITE on a 4-byte int or STM_WRITE_F
 * on a float never touches the 4 bytes next to it, and _F on a double keeps
 * its precision. STM_READ returns intptr_t as before, sign- or zero-extended
 * according to the variable's type.
 *
 * Define TL2_COMPAT_KEEP_MALLOC before including this file to keep the C
 * library's malloc/calloc/realloc names (by default they map onto
 * tmalloc_*, as TL2's stm.h does). free stays the C library's either way:
 * tmalloc_release is free, and a call through it cost a jump per free
 * (bayes, STAMP's, frees millions of blocks).
 */
#ifndef STM_H
#define STM_H 1

#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tl2.h"

#define STM_THREAD_T Thread
#define STM_SELF Self
#define STM_RO_FLAG ROFlag
#define STM_JMPBUF_T jmp_buf
#define STM_JMPBUF buf

#define STM_MALLOC(size) TxAlloc(STM_SELF, size)
#define STM_FREE(ptr) TxFree(STM_SELF, ptr)

#ifndef TL2_COMPAT_KEEP_MALLOC
#define malloc(size) tmalloc_reserve(size)
#define calloc(n, size)                                                       \
    ({                                                                        \
        size_t stm_nbytes_ = (size_t)(n) * (size_t)(size);                    \
        void *stm_p_ = tmalloc_reserve(stm_nbytes_);                          \
        if (stm_p_)                                                           \
            memset(stm_p_, 0, stm_nbytes_);                                   \
        stm_p_;                                                               \
    })
#define realloc(ptr, size) tmalloc_reserveAgain(ptr, size)
#endif

#define STM_VALID() (1)
#define STM_RESTART() TxAbort(STM_SELF)

#define STM_STARTUP() TxOnce()
#define STM_SHUTDOWN() TxShutdown()

#define STM_NEW_THREAD() TxNewThread()
#define STM_INIT_THREAD(t, id) TxInitThread(t, id)
#define STM_FREE_THREAD(t) TxFreeThread(t)

/* The runtime's transaction entry point and its read-only flag
 * (tmtrace.h: tmt_tx_begin, TMT_TX_READ_ONLY), for STM_BEGIN; TxSite has
 * tmt_site's layout. */
struct tmt_tx;
struct tmt_site;
jmp_buf *tmt_tx_begin(struct tmt_tx *tx, struct tmt_site *site, unsigned flags);
#define STM_TX_READ_ONLY_ 1u
#define STM_TX_ TxDescriptor_(STM_SELF)
/* The descriptor head's second word (tmtrace.h's struct tmt_tx_head,
 * alloc_watch) has bit 0 (TMT_ALLOC_WATCH_TX) set from an outermost start
 * until the transaction ends: after tmt_tx_begin and its setjmp, clear when
 * the attempt is still to start (an abort restarted it, or tmt_tx_begin
 * left the start to TxBegin). */
static inline int STM_STARTED_(struct tmt_tx *tx) { return (((const uint32_t *)(const void *)tx)[1] & 1u) != 0; }

/* setjmp runs here, in the caller's frame, straight into the runtime's
 * restart buffer (tmt_tx_begin returns it), so an abort lands back here and
 * TxBegin starts the next attempt; tmt_tx_begin has started the first one
 * in the same call when it could (a plain software attempt), else TxBegin
 * does. Nothing is copied per transaction. The signal mask is not saved
 * (no system call per transaction). Each use is its own site, labelled with
 * the enclosing function, so reports name it `function (file:line)`. */
#if defined(__GLIBC__)
/* glibc's setjmp is _setjmp, a jump into __sigsetjmp with no mask saved:
 * called directly, as sigsetjmp(env, 0) would (the same buffer type). */
#define STM_SETJMP_(env) __sigsetjmp(env, 0)
#else
#define STM_SETJMP_(env) setjmp(env)
#endif
#define STM_BEGIN(isReadOnly)                                                  \
    do {                                                                       \
        static TxSite stm_site_ = { __FILE__, __LINE__, __func__, 0 };         \
        STM_SETJMP_(*tmt_tx_begin(STM_TX_, (struct tmt_site *)(void *)&stm_site_,   \
                             (isReadOnly) ? STM_TX_READ_ONLY_ : 0u));          \
        if (!STM_STARTED_(STM_TX_))                                            \
            TxBegin(STM_SELF);                                                 \
    } while (0) /* enforce comma */

#define STM_BEGIN_RD() STM_BEGIN(1)
#define STM_BEGIN_WR() STM_BEGIN(0)
#define STM_END() TxEnd_(STM_SELF)

typedef volatile intptr_t vintp;

/* The runtime's exact-size accessors (tmtrace.h, repeated here so that a
 * program needs no other header): STM_READ and STM_WRITE call them on the
 * thread's descriptor directly, one call per access but for reads of an
 * attempt in place (below); TxLoad and the other Tx* accessors stay for
 * programs that call them. */
uintptr_t tmt_read_word(struct tmt_tx *tx, const volatile uintptr_t *addr);
void tmt_write_word(struct tmt_tx *tx, volatile uintptr_t *addr, uintptr_t value);
int32_t tmt_read_i32(struct tmt_tx *tx, const volatile int32_t *addr);
void tmt_write_i32(struct tmt_tx *tx, volatile int32_t *addr, int32_t value);
uint8_t tmt_read_u8(struct tmt_tx *tx, const volatile uint8_t *addr);
void tmt_write_u8(struct tmt_tx *tx, volatile uint8_t *addr, uint8_t value);
float tmt_read_float(struct tmt_tx *tx, const volatile float *addr);
void tmt_write_float(struct tmt_tx *tx, volatile float *addr, float value);
double tmt_read_double(struct tmt_tx *tx, const volatile double *addr);
void tmt_write_double(struct tmt_tx *tx, volatile double *addr, double value);

/* While the first word of the descriptor (tmtrace.h's struct tmt_tx_head,
 * part of the library's ABI) is nonzero, the thread's attempt runs in place
 * and records nothing: a read is then the load itself, with no call, as
 * tmtrace.h's readers do. The test and the loads are in the macros, not in
 * inline functions, so that a conflict's abort location (the return address
 * of the reader's call) names the program's line. */
static inline int STM_IN_PLACE_(struct tmt_tx *tx) { return *(const uint32_t *)(const void *)tx != 0; }
#define STM_LOAD_(T, var) __atomic_load_n((T volatile *)(void *)&(var), __ATOMIC_RELAXED)

/* 1 when the variable's type is unsigned (its value zero-extends). */
#define STM_UNSIGNED_(var)                                                     \
    _Generic((var), _Bool: 1, unsigned char: 1, unsigned short: 1,             \
             unsigned int: 1, unsigned long: 1, unsigned long long: 1, default: 0)
#define STM_EXTEND_(var, raw, bits)                                            \
    (STM_UNSIGNED_(var) ? (intptr_t)(uint##bits##_t)(raw)                      \
                        : (intptr_t)(int##bits##_t)(raw))

#define STM_READ(var)                                                          \
    (STM_IN_PLACE_(STM_TX_)                                                    \
     ? (sizeof(var) == 4   ? STM_EXTEND_(var, STM_LOAD_(uint32_t, var), 32)    \
        : sizeof(var) == 1 ? STM_EXTEND_(var, STM_LOAD_(uint8_t, var), 8)      \
        : sizeof(var) == 2 ? STM_EXTEND_(var, STM_LOAD_(uint16_t, var), 16)    \
                           : (intptr_t)STM_LOAD_(uintptr_t, var))              \
     : sizeof(var) == 4 ? STM_EXTEND_(var, (uint32_t)tmt_read_i32(STM_TX_, (volatile int32_t *)(void *)&(var)), 32) \
     : sizeof(var) == 1 ? STM_EXTEND_(var, tmt_read_u8(STM_TX_, (volatile uint8_t *)(void *)&(var)), 8)    \
     : sizeof(var) == 2 ? STM_EXTEND_(var, TxLoad16(STM_SELF, (volatile uint16_t *)(void *)&(var)), 16) \
                        : (intptr_t)tmt_read_word(STM_TX_, (volatile uintptr_t *)(void *)&(var)))
#define STM_READ_P(var)                                                        \
    ((void *)(STM_IN_PLACE_(STM_TX_) ? STM_LOAD_(uintptr_t, var)               \
                                     : tmt_read_word(STM_TX_, (volatile uintptr_t *)(void *)&(var))))
#define STM_READ_F(var)                                                        \
    __builtin_choose_expr(sizeof(var) == 4,                                    \
        (STM_IN_PLACE_(STM_TX_) ? *(volatile float *)(void *)&(var)            \
                                : tmt_read_float(STM_TX_, (volatile float *)(void *)&(var))), \
        (STM_IN_PLACE_(STM_TX_) ? *(volatile double *)(void *)&(var)           \
                                : tmt_read_double(STM_TX_, (volatile double *)(void *)&(var))))

#define STM_WRITE(var, val)                                                    \
    (sizeof(var) == 4   ? tmt_write_i32(STM_TX_, (volatile int32_t *)(void *)&(var), (int32_t)(uint32_t)(intptr_t)(val)) \
     : sizeof(var) == 1 ? tmt_write_u8(STM_TX_, (volatile uint8_t *)(void *)&(var), (uint8_t)(intptr_t)(val))    \
     : sizeof(var) == 2 ? TxStore16(STM_SELF, (volatile uint16_t *)(void *)&(var), (uint16_t)(intptr_t)(val)) \
                        : tmt_write_word(STM_TX_, (volatile uintptr_t *)(void *)&(var), (uintptr_t)(intptr_t)(val)))
#define STM_WRITE_P(var, val)                                                  \
    tmt_write_word(STM_TX_, (volatile uintptr_t *)(void *)&(var), (uintptr_t)(void *)(val))
#define STM_WRITE_F(var, val)                                                  \
    __builtin_choose_expr(sizeof(var) == 4,                                    \
        tmt_write_float(STM_TX_, (volatile float *)(void *)&(var), (float)(val)),    \
        tmt_write_double(STM_TX_, (volatile double *)(void *)&(var), (double)(val)))

/* Thread-private data: plain stores, as in TL2. */
#define STM_LOCAL_WRITE(var, val) ({ var = val; var; })
#define STM_LOCAL_WRITE_F(var, val) ({ var = val; var; })
#define STM_LOCAL_WRITE_P(var, val) ({ var = val; var; })

#endif /* STM_H */
