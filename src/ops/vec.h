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

/* Row vectors as wide as the machine's registers: 16 floats with AVX-512,
 * 8 otherwise (where 16-float vectors would be register pairs and spill). */
#if defined(__AVX512F__)
#define CB_RVL 16
typedef float cb_vrow __attribute__((vector_size(CB_RVL * sizeof(float))));
#else
#define CB_RVL 8
typedef v8f cb_vrow;
#endif

/* A value in every lane, as one broadcast (adding a scalar to a zero vector
 * costs an add as well: -0 + 0 is not -0). */
static inline cb_vrow cb_vrow_splat(float x)
{
#if CB_RVL == 16
    return (cb_vrow){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
#else
    return v8_splat(x);
#endif
}

static inline cb_vrow cb_vrow_load(const float *p)
{
    cb_vrow v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The sum of v's lanes, in lane order. */
static inline float cb_vrow_hsum(cb_vrow v)
{
    float t[CB_RVL], acc = 0.0f;
    memcpy(t, &v, sizeof t);
    for (int l = 0; l < CB_RVL; l++) acc += t[l];
    return acc;
}

/* dst[0 .. n) = src[0 .. n), or += where add: the kernels' short row copies
 * (LeNet's rows of 24-32 floats), inline rather than a memcpy call per row. */
#if CB_RVL == 16
#include <immintrin.h>
static inline void cb_row_copy(float *dst, const float *src, int n, int add)
{
    int k = 0;
    for (; k + 16 <= n; k += 16)
        _mm512_storeu_ps(dst + k, add ? _mm512_add_ps(_mm512_loadu_ps(dst + k), _mm512_loadu_ps(src + k))
                                      : _mm512_loadu_ps(src + k));
    if (k < n) {
        const __mmask16 m = (__mmask16)((1u << (n - k)) - 1);
        const __m512 v = _mm512_maskz_loadu_ps(m, src + k);
        _mm512_mask_storeu_ps(dst + k, m, add ? _mm512_add_ps(_mm512_maskz_loadu_ps(m, dst + k), v) : v);
    }
}

/* dst[0 .. n) = src[0 .. n) and zeros from there to the next multiple of 16,
 * in whole stores: for rows copied into zero-padded planes in increasing
 * order, where what follows a row is padding or the start of the next row
 * (written after it). The destination needs that room. With masked stores
 * (cb_row_copy) the weight gradient's row copies were the hottest
 * instructions of its sample preparation; with whole stores its LeNet-1
 * first layer went from 0.27 to 0.23 ms per batch of 128 on one thread. */
static inline void cb_row_copy_zfill(float *dst, const float *src, int n)
{
    for (int k = 0; k < n; k += 16) {
        const __mmask16 m = (__mmask16)(n - k >= 16 ? 0xFFFF : (1u << (n - k)) - 1);
        _mm512_storeu_ps(dst + k, _mm512_maskz_loadu_ps(m, src + k));
    }
}
#else
static inline void cb_row_copy(float *dst, const float *src, int n, int add)
{
    for (int k = 0; k < n; k++) dst[k] = add ? dst[k] + src[k] : src[k];
}

static inline void cb_row_copy_zfill(float *dst, const float *src, int n)
{
    int k = 0;
    for (; k < n; k++) dst[k] = src[k];
    for (; k % CB_RVL; k++) dst[k] = 0.0f;
}
#endif

#endif
