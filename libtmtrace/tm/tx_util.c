/*
 * tx_util.c - the runtime's two fatal lines (see tx_util.h).
 *
 * Owns: the wording of a misuse line and of an out-of-memory line inside a
 * transaction. Never: calls into another module of the runtime (every
 * engine may call it, so it must stay a leaf), returns.
 */
#include "tx_util.h"

#include <stdio.h>
#include <stdlib.h>

void tx_misuse(const char *what)
{
    fprintf(stderr, "libtmtrace: %s\n", what);
    fflush(stderr);
    abort();
}

void tx_out_of_memory(const char *what, size_t bytes)
{
    fprintf(stderr, "libtmtrace: out of memory growing %s to %zu bytes inside a transaction\n", what, bytes);
    fflush(stderr);
    abort();
}
