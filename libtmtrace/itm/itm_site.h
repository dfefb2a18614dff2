/*
 * itm_site.h - the transaction site of a call of _ITM_beginTransaction.
 *
 * Owns: mapping the call's return address to a registered-on-first-use
 * tmt_site (see itm_site.c). Never symbolises: the tools do, from the load map.
 */
#ifndef TMT_ITM_SITE_H
#define TMT_ITM_SITE_H

#include <stdint.h>

#include "tmtrace.h"

/* The site of the transaction whose _ITM_beginTransaction returns to `pc`.
 * One cache probe when the thread has seen it before. Never NULL. */
tmt_site *itm_site_of(uintptr_t pc);

#endif
