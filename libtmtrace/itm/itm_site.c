/*
 * itm_site.c - transaction sites of the libitm ABI: one tmt_site per call
 * site of _ITM_beginTransaction (its return address).
 *
 * Owns: the table from code address to site (a global open-addressing table
 * under a mutex, and a small per-thread cache in front of it) and the sites'
 * names: TF_SITE_PC_PREFIX and the address, which the tools turn into
 * `function (file:line)` through the trace's load map. Never symbolises
 * anything itself; sites are never freed (the registry keeps pointers).
 */
#include "itm_site.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "trace_format.h"

struct itm_site {
    tmt_site site;
    uintptr_t pc;
    char label[40];
};

static pthread_mutex_t itm_site_lock = PTHREAD_MUTEX_INITIALIZER;
static struct itm_site **itm_sites; /* open addressing on the pc */
static size_t itm_site_cap, itm_site_n;

#define ITM_SITE_CACHE 64u
static __thread struct {
    uintptr_t pc;
    tmt_site *site;
} itm_site_cache[ITM_SITE_CACHE] __attribute__((tls_model("initial-exec")));

static inline size_t itm_site_hash(uintptr_t pc) { return (size_t)((pc * 0x9E3779B97F4A7C15ull) >> 20); }

static int itm_site_grow(void)
{
    size_t cap = itm_site_cap ? itm_site_cap * 2 : 256;
    struct itm_site **t = calloc(cap, sizeof *t);
    if (t == NULL)
        return -1;
    for (size_t i = 0; i < itm_site_cap; i++) {
        struct itm_site *s = itm_sites[i];
        if (s == NULL)
            continue;
        size_t j = itm_site_hash(s->pc) & (cap - 1);
        while (t[j])
            j = (j + 1) & (cap - 1);
        t[j] = s;
    }
    free(itm_sites);
    itm_sites = t;
    itm_site_cap = cap;
    return 0;
}

/* Finds or makes the site of `pc`; NULL only when out of memory. */
static tmt_site *itm_site_lookup(uintptr_t pc)
{
    tmt_site *found = NULL;
    pthread_mutex_lock(&itm_site_lock);
    if ((itm_site_n + 1) * 2 <= itm_site_cap || itm_site_grow() == 0) {
        size_t j = itm_site_hash(pc) & (itm_site_cap - 1);
        while (itm_sites[j] && itm_sites[j]->pc != pc)
            j = (j + 1) & (itm_site_cap - 1);
        if (itm_sites[j] == NULL) {
            struct itm_site *s = calloc(1, sizeof *s);
            if (s != NULL) {
                s->pc = pc;
                snprintf(s->label, sizeof s->label, TF_SITE_PC_PREFIX "%llx", (unsigned long long)pc);
                s->site.file = "";
                s->site.line = 0;
                s->site.label = s->label;
                itm_sites[j] = s;
                itm_site_n++;
            }
        }
        if (itm_sites[j])
            found = &itm_sites[j]->site;
    }
    pthread_mutex_unlock(&itm_site_lock);
    return found;
}

static inline unsigned itm_site_slot(uintptr_t pc) { return (unsigned)(pc ^ (pc >> 6)) & (ITM_SITE_CACHE - 1); }

/* A pc the thread's cache does not hold: the table's site, remembered. Out
 * of line, so that a hit saves no registers. */
__attribute__((noinline)) static tmt_site *itm_site_miss(uintptr_t pc)
{
    tmt_site *s = itm_site_lookup(pc);
    if (s == NULL) {
        static tmt_site unknown = { "", 0, "libitm transaction", 0 };
        return &unknown;
    }
    unsigned k = itm_site_slot(pc);
    itm_site_cache[k].pc = pc;
    itm_site_cache[k].site = s;
    return s;
}

tmt_site *itm_site_of(uintptr_t pc)
{
    unsigned k = itm_site_slot(pc);
    if (__builtin_expect(itm_site_cache[k].pc == pc, 1))
        return itm_site_cache[k].site;
    return itm_site_miss(pc);
}
