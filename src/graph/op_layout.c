/* Ops that move values without arithmetic: Concat along the channels and
 * Pad of the spatial borders (a constant, a reflection or the edge; in
 * constant mode, negative pads crop). */
#include <string.h>
#include "exec_internal.h"
#include "op.h"

static cb_status concat_forward(const cb_step *st) /* per sample, each input's block after the one before */
{
    const size_t per = (size_t)cb_node_numel(st->n);
    size_t off = 0;
    for (int k = 0; k < st->n->n_in; k++) {
        const size_t pk = (size_t)cb_node_numel(&st->g->nodes[st->n->in[k]]);
        const float *xk = cb_exec_slice(st->ex, st->n->in[k], st->b0);
        for (int s = 0; s < st->batch; s++)
            memcpy(st->y + (size_t)s * per + off, xk + (size_t)s * pk, pk * sizeof *st->y);
        off += pk;
    }
    return CB_OK;
}

static cb_status concat_backward(const cb_step *st)
{
    const size_t per = (size_t)cb_node_numel(st->n);
    size_t off = 0;
    for (int k = 0; k < st->n->n_in; k++) {
        const size_t pk = (size_t)cb_node_numel(&st->g->nodes[st->n->in[k]]);
        float *dk = st->ex->grad[st->n->in[k]];
        for (int s = 0; dk && s < st->batch; s++)
            for (size_t j = 0; j < pk; j++) dk[(size_t)s * pk + j] += st->dy[(size_t)s * per + off + j];
        off += pk;
    }
    return CB_OK;
}

const cb_op_desc cb_op_concat = {.forward = concat_forward, .backward = concat_backward};

/* The input row (column) an output row at offset i from the input's first
 * takes its value from, for an axis of n: -1 where the constant fills it. */
static int64_t pad_source(cb_pad_mode mode, int64_t i, int64_t n)
{
    if (i >= 0 && i < n) return i;
    if (mode == CB_PAD_EDGE) return i < 0 ? 0 : n - 1;
    if (mode == CB_PAD_REFLECT) return i < 0 ? -i : 2 * (n - 1) - i; /* pads < n: one reflection suffices */
    return -1;
}

/* The input rows [r0, r1) and columns [c0, c1) a constant-mode Pad keeps:
 * all of them, unless a negative pad crops some. */
typedef struct pad_window {
    int64_t r0, r1, c0, c1;
} pad_window;

static pad_window window_of(const cb_node *n, int64_t h, int64_t w)
{
    pad_window c = {n->pads[0] < 0 ? -n->pads[0] : 0, n->pads[2] < 0 ? h + n->pads[2] : h,
                    n->pads[1] < 0 ? -n->pads[1] : 0, n->pads[3] < 0 ? w + n->pads[3] : w};
    if (c.r1 < c.r0) c.r1 = c.r0; /* cropped past the other side: nothing kept */
    if (c.c1 < c.c0) c.c1 = c.c0;
    return c;
}

static cb_status pad_forward(const cb_step *st)
{
    const cb_node *n = st->n, *xn = &st->g->nodes[n->in[0]];
    const int64_t planes = (int64_t)st->batch * xn->dims[0], h = xn->dims[1], w = xn->dims[2];
    const int64_t oh = n->dims[1], ow = n->dims[2];
    const cb_pad_mode mode = (cb_pad_mode)n->pad_mode;
    for (int64_t c = 0; c < planes; c++) {
        float *yp = st->y + c * oh * ow;
        const float *xp = st->x + c * h * w;
        if (mode == CB_PAD_CONSTANT) {
            const pad_window k = window_of(n, h, w);
            for (int64_t j = 0; j < oh * ow; j++) yp[j] = n->lo;
            for (int64_t r = k.r0; r < k.r1; r++)
                memcpy(yp + (r + n->pads[0]) * ow + k.c0 + n->pads[1], xp + r * w + k.c0, (size_t)(k.c1 - k.c0) * sizeof *yp);
            continue;
        }
        for (int64_t r = 0; r < oh; r++) {
            const float *xr = xp + pad_source(mode, r - n->pads[0], h) * w;
            for (int64_t j = 0; j < ow; j++) yp[r * ow + j] = xr[pad_source(mode, j - n->pads[1], w)];
        }
    }
    return CB_OK;
}

/* Each output's gradient goes to the input it was copied from: the
 * interior's to its own, a reflected or repeated border's to its source
 * too (so edge rows gather the whole border's). */
static cb_status pad_backward(const cb_step *st)
{
    if (!st->dx) return CB_OK;
    const cb_node *n = st->n, *xn = &st->g->nodes[n->in[0]];
    const int64_t planes = (int64_t)st->batch * xn->dims[0], h = xn->dims[1], w = xn->dims[2];
    const int64_t ow = n->dims[2], oh = n->dims[1];
    const cb_pad_mode mode = (cb_pad_mode)n->pad_mode;
    for (int64_t c = 0; c < planes; c++) {
        float *dxp = st->dx + c * h * w;
        const float *dyp = st->dy + c * oh * ow;
        if (mode == CB_PAD_CONSTANT) { /* cropped inputs get no gradient */
            const pad_window k = window_of(n, h, w);
            for (int64_t r = k.r0; r < k.r1; r++)
                for (int64_t j = k.c0; j < k.c1; j++) dxp[r * w + j] += dyp[(r + n->pads[0]) * ow + n->pads[1] + j];
            continue;
        }
        for (int64_t r = 0; r < oh; r++) {
            float *dxr = dxp + pad_source(mode, r - n->pads[0], h) * w;
            for (int64_t j = 0; j < ow; j++) dxr[pad_source(mode, j - n->pads[1], w)] += dyp[r * ow + j];
        }
    }
    return CB_OK;
}

const cb_op_desc cb_op_pad = {.forward = pad_forward, .backward = pad_backward};
