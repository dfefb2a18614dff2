/*
 * symbols.h - names for the run-time addresses of a traced process.
 *
 * Owns: turning an address recorded in a trace (a data address, a call site)
 * into `symbol+offset` or `function (file:line)` through the trace's load map
 * (LOADMAP chunks) and the objects' ELF symbol tables and DWARF line tables,
 * read with elfutils libdw. Never fails on a missing, stripped or rebuilt
 * object: the name degrades to the address (and `object+offset` when the
 * address lies in a known object), and a note says why, once per object.
 * Never prints; never exits.
 */
#ifndef TMT_SYMBOLS_H
#define TMT_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "trace_file.h"

struct sym_table;

/* A symbolizer over the objects of a trace (NULL/0 for a trace without a
 * load map: every name is then the address). NULL only when out of memory. */
struct sym_table *sym_open(const struct tf_object *objs, size_t n);
void sym_close(struct sym_table *t);
/* The threads' stacks (META_THREADS with TF_THREADS_STACK; those with no
 * stack recorded are left out): an address in none of the known objects
 * then reads "stack of thread N (+0xoff)" (the offset from the stack's
 * lowest address) or "heap". 0, or -1 out of memory (names stay as they
 * were). */
int sym_set_stacks(struct sym_table *t, const struct tf_thread_info *th, size_t n);

/* A data address in two parts. The object: the symbol holding it (static
 * data, functions) in the executable or a shared object, else
 * `object+0xoff` when it lies in a known object, else the thread's stack
 * or "heap" (sym_set_stacks), or "heap or stack" when the trace records no
 * stacks (reports print the address beside the name). The field: `.member` or
 * `[i]` through the variable's DWARF type (nested as deep as it goes),
 * `+0xoff` when the type is not known, or "" at the symbol's start.
 * In a thread's recorded stack the object is `stack of thread N` and the
 * field `+0xoff` (from the stack's lowest address).
 * Returns 1 when a symbol was found, 0 otherwise; both are always filled. */
int sym_data_parts(struct sym_table *t, uint64_t addr, char *obj, size_t cap, char *field, size_t fcap);

/* The blocks an allocating call returns (`pc`, its return address, as an
 * ALLOC record holds it), when the calling function's DWARF declares
 * exactly one pointer variable to a struct or union on the call's line
 * (`struct foo *p = malloc(...)`), or else exactly one that its location
 * list puts in the return register at the return address: `type` is its name ("struct foo", or
 * the typedef's) and `field` the member at byte `off` of the block
 * (`[i]` first when the block holds several). Returns 1 then, else 0 with
 * both empty. */
int sym_block_member(struct sym_table *t, uint64_t pc, uint64_t off, char *type, size_t tcap, char *field,
                     size_t fcap);
/* Source location of a code address: `function (file:line)`, file without
 * its directory. Returns 1 when a line was found, 0 otherwise (then `out`
 * is `function+0xoff`, `object+0xoff` or "heap or stack"). */
int sym_code(struct sym_table *t, uint64_t pc, char *out, size_t cap);

/* Names, in place, the sites a trace knows by code address alone
 * (TF_SITE_PC_PREFIX: the libitm ABI's transactions): label = the function,
 * file and line = the call's source line. The others are left as they are.
 * Returns how many were named. */
size_t sym_name_sites(struct sym_table *t, struct tf_site *s, size_t n);

/* Notes about objects that could not be read ("", or lines ending in '\n'). */
const char *sym_notes(const struct sym_table *t);

/* A transaction site as reports name it: `label (file:line)`, or
 * `label` / `file:line` when one part is missing; the directory of `file`
 * is dropped. */
void sym_site_name(const struct tf_site *s, char *out, size_t cap);

#endif
