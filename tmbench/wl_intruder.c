/*
 * wl_intruder.c - the network intrusion detection workload. Setup captures
 * a trace of packet fragments: flows of random lowercase payload, a known
 * set of which carry an attack signature, each split into fragments and all
 * fragments shuffled into one queue. Workers take a fragment from the shared
 * queue (transaction), add it to the flow's entry in a shared reassembly
 * dictionary (transaction), and whoever completes a flow removes it
 * (transaction) and scans the reassembled payload for the signature outside
 * any transaction.
 *
 * The workload is finite: a worker stops when the queue is empty, whatever
 * --duration or --ops say (size a run with --flows). It owns the packet
 * model and its check; it never frees memory unlinked during the run.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "rbtree_tm.h"
#include "tm.h"
#include "json_writer.h"

/* Uppercase cannot occur in the lowercase payload, so only planted
 * signatures are ever found. */
static const char intr_signature[] = "XPLOIT";
enum { INTR_MIN_LEN = 16, INTR_MAX_LEN = 256 };

struct intr_frag {
    long flow;
    long index;  /* position in the flow, 0 .. count-1 */
    long count;  /* fragments in the flow */
    long len;
    const char *data;
};

/* A flow being reassembled: one slot per fragment. */
struct intr_rec {
    long received;
    struct intr_frag *slot[];
};

struct intruder {
    long flows, attack_pct, max_frags, sabotage;
    char *payload;             /* flow i's bytes at payload + i * INTR_MAX_LEN */
    struct intr_frag *frags;   /* all fragments */
    struct intr_frag **queue;  /* the capture, shuffled; read-only during the run */
    long nfrags;
    long head;                 /* next queue position: the contended word */
    struct rbt dict;           /* flow id -> struct intr_rec */
    struct rbt_grave grave;
    unsigned char *attack;     /* planted, per flow */
    long planted;
    long *processed;           /* per flow: times it was reassembled (atomic adds) */
    unsigned char *found;      /* per flow: signature detected */
    long detected;
};

static int intr_setup(const struct bench_opts *o, void **state)
{
    struct intruder *w = calloc(1, sizeof *w);
    if (!w) {
        fprintf(stderr, "intruder: out of memory\n");
        return -1;
    }
    *state = w;
    w->flows = bench_opt_long(o, "flows", 16384, 1, 1L << 22);
    w->attack_pct = bench_opt_long(o, "attack", 10, 0, 100);
    w->max_frags = bench_opt_long(o, "max-fragments", 8, 1, INTR_MIN_LEN);
    w->sabotage = bench_opt_long(o, "sabotage", 0, 0, 1);
    if (bench_opt_error)
        return -1;
    size_t nf = (size_t)w->flows;
    w->payload = malloc(nf * INTR_MAX_LEN);
    w->frags = malloc(nf * (size_t)w->max_frags * sizeof *w->frags);
    w->queue = malloc(nf * (size_t)w->max_frags * sizeof *w->queue);
    w->attack = calloc(nf, 1);
    w->found = calloc(nf, 1);
    w->processed = calloc(nf, sizeof *w->processed);
    if (!w->payload || !w->frags || !w->queue || !w->attack || !w->found || !w->processed) {
        fprintf(stderr, "intruder: out of memory for %ld flows\n", w->flows);
        return -1;
    }
    rbt_init(&w->dict);
    /* Setup draws from its own stream, independent of the workers. */
    struct bench_thread rng = {.rng = o->seed * 0x9E3779B97F4A7C15ULL + 3};
    long siglen = (long)sizeof intr_signature - 1;
    for (long f = 0; f < w->flows; f++) {
        char *p = w->payload + f * INTR_MAX_LEN;
        long len = INTR_MIN_LEN + (long)(bench_rand(&rng) % (INTR_MAX_LEN - INTR_MIN_LEN + 1));
        for (long i = 0; i < len; i++)
            p[i] = (char)('a' + bench_rand(&rng) % 26);
        if ((long)(bench_rand(&rng) % 100) < w->attack_pct) {
            memcpy(p + bench_rand(&rng) % (uint64_t)(len - siglen + 1), intr_signature, (size_t)siglen);
            w->attack[f] = 1;
            w->planted++;
        }
        /* Near-equal pieces; fragment boundaries may cut the signature. */
        long count = 1 + (long)(bench_rand(&rng) % (uint64_t)w->max_frags);
        for (long k = 0, off = 0; k < count; k++) {
            long piece = (len - off) / (count - k);
            w->frags[w->nfrags] = (struct intr_frag){f, k, count, piece, p + off};
            w->queue[w->nfrags] = &w->frags[w->nfrags];
            w->nfrags++;
            off += piece;
        }
    }
    for (long i = w->nfrags - 1; i > 0; i--) {
        long j = (long)(bench_rand(&rng) % (uint64_t)(i + 1));
        struct intr_frag *t = w->queue[i];
        w->queue[i] = w->queue[j];
        w->queue[j] = t;
    }
    return 0;
}

/* A worker's step: inputs and results of its transactions. Transactions live
 * in non-inlined functions and exchange data only through this struct, so
 * no caller variable sits in the frame a restart rewinds. */
struct intr_step {
    struct intr_frag *frag;   /* dequeued, NULL when the queue is empty */
    struct intr_rec *done;    /* the flow this fragment completed, or NULL */
    struct rbt_node *node;    /* the dictionary node that left with it */
};

static __attribute__((noinline)) void intr_dequeue(struct intruder *w, struct intr_step *s)
{
    TM_BEGIN("intruder-capture")
        long h = TM_READ(w->head);
        s->frag = NULL;
        if (h < w->nfrags) {
            s->frag = w->queue[h];
            TM_WRITE(w->head, h + 1);
        }
    TM_END;
}

static __attribute__((noinline)) void intr_insert(struct intruder *w, struct intr_step *s)
{
    const struct intr_frag *f = s->frag;
    TM_BEGIN("intruder-reassemble")
        s->done = NULL;
        struct intr_rec *r = rbt_get(&w->dict, f->flow, 1);
        if (!r) {
            r = TM_MALLOC(sizeof *r + (size_t)f->count * sizeof r->slot[0]);
            if (r) {
                /* Private until inserted. */
                r->received = 0;
                for (long i = 0; i < f->count; i++)
                    r->slot[i] = NULL;
                rbt_insert(&w->dict, f->flow, r, 1);
            }
        }
        if (r) {
            long n = TM_READ(r->received) + 1;
            TM_WRITE_P(r->slot[f->index], s->frag);
            TM_WRITE(r->received, n);
            if (n == f->count)
                s->done = r;
        }
    TM_END;
}

static __attribute__((noinline)) void intr_remove(struct intruder *w, struct intr_step *s)
{
    TM_BEGIN("intruder-remove")
        void *val = NULL;
        s->node = rbt_remove(&w->dict, s->frag->flow, &val, 1);
    TM_END;
}

/* Outside transactions: the removed flow is private to this thread now. */
static int intr_detect(const struct intr_rec *r, long count, char *buf)
{
    long len = 0;
    for (long i = 0; i < count; i++) {
        memcpy(buf + len, r->slot[i]->data, (size_t)r->slot[i]->len);
        len += r->slot[i]->len;
    }
    return memmem(buf, (size_t)len, intr_signature, sizeof intr_signature - 1) != NULL;
}

static void intr_worker(void *state, struct bench_thread *bt)
{
    struct intruder *w = state;
    struct intr_step s;
    char buf[INTR_MAX_LEN];
    long detected = 0;
    for (;;) {
        intr_dequeue(w, &s);
        if (!s.frag)
            break;
        intr_insert(w, &s);
        if (s.done) {
            intr_remove(w, &s);
            long flow = s.frag->flow;
            int hit = intr_detect(s.done, s.frag->count, buf);
            detected += hit;
            __atomic_fetch_add(&w->processed[flow], 1, __ATOMIC_RELAXED);
            if (hit)
                __atomic_store_n(&w->found[flow], 1, __ATOMIC_RELAXED);
            rbt_grave_put(&w->grave, s.done);
            rbt_grave_put(&w->grave, s.node);
        }
        bt->ops++;
    }
    __atomic_fetch_add(&w->detected, detected, __ATOMIC_RELAXED);
}

static int intr_check(void *state, char *msg, size_t cap)
{
    struct intruder *w = state;
    if (w->sabotage)
        w->found[0] ^= 1;
    if (w->head != w->nfrags) {
        snprintf(msg, cap, "queue not drained: %ld of %ld fragments taken", w->head, w->nfrags);
        return 1;
    }
    if (w->dict.root) {
        snprintf(msg, cap, "flow %ld is still in the reassembly dictionary", w->dict.root->key);
        return 1;
    }
    for (long f = 0; f < w->flows; f++) {
        if (w->processed[f] != 1) {
            snprintf(msg, cap, "flow %ld was reassembled %ld times, expected once", f, w->processed[f]);
            return 1;
        }
        if (w->found[f] != w->attack[f]) {
            snprintf(msg, cap, "flow %ld: attack %s but %s", f, w->attack[f] ? "planted" : "not planted",
                     w->found[f] ? "detected" : "not detected");
            return 1;
        }
    }
    if (w->detected != w->planted) {
        snprintf(msg, cap, "detected %ld attacks, planted %ld", w->detected, w->planted);
        return 1;
    }
    return 0;
}

static void intr_json(void *state, struct jw *j)
{
    struct intruder *w = state;
    jw_ki64(j, "flows", w->flows);
    jw_ki64(j, "fragments", w->nfrags);
    jw_ki64(j, "attack", w->attack_pct);
    jw_ki64(j, "max_fragments", w->max_frags);
    jw_ki64(j, "planted", w->planted);
    jw_ki64(j, "detected", w->detected);
}

static void intr_teardown(void *state)
{
    struct intruder *w = state;
    if (!w)
        return;
    rbt_destroy(&w->dict, free);
    rbt_grave_free(&w->grave);
    free(w->payload);
    free(w->frags);
    free(w->queue);
    free(w->attack);
    free(w->found);
    free(w->processed);
    free(w);
}

struct workload wl_intruder = {
    .name = "intruder",
    .help = "  --flows N           flows in the capture (default 16384); the run ends when all are processed\n"
            "  --attack P          percent of flows carrying the attack signature (default 10)\n"
            "  --max-fragments N   a flow is split into 1..N fragments, N <= 16 (default 8)\n",
    .setup = intr_setup,
    .worker = intr_worker,
    .check = intr_check,
    .json_extra = intr_json,
    .teardown = intr_teardown,
};
