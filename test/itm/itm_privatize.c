/* Privatization safety: a transaction unlinks a node from a shared list;
 * once its commit returns, the node is the thread's own, which then
 * scribbles over it without a transaction (as a program does that frees
 * it, or reuses it) and puts it back in a later transaction. Meanwhile the
 * other threads' transactions walk the list, taking their time between
 * reaching a node and reading it. No transaction may ever read a node
 * while its owner scribbles: GCC's TM, as libitm implements it, lets no
 * commit return while a transaction that started before it still runs,
 * and a transaction that started after cannot reach the unlinked node. */
#include "itm_prog.h"

#define OPS 20000
#define NODES 4

struct node {
    long key, check; /* check == ~key, but while the node is private */
    struct node *next;
};

static struct node nodes[NODES];
static struct node *head;
static long torn; /* reads of a node while its owner scribbled on it */

__attribute__((transaction_pure, noipa)) static void saw_torn(void) { __atomic_add_fetch(&torn, 1, __ATOMIC_RELAXED); }

__attribute__((transaction_pure, noipa)) static void dawdle(int n)
{
    for (volatile int i = 0; i < n; i++) {
    }
}

/* Walks the list, lingering at each node before reading it. */
static long walk(void)
{
    long keys = 0;
    __transaction_atomic {
        for (struct node *n = head; n != NULL; n = n->next) {
            dawdle(3000);
            if (n->check != ~n->key)
                saw_torn();
            keys += n->key;
        }
    }
    return keys;
}

/* Unlinks the first node, scribbles on it, puts it back at the end;
 * returns the transactions it committed. */
static int take_and_return(void)
{
    struct node *mine;
    __transaction_atomic {
        mine = head;
        if (mine != NULL)
            head = mine->next;
    }
    if (mine == NULL)
        return 1; /* the other threads hold every node */
    long key = mine->key;
    mine->check = 0; /* private now: no transaction can be reading it */
    dawdle(3000);
    mine->check = ~key;
    mine->next = NULL;
    __transaction_atomic {
        struct node **p = &head;
        while (*p != NULL)
            p = &(*p)->next;
        *p = mine;
    }
    return 2;
}

static int arrived;

static void worker(int id)
{
    __atomic_add_fetch(&arrived, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&arrived, __ATOMIC_SEQ_CST) < prog_threads) {
    } /* all start together */
    for (int i = 0; i < OPS; i++) {
        if ((i + id) % 4 == 0) {
            prog_commits[id] += take_and_return();
        } else {
            (void)walk();
            prog_commits[id]++;
        }
    }
}

static int check(void)
{
    long keys = 0, count = 0;
    for (struct node *n = head; n != NULL; n = n->next, count++)
        keys += n->key;
    printf("result nodes %ld keys %ld torn %ld\n", count, keys, torn);
    return count == NODES && keys == NODES * (NODES + 1) / 2 && torn == 0 ? 0 : 1;
}

__attribute__((constructor)) static void build_list(void)
{
    for (int i = NODES - 1; i >= 0; i--) {
        nodes[i].key = i + 1;
        nodes[i].check = ~nodes[i].key;
        nodes[i].next = head;
        head = &nodes[i];
    }
}
