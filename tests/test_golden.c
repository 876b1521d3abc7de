/* crossbind against PyTorch: the golden file written by the PyTorch runner
 * (runners/pytorch/crossbind_torch.py golden) holds fixed weights and inputs,
 * the logits, the loss, every parameter gradient and the losses of 5
 * optimizer steps per optimizer setting. Path: $CB_GOLDEN. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "../src/ops/ops.h"

typedef struct golden_opt { const char *name; cb_optim_config cfg; } golden_opt;

static cb_tensor_list golden;
static int golden_loaded;

static int load_golden(void)
{
    if (golden_loaded) return golden_loaded > 0;
    const char *path = getenv("CB_GOLDEN");
    if (!path) path = "build/golden.safetensors";
    if (cb_safetensors_read(path, &golden) != CB_OK) {
        fprintf(stderr, "  cannot read the golden file (%s); generate it with the PyTorch runner\n", cb_last_error());
        golden_loaded = -1;
        return 0;
    }
    golden_loaded = 1;
    return 1;
}

static const cb_tensor *get(const char *model, const char *what)
{
    char name[2 * CB_MAX_NAME];
    snprintf(name, sizeof name, "%s.%s", model, what);
    const cb_tensor *t = cb_tensor_list_find(&golden, name);
    if (!t) {
        fprintf(stderr, "  golden file lacks %s\n", name);
        test_failures++;
    }
    return t;
}

/* A golden tensor by its full name (a failure when absent). */
static const cb_tensor *need(const char *name)
{
    const cb_tensor *t = cb_tensor_list_find(&golden, name);
    if (!t) {
        fprintf(stderr, "  golden file lacks %s\n", name);
        test_failures++;
    }
    return t;
}

/* The model's parameters from the golden file (prefix "<model>.param."). */
static void load_params(cb_model *m)
{
    cb_tensor_list list = {0};
    char prefix[96];
    snprintf(prefix, sizeof prefix, "%s.param.", m->name);
    for (int i = 0; i < golden.count; i++) {
        const cb_tensor *t = &golden.items[i];
        if (strncmp(t->name, prefix, strlen(prefix)) == 0)
            CHECK_OK(cb_tensor_list_add(&list, t->name + strlen(prefix), t->dtype, t->ndim, t->shape, t->data));
    }
    CHECK_OK(cb_graph_params_from_list(&m->graph, &list));
    cb_tensor_list_free(&list);
}

static void feed(cb_exec *ex, cb_model *m, const cb_tensor *x, const cb_tensor *y)
{
    memcpy(cb_exec_value(ex, m->input), x->data, (size_t)cb_tensor_numel(x) * sizeof(float));
    const int64_t *lab = y->data;
    for (int64_t i = 0; i < y->shape[0]; i++) cb_exec_value(ex, m->labels)[i] = (float)lab[i];
}

/* The relative L2 distance ||a - r|| / ||r|| at most `tol`. */
static void check_l2(const char *what, const float *a, const float *r, int64_t n, double tol)
{
    double d2 = 0, r2 = 0;
    for (int64_t k = 0; k < n; k++) {
        d2 += ((double)a[k] - r[k]) * ((double)a[k] - r[k]);
        r2 += (double)r[k] * r[k];
    }
    const double rel = sqrt(d2) / (r2 > 0 ? sqrt(r2) : 1);
    if (getenv("CB_TEST_VERBOSE")) fprintf(stderr, "  %s: relative L2 distance %.3g\n", what, rel);
    if (!(rel <= tol)) {
        fprintf(stderr, "  %s: relative L2 distance %.3g over %g\n", what, rel, tol);
        test_failures++;
    }
}

/* Every trained parameter's gradient against "<model>.grad.<param>":
 * element by element (l2 = 0) or as whole tensors (relative L2 distance at
 * most l2). */
static void check_param_grads_as(cb_model *m, const char *name, double atol, double rtol, double l2)
{
    for (int i = 0; i < m->graph.count; i++) {
        const cb_node *n = &m->graph.nodes[i];
        if (n->op != CB_OP_PARAM || n->buffer) continue;
        char gname[CB_MAX_NAME + 8], what[2 * CB_MAX_NAME + 64];
        snprintf(gname, sizeof gname, "grad.%s", n->name);
        const cb_tensor *g = get(name, gname);
        if (!g) continue;
        snprintf(what, sizeof what, "%s gradient of %s", name, n->name);
        if (l2 > 0) check_l2(what, cb_graph_param_grad(&m->graph, i), g->data, cb_tensor_numel(g), l2);
        else check_close(what, cb_graph_param_grad(&m->graph, i), g->data, cb_tensor_numel(g), atol, rtol);
    }
}

static void check_param_grads(cb_model *m, const char *name, double atol, double rtol)
{
    check_param_grads_as(m, name, atol, rtol, 0);
}

/* `steps` optimizer steps as the PyTorch side takes them: got[s] is the
 * loss before step s, got[steps] the loss after the last one. */
static void run_steps(cb_exec *ex, cb_optim *opt, int batch, int steps, float *got)
{
    for (int s = 0; s < steps; s++) {
        CHECK_OK(cb_exec_forward(ex, batch));
        got[s] = cb_exec_loss(ex);
        CHECK_OK(cb_exec_backward(ex, batch));
        cb_optim_step(opt);
    }
    CHECK_OK(cb_exec_forward(ex, batch));
    got[steps] = cb_exec_loss(ex);
}

static void check_model(const char *name, cb_kernels kernels)
{
    if (!load_golden()) { test_failures++; return; }
    cb_model *m;
    CHECK_OK(cb_model_create(name, &m));
    if (!m) return;
    const cb_tensor *x = get(name, "input"), *y = get(name, "labels"), *logits = get(name, "logits"),
                    *loss = get(name, "loss");
    if (!x || !y || !logits || !loss) { cb_model_free(m); return; }
    int batch = (int)x->shape[0];
    load_params(m);
    cb_exec *ex;
    CHECK_OK(cb_exec_create(&m->graph, batch, 1, kernels, &ex));
    feed(ex, m, x, y);
    CHECK_OK(cb_exec_forward(ex, batch));
    char what[2 * CB_MAX_NAME + 64];
    snprintf(what, sizeof what, "%s logits", name);
    check_close(what, cb_exec_value(ex, m->graph.output), logits->data, cb_tensor_numel(logits),
                TOL_TORCH_ATOL, TOL_TORCH_RTOL);
    float l = cb_exec_loss(ex);
    snprintf(what, sizeof what, "%s loss", name);
    check_close(what, &l, loss->data, 1, TOL_TORCH_ATOL, TOL_TORCH_RTOL);
    CHECK_OK(cb_exec_backward(ex, batch));
    check_param_grads(m, name, TOL_GRAD_ATOL, TOL_GRAD_RTOL);

    golden_opt opts[4] = {
        {"sgd", cb_optim_defaults(CB_OPTIM_SGD, 0.05f)},
        {"sgdm", cb_optim_defaults(CB_OPTIM_SGD, 0.05f)},
        {"adam", cb_optim_defaults(CB_OPTIM_ADAM, 1e-3f)},
        {"adamw", cb_optim_defaults(CB_OPTIM_ADAM, 1e-3f)},
    };
    opts[1].cfg.momentum = 0.9f;
    opts[1].cfg.weight_decay = 1e-3f;
    opts[3].cfg.beta1 = 0.8f;
    opts[3].cfg.beta2 = 0.99f;
    opts[3].cfg.eps = 1e-6f;
    opts[3].cfg.weight_decay = 1e-2f;
    for (int o = 0; o < 4; o++) {
        char key[64];
        snprintf(key, sizeof key, "%s_losses", opts[o].name);
        const cb_tensor *want = get(name, key);
        if (!want) continue;
        int steps = (int)want->shape[0] - 1;
        float *got = calloc((size_t)steps + 1, sizeof *got);
        load_params(m);
        cb_optim *opt;
        CHECK_OK(cb_optim_create(&opts[o].cfg, &m->graph, &opt));
        run_steps(ex, opt, batch, steps, got);
        snprintf(what, sizeof what, "%s losses over %d %s steps", name, steps, opts[o].name);
        check_close(what, got, want->data, steps + 1, TOL_STEPS_ATOL, TOL_STEPS_RTOL);
        /* parameter displacement after the steps */
        for (int i = 0; i < m->graph.count; i++) {
            const cb_node *n = &m->graph.nodes[i];
            if (n->op != CB_OP_PARAM) continue;
            char pname[CB_MAX_NAME + 16], dname[CB_MAX_NAME + 80];
            snprintf(pname, sizeof pname, "param.%s", n->name);
            snprintf(dname, sizeof dname, "%s_delta.%s", opts[o].name, n->name);
            const cb_tensor *p0 = get(name, pname), *d = get(name, dname);
            if (!p0 || !d) continue;
            int64_t k = cb_tensor_numel(d);
            float *delta = malloc((size_t)k * sizeof *delta);
            const float *now = cb_graph_param_data(&m->graph, i), *start = p0->data;
            for (int64_t j = 0; j < k; j++) delta[j] = now[j] - start[j];
            snprintf(what, sizeof what, "%s %s displacement of %s", name, opts[o].name, n->name);
            int adam = opts[o].cfg.kind == CB_OPTIM_ADAM;
            check_close(what, delta, d->data, k, adam ? TOL_DELTA_ADAM_ATOL : TOL_DELTA_ATOL, TOL_DELTA_RTOL);
            free(delta);
        }
        cb_optim_free(opt);
        free(got);
    }
    cb_exec_free(ex);
    cb_model_free(m);
}

TEST(golden_lenet1_fast) { check_model("lenet1", CB_KERNELS_FAST); }
TEST(golden_lenet1_reference) { check_model("lenet1", CB_KERNELS_REFERENCE); }
TEST(golden_lenet5_fast) { check_model("lenet5", CB_KERNELS_FAST); }
TEST(golden_lenet5_reference) { check_model("lenet5", CB_KERNELS_REFERENCE); }
/* The levels between (exec.h): exact math, without and with the exact fusions. */
TEST(golden_lenet1_level_fast) { check_model("lenet1", CB_KERNELS_EXACT); }
TEST(golden_lenet1_level_fused) { check_model("lenet1", CB_KERNELS_FUSED); }
TEST(golden_lenet5_level_fast) { check_model("lenet5", CB_KERNELS_EXACT); }
TEST(golden_lenet5_level_fused) { check_model("lenet5", CB_KERNELS_FUSED); }

/* nn.BatchNorm2d(3), PyTorch's defaults: training-mode output and gradients,
 * running statistics after 3 training passes, evaluation-mode output. The
 * input goes through an identity 1x1 convolution so that the gradient with
 * respect to the normalisation's input is the convolution's output gradient
 * (inputs themselves carry none); a loss after it only makes the executor
 * plan gradients: the backward pass starts at the normalisation, seeded
 * with PyTorch's dy. */
static void check_batchnorm(cb_kernels kernels)
{
    if (!load_golden()) { test_failures++; return; }
    const cb_tensor *x = need("bn.input"), *dy = need("bn.dy"), *w = need("bn.weight"), *b = need("bn.bias"),
                    *y_train = need("bn.train_output"), *dx = need("bn.grad.input"), *dw = need("bn.grad.weight"),
                    *db = need("bn.grad.bias"), *rm = need("bn.running_mean"), *rv = need("bn.running_var"),
                    *y_eval = need("bn.eval_output");
    if (!x || !dy || !w || !b || !y_train || !dx || !dw || !db || !rm || !rv || !y_eval) return;
    cb_graph g;
    cb_graph_init(&g);
    int64_t dims[3] = {3, 5, 5}, one[1] = {1};
    int in = cb_graph_input(&g, "x", 3, dims);
    int conv = cb_graph_conv2d(&g, "id", in, 3, 1, 1, 0, 0);
    int bn = cb_graph_batchnorm2d(&g, "bn", conv, 1e-5f, 0.1f);
    int flat = cb_graph_unary(&g, CB_OP_FLATTEN, bn);
    int labels = cb_graph_input(&g, "labels", 1, one);
    CHECK(cb_graph_loss(&g, CB_OP_SOFTMAX_XENT, flat, labels) >= 0);
    CHECK_OK(cb_graph_finalize(&g));
    float *idw = cb_graph_param_data(&g, cb_graph_find(&g, "id.weight"));
    for (int o = 0; o < 3; o++) idw[o * 3 + o] = 1.0f;
    memcpy(cb_graph_param_data(&g, cb_graph_find(&g, "bn.weight")), w->data, 3 * sizeof(float));
    memcpy(cb_graph_param_data(&g, cb_graph_find(&g, "bn.bias")), b->data, 3 * sizeof(float));
    cb_exec *train, *eval;
    CHECK_OK(cb_exec_create(&g, 4, 1, kernels, &train));
    CHECK_OK(cb_exec_create(&g, 4, 0, kernels, &eval));
    memcpy(cb_exec_value(train, in), x->data, 300 * sizeof(float));
    memset(cb_exec_value(train, labels), 0, 4 * sizeof(float));
    CHECK_OK(cb_exec_forward(train, 4));
    check_close("bn training output", cb_exec_value(train, bn), y_train->data, 300,
                TOL_TORCH_ATOL, TOL_TORCH_RTOL);
    CHECK_OK(cb_exec_backward_from(train, bn, dy->data, 4));
    check_close("bn d input", cb_exec_grad(train, conv), dx->data, 300, TOL_GRAD_ATOL,
                TOL_GRAD_RTOL);
    check_close("bn d weight", cb_graph_param_grad(&g, cb_graph_find(&g, "bn.weight")), dw->data,
                3, TOL_GRAD_ATOL, TOL_GRAD_RTOL);
    check_close("bn d bias", cb_graph_param_grad(&g, cb_graph_find(&g, "bn.bias")), db->data, 3,
                TOL_GRAD_ATOL, TOL_GRAD_RTOL);
    for (int k = 1; k < 3; k++) CHECK_OK(cb_exec_forward(train, 4)); /* 3 updates of the running statistics */
    check_close("bn running mean", cb_graph_param_data(&g, cb_graph_find(&g, "bn.running_mean")),
                rm->data, 3, TOL_TORCH_ATOL, TOL_TORCH_RTOL);
    check_close("bn running var", cb_graph_param_data(&g, cb_graph_find(&g, "bn.running_var")),
                rv->data, 3, TOL_TORCH_ATOL, TOL_TORCH_RTOL);
    memcpy(cb_exec_value(eval, in), x->data, 300 * sizeof(float));
    memset(cb_exec_value(eval, labels), 0, 4 * sizeof(float));
    CHECK_OK(cb_exec_forward(eval, 4));
    check_close("bn evaluation output", cb_exec_value(eval, bn), y_eval->data, 300, TOL_TORCH_ATOL,
                TOL_TORCH_RTOL);
    cb_exec_free(train);
    cb_exec_free(eval);
    cb_graph_free(&g);
}

TEST(golden_batchnorm_fast) { check_batchnorm(CB_KERNELS_FAST); }
TEST(golden_batchnorm_reference) { check_batchnorm(CB_KERNELS_REFERENCE); }
TEST(golden_batchnorm_level_fast) { check_batchnorm(CB_KERNELS_EXACT); }
TEST(golden_batchnorm_level_fused) { check_batchnorm(CB_KERNELS_FUSED); }

/* VGG-16 with dropout 0, PyTorch's initial weights: training-mode logits,
 * loss and every gradient, 3 SGD steps, the running statistics after them
 * (5 training-mode passes in all, as on the PyTorch side) and
 * evaluation-mode logits. Fast kernels only: the reference kernels would
 * take minutes on this model (they are checked on the LeNets). */

/* VGG-16 through one convolution backend. The BLAS kernels are held to the
 * element tolerances. oneDNN's sums run in another order; 13 batch
 * normalisations over 4 samples amplify that until a value within 1e-7 of
 * a ReLU's kink lands on the other side, and the element that flips moves
 * its channel's gradient (BatchNorm subtracts the channel mean). So with
 * oneDNN the forward values keep the strict tolerance and the gradients
 * are compared as whole tensors (one element of 4 x 256 x 8 x 8 at 6e-8
 * flipped, and BatchNorm biases' gradients moved 3%), the state after the
 * steps at a looser tolerance. */
static void golden_vgg16(int onednn, cb_kernels level)
{
    if (!load_golden()) { test_failures++; return; }
    cb_model *m;
    CHECK_OK(cb_model_create("vgg16", &m));
    if (!m) return;
    const cb_tensor *x = get("vgg16", "input"), *y = get("vgg16", "labels"), *logits = get("vgg16", "logits"),
                    *loss = get("vgg16", "loss"), *losses = get("vgg16", "sgd_losses"),
                    *eval_logits = get("vgg16", "eval_logits");
    if (!x || !y || !logits || !loss || !losses || !eval_logits) { cb_model_free(m); return; }
    for (int i = 0; i < m->graph.count; i++)
        if (m->graph.nodes[i].op == CB_OP_DROPOUT) m->graph.nodes[i].p = 0.0f;
    const int batch = (int)x->shape[0];
    const double steps_atol = onednn ? TOL_VGG_ONEDNN_STEPS : TOL_VGG_STEPS_ATOL,
                 steps_rtol = onednn ? TOL_VGG_ONEDNN_STEPS : TOL_VGG_STEPS_RTOL;
    load_params(m);
    cb_exec *ex, *ev;
    if (!onednn) setenv("CROSSBIND_CONV", "blas", 1); /* read when an executor is made */
    CHECK_OK(cb_exec_create(&m->graph, batch, 1, level, &ex));
    CHECK_OK(cb_exec_create(&m->graph, batch, 0, level, &ev));
    unsetenv("CROSSBIND_CONV");
    feed(ex, m, x, y);
    CHECK_OK(cb_exec_forward(ex, batch));
    check_close("vgg16 logits", cb_exec_value(ex, m->graph.output), logits->data, cb_tensor_numel(logits),
                TOL_TORCH_ATOL, TOL_TORCH_RTOL);
    float l = cb_exec_loss(ex);
    check_close("vgg16 loss", &l, loss->data, 1, TOL_TORCH_ATOL, TOL_TORCH_RTOL);
    CHECK_OK(cb_exec_backward(ex, batch));
    check_param_grads_as(m, "vgg16", TOL_VGG_GRAD_ATOL, TOL_VGG_GRAD_RTOL, onednn ? TOL_VGG_ONEDNN_GRAD_L2 : 0);
    /* Replay PyTorch's sequence from the initial weights and statistics. */
    load_params(m);
    cb_optim_config cfg = cb_optim_defaults(CB_OPTIM_SGD, 0.01f); /* as the golden (see the runner) */
    cb_optim *opt;
    CHECK_OK(cb_optim_create(&cfg, &m->graph, &opt));
    const int steps = (int)losses->shape[0] - 1;
    float got[16];
    /* PyTorch: one pass for the gradients, then `steps` steps, then one more
     * training-mode pass; five updates of the running statistics. */
    CHECK_OK(cb_exec_forward(ex, batch));
    CHECK(steps < 16);
    if (steps < 16) run_steps(ex, opt, batch, steps, got);
    check_close("vgg16 losses over 3 SGD steps", got, losses->data, steps + 1, steps_atol, steps_rtol);
    for (int i = 0; i < m->graph.count; i++) {
        const cb_node *n = &m->graph.nodes[i];
        if (n->op != CB_OP_PARAM || !n->buffer) continue;
        char key[CB_MAX_NAME + 16], what[CB_MAX_NAME + 32];
        snprintf(key, sizeof key, "after.%s", n->name);
        const cb_tensor *t = get("vgg16", key);
        if (!t) continue;
        snprintf(what, sizeof what, "vgg16 %s after the steps", n->name);
        check_close(what, cb_graph_param_data(&m->graph, i), t->data, cb_tensor_numel(t), steps_atol, steps_rtol);
    }
    feed(ev, m, x, y);
    CHECK_OK(cb_exec_forward(ev, batch));
    check_close("vgg16 evaluation-mode logits", cb_exec_value(ev, m->graph.output), eval_logits->data,
                cb_tensor_numel(eval_logits), steps_atol, steps_rtol);
    cb_optim_free(opt);
    cb_exec_free(ex);
    cb_exec_free(ev);
    cb_model_free(m);
}

TEST(golden_vgg16_fast) { golden_vgg16(0, CB_KERNELS_FAST); }
/* The exact levels (exec.h) through oneDNN where it is built in. */
TEST(golden_vgg16_level_fast) { golden_vgg16(cb_dnnl_version() != NULL, CB_KERNELS_EXACT); }
TEST(golden_vgg16_level_fused) { golden_vgg16(cb_dnnl_version() != NULL, CB_KERNELS_FUSED); }

TEST(golden_vgg16_onednn)
{
    if (!cb_dnnl_version()) {
        CHECK(access("/usr/include/oneapi/dnnl/dnnl.h", F_OK) != 0); /* built without it where it is installed: fail */
        printf("  oneDNN is not built in: VGG-16 through it is not tested\n");
        return;
    }
    golden_vgg16(1, CB_KERNELS_FAST);
}

/* nn.Embedding + nn.LSTM / nn.GRU / the reset-before GRU (batch first):
 * every hidden state and every parameter gradient of sum(h * dy), against
 * PyTorch; both kernel levels.
 * The head and loss after the LSTM only make the executor plan gradients. */
static void check_recurrent(const char *variant, cb_kernels kernels)
{
    if (!load_golden()) { test_failures++; return; }
    char key[96];
    snprintf(key, sizeof key, "%s.ids", variant);
    const cb_tensor *ids = need(key);
    snprintf(key, sizeof key, "%s.dy", variant);
    const cb_tensor *dy = need(key);
    snprintf(key, sizeof key, "%s.output", variant);
    const cb_tensor *h = need(key);
    if (!ids || !dy || !h) return;
    cb_graph g;
    cb_graph_init(&g);
    int64_t t[1] = {5}, one[1] = {1};
    int in = cb_graph_input(&g, "ids", 1, t);
    int e = cb_graph_embedding(&g, "emb", in, 6, 3);
    int l = !strcmp(variant, "op_lstm") ? cb_graph_lstm(&g, "rnn", e, 4)
                                        : cb_graph_gru(&g, "rnn", e, 4, !strcmp(variant, "op_grurb"));
    int head = cb_graph_linear(&g, "head", cb_graph_last_step(&g, l), 2, 1);
    int labels = cb_graph_input(&g, "labels", 1, one);
    CHECK(cb_graph_loss(&g, CB_OP_SOFTMAX_XENT, head, labels) >= 0);
    CHECK_OK(cb_graph_finalize(&g));
    const char *names[5] = {"emb.weight", "rnn.weight_ih_l0", "rnn.weight_hh_l0", "rnn.bias_ih_l0", "rnn.bias_hh_l0"};
    for (int k = 0; k < 5; k++) {
        snprintf(key, sizeof key, "%s.param.%s", variant, names[k]);
        const cb_tensor *p = need(key);
        int node = cb_graph_find(&g, names[k]);
        CHECK(node >= 0);
        CHECK(!p || node < 0 || cb_tensor_numel(p) == cb_node_numel(&g.nodes[node]));
        if (p && node >= 0 && cb_tensor_numel(p) == cb_node_numel(&g.nodes[node]))
            memcpy(cb_graph_param_data(&g, node), p->data, (size_t)cb_tensor_numel(p) * sizeof(float));
    }
    cb_exec *ex;
    CHECK_OK(cb_exec_create(&g, 2, 1, kernels, &ex));
    memcpy(cb_exec_value(ex, in), ids->data, 10 * sizeof(float));
    memset(cb_exec_value(ex, labels), 0, 2 * sizeof(float));
    CHECK_OK(cb_exec_forward(ex, 2));
    char what[128];
    snprintf(what, sizeof what, "%s hidden states", variant);
    check_close(what, cb_exec_value(ex, l), h->data, 40, TOL_TORCH_ATOL, TOL_TORCH_RTOL);
    CHECK_OK(cb_exec_backward_from(ex, l, dy->data, 2));
    for (int k = 0; k < 5; k++) {
        snprintf(key, sizeof key, "%s.grad.%s", variant, names[k]);
        snprintf(what, sizeof what, "%s gradient of %s", variant, names[k]);
        const cb_tensor *gr = need(key);
        int node = cb_graph_find(&g, names[k]);
        if (gr && node >= 0)
            check_close(what, cb_graph_param_grad(&g, node), gr->data, cb_tensor_numel(gr), TOL_GRAD_ATOL, TOL_GRAD_RTOL);
    }
    cb_exec_free(ex);
    cb_graph_free(&g);
}

TEST(golden_lstm_fast) { check_recurrent("op_lstm", CB_KERNELS_FAST); }
TEST(golden_lstm_reference) { check_recurrent("op_lstm", CB_KERNELS_REFERENCE); }
TEST(golden_gru_fast) { check_recurrent("op_gru", CB_KERNELS_FAST); }
TEST(golden_gru_reference) { check_recurrent("op_gru", CB_KERNELS_REFERENCE); }
TEST(golden_gru_rb_fast) { check_recurrent("op_grurb", CB_KERNELS_FAST); }
TEST(golden_gru_rb_reference) { check_recurrent("op_grurb", CB_KERNELS_REFERENCE); }
TEST(golden_lstm_level_fast) { check_recurrent("op_lstm", CB_KERNELS_EXACT); }
TEST(golden_gru_level_fast) { check_recurrent("op_gru", CB_KERNELS_EXACT); }
TEST(golden_gru_rb_level_fast) { check_recurrent("op_grurb", CB_KERNELS_EXACT); }

/* The IMDb models (dropout 0) on random token ids: probabilities, binary
 * cross-entropy, every gradient and 3 Adam steps at the protocol's learning
 * rates, against PyTorch. Fast kernels (sequences of 300 steps). */
static void check_rnn_model(const char *name, cb_kernels level)
{
    if (!load_golden()) { test_failures++; return; }
    cb_model *m;
    CHECK_OK(cb_model_create(name, &m));
    if (!m) return;
    const cb_tensor *x = get(name, "input"), *y = get(name, "labels"), *prob = get(name, "output"),
                    *loss = get(name, "loss"), *losses = get(name, "adam_losses"), *lr = get(name, "adam_lr");
    if (!x || !y || !prob || !loss || !losses || !lr) { cb_model_free(m); return; }
    for (int i = 0; i < m->graph.count; i++)
        if (m->graph.nodes[i].op == CB_OP_DROPOUT) m->graph.nodes[i].p = 0.0f;
    const int batch = (int)x->shape[0];
    load_params(m);
    cb_exec *ex;
    CHECK_OK(cb_exec_create(&m->graph, batch, 1, level, &ex));
    memcpy(cb_exec_value(ex, m->input), x->data, (size_t)cb_tensor_numel(x) * sizeof(float));
    memcpy(cb_exec_value(ex, m->labels), y->data, (size_t)batch * sizeof(float));
    char what[CB_MAX_NAME + 64];
    CHECK_OK(cb_exec_forward(ex, batch));
    snprintf(what, sizeof what, "%s output", name);
    check_close(what, cb_exec_value(ex, m->graph.output), prob->data, batch, TOL_TORCH_ATOL, TOL_TORCH_RTOL);
    float l = cb_exec_loss(ex);
    snprintf(what, sizeof what, "%s loss", name);
    check_close(what, &l, loss->data, 1, TOL_TORCH_ATOL, TOL_TORCH_RTOL);
    CHECK_OK(cb_exec_backward(ex, batch));
    check_param_grads(m, name, TOL_GRAD_ATOL, TOL_GRAD_RTOL);
    load_params(m);
    cb_optim_config cfg = cb_optim_defaults(CB_OPTIM_ADAM, ((const float *)lr->data)[0]);
    cb_optim *opt;
    CHECK_OK(cb_optim_create(&cfg, &m->graph, &opt));
    const int steps = (int)losses->shape[0] - 1;
    float got[16];
    CHECK(steps < 16);
    if (steps < 16) run_steps(ex, opt, batch, steps, got);
    snprintf(what, sizeof what, "%s losses over %d Adam steps", name, steps);
    check_close(what, got, losses->data, steps + 1, TOL_STEPS_ATOL, TOL_STEPS_RTOL);
    cb_optim_free(opt);
    cb_exec_free(ex);
    cb_model_free(m);
}

TEST(golden_lstm_model) { check_rnn_model("lstm", CB_KERNELS_FAST); }
TEST(golden_gru_model) { check_rnn_model("gru", CB_KERNELS_FAST); }
TEST(golden_gru_rb_model) { check_rnn_model("gru-rb", CB_KERNELS_FAST); }
TEST(golden_lstm_model_level_fast) { check_rnn_model("lstm", CB_KERNELS_EXACT); }
TEST(golden_gru_model_level_fused) { check_rnn_model("gru", CB_KERNELS_FUSED); }
