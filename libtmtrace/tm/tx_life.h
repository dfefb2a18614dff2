/*
 * tx_life.h - a transaction's life on its descriptor (tx_life.c): threads
 * entering and leaving, prepare, start (hardware, software or serial
 * attempt), commit, the aborts the program or the runtime asks for, and
 * serial mode; what the public layer (api/) and the libitm ABI (itm/) call.
 *
 * Owns: the attempt state of the descriptor (tx.h says which fields), and
 * the only place where START (every attempt), COMMIT, ABORT and SERIAL are
 * recorded. Never: called by the engines it drives (stm.c, htm.c, txmem.c,
 * tx_registry.c), except for tx_restart, tx_upcall.h.
 */
#ifndef TMT_TX_LIFE_H
#define TMT_TX_LIFE_H

#include <setjmp.h>

#include "tmtrace.h"
#include "tx.h"
#include "tx_upcall.h"

/* The calling thread's descriptor, made (or reused) and attached to the
 * tracer; NULL with error_set(). tx_thread_exit detaches and releases it. */
struct tmt_tx *tx_thread_enter(void);
void tx_thread_exit(struct tmt_tx *tx);

/* The head's alloc_watch (tmtrace.h) of a thread in a transaction or not
 * (`in_tx`), traced or not. */
static inline uint32_t tx_alloc_watch(int in_tx, int traced)
{
    return (in_tx ? TMT_ALLOC_WATCH_TX : 0u) | (traced ? TMT_ALLOC_WATCH_TRACED : 0u);
}

/* Sets the head's alloc_watch from the thread's state. Starts and ends of
 * transactions keep it so on their own; this is for the other moments the
 * trace level is settled, a thread's entry and a forked child's thread. */
static inline void tx_watch_allocs(struct tmt_tx *tx)
{
    tx->head.alloc_watch = tx_alloc_watch(tx->depth > 0, tx_traced(tx));
}

/* tmt_tx_prepare, tmt_tx_start and tmt_tx_commit (tmtrace.h): prepare
 * returns the restart point to fill (the outer one's scratch when nested);
 * start returns 1 when an attempt runs, 0 when the block is to be skipped
 * (cancelled); commit ends the attempt or restarts it on a conflict.
 * `frame`: the stack pointer of the frame that holds the block (its
 * caller's, tmt_tx_start's call frame address); what lies below it is the
 * frames the attempt makes (tx.h, frame).
 *
 * A thread alone (no other thread has started a transaction: txreg_alone_self)
 * runs its transactions in place once it has settled there (from its
 * txreg_lone_after-th start alone since a thread last joined or left:
 * txreg_lone_settled), as serial attempts with reason
 * TF_SERIAL_ALONE: direct loads and stores, the undo log for retry and
 * cancel, no read set, no validation. A thread that
 * starts a transaction meanwhile waits in stm_begin for the serial lock,
 * that is until the attempt in flight ends; from then on both run the STM.
 * Not with a hardware path (the trace shows a lone thread's hardware
 * attempts, as with more threads), nor for a front end that keeps its own
 * checkpoint (libtmtrace-itm decides for itself, tx_serial_because). */
jmp_buf *tx_prepare(struct tmt_tx *tx, tmt_site *site, unsigned flags);
int tx_start(struct tmt_tx *tx, uintptr_t frame);
/* tmt_tx_begin (tmtrace.h): tx_prepare, and for the first attempt of a
 * transaction (no hardware path, not irrevocable) its start too, in one
 * call: a software attempt (its START recorded on a traced thread), or in
 * place when an untraced thread is alone; a nested begin is started too. `frame` as tx_start takes it.
 * Whether the outermost attempt started: the head's alloc_watch has
 * TMT_ALLOC_WATCH_TX; if not, tx_start follows the checkpoint, as after
 * tx_prepare. */
jmp_buf *tx_begin(struct tmt_tx *tx, tmt_site *site, unsigned flags, uintptr_t frame);
/* 1 (the default): a thread alone runs in place, as above; 0: it runs the
 * STM like any other (what the tests of the STM's own paths on one thread
 * set before their first transaction). */
extern int tx_lone_in_place;
void tx_commit(struct tmt_tx *tx);

/* ---- aborts that are asked for (the other kind: tx_upcall.h) ---- */

/* Undoes the running attempt through its module, then tx_restart. Not for
 * a real RTM attempt, whose stores would roll back with it: abort that one
 * with htm_abort_code, as tx_retry, tx_cancel and tx_serial_now do. */
__attribute__((noreturn)) void tx_abort(struct tmt_tx *tx, unsigned reason, uint64_t where, uint64_t found);
/* tmt_tx_retry / tmt_tx_cancel: abort() outside a transaction (misuse). */
__attribute__((noreturn)) void tx_retry(struct tmt_tx *tx);
__attribute__((noreturn)) void tx_cancel(struct tmt_tx *tx);
/* A block that promised to be read-only wrote: rerun it as an update
 * transaction (its read set was not kept, so it cannot commit writes). */
__attribute__((noreturn)) void tx_demote(struct tmt_tx *tx, uintptr_t addr);

/* Serial (irrevocable) mode. An attempt in serial mode runs alone: it
 * starts once every other transaction has ended (software attempts finish,
 * hardware attempts abort) and none can start until it ends; it reads and
 * writes memory in place and cannot abort on a conflict (tmt_tx_retry and
 * tmt_tx_cancel still undo it). The normal paths pay one predicted branch:
 * the STM's begin looks at the serial flag after announcing its start
 * version, the hardware paths see the software-transaction counter.
 *
 * The next attempt of a transaction runs serially when TMTRACE_SERIAL_AFTER
 * conflict aborts asked for it, when the block is TMT_TX_IRREVOCABLE, or
 * when the hardware path's policy was told so (a nested irrevocable block).
 * tx_serial_now: inside an attempt, returns at once if it is serial, else
 * aborts it and restarts the transaction serially (recorded as a user-retry
 * abort; does not return); `why` is enum tf_serial_reason.
 * tx_is_serial: the running attempt is serial. */
void tx_serial_now(struct tmt_tx *tx, unsigned why);
static inline int tx_is_serial(const struct tmt_tx *tx) { return tx->mode == TX_MODE_SERIAL; }
/* After tmt_tx_prepare of a TMT_TX_IRREVOCABLE block that the layer above
 * made irrevocable for its own reason (libtmtrace-itm's lone thread): the
 * SERIAL record says `why` (enum tf_serial_reason) instead of the
 * program's request. */
static inline void tx_serial_because(struct tmt_tx *tx, unsigned why)
{
    if (tx->serial_next)
        tx->serial_next = why;
}

#endif
