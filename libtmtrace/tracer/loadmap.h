/*
 * loadmap.h - the traced process's load map, for offline symbolisation.
 *
 * Owns: listing the executable and the shared objects mapped in the process
 * (dl_iterate_phdr), with their load bias, the extent of their loadable
 * segments and their GNU build-ids. Never on the event path; never reads
 * the objects' files (everything comes from memory the loader mapped).
 */
#ifndef TMT_LOADMAP_H
#define TMT_LOADMAP_H

#include <stddef.h>

#include "trace_file.h"

/* Fills at most `max` objects; returns how many (the executable first). */
size_t loadmap_collect(struct tf_object *out, size_t max);

#endif
