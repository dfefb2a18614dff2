/*
 * rbtree_tm.h - a red-black tree (long key -> pointer value) whose every
 * operation can run either inside a transaction (tx != 0: each shared field
 * goes through TM_READ/TM_WRITE) or on private data (tx == 0: plain
 * accesses, used by setup and by the checks after the threads joined).
 *
 * Owns the tree's nodes and their shape, and the graveyard where memory
 * unlinked by committed transactions waits. It never frees such memory while
 * threads run: attempts that are about to abort may still be reading it.
 */
#ifndef TMBENCH_RBTREE_TM_H
#define TMBENCH_RBTREE_TM_H

#include <stddef.h>

#include "tm.h"

struct rbt_node {
    long key;
    void *val;
    struct rbt_node *ch[2];  /* 0 = left (smaller keys), 1 = right */
    struct rbt_node *parent;
    long red;                /* 1 = red, 0 = black */
};

struct rbt {
    struct rbt_node *root;
};

/* Memory that left the shared structures, freed by rbt_grave_free. */
struct rbt_grave_entry;
struct rbt_grave {
    struct rbt_grave_entry *head;
};

void rbt_init(struct rbt *t);
/* The value under key, or NULL. */
TM_SAFE void *rbt_get(struct rbt *t, long key, int tx);
/* Adds key -> val; returns 1, or 0 (tree unchanged) if key is present. */
TM_SAFE int rbt_insert(struct rbt *t, long key, void *val, int tx);
/* Removes key; returns the node that left the tree (to be retired) or NULL
 * if key is absent. *val receives the removed key's value. The returned node
 * may hold another key's old copy: only its memory matters to the caller. */
TM_SAFE struct rbt_node *rbt_remove(struct rbt *t, long key, void **val, int tx);
/* Outside transactions, after the unlinking transaction committed: keeps p
 * (if not NULL) until rbt_grave_free. Threads may call it concurrently.
 * (The other way to retire a removed node, wl_rbtree's: inside the removing
 * transaction, rewrite each of its fields and TM_FREE it, so that any attempt
 * still reading it sees newer versions and aborts.) */
int rbt_grave_put(struct rbt_grave *g, void *p);
/* Frees everything put into g; only when no thread runs. */
void rbt_grave_free(struct rbt_grave *g);
/* Private-data walk in key order; stops early when fn returns non-zero. */
int rbt_foreach(const struct rbt *t, int (*fn)(long key, void *val, void *ctx), void *ctx);
/* Checks order, colours, equal black heights and parent links. Returns the
 * number of nodes, or -1 with the first violation in msg. */
long rbt_validate(const struct rbt *t, char *msg, size_t cap);
/* Frees every linked node; free_val (may be NULL) gets each value. */
void rbt_destroy(struct rbt *t, void (*free_val)(void *));

#endif
