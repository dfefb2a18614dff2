/*
 * site.c - registry of static transaction sites (see site.h).
 * Never on the event path except for a site's first transaction.
 */
#include "site.h"

#include <pthread.h>

static pthread_mutex_t site_lock = PTHREAD_MUTEX_INITIALIZER;
static const tmt_site *sites[SITE_MAX + 1];
static uint32_t nsites;    /* guarded by site_lock; read atomically elsewhere */
static uint32_t ntaken;    /* sites already handed to site_take_new() */
static tmt_site overflow_site = { "(overflow)", 0, "more sites than the trace can name", SITE_MAX };

uint32_t site_register(tmt_site *site)
{
    pthread_mutex_lock(&site_lock);
    uint32_t id = site->id;
    if (id == 0) {
        if (nsites + 1 < SITE_MAX) {
            id = ++nsites;
            sites[id] = site;
        } else {
            /* Every site past the limit shares the last id. */
            id = SITE_MAX;
            sites[SITE_MAX] = &overflow_site;
        }
        __atomic_store_n(&site->id, id, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&site_lock);
    return id;
}

void site_fork_child(void) { pthread_mutex_init(&site_lock, NULL); }

uint32_t site_count(void) { return __atomic_load_n(&nsites, __ATOMIC_ACQUIRE); }

const tmt_site *site_get(uint32_t id)
{
    if (id == 0 || id > SITE_MAX)
        return NULL;
    pthread_mutex_lock(&site_lock);
    const tmt_site *s = sites[id];
    pthread_mutex_unlock(&site_lock);
    return s;
}

size_t site_take_new(uint32_t *first_id, size_t max)
{
    pthread_mutex_lock(&site_lock);
    size_t n = nsites - ntaken;
    if (n > max)
        n = max;
    *first_id = ntaken + 1;
    ntaken += (uint32_t)n;
    pthread_mutex_unlock(&site_lock);
    return n;
}
