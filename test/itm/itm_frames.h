/*
 * itm_frames.h - what the programs about the transaction's own stack
 * (itm_stack*.c) share: transaction_safe helpers that write and read a
 * caller's array through GCC's barriers, a transaction_pure one that writes
 * it with plain stores, and the sum such an array must give. GCC is kept
 * from seeing through them (noipa), so that it instruments every access as
 * it must for memory it knows nothing about.
 */
#ifndef ITM_FRAMES_H
#define ITM_FRAMES_H

#define WORDS 24

static long mismatches; /* sums that differ from what their values give */

/* Writes v, v + 1, ... into a caller's array (barriers). */
__attribute__((transaction_safe, noipa, unused)) static void fill(long *buf, int n, long v)
{
    for (int i = 0; i < n; i++)
        buf[i] = v + i;
}

/* The same with plain stores: GCC does not instrument a pure function. */
__attribute__((transaction_pure, noipa, unused)) static void fill_plain(long *buf, int n, long v)
{
    for (int i = 0; i < n; i++)
        ((volatile long *)buf)[i] = v + i;
}

/* Sums a caller's array (barriers). */
__attribute__((transaction_safe, noipa, unused)) static long sum(const long *buf, int n)
{
    long s = 0;
    for (int i = 0; i < n; i++)
        s += buf[i];
    return s;
}

/* Sums it with plain loads. */
__attribute__((transaction_pure, noipa, unused)) static long sum_plain(const long *buf, int n)
{
    long s = 0;
    for (int i = 0; i < n; i++)
        s += ((const volatile long *)buf)[i];
    return s;
}

/* What fill(buf, WORDS, v) sums to. */
static long expected(long v) { return WORDS * v + WORDS * (WORDS - 1) / 2; }

static void check_sum(long got, long v)
{
    if (got != expected(v))
        __atomic_add_fetch(&mismatches, 1, __ATOMIC_RELAXED);
}

#endif
