/* The transaction's own stack through memcpy, memmove and memset: a
 * function called inside a transaction copies its local array to shared
 * memory and back, clears one with memset (GCC calls the ABI's
 * _ITM_mem* for them, or plain code for a local it can see), and hands one
 * written through barriers to a transaction_safe function that copies it
 * into memory allocated in the transaction, a copy GCC makes with a plain
 * memcpy (it reads the caller's array without a barrier, as STAMP yada's
 * TMelement_alloc does). */
#include <stdlib.h>
#include <string.h>

#include "itm_prog.h"
#include "itm_frames.h"

#define OPS 3000

static long total;
static long shared[WORDS];

/* Called after the copy, so that GCC keeps the shape yada's code has. */
__attribute__((transaction_safe, noipa)) void copy_done(long *copy) { copy[0] += 0; }

/* A copy of the caller's `n` words in memory allocated here. */
__attribute__((transaction_safe)) long *copy_words(const long *words, long n);
__attribute__((transaction_safe)) long *copy_words(const long *words, long n)
{
    long *copy = malloc(WORDS * sizeof *copy);
    if (copy) {
        for (long i = 0; i < n; i++)
            copy[i] = words[i];
        copy_done(copy);
    }
    return copy;
}

__attribute__((transaction_safe, noipa)) static long through_shared(long v)
{
    long buf[WORDS], back[WORDS];
    fill(buf, WORDS, v);
    memcpy(shared, buf, sizeof buf);
    memset(back, 0, sizeof back);
    memcpy(back, shared, sizeof back);
    long last = back[WORDS - 1];
    memmove(back + 1, back, (WORDS - 1) * sizeof *back); /* overlapping: a rotation */
    back[0] = last;
    return sum(back, WORDS);
}

__attribute__((transaction_safe, noipa)) static long through_copy(long v)
{
    long buf[WORDS];
    fill(buf, WORDS, v);
    long *copy = copy_words(buf, WORDS);
    if (copy == NULL)
        return -1;
    long s = sum(copy, WORDS);
    free(copy);
    return s;
}

static void worker(int id)
{
    for (long i = 0; i < OPS; i++) {
        long a = 0, b = 0;
        __transaction_atomic {
            a = through_shared(i);
            b = through_copy(i + 5);
            total += a + b;
            if (i % 11 == 0)
                __transaction_cancel; /* and so the runtime may not run it as plain code */
        }
        if (i % 11 == 0)
            continue;
        prog_commits[id]++;
        check_sum(a, i);
        check_sum(b, i + 5);
    }
}

static int check(void)
{
    long want = 0;
    for (long i = 0; i < OPS; i++)
        want += i % 11 ? expected(i) + expected(i + 5) : 0;
    printf("result total %ld mismatches %ld\n", total, mismatches);
    return total == prog_threads * want && mismatches == 0 ? 0 : 1;
}
