/* Models from files, in either load mode, recognised by content:
 * parameters mode (safetensors, PyTorch state dict) fills a built-in model;
 * serialization mode (ONNX) takes the graph from the file. Here, with the
 * formats, because both modes build on the model registry (src/models/),
 * which itself reads no file format. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "crossbind/crossbind.h"
#include "crossbind/formats.h"
#include "crossbind/onnx.h"

static int same_sample_shape(const cb_model *a, const cb_model *b)
{
    const cb_node *x = &a->graph.nodes[a->input], *y = &b->graph.nodes[b->input];
    if (x->ndim != y->ndim) return 0;
    for (int d = 0; d < x->ndim; d++)
        if (x->dims[d] != y->dims[d]) return 0;
    return 1;
}

static cb_status refuse_kind(const char *path, cb_file_kind kind)
{
    if (kind == CB_FILE_TORCH_LEGACY)
        return cb_fail(CB_ERR_UNSUPPORTED, "%s uses PyTorch's legacy (pre-1.6) serialization; re-save it with "
                       "torch.save(state_dict, f) from PyTorch 1.6 or later", path);
    return cb_fail(CB_ERR_FORMAT, "%s: unrecognised weights format (crossbind reads safetensors, PyTorch "
                   "state dicts (.pt/.pth) and ONNX, recognised by content)", path);
}

/* A failure while reading `path` names it: the readers below may report
 * a tensor or a record without the file it is in. */
static cb_status in_file(cb_status s, const char *path)
{
    if (s != CB_OK && !strstr(cb_last_error(), path)) s = cb_fail(s, "%s: %s", path, cb_last_error());
    return s;
}

static cb_status weights_read(const char *path, cb_tensor_list *out, int *kind);

cb_status cb_weights_read(const char *path, cb_tensor_list *out, int *kind)
{
    return in_file(weights_read(path, out, kind), path);
}

static cb_status weights_read(const char *path, cb_tensor_list *out, int *kind)
{
    memset(out, 0, sizeof *out);
    cb_file_kind k;
    cb_status s = cb_file_kind_read(path, &k);
    *kind = k;
    if (s != CB_OK) return s;
    switch (k) {
    case CB_FILE_SAFETENSORS: return cb_safetensors_read(path, out);
    case CB_FILE_TORCH_ZIP: return cb_torch_read(path, out);
    case CB_FILE_ONNX: { /* the initializers the imported graph holds */
        cb_model *m;
        if ((s = cb_onnx_load(path, 0, &m)) != CB_OK) return s;
        s = cb_graph_params_to_list(&m->graph, out);
        cb_model_free(m);
        if (s != CB_OK) cb_tensor_list_free(out);
        return s;
    }
    default: return refuse_kind(path, k);
    }
}

cb_status cb_model_load_weights(cb_model *m, const char *path, cb_load_info *info)
{
    return cb_model_load_weights_ex(m, path, 1, info);
}

cb_status cb_model_load_weights_ex(cb_model *m, const char *path, int strict, cb_load_info *info)
{
    int kind;
    cb_tensor_list list;
    memset(info, 0, sizeof *info);
    cb_status s = cb_weights_read(path, &list, &kind);
    info->kind = kind;
    if (s != CB_OK) return s;
    s = in_file(cb_graph_params_load_ex(&m->graph, &list, strict, &info->match, &info->extra), path);
    cb_tensor_list_free(&list);
    return s;
}

cb_status cb_model_load(const char *name, const char *path, int with_loss, cb_model **out, cb_load_info *info)
{
    return cb_model_load_ex(name, path, with_loss, 1, out, info);
}

cb_status cb_model_load_ex(const char *name, const char *path, int with_loss, int strict, cb_model **out,
                           cb_load_info *info)
{
    return cb_model_load_shaped(name, path, with_loss, strict, NULL, out, info);
}

cb_status cb_model_load_shaped(const char *name, const char *path, int with_loss, int strict,
                               const cb_input_shapes *shapes, cb_model **out, cb_load_info *info)
{
    *out = NULL;
    memset(info, 0, sizeof *info);
    cb_file_kind kind;
    cb_status s = in_file(cb_file_kind_read(path, &kind), path);
    if (s != CB_OK) return s;
    info->kind = kind;
    if (kind == CB_FILE_ONNX) {
        cb_model *m;
        if ((s = in_file(cb_onnx_load_shaped(path, with_loss, shapes, &m), path)) != CB_OK) return s;
        info->serialized = 1;
        if (name) { /* the named model must at least take the same samples */
            cb_model *ref;
            if ((s = cb_model_create(name, &ref)) != CB_OK) {
                cb_model_free(m);
                return s;
            }
            int same = same_sample_shape(ref, m);
            cb_model_free(ref);
            if (!same) {
                cb_model_free(m);
                return cb_fail(CB_ERR_SHAPE, "%s: the ONNX model's input shape differs from %s's", path, name);
            }
            snprintf(m->name, sizeof m->name, "%s", name);
        }
        *out = m;
        return CB_OK;
    }
    if (kind != CB_FILE_SAFETENSORS && kind != CB_FILE_TORCH_ZIP) return refuse_kind(path, kind);
    if (!name)
        return cb_fail(CB_ERR_INVALID_ARG, "%s holds parameters only (%s): name the model that they belong to",
                       path, cb_file_kind_name(kind));
    cb_model *m;
    if ((s = cb_model_create(name, &m)) != CB_OK) return s;
    s = cb_model_load_weights_ex(m, path, strict, info);
    if (s != CB_OK) {
        cb_model_free(m);
        return s;
    }
    *out = m;
    return CB_OK;
}
