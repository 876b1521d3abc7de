/* Eight-float vectors (GCC/Clang vector extensions) for the kernels that
 * tile their work in registers explicitly; elementwise loops are left to the
 * compiler's vectoriser, which does better on them. */
#ifndef CB_OPS_VEC_H
#define CB_OPS_VEC_H

#include <stdint.h>
#include <string.h>

#define CB_VL 8
typedef float v8f __attribute__((vector_size(CB_VL * sizeof(float))));
typedef int32_t v8i __attribute__((vector_size(CB_VL * sizeof(int32_t))));

static inline v8f v8_load(const float *p)
{
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void v8_store(float *p, v8f v) { memcpy(p, &v, sizeof v); }

static inline v8f v8_splat(float x) { return (v8f){x, x, x, x, x, x, x, x}; }

/* mask ? a : b, lane by lane (mask lanes are 0 or -1, as comparisons give). */
static inline v8f v8_select(v8i mask, v8f a, v8f b) { return (v8f)(((v8i)a & mask) | ((v8i)b & ~mask)); }

static inline v8f v8_min(v8f a, v8f b) { return v8_select(a < b, a, b); }
static inline v8f v8_max(v8f a, v8f b) { return v8_select(a > b, a, b); }

/* The larger of m and v, NaN winning (v first if both are NaN): max pooling's
 * value rule, with m the earlier value in scan order. */
static inline v8f v8_max_nan(v8f m, v8f v) { return v8_select((v > m) | (v != v), v, m); }

#endif
