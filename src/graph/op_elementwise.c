/* Elementwise ops of one shape: the residual Add and Clip (ReLU6). Split
 * over threads only where there is enough to split and the level allows
 * threaded kernels (the reference level runs single-threaded). */
#include <omp.h>
#include "exec_internal.h"
#include "op.h"

#define SPLIT_FLOATS 65536

static cb_status add_forward(const cb_step *st)
{
    const float *a = st->x, *b = cb_exec_slice(st->ex, st->n->in[1], st->b0);
    float *y = st->y;
    const int64_t k = (int64_t)cb_node_floats(st->n, st->batch);
#pragma omp parallel for schedule(static) if (st->fast && k > SPLIT_FLOATS)
    for (int64_t j = 0; j < k; j++) y[j] = a[j] + b[j];
    return CB_OK;
}

static cb_status add_backward(const cb_step *st) /* both inputs take dy (one node twice: twice) */
{
    const int64_t k = (int64_t)cb_node_floats(st->n, st->batch);
    for (int side = 0; side < 2; side++) {
        float *d = st->ex->grad[st->n->in[side]];
        if (d)
            for (int64_t j = 0; j < k; j++) d[j] += st->dy[j];
    }
    return CB_OK;
}

const cb_op_desc cb_op_add = {.forward = add_forward, .backward = add_backward};

static cb_status clip_forward(const cb_step *st)
{
    const int64_t k = (int64_t)cb_node_floats(st->n, st->batch);
    const float lo = st->n->lo, hi = st->n->hi, *x = st->x;
    float *y = st->y;
#pragma omp parallel for schedule(static) if (st->fast && k > SPLIT_FLOATS)
    for (int64_t j = 0; j < k; j++) y[j] = x[j] < lo ? lo : x[j] > hi ? hi : x[j]; /* NaN falls through */
    return CB_OK;
}

static cb_status clip_backward(const cb_step *st)
{
    if (!st->dx) return CB_OK;
    const int64_t k = (int64_t)cb_node_floats(st->n, st->batch);
    for (int64_t j = 0; j < k; j++)
        if (st->x[j] > st->n->lo && st->x[j] < st->n->hi) st->dx[j] += st->dy[j];
    return CB_OK;
}

const cb_op_desc cb_op_clip = {.forward = clip_forward, .backward = clip_backward};
