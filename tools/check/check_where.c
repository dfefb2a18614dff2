/*
 * check_where.c - where in the transaction the STM aborts were found: the
 * code address of the access at which each attributed abort was detected
 * (ABORT_PC, format version 4), counted per victim site, and with
 * TMTRACE_ABORT_STACK's records (ABORT_STACK) the frames above it, counted
 * per (site, access, stack).
 *
 * Owns: the two count tables (open addressing) and their order at the end
 * (by site, then count), and the stacks' frames, each interned once as (the
 * frames inside it, its return address).
 * Never: names the addresses (the report symbolises them); counts aborts
 * found at commit or in traces without ABORT_PC (pc 0) as a location.
 */
#include <stdlib.h>

#include "check_state.h"

static size_t where_hash(uint32_t site, uint64_t pc, uint32_t stack)
{
    return (size_t)((pc ^ ((uint64_t)site << 44) ^ ((uint64_t)stack << 20)) * UINT64_C(0x9e3779b97f4a7c15) >> 20);
}

static int where_used(const void *e) { return ((const struct ca_where *)e)->count != 0; }

static size_t where_home(const void *e, size_t nc)
{
    const struct ca_where *w = e;
    return where_hash(w->site, w->pc, w->stack) & (nc - 1);
}

static void tab_add(struct ca_where_tab *t, uint32_t site, uint64_t pc, uint32_t stack)
{
    if (2 * (t->n + 1) > t->cap) {
        size_t nc = t->cap ? 2 * t->cap : 64;
        struct ca_where *n = ca_table_rehash(t->e, t->cap, nc, sizeof *n, where_used, where_home);
        if (!n) {
            t->failed = 1;
            return;
        }
        t->e = n;
        t->cap = nc;
    }
    for (size_t h = where_hash(site, pc, stack) & (t->cap - 1);; h = (h + 1) & (t->cap - 1)) {
        struct ca_where *w = &t->e[h];
        if (!w->count) {
            *w = (struct ca_where){ .site = site, .pc = pc, .stack = stack };
            t->n++;
        }
        if (w->site == site && w->pc == pc && w->stack == stack) {
            w->count++;
            return;
        }
    }
}

void ca_where_add(struct ca_state *s, const struct ca_attribution *a)
{
    if (!a->pc)
        return;
    tab_add(&s->where, a->site, a->pc, 0);
    if (a->stack)
        tab_add(&s->stacks, a->site, a->pc, a->stack);
}

static size_t frame_hash(uint32_t inner, uint64_t pc)
{
    return (size_t)((pc ^ ((uint64_t)inner << 40)) * UINT64_C(0x9e3779b97f4a7c15) >> 24);
}

/* Room for one more frame and its index entry; 0, or -1 out of memory. */
static int frames_room(struct ca_state *s)
{
    if (s->nframes == s->framecap) {
        size_t nc = s->framecap ? 2 * s->framecap : 64;
        struct ca_frame *f = realloc(s->frames, nc * sizeof *f);
        if (!f)
            return -1;
        s->frames = f;
        s->framecap = nc;
    }
    if (2 * (s->nframes + 1) <= s->frame_index_cap)
        return 0;
    size_t nc = s->frame_index_cap ? 2 * s->frame_index_cap : 128;
    uint32_t *ix = calloc(nc, sizeof *ix);
    if (!ix)
        return -1;
    for (size_t i = 0; i < s->nframes; i++) {
        size_t h = frame_hash(s->frames[i].inner, s->frames[i].pc) & (nc - 1);
        while (ix[h])
            h = (h + 1) & (nc - 1);
        ix[h] = (uint32_t)(i + 1);
    }
    free(s->frame_index);
    s->frame_index = ix;
    s->frame_index_cap = nc;
    return 0;
}

uint32_t ca_frame_push(struct ca_state *s, uint32_t inner, uint64_t pc)
{
    if (s->nframes >= UINT32_MAX - 1 || frames_room(s) != 0) {
        s->stacks.failed = 1;
        return 0;
    }
    size_t h = frame_hash(inner, pc) & (s->frame_index_cap - 1);
    for (; s->frame_index[h]; h = (h + 1) & (s->frame_index_cap - 1)) {
        const struct ca_frame *f = &s->frames[s->frame_index[h] - 1];
        if (f->inner == inner && f->pc == pc)
            return s->frame_index[h];
    }
    s->frames[s->nframes++] = (struct ca_frame){ .inner = inner, .pc = pc };
    s->frame_index[h] = (uint32_t)s->nframes;
    return (uint32_t)s->nframes;
}

const struct ca_frame *ca_frame_of(const struct ca_state *s, uint32_t id)
{
    return id && id <= s->nframes ? &s->frames[id - 1] : NULL;
}

static int cmp_where(const void *a, const void *b)
{
    const struct ca_where *x = a, *y = b;
    if (x->site != y->site)
        return x->site < y->site ? -1 : 1;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    if (x->pc != y->pc)
        return x->pc < y->pc ? -1 : 1;
    return (x->stack > y->stack) - (x->stack < y->stack);
}

static void tab_finish(struct ca_where_tab *t)
{
    size_t k = 0;
    t->sorted = 1;
    if (!t->e)
        return;
    for (size_t i = 0; i < t->cap; i++)
        if (t->e[i].count)
            t->e[k++] = t->e[i];
    qsort(t->e, k, sizeof *t->e, cmp_where);
    t->n = k;
}

void ca_where_finish(struct ca_state *s)
{
    tab_finish(&s->where);
    tab_finish(&s->stacks);
}

static const struct ca_where *tab_of_site(const struct ca_where_tab *t, uint32_t site, size_t *n)
{
    *n = 0;
    if (!t->sorted)
        return NULL;
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->e[mid].site < site)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t k = lo;
    while (k < t->n && t->e[k].site == site)
        k++;
    *n = k - lo;
    return *n ? &t->e[lo] : NULL;
}

const struct ca_where *ca_where_of_site(const struct ca_state *s, uint32_t site, size_t *n)
{
    return tab_of_site(&s->where, site, n);
}

const struct ca_where *ca_stacks_of_site(const struct ca_state *s, uint32_t site, size_t *n)
{
    return tab_of_site(&s->stacks, site, n);
}

void ca_where_free(struct ca_state *s)
{
    free(s->where.e);
    free(s->stacks.e);
    free(s->frames);
    free(s->frame_index);
}
