/*
 * itm_eh.c - C++ exceptions and the libitm ABI: the exception hooks that
 * GCC's transactional code calls (_ITM_cxa_*), and the bookkeeping of an
 * exception that leaves the outermost transaction through
 * _ITM_commitTransactionEH.
 *
 * Owns: the meaning of itm_thread's eh_in_flight and eh_uncaught. The C++
 * runtime's entry points are weak references: a C program never calls the
 * hooks that need them. A leaf of the ABI's modules: itm_tx.c notes and
 * abandons an exception here; nothing here calls back into it.
 * Never: throws or unwinds itself (the C++ runtime does, on the program's
 * behalf).
 */
#include <stdio.h>
#include <stdlib.h>

#include "itm.h"

extern void *__cxa_allocate_exception(size_t) __attribute__((weak));
extern void __cxa_free_exception(void *) __attribute__((weak));
extern void __cxa_throw(void *, void *, void (*)(void *)) __attribute__((weak, noreturn));
extern void *__cxa_begin_catch(void *) __attribute__((weak));
extern void __cxa_end_catch(void) __attribute__((weak));
/* The C++ ABI's per-thread exception globals (caught stack, uncaught count). */
struct itm_cxa_eh_globals {
    void *caught;
    unsigned int uncaught;
};
extern struct itm_cxa_eh_globals *__cxa_get_globals(void) __attribute__((weak));
/* The unwinder's: destroys an exception by its unwind header (the pointer
 * _ITM_commitTransactionEH receives), running its cleanup. */
extern void _Unwind_DeleteException(void *) __attribute__((weak));

__attribute__((noreturn, cold)) static void itm_no_cxx(const char *what)
{
    fprintf(stderr, "libtmtrace-itm: %s: no C++ runtime in the process\n", what);
    abort();
}

ITM_ABI void *_ITM_cxa_allocate_exception(size_t size)
{
    if (__cxa_allocate_exception == NULL)
        itm_no_cxx("_ITM_cxa_allocate_exception");
    return __cxa_allocate_exception(size);
}

ITM_ABI void _ITM_cxa_free_exception(void *exc)
{
    if (__cxa_free_exception == NULL)
        itm_no_cxx("_ITM_cxa_free_exception");
    __cxa_free_exception(exc);
}

ITM_ABI __attribute__((noreturn)) void _ITM_cxa_throw(void *obj, void *tinfo, void (*dest)(void *))
{
    if (__cxa_throw == NULL)
        itm_no_cxx("_ITM_cxa_throw");
    __cxa_throw(obj, tinfo, dest);
}

ITM_ABI void *_ITM_cxa_begin_catch(void *exc)
{
    if (__cxa_begin_catch == NULL)
        itm_no_cxx("_ITM_cxa_begin_catch");
    return __cxa_begin_catch(exc);
}

ITM_ABI void _ITM_cxa_end_catch(void)
{
    if (__cxa_end_catch == NULL)
        itm_no_cxx("_ITM_cxa_end_catch");
    __cxa_end_catch();
}

void itm_eh_note(struct itm_thread *t, void *exc_ptr)
{
    t->eh_in_flight = exc_ptr;
    t->eh_uncaught = __cxa_get_globals ? __cxa_get_globals()->uncaught : 0;
}

/* The commit an exception was leaving through failed: the transaction runs
 * again from its start and will throw anew, so the exception in flight is
 * dropped as if it had never been thrown (`eh_in_flight` is its unwind
 * header, not the thrown object). */
void itm_eh_abandon(struct itm_thread *t)
{
    if (__cxa_get_globals != NULL && t->eh_uncaught > 0)
        __cxa_get_globals()->uncaught = t->eh_uncaught - 1;
    if (_Unwind_DeleteException != NULL && t->eh_in_flight != NULL)
        _Unwind_DeleteException(t->eh_in_flight);
    t->eh_in_flight = NULL;
}
