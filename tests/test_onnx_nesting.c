/* Hostile ONNX wire format: subgraphs and types nested thousands deep (which
 * overflow the stack of a recursive protobuf decoder) and malformed tags and
 * lengths must be refused with a clear error before decoding, at any depth. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "harness.h"
#include "crossbind/onnx.h"

/* Protobuf bytes built back to front: a message's length is known once its
 * contents are written, so each wrap prepends tag and length. The data lies
 * in b[pos .. cap). */
typedef struct { unsigned char *b; size_t cap, pos; } rbuf;

static size_t used(const rbuf *r) { return r->cap - r->pos; }

static void pre_bytes(rbuf *r, const void *p, size_t n)
{
    if (n > r->pos) abort(); /* the test sizes its buffer */
    r->pos -= n;
    memcpy(r->b + r->pos, p, n);
}

static void pre_varint(rbuf *r, uint64_t v)
{
    unsigned char t[10];
    int n = 0;
    do {
        t[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    pre_bytes(r, t, (size_t)n);
}

/* Everything written since `mark` (a value of used()) becomes field `field`. */
static void wrap(rbuf *r, uint32_t field, size_t mark)
{
    pre_varint(r, used(r) - mark);
    pre_varint(r, (uint64_t)field << 3 | 2);
}

static void pre_string(rbuf *r, uint32_t field, const char *s)
{
    size_t mark = used(r);
    pre_bytes(r, s, strlen(s));
    wrap(r, field, mark);
}

static void pre_int(rbuf *r, uint32_t field, uint64_t v)
{
    pre_varint(r, v);
    pre_varint(r, (uint64_t)field << 3);
}

/* ModelProto around the graph contents written since `graph_mark`. */
static void finish_model(rbuf *r, size_t graph_mark)
{
    wrap(r, 7, graph_mark); /* ModelProto.graph */
    size_t m = used(r);
    pre_int(r, 2, 13);      /* OperatorSetIdProto.version */
    wrap(r, 8, m);          /* ModelProto.opset_import */
    pre_int(r, 1, 8);       /* ModelProto.ir_version */
}

/* A model whose graph holds node "if0" (If) whose then_branch holds "if1"
 * (If) ... `depth` levels; the innermost graph is empty. */
static unsigned char *nested_if(int depth, size_t *len)
{
    rbuf r = {0};
    r.cap = r.pos = (size_t)depth * 80 + 64;
    r.b = malloc(r.cap);
    size_t graph = used(&r); /* the innermost, empty graph */
    for (int k = depth - 1; k >= 0; k--) {
        wrap(&r, 6, graph); /* AttributeProto.g */
        pre_int(&r, 20, 5); /* AttributeProto.type = GRAPH */
        pre_string(&r, 1, "then_branch");
        wrap(&r, 5, graph); /* NodeProto.attribute */
        char name[32];
        snprintf(name, sizeof name, "if%d", k);
        pre_string(&r, 4, "If");
        pre_string(&r, 3, name);
        pre_string(&r, 1, "cond");
        wrap(&r, 1, graph); /* GraphProto.node: the graph one level up */
    }
    finish_model(&r, graph);
    *len = used(&r);
    memmove(r.b, r.b + r.pos, *len);
    return r.b;
}

/* A graph input whose type is a sequence of a sequence ... `depth` deep:
 * no subgraph, but just as deep a recursion for the decoder. */
static unsigned char *nested_type(int depth, size_t *len)
{
    rbuf r = {0};
    r.cap = r.pos = (size_t)depth * 16 + 64;
    r.b = malloc(r.cap);
    size_t type = used(&r); /* the innermost TypeProto, empty */
    for (int k = 0; k < depth; k++) {
        wrap(&r, 1, type); /* TypeProto.Sequence.elem_type */
        wrap(&r, 4, type); /* TypeProto.sequence_type */
    }
    wrap(&r, 2, type); /* ValueInfoProto.type */
    pre_string(&r, 1, "x");
    wrap(&r, 11, type); /* GraphProto.input */
    finish_model(&r, type);
    *len = used(&r);
    memmove(r.b, r.b + r.pos, *len);
    return r.b;
}

static void expect_refusal(const unsigned char *buf, size_t len, const char *needle, const char *label)
{
    cb_model *m = NULL;
    cb_status s = cb_onnx_import(buf, len, "deep.onnx", 1, &m);
    if (s == CB_OK || m || (needle && !strstr(cb_last_error(), needle)) || !strstr(cb_last_error(), "deep.onnx")) {
        fprintf(stderr, "  %s: expected a refusal containing '%s', got '%s'\n", label, needle ? needle : "",
                s == CB_OK ? "success" : cb_last_error());
        test_failures++;
    }
    cb_model_free(m);
}

TEST(onnx_nested_subgraphs_are_refused_before_decoding)
{
    const int depths[] = {2, 9, 10, 1000, 3000, 100000};
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        size_t len;
        unsigned char *buf = nested_if(depths[i], &len);
        char label[64];
        snprintf(label, sizeof label, "nested If, depth %d", depths[i]);
        /* Shallow: decoded, then refused by the importer (which maps no If).
         * Deeper than 8 subgraph levels: refused by the wire-format walk,
         * naming the outermost node, its operator and the attribute. */
        expect_refusal(buf, len, depths[i] <= 8 ? NULL : "node 'if0' (If), attribute 'then_branch', nests subgraphs",
                       label);
        free(buf);
    }
}

TEST(onnx_deeply_nested_types_are_refused_before_decoding)
{
    const int depths[] = {3, 40, 1000, 200000};
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        size_t len;
        unsigned char *buf = nested_type(depths[i], &len);
        char label[64];
        snprintf(label, sizeof label, "nested sequence type, depth %d", depths[i]);
        expect_refusal(buf, len, depths[i] < 20 ? NULL : "nest more than", label);
        free(buf);
    }
}

TEST(onnx_malformed_wire_format_is_refused)
{
    size_t len;
    unsigned char *buf = nested_if(3, &len);
    /* A length that runs past the end of the file, inside a nested message. */
    unsigned char *copy = malloc(len);
    memcpy(copy, buf, len);
    expect_refusal(copy, len - 1, "runs past the end", "truncated by one byte");
    /* The model's first field as a group (wire type 3), which ONNX never uses. */
    copy[0] = (unsigned char)((copy[0] & ~7u) | 3);
    expect_refusal(copy, len, "group", "group wire type");
    /* ModelProto.graph (field 7) encoded as a varint, not as a message. */
    const unsigned char graph_as_int[] = {0x08, 0x08, 0x38, 0x01};
    expect_refusal(graph_as_int, sizeof graph_as_int, "not encoded as a message", "graph as a varint");
    /* Field number 0, and a varint of 11 bytes. */
    const unsigned char field0[] = {0x00, 0x01};
    expect_refusal(field0, sizeof field0, "field number", "field number 0");
    const unsigned char long_varint[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    expect_refusal(long_varint, sizeof long_varint, "number longer", "11-byte varint");
    free(copy);
    free(buf);
}

/* A model whose one initializer W [1,1] feeds m chained Gemm nodes:
 * x -> y0 -> ... -> y(m-1). */
static unsigned char *shared_weight_chain(int m, size_t *len)
{
    rbuf r = {0};
    r.cap = r.pos = (size_t)m * 64 + 512;
    r.b = malloc(r.cap);
    size_t graph = used(&r);
    char name[32], in[32];
    size_t o = used(&r);
    snprintf(name, sizeof name, "y%d", m - 1);
    pre_string(&r, 1, name);
    wrap(&r, 12, o); /* GraphProto.output */
    for (int k = m - 1; k >= 0; k--) { /* prepended: the last field first */
        size_t n = used(&r);
        pre_string(&r, 4, "Gemm");
        snprintf(name, sizeof name, "y%d", k);
        pre_string(&r, 2, name);
        pre_string(&r, 1, "W");
        snprintf(in, sizeof in, k ? "y%d" : "x", k - 1);
        pre_string(&r, 1, in);
        wrap(&r, 1, n); /* GraphProto.node */
    }
    size_t t = used(&r);
    pre_string(&r, 8, "W");
    const float one = 1.0f;
    size_t f = used(&r);
    pre_bytes(&r, &one, sizeof one);
    wrap(&r, 4, f);  /* TensorProto.float_data, packed */
    pre_int(&r, 2, 1); /* data_type FLOAT */
    pre_int(&r, 1, 1); /* dims 1, 1 */
    pre_int(&r, 1, 1);
    wrap(&r, 5, t); /* GraphProto.initializer */
    size_t vi = used(&r), ty = used(&r), sh = used(&r);
    for (int d = 0; d < 2; d++) {
        size_t dm = used(&r);
        pre_int(&r, 1, 1); /* dim_value 1 */
        wrap(&r, 1, dm);   /* TensorShapeProto.dim */
    }
    wrap(&r, 2, sh);   /* TypeProto.Tensor.shape */
    pre_int(&r, 1, 1); /* elem_type FLOAT */
    wrap(&r, 1, ty);   /* TypeProto.tensor_type */
    wrap(&r, 2, vi);   /* ValueInfoProto.type */
    pre_string(&r, 1, "x");
    wrap(&r, 11, vi); /* GraphProto.input */
    finish_model(&r, graph);
    *len = used(&r);
    memmove(r.b, r.b + r.pos, *len);
    return r.b;
}

/* Each node a constant feeds gets its own parameter, W, W#1, W#2, ...; the
 * next free suffix was once searched from 1 for every node, so one constant
 * feeding m nodes cost m^2/2 name lookups (8000 nodes: seconds). */
TEST(onnx_constant_feeding_many_nodes_imports_in_linear_time)
{
    const int m = 8000;
    size_t len;
    unsigned char *buf = shared_weight_chain(m, &len);
    cb_model *model = NULL;
    clock_t t0 = clock();
    cb_status s = cb_onnx_import(buf, len, "chain.onnx", 0, &model);
    double sec = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CHECK(s == CB_OK);
    if (s != CB_OK) fprintf(stderr, "  %s\n", cb_last_error());
    if (model) {
        CHECK(cb_graph_find(&model->graph, "W") >= 0);
        CHECK(cb_graph_find(&model->graph, "W#1") >= 0);
        char last[32];
        snprintf(last, sizeof last, "W#%d", m - 1);
        CHECK(cb_graph_find(&model->graph, last) >= 0);
        CHECK((int)cb_model_param_count(model) >= m);
    }
    CHECK(sec < 1.0);
    if (!(sec < 1.0)) fprintf(stderr, "  %d nodes sharing one constant took %.2f s to import\n", m, sec);
    cb_model_free(model);
    free(buf);
}
