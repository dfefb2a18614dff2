/*
 * tm.h - one transactional vocabulary for the tmbench workloads, so that the
 * same source builds against libtmtrace (default), GCC's libitm (-DTM_ITM,
 * with -fgnu-tm) or one global mutex (-DTM_MUTEX).
 *
 *   TM_THREAD_ENTER() / TM_THREAD_EXIT()   in each worker thread
 *   TM_BEGIN("label") ... TM_END           a transaction
 *   TM_BEGIN_RO("label") ... TM_END        a read-only transaction
 *   TM_READ(x), TM_WRITE(x, v)             shared integers (long, int, uint8_t, uint64_t, ...)
 *   TM_READ_P / TM_WRITE_P, TM_READ_F / TM_WRITE_F   pointers; float and double
 *   TM_MALLOC(n), TM_FREE(p)               allocation inside transactions
 *   TM_SAFE                                marks helpers called inside transactions
 *   TM_LOCAL int x;                        a local the block assigns and code after
 *                                          TM_END reads (volatile for libtmtrace, whose
 *                                          restarts go through longjmp; nothing for
 *                                          libitm, which forbids volatile in transactions)
 *
 * Transactional helper functions take no descriptor: the libtmtrace build
 * keeps it in an initial-exec thread-local (tm_tx).
 *
 * The libitm and mutex builds count committed blocks in tm_commit_count (a
 * thread-local the driver sums), because neither backend reports statistics.
 * TM_RESTART exists for libtmtrace (abort and rerun) and libitm (where it can
 * only cancel the block); the mutex build has none, so a workload that needs
 * it does not compile there.
 */
#ifndef TMBENCH_TM_H
#define TMBENCH_TM_H

#include <stdint.h>
#include <stdlib.h>

#if defined(TM_ITM) || defined(TM_MUTEX)
extern __thread uint64_t tm_commit_count;
/* Both compile plain accesses: the compiler (libitm) or the lock makes them
 * transactional, and no thread state is needed. */
#define TM_LOCAL
#define TM_THREAD_ENTER() ((void)0)
#define TM_THREAD_EXIT() ((void)0)
#define TM_READ(x) (x)
#define TM_WRITE(x, v) ((x) = (v))
#define TM_READ_P(x) (x)
#define TM_WRITE_P(x, v) ((x) = (v))
#define TM_READ_F(x) (x)
#define TM_WRITE_F(x, v) ((x) = (v))
#define TM_MALLOC(n) malloc(n)
#define TM_FREE(p) free(p)
#endif

#if defined(TM_ITM)

#define TM_BACKEND "libitm"
#define TM_SAFE __attribute__((transaction_safe))
#define TM_BEGIN(label) { __transaction_atomic {
#define TM_BEGIN_RO(label) TM_BEGIN(label)
#define TM_END } tm_commit_count++; }
#define TM_RESTART() __transaction_cancel

#elif defined(TM_MUTEX)

#include <pthread.h>
extern pthread_mutex_t tm_global_lock;
#define TM_BACKEND "mutex"
#define TM_SAFE
#define TM_BEGIN(label) { pthread_mutex_lock(&tm_global_lock);
#define TM_BEGIN_RO(label) TM_BEGIN(label)
#define TM_END pthread_mutex_unlock(&tm_global_lock); tm_commit_count++; }

#else /* libtmtrace */

#include "tmtrace.h"
#define TM_BACKEND "libtmtrace"
#define TM_SAFE
#define TM_LOCAL volatile
extern __thread tmt_tx *tm_tx __attribute__((tls_model("initial-exec")));
#define TM_THREAD_ENTER() (tm_tx = tmt_thread_enter())
#define TM_THREAD_EXIT() (tmt_thread_exit(), tm_tx = NULL)
/* Inside a block, tm_tx and tm_in_place_ are locals: the descriptor, and
 * whether this attempt runs in place (tmtrace.h's head flag, which changes
 * only between attempts, and each attempt enters the block anew). Held in
 * locals, neither is loaded again at each access (the thread-local could
 * change across the barrier's call, as far as the compiler knows), and a
 * loop of reads can test the flag once. Helpers called from a block see
 * the file-scope ones: the thread-local, and 0, which leaves the test to
 * tmtrace.h's inline readers. */
static const int tm_in_place_ __attribute__((unused)) = 0;
/* 1 inside a block, which has tested the flag itself: its reads that do
 * not run in place call the exported readers directly, (fn)(...), without
 * tmtrace.h's test of the head again; a helper's reads keep that test. */
static const int tm_in_block_ __attribute__((unused)) = 0;
#define TM_READ_CALL_(fn, ...) (tm_in_block_ ? (fn)(__VA_ARGS__) : fn(__VA_ARGS__))
#define TM_BLOCK_(label, flags)                                                             \
    {                                                                                       \
        tmt_tx *const tm_tx_block_ = tm_tx;                                                 \
        TMT_ATOMIC_FLAGS(tm_tx_block_, label, flags)                                        \
        tmt_tx *const tm_tx __attribute__((unused)) = tm_tx_block_;                         \
        const int tm_in_place_ __attribute__((unused)) = tmt_in_place_(tm_tx);                \
        const int tm_in_block_ __attribute__((unused)) = 1;
#define TM_BEGIN(label) TM_BLOCK_(label, 0u)
#define TM_BEGIN_RO(label) TM_BLOCK_(label, TMT_TX_READ_ONLY)
#define TM_END TMT_END; }
#define TM_MALLOC(n) tmt_malloc(tm_tx, (n))
#define TM_FREE(p) tmt_free(tm_tx, (p))
#define TM_RESTART() tmt_tx_retry(tm_tx)

/* Exact on the variable's size. TM_READ/TM_WRITE: integers; _P: pointers;
 * _F: float and double (as in STAMP's TM_SHARED_READ/_P/_F). In place
 * (above), TM_READ and TM_READ_P are plain loads, as in GCC's
 * uninstrumented clone under libitm: the attempt holds the serial lock, so
 * no other transaction runs, and the compiler may vectorise a loop of
 * them. */
#define TM_READ(x)                                                                          \
    ((__typeof__(x))(tm_in_place_ ? (x) :                                                   \
     _Generic((x),                                                                          \
        int: TM_READ_CALL_(tmt_read_i32, tm_tx, (const volatile int32_t *)&(x)),                           \
        unsigned int: TM_READ_CALL_(tmt_read_i32, tm_tx, (const volatile int32_t *)&(x)),                  \
        uint8_t: TM_READ_CALL_(tmt_read_u8, tm_tx, (const volatile uint8_t *)&(x)),                        \
        default: TM_READ_CALL_(tmt_read_long, tm_tx, (const volatile long *)&(x)))))
#define TM_WRITE(x, v)                                                                      \
    _Generic((x),                                                                           \
        int: tmt_write_i32(tm_tx, (volatile int32_t *)&(x), (int32_t)(v)),                  \
        unsigned int: tmt_write_i32(tm_tx, (volatile int32_t *)&(x), (int32_t)(v)),         \
        uint8_t: tmt_write_u8(tm_tx, (volatile uint8_t *)&(x), (uint8_t)(v)),               \
        default: tmt_write_long(tm_tx, (volatile long *)&(x), (long)(v)))
#define TM_READ_P(x)                                                                        \
    ((__typeof__(x))(tm_in_place_ ? (void *)(x) : TM_READ_CALL_(tmt_read_ptr, tm_tx, (void *const volatile *)&(x))))
#define TM_WRITE_P(x, v) tmt_write_ptr(tm_tx, (void *volatile *)&(x), (void *)(v))
#define TM_READ_F(x)                                                                        \
    _Generic((x),                                                                           \
        float: tmt_read_float(tm_tx, (const volatile float *)&(x)),                         \
        default: tmt_read_double(tm_tx, (const volatile double *)&(x)))
#define TM_WRITE_F(x, v)                                                                    \
    _Generic((x),                                                                           \
        float: tmt_write_float(tm_tx, (volatile float *)&(x), (float)(v)),                  \
        default: tmt_write_double(tm_tx, (volatile double *)&(x), (double)(v)))

#endif
#endif
