/* The transaction's own stack across nested transactions and aborts: a
 * function called inside a transaction writes its local array, then opens
 * a nested transaction that rewrites it through a callee and sometimes
 * cancels itself. The array outlives the nested transaction, so its
 * cancel must put the array back; read with plain loads afterwards, it
 * shows what the transaction wrote. The outer transactions abort too: on
 * conflicts between the threads, when a nested cancel makes them restart
 * serially (libtmtrace-itm), and by cancelling themselves after the
 * function's frame is gone, whose addresses the cancel's own calls then
 * use; none of that may write into frames that are gone. */
#include "itm_prog.h"
#include "itm_frames.h"

#define OPS 3000

static long total, counter;

__attribute__((transaction_safe, noipa)) static long nested(long v, int cancel)
{
    long buf[WORDS];
    long seen = 0; /* live into the nested transaction: GCC logs it */
    fill(buf, WORDS, v);
    __transaction_atomic {
        fill(buf, WORDS, v + 1000);
        seen = sum(buf, WORDS);
        if (cancel)
            __transaction_cancel;
    }
    if (cancel ? seen != 0 : seen != expected(v + 1000))
        return -1;
    return sum_plain(buf, WORDS) - (cancel ? 0 : WORDS * 1000);
}

static void worker(int id)
{
    for (long i = 0; i < OPS; i++) {
        long got = 0;
        __transaction_atomic {
            counter += 1; /* the threads conflict here */
            got = nested(i, i % 5 == 0);
            total += got;
            if (i % 7 == 0)
                __transaction_cancel;
        }
        if (i % 7 == 0)
            continue;
        prog_commits[id]++;
        check_sum(got, i);
    }
}

static int check(void)
{
    long want = 0, want_counter = 0;
    for (long i = 0; i < OPS; i++) {
        want += i % 7 ? expected(i) : 0;
        want_counter += i % 7 != 0;
    }
    printf("result total %ld counter %ld mismatches %ld\n", total, counter, mismatches);
    return total == prog_threads * want && counter == prog_threads * want_counter && mismatches == 0 ? 0 : 1;
}
