/* Softmax along one per-sample dimension. */
#include <math.h>
#include "exec_internal.h"
#include "op.h"

/* The rows softmax runs along: `outer` x `inner` of them, `len` long, with
 * stride `inner`. */
typedef struct rows { int64_t outer, len, inner; } rows;

static rows rows_of(const cb_node *n, int batch)
{
    rows r = {batch, n->dims[n->axis], 1};
    for (int d = 0; d < n->axis; d++) r.outer *= n->dims[d];
    for (int d = n->axis + 1; d < n->ndim; d++) r.inner *= n->dims[d];
    return r;
}

static cb_status softmax_forward(const cb_step *st)
{
    const rows r = rows_of(st->n, st->batch);
    for (int64_t o = 0; o < r.outer; o++)
        for (int64_t in = 0; in < r.inner; in++) {
            const float *xr = st->x + o * r.len * r.inner + in;
            float *yr = st->y + o * r.len * r.inner + in;
            float top = xr[0];
            for (int64_t k = 1; k < r.len; k++) top = xr[k * r.inner] > top ? xr[k * r.inner] : top;
            double sum = 0; /* exp(x - max) once per element, as PyTorch, summed in double */
            for (int64_t k = 0; k < r.len; k++) sum += yr[k * r.inner] = (float)exp((double)xr[k * r.inner] - top);
            for (int64_t k = 0; k < r.len; k++) yr[k * r.inner] = (float)(yr[k * r.inner] / sum);
        }
    return CB_OK;
}

static cb_status softmax_backward(const cb_step *st) /* dx = y * (dy - sum(dy * y)) along the axis */
{
    if (!st->dx) return CB_OK;
    const rows r = rows_of(st->n, st->batch);
    const float *y = st->ex->val[st->i], *dy = st->dy;
    for (int64_t o = 0; o < r.outer; o++)
        for (int64_t in = 0; in < r.inner; in++) {
            const int64_t base = o * r.len * r.inner + in;
            double dot = 0;
            for (int64_t k = 0; k < r.len; k++) dot += (double)dy[base + k * r.inner] * y[base + k * r.inner];
            for (int64_t k = 0; k < r.len; k++)
                st->dx[base + k * r.inner] += (float)(y[base + k * r.inner] * (dy[base + k * r.inner] - dot));
        }
    return CB_OK;
}

const cb_op_desc cb_op_softmax = {.forward = softmax_forward, .backward = softmax_backward};
