/* The transaction's own stack: a transaction_safe function called inside a
 * transaction passes the address of its local array to a transaction_safe
 * callee, which GCC instruments like any other memory. The frame dies
 * before the transaction commits (a commit that wrote the array back
 * would write into the frames of the commit itself), and the next call's
 * frame takes the same addresses: filled with plain stores and read
 * through barriers, it must show those stores; filled through barriers and
 * read with plain loads (GCC's own code does, see itm_stack_copy.c), it
 * must show those. The caller's own local, whose frame outlives the
 * transaction, stays transactional: a cancel leaves it as it was. */
#include "itm_prog.h"
#include "itm_frames.h"

#define OPS 3000

static long total;

/* A callee writes this frame's array, the frame reads it back. */
__attribute__((transaction_safe, noipa)) static long filled(long v)
{
    long buf[WORDS];
    fill(buf, WORDS, v);
    return sum(buf, WORDS);
}

/* The same frame shape, its array written with plain stores. */
__attribute__((transaction_safe, noipa)) static long filled_plain(long v)
{
    long buf[WORDS];
    fill_plain(buf, WORDS, v);
    return sum(buf, WORDS);
}

/* Written through barriers, read with plain loads. */
__attribute__((transaction_safe, noipa)) static long read_plain(long v)
{
    long buf[WORDS];
    fill(buf, WORDS, v);
    return sum_plain(buf, WORDS);
}

static void worker(int id)
{
    for (long i = 0; i < OPS; i++) {
        long a = 0, b = 0, c = 0;
        __transaction_atomic {
            a = filled(i);
            b = filled_plain(i + 7);
            c = read_plain(i + 11);
            total += a + b + c;
        }
        prog_commits[id]++;
        check_sum(a, i);
        check_sum(b, i + 7);
        check_sum(c, i + 11);
        long kept = 5;
        __transaction_atomic {
            kept = filled(i + 17);
            if (i % 3 == 0)
                __transaction_cancel;
        }
        if (i % 3 != 0) {
            prog_commits[id]++;
            check_sum(kept, i + 17);
        } else if (kept != 5) {
            __atomic_add_fetch(&mismatches, 1, __ATOMIC_RELAXED);
        }
    }
}

static int check(void)
{
    long want = 0;
    for (long i = 0; i < OPS; i++)
        want += expected(i) + expected(i + 7) + expected(i + 11);
    printf("result total %ld mismatches %ld\n", total, mismatches);
    return total == prog_threads * want && mismatches == 0 ? 0 : 1;
}
