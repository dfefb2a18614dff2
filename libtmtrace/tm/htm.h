/*
 * htm.h - the hardware fast path: Intel RTM when the CPU has it, or its
 * emulation (TMTRACE_HTM=emulate), and its coexistence with the STM.
 *
 * Owns: CPUID detection, the retry/fallback policy, the counter of active
 * software transactions that hardware attempts subscribe to, the emulation
 * lock and tx->htm. An emulated attempt that aborts is undone here and ends
 * in tx_restart (tx.h); the attempt state outside tx->htm moves only through
 * tx_attempt_starts and tx_serial_next. Never calls a tb_ev_* hook between the start of a
 * hardware attempt and its end (the record would join the hardware footprint
 * and vanish on abort); START is stamped before, COMMIT/ABORT/FALLBACK after.
 */
#ifndef TMT_HTM_H
#define TMT_HTM_H

#include <stdint.h>

#include "config.h"
#include "tx.h"

/* Explicit abort codes the runtime itself uses (bits 24..31 of the status). */
#define HTM_CODE_STM_ACTIVE TMT_HTM_CODE_STM_ACTIVE /* software transactions are running */
#define HTM_CODE_USER_RETRY 0xfeu                   /* tmt_tx_retry() */
#define HTM_CODE_USER_CANCEL 0xfdu                  /* tmt_tx_cancel() */
#define HTM_CODE_NEED_STM 0xfcu                     /* a nested block asked for the STM */
#define HTM_CODE_NEED_SERIAL 0xfbu                  /* the transaction must run in serial mode */
#define HTM_CODE_EMU_EXPLICIT 0x01u                 /* emulation: injected explicit abort */

/* Reads CPUID once. */
void htm_init(void);
/* RTM present and not disabled by microcode (RTM_ALWAYS_ABORT). */
int htm_rtm_usable(void);
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

/* Runs hardware attempts for the transaction in `tx` under the policy.
 * RUNNING: an attempt runs on `path` (the caller sets tx->mode to it);
 * FELL_BACK: the transaction goes to the STM (or to serial mode when
 * tx->serial_next was set); CANCELLED: the program cancelled it. */
enum htm_outcome { HTM_FELL_BACK = 0, HTM_RUNNING = 1, HTM_CANCELLED = 2 };
enum htm_outcome htm_start(struct tmt_tx *tx, int path);
/* Ends the running hardware attempt (may abort it: emulation). */
void htm_commit(struct tmt_tx *tx);
/* Accesses inside a hardware attempt (plain on real RTM; counted, undo-logged
 * and possibly aborted under emulation). */
uint64_t htm_read(struct tmt_tx *tx, uintptr_t addr, unsigned size);
void htm_write(struct tmt_tx *tx, uintptr_t addr, uint64_t value, unsigned size);
/* Aborts the running hardware attempt explicitly with `code` (never returns:
 * real RTM resumes in htm_start, emulation goes through tx_restart). */
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
