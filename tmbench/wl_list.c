/*
 * wl_list.c - the `list` workload: an integer set kept as a sorted singly
 * linked list between two sentinels, every operation one transaction.
 *
 * Owns: the list and its invariants. Every access to a node while threads
 * run goes through tm.h, so the file builds for each backend; it must never
 * read a shared field with a plain load inside a transaction.
 */
#include "bench.h"
#include "intset.h"
#include "tm.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

struct list_node {
    long key;
    struct list_node *next;
};

struct list_set {
    struct list_node *head; /* sentinel, key LONG_MIN; the tail sentinel has LONG_MAX */
};

/* Returns the last node with key < `key` (the head sentinel at least); the
 * tail sentinel stops every walk. */
static TM_SAFE struct list_node *list_find_prev(struct list_set *s, long key,
                                                struct list_node **cur_out, long *cur_key)
{
    struct list_node *prev = s->head;
    struct list_node *cur = TM_READ_P(prev->next);
    long k = TM_READ(cur->key);
    while (k < key) {
        prev = cur;
        cur = TM_READ_P(cur->next);
        k = TM_READ(cur->key);
    }
    *cur_out = cur;
    *cur_key = k;
    return prev;
}

static int list_insert(void *set, long key)
{
    struct list_set *s = set;
    TM_LOCAL int added;
    TM_BEGIN("list-insert");
    struct list_node *cur;
    long k;
    struct list_node *prev = list_find_prev(s, key, &cur, &k);
    added = k != key;
    if (added) {
        struct list_node *n = TM_MALLOC(sizeof *n);
        /* Transactional initialisation: a reader still holding a stale
         * pointer to this memory (freed by an earlier remove) must see the
         * stripes change and abort, not read the new contents as old. */
        TM_WRITE(n->key, key);
        TM_WRITE_P(n->next, cur);
        TM_WRITE_P(prev->next, n);
    }
    TM_END;
    return added;
}

static int list_remove(void *set, long key)
{
    struct list_set *s = set;
    TM_LOCAL int removed;
    TM_BEGIN("list-remove");
    struct list_node *cur;
    long k;
    struct list_node *prev = list_find_prev(s, key, &cur, &k);
    removed = k == key;
    if (removed) {
        struct list_node *next = TM_READ_P(cur->next);
        TM_WRITE_P(prev->next, next);
        /* Rewrite the dying node's fields so that a concurrent walker that
         * already reached it aborts when it reads them after the free. */
        TM_WRITE_P(cur->next, next);
        TM_WRITE(cur->key, key);
        TM_FREE(cur);
    }
    TM_END;
    return removed;
}

static int list_contains(void *set, long key)
{
    struct list_set *s = set;
    TM_LOCAL int found;
    TM_BEGIN_RO("list-contains");
    struct list_node *cur;
    long k;
    list_find_prev(s, key, &cur, &k);
    found = k == key;
    TM_END;
    return found;
}

static void *list_create(const struct bench_opts *o, long range)
{
    (void)o;
    (void)range;
    struct list_set *s = malloc(sizeof *s);
    struct list_node *head = malloc(sizeof *head), *tail = malloc(sizeof *tail);
    if (!s || !head || !tail) {
        free(s);
        free(head);
        free(tail);
        fprintf(stderr, "tmbench: list: out of memory\n");
        return NULL;
    }
    tail->key = LONG_MAX;
    tail->next = NULL;
    head->key = LONG_MIN;
    head->next = tail;
    s->head = head;
    return s;
}

static long list_check(void *set, char *msg, size_t cap)
{
    struct list_set *s = set;
    long size = 0;
    struct list_node *n = s->head;
    if (n->key != LONG_MIN) {
        snprintf(msg, cap, "list: head sentinel key changed to %ld", n->key);
        return -1;
    }
    for (struct list_node *next = n->next; next; n = next, next = n->next) {
        if (next->key <= n->key) {
            snprintf(msg, cap, "list: key %ld follows %ld (not strictly increasing)", next->key,
                     n->key);
            return -1;
        }
        if (next->next)
            size++;
    }
    if (n->key != LONG_MAX) {
        snprintf(msg, cap, "list: ends at key %ld, not at the tail sentinel", n->key);
        return -1;
    }
    return size;
}

static void list_destroy(void *set)
{
    struct list_set *s = set;
    struct list_node *n = s->head;
    while (n) {
        struct list_node *next = n->next;
        free(n);
        n = next;
    }
    free(s);
}

static const struct intset_ops list_ops = {
    .create = list_create,
    .insert = list_insert,
    .remove = list_remove,
    .contains = list_contains,
    .check = list_check,
    .destroy = list_destroy,
};

INTSET_WORKLOAD(wl_list, "list", list_ops, INTSET_HELP);
