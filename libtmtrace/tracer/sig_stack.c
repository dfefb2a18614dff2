/*
 * sig_stack.c - per-thread alternate signal stacks (see sig_stack.h).
 *
 * Owns: the thread-local record of the stack this module installed. From
 * malloc rather than mapped: threads that come and go would otherwise
 * unmap one each, and an unmap in a process with threads on other CPUs
 * stops every one of them for a TLB shootdown. Never runs on the event
 * path (attach and detach only).
 */
#include "sig_stack.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

/* Room for the tracer's handler, which only flags the writer and waits,
 * and for a program's handler it chains to: several times the system's
 * figure for a signal frame, which grows with the CPU's register state. */
#define SIG_STACK_MIN ((size_t)64 << 10)

static __thread void *sig_stack_mine; /* the stack this thread got from sig_stack_enter */

static size_t sig_stack_size(void)
{
    size_t size = SIG_STACK_MIN;
#ifdef _SC_SIGSTKSZ
    long sys = sysconf(_SC_SIGSTKSZ);
    if (sys > 0 && (size_t)sys * 4 > size)
        size = (size_t)sys * 4;
#endif
    return size;
}

void sig_stack_enter(void)
{
    stack_t cur;
    if (sig_stack_mine != NULL || sigaltstack(NULL, &cur) != 0 || !(cur.ss_flags & SS_DISABLE))
        return; /* ours already, or the program's */
    size_t size = sig_stack_size();
    void *p = malloc(size);
    if (p == NULL)
        return;
    stack_t ss = { .ss_sp = p, .ss_flags = 0, .ss_size = size };
    if (sigaltstack(&ss, NULL) != 0) {
        free(p);
        return;
    }
    sig_stack_mine = p;
}

void sig_stack_leave(void)
{
    void *p = sig_stack_mine;
    if (p == NULL)
        return;
    sig_stack_mine = NULL;
    stack_t cur;
    if (sigaltstack(NULL, &cur) != 0)
        return;
    if (cur.ss_sp == p && !(cur.ss_flags & SS_DISABLE)) {
        stack_t off = { .ss_sp = NULL, .ss_flags = SS_DISABLE, .ss_size = 0 };
        if ((cur.ss_flags & SS_ONSTACK) || sigaltstack(&off, NULL) != 0)
            return; /* in use (detached from a handler): left to the thread */
    }
    free(p); /* no longer the thread's alternate stack (or the program replaced it) */
}
