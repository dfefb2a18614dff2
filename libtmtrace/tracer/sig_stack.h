/*
 * sig_stack.h - an alternate signal stack for each traced thread, so that
 * the tracer's handler of a fatal signal (tracer.c) can run when what
 * failed is the thread's own stack: an overflow.
 *
 * Owns: the stacks it installs, one per thread (the thread's own, from
 * malloc, kept in thread-local storage). Never: replaces a stack the
 * program installed, or frees one that is no longer the thread's alternate
 * stack or that the thread is running on. Calls no other module.
 */
#ifndef TMT_SIG_STACK_H
#define TMT_SIG_STACK_H

/* On the calling thread (at attach): installs an alternate signal stack
 * unless the thread has one; quietly nothing without memory. */
void sig_stack_enter(void);
/* On the calling thread (at detach): removes and frees the stack
 * sig_stack_enter installed, if it is still the thread's. */
void sig_stack_leave(void);

#endif
