/*
 * trace_buffer.c - per-thread trace buffers (see trace_buffer.h).
 * PLACEHOLDER until the tracer lands: threads attach with recording off.
 */
#include "trace_buffer.h"

#include <string.h>

struct tf_record *tb_chunk_full(struct tb_thread *t)
{
    t->dropped++;
    return NULL;
}

uint64_t tb_skew(struct tb_thread *t, uint64_t tsc, uint32_t aux)
{
    (void)t;
    (void)aux;
    return tsc;
}

void tb_tick(struct tb_thread *t, uint64_t tsc)
{
    (void)tsc;
    t->tick_tsc = UINT64_MAX;
}

int tb_attach(struct tb_thread *t)
{
    memset(t, 0, sizeof *t);
    t->level = CONFIG_EVENTS_OFF;
    t->tick_tsc = UINT64_MAX;
    return 0;
}

void tb_detach(struct tb_thread *t) { t->level = CONFIG_EVENTS_OFF; }

void tb_flush(struct tb_thread *t) { (void)t; }
