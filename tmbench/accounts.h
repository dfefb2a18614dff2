/*
 * accounts.h - the transactional account array of the bank and stress
 * workloads: a transfer and an audit, one transaction each.
 */
#ifndef TMBENCH_ACCOUNTS_H
#define TMBENCH_ACCOUNTS_H

/* Moves `amount` from acc[from] to acc[to] (from != to) in one transaction
 * (site "accounts-transfer"). */
void accounts_transfer(long *acc, long from, long to, long amount);

/* The sum of acc[0..n) read in one read-only transaction (site
 * "accounts-audit"): a consistent snapshot, so it always equals the
 * total that transfers preserve. */
long accounts_audit(long *acc, long n);

#endif
