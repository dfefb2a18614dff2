/*
 * tx_upcall.h - the one call the engines make back into the transaction's
 * life cycle (tx_life.c): the restart after an abort they found themselves.
 *
 * Owns: the contract of that call, and the rule that it is the only one.
 * Every other call among the modules of tm/ goes downward: tx_life.c calls
 * the engines (stm.c, htm.c, txmem.c) and the registry (tx_registry.c); they
 * never call tx_life.c except through what this header declares (the
 * architecture check reads the names declared here as the only calls
 * allowed to go up). Never: grows. An engine that needs more from the life
 * cycle returns it to its caller instead (htm.h's htm_next/htm_begin are how
 * the hardware path hands its policy's verdicts and its aborts back).
 *
 * The abort/restart path. An attempt ends early in one of two ways:
 *  - its own path found the conflict (stm.c: a read or the commit; htm.c: an
 *    emulated hardware abort): that module undoes its own part, then calls
 *    tx_restart, which never calls back into it;
 *  - the program or the runtime asks (tmt_tx_retry/cancel, a read-only block
 *    that writes, serial mode): tx_abort (tx_life.h) undoes the running
 *    attempt through its module, then calls tx_restart.
 * A real RTM abort resumes at _xbegin inside htm_begin, which returns its
 * status to tx_life.c; nothing is rolled back by software there.
 */
#ifndef TMT_TX_UPCALL_H
#define TMT_TX_UPCALL_H

#include <stdint.h>

struct tmt_tx;

/* The running attempt's part is already undone by its own module. Counts
 * and records the ABORT (`reason`: enum tmt_abort_reason; `where`: the
 * conflicting address; `found`: the hardware status word, or what a
 * software attempt found on the stripe, tf_abort_held() or the version, see
 * trace_format.h), leaves the software-transaction counter, undoes the
 * attempt's allocations, applies contention management (TMTRACE_SERIAL_AFTER
 * conflict aborts make the next attempt serial) and resumes at the
 * transaction's restart point: tmt_tx.restart when set, else longjmp to
 * `env`. Never returns. */
__attribute__((noreturn)) void tx_restart(struct tmt_tx *tx, unsigned reason, uint64_t where, uint64_t found);

#endif
