/*
 * abort_pc.c - the program's code address of an aborting access (see
 * abort_pc.h).
 *
 * Owns: the runtime's own code range (found once with dl_iterate_phdr) and
 * the stack walk (glibc's backtrace, whose unwinder is loaded in apc_init)
 * for the accesses whose found address is the runtime's own (the GCC-TM
 * barriers call the accessors; a shared build only, where the range is
 * known), and the walk for TMTRACE_ABORT_STACK's frames above the access.
 * Never: touches the event path: it runs only when a software attempt
 * aborts at a read.
 */
#include "abort_pc.h"

#include <execinfo.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "trace_buffer.h"

/* Frames walked at most: the access's own frames in the runtime are few
 * (the abort path, the barrier's slow half, the accessor). */
#define APC_DEPTH 16
#define APC_STACK_MAX 16 /* TMTRACE_ABORT_STACK's largest value */

static uintptr_t apc_lo, apc_hi; /* the runtime's code; empty: unknown */

/* The executable segment of the shared object holding apc_init. */
static int apc_find(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uintptr_t me = (uintptr_t)arg;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + p->p_vaddr, hi = lo + p->p_memsz;
        if (p->p_type != PT_LOAD || !(p->p_flags & PF_X) || me < lo || me >= hi)
            continue;
        /* The executable itself (name ""): the runtime is linked into the
         * program, whose code it cannot tell from its own. */
        if (info->dlpi_name != NULL && info->dlpi_name[0] != '\0') {
            apc_lo = lo;
            apc_hi = hi;
        }
        return 1;
    }
    return 0;
}

void apc_init(void)
{
    if (apc_hi != 0)
        return;
    dl_iterate_phdr(apc_find, (void *)(uintptr_t)&apc_init);
    void *warm[1];
    (void)backtrace(warm, 1); /* loads the unwinder now, not in an abort */
}

/* The program's code address of the access (see apc_record); 0 when the
 * walk finds none. */
static uint64_t apc_program_pc(uint64_t found)
{
    if (apc_hi == 0 || found < apc_lo || found >= apc_hi)
        return found;
    void *ret[APC_DEPTH];
    int n = backtrace(ret, APC_DEPTH);
    for (int i = 0; i < n; i++) {
        uintptr_t ip = (uintptr_t)ret[i];
        if (ip < apc_lo || ip >= apc_hi)
            return ip;
    }
    return 0;
}

/* Up to n frames above the access at `pc`: the return addresses after pc's
 * own on the stack (the frames below it are the runtime's abort path). */
static void apc_stack(struct tb_thread *t, uint64_t pc, unsigned n)
{
    void *ret[APC_DEPTH + APC_STACK_MAX];
    if (n > APC_STACK_MAX)
        n = APC_STACK_MAX;
    int got = backtrace(ret, APC_DEPTH + (int)n), i = 0;
    while (i < got && (uintptr_t)ret[i] != pc)
        i++;
    for (unsigned d = 1; d <= n && i + (int)d < got; d++)
        tb_ev_abort_stack(t, (uintptr_t)ret[i + (int)d], d);
}

void apc_record(struct tb_thread *t, uint64_t found)
{
    uint64_t pc = apc_program_pc(found);
    tb_ev_abort_pc(t, pc);
    if (config.abort_stack > 0 && pc != 0)
        apc_stack(t, pc, (unsigned)config.abort_stack);
}
