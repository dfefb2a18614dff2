/* Nested transactions and __transaction_cancel: an inner transaction that
 * cancels undoes only its own writes, an outer cancel undoes everything
 * (inner commits included), __transaction_cancel [[outer]] from an inner
 * transaction cancels the outermost one, and a local variable written
 * inside a cancelled transaction gets its old value back. */
#include "itm_prog.h"

#define OPS 4000

static long total, inner, flat, outer_total, outer_inner;
static long local_errors;

__attribute__((transaction_may_cancel_outer)) static void maybe_cancel_outer(int i)
{
    __transaction_atomic {
        outer_inner += 1;
        if (i % 11 == 0)
            __transaction_cancel [[outer]];
    }
}

static void worker(int id)
{
    for (int i = 0; i < OPS; i++) {
        int local = 0;
        __transaction_atomic {
            total += 1;
            local = 1;
            __transaction_atomic {
                inner += 1;
                if (i % 5 == 0)
                    __transaction_cancel;
            }
            __transaction_atomic { flat += 1; }
            if (i % 7 == 0)
                __transaction_cancel;
        }
        if (i % 7 != 0)
            prog_commits[id]++;
        else if (local != 0)
            __atomic_add_fetch(&local_errors, 1, __ATOMIC_RELAXED);
        __transaction_atomic [[outer]] {
            outer_total += 1;
            maybe_cancel_outer(i);
        }
        if (i % 11 != 0)
            prog_commits[id]++;
    }
}

static int check(void)
{
    long want_total = 0, want_inner = 0, want_outer = 0;
    for (int i = 0; i < OPS; i++) {
        want_total += i % 7 != 0;
        want_inner += i % 7 != 0 && i % 5 != 0;
        want_outer += i % 11 != 0;
    }
    long t = prog_threads;
    printf("result total %ld inner %ld flat %ld outer %ld outer_inner %ld local_errors %ld\n", total, inner, flat,
           outer_total, outer_inner, local_errors);
    return total == t * want_total && inner == t * want_inner && flat == t * want_total &&
                   outer_total == t * want_outer && outer_inner == t * want_outer && local_errors == 0
               ? 0
               : 1;
}
