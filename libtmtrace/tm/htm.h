/*
 * htm.h - the hardware fast path: Intel RTM when the CPU has it, or its
 * emulation (TMTRACE_HTM=emulate), and its coexistence with the STM.
 *
 * Owns: CPUID detection, the retry/fallback policy, the counter of active
 * software transactions that hardware attempts subscribe to, the emulation
 * lock and tx->htm. An emulated attempt that aborts is undone here and ends
 * in tx_restart (tx_upcall.h), the one call it makes into tx_life.c; the
 * loop of attempts is tx_life.c's, which asks htm_next for the policy's
 * verdict and htm_begin for an attempt, and records START and ABORT itself.
 * Never: touches the descriptor outside tx->htm but for its own counters
 * (htm_aborts, fallbacks) and the FALLBACK record; calls a tb_ev_* hook
 * between the start of a hardware attempt and its end (the record would
 * join the hardware footprint and vanish on abort): START is stamped
 * before, COMMIT/ABORT/FALLBACK after.
 */
#ifndef TMT_HTM_H
#define TMT_HTM_H

#include <stdint.h>

#include "config.h"
#include "tx.h"
#include "tx_util.h"

/* Explicit abort codes the runtime itself uses (bits 24..31 of the status). */
#define HTM_CODE_STM_ACTIVE TMT_HTM_CODE_STM_ACTIVE /* software transactions are running */
#define HTM_CODE_USER_RETRY 0xfeu                   /* tmt_tx_retry() */
#define HTM_CODE_USER_CANCEL 0xfdu                  /* tmt_tx_cancel() */
#define HTM_CODE_NEED_STM 0xfcu                     /* a nested block asked for the STM */
#define HTM_CODE_NEED_SERIAL 0xfbu                  /* the transaction must run in serial mode */
#define HTM_CODE_EMU_EXPLICIT 0x01u                 /* emulation: injected explicit abort */

/* Reads CPUID once. */
void htm_init(void);
#ifdef TMT_TEST_HOOKS
/* Test builds only: RTM present and not disabled by microcode
 * (RTM_ALWAYS_ABORT). */
int htm_rtm_usable(void);
#endif
/* Set by htm_init only; read here so that every transaction's start asks
 * for its path without a call. */
extern int htm_rtm __attribute__((visibility("hidden")));
/* The hardware path in force now: TX_MODE_HTM, TX_MODE_HTM_EMU or
 * TX_MODE_NONE (off, or auto without usable RTM: exactly like off). */
static inline int htm_path(void)
{
    switch (config.htm) {
    case CONFIG_HTM_EMULATE: return TX_MODE_HTM_EMU;
    case CONFIG_HTM_AUTO: return htm_rtm ? TX_MODE_HTM : TX_MODE_NONE;
    default: return TX_MODE_NONE;
    }
}

/* A new transaction: no hardware attempt made yet. */
static inline void htm_prepare(struct tmt_tx *tx)
{
    tx->htm.attempts = 0;
    tx->htm.pending = 0;
    tx->htm.fell_back = 0;
}

/* The policy's verdict before the transaction's next hardware attempt
 * (docs/design.md, "Detection and policy"): TRY one (none made yet, or the
 * last one's abort calls for another); CANCEL the block (the program
 * cancelled); FALLBACK to the STM for the rest of the transaction, or
 * SERIAL (the same, and its next attempt must run serially: a nested
 * irrevocable block asked), both counted and recorded here. */
enum htm_next { HTM_NEXT_TRY, HTM_NEXT_FALLBACK, HTM_NEXT_SERIAL, HTM_NEXT_CANCEL };
enum htm_next htm_next(struct tmt_tx *tx);

/* The START flags of a hardware attempt on `path` (enum tf_start_flags). */
static inline unsigned htm_start_flags(const struct tmt_tx *tx, int path)
{
    return (path == TX_MODE_HTM ? TF_START_HTM : TF_START_HTM_EMU) |
           ((tx->flags & TMT_TX_READ_ONLY) ? TF_START_READ_ONLY : 0);
}

/* What htm_begin returns inside a running attempt (_xbegin's "started"). */
#define HTM_STARTED 0xffffffffu
/* Begins a hardware attempt on `path` (its START already recorded):
 * HTM_STARTED inside the attempt (the caller sets tx->mode, inside it too),
 * else the status of its abort, counted and kept for htm_next. On real RTM
 * an abort anywhere in the attempt returns here, with memory as it was at
 * _xbegin, stack frames included. */
uint32_t htm_begin(struct tmt_tx *tx, int path);
/* The abort reason (enum tmt_abort_reason) of a hardware status word: the
 * program's retry or cancel by their explicit codes, else HTM. */
static inline unsigned htm_abort_reason(uint32_t status)
{
    switch (tmt_htm_abort_code(status)) {
    case HTM_CODE_USER_RETRY: return TMT_ABORT_USER_RETRY;
    case HTM_CODE_USER_CANCEL: return TMT_ABORT_USER_CANCEL;
    default: return TMT_ABORT_HTM;
    }
}
/* Ends the running hardware attempt (may abort it: emulation). */
void htm_commit(struct tmt_tx *tx);
/* Accesses inside a hardware attempt (plain on real RTM; counted, undo-logged
 * and possibly aborted under emulation). */
uint64_t htm_read(struct tmt_tx *tx, uintptr_t addr, unsigned size);
void htm_write(struct tmt_tx *tx, uintptr_t addr, uint64_t value, unsigned size);
/* Aborts the running hardware attempt explicitly with `code` (never returns:
 * real RTM resumes in htm_begin, emulation goes through tx_restart). */
__attribute__((noreturn)) void htm_abort_code(struct tmt_tx *tx, unsigned code);
/* Emulation: undoes the attempt's writes and releases the emulation lock;
 * keeps the status for the policy at the restart. */
void htm_rollback(struct tmt_tx *tx, uint32_t status);

/* Software transactions announce themselves (start) and leave (commit or
 * abort); only needed while a hardware path is in force. */
void htm_sw_enter(struct tmt_tx *tx);
void htm_sw_release(void);
/* Inline: every commit and abort asks, and only attempts that entered pay. */
static inline void htm_sw_leave(struct tmt_tx *tx)
{
    if (!tx->htm.sw_counted)
        return;
    tx->htm.sw_counted = 0;
    htm_sw_release();
}

/* fork(): prepare keeps hardware attempts out like a software transaction
 * and waits out a running emulated one; parent undoes that; child resets
 * the counter to `self_counted` (the forking thread's own software
 * transaction, 0 or 1) and frees the emulation lock: the threads that held
 * them do not exist in the child. */
void htm_fork_prepare(void);
void htm_fork_parent(void);
void htm_fork_child(int self_counted);

#endif
