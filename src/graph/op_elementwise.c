/* Elementwise ops: the residual Add and Clip (ReLU6) of one shape, and Mul
 * of one shape or by a channel gate (squeeze-and-excitation: one factor per
 * plane). Split over threads only where there is enough to split and the
 * level allows threaded kernels (the reference level runs single-threaded). */
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

/* Mul: the planes of a scaled by b's one value each where b is a gate
 * ([C,1,1] against [C,H,W]), else elementwise. */
static int64_t mul_plane(const cb_step *st)
{
    const cb_node *b = &st->g->nodes[st->n->in[1]];
    return cb_node_numel(b) == cb_node_numel(st->n) ? 1 : cb_node_numel(st->n) / cb_node_numel(b);
}

static cb_status mul_forward(const cb_step *st)
{
    const float *a = st->x, *b = cb_exec_slice(st->ex, st->n->in[1], st->b0);
    float *y = st->y;
    const int64_t k = (int64_t)cb_node_floats(st->n, st->batch), plane = mul_plane(st);
    if (plane == 1) {
#pragma omp parallel for schedule(static) if (st->fast && k > SPLIT_FLOATS)
        for (int64_t j = 0; j < k; j++) y[j] = a[j] * b[j];
    } else {
#pragma omp parallel for schedule(static) if (st->fast && k > SPLIT_FLOATS)
        for (int64_t p = 0; p < k / plane; p++)
            for (int64_t j = 0; j < plane; j++) y[p * plane + j] = a[p * plane + j] * b[p];
    }
    return CB_OK;
}

/* da += dy b; db += dy a, summed over each plane for a gate (elementwise,
 * every element is its own plane). One node on both sides (x * x) takes
 * both terms. */
static cb_status mul_backward(const cb_step *st)
{
    const int ia = st->n->in[0], ib = st->n->in[1];
    const float *a = cb_exec_slice(st->ex, ia, 0), *b = cb_exec_slice(st->ex, ib, 0), *dy = st->dy;
    float *da = st->ex->grad[ia], *db = st->ex->grad[ib];
    const int64_t k = (int64_t)cb_node_floats(st->n, st->batch), plane = mul_plane(st);
    for (int64_t p = 0; p < k / plane; p++) {
        double sum = 0.0; /* the gate's gradient: a sum over its plane */
        for (int64_t j = p * plane; j < (p + 1) * plane; j++) {
            if (da) da[j] += dy[j] * b[p];
            sum += (double)dy[j] * a[j];
        }
        if (db) db[p] += (float)sum;
    }
    return CB_OK;
}

const cb_op_desc cb_op_mul = {.forward = mul_forward, .backward = mul_backward};
