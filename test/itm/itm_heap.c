/* A hot word in a block the program allocates itself, with calloc outside
 * any transaction, before its threads start: every thread's transactions
 * increment it, so that its aborts name that word, and tmcheck names it by
 * the block's allocation site (counters_new) and offset, not just "heap". */
#define PROG_SETUP heap_setup
#include "itm_prog.h"

#define OPS 100000

struct counters {
    long before[2]; /* the hot word lies 0x10 into the block */
    long hot;
    long after;
};

static struct counters *shared;

__attribute__((noinline)) static struct counters *counters_new(void)
{
    struct counters *c = calloc(1, sizeof *c);
    if (c == NULL)
        exit(2);
    return c;
}

static void heap_setup(void) { shared = counters_new(); }

static int ready;

static void worker(int id)
{
    /* every thread in the runtime before any counts (a thread alone runs
     * serially), then all at once, so that their transactions meet */
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
        prog_commits[id]++;
    }
}

static int check(void)
{
    printf("result hot %ld after %ld\n", shared->hot, shared->after);
    return shared->hot == (long)prog_threads * OPS && shared->after == prog_threads ? 0 : 1;
}
