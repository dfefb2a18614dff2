/*
 * tx_undo.h - the in-place undo log (struct tx_undo, tx.h) that emulated
 * hardware attempts (htm.c) and serial attempts (stm.c) share: write in
 * place after saving the old bytes, put them all back newest first.
 *
 * Owns: these two operations on a log the caller owns. Never: knows whose
 * log it is, or records anything (the callers trace what they must).
 */
#ifndef TMT_TX_UNDO_H
#define TMT_TX_UNDO_H

#include <stdint.h>

#include "tx.h"
#include "tx_util.h"

/* Writes in place, logging the old bytes first. */
static inline void tx_undo_write(struct tx_undo **log, uint32_t *n, uint32_t *cap, uintptr_t addr, uint64_t value,
                                 unsigned size)
{
    if (TX_UNLIKELY(*n == *cap))
        *log = tx_grow(*log, cap, sizeof **log, 64);
    struct tx_undo *u = &(*log)[(*n)++];
    u->addr = addr;
    u->old = tx_mem_load(addr, size);
    u->size = size;
    tx_mem_store(addr, value, size);
}

/* Puts back every byte the log saved, newest first, and empties it. */
static inline void tx_undo_all(const struct tx_undo *log, uint32_t *n)
{
    while (*n > 0) {
        const struct tx_undo *u = &log[--*n];
        tx_mem_store(u->addr, u->old, u->size);
    }
}

#endif
