/* Clones: transactions call transaction_safe functions through pointers,
 * for which the runtime finds the transactional clone (_ITM_getTMCloneSafe
 * in atomic blocks; _ITM_getTMCloneOrIrrevocable in relaxed ones, where a
 * function without a clone, an unsafe one, runs irrevocably instead). Each
 * function adds its own amount to its own counter, so a call that reached
 * another function's clone, or the original instead of the clone (its
 * store would bypass the transaction), shows in the totals. There are more
 * functions than a thread remembers clones (64), so some share a slot.
 * The blocks also count how _ITM_inTransaction says they run: a relaxed
 * one that called the unsafe function is irrevocable; an atomic block that
 * may cancel is retryable at one thread, where both runtimes run it
 * serially but can still cancel it (with more threads, either runtime may
 * make a block that keeps losing conflicts irrevocable). */
#include "itm_prog.h"

#define FNS 80
#define OPS 20000

typedef void (*safe_fn)(long *) __attribute__((transaction_safe));
typedef void (*plain_fn)(long *);

static long counter[FNS];
static long unsafe_calls;
/* By _ITM_inTransaction's answer (outside, retryable, irrevocable): in the
 * atomic blocks, and in the relaxed blocks after the unsafe call. */
static long how_atomic[3], how_unsafe[3];

extern int _ITM_inTransaction(void) __attribute__((transaction_pure));

#define SAFE(k)                                                                                    \
    __attribute__((transaction_safe, noinline)) static void add_##k(long *c) { c[k] += k + 1; }
#define SAFE10(t) SAFE(t##0) SAFE(t##1) SAFE(t##2) SAFE(t##3) SAFE(t##4) SAFE(t##5) SAFE(t##6) SAFE(t##7) SAFE(t##8) SAFE(t##9)
SAFE(0) SAFE(1) SAFE(2) SAFE(3) SAFE(4) SAFE(5) SAFE(6) SAFE(7) SAFE(8) SAFE(9)
SAFE10(1) SAFE10(2) SAFE10(3) SAFE10(4) SAFE10(5) SAFE10(6) SAFE10(7)

#define FN10(t) add_##t##0, add_##t##1, add_##t##2, add_##t##3, add_##t##4, add_##t##5, add_##t##6, add_##t##7, \
                add_##t##8, add_##t##9
static safe_fn fns[FNS] = { add_0, add_1, add_2, add_3, add_4, add_5, add_6, add_7, add_8, add_9,
                            FN10(1), FN10(2), FN10(3), FN10(4), FN10(5), FN10(6), FN10(7) };

/* No clone: the relaxed block that calls it goes irrevocable. */
__attribute__((noinline)) static void unsafe_count(long *c)
{
    (void)c;
    unsafe_calls++;
}

static plain_fn plain[2] = { unsafe_count, (plain_fn)add_3 };

static void worker(int id)
{
    unsigned long seed = (unsigned long)id * 104729 + 7;
    for (int i = 0; i < OPS; i++) {
        unsigned a = prog_rand(&seed) % FNS, b = prog_rand(&seed) % FNS;
        if (i % 100 == 0) {
            plain_fn f = plain[(i / 100) % 2];
            __transaction_relaxed {
                f(counter);
                if (f == unsafe_count)
                    how_unsafe[_ITM_inTransaction()]++;
            }
        } else {
            __transaction_atomic {
                fns[a](counter);
                fns[b](counter);
                how_atomic[_ITM_inTransaction()]++;
                if (counter[0] < 0) /* never: but a block that may cancel runs GCC's instrumented clone */
                    __transaction_cancel;
            }
        }
        prog_commits[id]++;
    }
}

static int check(void)
{
    long calls = 0;
    printf("result");
    for (int k = 0; k < FNS; k++) {
        printf(" %ld", counter[k]);
        if (counter[k] % (k + 1) != 0)
            return printf("\n"), 1;
        calls += counter[k] / (k + 1);
    }
    long n = prog_threads, atomic = n * (OPS - OPS / 100);
    if (n == 1)
        printf(" atomic %ld %ld %ld", how_atomic[0], how_atomic[1], how_atomic[2]);
    printf(" unsafe %ld after_unsafe %ld %ld %ld\n", unsafe_calls, how_unsafe[0], how_unsafe[1], how_unsafe[2]);
    /* Two safe calls per atomic block, one per relaxed block that called add_3. */
    long want = n * (2L * (OPS - OPS / 100) + OPS / 200);
    int how_ok = how_atomic[1] + (n > 1 ? how_atomic[2] : 0) == atomic && how_unsafe[2] == n * (OPS / 200);
    return calls == want && unsafe_calls == n * (OPS / 200) && how_ok ? 0 : 1;
}
