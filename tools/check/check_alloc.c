/*
 * check_alloc.c - the blocks tmt_malloc returned (ALLOC records), so that a
 * heap address can be named by where its block was allocated.
 *
 * Owns: a table of blocks by start address (the latest allocation at each
 * address wins; frees are not recorded, so a block counts as live until
 * another one starts at its address) and the lookup of the block holding
 * an address. Never: grows past CA_ALLOC_MAX blocks (the table is then
 * emptied and starts over, counted in ca_totals.alloc_resets).
 */
#include <stdlib.h>

#include "check_state.h"
#include "error.h"

#define CA_ALLOC_MAX (1u << 22)

static size_t slot_of(uint64_t addr, size_t cap)
{
    return (size_t)((addr >> 3) * UINT64_C(0x9e3779b97f4a7c15) >> 40) & (cap - 1);
}

static int block_used(const void *e) { return ((const struct ca_block *)e)->addr != 0; }
static size_t block_home(const void *e, size_t cap) { return slot_of(((const struct ca_block *)e)->addr, cap); }

static int alloc_grow(struct ca_state *s)
{
    size_t nc = s->alloc_cap ? 2 * s->alloc_cap : 4096;
    if (nc > 2 * (size_t)CA_ALLOC_MAX) {   /* full: start over */
        for (size_t i = 0; i < s->alloc_cap; i++)
            s->allocs[i].addr = 0;
        s->alloc_n = 0;
        s->t.alloc_resets++;
        return 0;
    }
    struct ca_block *n = ca_table_rehash(s->allocs, s->alloc_cap, nc, sizeof *n, block_used, block_home);
    if (!n)
        return error_set("out of memory");
    s->allocs = n;
    s->alloc_cap = nc;
    return 0;
}

int ca_alloc_event(struct ca_state *s, const struct tf_event *ev)
{
    if (ev->addr == 0)
        return 0;
    if (2 * (s->alloc_n + 1) > s->alloc_cap && alloc_grow(s) < 0)
        return -1;
    size_t h = slot_of(ev->addr, s->alloc_cap);
    while (s->allocs[h].addr && s->allocs[h].addr != ev->addr)
        h = (h + 1) & (s->alloc_cap - 1);
    if (!s->allocs[h].addr)
        s->alloc_n++;
    s->allocs[h] = (struct ca_block){ ev->addr, ev->value };
    s->t.allocs++;
    return 0;
}

static const struct ca_block *block_at(const struct ca_state *s, uint64_t start)
{
    if (!s->alloc_cap)
        return NULL;
    for (size_t h = slot_of(start, s->alloc_cap); s->allocs[h].addr; h = (h + 1) & (s->alloc_cap - 1))
        if (s->allocs[h].addr == start)
            return &s->allocs[h];
    return NULL;
}

/* The block holding `addr`: the nearest start at or below it (8-byte steps,
 * malloc's blocks are aligned at least so) whose size covers it. */
const struct ca_block *ca_alloc_find(const struct ca_state *s, uint64_t addr)
{
    if (!s->alloc_n)
        return NULL;
    for (uint64_t d = 0; d <= TF_ALLOC_SIZE_MAX && d <= addr; d += 8) {
        const struct ca_block *b = block_at(s, (addr & ~(uint64_t)7) - d);
        if (b && (addr < b->addr + ca_block_size(b) || ca_block_size(b) == TF_ALLOC_SIZE_MAX))
            return b;
    }
    return NULL;
}

int ca_block_at(const struct ca_state *s, uint64_t addr, uint64_t *base, uint64_t *pc)
{
    const struct ca_block *b = ca_alloc_find(s, addr);
    *base = b ? b->addr : 0;
    *pc = b ? ca_block_pc(b) : 0;
    return b != NULL;
}

void ca_alloc_free(struct ca_state *s) { free(s->allocs); }
