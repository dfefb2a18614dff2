/*
 * wl_bank.c - the `bank` workload: accounts with random transfers between
 * them and read-only audit transactions that sum every account.
 *
 * Owns: the accounts and the one invariant of money: transfers move it, so
 * the total never changes, and every audit (a consistent snapshot) must see
 * exactly that total. All shared accesses while threads run go through tm.h.
 */
#include "accounts.h"
#include "bench.h"
#include "tm.h"
#include "json_writer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bank_counts {
    uint64_t transfers;
    uint64_t audits;
    uint64_t bad_audits;
    long last_bad_total;
} __attribute__((aligned(64)));

struct bank {
    long naccounts;
    long audit_pct;
    long max_amount;
    long expected_total;
    long final_total;
    int threads;
    long *accounts;
    struct bank_counts *counts;
};

static int bank_setup(const struct bench_opts *o, void **state)
{
    long n = bench_opt_long(o, "accounts", 1024, 2, 1L << 28);
    long audit = bench_opt_long(o, "audit", 10, 0, 100);
    long balance = bench_opt_long(o, "balance", 1000, 0, 1L << 32);
    long amount = bench_opt_long(o, "amount", 100, 1, 1L << 32);
    if (bench_opt_error)
        return -1;
    struct bank *b = calloc(1, sizeof *b);
    if (!b) {
        fprintf(stderr, "tmbench: bank: out of memory\n");
        return -1;
    }
    *state = b;
    b->accounts = malloc(sizeof *b->accounts * (size_t)n);
    b->counts = aligned_alloc(64, sizeof *b->counts * (size_t)o->threads);
    if (!b->accounts || !b->counts) {
        fprintf(stderr, "tmbench: bank: out of memory for %ld accounts\n", n);
        return -1;
    }
    memset(b->counts, 0, sizeof *b->counts * (size_t)o->threads);
    for (long i = 0; i < n; i++)
        b->accounts[i] = balance;
    b->naccounts = n;
    b->audit_pct = audit;
    b->max_amount = amount;
    b->expected_total = balance * n;
    b->final_total = 0;
    b->threads = o->threads;
    return 0;
}

static void bank_worker(void *state, struct bench_thread *bt)
{
    struct bank *b = state;
    struct bank_counts c = { 0, 0, 0, 0 };
    const uint64_t n = (uint64_t)b->naccounts;
    while (bench_continue(bt)) {
        if (bench_rand_below(bt, 100) < (uint64_t)b->audit_pct) {
            long total = accounts_audit(b->accounts, b->naccounts);
            c.audits++;
            if (total != b->expected_total) {
                c.bad_audits++;
                c.last_bad_total = total;
            }
        } else {
            long from = (long)bench_rand_below(bt, n);
            long to = (long)bench_rand_below(bt, n - 1);
            if (to >= from)
                to++; /* distinct accounts, uniformly */
            accounts_transfer(b->accounts, from, to, 1 + (long)bench_rand_below(bt, (uint64_t)b->max_amount));
            c.transfers++;
        }
        bt->ops++;
    }
    b->counts[bt->id] = c;
}

static int bank_check(void *state, char *msg, size_t cap)
{
    struct bank *b = state;
    long total = 0;
    for (long i = 0; i < b->naccounts; i++)
        total += b->accounts[i];
    b->final_total = total;
    for (int i = 0; i < b->threads; i++) {
        if (b->counts[i].bad_audits) {
            snprintf(msg, cap, "bank: thread %d saw %" PRIu64 " audits with a wrong total (last %ld, expected %ld)",
                     i, b->counts[i].bad_audits, b->counts[i].last_bad_total, b->expected_total);
            return -1;
        }
    }
    if (total != b->expected_total) {
        snprintf(msg, cap, "bank: total %ld != expected %ld", total, b->expected_total);
        return -1;
    }
    return 0;
}

static void bank_json_extra(void *state, struct jw *w)
{
    struct bank *b = state;
    uint64_t transfers = 0, audits = 0, bad = 0;
    for (int i = 0; i < b->threads; i++) {
        transfers += b->counts[i].transfers;
        audits += b->counts[i].audits;
        bad += b->counts[i].bad_audits;
    }
    jw_ki64(w, "accounts", b->naccounts);
    jw_ki64(w, "audit", b->audit_pct);
    jw_ku64(w, "transfers", transfers);
    jw_ku64(w, "audits", audits);
    jw_ku64(w, "bad_audits", bad);
    jw_ki64(w, "total", b->final_total);
    jw_ki64(w, "expected_total", b->expected_total);
}

static void bank_teardown(void *state)
{
    struct bank *b = state;
    free(b->accounts);
    free(b->counts);
    free(b);
}

const struct workload wl_bank = {
    .name = "bank",
    .help = "  --accounts N   number of accounts (default 1024)\n"
            "  --audit P      percent of operations that are read-only audits of all accounts (default 10)\n"
            "  --balance N    initial balance of each account (default 1000)\n"
            "  --amount N     largest transfer (default 100)\n",
    .setup = bank_setup,
    .worker = bank_worker,
    .check = bank_check,
    .json_extra = bank_json_extra,
    .teardown = bank_teardown,
};
