/* Hot words in blocks the program allocates itself, outside any
 * transaction: one with calloc in the main thread before the threads start
 * (counters_new), one with malloc in the first worker before its first
 * transaction (tally_new). Every thread's transactions increment both, so
 * that aborts name those words, and tmcheck names each by its block's
 * allocation site, offset and member, not just "heap". */
#define PROG_SETUP heap_setup
#include "itm_prog.h"

#define OPS 100000

struct counters {
    long before[2]; /* the hot word lies 0x10 into the block */
    long hot;
    long after;
};

static struct counters *shared;

struct tally {
    long id;
    long count; /* 0x8 into the block */
};

static struct tally *tally;

__attribute__((noinline)) static struct counters *counters_new(void)
{
    struct counters *c = calloc(1, sizeof *c);
    if (c == NULL)
        exit(2);
    return c;
}

static void heap_setup(void) { shared = counters_new(); }

__attribute__((noinline)) static struct tally *tally_new(void)
{
    struct tally *t = malloc(sizeof *t);
    if (t == NULL)
        exit(2);
    t->id = 1;
    t->count = 0;
    return t;
}

static int ready;

static void worker(int id)
{
    /* every thread in the runtime before any counts (a thread alone runs
     * serially), then all at once, so that their transactions meet; the
     * first worker's block is there before any thread passes the gate */
    if (id == 0)
        __atomic_store_n(&tally, tally_new(), __ATOMIC_RELEASE);
    __transaction_atomic {
        shared->after++;
    }
    prog_commits[id]++;
    __atomic_add_fetch(&ready, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) < prog_threads)
        ;
    for (long i = 0; i < OPS; i++) {
        __transaction_atomic {
            long h = shared->hot;
            for (int k = 0; k < 16; k++)
                h += shared->before[k & 1]; /* 0: only widens the window */
            shared->hot = h + 1;
        }
        __transaction_atomic {
            tally->count++;
        }
        prog_commits[id]++;
        prog_commits[id]++;
    }
}

static int check(void)
{
    printf("result hot %ld after %ld tally %ld\n", shared->hot, shared->after, tally->count);
    return shared->hot == (long)prog_threads * OPS && shared->after == prog_threads &&
                   tally->count == (long)prog_threads * OPS
               ? 0
               : 1;
}
