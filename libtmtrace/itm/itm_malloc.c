/*
 * itm_malloc.c - the program's own malloc, calloc, realloc and free, taken
 * over by libtmtrace-itm (linked before libc, or preloaded) so that a block
 * the program allocates outside a transaction is recorded (an ALLOC record,
 * as tmt_malloc makes inside one) with its caller: tools then name a heap
 * word `block+0x.. from function (file:line)`, not just "heap".
 *
 * Owns: the four entry points, which hand every call to glibc's allocator
 * (__libc_malloc and its siblings, never a dlsym'd "next" one, which would
 * itself allocate) and, while itm_heap_on, note each block the calling
 * thread gets outside a transaction: through its descriptor; for the
 * thread that loaded the library (the main thread, which builds a
 * program's shared structures before its first transaction), through a
 * trace thread of its own (itm_heap_start) until it has a descriptor; for
 * another thread, its first blocks, kept until its descriptor comes
 * (itm_heap_entered). itm_tx.c calls those and itm_heap_left; this file
 * uses nothing of the ABI's (the thread's descriptor comes with
 * itm_heap_entered). Only the block's address, size and caller are kept;
 * frees are not recorded (a later block at an address is the one tools
 * name). A TLS flag keeps the tracer's own allocations while a block is
 * noted from being noted, and calls from this library's own code (the
 * runtime, the tracer) are never noted.
 * Never: records at `off` (itm_heap_on stays 0: one branch per call), for
 * a thread that never enters (the tracer's threads), beyond the first
 * ITM_HEAP_EARLY blocks of a thread before it enters, in a forked child or
 * once exit's shutdown began; enters a thread into the runtime; records
 * inside a transaction (tmt_malloc records those blocks); exists under a
 * sanitizer, whose runtime interposes the allocator itself (then this file
 * defines only itm_heap_start, itm_heap_entered and itm_heap_left, which do
 * nothing).
 */
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "itm.h"
#include "tb_thread.h"
#include "trace_buffer.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ITM_HEAP_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define ITM_HEAP_SANITIZED 1
#endif
#endif

#ifndef ITM_HEAP_SANITIZED

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

/* The program's allocations are noted: set by itm_heap_start, cleared when
 * exit begins and in a forked child (itm_heap_off). */
static int itm_heap_on;
/* The thread's runtime descriptor once it entered (itm_heap_entered) and
 * until it leaves (itm_heap_left). */
static __thread struct tmt_tx *itm_heap_tx __attribute__((tls_model("initial-exec")));

/* The thread is noting a block: the tracer's own allocations meanwhile
 * are not noted. */
static __thread int itm_heap_busy __attribute__((tls_model("initial-exec")));

/* This library's code [lo, hi): the runtime and the tracer are linked into
 * it, and their own allocations (in the middle of a trace buffer's slow
 * path, with its locks held) must not write a record. */
static uintptr_t itm_self_lo, itm_self_hi;

/* The main thread's records before its first transaction: a trace thread
 * of its own, without a runtime descriptor, since a descriptor would count
 * the thread as one that runs transactions (a lone worker would then no
 * longer run alone). Attached by the constructor (itm_heap_start), used by
 * that thread only, detached when it enters (itm_heap_entered), or left to
 * the exit's flush like any thread still running then. */
static struct tb_thread itm_heap_first;
static __thread struct tb_thread *itm_heap_own __attribute__((tls_model("initial-exec")));

/* Another thread's first blocks, before its first transaction (a worker's
 * own arrays and structures), kept until it enters and then recorded; the
 * tracer's threads, which never enter, keep theirs unrecorded. */
#define ITM_HEAP_EARLY 32
struct itm_heap_block {
    const void *p, *caller;
    size_t n;
};
static __thread struct itm_heap_block itm_heap_early[ITM_HEAP_EARLY] __attribute__((tls_model("initial-exec")));
static __thread unsigned itm_heap_nearly __attribute__((tls_model("initial-exec")));

static int itm_self_range(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uintptr_t me = (uintptr_t)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && me >= lo && me < lo + ph->p_memsz) {
            itm_self_lo = lo;
            itm_self_hi = lo + ph->p_memsz;
            return 1;
        }
    }
    return 0;
}

/* Relaxed: a block allocated while the flag changes is noted or not, and
 * either is right. */
static void itm_heap_off(void) { __atomic_store_n(&itm_heap_on, 0, __ATOMIC_RELAXED); }

int itm_heap_start(void)
{
    dl_iterate_phdr(itm_self_range, (void *)(uintptr_t)itm_heap_start);
    if (atexit(itm_heap_off) != 0 || pthread_atfork(NULL, NULL, itm_heap_off) != 0)
        return -1;
    itm_heap_busy = 1;
    int rc = tb_attach(&itm_heap_first);
    itm_heap_busy = 0;
    if (rc != 0)
        return -1;
    itm_heap_own = &itm_heap_first;
    __atomic_store_n(&itm_heap_on, 1, __ATOMIC_RELAXED);
    return 0;
}

static void itm_heap_note(void *p, size_t n, const void *caller)
{
    if (itm_heap_busy || ((uintptr_t)caller >= itm_self_lo && (uintptr_t)caller < itm_self_hi))
        return;
    itm_heap_busy = 1;
    struct tmt_tx *tx = itm_heap_tx;
    if (tx != NULL) {
        /* No record inside a transaction (the runtime's own blocks; the
         * program's go through _ITM_malloc) nor in a hardware attempt. */
        if (tx->depth == 0 && tx_traced(tx))
            tb_ev_alloc(&tx->trace, p, n, caller);
    } else if (itm_heap_own != NULL) {
        tb_ev_alloc(itm_heap_own, p, n, caller);
    } else if (itm_heap_nearly < ITM_HEAP_EARLY) {
        itm_heap_early[itm_heap_nearly++] = (struct itm_heap_block){ p, caller, n };
    }
    itm_heap_busy = 0;
}

void itm_heap_entered(struct tmt_tx *tx)
{
    itm_heap_busy = 1;
    if (itm_heap_own != NULL) {
        tb_detach(itm_heap_own);
        itm_heap_own = NULL;
    }
    if (__atomic_load_n(&itm_heap_on, __ATOMIC_RELAXED) && tx_traced(tx))
        for (unsigned i = 0; i < itm_heap_nearly; i++)
            tb_ev_alloc(&tx->trace, itm_heap_early[i].p, itm_heap_early[i].n, itm_heap_early[i].caller);
    itm_heap_nearly = 0;
    itm_heap_tx = tx;
    itm_heap_busy = 0;
}

void itm_heap_left(void) { itm_heap_tx = NULL; }

/* Off, each entry point is a load, a branch and a jump into glibc; on, the
 * noting variant below is a call of its own. */
static inline int itm_heap_noting(void) { return TX_UNLIKELY(__atomic_load_n(&itm_heap_on, __ATOMIC_RELAXED)); }

__attribute__((noinline)) static void *itm_heap_alloc(size_t n, size_t size, void *old, int how, const void *caller)
{
    void *p = how == 0 ? __libc_malloc(n) : how == 1 ? __libc_calloc(n, size) : __libc_realloc(old, n);
    if (p != NULL)
        itm_heap_note(p, how == 1 ? n * size : n, caller); /* calloc: no overflow, glibc refused that */
    return p;
}

ITM_ABI void *malloc(size_t n)
{
    if (!itm_heap_noting())
        return __libc_malloc(n);
    return itm_heap_alloc(n, 0, NULL, 0, __builtin_return_address(0));
}

ITM_ABI void *calloc(size_t n, size_t size)
{
    if (!itm_heap_noting())
        return __libc_calloc(n, size);
    return itm_heap_alloc(n, size, NULL, 1, __builtin_return_address(0));
}

ITM_ABI void *realloc(void *old, size_t n)
{
    if (!itm_heap_noting())
        return __libc_realloc(old, n);
    return itm_heap_alloc(n, 0, old, 2, __builtin_return_address(0));
}

/* Ours because malloc is: a later allocator in the lookup order must not
 * be handed glibc's blocks. */
ITM_ABI void free(void *p) { __libc_free(p); }

#else

int itm_heap_start(void) { return -1; }
void itm_heap_entered(struct tmt_tx *tx) { (void)tx; }
void itm_heap_left(void) {}

#endif
