/* Bank: transfers between accounts and audits that sum all of them; the
 * sum never changes, inside an audit or at the end. */
#include "itm_prog.h"

#define ACCOUNTS 64
#define OPS 20000
#define START 1000

static long accounts[ACCOUNTS] = { [0 ... ACCOUNTS - 1] = START };
static long bad_audits;

static void worker(int id)
{
    unsigned long seed = (unsigned long)id * 7919 + 1;
    for (int i = 0; i < OPS; i++) {
        unsigned a = prog_rand(&seed) % ACCOUNTS, b = prog_rand(&seed) % ACCOUNTS;
        if (i % 10 == 0) {
            long sum = 0;
            __transaction_atomic {
                sum = 0;
                for (int k = 0; k < ACCOUNTS; k++)
                    sum += accounts[k];
            }
            if (sum != (long)ACCOUNTS * START)
                __atomic_add_fetch(&bad_audits, 1, __ATOMIC_RELAXED);
        } else {
            __transaction_atomic {
                accounts[a] -= (long)(i % 7);
                accounts[b] += (long)(i % 7);
            }
        }
        prog_commits[id]++;
    }
}

static int check(void)
{
    long sum = 0;
    for (int k = 0; k < ACCOUNTS; k++)
        sum += accounts[k];
    printf("result sum %ld bad_audits %ld\n", sum, bad_audits);
    return sum == (long)ACCOUNTS * START && bad_audits == 0 ? 0 : 1;
}
