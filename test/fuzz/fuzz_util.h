/*
 * fuzz_util.h - what the fuzz targets and the corpus maker share: reading
 * and writing little-endian integers of any width in the input layouts.
 * Never: allocates or prints.
 */
#ifndef TMT_FUZZ_UTIL_H
#define TMT_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t fuzz_le(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static inline void fuzz_put_le(uint8_t *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

#endif
