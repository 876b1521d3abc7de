/* The piecewise-linear activations of MobileNetV3: hard sigmoid
 * (min(max(alpha x + beta, 0), 1), its squeeze-and-excitation gates) and
 * hard swish (x relu6(x + 3) / 6, written as PyTorch computes it so that
 * both round alike). A node with keras_order computes them as Keras'
 * MobileNetV3 does instead (h = relu6(x + 3) * alpha, alpha the file's
 * float32 1/6; x * h), rounding as its Add, Clip and Mul nodes do. Neither
 * is fused into a convolution; both are exact at every level. */
#include "exec_internal.h"
#include "op.h"

#define SPLIT_FLOATS 65536

static float hard_sigmoid(float x, float alpha, float beta)
{
    const float v = alpha * x + beta;
    return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v; /* NaN falls through */
}

static float hard_swish(float x)
{
    const float r = x + 3.0f;
    return x * (r < 0.0f ? 0.0f : r > 6.0f ? 6.0f : r) / 6.0f;
}

/* Keras' hard sigmoid: the sum, the clip, then the product by `scale`. */
static float keras_hard_sigmoid(float x, float scale)
{
    const float r = x + 3.0f;
    return (r < 0.0f ? 0.0f : r > 6.0f ? 6.0f : r) * scale;
}

static cb_status hardsigmoid_forward(const cb_step *st)
{
    const int64_t k = (int64_t)cb_node_floats(st->n, st->batch);
    const float alpha = st->n->alpha, beta = st->n->beta, *x = st->x;
    float *y = st->y;
    if (st->n->keras_order) {
#pragma omp parallel for schedule(static) if (st->fast && k > SPLIT_FLOATS)
        for (int64_t j = 0; j < k; j++) y[j] = keras_hard_sigmoid(x[j], alpha);
        return CB_OK;
    }
#pragma omp parallel for schedule(static) if (st->fast && k > SPLIT_FLOATS)
    for (int64_t j = 0; j < k; j++) y[j] = hard_sigmoid(x[j], alpha, beta);
    return CB_OK;
}

/* The slope alpha where the ramp is strictly inside (0, 1), as PyTorch's
 * hardsigmoid_backward (zero at the corners). */
static cb_status hardsigmoid_backward(const cb_step *st)
{
    if (!st->dx) return CB_OK;
    const int64_t k = (int64_t)cb_node_floats(st->n, st->batch);
    const float alpha = st->n->alpha, beta = st->n->beta;
    /* Keras' order: x + 3 inside the clip's open interval (0, 6) */
    const float a = st->n->keras_order ? 1.0f : alpha, b = st->n->keras_order ? 3.0f : beta,
                hi = st->n->keras_order ? 6.0f : 1.0f;
    for (int64_t j = 0; j < k; j++) {
        const float v = a * st->x[j] + b;
        if (v > 0.0f && v < hi) st->dx[j] += alpha * st->dy[j];
    }
    return CB_OK;
}

static cb_status hardswish_forward(const cb_step *st)
{
    const int64_t k = (int64_t)cb_node_floats(st->n, st->batch);
    const float *x = st->x, scale = st->n->alpha;
    float *y = st->y;
    if (st->n->keras_order) {
#pragma omp parallel for schedule(static) if (st->fast && k > SPLIT_FLOATS)
        for (int64_t j = 0; j < k; j++) y[j] = x[j] * keras_hard_sigmoid(x[j], scale);
        return CB_OK;
    }
#pragma omp parallel for schedule(static) if (st->fast && k > SPLIT_FLOATS)
    for (int64_t j = 0; j < k; j++) y[j] = hard_swish(x[j]);
    return CB_OK;
}

/* 0 below -3, (2x + 3) / 6 up to 3, 1 above: PyTorch's hardswish_backward
 * (which takes the middle piece on [-3, 3]). */
static cb_status hardswish_backward(const cb_step *st)
{
    if (!st->dx) return CB_OK;
    const int64_t k = (int64_t)cb_node_floats(st->n, st->batch);
    const int keras = st->n->keras_order;
    const float a = st->n->alpha; /* Keras' form: x (x + 3) a in the middle, 6 a x above */
    for (int64_t j = 0; j < k; j++) {
        const float x = st->x[j];
        const float slope = keras ? (x < -3.0f ? 0.0f : x <= 3.0f ? a * (2.0f * x + 3.0f) : 6.0f * a)
                                  : (x < -3.0f ? 0.0f : x <= 3.0f ? x / 3.0f + 0.5f : 1.0f);
        st->dx[j] += slope * st->dy[j];
    }
    return CB_OK;
}

const cb_op_desc cb_op_hardsigmoid = {.forward = hardsigmoid_forward, .backward = hardsigmoid_backward};
const cb_op_desc cb_op_hardswish = {.forward = hardswish_forward, .backward = hardswish_backward};
