/*
 * abort_pc.h - where in the program an attempt found its conflict: the
 * return address of the transactional access (tmt_read_*, _ITM_R*) at which
 * a software attempt aborted, for the ABORT_PC record.
 *
 * Owns: the extent of the runtime's own code and the walk up the stack to
 * the first return address outside it. Never: runs on a path that does not
 * abort, or allocates once apc_init has run.
 */
#ifndef TMT_ABORT_PC_H
#define TMT_ABORT_PC_H

#include <stdint.h>

/* Finds the runtime's own code (the executable segment of the shared
 * object that holds it) and loads the unwinder, once, at tracer start. */
void apc_init(void);

/* The first return address up the caller's stack that lies outside the
 * runtime's code: the program's call of the access. 0 when there is none
 * or the runtime is linked into the program itself (static), where its
 * code cannot be told from the program's. */
uint64_t apc_program_pc(void);

#endif
