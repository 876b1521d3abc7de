/* Constant folding at import: a node of the shape-arithmetic kind whose
 * every input is a constant is evaluated here and its outputs become
 * constants. Exporters emit such chains to build attributes at run time:
 * torch 1.13 writes F.pad's pads as ConstantOfShape -> Concat -> Reshape ->
 * Slice -> Transpose -> Reshape -> Cast. Constants are float32 or int64
 * (cb_onnx_tensor_to_cb), and so are the folded values. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "crossbind/formats.h"
#include "onnx_import_internal.h"

/* A folded value is attribute-sized: more than this many elements is
 * refused rather than allocated for a hostile file. */
#define FOLD_MAX_ELEMS ((int64_t)1 << 22)

typedef struct fold { importer *im; const Onnx__NodeProto *n; } fold;

static cb_status refuse(const fold *f, const char *why) { return imp_unsupported(f->im, f->n, why); }

static const cb_tensor *input(const fold *f, size_t i)
{
    if (i >= f->n->n_input || !f->n->input[i][0]) return NULL;
    const value *v = imp_lookup(f->im, f->n->input[i]);
    return v ? &v->constant : NULL;
}

/* out as a new tensor of that type and shape (zeroed). */
static cb_status make(const fold *f, cb_tensor *out, cb_dtype dtype, int ndim, const int64_t *shape)
{
    int64_t count = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0 || (shape[d] && count > FOLD_MAX_ELEMS / shape[d])) return refuse(f, "a folded constant too large");
        count *= shape[d];
    }
    memset(out, 0, sizeof *out);
    out->dtype = dtype;
    out->ndim = ndim;
    memcpy(out->shape, shape, (size_t)ndim * sizeof *shape);
    out->data = calloc((size_t)(count ? count : 1), cb_dtype_size(dtype));
    return out->data ? CB_OK : cb_fail(CB_ERR_NOMEM, "out of memory folding constants");
}

static int64_t as_int(const cb_tensor *t, int64_t k)
{
    return t->dtype == CB_I64 ? ((const int64_t *)t->data)[k] : (int64_t)((const float *)t->data)[k];
}

/* The int64 list a 1-D (or scalar) constant holds, at most max. */
static int int_list(const cb_tensor *t, int64_t *out, int max)
{
    if (!t || t->dtype != CB_I64 || t->ndim > 1) return -1;
    const int64_t n = cb_tensor_numel(t);
    if (n > max) return -1;
    for (int64_t k = 0; k < n; k++) out[k] = as_int(t, k);
    return (int)n;
}

/* Row-major strides of a shape. */
static void strides_of(const cb_tensor *t, int64_t *st)
{
    int64_t s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) st[d] = s, s *= t->shape[d];
}

static int norm_axis(int64_t a, int rank) { return (int)(a < 0 ? a + rank : a); }

/* Copies out[k] = x[offset(k)] over out's shape, where input index of
 * output index i along d is start[d] + i * step[d] (Slice, Transpose's
 * permuted strides expressed per output axis). */
static void gather_strided(cb_tensor *out, const cb_tensor *x, const int64_t *start, const int64_t *xstride)
{
    const size_t es = cb_dtype_size(x->dtype);
    const int64_t total = cb_tensor_numel(out);
    int64_t idx[CB_MAX_DIMS] = {0};
    for (int64_t k = 0; k < total; k++) {
        int64_t off = 0;
        for (int d = 0; d < out->ndim; d++) off += start[d] + idx[d] * xstride[d];
        memcpy((char *)out->data + (size_t)k * es, (const char *)x->data + (size_t)off * es, es);
        for (int d = out->ndim - 1; d >= 0; d--) {
            if (++idx[d] < out->shape[d]) break;
            idx[d] = 0;
        }
    }
}

static cb_status fold_transpose(const fold *f, const cb_tensor *x, cb_tensor *out)
{
    int64_t perm[CB_MAX_DIMS], st[CB_MAX_DIMS], shape[CB_MAX_DIMS], start[CB_MAX_DIMS] = {0}, xs[CB_MAX_DIMS];
    int np = imp_attr_ints(f->n, "perm", perm, CB_MAX_DIMS, 0, 0);
    if (np == 0) { /* default: reversed axes */
        np = x->ndim;
        for (int d = 0; d < np; d++) perm[d] = np - 1 - d;
    }
    if (np != x->ndim) return refuse(f, "perm does not match the rank");
    int seen = 0;
    for (int d = 0; d < np; d++) {
        if (perm[d] < 0 || perm[d] >= np || (seen >> perm[d] & 1)) return refuse(f, "perm is not a permutation");
        seen |= 1 << perm[d];
    }
    strides_of(x, st);
    for (int d = 0; d < np; d++) shape[d] = x->shape[perm[d]], xs[d] = st[perm[d]];
    cb_status s = make(f, out, x->dtype, np, shape);
    if (s == CB_OK) gather_strided(out, x, start, xs);
    return s;
}

static cb_status fold_slice(const fold *f, const cb_tensor *x, cb_tensor *out)
{
    int64_t starts[CB_MAX_DIMS], ends[CB_MAX_DIMS], axes[CB_MAX_DIMS], steps[CB_MAX_DIMS];
    int ns, ne, na, nt;
    if (f->im->opset >= 10) {
        ns = int_list(input(f, 1), starts, CB_MAX_DIMS), ne = int_list(input(f, 2), ends, CB_MAX_DIMS);
        na = input(f, 3) ? int_list(input(f, 3), axes, CB_MAX_DIMS) : -2;
        nt = input(f, 4) ? int_list(input(f, 4), steps, CB_MAX_DIMS) : -2;
    } else {
        ns = imp_attr_ints(f->n, "starts", starts, CB_MAX_DIMS, 0, 0);
        ne = imp_attr_ints(f->n, "ends", ends, CB_MAX_DIMS, 0, 0);
        na = imp_attr(f->n, "axes") ? imp_attr_ints(f->n, "axes", axes, CB_MAX_DIMS, 0, 0) : -2;
        nt = -2;
    }
    if (ns < 0 || ns != ne || (na != -2 && na != ns) || (nt != -2 && nt != ns))
        return refuse(f, "starts, ends, axes and steps must be int64 lists of one length");
    int64_t first[CB_MAX_DIMS] = {0}, step[CB_MAX_DIMS], shape[CB_MAX_DIMS], st[CB_MAX_DIMS], start[CB_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) step[d] = 1, shape[d] = x->shape[d];
    for (int k = 0; k < ns; k++) {
        const int a = norm_axis(na == -2 ? k : axes[k], x->ndim);
        const int64_t dim = x->shape[a > 0 ? a : 0], sp = nt == -2 ? 1 : steps[k];
        if (a < 0 || a >= x->ndim || sp == 0 || sp == INT64_MIN) return refuse(f, "an axis out of range or a step of 0");
        int64_t b = starts[k] < 0 ? starts[k] + dim : starts[k], e = ends[k] < 0 ? ends[k] + dim : ends[k];
        if (sp > 0) {
            b = b < 0 ? 0 : b > dim ? dim : b;
            e = e < 0 ? 0 : e > dim ? dim : e;
        } else {
            b = b < 0 ? 0 : b > dim - 1 ? dim - 1 : b;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
        }
        /* b, e within [-1, dim]: the differences cannot overflow, whatever the step */
        const int64_t len = sp > 0 ? (e > b ? (e - b - 1) / sp + 1 : 0) : (b > e ? (b - e - 1) / -sp + 1 : 0);
        first[a] = b, step[a] = sp, shape[a] = len > 0 ? len : 0;
    }
    strides_of(x, st);
    for (int d = 0; d < x->ndim; d++) start[d] = first[d] * st[d], st[d] *= step[d];
    cb_status s = make(f, out, x->dtype, x->ndim, shape);
    if (s == CB_OK) gather_strided(out, x, start, st);
    return s;
}

static cb_status fold_concat(const fold *f, cb_tensor *out)
{
    const cb_tensor *x0 = input(f, 0);
    if (!x0) return refuse(f, "no inputs");
    const int axis = norm_axis(imp_attr_int(f->n, "axis", 0), x0->ndim);
    if (axis < 0 || axis >= x0->ndim) return refuse(f, "axis out of range");
    int64_t shape[CB_MAX_DIMS];
    memcpy(shape, x0->shape, sizeof shape);
    shape[axis] = 0;
    for (size_t i = 0; i < f->n->n_input; i++) {
        const cb_tensor *t = input(f, i);
        if (!t) return refuse(f, "an empty input name");
        if (t->dtype != x0->dtype || t->ndim != x0->ndim) return refuse(f, "inputs differ in type or rank");
        for (int d = 0; d < t->ndim; d++)
            if (d != axis && t->shape[d] != x0->shape[d]) return refuse(f, "inputs differ in shape");
        shape[axis] += t->shape[axis];
    }
    cb_status s = make(f, out, x0->dtype, x0->ndim, shape);
    if (s != CB_OK) return s;
    /* Blocks: `outer` rows, each input contributing shape[axis..] of its own. */
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= shape[d];
    for (int d = axis + 1; d < x0->ndim; d++) inner *= shape[d];
    const size_t es = cb_dtype_size(x0->dtype);
    char *dst = out->data;
    for (int64_t o = 0; o < outer; o++)
        for (size_t i = 0; i < f->n->n_input; i++) {
            const cb_tensor *t = input(f, i);
            const size_t block = (size_t)(t->shape[axis] * inner) * es;
            memcpy(dst, (const char *)t->data + (size_t)o * block, block);
            dst += block;
        }
    return CB_OK;
}

/* out: x's data under a new shape (Reshape, Unsqueeze, Squeeze, Identity). */
static cb_status reshaped(const fold *f, const cb_tensor *x, int ndim, const int64_t *shape, cb_tensor *out)
{
    int64_t count = 1;
    for (int d = 0; d < ndim && d < CB_MAX_DIMS; d++) {
        if (shape[d] < 0 || (shape[d] && count > FOLD_MAX_ELEMS / shape[d])) return refuse(f, "a folded constant too large");
        count *= shape[d];
    }
    if (ndim > CB_MAX_DIMS || count != cb_tensor_numel(x)) return refuse(f, "the new shape does not hold the data");
    cb_status s = make(f, out, x->dtype, ndim, shape);
    if (s == CB_OK && count) memcpy(out->data, x->data, (size_t)count * cb_dtype_size(x->dtype));
    return s;
}

static cb_status fold_reshape(const fold *f, const cb_tensor *x, cb_tensor *out)
{
    int64_t shape[CB_MAX_DIMS];
    const int nd = int_list(input(f, 1), shape, CB_MAX_DIMS);
    if (nd < 0) return refuse(f, "the shape must be a constant int64 list");
    const int allow_zero = (int)imp_attr_int(f->n, "allowzero", 0);
    int64_t known = 1, infer = -1;
    for (int d = 0; d < nd; d++) {
        if (shape[d] == 0 && !allow_zero) {
            if (d >= x->ndim) return refuse(f, "a 0 in the shape past the input's rank");
            shape[d] = x->shape[d];
        }
        if (shape[d] == -1) {
            if (infer >= 0) return refuse(f, "more than one -1 in the shape");
            infer = d;
        } else if (shape[d] < 0) {
            return refuse(f, "a negative dimension in the shape");
        } else {
            if (shape[d] > FOLD_MAX_ELEMS) return refuse(f, "a folded constant too large");
            known *= shape[d]; /* at most 8 factors of 2^22: no overflow */
        }
    }
    if (infer >= 0) {
        if (!known || cb_tensor_numel(x) % known) return refuse(f, "the -1 dimension cannot be inferred");
        shape[infer] = cb_tensor_numel(x) / known;
    }
    return reshaped(f, x, nd, shape, out);
}

static cb_status fold_unsqueeze(const fold *f, const cb_tensor *x, cb_tensor *out, int squeeze)
{
    int64_t axes[CB_MAX_DIMS];
    int na = f->im->opset >= 13 ? (input(f, 1) ? int_list(input(f, 1), axes, CB_MAX_DIMS) : 0)
                                : imp_attr_ints(f->n, "axes", axes, CB_MAX_DIMS, 0, 0);
    if (na < 0) return refuse(f, "axes must be a constant int64 list");
    int64_t shape[CB_MAX_DIMS];
    int nd = 0;
    if (squeeze) {
        unsigned drop = 0;
        for (int k = 0; k < na; k++) {
            const int a = norm_axis(axes[k], x->ndim);
            if (a < 0 || a >= x->ndim || x->shape[a] != 1) return refuse(f, "squeezes an axis that is not 1");
            drop |= 1u << a;
        }
        for (int d = 0; d < x->ndim; d++)
            if (!(na ? drop >> d & 1 : x->shape[d] == 1)) shape[nd++] = x->shape[d];
        return reshaped(f, x, nd, shape, out);
    }
    const int rank = x->ndim + na;
    if (rank > CB_MAX_DIMS) return refuse(f, "too many dimensions");
    unsigned add = 0;
    for (int k = 0; k < na; k++) {
        const int a = norm_axis(axes[k], rank);
        if (a < 0 || a >= rank || (add >> a & 1)) return refuse(f, "axes out of range or repeated");
        add |= 1u << a;
    }
    for (int d = 0, src = 0; d < rank; d++) shape[d] = add >> d & 1 ? 1 : x->shape[src++];
    return reshaped(f, x, rank, shape, out);
}

static cb_status fold_cast(const fold *f, const cb_tensor *x, cb_tensor *out)
{
    const int64_t to = imp_attr_int(f->n, "to", 0);
    /* ONNX types: 1 float, 11 double (held as float32); 6 int32, 7 int64 (held as int64). */
    const cb_dtype dt = to == 1 || to == 11 ? CB_F32 : to == 6 || to == 7 ? CB_I64 : (cb_dtype)-1;
    if ((int)dt < 0) return refuse(f, "only casts to float, double, int32 and int64 are folded");
    /* A float outside int64's range (or NaN) has no integer: converting it
     * would be undefined, so the cast is refused. */
    for (int64_t k = 0; dt == CB_I64 && x->dtype == CB_F32 && k < cb_tensor_numel(x); k++) {
        const float v = ((const float *)x->data)[k];
        if (!(v > -9.2e18f && v < 9.2e18f)) return refuse(f, "a float cast to an integer is out of range or NaN");
    }
    cb_status s = make(f, out, dt, x->ndim, x->shape);
    if (s != CB_OK) return s;
    for (int64_t k = 0; k < cb_tensor_numel(x); k++) {
        if (dt == CB_I64) ((int64_t *)out->data)[k] = as_int(x, k); /* float to int truncates */
        else ((float *)out->data)[k] = x->dtype == CB_F32 ? ((const float *)x->data)[k] : (float)as_int(x, k);
    }
    return CB_OK;
}

static cb_status fold_constant_of_shape(const fold *f, const cb_tensor *x, cb_tensor *out)
{
    int64_t shape[CB_MAX_DIMS];
    const int nd = int_list(x, shape, CB_MAX_DIMS);
    if (nd < 0) return refuse(f, "the shape must be a constant int64 list");
    cb_tensor v = {0};
    const Onnx__AttributeProto *a = imp_attr(f->n, "value");
    if (a && a->t) {
        cb_status s = cb_onnx_tensor_to_cb(a->t, f->im->what, &v);
        if (s != CB_OK) return s;
        if (cb_tensor_numel(&v) != 1) {
            cb_tensor_free(&v);
            return refuse(f, "value must hold one element");
        }
    }
    cb_status s = make(f, out, a && a->t ? v.dtype : CB_F32, nd, shape);
    const size_t es = cb_dtype_size(out->dtype);
    for (int64_t k = 0; s == CB_OK && v.data && k < cb_tensor_numel(out); k++)
        memcpy((char *)out->data + (size_t)k * es, v.data, es);
    cb_tensor_free(&v);
    return s;
}

static cb_status fold_gather(const fold *f, const cb_tensor *x, cb_tensor *out)
{
    const cb_tensor *idx = input(f, 1);
    const int axis = norm_axis(imp_attr_int(f->n, "axis", 0), x->ndim);
    if (!idx || idx->dtype != CB_I64 || axis < 0 || axis >= x->ndim || x->ndim - 1 + idx->ndim > CB_MAX_DIMS)
        return refuse(f, "needs int64 indices and an axis in range");
    int64_t shape[CB_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < axis; d++) shape[nd++] = x->shape[d];
    for (int d = 0; d < idx->ndim; d++) shape[nd++] = idx->shape[d];
    for (int d = axis + 1; d < x->ndim; d++) shape[nd++] = x->shape[d];
    cb_status s = make(f, out, x->dtype, nd, shape);
    if (s != CB_OK) return s;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= x->shape[d];
    for (int d = axis + 1; d < x->ndim; d++) inner *= x->shape[d];
    const size_t es = cb_dtype_size(x->dtype), block = (size_t)inner * es;
    const int64_t n_idx = cb_tensor_numel(idx), dim = x->shape[axis];
    char *dst = out->data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < n_idx; k++) {
            int64_t i = ((const int64_t *)idx->data)[k];
            if (i < 0) i += dim;
            if (i < 0 || i >= dim) {
                cb_tensor_free(out);
                return refuse(f, "an index out of range");
            }
            memcpy(dst, (const char *)x->data + (size_t)(o * dim + i) * block, block);
            dst += block;
        }
    return CB_OK;
}

/* Shape: the dims from start to end (opset 15 on; negative ones count
 * from the end, both clamped to the rank). */
static cb_status fold_shape(const fold *f, const cb_tensor *x, cb_tensor *out)
{
    int64_t b, e;
    imp_shape_range(f->n, x->ndim, &b, &e);
    const int64_t n = e > b ? e - b : 0;
    cb_status s = make(f, out, CB_I64, 1, &n);
    if (s == CB_OK && n) memcpy(out->data, x->shape + b, (size_t)n * sizeof(int64_t));
    return s;
}

static const char *const foldable[] = {"ConstantOfShape", "Concat", "Reshape", "Slice", "Transpose", "Cast",
                                       "Unsqueeze", "Squeeze", "Gather", "Shape", "Identity"};

cb_status imp_fold(importer *im, const Onnx__NodeProto *n, int *folded)
{
    *folded = 0;
    const char *t = n->op_type;
    int known = 0;
    for (size_t k = 0; k < sizeof foldable / sizeof *foldable; k++) known |= !strcmp(t, foldable[k]);
    if (!known || n->n_input < 1 || n->n_output != 1) return CB_OK;
    for (size_t i = 0; i < n->n_input; i++) {
        const value *v = n->input[i][0] ? imp_lookup(im, n->input[i]) : NULL;
        if (n->input[i][0] && (!v || v->node >= 0)) return CB_OK; /* a computed input: the op's own mapping */
    }
    const fold f = {im, n};
    const cb_tensor *x = input(&f, 0);
    if (!x) return CB_OK;
    cb_tensor out = {0};
    cb_status s;
    if (!strcmp(t, "ConstantOfShape")) s = fold_constant_of_shape(&f, x, &out);
    else if (!strcmp(t, "Concat")) s = fold_concat(&f, &out);
    else if (!strcmp(t, "Reshape")) s = fold_reshape(&f, x, &out);
    else if (!strcmp(t, "Slice")) s = fold_slice(&f, x, &out);
    else if (!strcmp(t, "Transpose")) s = fold_transpose(&f, x, &out);
    else if (!strcmp(t, "Cast")) s = fold_cast(&f, x, &out);
    else if (!strcmp(t, "Unsqueeze")) s = fold_unsqueeze(&f, x, &out, 0);
    else if (!strcmp(t, "Squeeze")) s = fold_unsqueeze(&f, x, &out, 1);
    else if (!strcmp(t, "Gather")) s = fold_gather(&f, x, &out);
    else if (!strcmp(t, "Shape")) s = fold_shape(&f, x, &out);
    else s = reshaped(&f, x, x->ndim, x->shape, &out); /* Identity */
    if (s != CB_OK) return s;
    value *v = imp_define(im, n->output[0]);
    if (!v) {
        cb_tensor_free(&out);
        return CB_ERR_FORMAT;
    }
    v->constant = out;
    *folded = 1;
    return CB_OK;
}
