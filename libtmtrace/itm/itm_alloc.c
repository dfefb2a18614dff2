/*
 * itm_alloc.c - allocation and function clones of the libitm ABI:
 * _ITM_malloc, _ITM_calloc, _ITM_free, the transactional clones of operator
 * new/delete (_ZGTt*) and the clone tables that map a function to its
 * transactional clone.
 *
 * Owns: the registered clone tables (sorted copies, under a mutex; they are
 * registered from constructors, possibly before the runtime starts) and
 * their generation, which each registration and removal advances; each
 * thread remembers the answers it found (itm_thread.clone_hits) while the
 * generation stays the same, because a transaction asks for the clone of
 * the same few functions again and again, and under a mutex shared by all
 * threads every call of a function pointer in a transaction would pass a
 * cache line from core to core.
 * Allocation goes through tmt_malloc/tmt_free, so an aborted attempt's
 * allocations are released and frees wait for the commit; operator new and
 * delete are assumed to be the default ones (malloc and free underneath), as
 * the library's own. Calls down into itm_tx.c (the thread's descriptor, and
 * serial mode for a function without a clone), never the other way.
 * Never: throws or unwinds itself.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itm.h"

/* ---- malloc, calloc, free ------------------------------------------------------ */

static inline void *itm_alloc(size_t n)
{
    struct tmt_tx *tx = itm_tx;
    return tx != NULL ? tmt_malloc(tx, n) : malloc(n);
}

static inline void itm_release(void *p)
{
    struct tmt_tx *tx = itm_tx;
    if (tx != NULL)
        tmt_free(tx, p);
    else
        free(p);
}

ITM_ABI void *_ITM_malloc(size_t n) { return itm_alloc(n); }

ITM_ABI void *_ITM_calloc(size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    void *p = itm_alloc(n * size);
    if (p != NULL)
        memset(p, 0, n * size); /* fresh memory: no other transaction can see it yet */
    return p;
}

ITM_ABI void _ITM_free(void *p) { itm_release(p); }

/* ---- operator new and delete ------------------------------------------------- */

/* operator new(size_t): on failure the real one throws std::bad_alloc. */
extern void *_Znwm(size_t) __attribute__((weak));
extern void *_Znam(size_t) __attribute__((weak));

static void *itm_new(size_t n, void *(*real)(size_t), int nothrow)
{
    void *p = itm_alloc(n ? n : 1);
    if (p == NULL && !nothrow) {
        if (real == NULL)
            abort(); /* no C++ runtime to throw std::bad_alloc */
        return real(n); /* throws; memory freed since is still usable */
    }
    return p;
}

ITM_ABI void *_ZGTtnwm(size_t n) { return itm_new(n, _Znwm, 0); }
ITM_ABI void *_ZGTtnam(size_t n) { return itm_new(n, _Znam, 0); }
ITM_ABI void *_ZGTtnwmRKSt9nothrow_t(size_t n, const void *nt)
{
    (void)nt;
    return itm_new(n, _Znwm, 1);
}
ITM_ABI void *_ZGTtnamRKSt9nothrow_t(size_t n, const void *nt)
{
    (void)nt;
    return itm_new(n, _Znam, 1);
}
ITM_ABI void _ZGTtdlPv(void *p) { itm_release(p); }
ITM_ABI void _ZGTtdaPv(void *p) { itm_release(p); }
ITM_ABI void _ZGTtdlPvm(void *p, size_t n)
{
    (void)n;
    itm_release(p);
}
ITM_ABI void _ZGTtdlPvRKSt9nothrow_t(void *p, const void *nt)
{
    (void)nt;
    itm_release(p);
}
ITM_ABI void _ZGTtdaPvRKSt9nothrow_t(void *p, const void *nt)
{
    (void)nt;
    itm_release(p);
}
ITM_ABI void _ZGTtdlPvmRKSt9nothrow_t(void *p, size_t n, const void *nt)
{
    (void)n;
    (void)nt;
    itm_release(p);
}

/* ---- clone tables ------------------------------------------------------------------ */

struct itm_clone {
    void *orig, *clone;
};

struct itm_clone_table {
    const void *key;          /* the table as registered */
    struct itm_clone *entries; /* sorted by orig */
    size_t n;
    struct itm_clone_table *next;
};

static pthread_mutex_t itm_clone_lock = PTHREAD_MUTEX_INITIALIZER;
static struct itm_clone_table *itm_clones;
static uint64_t itm_clone_gen = 1; /* written under itm_clone_lock; a thread's hits start at 0 */

static int itm_clone_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const struct itm_clone *)a)->orig;
    uintptr_t y = (uintptr_t)((const struct itm_clone *)b)->orig;
    return (x > y) - (x < y);
}

ITM_ABI void _ITM_registerTMCloneTable(void *table, size_t n)
{
    struct itm_clone_table *t = malloc(sizeof *t);
    struct itm_clone *e = malloc((n ? n : 1) * sizeof *e);
    if (t == NULL || e == NULL) {
        fprintf(stderr, "libtmtrace-itm: _ITM_registerTMCloneTable: out of memory\n");
        abort();
    }
    memcpy(e, table, n * sizeof *e);
    qsort(e, n, sizeof *e, itm_clone_cmp);
    t->key = table;
    t->entries = e;
    t->n = n;
    pthread_mutex_lock(&itm_clone_lock);
    t->next = itm_clones;
    itm_clones = t;
    __atomic_add_fetch(&itm_clone_gen, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&itm_clone_lock);
}

ITM_ABI void _ITM_deregisterTMCloneTable(void *table)
{
    pthread_mutex_lock(&itm_clone_lock);
    for (struct itm_clone_table **p = &itm_clones; *p; p = &(*p)->next) {
        if ((*p)->key == table) {
            struct itm_clone_table *t = *p;
            *p = t->next;
            free(t->entries);
            free(t);
            break;
        }
    }
    __atomic_add_fetch(&itm_clone_gen, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&itm_clone_lock);
}

/* The transactional clone of `fn`, or NULL, from the tables. */
__attribute__((noinline)) static void *itm_clone_search(void *fn, uint64_t *gen)
{
    struct itm_clone key = { fn, NULL };
    void *found = NULL;
    pthread_mutex_lock(&itm_clone_lock);
    *gen = itm_clone_gen;
    for (struct itm_clone_table *t = itm_clones; t && !found; t = t->next) {
        const struct itm_clone *c = bsearch(&key, t->entries, t->n, sizeof key, itm_clone_cmp);
        if (c != NULL)
            found = c->clone;
    }
    pthread_mutex_unlock(&itm_clone_lock);
    return found;
}

static inline struct itm_clone_hit *itm_clone_slot(struct itm_thread *t, const void *fn)
{
    uintptr_t a = (uintptr_t)fn;
    return &t->clone_hits[((a >> 4) ^ (a >> 10)) & (ITM_CLONE_HITS - 1)];
}

/* The tables' answer, remembered by the thread (when it has its state)
 * under the generation it was found in. */
__attribute__((noinline)) static void *itm_clone_miss(void *fn)
{
    uint64_t gen;
    void *c = itm_clone_search(fn, &gen);
    struct itm_thread *t = itm_me;
    if (t == NULL || c == NULL)
        return c;
    if (t->clone_gen != gen) {
        memset(t->clone_hits, 0, sizeof t->clone_hits);
        t->clone_gen = gen;
    }
    struct itm_clone_hit *h = itm_clone_slot(t, fn);
    h->fn = fn;
    h->clone = c;
    return c;
}

/* The transactional clone of `fn`, or NULL: the thread's remembered answer
 * while no table came or went since, else the tables'. A table removed
 * while another thread still calls into its library is the program's
 * error (its code is being unloaded), so a hit one generation old does no
 * harm that the tables' answer would not. */
static inline void *itm_clone_of(void *fn)
{
    struct itm_thread *t = itm_me;
    if (TX_LIKELY(t != NULL && t->clone_gen == __atomic_load_n(&itm_clone_gen, __ATOMIC_ACQUIRE))) {
        const struct itm_clone_hit *h = itm_clone_slot(t, fn);
        if (TX_LIKELY(h->fn == fn)) /* an empty slot answers NULL for NULL: right too */
            return h->clone;
    }
    return itm_clone_miss(fn);
}

ITM_ABI void *_ITM_getTMCloneOrIrrevocable(void *fn)
{
    void *c = itm_clone_of(fn);
    if (c != NULL)
        return c;
    struct tmt_tx *tx = itm_tx;
    if (tx != NULL && tx->depth > 0)
        itm_go_serial(tx); /* an unknown function: run it alone */
    return fn;
}

ITM_ABI void *_ITM_getTMCloneSafe(void *fn)
{
    void *c = itm_clone_of(fn);
    if (c == NULL) {
        fprintf(stderr, "libtmtrace-itm: _ITM_getTMCloneSafe: %p has no transactional clone\n", fn);
        abort();
    }
    return c;
}
