/* Every access width of the ABI on unaligned and sub-word fields: 1-, 2-,
 * 4- and 8-byte integers, float, double, long double and complex double in
 * a packed structure, bytes and halves sharing words, and memcpy, memmove
 * and memset of shared bytes inside transactions. Every transaction adds
 * one to each field, so each ends as THREADS * OPS. */
#include <string.h>

#include "itm_prog.h"

#define OPS 3000

static struct __attribute__((packed)) {
    char pad;
    uint8_t u1;
    uint16_t u2;
    char pad2;
    uint32_t u4;
    uint64_t u8;
    float f;
    double d;
    long double e;
    double _Complex z;
} rec;

static struct {
    uint8_t b[3];
    uint16_t h;
    uint8_t c;
    uint32_t w;
} sub;

static unsigned char buf[41], copy[41];
static long torn;

static void worker(int id)
{
    for (int i = 0; i < OPS; i++) {
        unsigned char seen[16];
        int same = 1;
        __transaction_atomic {
            rec.u1 += 1;
            rec.u2 += 1;
            rec.u4 += 1;
            rec.u8 += 1;
            rec.f += 1.0f;
            rec.d += 1.0;
            rec.e += 1.0L;
            rec.z += 1.0;
            sub.b[1] += 1;
            sub.h += 1;
            sub.c += 1;
            sub.w += 1;
            memcpy(seen, buf + 1, sizeof seen);
            memset(buf + 1, seen[0] + 1, 16);
            memmove(buf + 20, buf + 1, 16);
            memcpy(copy + 3, buf + 20, 16);
        }
        for (unsigned k = 1; k < sizeof seen; k++)
            same &= seen[k] == seen[0];
        if (!same)
            __atomic_add_fetch(&torn, 1, __ATOMIC_RELAXED);
        prog_commits[id]++;
    }
}

static int check(void)
{
    long n = (long)prog_threads * OPS;
    int ok = rec.u1 == (uint8_t)n && rec.u2 == (uint16_t)n && rec.u4 == (uint32_t)n && rec.u8 == (uint64_t)n &&
             rec.f == (float)n && rec.d == (double)n && rec.e == (long double)n && rec.z == (double)n &&
             sub.b[0] == 0 && sub.b[1] == (uint8_t)n && sub.b[2] == 0 && sub.h == (uint16_t)n &&
             sub.c == (uint8_t)n && sub.w == (uint32_t)n && torn == 0;
    for (int k = 1; k <= 16; k++)
        ok &= buf[k] == (unsigned char)n && buf[19 + k] == (unsigned char)n && copy[2 + k] == (unsigned char)n;
    ok &= buf[0] == 0 && buf[17] == 0 && buf[19] == 0 && buf[36] == 0 && copy[2] == 0 && copy[19] == 0;
    printf("result u1 %u u2 %u u4 %u u8 %llu f %.1f d %.1f e %.1Lf z %.1f sub %u/%u/%u/%u/%u/%u buf %u torn %ld\n",
           rec.u1, rec.u2, rec.u4, (unsigned long long)rec.u8, rec.f, rec.d, rec.e, __real__ rec.z, sub.b[0],
           sub.b[1], sub.b[2], sub.h, sub.c, sub.w, buf[1], torn);
    return ok ? 0 : 1;
}
