/*
 * txmem.h - transactional malloc and free.
 *
 * Owns: tx->mem, the allocation log of the current attempt, the deferred
 * frees of the current transaction and the per-thread limbo of committed
 * frees that concurrent software transactions may still be reading. Never
 * frees memory a running transaction might still dereference; never records
 * trace events.
 */
#ifndef TMT_TXMEM_H
#define TMT_TXMEM_H

#include <stddef.h>
#include <stdint.h>

#include "tx.h"
#include "tx_util.h"

struct tx_limbo {
    void *ptr;
    uint64_t stamp; /* reclaimable once every running software attempt has rv >= stamp */
};

void *txmem_malloc(struct tmt_tx *tx, size_t size);
void txmem_free(struct tmt_tx *tx, void *ptr);
/* The transaction committed with write version wv (0: it wrote nothing, or
 * ran on the hardware path): allocations stay, frees take effect. Inline:
 * most transactions free nothing, and then it is two instructions. */
void txmem_commit_frees(struct tmt_tx *tx, uint64_t wv);
static inline void txmem_commit(struct tmt_tx *tx, uint64_t wv)
{
    tx->mem.nallocs = 0;
    if (TX_UNLIKELY(tx->mem.nfrees != 0))
        txmem_commit_frees(tx, wv);
}
/* The attempt aborted: its allocations are released, its frees forgotten. */
void txmem_abort(struct tmt_tx *tx);
/* The thread leaves: waits until its limbo can be reclaimed, then frees it. */
void txmem_thread_exit(struct tmt_tx *tx);

#endif
