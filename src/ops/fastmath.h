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

/* 1 / (1 + e^-x); exp_approx clamps, so the result saturates to 0 or 1. */
static inline float sigmoid_approx(float x)
{
    return 1.0f / (1.0f + exp_approx(-x));
}

#endif
