/* Branch-free float approximations of exp, tanh and the logistic function
 * that loops over them vectorise (libm's scalar calls do not); shared by the
 * activations and the recurrent layers' gates. Fast kernels only: the
 * reference level computes in double with libm. */
#ifndef CB_FASTMATH_H
#define CB_FASTMATH_H

#include <math.h>
#include <stdint.h>

/* exp(x) for float, Cephes' expf scheme: x = n ln2 + r, a degree-6
 * polynomial for exp(r), then scaling by 2^n through the exponent bits.
 * n = round(x / ln2) comes from the 1.5 * 2^23 trick (adding it leaves the
 * rounded integer in the low mantissa bits), which keeps the function free of
 * float-to-int conversions and libm calls, so loops over it vectorise.
 * Relative error about 2 ulp over [-87, 88]. */
static inline float exp_approx(float x)
{
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    union { float f; int32_t i; } k = {.f = x * 1.44269504088896341f + 12582912.0f};
    float n = k.f - 12582912.0f;
    float r = x - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float y = p * r * r + r + 1.0f;
    union { int32_t i; float f; } scale = {.i = (k.i - 0x4B400000 + 127) << 23}; /* 2^n */
    return y * scale.f;
}

/* tanh: Cephes' odd polynomial near 0 (where 1 - 2/(e^2x + 1) would lose
 * digits to cancellation), the exponential form elsewhere (which rounds to
 * exactly 1 from |x| = 9 on). */
static inline float tanh_approx(float x)
{
    float ax = fabsf(x);
    float z = x * x;
    float small = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z +
                    1.33314422036e-1f) * z - 3.33332819422e-1f) * z * x + x;
    float e = exp_approx(2.0f * (ax < 9.0f ? ax : 9.0f));
    float big = copysignf(1.0f - 2.0f / (e + 1.0f), x);
    float y = ax < 0.625f ? small : big;
    return x != x ? x : y; /* NaN stays NaN */
}

#if defined(__AVX512F__)
#include <immintrin.h>

/* tanh_approx over 16 lanes, where the division is a 14-bit reciprocal
 * estimate refined by one Newton step (about 1 ulp more error than a
 * division, at a fraction of its cost: timed alone, the division loop took
 * 0.21 of tanh_approx's 0.59 ns per element). Same formula and constants as
 * tanh_approx and exp_approx otherwise. */
typedef float cb_v16f __attribute__((vector_size(64)));
typedef int32_t cb_v16i __attribute__((vector_size(64)));

static inline cb_v16f tanh16_approx(cb_v16f x)
{
    const cb_v16i sign = (cb_v16i)x & (int32_t)0x80000000;
    const cb_v16f ax = (cb_v16f)((cb_v16i)x & 0x7fffffff), z = x * x;
    const cb_v16f small = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z +
                            1.33314422036e-1f) * z - 3.33332819422e-1f) * z * x + x;
    /* exp(2 min(|x|, 9)), as exp_approx (no clamping needed below 18) */
    const cb_v16f t = 2.0f * (cb_v16f)_mm512_min_ps((__m512)ax, _mm512_set1_ps(9.0f));
    const cb_v16f k = t * 1.44269504088896341f + 12582912.0f, n = k - 12582912.0f;
    const cb_v16f r = t - n * 0.693359375f + n * 2.12194440e-4f;
    cb_v16f p = 1.9875691500e-4f * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const cb_v16f e = (p * r * r + r + 1.0f) * (cb_v16f)((((cb_v16i)k - 0x4B400000) + 127) << 23);
    const cb_v16f d = e + 1.0f;
    cb_v16f q = (cb_v16f)_mm512_rcp14_ps((__m512)d);
    q = q * (2.0f - d * q); /* 1 / (e + 1) */
    const cb_v16f big = (cb_v16f)((cb_v16i)(1.0f - 2.0f * q) | sign);
    const cb_v16i near0 = ax < 0.625f, nan = x != x; /* lane masks: 0 or -1 */
    const cb_v16i y = (near0 & (cb_v16i)small) | (~near0 & (cb_v16i)big);
    return (cb_v16f)((nan & (cb_v16i)x) | (~nan & y));
}
#endif

/* 1 / (1 + e^-x); exp_approx clamps, so the result saturates to 0 or 1. */
static inline float sigmoid_approx(float x)
{
    return 1.0f / (1.0f + exp_approx(-x));
}

#endif
