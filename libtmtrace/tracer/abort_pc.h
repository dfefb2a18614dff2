/*
 * abort_pc.h - where in the program an attempt found its conflict: the
 * return address of the transactional access (tmt_read_*, _ITM_R*) at which
 * a software attempt aborted (the ABORT_PC record) and, with
 * TMTRACE_ABORT_STACK, the program's frames above it (ABORT_STACK).
 *
 * Owns: the extent of the runtime's own code, the walk up the stack to the
 * first return address outside it for an access the runtime made on the
 * program's behalf (the _ITM_R* barriers' calls of tmt_read_*), and the
 * walk for the frames above the access. Never: runs on a path that does not
 * abort, or allocates once apc_init has run.
 */
#ifndef TMT_ABORT_PC_H
#define TMT_ABORT_PC_H

#include <stdint.h>

struct tb_thread;

/* Finds the runtime's own code (the executable segment of the shared
 * object that holds it) and loads the unwinder, once, at tracer start. */
void apc_init(void);

/* Records where the abort just recorded on `t` was found: ABORT_PC with the
 * program's code address of the access, and up to TMTRACE_ABORT_STACK
 * ABORT_STACK records of the frames above it. `found` is the return address
 * the read's slow half was entered with: the program's call when it lies
 * outside the runtime's code (always so when the runtime is linked
 * statically: its accessors reach the slow half by tail calls); else the
 * first return address up the stack outside it. */
void apc_record(struct tb_thread *t, uint64_t found);

#endif
