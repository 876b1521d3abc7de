/* crossbind: the engine's seeded random generator (xoshiro256**). */
#ifndef CROSSBIND_RNG_H
#define CROSSBIND_RNG_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct cb_rng { uint64_t s[4]; } cb_rng;

void cb_rng_seed(cb_rng *r, uint64_t seed);
uint64_t cb_rng_next(cb_rng *r);
double cb_rng_uniform(cb_rng *r);          /* [0, 1) */
double cb_rng_normal(cb_rng *r);           /* N(0, 1) */
uint64_t cb_rng_below(cb_rng *r, uint64_t n); /* [0, n), n > 0 */

/* The protocol's five seeds (section 3); run i uses seed i (1-based). */
extern const uint64_t cb_protocol_seeds[5];

#ifdef __cplusplus
}
#endif
#endif
