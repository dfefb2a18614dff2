/*
 * clock.h - reading the TSC, the one clock the event path uses.
 *
 * Owns: the two stamps the event path takes (the ordered rdtscp and the
 * unordered rdtsc bracketed by rdpid), the CPU feature test that chooses
 * between them, and the clock read of a measuring build (TMT_CLOCK_FLOOR,
 * meson -Dclock_floor), the switch of the record-only measuring build
 * (TMT_STAMP_COUNTER, meson -Dclock_floor=records; its stamp is
 * trace_buffer.h's tb_stamp_read), and the stand-in for rdpid that valgrind
 * can run (TMT_COUNTABLE_STAMP, meson -Dcountable_stamp). TSC_AUX -> CPU is a rule
 * of the format (tf_aux_cpu in trace_format.h).
 * Everything here is static inline and cheap; nothing here allocates, locks or
 * makes a system call.
 */
#ifndef TMT_CLOCK_H
#define TMT_CLOCK_H

#include <cpuid.h>
#include <stdint.h>
#include <x86intrin.h>

/* One rdtscp: the TSC and TSC_AUX ((node << 12) | cpu on Linux). rdtscp waits
 * for earlier instructions to finish, so the stamp is not taken early. */
static inline uint64_t clock_rdtscp(uint32_t *aux)
{
    /* Not __rdtscp(): its TSC_AUX goes through memory, which gave every
     * inline caller a stack frame. */
    uint32_t lo, hi, a;
    __asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(a));
    *aux = a;
    return ((uint64_t)hi << 32) | lo;
}

/*
 * The unordered stamp: rdpid; rdtsc; rdpid, repeated until both rdpid name
 * the same CPU. rdtsc does not wait for earlier instructions (rdtscp waits
 * for every earlier load, which in the STM's read barrier stops the loads
 * of consecutive reads from overlapping), so the stamp may be taken a few
 * dozen cycles early, which is far below the clock model's error.
 *
 * Why the CPU belongs to the TSC value: a thread only changes CPU at an
 * interrupt, and interrupts are precise: every instruction before the
 * interrupted one retired on the old CPU, none after it ran there (however
 * early it was executed out of order, it is squashed and re-executed after
 * the switch). So if no switch falls between the two rdpid, all three
 * instructions ran on the CPU they name. If exactly one switch falls
 * between them they name different CPUs and the loop retries. The
 * residual case: two switches between them, from A to B and back to A,
 * with the rdtsc on B; the stamp is then B's TSC labelled A. That takes two
 * context switches inside a window of a few ns; with the TSCs of A and B in
 * sync (as on this hardware) the error is nil, and with skewed TSCs it is
 * one record off by the A-B offset (the clock model is not affected: its
 * samples are brackets of rdtscp), which tmcheck may count as one temporal
 * inconsistency.
 *
 * The asm is one statement so the compiler keeps the program order.
 */
#ifndef TMT_COUNTABLE_STAMP
#define TMT_COUNTABLE_STAMP 0
#endif
static inline uint64_t clock_rdtsc_on_cpu(uint32_t *aux)
{
    uint64_t a, b;
    uint32_t lo, hi;
    do {
#if TMT_COUNTABLE_STAMP
        /* meson -Dcountable_stamp: valgrind has no rdpid (it raises SIGILL
         * and hides the CPUID bit) but runs rdtscp with the real TSC_AUX, so
         * this build reads the CPU, the TSC and the CPU again with three
         * instructions of its own on the same inline path and loop, and
         * callgrind counts what a real run executes (docs/tracer.md,
         * "Counting the event path under valgrind"). Ordered, so not for
         * timing. */
        __asm__ volatile("rdtscp\n\tmovl %%ecx, %k0\n\trdtscp" : "=&r"(a), "=&a"(lo), "=&d"(hi), "=&c"(b));
#else
        __asm__ volatile("rdpid %0\n\trdtsc\n\trdpid %3" : "=&r"(a), "=&a"(lo), "=&d"(hi), "=&r"(b));
#endif
    } while (a != b);
    *aux = (uint32_t)a;
    return ((uint64_t)hi << 32) | lo;
}

/*
 * Measuring builds (meson -Dclock_floor=tx or all; TMT_CLOCK_FLOOR 1 or 2):
 * an untraced transaction reads the clock where a traced one would (its
 * start and its commit, on every path: software, serial, hardware, a lone
 * thread's in place; at 2 also each read and write) and records nothing,
 * so that its slowdown against a normal build is what the clock reads
 * alone cost, the floor under any tracing that stamps those events
 * (docs/tracer.md, "The clock's floor"). The value is kept live by an empty
 * asm, as a record's store would keep it. Nothing else changes, and such a
 * build accepts only TMTRACE_EVENTS=off (config.c).
 */
#ifndef TMT_CLOCK_FLOOR
#define TMT_CLOCK_FLOOR 0
#endif
static inline void clock_floor_read(void)
{
    uint32_t aux;
    uint64_t tsc = clock_rdtsc_on_cpu(&aux);
    __asm__ volatile("" : : "r"(tsc), "r"(aux));
}

/*
 * The record-only measuring build (meson -Dclock_floor=records;
 * TMT_STAMP_COUNTER 1): every level records what it records in a normal
 * build, on the same inline paths, but no record reads the clock: a
 * record's stamp is its thread's previous one + 1 on CPU 0 (tb_stamp_read).
 * Its slowdown against a build with tracing off is what the record work
 * alone costs, to set beside the clock's floor (docs/tracer.md, "The clock's
 * floor"). The clock model's samples still read the TSC; the stamps are not
 * on its scale, so the header says so (TF_HDR_COUNTED) and tmsync refuses
 * such a trace.
 */
#ifndef TMT_STAMP_COUNTER
#define TMT_STAMP_COUNTER 0
#endif

/* True when the CPU has rdpid (CPUID.(EAX=7,ECX=0):ECX bit 22); without it
 * every stamp is an rdtscp. */
static inline int clock_has_rdpid(void)
{
    if (TMT_COUNTABLE_STAMP)
        return 1; /* its unordered stamp needs no rdpid */
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return 0;
    return (c >> 22) & 1u;
}

#endif
