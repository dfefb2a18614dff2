/*
 * tl2.h - the TL2 (release 0.9.6) programming interface, implemented on top
 * of libtmtrace. Programs written for TL2 build unchanged against the
 * directory that holds this header, stm.h and libtl2.a:
 *
 *     cc -DSTM -I$DIR prog.c -L$DIR -ltl2 -lpthread
 *
 * Differences from the original, all in the program's favour: the sized
 * accessors below let stm.h read and write exactly the variable's bytes (the
 * original moved 8 bytes for a 4-byte int or float); thread descriptors can be
 * created and freed any number of times; the runtime's TMTRACE_* environment
 * applies (tracing, hardware path, ...).
 *
 * This header must stay self-contained C: it is copied next to libtl2.a and
 * included by programs that know nothing of libtmtrace.
 */
#ifndef TL2_H
#define TL2_H 1

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct _Thread Thread;

/* Every Thread begins with the runtime's descriptor of its thread, which
 * stm.h's accessors hand to the runtime directly (no Tx* call in between). */
struct tmt_tx;
static inline struct tmt_tx *TxDescriptor_(Thread *Self) { return *(struct tmt_tx **)(void *)Self; }

/* A transaction's place in the source; STM_BEGIN declares one per use so the
 * trace names TL2 transactions by file and line. Same layout as tmt_site. */
typedef struct TxSite {
    const char *file;
    int line;
    const char *label;
    volatile uint32_t id;
} TxSite;

void TxOnce(void);
void TxShutdown(void);

Thread *TxNewThread(void);
void TxInitThread(Thread *Self, long id);
void TxFreeThread(Thread *Self);

/* The caller has filled *envPtr with setjmp (or sigsetjmp); an abort restarts there.
 * *ROFlag != 0 promises a read-only transaction (it is rerun as an update
 * transaction if it writes). */
void TxStart(Thread *Self, jmp_buf *envPtr, int *ROFlag);
void TxStartAt(Thread *Self, jmp_buf *envPtr, int *ROFlag, TxSite *site);
/* With GCC or Clang each call of TxStart is a site of its own, labelled with
 * the enclosing function, as each STM_BEGIN is. Defining TL2_ONE_TXSTART_SITE
 * (or another compiler) calls the function itself: all its calls share one
 * site, `TxStart (tl2.c:LINE)`. */
#if defined(__GNUC__) && !defined(TL2_ONE_TXSTART_SITE)
#define TxStart(Self, envPtr, ROFlag)                                          \
    __extension__({                                                            \
        static TxSite tl2_site_ = { __FILE__, __LINE__, __func__, 0 };         \
        TxStartAt((Self), (envPtr), (ROFlag), &tl2_site_);                     \
    })
#endif
/* What a begin macro can use instead of TxStart (stm.h's STM_BEGIN calls
 * tmt_tx_prepare itself, the same without the call in between): TxPrepareAt
 * returns the buffer an abort restarts through, for the caller to fill with
 * setjmp in its own frame; TxBegin then starts the attempt (the first one
 * and every restart). Saves TxStart's copy of the caller's buffer. */
jmp_buf *TxPrepareAt(Thread *Self, int readOnly, TxSite *site);
void TxBegin(Thread *Self);
/* Returns (1) only when the transaction committed; otherwise it restarts. */
int TxCommit(Thread *Self);
/* TxCommit without the result, for stm.h's STM_END: its usual path ends
 * in a tail call into the runtime. */
void TxEnd_(Thread *Self);
/* Aborts the attempt and restarts the transaction; never returns. */
void TxAbort(Thread *Self) __attribute__((noreturn));

intptr_t TxLoad(Thread *Self, volatile intptr_t *addr);
void TxStore(Thread *Self, volatile intptr_t *addr, intptr_t value);
/* Thread-private location: written at once, restored if the attempt aborts. */
void TxStoreLocal(Thread *Self, volatile intptr_t *addr, intptr_t value);

/* Exact-size accesses (used by stm.h). */
uint8_t TxLoad8(Thread *Self, volatile uint8_t *addr);
uint16_t TxLoad16(Thread *Self, volatile uint16_t *addr);
uint32_t TxLoad32(Thread *Self, volatile uint32_t *addr);
float TxLoadF(Thread *Self, volatile float *addr);
double TxLoadD(Thread *Self, volatile double *addr);
void TxStore8(Thread *Self, volatile uint8_t *addr, uint8_t value);
void TxStore16(Thread *Self, volatile uint16_t *addr, uint16_t value);
void TxStore32(Thread *Self, volatile uint32_t *addr, uint32_t value);
void TxStoreF(Thread *Self, volatile float *addr, float value);
void TxStoreD(Thread *Self, volatile double *addr, double value);

/* Transactional allocation: released if the attempt aborts; TxFree takes
 * effect at commit and accepts memory from malloc. */
void *TxAlloc(Thread *Self, size_t size);
void TxFree(Thread *Self, void *ptr);

/* TL2's allocator entry points (stm.h maps malloc/realloc/free onto them).
 * Plain heap memory: TxFree and free() accept it. */
void *tmalloc_reserve(size_t size);
void *tmalloc_reserveAgain(void *ptr, size_t size);
void tmalloc_release(void *ptr);

#ifdef __cplusplus
}
#endif

#endif /* TL2_H */
