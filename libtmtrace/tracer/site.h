/*
 * site.h - the registry of static transaction sites (tmt_site).
 *
 * Owns: the dense ids (1, 2, ...) given to sites on first use and the list of
 * registered sites that the tracer writes into the trace's metadata and the
 * statistics name. Registration takes a mutex but happens once per site;
 * site_id() on an already registered site is one load.
 */
#ifndef TMT_SITE_H
#define TMT_SITE_H

#include <stddef.h>
#include <stdint.h>

#include "tmtrace.h"

#define SITE_MAX 65535u /* ids fit the 16-bit site field of a trace record */

uint32_t site_register(tmt_site *site);

static inline uint32_t site_id(tmt_site *site)
{
    uint32_t id = __atomic_load_n(&site->id, __ATOMIC_ACQUIRE);
    return id ? id : site_register(site);
}

/* Number of registered sites (ids are 1..site_count()). */
uint32_t site_count(void);
/* The site with this id, or NULL. */
const tmt_site *site_get(uint32_t id);
/* Sites registered since the last call, for the tracer's metadata chunks:
 * fills ids (first, first+1, ...) up to max; returns how many. */
size_t site_take_new(uint32_t *first_id, size_t max);

/* fork() child: the lock may have been held by a thread that does not exist there. */
void site_fork_child(void);

#endif
