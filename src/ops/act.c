/* Elementwise activations. The reference level computes in double with
 * libm; the fast level in float with branch-free approximations that the
 * compiler vectorises (libm's scalar tanhf dominated LeNet's profile), across
 * threads. Backward uses the forward output, as PyTorch's kernels do. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "fastmath.h"
#include "ops.h"

static float act_ref(cb_act a, float v)
{
    switch (a) {
    case CB_ACT_TANH: return (float)tanh((double)v);
    case CB_ACT_RELU: return v > 0.0f ? v : (isnan(v) ? v : 0.0f);
    case CB_ACT_SIGMOID: return (float)(1.0 / (1.0 + exp(-(double)v)));
    case CB_ACT_NONE: break;
    }
    return v;
}

/* y = tanh(x) with the fast approximation (y may be x): 16 lanes at a time
 * where the machine has them. */
static void tanh_fast(int64_t n, const float *x, float *y)
{
    int64_t i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= n; i += 16) {
        cb_v16f v;
        memcpy(&v, x + i, sizeof v);
        v = tanh16_approx(v);
        memcpy(y + i, &v, sizeof v);
    }
#endif
    for (; i < n; i++) y[i] = tanh_approx(x[i]);
}

#define ACT_BLOCK 4096 /* elements per parallel work item */

void cb_act_fwd(cb_act a, int64_t n, const float *x, float *y, int fast)
{
    if (!fast) {
        for (int64_t i = 0; i < n; i++) y[i] = act_ref(a, x[i]);
        return;
    }
    if (fast == CB_FAST_EXACT) { /* libm's, through the reference's double, split over the threads */
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; i++) y[i] = act_ref(a, x[i]);
        return;
    }
    switch (a) {
    case CB_ACT_TANH:
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; i += ACT_BLOCK) tanh_fast(n - i < ACT_BLOCK ? n - i : ACT_BLOCK, x + i, y + i);
        break;
    case CB_ACT_RELU:
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : (isnan(x[i]) ? x[i] : 0.0f);
        break;
    case CB_ACT_SIGMOID:
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; i++) y[i] = x[i] != x[i] ? x[i] : 1.0f / (1.0f + exp_approx(-x[i]));
        break;
    case CB_ACT_NONE:
        if (y != x) memmove(y, x, (size_t)n * sizeof *y);
        break;
    }
}

void cb_act_fwd_inplace(cb_act a, int64_t n, float *y)
{
    switch (a) {
    case CB_ACT_TANH:
        tanh_fast(n, y, y);
        break;
    case CB_ACT_RELU:
        for (int64_t i = 0; i < n; i++) y[i] = y[i] > 0.0f ? y[i] : (isnan(y[i]) ? y[i] : 0.0f);
        break;
    case CB_ACT_SIGMOID:
        for (int64_t i = 0; i < n; i++) y[i] = y[i] != y[i] ? y[i] : 1.0f / (1.0f + exp_approx(-y[i]));
        break;
    case CB_ACT_NONE:
        break;
    }
}

/* dx = (store) or += (add) dy * act'(y). */
#define ACT_BWD_LOOP(expr)                                                                                            \
    do {                                                                                                              \
        if (store) {                                                                                                  \
            _Pragma("omp parallel for schedule(static) if (fast)")                                                    \
            for (int64_t i = 0; i < n; i++) dx[i] = (expr);                                                           \
        } else {                                                                                                      \
            _Pragma("omp parallel for schedule(static) if (fast)")                                                    \
            for (int64_t i = 0; i < n; i++) dx[i] += (expr);                                                          \
        }                                                                                                             \
    } while (0)

void cb_act_bwd_to(cb_act a, int64_t n, const float *y, const float *dy, float *dx, int fast, int store)
{
    switch (a) {
    case CB_ACT_TANH: ACT_BWD_LOOP(dy[i] * (1.0f - y[i] * y[i])); break;
    case CB_ACT_RELU: ACT_BWD_LOOP(y[i] > 0.0f ? dy[i] : 0.0f); break;
    case CB_ACT_SIGMOID: ACT_BWD_LOOP(dy[i] * y[i] * (1.0f - y[i])); break;
    case CB_ACT_NONE: ACT_BWD_LOOP(dy[i]); break;
    }
}
#undef ACT_BWD_LOOP

void cb_act_bwd(cb_act a, int64_t n, const float *y, const float *dy, float *dx, int fast)
{
    cb_act_bwd_to(a, n, y, dy, dx, fast, 0);
}
