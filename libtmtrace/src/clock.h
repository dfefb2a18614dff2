/*
 * clock.h - reading the TSC, the one clock the event path uses.
 *
 * Owns: the rdtscp wrapper and the conversion of TSC_AUX into a CPU number.
 * Everything here is static inline and cheap; nothing here allocates, locks or
 * makes a system call.
 */
#ifndef TMT_CLOCK_H
#define TMT_CLOCK_H

#include <stdint.h>
#include <x86intrin.h>

/* One rdtscp: the TSC and TSC_AUX ((node << 12) | cpu on Linux). rdtscp waits
 * for earlier instructions to finish, so the stamp is not taken early. */
static inline uint64_t clock_rdtscp(uint32_t *aux)
{
    unsigned int a;
    uint64_t t = __rdtscp(&a);
    *aux = a;
    return t;
}

static inline unsigned clock_aux_cpu(uint32_t aux) { return aux & 0xfffu; }

#endif
