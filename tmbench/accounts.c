/*
 * accounts.c - the transfer and audit transactions of the bank and stress
 * workloads (see accounts.h).
 *
 * Owns: only the two transactions; the array, its invariant and the counts
 * belong to the workloads. Written against tm.h alone, so it builds for
 * every backend.
 */
#include "accounts.h"

#include "tm.h"

void accounts_transfer(long *acc, long from, long to, long amount)
{
    TM_BEGIN("accounts-transfer");
    long a = TM_READ(acc[from]);
    long c = TM_READ(acc[to]);
    TM_WRITE(acc[from], a - amount);
    TM_WRITE(acc[to], c + amount);
    TM_END;
}

long accounts_audit(long *acc, long n)
{
    TM_LOCAL long total;
    TM_BEGIN_RO("accounts-audit");
    long sum = 0;
    for (long i = 0; i < n; i++)
        sum += TM_READ(acc[i]);
    total = sum;
    TM_END;
    return total;
}
