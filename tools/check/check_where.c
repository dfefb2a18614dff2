/*
 * check_where.c - where in the transaction the STM aborts were found: the
 * code address of the access at which each attributed abort was detected
 * (ABORT_PC, format version 4), counted per victim site.
 *
 * Owns: the (site, code address) table (open addressing) and its order at
 * the end (by site, then count).
 * Never: names the addresses (the report symbolises them); counts aborts
 * found at commit or in traces without ABORT_PC (pc 0) as a location.
 */
#include <stdlib.h>

#include "check_state.h"

static size_t where_hash(uint32_t site, uint64_t pc)
{
    return (size_t)((pc ^ ((uint64_t)site << 44)) * UINT64_C(0x9e3779b97f4a7c15) >> 20);
}

static int where_used(const void *e) { return ((const struct ca_where *)e)->count != 0; }

static size_t where_home(const void *e, size_t nc)
{
    const struct ca_where *w = e;
    return where_hash(w->site, w->pc) & (nc - 1);
}

void ca_where_add(struct ca_state *s, const struct ca_attribution *a)
{
    if (!a->pc)
        return;
    if (2 * (s->wheren + 1) > s->wherecap) {
        size_t nc = s->wherecap ? 2 * s->wherecap : 64;
        struct ca_where *n = ca_table_rehash(s->where, s->wherecap, nc, sizeof *n, where_used, where_home);
        if (!n) {
            s->where_failed = 1;
            return;
        }
        s->where = n;
        s->wherecap = nc;
    }
    for (size_t h = where_hash(a->site, a->pc) & (s->wherecap - 1);; h = (h + 1) & (s->wherecap - 1)) {
        struct ca_where *w = &s->where[h];
        if (!w->count) {
            *w = (struct ca_where){ .site = a->site, .pc = a->pc };
            s->wheren++;
        }
        if (w->site == a->site && w->pc == a->pc) {
            w->count++;
            return;
        }
    }
}

static int cmp_where(const void *a, const void *b)
{
    const struct ca_where *x = a, *y = b;
    if (x->site != y->site)
        return x->site < y->site ? -1 : 1;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return (x->pc > y->pc) - (x->pc < y->pc);
}

void ca_where_finish(struct ca_state *s)
{
    size_t k = 0;
    s->where_sorted = 1;
    if (!s->where)
        return;
    for (size_t i = 0; i < s->wherecap; i++)
        if (s->where[i].count)
            s->where[k++] = s->where[i];
    qsort(s->where, k, sizeof *s->where, cmp_where);
    s->wheren = k;
}

const struct ca_where *ca_where_of_site(const struct ca_state *s, uint32_t site, size_t *n)
{
    *n = 0;
    if (!s->where_sorted)
        return NULL;
    size_t lo = 0, hi = s->wheren;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->where[mid].site < site)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t k = lo;
    while (k < s->wheren && s->where[k].site == site)
        k++;
    *n = k - lo;
    return *n ? &s->where[lo] : NULL;
}

void ca_where_free(struct ca_state *s) { free(s->where); }
