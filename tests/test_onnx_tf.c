/* The ONNX patterns tf2onnx writes for Keras CNNs, in small graphs built
 * here: an [N,H,W,C] input read through Transpose [0,3,1,2], average pooling
 * that leaves its padding out of the count (TensorFlow's SAME), Squeeze of
 * the pooled [N,C,1,1], and a Dense layer as MatMul then Add of its bias;
 * against the same function computed here in double, at every level, through
 * crossbind's ONNX export and back, and the variants the importer refuses. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "crossbind/crossbind.h"
#include "crossbind/formats.h"
#include "crossbind/onnx.h"
#include "onnx.pb-c.h"

/* Every allocation of one model, freed together. */
typedef struct { void *p[256]; int n; } pool;

static void *pal(pool *a, size_t size)
{
    if (a->n == 256) abort(); /* the test sizes its pool */
    return a->p[a->n++] = calloc(1, size);
}

static char *pstr(pool *a, const char *s) { return strcpy(pal(a, strlen(s) + 1), s); }

static void pool_free(pool *a)
{
    for (int i = 0; i < a->n; i++) free(a->p[i]);
    a->n = 0;
}

typedef struct {
    pool a;
    Onnx__NodeProto *nodes[16];
    Onnx__TensorProto *inits[8];
    Onnx__ValueInfoProto *outs[2];
    int n_nodes, n_inits, n_outs;
} model_text;

static Onnx__NodeProto *node(model_text *mt, const char *op, const char *in0, const char *in1, const char *out)
{
    Onnx__NodeProto *n = pal(&mt->a, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = pstr(&mt->a, op);
    n->name = pstr(&mt->a, out);
    n->input = pal(&mt->a, 2 * sizeof *n->input);
    n->input[n->n_input++] = pstr(&mt->a, in0);
    if (in1) n->input[n->n_input++] = pstr(&mt->a, in1);
    n->output = pal(&mt->a, sizeof *n->output);
    n->output[n->n_output++] = pstr(&mt->a, out);
    n->attribute = pal(&mt->a, 4 * sizeof *n->attribute);
    mt->nodes[mt->n_nodes++] = n;
    return n;
}

static void attr_ints(model_text *mt, Onnx__NodeProto *n, const char *name, int k, const int64_t *v)
{
    Onnx__AttributeProto *at = pal(&mt->a, sizeof *at);
    onnx__attribute_proto__init(at);
    at->name = pstr(&mt->a, name);
    at->has_type = 1;
    at->type = k == 1 && !strcmp(name, "count_include_pad") ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT
                                                              : ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    if (at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) {
        at->has_i = 1;
        at->i = v[0];
    } else {
        at->ints = pal(&mt->a, (size_t)k * sizeof *at->ints);
        memcpy(at->ints, v, (size_t)k * sizeof *at->ints);
        at->n_ints = (size_t)k;
    }
    n->attribute[n->n_attribute++] = at;
}

static void init(model_text *mt, const char *name, int nd, const int64_t *dims, const float *f, const int64_t *i)
{
    Onnx__TensorProto *t = pal(&mt->a, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = pstr(&mt->a, name);
    t->has_data_type = 1;
    t->data_type = f ? ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT : ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    t->dims = pal(&mt->a, (size_t)nd * sizeof *t->dims);
    memcpy(t->dims, dims, (size_t)nd * sizeof *t->dims);
    t->n_dims = (size_t)nd;
    size_t n = 1;
    for (int d = 0; d < nd; d++) n *= (size_t)dims[d];
    if (f) {
        t->float_data = pal(&mt->a, n * sizeof *f);
        memcpy(t->float_data, f, n * sizeof *f);
        t->n_float_data = n;
    } else {
        t->int64_data = pal(&mt->a, n * sizeof *i);
        memcpy(t->int64_data, i, n * sizeof *i);
        t->n_int64_data = n;
    }
    mt->inits[mt->n_inits++] = t;
}

/* A float tensor [N, dims...] (the batch free). */
static Onnx__ValueInfoProto *value_info(model_text *mt, const char *name, int nd, const int64_t *dims)
{
    Onnx__ValueInfoProto *v = pal(&mt->a, sizeof *v);
    Onnx__TypeProto *tp = pal(&mt->a, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = pal(&mt->a, sizeof *tt);
    Onnx__TensorShapeProto *sh = pal(&mt->a, sizeof *sh);
    onnx__value_info_proto__init(v);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    sh->dim = pal(&mt->a, (size_t)(nd + 1) * sizeof *sh->dim);
    for (int d = 0; d <= nd; d++) {
        Onnx__TensorShapeProto__Dimension *dim = sh->dim[d] = pal(&mt->a, sizeof *dim);
        onnx__tensor_shape_proto__dimension__init(dim);
        if (d == 0) {
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dim->dim_param = pstr(&mt->a, "N");
        } else {
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dim->dim_value = dims[d - 1];
        }
    }
    sh->n_dim = (size_t)nd + 1;
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt->shape = sh;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    v->name = pstr(&mt->a, name);
    v->type = tp;
    return v;
}

/* Packs the graph (input x [N,4,5,3], opset 13) and imports it. */
static cb_status import(model_text *mt, cb_model **out)
{
    Onnx__ModelProto mp;
    Onnx__GraphProto gp;
    Onnx__OperatorSetIdProto opset;
    Onnx__OperatorSetIdProto *opsets[1] = {&opset};
    onnx__model_proto__init(&mp);
    onnx__graph_proto__init(&gp);
    onnx__operator_set_id_proto__init(&opset);
    opset.domain = pstr(&mt->a, "");
    opset.has_version = 1;
    opset.version = 13;
    mp.has_ir_version = 1;
    mp.ir_version = 7;
    mp.n_opset_import = 1;
    mp.opset_import = opsets;
    mp.graph = &gp;
    gp.name = pstr(&mt->a, "tf");
    const int64_t xd[3] = {4, 5, 3};
    Onnx__ValueInfoProto *in[1] = {value_info(mt, "x", 3, xd)};
    gp.n_input = 1;
    gp.input = in;
    gp.n_output = (size_t)mt->n_outs;
    gp.output = mt->outs;
    gp.n_node = (size_t)mt->n_nodes;
    gp.node = mt->nodes;
    gp.n_initializer = (size_t)mt->n_inits;
    gp.initializer = mt->inits;
    size_t len = onnx__model_proto__get_packed_size(&mp);
    unsigned char *buf = malloc(len);
    onnx__model_proto__pack(&mp, buf);
    cb_status s = cb_onnx_import(buf, len, "tf.onnx", 0, out);
    free(buf);
    return s;
}

static const float W[6] = {0.5f, -1.0f, 0.25f, 2.0f, -0.75f, 0.125f}; /* [3,2] */
static const float B[2] = {0.3f, -0.2f};

/* The Keras head tf2onnx writes: Transpose, AveragePool 3x3 SAME (pads
 * 1,1,1,1, the padding out of the count), GlobalAveragePool, Squeeze [2,3],
 * MatMul, Add of the bias (the constant first when bias_first); the product
 * before the bias as a second output when both_outputs. */
static void tf_head(model_text *mt, int bias_first, int both_outputs)
{
    const int64_t perm[4] = {0, 3, 1, 2}, k[2] = {3, 3}, s[2] = {1, 1}, p[4] = {1, 1, 1, 1};
    const int64_t axes[2] = {2, 3}, two[1] = {2}, wd[2] = {3, 2}, bd[1] = {2}, yd[1] = {2};
    attr_ints(mt, node(mt, "Transpose", "x", NULL, "t"), "perm", 4, perm);
    Onnx__NodeProto *pool_node = node(mt, "AveragePool", "t", NULL, "p");
    attr_ints(mt, pool_node, "kernel_shape", 2, k);
    attr_ints(mt, pool_node, "strides", 2, s);
    attr_ints(mt, pool_node, "pads", 4, p);
    node(mt, "GlobalAveragePool", "p", NULL, "g");
    init(mt, "axes", 1, two, NULL, axes);
    node(mt, "Squeeze", "g", "axes", "s");
    init(mt, "W", 2, wd, W, NULL);
    init(mt, "b", 1, bd, B, NULL);
    node(mt, "MatMul", "s", "W", "mm");
    node(mt, "Add", bias_first ? "b" : "mm", bias_first ? "mm" : "b", "y");
    mt->outs[mt->n_outs++] = value_info(mt, "y", 1, yd);
    if (both_outputs) mt->outs[mt->n_outs++] = value_info(mt, "mm", 1, yd);
}

/* x[n][h][w][c] of the file's layout */
static float xval(int n, int h, int w, int c) { return (float)(((n * 7 + h * 5 + w * 3 + c * 11) % 17) - 8) / 8.0f; }

/* The head in double: y = mean over the 3x3 SAME average pool's outputs
 * (each the mean of the input elements under its window), times W, plus b
 * (with_bias). */
static void expected(int n, int with_bias, double y[2])
{
    double g[3] = {0};
    for (int c = 0; c < 3; c++) {
        for (int oy = 0; oy < 4; oy++)
            for (int ox = 0; ox < 5; ox++) {
                double sum = 0;
                int count = 0;
                for (int i = oy - 1; i <= oy + 1; i++)
                    for (int j = ox - 1; j <= ox + 1; j++)
                        if (i >= 0 && i < 4 && j >= 0 && j < 5) sum += xval(n, i, j, c), count++;
                g[c] += sum / count / 20.0;
            }
    }
    for (int o = 0; o < 2; o++) {
        y[o] = with_bias ? B[o] : 0.0;
        for (int c = 0; c < 3; c++) y[o] += g[c] * W[c * 2 + o];
    }
}

/* Runs the imported model on 2 samples at `level`: out[k] receives output k. */
static void run(cb_model *m, cb_kernels level, float out[2][4])
{
    cb_exec *ex;
    CHECK_OK(cb_exec_create(&m->graph, 2, 0, level, &ex));
    if (!ex) return;
    float *x = cb_exec_value(ex, m->inputs[0]); /* [2,3,4,5] inside */
    for (int n = 0; n < 2; n++)
        for (int c = 0; c < 3; c++)
            for (int h = 0; h < 4; h++)
                for (int w = 0; w < 5; w++) x[((n * 3 + c) * 4 + h) * 5 + w] = xval(n, h, w, c);
    CHECK_OK(cb_exec_forward(ex, 2));
    for (int k = 0; k < m->n_outputs; k++) memcpy(out[k], cb_exec_value(ex, m->outputs[k]), 4 * sizeof(float));
    cb_exec_free(ex);
}

TEST(onnx_tf2onnx_keras_head)
{
    const cb_kernels levels[] = {CB_KERNELS_REFERENCE, CB_KERNELS_EXACT, CB_KERNELS_FUSED, CB_KERNELS_FAST};
    for (int variant = 0; variant < 3; variant++) {
        model_text mt = {0};
        tf_head(&mt, variant == 1, variant == 2);
        cb_model *m = NULL;
        CHECK_OK(import(&mt, &m));
        pool_free(&mt.a);
        if (!m) continue;
        /* the input is [C,H,W] inside, [H,W,C] in the file */
        const cb_node *in = &m->graph.nodes[m->inputs[0]];
        CHECK(m->input_nhwc[0] == 1 && in->ndim == 3 && in->dims[0] == 3 && in->dims[1] == 4 && in->dims[2] == 5);
        int linear_bias = 0, adds = 0, excl = 0;
        for (int i = 0; i < m->graph.count; i++) {
            const cb_node *n = &m->graph.nodes[i];
            linear_bias += n->op == CB_OP_LINEAR && n->n_in == 3;
            adds += n->op == CB_OP_ADD;
            excl += n->op == CB_OP_AVGPOOL2D && n->exclude_pad;
        }
        CHECK(linear_bias == 1 && adds == 0 && excl == 1); /* the bias is the layer's, the pool its own kind */
        CHECK(m->n_outputs == (variant == 2 ? 2 : 1));
        float got[2][4], first[2][4];
        for (int l = 0; l < 4; l++) {
            run(m, levels[l], got);
            if (l == 0) memcpy(first, got, sizeof got);
            for (int n = 0; n < 2; n++)
                for (int k = 0; k < m->n_outputs; k++) {
                    double y[2];
                    expected(n, k == 0, y);
                    for (int o = 0; o < 2; o++)
                        if (fabs(got[k][n * 2 + o] - y[o]) > 1e-5 + 1e-4 * fabs(y[o])) {
                            fprintf(stderr, "  variant %d level %s output %d sample %d: %.7g, want %.7g\n", variant,
                                    cb_level_name(levels[l]), k, n, got[k][n * 2 + o], y[o]);
                            CHECK(0);
                        }
                }
        }
        /* crossbind's own export keeps the [N,H,W,C] input (and its Transpose) and the pool's count */
        cb_model *o = NULL;
        const char *path = test_tmp("tf_head.onnx");
        CHECK_OK(cb_onnx_export(m, path));
        CHECK_OK(cb_onnx_load(path, 0, &o));
        if (o) {
            CHECK(o->input_nhwc[0] == 1);
            int oexcl = 0;
            for (int i = 0; i < o->graph.count; i++)
                oexcl += o->graph.nodes[i].op == CB_OP_AVGPOOL2D && o->graph.nodes[i].exclude_pad;
            CHECK(oexcl == 1);
            run(o, CB_KERNELS_REFERENCE, got);
            CHECK(memcmp(got, first, (size_t)o->n_outputs * sizeof got[0]) == 0);
        }
        cb_model_free(o);
        cb_model_free(m);
    }
}

TEST(onnx_tf2onnx_patterns_refused_clearly)
{
    const int64_t perm[4] = {0, 3, 1, 2}, k[2] = {3, 3}, big[4] = {3, 3, 3, 3};
    const int64_t wd[2] = {3, 2}, bd[1] = {2}, yd[1] = {2}, xd3[3] = {4, 5, 3}, c3[1] = {3}, pooled[3] = {3, 8, 9};
    const char *needles[] = {"[0,3,1,2]", "B must be a constant", "only as the bias of a MatMul", "batch axis",
                             "not of size 1", "as large as the window"};
    for (int v = 0; v < 6; v++) {
        model_text mt = {0};
        const char *y = "y";
        int64_t ynd = 1;
        const int64_t *ydims = yd;
        if (v == 0) { /* the input also read as it is: no layout choice, and no Transpose other than [1,0,2] */
            attr_ints(&mt, node(&mt, "Transpose", "x", NULL, "t"), "perm", 4, perm);
            node(&mt, "Relu", "x", NULL, "y");
            mt.outs[mt.n_outs++] = value_info(&mt, "t2", 3, xd3);
            node(&mt, "Relu", "t", NULL, "t2");
            ynd = 3, ydims = xd3;
        } else {
            attr_ints(&mt, node(&mt, "Transpose", "x", NULL, "t"), "perm", 4, perm);
            node(&mt, "GlobalAveragePool", "t", NULL, "g");
            /* Squeeze of the batch axis (3), of the channels (4, size 3), else of [2,3] */
            const int64_t axes[2] = {v == 3 ? 0 : v == 4 ? 1 : 2, 3}, na[1] = {v == 3 || v == 4 ? 1 : 2};
            init(&mt, "axes", 1, na, NULL, axes);
            node(&mt, "Squeeze", "g", "axes", "s");
            init(&mt, "W", 2, wd, W, NULL);
            init(&mt, "b", 1, bd, B, NULL);
            if (v == 1) node(&mt, "MatMul", "s", "s", "y"), ydims = c3;
            else if (v == 2) node(&mt, "Relu", "s", NULL, "r"), node(&mt, "Add", "r", "b", "y");
            else if (v == 5) {
                Onnx__NodeProto *p = node(&mt, "AveragePool", "t", NULL, "y");
                attr_ints(&mt, p, "kernel_shape", 2, k);
                attr_ints(&mt, p, "pads", 4, big);
                ynd = 3, ydims = pooled;
            } else node(&mt, "MatMul", "s", "W", "y");
        }
        mt.outs[mt.n_outs++] = value_info(&mt, y, (int)ynd, ydims);
        cb_model *m = NULL;
        cb_status s = import(&mt, &m);
        pool_free(&mt.a);
        CHECK(s == CB_ERR_UNSUPPORTED && m == NULL);
        if (!strstr(cb_last_error(), needles[v])) {
            fprintf(stderr, "  case %d: '%s' lacks '%s'\n", v, cb_last_error(), needles[v]);
            CHECK(0);
        }
        cb_model_free(m);
    }
}
