/*
 * rbtree_tm.c - the transactional red-black tree of rbtree_tm.h.
 *
 * Owns the insertion/deletion algorithms (parent links, NULL leaves, the
 * left/right cases folded into one by a direction index). It must never use
 * a shared sentinel leaf (every deletion would write it and serialise all
 * transactions) and never free unlinked nodes while threads run.
 */
#include "rbtree_tm.h"

#include <stdio.h>
#include <stdlib.h>

/* One accessor per field kind so that the algorithms below are written
 * once for both modes. */
static inline TM_SAFE struct rbt_node *ld_node(struct rbt_node *const *f, int tx)
{
    return tx ? TM_READ_P(*f) : *f;
}
static inline TM_SAFE void st_node(struct rbt_node **f, struct rbt_node *v, int tx)
{
    if (tx)
        TM_WRITE_P(*f, v);
    else
        *f = v;
}
static inline TM_SAFE long ld_long(const long *f, int tx)
{
    return tx ? TM_READ(*(long *)f) : *f;
}
static inline TM_SAFE void st_long(long *f, long v, int tx)
{
    if (tx)
        TM_WRITE(*f, v);
    else
        *f = v;
}

/* NULL-tolerant helpers: a missing node is a black leaf. */
static inline TM_SAFE struct rbt_node *parent_of(struct rbt_node *n, int tx)
{
    return n ? ld_node(&n->parent, tx) : NULL;
}
static inline TM_SAFE struct rbt_node *child_of(struct rbt_node *n, int d, int tx)
{
    return n ? ld_node(&n->ch[d], tx) : NULL;
}
static inline TM_SAFE int is_red(struct rbt_node *n, int tx)
{
    return n ? ld_long(&n->red, tx) != 0 : 0;
}
static inline TM_SAFE void set_red(struct rbt_node *n, long red, int tx)
{
    if (n)
        st_long(&n->red, red, tx);
}

/* Puts r where p was under p's parent (or at the root). */
static TM_SAFE void replace_child(struct rbt *t, struct rbt_node *p, struct rbt_node *r, int tx)
{
    struct rbt_node *pp = ld_node(&p->parent, tx);
    if (r)
        st_node(&r->parent, pp, tx);
    if (!pp)
        st_node(&t->root, r, tx);
    else if (ld_node(&pp->ch[0], tx) == p)
        st_node(&pp->ch[0], r, tx);
    else
        st_node(&pp->ch[1], r, tx);
}

/* Rotation towards direction d: d = 0 lifts p's right child (left rotation). */
static TM_SAFE void rotate(struct rbt *t, struct rbt_node *p, int d, int tx)
{
    if (!p)
        return;
    struct rbt_node *r = ld_node(&p->ch[!d], tx);
    struct rbt_node *inner = ld_node(&r->ch[d], tx);
    st_node(&p->ch[!d], inner, tx);
    if (inner)
        st_node(&inner->parent, p, tx);
    replace_child(t, p, r, tx);
    st_node(&r->ch[d], p, tx);
    st_node(&p->parent, r, tx);
}

static inline TM_SAFE int dir_of(struct rbt_node *x, struct rbt_node *parent, int tx)
{
    return child_of(parent, 0, tx) == x ? 0 : 1;
}

static TM_SAFE void fix_after_insert(struct rbt *t, struct rbt_node *x, int tx)
{
    while (x && x != ld_node(&t->root, tx) && is_red(parent_of(x, tx), tx)) {
        struct rbt_node *px = parent_of(x, tx), *gx = parent_of(px, tx);
        int d = dir_of(px, gx, tx);
        struct rbt_node *uncle = child_of(gx, !d, tx);
        if (is_red(uncle, tx)) {
            set_red(px, 0, tx);
            set_red(uncle, 0, tx);
            set_red(gx, 1, tx);
            x = gx;
        } else {
            if (x == child_of(px, !d, tx)) {
                x = px;
                rotate(t, x, d, tx);
            }
            px = parent_of(x, tx);
            gx = parent_of(px, tx);
            set_red(px, 0, tx);
            set_red(gx, 1, tx);
            rotate(t, gx, !d, tx);
        }
    }
    set_red(ld_node(&t->root, tx), 0, tx);
}

TM_SAFE void *rbt_get(struct rbt *t, long key, int tx)
{
    struct rbt_node *n = ld_node(&t->root, tx);
    while (n) {
        long k = ld_long(&n->key, tx);
        if (key == k)
            return tx ? TM_READ_P(n->val) : n->val;
        n = ld_node(&n->ch[key > k], tx);
    }
    return NULL;
}

static inline TM_SAFE struct rbt_node *new_node(long key, void *val, struct rbt_node *parent, int tx)
{
    struct rbt_node *n = tx ? TM_MALLOC(sizeof *n) : malloc(sizeof *n);
    if (!n)
        return NULL;
    /* A fresh node is private to the allocating attempt until linked. */
    n->key = key;
    n->val = val;
    n->ch[0] = n->ch[1] = NULL;
    n->parent = parent;
    n->red = 1;
    return n;
}

TM_SAFE int rbt_insert(struct rbt *t, long key, void *val, int tx)
{
    struct rbt_node *p = ld_node(&t->root, tx), *parent = NULL;
    int d = 0;
    while (p) {
        long k = ld_long(&p->key, tx);
        if (key == k)
            return 0;
        parent = p;
        d = key > k;
        p = ld_node(&p->ch[d], tx);
    }
    struct rbt_node *n = new_node(key, val, parent, tx);
    if (!n)
        return 0;
    if (!parent)
        st_node(&t->root, n, tx);
    else
        st_node(&parent->ch[d], n, tx);
    fix_after_insert(t, n, tx);
    return 1;
}

static TM_SAFE void fix_after_delete(struct rbt *t, struct rbt_node *x, int tx)
{
    while (x != ld_node(&t->root, tx) && !is_red(x, tx)) {
        struct rbt_node *px = parent_of(x, tx);
        int d = dir_of(x, px, tx);
        struct rbt_node *sib = child_of(px, !d, tx);
        if (is_red(sib, tx)) {
            set_red(sib, 0, tx);
            set_red(px, 1, tx);
            rotate(t, px, d, tx);
            px = parent_of(x, tx);
            sib = child_of(px, !d, tx);
        }
        if (!is_red(child_of(sib, d, tx), tx) && !is_red(child_of(sib, !d, tx), tx)) {
            set_red(sib, 1, tx);
            x = px;
        } else {
            if (!is_red(child_of(sib, !d, tx), tx)) {
                set_red(child_of(sib, d, tx), 0, tx);
                set_red(sib, 1, tx);
                rotate(t, sib, !d, tx);
                px = parent_of(x, tx);
                sib = child_of(px, !d, tx);
            }
            set_red(sib, is_red(px, tx), tx);
            set_red(px, 0, tx);
            set_red(child_of(sib, !d, tx), 0, tx);
            rotate(t, px, d, tx);
            x = ld_node(&t->root, tx);
        }
    }
    set_red(x, 0, tx);
}

TM_SAFE struct rbt_node *rbt_remove(struct rbt *t, long key, void **val, int tx)
{
    struct rbt_node *p = ld_node(&t->root, tx);
    while (p) {
        long k = ld_long(&p->key, tx);
        if (key == k)
            break;
        p = ld_node(&p->ch[key > k], tx);
    }
    if (!p)
        return NULL;
    *val = tx ? TM_READ_P(p->val) : p->val;
    if (child_of(p, 0, tx) && child_of(p, 1, tx)) {
        /* Two children: the in-order successor's contents move into p and
         * the successor's node is the one that leaves the tree. */
        struct rbt_node *s = child_of(p, 1, tx);
        for (struct rbt_node *l; (l = child_of(s, 0, tx)) != NULL;)
            s = l;
        st_long(&p->key, ld_long(&s->key, tx), tx);
        if (tx)
            TM_WRITE_P(p->val, TM_READ_P(s->val));
        else
            p->val = s->val;
        p = s;
    }
    struct rbt_node *repl = child_of(p, 0, tx);
    if (!repl)
        repl = child_of(p, 1, tx);
    if (repl) {
        replace_child(t, p, repl, tx);
        if (!is_red(p, tx))
            fix_after_delete(t, repl, tx);
    } else if (!parent_of(p, tx)) {
        st_node(&t->root, NULL, tx);
    } else {
        /* A leaf: fix the colours while it still hangs in the tree. */
        if (!is_red(p, tx))
            fix_after_delete(t, p, tx);
        if (parent_of(p, tx))
            replace_child(t, p, NULL, tx);
    }
    return p;
}

void rbt_init(struct rbt *t)
{
    t->root = NULL;
}

struct rbt_grave_entry {
    void *p;
    struct rbt_grave_entry *next;
};

int rbt_grave_put(struct rbt_grave *g, void *p)
{
    if (!p)
        return 0;
    struct rbt_grave_entry *e = malloc(sizeof *e);
    if (!e)
        return -1;
    e->p = p;
    e->next = __atomic_load_n(&g->head, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(&g->head, &e->next, e, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        ;
    return 0;
}

void rbt_grave_free(struct rbt_grave *g)
{
    for (struct rbt_grave_entry *e = g->head, *next; e; e = next) {
        next = e->next;
        free(e->p);
        free(e);
    }
    g->head = NULL;
}

static int walk(const struct rbt_node *n, int (*fn)(long, void *, void *), void *ctx)
{
    while (n) {
        int r = walk(n->ch[0], fn, ctx);
        if (r)
            return r;
        if ((r = fn(n->key, n->val, ctx)) != 0)
            return r;
        n = n->ch[1];
    }
    return 0;
}

int rbt_foreach(const struct rbt *t, int (*fn)(long key, void *val, void *ctx), void *ctx)
{
    return walk(t->root, fn, ctx);
}

/* Returns the black height of n's subtree, or -1 after writing msg. */
static long validate_node(const struct rbt_node *n, const struct rbt_node *parent, const long *lo,
                          const long *hi, long *count, char *msg, size_t cap)
{
    if (!n)
        return 1;
    if (n->parent != parent) {
        snprintf(msg, cap, "rbtree: key %ld has a wrong parent link", n->key);
        return -1;
    }
    if ((lo && n->key <= *lo) || (hi && n->key >= *hi)) {
        snprintf(msg, cap, "rbtree: key %ld is out of order", n->key);
        return -1;
    }
    if (n->red && parent && parent->red) {
        snprintf(msg, cap, "rbtree: red key %ld has a red parent", n->key);
        return -1;
    }
    ++*count;
    long l = validate_node(n->ch[0], n, lo, &n->key, count, msg, cap);
    if (l < 0)
        return -1;
    long r = validate_node(n->ch[1], n, &n->key, hi, count, msg, cap);
    if (r < 0)
        return -1;
    if (l != r) {
        snprintf(msg, cap, "rbtree: black heights differ under key %ld (%ld vs %ld)", n->key, l, r);
        return -1;
    }
    return l + !n->red;
}

long rbt_validate(const struct rbt *t, char *msg, size_t cap)
{
    long count = 0;
    if (t->root && t->root->red) {
        snprintf(msg, cap, "rbtree: the root is red");
        return -1;
    }
    if (validate_node(t->root, NULL, NULL, NULL, &count, msg, cap) < 0)
        return -1;
    return count;
}

static void free_subtree(struct rbt_node *n, void (*free_val)(void *))
{
    while (n) {
        free_subtree(n->ch[0], free_val);
        struct rbt_node *right = n->ch[1];
        if (free_val)
            free_val(n->val);
        free(n);
        n = right;
    }
}

void rbt_destroy(struct rbt *t, void (*free_val)(void *))
{
    free_subtree(t->root, free_val);
    rbt_init(t);
}
