/* Integer set: a sorted linked list shared by every thread. Each thread
 * inserts its own keys (interleaved with the others' in the list), looks
 * them up, and removes every other one: the final set is known. Nodes are
 * allocated and freed inside the transactions. */
#include "itm_prog.h"

#define KEYS 300

struct node {
    long key;
    struct node *next;
};

static struct node head = { -1, NULL };

__attribute__((transaction_safe)) static int set_insert(long key)
{
    struct node *p = &head;
    while (p->next && p->next->key < key)
        p = p->next;
    if (p->next && p->next->key == key)
        return 0;
    struct node *n = malloc(sizeof *n);
    n->key = key;
    n->next = p->next;
    p->next = n;
    return 1;
}

__attribute__((transaction_safe)) static int set_remove(long key)
{
    struct node *p = &head;
    while (p->next && p->next->key < key)
        p = p->next;
    if (!p->next || p->next->key != key)
        return 0;
    struct node *n = p->next;
    p->next = n->next;
    free(n);
    return 1;
}

__attribute__((transaction_safe)) static int set_contains(long key)
{
    const struct node *p = head.next;
    while (p && p->key < key)
        p = p->next;
    return p && p->key == key;
}

static long failures;

static void worker(int id)
{
    for (long k = 0; k < KEYS; k++) {
        long key = k * PROG_MAX_THREADS + id;
        int ok;
        __transaction_atomic { ok = set_insert(key); }
        prog_commits[id]++;
        if (!ok)
            __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
    }
    for (long k = 0; k < KEYS; k++) {
        long key = k * PROG_MAX_THREADS + id;
        int ok;
        __transaction_atomic { ok = set_contains(key); }
        prog_commits[id]++;
        if (!ok)
            __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
        if (k % 2 == 0) {
            __transaction_atomic { ok = set_remove(key); }
            prog_commits[id]++;
            if (!ok)
                __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
        }
    }
}

static int check(void)
{
    long n = 0, sum = 0, sorted = 1;
    for (const struct node *p = head.next; p; p = p->next) {
        n++;
        sum += p->key;
        if (p->next && p->next->key <= p->key)
            sorted = 0;
    }
    printf("result size %ld keysum %ld sorted %ld failures %ld\n", n, sum, sorted, failures);
    return n == (long)prog_threads * (KEYS / 2) && sorted && failures == 0 ? 0 : 1;
}
