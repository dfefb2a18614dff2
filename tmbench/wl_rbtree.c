/*
 * wl_rbtree.c - the `rbtree` workload: an integer set kept in a red-black
 * tree with parent pointers; insert, remove and lookup are one transaction
 * each, rebalancing included.
 *
 * Owns: the tree and its invariants (search order, no duplicates, red nodes
 * have black children, equal black height, consistent parent links). While
 * threads run, every field access goes through tm.h; the quiescent check and
 * teardown use plain loads.
 */
#include "bench.h"
#include "intset.h"
#include "tm.h"

#include <stdio.h>
#include <stdlib.h>

enum { RB_RED = 0, RB_BLACK = 1 };

struct rb_node {
    long key;
    struct rb_node *left;
    struct rb_node *right;
    struct rb_node *parent;
    int color;
};

struct rb_tree {
    struct rb_node *root;
};

/* Transactional field access. A missing child (NULL) counts as black. */
static inline TM_SAFE struct rb_node *rb_left(struct rb_node *n) { return TM_READ_P(n->left); }
static inline TM_SAFE struct rb_node *rb_right(struct rb_node *n) { return TM_READ_P(n->right); }
static inline TM_SAFE struct rb_node *rb_parent(struct rb_node *n) { return TM_READ_P(n->parent); }
static inline TM_SAFE int rb_color(struct rb_node *n) { return n ? TM_READ(n->color) : RB_BLACK; }
static inline TM_SAFE void rb_set_left(struct rb_node *n, struct rb_node *v) { TM_WRITE_P(n->left, v); }
static inline TM_SAFE void rb_set_right(struct rb_node *n, struct rb_node *v) { TM_WRITE_P(n->right, v); }
static inline TM_SAFE void rb_set_parent(struct rb_node *n, struct rb_node *v) { TM_WRITE_P(n->parent, v); }
static inline TM_SAFE void rb_set_color(struct rb_node *n, int c) { TM_WRITE(n->color, c); }

/* Puts `to` where `from` hangs below `parent` (or at the root). */
static TM_SAFE void rb_replace_child(struct rb_tree *t, struct rb_node *parent,
                                     struct rb_node *from, struct rb_node *to)
{
    if (!parent)
        TM_WRITE_P(t->root, to);
    else if (rb_left(parent) == from)
        rb_set_left(parent, to);
    else
        rb_set_right(parent, to);
}

static TM_SAFE void rb_rotate_left(struct rb_tree *t, struct rb_node *x)
{
    struct rb_node *y = rb_right(x);
    struct rb_node *b = rb_left(y);
    struct rb_node *p = rb_parent(x);
    rb_set_right(x, b);
    if (b)
        rb_set_parent(b, x);
    rb_set_parent(y, p);
    rb_replace_child(t, p, x, y);
    rb_set_left(y, x);
    rb_set_parent(x, y);
}

static TM_SAFE void rb_rotate_right(struct rb_tree *t, struct rb_node *x)
{
    struct rb_node *y = rb_left(x);
    struct rb_node *b = rb_right(y);
    struct rb_node *p = rb_parent(x);
    rb_set_left(x, b);
    if (b)
        rb_set_parent(b, x);
    rb_set_parent(y, p);
    rb_replace_child(t, p, x, y);
    rb_set_right(y, x);
    rb_set_parent(x, y);
}

/* The node holding key, or NULL; *parent_out gets the last node visited. */
static TM_SAFE struct rb_node *rb_lookup(struct rb_tree *t, long key, struct rb_node **parent_out)
{
    struct rb_node *parent = NULL;
    struct rb_node *n = TM_READ_P(t->root);
    while (n) {
        long k = TM_READ(n->key);
        if (key == k)
            break;
        parent = n;
        n = key < k ? rb_left(n) : rb_right(n);
    }
    *parent_out = parent;
    return n;
}

static TM_SAFE void rb_insert_fixup(struct rb_tree *t, struct rb_node *z)
{
    struct rb_node *p;
    while ((p = rb_parent(z)) && rb_color(p) == RB_RED) {
        struct rb_node *g = rb_parent(p); /* exists: a red node is never the root */
        int p_is_left = rb_left(g) == p;
        struct rb_node *u = p_is_left ? rb_right(g) : rb_left(g);
        if (rb_color(u) == RB_RED) {
            rb_set_color(p, RB_BLACK);
            rb_set_color(u, RB_BLACK);
            rb_set_color(g, RB_RED);
            z = g;
            continue;
        }
        if (p_is_left) {
            if (z == rb_right(p)) {
                z = p;
                rb_rotate_left(t, z);
                p = rb_parent(z);
            }
            rb_set_color(p, RB_BLACK);
            rb_set_color(g, RB_RED);
            rb_rotate_right(t, g);
        } else {
            if (z == rb_left(p)) {
                z = p;
                rb_rotate_right(t, z);
                p = rb_parent(z);
            }
            rb_set_color(p, RB_BLACK);
            rb_set_color(g, RB_RED);
            rb_rotate_left(t, g);
        }
    }
    struct rb_node *root = TM_READ_P(t->root);
    if (rb_color(root) != RB_BLACK)
        rb_set_color(root, RB_BLACK);
}

/* Restores the black height after a black node left from below xp; x (maybe
 * NULL) carries the extra black. */
static TM_SAFE void rb_remove_fixup(struct rb_tree *t, struct rb_node *x, struct rb_node *xp)
{
    while (x != TM_READ_P(t->root) && rb_color(x) == RB_BLACK) {
        if (x == rb_left(xp)) {
            struct rb_node *w = rb_right(xp);
            if (rb_color(w) == RB_RED) {
                rb_set_color(w, RB_BLACK);
                rb_set_color(xp, RB_RED);
                rb_rotate_left(t, xp);
                w = rb_right(xp);
            }
            if (rb_color(rb_left(w)) == RB_BLACK && rb_color(rb_right(w)) == RB_BLACK) {
                rb_set_color(w, RB_RED);
                x = xp;
                xp = rb_parent(x);
            } else {
                if (rb_color(rb_right(w)) == RB_BLACK) {
                    rb_set_color(rb_left(w), RB_BLACK);
                    rb_set_color(w, RB_RED);
                    rb_rotate_right(t, w);
                    w = rb_right(xp);
                }
                rb_set_color(w, rb_color(xp));
                rb_set_color(xp, RB_BLACK);
                rb_set_color(rb_right(w), RB_BLACK);
                rb_rotate_left(t, xp);
                x = TM_READ_P(t->root);
                xp = NULL;
            }
        } else {
            struct rb_node *w = rb_left(xp);
            if (rb_color(w) == RB_RED) {
                rb_set_color(w, RB_BLACK);
                rb_set_color(xp, RB_RED);
                rb_rotate_right(t, xp);
                w = rb_left(xp);
            }
            if (rb_color(rb_left(w)) == RB_BLACK && rb_color(rb_right(w)) == RB_BLACK) {
                rb_set_color(w, RB_RED);
                x = xp;
                xp = rb_parent(x);
            } else {
                if (rb_color(rb_left(w)) == RB_BLACK) {
                    rb_set_color(rb_right(w), RB_BLACK);
                    rb_set_color(w, RB_RED);
                    rb_rotate_left(t, w);
                    w = rb_left(xp);
                }
                rb_set_color(w, rb_color(xp));
                rb_set_color(xp, RB_BLACK);
                rb_set_color(rb_left(w), RB_BLACK);
                rb_rotate_right(t, xp);
                x = TM_READ_P(t->root);
                xp = NULL;
            }
        }
    }
    if (x)
        rb_set_color(x, RB_BLACK);
}

static int rb_insert(void *set, long key)
{
    struct rb_tree *t = set;
    TM_LOCAL int added;
    TM_BEGIN("rbtree-insert");
    struct rb_node *parent;
    added = rb_lookup(t, key, &parent) == NULL;
    if (added) {
        struct rb_node *z = TM_MALLOC(sizeof *z);
        /* Transactional initialisation, so that a reader holding a stale
         * pointer into recycled memory sees new versions and aborts. */
        TM_WRITE(z->key, key);
        rb_set_left(z, NULL);
        rb_set_right(z, NULL);
        rb_set_parent(z, parent);
        rb_set_color(z, RB_RED);
        if (!parent)
            TM_WRITE_P(t->root, z);
        else if (key < TM_READ(parent->key))
            rb_set_left(parent, z);
        else
            rb_set_right(parent, z);
        rb_insert_fixup(t, z);
    }
    TM_END;
    return added;
}

static int rb_remove(void *set, long key)
{
    struct rb_tree *t = set;
    TM_LOCAL int removed;
    TM_BEGIN("rbtree-remove");
    struct rb_node *parent;
    struct rb_node *z = rb_lookup(t, key, &parent);
    removed = z != NULL;
    if (removed) {
        /* A node with two children takes its successor's key, and the
         * successor (at most one child) is unlinked instead. */
        if (rb_left(z) && rb_right(z)) {
            struct rb_node *y = rb_right(z), *l;
            while ((l = rb_left(y)))
                y = l;
            TM_WRITE(z->key, TM_READ(y->key));
            z = y;
        }
        struct rb_node *child = rb_left(z) ? rb_left(z) : rb_right(z);
        struct rb_node *zp = rb_parent(z);
        if (child)
            rb_set_parent(child, zp);
        rb_replace_child(t, zp, z, child);
        if (rb_color(z) == RB_BLACK)
            rb_remove_fixup(t, child, zp);
        /* Rewrite the dying node so that walkers that reached it abort when
         * they read it after the free. */
        TM_WRITE(z->key, TM_READ(z->key));
        rb_set_left(z, NULL);
        rb_set_right(z, NULL);
        rb_set_parent(z, NULL);
        TM_FREE(z);
    }
    TM_END;
    return removed;
}

static int rb_contains(void *set, long key)
{
    struct rb_tree *t = set;
    TM_LOCAL int found;
    TM_BEGIN_RO("rbtree-contains");
    struct rb_node *parent;
    found = rb_lookup(t, key, &parent) != NULL;
    TM_END;
    return found;
}

static void *rb_create(const struct bench_opts *o, long range)
{
    (void)o;
    (void)range;
    struct rb_tree *t = calloc(1, sizeof *t);
    if (!t)
        fprintf(stderr, "tmbench: rbtree: out of memory\n");
    return t;
}

/* Returns the black height of the subtree, or -1 with msg set. Counts nodes
 * into *size; keys must lie in the open interval (lo, hi) when bounded. */
static long rb_check_node(const struct rb_node *n, const struct rb_node *parent, const long *lo,
                          const long *hi, long *size, char *msg, size_t cap)
{
    if (!n)
        return 1;
    if (n->parent != parent) {
        snprintf(msg, cap, "rbtree: node %ld has a wrong parent link", n->key);
        return -1;
    }
    if ((lo && n->key <= *lo) || (hi && n->key >= *hi)) {
        snprintf(msg, cap, "rbtree: key %ld out of search order (or duplicate)", n->key);
        return -1;
    }
    if (n->color != RB_RED && n->color != RB_BLACK) {
        snprintf(msg, cap, "rbtree: node %ld has color %d", n->key, n->color);
        return -1;
    }
    if (n->color == RB_RED && ((n->left && n->left->color == RB_RED) ||
                               (n->right && n->right->color == RB_RED))) {
        snprintf(msg, cap, "rbtree: red node %ld has a red child", n->key);
        return -1;
    }
    (*size)++;
    long bl = rb_check_node(n->left, n, lo, &n->key, size, msg, cap);
    if (bl < 0)
        return -1;
    long br = rb_check_node(n->right, n, &n->key, hi, size, msg, cap);
    if (br < 0)
        return -1;
    if (bl != br) {
        snprintf(msg, cap, "rbtree: black heights %ld and %ld differ below node %ld", bl, br,
                 n->key);
        return -1;
    }
    return bl + (n->color == RB_BLACK);
}

static long rb_check(void *set, char *msg, size_t cap)
{
    struct rb_tree *t = set;
    long size = 0;
    if (t->root && t->root->color != RB_BLACK) {
        snprintf(msg, cap, "rbtree: the root is red");
        return -1;
    }
    if (rb_check_node(t->root, NULL, NULL, NULL, &size, msg, cap) < 0)
        return -1;
    return size;
}

static void rb_free_subtree(struct rb_node *n)
{
    while (n) {
        rb_free_subtree(n->left);
        struct rb_node *r = n->right;
        free(n);
        n = r;
    }
}

static void rb_destroy(void *set)
{
    struct rb_tree *t = set;
    rb_free_subtree(t->root);
    free(t);
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
