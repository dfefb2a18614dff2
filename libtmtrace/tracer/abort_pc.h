/*
 * abort_pc.h - where in the program an attempt found its conflict: the
 * return address of the transactional access (tmt_read_*, _ITM_R*) at which
 * a software attempt aborted, for the ABORT_PC record.
 *
 * Owns: the extent of the runtime's own code and, for an access the runtime
 * made on the program's behalf (the _ITM_R* barriers' calls of tmt_read_*),
 * the walk up the stack to the first return address outside it. Never: runs
 * on a path that does not abort, or allocates once apc_init has run.
 */
#ifndef TMT_ABORT_PC_H
#define TMT_ABORT_PC_H

#include <stdint.h>

/* Finds the runtime's own code (the executable segment of the shared
 * object that holds it) and loads the unwinder, once, at tracer start. */
void apc_init(void);

/* The program's code address of the access whose conflict the STM found:
 * `found`, the return address the read's slow half was entered with, when
 * it lies outside the runtime's code (always so when the runtime is linked
 * statically: its accessors reach the slow half by tail calls, so `found`
 * is the program's call); else the first return address up the stack
 * outside it, 0 when there is none. */
uint64_t apc_program_pc(uint64_t found);

#endif
