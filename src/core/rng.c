/* The engine's own seeded generator: xoshiro256** seeded through splitmix64.
 * It is independent of libc and of thread count, so a seed gives the same
 * numbers everywhere crossbind runs. */
#include <math.h>
#include "crossbind/rng.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void cb_rng_seed(cb_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t cb_rng_next(cb_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double cb_rng_uniform(cb_rng *r)
{
    return (double)(cb_rng_next(r) >> 11) * 0x1.0p-53;
}

double cb_rng_normal(cb_rng *r)
{
    double u1 = cb_rng_uniform(r), u2 = cb_rng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300; /* log(0) guard */
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

uint64_t cb_rng_below(cb_rng *r, uint64_t n)
{
    /* Rejection sampling: no modulo bias. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = cb_rng_next(r); while (x >= limit);
    return x % n;
}

const uint64_t cb_protocol_seeds[5] = {287426343ULL, 1850616268ULL, 2068338201ULL, 1202616822ULL, 868822724ULL};
