/*
 * tx_undo.h - the in-place undo log (struct tx_undo, tx.h) that emulated
 * hardware attempts (htm.c) and serial attempts (stm.c) share: write in
 * place after saving the old bytes, put them all back newest first.
 *
 * Owns: these two operations on a log the caller owns, and which of its
 * entries a rollback may not put back (the attempt's own dead frames).
 * Never: knows whose log it is, or records anything (the callers trace
 * what they must).
 */
#ifndef TMT_TX_UNDO_H
#define TMT_TX_UNDO_H

#include <stdint.h>

#include "tx.h"
#include "tx_util.h"

/* A full log grows out of line, so that a write saves no registers for it. */
__attribute__((noinline, cold, unused)) static void tx_undo_grow(struct tx_undo **log, uint32_t *cap)
{
    *log = tx_grow(*log, cap, sizeof **log, 64);
}

/* Writes in place, logging the old bytes first. */
static inline void tx_undo_write(struct tx_undo **log, uint32_t *n, uint32_t *cap, uintptr_t addr, uint64_t value,
                                 unsigned size)
{
    if (TX_UNLIKELY(*n == *cap))
        tx_undo_grow(log, cap);
    struct tx_undo *u = &(*log)[(*n)++];
    u->addr = addr;
    u->old = tx_mem_load(addr, size);
    u->size = size;
    tx_mem_store(addr, value, size);
}

/* Puts back every byte the log saved, newest first, and empties it, but
 * none between the caller's stack pointer (less the 128-byte red zone a
 * leaf function may use below it) and `frame` (tx.h; 0: no such range).
 * Those are this thread's frames made inside the attempt: the restart
 * discards them, and the rollback's own frames, the caller's included, may
 * lie where they were, so putting their old bytes back would overwrite
 * live return addresses and locals. Entries are naturally aligned and the
 * frame 16-aligned, so none straddles its edge. */
static inline void tx_undo_all(const struct tx_undo *log, uint32_t *n, uintptr_t frame)
{
    uintptr_t dead = 0, live = 0;
    if (frame != 0) {
        __asm__ volatile("mov %%rsp, %0" : "=r"(dead));
        dead -= 128;
        live = frame > dead ? frame : dead;
    }
    while (*n > 0) {
        const struct tx_undo *u = &log[--*n];
        if (u->addr - dead >= live - dead) /* outside [dead, live) */
            tx_mem_store(u->addr, u->old, u->size);
    }
}

#endif
