/* ONNX files read and rewritten for localisation (onnx_edit.h). */
#include <stdlib.h>
#include <string.h>
#include "../core/file.h"
#include "../core/json.h"
#include "crossbind/formats.h"
#include "onnx_edit.h"

cb_status delta_onnx_open(const char *path, delta_onnx *g)
{
    memset(g, 0, sizeof *g);
    unsigned char *buf;
    size_t len;
    cb_status s = cb_read_file(path, (size_t)1 << 34, &buf, &len);
    if (s != CB_OK) return s;
    s = cb_onnx_unpack(buf, len, path, &g->mp);
    free(buf);
    if (s != CB_OK) return s;
    const Onnx__GraphProto *gp = g->mp->graph;
    if (!gp) return cb_fail(CB_ERR_FORMAT, "%s has no graph", path);
    if (!(g->nodes = calloc(gp->n_node + 1, sizeof *g->nodes))) {
        delta_onnx_close(g);
        return cb_fail(CB_ERR_NOMEM, "out of memory reading %s", path);
    }
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        if (n->n_output < 1 || !n->output[0][0]) continue;
        delta_onnx_node *d = &g->nodes[g->n++];
        d->name = n->name && n->name[0] ? n->name : n->output[0];
        d->op = n->op_type ? n->op_type : "";
        d->output = n->output[0];
        for (size_t k = 0; k < n->n_input && d->n_inits < 4; k++)
            for (size_t t = 0; t < gp->n_initializer; t++)
                if (gp->initializer[t]->name && !strcmp(gp->initializer[t]->name, n->input[k])) {
                    d->inits[d->n_inits++] = n->input[k];
                    break;
                }
    }
    return CB_OK;
}

void delta_onnx_close(delta_onnx *g)
{
    if (g->mp) onnx__model_proto__free_unpacked(g->mp, NULL);
    free(g->nodes);
    memset(g, 0, sizeof *g);
}

int delta_onnx_producer(const delta_onnx *g, const char *name)
{
    for (int i = 0; i < g->n; i++)
        if (!strcmp(g->nodes[i].output, name)) return i;
    return -1;
}

cb_status delta_onnx_initializer(const delta_onnx *g, const char *name, cb_tensor *out)
{
    const Onnx__GraphProto *gp = g->mp->graph;
    for (size_t t = 0; t < gp->n_initializer; t++)
        if (gp->initializer[t]->name && !strcmp(gp->initializer[t]->name, name)) {
            cb_status s = cb_onnx_tensor_to_cb(gp->initializer[t], name, out);
            if (s == CB_OK && out->dtype != CB_F32) {
                cb_tensor_free(out);
                return cb_fail(CB_ERR_NOT_FOUND, "initializer %s is not a float tensor", name);
            }
            return s;
        }
    return cb_fail(CB_ERR_NOT_FOUND, "no initializer %s", name);
}

cb_status delta_onnx_write_outputs(delta_onnx *g, const char *path, const char *const *names, int n, int keep_first)
{
    Onnx__GraphProto *gp = g->mp->graph;
    if (keep_first && gp->n_output < 1) return cb_fail(CB_ERR_FORMAT, "%s: the model has no output", path);
    size_t count = (size_t)n + (keep_first ? 1 : 0);
    Onnx__ValueInfoProto **outs = calloc(count, sizeof *outs), *infos = calloc((size_t)n, sizeof *infos);
    Onnx__TypeProto *types = calloc((size_t)n, sizeof *types);
    Onnx__TypeProto__Tensor *tensors = calloc((size_t)n, sizeof *tensors);
    cb_status s = outs && infos && types && tensors ? CB_OK : cb_fail(CB_ERR_NOMEM, "out of memory writing %s", path);
    size_t k = 0;
    if (s == CB_OK && keep_first) outs[k++] = gp->output[0];
    for (int i = 0; s == CB_OK && i < n; i++) {
        Onnx__TypeProto__Tensor tt = ONNX__TYPE_PROTO__TENSOR__INIT;
        Onnx__TypeProto ty = ONNX__TYPE_PROTO__INIT;
        Onnx__ValueInfoProto vi = ONNX__VALUE_INFO_PROTO__INIT;
        tensors[i] = tt;
        tensors[i].has_elem_type = 1;
        tensors[i].elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
        types[i] = ty;
        types[i].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        types[i].tensor_type = &tensors[i];
        infos[i] = vi;
        infos[i].name = (char *)names[i];
        infos[i].type = &types[i];
        outs[k++] = &infos[i];
    }
    if (s == CB_OK) {
        /* the model's own output list is swapped out only while packing */
        Onnx__ValueInfoProto **was = gp->output;
        size_t n_was = gp->n_output;
        gp->output = outs, gp->n_output = count;
        size_t len = onnx__model_proto__get_packed_size(g->mp);
        uint8_t *buf = malloc(len ? len : 1);
        if (!buf) s = cb_fail(CB_ERR_NOMEM, "out of memory writing %s", path);
        else {
            onnx__model_proto__pack(g->mp, buf);
            s = cb_write_file_atomic(path, buf, len);
        }
        free(buf);
        gp->output = was, gp->n_output = n_was;
    }
    free(outs), free(infos), free(types), free(tensors);
    return s;
}
