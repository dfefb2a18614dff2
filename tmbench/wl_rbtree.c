/*
 * wl_rbtree.c - the `rbtree` workload: an integer set kept in tmbench's
 * transactional red-black tree (rbtree_tm.c, the tree vacation and intruder
 * use); insert, remove and lookup are one transaction each, rebalancing
 * included.
 *
 * Owns: the set's use of the tree (a key's value is the tree itself, any
 * pointer that is not NULL) and the retirement of removed nodes: the removing
 * transaction rewrites the node's fields before freeing it, so that an
 * attempt still holding a pointer to it reads versions newer than its start
 * and aborts, whoever reuses the memory. The tree's invariants are checked
 * by rbt_validate once the threads have joined.
 */
#include "bench.h"
#include "intset.h"
#include "rbtree_tm.h"
#include "tm.h"

#include <stdio.h>
#include <stdlib.h>

static int rb_insert(void *set, long key)
{
    struct rbt *t = set;
    TM_LOCAL int added;
    TM_BEGIN("rbtree-insert");
    added = rbt_insert(t, key, t, 1);
    TM_END;
    return added;
}

/* The node rbt_remove unlinked: every field rewritten, then freed at commit. */
static TM_SAFE void rb_retire(struct rbt_node *z)
{
    TM_WRITE(z->key, TM_READ(z->key));
    TM_WRITE_P(z->val, NULL);
    TM_WRITE_P(z->ch[0], NULL);
    TM_WRITE_P(z->ch[1], NULL);
    TM_WRITE_P(z->parent, NULL);
    TM_WRITE(z->red, 0L);
    TM_FREE(z);
}

static int rb_remove(void *set, long key)
{
    struct rbt *t = set;
    TM_LOCAL int removed;
    TM_BEGIN("rbtree-remove");
    void *val;
    struct rbt_node *z = rbt_remove(t, key, &val, 1);
    removed = z != NULL;
    if (z)
        rb_retire(z);
    TM_END;
    return removed;
}

static int rb_contains(void *set, long key)
{
    struct rbt *t = set;
    TM_LOCAL int found;
    TM_BEGIN_RO("rbtree-contains");
    found = rbt_get(t, key, 1) != NULL;
    TM_END;
    return found;
}

static void *rb_create(const struct bench_opts *o, long range)
{
    (void)o;
    (void)range;
    struct rbt *t = malloc(sizeof *t);
    if (!t)
        fprintf(stderr, "tmbench: rbtree: out of memory\n");
    else
        rbt_init(t);
    return t;
}

static long rb_check(void *set, char *msg, size_t cap)
{
    return rbt_validate(set, msg, cap);
}

static void rb_destroy(void *set)
{
    rbt_destroy(set, NULL);
    free(set);
}

static const struct intset_ops rb_ops = {
    .create = rb_create,
    .insert = rb_insert,
    .remove = rb_remove,
    .contains = rb_contains,
    .check = rb_check,
    .destroy = rb_destroy,
};

INTSET_WORKLOAD(wl_rbtree, "rbtree", rb_ops, INTSET_HELP);
