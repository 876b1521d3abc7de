/* TensorProto decoding and model unpacking (see onnx_util.h). */
#include <stdlib.h>
#include <string.h>
#include "onnx_util.h"

cb_status cb_onnx_unpack(const unsigned char *buf, size_t len, const char *what, Onnx__ModelProto **out)
{
    *out = NULL;
    cb_status s = cb_pb_precheck(&onnx__model_proto__descriptor, buf, len, what);
    if (s != CB_OK) return s;
    *out = onnx__model_proto__unpack(NULL, len, buf);
    if (!*out) return cb_fail(CB_ERR_FORMAT, "%s is not a valid ONNX model (protobuf decoding failed: truncated "
                              "or corrupt file?)", what);
    if (!(*out)->graph) {
        onnx__model_proto__free_unpacked(*out, NULL);
        *out = NULL;
        return cb_fail(CB_ERR_FORMAT, "%s: ONNX model without a graph", what);
    }
    return CB_OK;
}

static const char *type_name(int32_t t)
{
    static const char *names[] = {"undefined", "float", "uint8", "int8", "uint16", "int16", "int32", "int64",
                                  "string", "bool", "float16", "double", "uint32", "uint64", "complex64",
                                  "complex128", "bfloat16"};
    return t >= 0 && t < (int32_t)(sizeof names / sizeof names[0]) ? names[t] : "unknown";
}

cb_status cb_onnx_tensor_to_cb(const Onnx__TensorProto *t, const char *what, cb_tensor *out)
{
    memset(out, 0, sizeof *out);
    const char *name = t->name ? t->name : "";
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return cb_fail(CB_ERR_UNSUPPORTED, "%s: tensor '%s' keeps its data in an external file (not read)", what, name);
    if (t->n_dims > CB_MAX_DIMS) return cb_fail(CB_ERR_UNSUPPORTED, "%s: tensor '%s' has %zu dims", what, name, t->n_dims);
    uint64_t numel = 1;
    for (size_t d = 0; d < t->n_dims; d++) {
        if (t->dims[d] < 0 || (t->dims[d] && numel > ((uint64_t)1 << 40) / (uint64_t)t->dims[d]))
            return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s' has an invalid shape", what, name);
        numel *= (uint64_t)t->dims[d];
        out->shape[d] = t->dims[d];
    }
    out->ndim = (int)t->n_dims;
    int32_t dt = t->data_type;
    /* Each element type: its size, the typed field that holds it when there
     * is no raw_data, and what crossbind reads it into. */
    size_t src_size, n_typed;
    const void *typed;
    switch (dt) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
        out->dtype = CB_F32, src_size = 4, typed = t->float_data, n_typed = t->n_float_data;
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
        out->dtype = CB_F32, src_size = 8, typed = t->double_data, n_typed = t->n_double_data;
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
        out->dtype = CB_I64, src_size = 8, typed = t->int64_data, n_typed = t->n_int64_data;
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
        out->dtype = CB_I64, src_size = 4, typed = t->int32_data, n_typed = t->n_int32_data;
        break;
    default:
        return cb_fail(CB_ERR_UNSUPPORTED, "%s: tensor '%s' has element type %s (float, double, int32 and "
                       "int64 are read)", what, name, type_name(dt));
    }
    const void *src = t->has_raw_data ? (const void *)t->raw_data.data : typed;
    uint64_t have = t->has_raw_data ? t->raw_data.len / src_size : n_typed;
    if (t->has_raw_data && t->raw_data.len % src_size) have = (uint64_t)-1; /* a partial element */
    if (have != numel)
        return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s' declares %llu elements but holds %lld", what, name,
                       (unsigned long long)numel, have == (uint64_t)-1 ? -1LL : (long long)have);
    size_t osz = cb_dtype_size(out->dtype);
    if (!(out->data = malloc(numel ? (size_t)numel * osz : 1)))
        return cb_fail(CB_ERR_NOMEM, "out of memory reading tensor '%s'", name);
    const unsigned char *s = src;
    for (uint64_t i = 0; i < numel; i++) {
        const unsigned char *e = s + i * src_size;
        if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) memcpy((float *)out->data + i, e, 4);
        else if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE) {
            double v;
            memcpy(&v, e, 8);
            ((float *)out->data)[i] = (float)v;
        } else if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) memcpy((int64_t *)out->data + i, e, 8);
        else {
            int32_t v;
            memcpy(&v, e, 4);
            ((int64_t *)out->data)[i] = v;
        }
    }
    return CB_OK;
}
