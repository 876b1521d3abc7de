/* crossbind run: a model on inputs from .npy files, outputs to .npy files.
 * How users compare crossbind with another binding tensor by tensor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "crossbind/formats.h"
#include "dump.h"

#define RUN_CHUNK 256 /* samples per forward pass: bounds the executor's memory */

static void help(void)
{
    printf("usage: crossbind run [MODEL] --weights FILE --input X.npy [--input ...] --output Y.npy [--output ...]\n"
           "       crossbind run --onnx FILE --input X.npy ... --output Y.npy ...\n"
           "  Inputs feed the model's inputs in order, outputs are its outputs in order;\n"
           "  every input's first dimension is the batch. Weights: safetensors, PyTorch\n"
           "  state dict or ONNX, recognised by content (parameters files need MODEL, one of:\n"
           "  %s).\n"
           "  --threads N (default: all cores; at most 4 x the cores)  --level reference|fast|fused|fastmath\n"
           "  (default fastmath; --kernels fast|reference: the older spelling of fastmath, reference)\n"
           "  --non-strict  load a parameters file that also holds tensors the model lacks\n"
           "  --dump DIR    also write every node's value as DIR/NNNN_NAME.npy and DIR/index.json\n"
           "                (node index, name, op, shape, file; values a fusion never stores are\n"
           "                listed as not materialised: compare with --level reference)\n",
           cli_models(NULL, ", "));
}

/* Checks input k's array against the shape the model file declares (for an
 * input the file takes as [N,H,W,C], that one), then brings it into the
 * graph's layout. */
static cb_status check_input(const cb_model *m, int k, cb_tensor *t, const char *path, int64_t *batch)
{
    const cb_node *n = &m->graph.nodes[m->inputs[k]];
    const int nhwc = m->input_nhwc[k] && n->ndim == 3;
    int64_t dims[CB_MAX_DIMS];
    for (int d = 0; d < n->ndim; d++) dims[d] = n->dims[d];
    if (nhwc) dims[0] = n->dims[1], dims[1] = n->dims[2], dims[2] = n->dims[0];
    int ok = t->ndim == n->ndim + 1 && t->ndim >= 1;
    for (int d = 0; ok && d < n->ndim; d++) ok = t->shape[d + 1] == dims[d];
    if (!ok) {
        char want[128] = "[batch";
        for (int d = 0; d < n->ndim; d++)
            snprintf(want + strlen(want), sizeof want - strlen(want), ",%lld", (long long)dims[d]);
        return cb_fail(CB_ERR_SHAPE, "%s: input '%s' must have shape %s]", path, n->name, want);
    }
    if (k == 0) *batch = t->shape[0];
    else if (t->shape[0] != *batch)
        return cb_fail(CB_ERR_SHAPE, "%s: batch %lld differs from the first input's %lld", path,
                       (long long)t->shape[0], (long long)*batch);
    return nhwc ? cb_tensor_nhwc_to_nchw(t) : CB_OK;
}

int cmd_run(int argc, char **argv)
{
    const char *model = NULL, *weights = NULL, *dump_dir = NULL, *v;
    const char *inputs[CB_MAX_IO], *outputs[CB_MAX_IO];
    int n_in = 0, n_out = 0, strict = 1;
    long threads = cli_default_threads();
    cb_kernels kernels = CB_KERNELS_FAST;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { help(); return 0; }
        else if (a[0] != '-') {
            if (model) return cli_error("unexpected argument '%s'", a);
            model = a;
        }
        else if (!strcmp(a, "--non-strict")) strict = 0;
        else if (!(v = cli_option_value("run",
                                        (const char *const[]){"--weights", "--onnx", "--input", "--output",
                                                              "--threads", "--kernels", "--level", "--dump", NULL},
                                        argc, argv, &i)))
            return 1;
        else if (!strcmp(a, "--weights") || !strcmp(a, "--onnx")) {
            if (weights) return cli_error("give one --weights or --onnx");
            weights = v;
        }
        else if (!strcmp(a, "--input")) {
            if (n_in == CB_MAX_IO) return cli_error("at most %d inputs", CB_MAX_IO);
            inputs[n_in++] = v;
        }
        else if (!strcmp(a, "--output")) {
            if (n_out == CB_MAX_IO) return cli_error("at most %d outputs", CB_MAX_IO);
            outputs[n_out++] = v;
        }
        else if (!strcmp(a, "--threads")) { if (cli_threads(a, v, &threads)) return 1; }
        else if (!strcmp(a, "--kernels")) { if (cli_kernels(v, &kernels)) return 1; }
        else if (!strcmp(a, "--level")) { if (cli_level(v, &kernels)) return 1; }
        else if (!strcmp(a, "--dump")) dump_dir = v;
        else return cli_error("unknown option '%s' (see crossbind run --help)", a);
    }
    if (!weights) return cli_error("run: --weights FILE or --onnx FILE is required");
    if (!n_in || !n_out) return cli_error("run: at least one --input and one --output are required");

    cb_model *m = NULL;
    cb_exec *ex = NULL;
    cb_tensor in[CB_MAX_IO], out[CB_MAX_IO];
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    cb_load_info info;
    int64_t batch = 0;
    int rc = 1;
    cb_status s = cb_set_threads((int)threads);
    /* The inputs first: their shapes size what an ONNX file leaves symbolic
     * (an export with dynamic image sizes). */
    cb_input_shapes shapes = {.n = n_in};
    for (int k = 0; s == CB_OK && k < n_in; k++) {
        s = cb_npy_read(inputs[k], &in[k]);
        shapes.ndim[k] = in[k].ndim;
        for (int d = 0; d < in[k].ndim; d++) shapes.dims[k][d] = in[k].shape[d];
    }
    if (s == CB_OK) s = cb_model_load_shaped(model, weights, 0, strict, &shapes, &m, &info);
    if (s == CB_OK) cli_notice_load(weights, &info);
    if (s == CB_OK && n_in != m->n_inputs)
        s = cb_fail(CB_ERR_INVALID_ARG, "the model has %d inputs, %d --input given", m->n_inputs, n_in);
    if (s == CB_OK && n_out > m->n_outputs)
        s = cb_fail(CB_ERR_INVALID_ARG, "the model has %d outputs, %d --output given", m->n_outputs, n_out);
    for (int k = 0; s == CB_OK && k < n_in; k++) {
        s = cb_tensor_to_f32(&in[k], inputs[k]);
        if (s == CB_OK) s = check_input(m, k, &in[k], inputs[k], &batch);
    }
    int chunk = (int)(batch < RUN_CHUNK ? (batch ? batch : 1) : RUN_CHUNK);
    if (s == CB_OK && m->fixed_batch && m->fixed_batch != batch)
        s = cb_fail(CB_ERR_SHAPE, "%s fixes the batch to %lld, the inputs have %lld", weights,
                    (long long)m->fixed_batch, (long long)batch);
    if (s == CB_OK) s = cb_exec_create(&m->graph, chunk, 0, kernels, &ex);
    if (s == CB_OK) cb_exec_freeze_params(ex); /* the loaded weights are all this run uses */
    for (int k = 0; s == CB_OK && k < n_out; k++) {
        const cb_node *n = &m->graph.nodes[m->outputs[k]];
        int64_t shape[CB_MAX_DIMS] = {batch};
        for (int d = 0; d < n->ndim; d++) shape[d + 1] = n->dims[d];
        out[k].dtype = CB_F32;
        out[k].ndim = n->ndim + 1;
        memcpy(out[k].shape, shape, sizeof shape);
        if (!(out[k].data = malloc((size_t)(batch * cb_node_numel(n)) * sizeof(float) + 1)))
            s = cb_fail(CB_ERR_NOMEM, "out of memory for outputs");
    }
    cli_dump *dump = NULL;
    if (s == CB_OK && dump_dir) s = cli_dump_open(dump_dir, m, ex, batch, &dump);
    for (int64_t start = 0; s == CB_OK && start < batch; start += chunk) {
        int bs = (int)(batch - start < chunk ? batch - start : chunk);
        for (int k = 0; k < n_in; k++) {
            size_t per = (size_t)cb_node_numel(&m->graph.nodes[m->inputs[k]]);
            if (s == CB_OK) s = cb_exec_write(ex, m->inputs[k], 0, bs, (float *)in[k].data + (size_t)start * per);
        }
        if (s == CB_OK) s = cb_exec_forward(ex, bs);
        if (s == CB_OK && dump) s = cli_dump_chunk(dump, ex, start, bs);
        for (int k = 0; s == CB_OK && k < n_out; k++) {
            size_t per = (size_t)cb_node_numel(&m->graph.nodes[m->outputs[k]]);
            s = cb_exec_read(ex, m->outputs[k], 0, bs, (float *)out[k].data + (size_t)start * per);
        }
    }
    if (dump) s = cli_dump_close(dump, ex, s);
    for (int k = 0; s == CB_OK && k < n_out; k++) s = cb_npy_write(outputs[k], &out[k]);
    if (s != CB_OK) rc = cli_status(s);
    else rc = 0;
    for (int k = 0; k < CB_MAX_IO; k++) {
        cb_tensor_free(&in[k]);
        cb_tensor_free(&out[k]);
    }
    cb_exec_free(ex);
    cb_model_free(m);
    return rc;
}
