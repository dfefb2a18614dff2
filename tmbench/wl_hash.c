/*
 * wl_hash.c - the `hash` workload: an integer set in a fixed-size hash table
 * with separate chaining (one singly linked chain per bucket), every
 * operation one transaction.
 *
 * Owns: the table and its invariants (every key in its own bucket, no
 * duplicates). While threads run, every bucket and node access goes through
 * tm.h; the table never resizes, so transactions stay short.
 */
#include "bench.h"
#include "intset.h"
#include "tm.h"
#include "json_writer.h"

#include <stdio.h>
#include <stdlib.h>

struct hash_node {
    long key;
    struct hash_node *next;
};

struct hash_set {
    long nbuckets;
    struct hash_node **buckets;
};

static inline TM_SAFE long hash_bucket(const struct hash_set *h, long key)
{
    /* Fibonacci hashing spreads runs of neighbouring keys over the table. */
    return (long)(((unsigned long)key * 0x9E3779B97F4A7C15UL) % (unsigned long)h->nbuckets);
}

/* The link that points at key's node, or at the end of its chain. */
static TM_SAFE struct hash_node **hash_find(struct hash_set *h, long key, struct hash_node **node)
{
    struct hash_node **link = &h->buckets[hash_bucket(h, key)];
    struct hash_node *n = TM_READ_P(*link);
    while (n && TM_READ(n->key) != key) {
        link = &n->next;
        n = TM_READ_P(*link);
    }
    *node = n;
    return link;
}

static int hash_insert(void *set, long key)
{
    struct hash_set *h = set;
    TM_LOCAL int added;
    TM_BEGIN("hash-insert");
    struct hash_node *n;
    struct hash_node **link = hash_find(h, key, &n);
    added = n == NULL;
    if (added) {
        /* Appended at the end of the chain (link holds NULL). Initialised
         * transactionally so that stale readers of recycled memory abort. */
        n = TM_MALLOC(sizeof *n);
        TM_WRITE(n->key, key);
        TM_WRITE_P(n->next, NULL);
        TM_WRITE_P(*link, n);
    }
    TM_END;
    return added;
}

static int hash_remove(void *set, long key)
{
    struct hash_set *h = set;
    TM_LOCAL int removed;
    TM_BEGIN("hash-remove");
    struct hash_node *n;
    struct hash_node **link = hash_find(h, key, &n);
    removed = n != NULL;
    if (removed) {
        struct hash_node *next = TM_READ_P(n->next);
        TM_WRITE_P(*link, next);
        /* Rewrite the dying node so that walkers that reached it abort. */
        TM_WRITE_P(n->next, next);
        TM_WRITE(n->key, key);
        TM_FREE(n);
    }
    TM_END;
    return removed;
}

static int hash_contains(void *set, long key)
{
    struct hash_set *h = set;
    TM_LOCAL int found;
    TM_BEGIN_RO("hash-contains");
    struct hash_node *n;
    hash_find(h, key, &n);
    found = n != NULL;
    TM_END;
    return found;
}

static void *hash_create(const struct bench_opts *o, long range)
{
    long def = range / 2 > 0 ? range / 2 : 1;
    long nb = bench_opt_long(o, "buckets", def, 1, 1L << 30);
    if (bench_opt_error)
        return NULL;
    struct hash_set *h = malloc(sizeof *h);
    struct hash_node **b = calloc((size_t)nb, sizeof *b);
    if (!h || !b) {
        free(h);
        free(b);
        fprintf(stderr, "tmbench: hash: out of memory for %ld buckets\n", nb);
        return NULL;
    }
    h->nbuckets = nb;
    h->buckets = b;
    return h;
}

static long hash_check(void *set, char *msg, size_t cap)
{
    struct hash_set *h = set;
    long size = 0;
    for (long b = 0; b < h->nbuckets; b++) {
        for (struct hash_node *n = h->buckets[b]; n; n = n->next) {
            if (hash_bucket(h, n->key) != b) {
                snprintf(msg, cap, "hash: key %ld is in bucket %ld, belongs in %ld", n->key, b,
                         hash_bucket(h, n->key));
                return -1;
            }
            for (struct hash_node *m = n->next; m; m = m->next) {
                if (m->key == n->key) {
                    snprintf(msg, cap, "hash: key %ld is in bucket %ld twice", n->key, b);
                    return -1;
                }
            }
            size++;
        }
    }
    return size;
}

static void hash_json_extra(void *set, struct jw *w)
{
    struct hash_set *h = set;
    jw_ki64(w, "buckets", h->nbuckets);
}

static void hash_destroy(void *set)
{
    struct hash_set *h = set;
    for (long b = 0; b < h->nbuckets; b++) {
        struct hash_node *n = h->buckets[b];
        while (n) {
            struct hash_node *next = n->next;
            free(n);
            n = next;
        }
    }
    free(h->buckets);
    free(h);
}

static const struct intset_ops hash_ops = {
    .create = hash_create,
    .insert = hash_insert,
    .remove = hash_remove,
    .contains = hash_contains,
    .check = hash_check,
    .json_extra = hash_json_extra,
    .destroy = hash_destroy,
};

INTSET_WORKLOAD(wl_hash, "hash", hash_ops, INTSET_HELP "  --buckets N    hash buckets (default range/2)\n");
