/* crossbind run --dump DIR: every intermediate value of a forward pass as
 * a .npy file, and index.json mapping each node to its file, for comparing
 * a model with itself under another binding, level or build node by node.
 *
 * A value is copied out of the executor after each forward chunk, from the
 * buffer the plan gave its node (a value the plan keeps in a blocked layout
 * gets a copy-out step, cb_exec_capture); nothing about the plan changes (the index
 * records its hash, equal to `crossbind plan`'s for the same executor). A
 * value that a fusion computes inside another node's kernel and never
 * stores is listed as not materialised, with the node that holds the fused
 * result, never recomputed to fill the gap. Files are streamed chunk by
 * chunk (memory does not grow with the input) as NAME.part and renamed
 * once complete; index.json comes last, so a directory with an index holds
 * every file it names. For a model imported from ONNX, each entry names
 * the ONNX value its file holds ("onnx_value"), the key to pair it with
 * another runtime's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "dump.h"
#include "../core/json.h"
#include "crossbind/formats.h"

struct cli_dump {
    const cb_model *m;
    int64_t batch;
    int count;
    unsigned char *used; /* per node: the outputs depend on it (labels and losses do not) */
    FILE **files;   /* per node: its open .part file, NULL where not dumped */
    char (*paths)[4200];
    char dir[4096];
    float *scratch; /* a value copied out of the executor (cb_exec_read) */
    size_t scratch_floats;
};

/* node index + the name with anything but [A-Za-z0-9._-] as '_': unique,
 * and safe as a file name whatever the ONNX exporter called the node. */
static void file_name(const cb_node *n, int i, char *out, size_t cap)
{
    int k = snprintf(out, cap, "%04d_", i);
    for (const char *c = n->name; *c && (size_t)k + 5 < cap; c++)
        out[k++] = (char)((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                          *c == '.' || *c == '-' || *c == '_' ? *c : '_');
    snprintf(out + k, cap - (size_t)k, ".npy");
}

cb_status cli_dump_open(const char *dir, const cb_model *m, cb_exec *ex, int64_t batch, cli_dump **out)
{
    *out = NULL;
    if (cli_prepare_out_dir(dir)) return CB_ERR_IO;
    const cb_graph *g = &m->graph;
    cli_dump *d = calloc(1, sizeof *d);
    if (!d || !(d->files = calloc((size_t)g->count, sizeof *d->files)) ||
        !(d->paths = calloc((size_t)g->count, sizeof *d->paths)) || !(d->used = calloc((size_t)g->count, 1))) {
        if (d) free(d->files), free(d->paths);
        free(d);
        return cb_fail(CB_ERR_NOMEM, "out of memory opening the dump");
    }
    d->m = m;
    d->batch = batch;
    d->count = g->count;
    snprintf(d->dir, sizeof d->dir, "%s", dir);
    *out = d;
    for (int k = 0; k < m->n_outputs; k++) d->used[m->outputs[k]] = 1;
    for (int i = g->count - 1; i >= 0; i--) /* inputs precede their consumers */
        for (int k = 0; d->used[i] && k < g->nodes[i].n_in; k++) d->used[g->nodes[i].in[k]] = 1;
    for (int i = 0; i < g->count; i++) {
        const cb_node *n = &g->nodes[i];
        int by;
        if (!d->used[i]) continue;
        cb_status cs = cb_exec_capture(ex, i); /* a copy-out where the plan keeps the value blocked */
        if (cs != CB_OK) return cs;
        if (!cb_exec_materialised(ex, i, &by)) continue;
        char name[300];
        file_name(n, i, name, sizeof name);
        snprintf(d->paths[i], sizeof d->paths[i], "%s/%s.part", dir, name);
        if (!(d->files[i] = fopen(d->paths[i], "wb")))
            return cb_fail(CB_ERR_IO, "cannot create %s", d->paths[i]);
        int64_t shape[CB_MAX_DIMS + 1];
        int nd = 0;
        if (n->batched) shape[nd++] = batch;
        for (int k = 0; k < n->ndim; k++) shape[nd++] = n->dims[k];
        cb_status s = cb_npy_write_header(d->files[i], d->paths[i], CB_F32, nd, shape);
        if (s != CB_OK) return s;
    }
    return CB_OK;
}

cb_status cli_dump_chunk(cli_dump *d, cb_exec *ex, int64_t start, int n)
{
    for (int i = 0; i < d->count; i++) {
        if (!d->files[i]) continue;
        const cb_node *nd = &d->m->graph.nodes[i];
        /* Unbatched values (constants) are written once, with the first chunk. */
        if (!nd->batched && start > 0) continue;
        const size_t floats = (size_t)cb_node_numel(nd) * (nd->batched ? (size_t)n : 1);
        if (floats > d->scratch_floats) {
            float *grown = realloc(d->scratch, floats * sizeof *grown);
            if (!grown) return cb_fail(CB_ERR_NOMEM, "out of memory copying %s for the dump", nd->name);
            d->scratch = grown;
            d->scratch_floats = floats;
        }
        cb_status s = cb_exec_read(ex, i, 0, nd->batched ? n : 1, d->scratch);
        if (s != CB_OK) return s;
        if (fwrite(d->scratch, sizeof(float), floats, d->files[i]) != floats)
            return cb_fail(CB_ERR_IO, "cannot write %s (disk full?)", d->paths[i]);
    }
    return CB_OK;
}

static void put_shape(cb_buf *b, const cb_node *n, int64_t batch)
{
    cb_buf_printf(b, "[");
    if (n->batched) cb_buf_printf(b, "%lld%s", (long long)batch, n->ndim ? ", " : "");
    for (int k = 0; k < n->ndim; k++) cb_buf_printf(b, "%s%lld", k ? ", " : "", (long long)n->dims[k]);
    cb_buf_printf(b, "]");
}

/* Closes every file, renames the complete ones and writes index.json. */
cb_status cli_dump_close(cli_dump *d, const cb_exec *ex, cb_status s)
{
    if (!d) return s;
    const cb_graph *g = &d->m->graph;
    for (int i = 0; i < d->count; i++) {
        if (!d->files[i]) continue;
        if (fclose(d->files[i]) != 0 && s == CB_OK) s = cb_fail(CB_ERR_IO, "cannot write %s", d->paths[i]);
        d->files[i] = NULL;
        char done[4200];
        snprintf(done, sizeof done, "%.*s", (int)(strlen(d->paths[i]) - 5), d->paths[i]);
        if (s == CB_OK && rename(d->paths[i], done) != 0) s = cb_fail(CB_ERR_IO, "cannot rename %s", d->paths[i]);
        if (s != CB_OK) remove(d->paths[i]);
    }
    cb_buf b = {0};
    char hex[65] = "";
    if (s == CB_OK) s = cb_exec_plan_sha256(ex, hex);
    if (s == CB_OK) {
        cb_buf_printf(&b, "{\n  \"format\": \"crossbind-dump/1\",\n  \"model\": ");
        cb_buf_json_string(&b, d->m->name);
        cb_buf_printf(&b, ",\n  \"batch\": %lld,\n  \"plan_sha256\": \"%s\",\n  \"nodes\": [", (long long)d->batch, hex);
        int first = 1;
        for (int i = 0; i < g->count; i++) {
            const cb_node *n = &g->nodes[i];
            if (n->op == CB_OP_PARAM || !d->used[i]) continue;
            int by;
            const int has = cb_exec_materialised(ex, i, &by);
            char name[300];
            file_name(n, i, name, sizeof name);
            cb_buf_printf(&b, "%s\n    {\"index\": %d, \"name\": ", first ? "" : ",", i);
            cb_buf_json_string(&b, n->name);
            cb_buf_printf(&b, ", \"op\": \"%s\", \"shape\": ", cb_op_name(n->op));
            put_shape(&b, n, d->batch);
            /* The ONNX value the file holds, where the model came from one:
             * null for a node of crossbind's own, or one whose ONNX value is
             * that tensor in another layout ([N,H,W,C], onnx_import_nhwc.c). */
            const char *value = i < d->m->n_onnx_values && d->m->onnx_values ? d->m->onnx_values[i] : NULL;
            if (d->m->onnx_values) {
                cb_buf_printf(&b, ", \"onnx_value\": ");
                if (value) cb_buf_json_string(&b, value);
                else cb_buf_printf(&b, "null");
            }
            if (has) {
                cb_buf_printf(&b, ", \"file\": ");
                cb_buf_json_string(&b, name);
            } else {
                cb_buf_printf(&b, ", \"file\": null, \"not_materialised\": ");
                char why[CB_MAX_NAME + 96];
                snprintf(why, sizeof why, "fused: computed inside the kernel that writes node %d (%s)", by,
                         by >= 0 ? g->nodes[by].name : "?");
                cb_buf_json_string(&b, why);
            }
            cb_buf_printf(&b, "}");
            first = 0;
        }
        cb_buf_printf(&b, "\n  ]\n}\n");
        char path[4200];
        snprintf(path, sizeof path, "%s/index.json", d->dir);
        s = cb_buf_ok(&b) ? cb_write_file_atomic(path, b.data, b.len)
                          : cb_fail(CB_ERR_NOMEM, "out of memory writing %s", path);
    }
    cb_buf_free(&b);
    free(d->files);
    free(d->paths);
    free(d->used);
    free(d->scratch);
    free(d);
    return s;
}
