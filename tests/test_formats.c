/* Model formats: the zip container, the state-dict pickle subset, .npy,
 * ONNX export and import, and parameter matching by name or by order. Bad
 * and hostile files must fail with a clear error, never crash. */
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "harness.h"
#include "crossbind/formats.h"
#include "crossbind/onnx.h"
#include "../src/formats/onnx_util.h"
#include "../src/formats/zip.h"

#define tmp test_tmp

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, f);
    fclose(f);
    return b;
}

/* A .pt archive whose data.pkl is `pkl` and with one storage "0" of `n` floats. */
static unsigned char *make_pt(const unsigned char *pkl, size_t plen, const float *storage, size_t n, size_t *len)
{
    cb_zip_writer *w;
    unsigned char *buf = NULL;
    CHECK_OK(cb_zip_writer_create(&w));
    CHECK_OK(cb_zip_writer_add(w, "model/data.pkl", pkl, plen));
    CHECK_OK(cb_zip_writer_add(w, "model/data/0", storage, n * sizeof(float)));
    CHECK_OK(cb_zip_writer_finish(w, &buf, len));
    return buf;
}

TEST(zip_round_trip_and_corruption)
{
    cb_zip_writer *w;
    unsigned char *buf;
    size_t len;
    const char *text = "hello, zip";
    CHECK_OK(cb_zip_writer_create(&w));
    CHECK_OK(cb_zip_writer_add(w, "a/one", text, strlen(text)));
    CHECK_OK(cb_zip_writer_add(w, "a/two", "", 0));
    CHECK_OK(cb_zip_writer_finish(w, &buf, &len));
    cb_zip z;
    CHECK_OK(cb_zip_open(buf, len, "mem", &z));
    const cb_zip_entry *e = cb_zip_find(&z, "a/one");
    const unsigned char *data = NULL;
    unsigned char *owned = NULL;
    CHECK(e != NULL);
    if (e) CHECK_OK(cb_zip_read(&z, e, SIZE_MAX, &data, &owned));
    CHECK(e && data && !owned && e->usize == strlen(text) && memcmp(data, text, e->usize) == 0);
    CHECK(e && e->data % 64 == 0); /* storages aligned for memory mapping */
    CHECK(cb_zip_find(&z, "a/two") && !cb_zip_find(&z, "a/three"));
    cb_zip_close(&z);
    /* Every truncation fails cleanly. */
    for (size_t cut = 0; cut < len; cut += 7) CHECK(cb_zip_open(buf, cut, "mem", &z) != CB_OK);
    /* A flipped data byte fails the CRC. */
    unsigned char *bad = malloc(len);
    memcpy(bad, buf, len);
    const unsigned char *hit = memmem(buf, len, text, strlen(text));
    CHECK(hit != NULL);
    size_t at = hit ? (size_t)(hit - buf) : 0;
    memcpy(bad, buf, len);
    bad[at] ^= 1;
    CHECK_OK(cb_zip_open(bad, len, "mem", &z));
    e = cb_zip_find(&z, "a/one");
    CHECK(e && cb_zip_read(&z, e, SIZE_MAX, &data, &owned) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "CRC") != NULL);
    cb_zip_close(&z);
    free(bad);
    free(buf);
}

/* Protocol-2 pickle of OrderedDict{"w": tensor(storage "0", offset, size, stride)}. */
static size_t tensor_pickle(unsigned char *p, const char *global, int offset, int rows, int cols, int s0, int s1)
{
    size_t n = 0;
#define B(...) do { const unsigned char b_[] = {__VA_ARGS__}; memcpy(p + n, b_, sizeof b_); n += sizeof b_; } while (0)
#define S(str) do { memcpy(p + n, str, strlen(str)); n += strlen(str); } while (0)
    B(0x80, 2, 'c'); S("collections\nOrderedDict\n"); B(')', 'R', '(');
    B('X', 1, 0, 0, 0, 'w');
    B('c'); S(global); B('(', '(');
    B('X', 7, 0, 0, 0); S("storage"); B('c'); S("torch\nFloatStorage\n");
    B('X', 1, 0, 0, 0, '0', 'X', 3, 0, 0, 0); S("cpu"); B('K', 12, 't', 'Q');
    B('K', (unsigned char)offset, 'K', (unsigned char)rows, 'K', (unsigned char)cols, 0x86);
    B('K', (unsigned char)s0, 'K', (unsigned char)s1, 0x86, 0x89);
    B('c'); S("collections\nOrderedDict\n"); B(')', 'R', 't', 'R', 'u', '.');
#undef B
#undef S
    return n;
}

TEST(state_dict_honours_offset_and_stride)
{
    float storage[12];
    for (int i = 0; i < 12; i++) storage[i] = (float)i;
    unsigned char pkl[512];
    /* A transposed view: offset 1, size [3,2], stride [1,4] -> rows (1,5), (2,6), (3,7). */
    size_t plen = tensor_pickle(pkl, "torch._utils\n_rebuild_tensor_v2\n", 1, 3, 2, 1, 4);
    size_t len;
    unsigned char *pt = make_pt(pkl, plen, storage, 12, &len);
    cb_tensor_list l;
    CHECK_OK(cb_torch_parse(pt, len, "mem.pt", &l));
    CHECK(l.count == 1 && l.items[0].ndim == 2 && l.items[0].shape[0] == 3 && l.items[0].shape[1] == 2);
    const float want[6] = {1, 5, 2, 6, 3, 7};
    if (l.count == 1) CHECK(memcmp(l.items[0].data, want, sizeof want) == 0);
    cb_tensor_list_free(&l);
    free(pt);
    /* A view reaching past its storage is refused. */
    plen = tensor_pickle(pkl, "torch._utils\n_rebuild_tensor_v2\n", 7, 3, 2, 1, 4); /* reaches 13 */
    pt = make_pt(pkl, plen, storage, 12, &len);
    CHECK(cb_torch_parse(pt, len, "mem.pt", &l) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "addresses element") != NULL);
    free(pt);
}

TEST(state_dict_refuses_code)
{
    float storage[12] = {0};
    unsigned char pkl[512];
    size_t plen = tensor_pickle(pkl, "posix\nsystem\n", 0, 3, 2, 2, 1), len;
    unsigned char *pt = make_pt(pkl, plen, storage, 12, &len);
    cb_tensor_list l;
    CHECK(cb_torch_parse(pt, len, "evil.pt", &l) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "posix.system") && strstr(cb_last_error(), "refused"));
    free(pt);
    /* Opcodes outside the subset (here INST, which calls a class) are refused. */
    const unsigned char inst[] = {0x80, 2, 'i', 'o', 's', '\n', 's', 'y', 's', 't', 'e', 'm', '\n', '.'};
    pt = make_pt(inst, sizeof inst, storage, 12, &len);
    CHECK(cb_torch_parse(pt, len, "evil.pt", &l) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "outside the state-dict subset") != NULL);
    free(pt);
    /* Memo references to nothing, a stack left empty, truncation. */
    const unsigned char *bad[] = {(const unsigned char *)"\x80\x02h\x05.", (const unsigned char *)"\x80\x02.",
                                  (const unsigned char *)"\x80\x02X\xff\xff\xff\x7f", (const unsigned char *)"\x80\x02(t"};
    size_t bad_len[] = {5, 3, 7, 4};
    for (int i = 0; i < 4; i++) {
        pt = make_pt(bad[i], bad_len[i], storage, 12, &len);
        CHECK(cb_torch_parse(pt, len, "bad.pt", &l) == CB_ERR_FORMAT);
        free(pt);
    }
}

TEST(state_dict_write_read_round_trip)
{
    cb_model *m;
    CHECK_OK(cb_model_create("lenet5", &m));
    cb_model_init(m, 7);
    cb_tensor_list a = {0}, b;
    CHECK_OK(cb_graph_params_to_list(&m->graph, &a));
    const char *path = tmp("lenet5.pt");
    CHECK_OK(cb_torch_write(path, &a));
    cb_file_kind kind;
    CHECK_OK(cb_file_kind_read(path, &kind));
    CHECK(kind == CB_FILE_TORCH_ZIP);
    CHECK_OK(cb_torch_read(path, &b));
    CHECK(a.count == b.count);
    for (int i = 0; i < a.count && i < b.count; i++) {
        CHECK(strcmp(a.items[i].name, b.items[i].name) == 0);
        CHECK(memcmp(a.items[i].data, b.items[i].data, (size_t)cb_tensor_numel(&a.items[i]) * 4) == 0);
    }
    cb_tensor_list_free(&a);
    cb_tensor_list_free(&b);
    cb_model_free(m);
}

TEST(params_load_by_name_then_by_order)
{
    cb_model *m, *n;
    CHECK_OK(cb_model_create("lenet5", &m));
    CHECK_OK(cb_model_create("lenet5", &n));
    cb_model_init(m, 3);
    cb_tensor_list l = {0};
    CHECK_OK(cb_graph_params_to_list(&m->graph, &l));
    cb_param_match how;
    CHECK_OK(cb_graph_params_load(&n->graph, &l, &how));
    CHECK(how == CB_MATCH_BY_NAME);
    /* nn.Sequential names: loads by order, same values. */
    for (int i = 0; i < l.count; i++) snprintf(l.items[i].name, CB_MAX_NAME, "%d.%s", i, i % 2 ? "bias" : "weight");
    cb_model_init(n, 4);
    CHECK_OK(cb_graph_params_load(&n->graph, &l, &how));
    CHECK(how == CB_MATCH_BY_ORDER);
    CHECK(memcmp(m->graph.params, n->graph.params, m->graph.n_params * sizeof(float)) == 0);
    /* One tensor too few: neither matches; the message lists what is missing. */
    l.count--;
    float before = n->graph.params[0];
    CHECK(cb_graph_params_load(&n->graph, &l, &how) == CB_ERR_NOT_FOUND);
    CHECK(strstr(cb_last_error(), "conv1.weight") && strstr(cb_last_error(), "10 parameters"));
    CHECK(n->graph.params[0] == before); /* nothing changed */
    l.count++;
    /* Same count, a swapped shape: refused, naming the position. */
    int64_t t0 = l.items[0].shape[0];
    l.items[0].shape[0] = l.items[0].shape[1], l.items[0].shape[1] = t0;
    CHECK(cb_graph_params_load(&n->graph, &l, &how) == CB_ERR_NOT_FOUND);
    CHECK(strstr(cb_last_error(), "position 0") != NULL);
    cb_tensor_list_free(&l);
    cb_model_free(m);
    cb_model_free(n);
}

TEST(npy_round_trip_and_bad_files)
{
    float v[6] = {1, 2, 3, 4, 5, 6.5f};
    cb_tensor t = {.dtype = CB_F32, .ndim = 2, .shape = {2, 3}, .data = v}, r;
    const char *path = tmp("x.npy");
    CHECK_OK(cb_npy_write(path, &t));
    CHECK_OK(cb_npy_read(path, &r));
    CHECK(r.ndim == 2 && r.shape[0] == 2 && r.shape[1] == 3 && r.dtype == CB_F32);
    if (r.data) CHECK(memcmp(r.data, v, sizeof v) == 0);
    cb_tensor_free(&r);
    size_t len = 0;
    unsigned char *buf = slurp(path, &len);
    CHECK(cb_npy_parse(buf, len - 1, "cut.npy", &r) == CB_ERR_FORMAT); /* data shorter than the shape */
    for (size_t cut = 0; cut < 80; cut += 9) CHECK(cb_npy_parse(buf, cut, "cut.npy", &r) != CB_OK);
    char *descr = memmem(buf, len, "<f4", 3);
    CHECK(descr != NULL); /* the patch below must happen, or the check means nothing */
    if (descr) {
        descr[1] = 'c'; /* complex: not read */
        CHECK(cb_npy_parse(buf, len, "c.npy", &r) == CB_ERR_UNSUPPORTED);
    }
    free(buf);
}

/* A version 1.0 .npy file from a header dict text: padded with spaces and
 * a newline to a 64-byte boundary unless raw (then taken as it is), then
 * `data` zero bytes. */
static size_t npy_file(unsigned char *f, size_t cap, const char *dict, size_t data, int raw)
{
    size_t h = strlen(dict), total = raw ? h : (10 + h + 1 + 63) / 64 * 64 - 10;
    if (10 + total + data > cap) return 0;
    memcpy(f, "\x93NUMPY\x01\x00", 8);
    f[8] = (unsigned char)total;
    f[9] = (unsigned char)(total >> 8);
    memcpy(f + 10, dict, h);
    if (!raw) {
        memset(f + 10 + h, ' ', total - h - 1);
        f[10 + total - 1] = '\n';
    }
    memset(f + 10 + total, 0, data);
    return 10 + total + data;
}

/* Headers that numpy and a loose reader would read differently, or that no
 * writer makes: each refused, naming the file. */
TEST(npy_refuses_ambiguous_headers)
{
    static const struct { const char *what, *dict; size_t data; cb_status want; } cases[] = {
        {"shape twice", "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'shape': (3,), }", 8, CB_ERR_FORMAT},
        {"descr twice", "{'descr': '<f4', 'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", 8,
         CB_ERR_FORMAT},
        {"fortran_order twice", "{'descr': '<f4', 'fortran_order': True, 'fortran_order': False, 'shape': (2,), }",
         8, CB_ERR_FORMAT},
        {"unknown key", "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'order': 'C', }", 8, CB_ERR_FORMAT},
        {"key hidden in a value", "{'descr': '<f4', 'fortran_order': False, 'x': \"'shape': (2,)\", 'shape': (3,)}",
         12, CB_ERR_FORMAT},
        {"text after the dict", "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } junk", 8, CB_ERR_FORMAT},
        {"a second dict", "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }{}", 8, CB_ERR_FORMAT},
        {"(2) is not a tuple", "{'descr': '<f4', 'fortran_order': False, 'shape': (2), }", 8, CB_ERR_FORMAT},
        {"leading zero", "{'descr': '<f4', 'fortran_order': False, 'shape': (02,), }", 8, CB_ERR_FORMAT},
        {"signed dimension", "{'descr': '<f4', 'fortran_order': False, 'shape': (+2,), }", 8, CB_ERR_FORMAT},
        {"negative dimension", "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8, CB_ERR_FORMAT},
        {"fortran_order not a bool", "{'descr': '<f4', 'fortran_order': Falsely, 'shape': (2,), }", 8,
         CB_ERR_FORMAT},
        {"fortran_order a string", "{'descr': '<f4', 'fortran_order': 'False', 'shape': (2,), }", 8, CB_ERR_FORMAT},
        {"fortran_order True", "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16, CB_ERR_UNSUPPORTED},
        {"missing fortran_order", "{'descr': '<f4', 'shape': (2,), }", 8, CB_ERR_FORMAT},
        {"shape product overflows", "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, "
         "4294967296), }", 16, CB_ERR_FORMAT},
        {"data longer than the shape", "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 12, CB_ERR_FORMAT},
        {"data shorter than the shape", "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 4, CB_ERR_FORMAT},
    };
    unsigned char f[1024];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = npy_file(f, sizeof f, cases[i].dict, cases[i].data, 0);
        cb_tensor t;
        cb_status s = cb_npy_parse(f, n, "amb.npy", &t);
        if (s != cases[i].want || !strstr(cb_last_error(), "amb.npy")) {
            fprintf(stderr, "  %s: got %d (%s), wanted %d\n", cases[i].what, s, cb_last_error(), cases[i].want);
            test_failures++;
        }
        if (s == CB_OK) cb_tensor_free(&t);
    }
    /* The padding: spaces then one newline, the data on a 16-byte boundary. */
    const char *d = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
    char raw[128];
    size_t h = strlen(d);
    cb_tensor t;
    snprintf(raw, sizeof raw, "%s%*s", d, (int)(118 - h - 10), "\n"); /* 10 + 108 = 118: not a multiple of 16 */
    size_t n = npy_file(f, sizeof f, raw, 8, 1);
    CHECK(cb_npy_parse(f, n, "pad.npy", &t) == CB_ERR_FORMAT && strstr(cb_last_error(), "16-byte"));
    snprintf(raw, sizeof raw, "%s%*s", d, (int)(128 - h - 10), " "); /* aligned, but no final newline */
    n = npy_file(f, sizeof f, raw, 8, 1);
    CHECK(cb_npy_parse(f, n, "pad.npy", &t) == CB_ERR_FORMAT);
    snprintf(raw, sizeof raw, "%s%*s", d, (int)(128 - h - 10), "\n"); /* aligned to 16 (numpy before 1.14) */
    n = npy_file(f, sizeof f, raw, 8, 1);
    CHECK_OK(cb_npy_parse(f, n, "pad.npy", &t));
    CHECK(t.ndim == 1 && t.shape[0] == 2);
    cb_tensor_free(&t);
    /* Found by fuzzing: a header ending in a digit, read past its end. */
    const char *cut = "{'descr': '<i8', 'fortran_order': False, 'shape': (0,8"; /* 10 + 54 = 64 */
    n = npy_file(f, sizeof f, cut, 0, 1);
    unsigned char *exact = malloc(n); /* so that the sanitizers see a read past the end */
    memcpy(exact, f, n);
    CHECK(strlen(cut) == 54 && cb_npy_parse(exact, n, "cut.npy", &t) == CB_ERR_FORMAT);
    free(exact);
    /* Found by fuzzing: an over-long shape entry at the very end of the
     * header was quoted with %.20s, reading past the buffer. */
    const char *longdim = "           {'shape': (1234567890123456"; /* 10 + 38 = 48 */
    n = 10 + strlen(longdim);
    exact = malloc(n);
    memcpy(exact, "\x93NUMPY\x01\x00\x26\x00", 10);
    memcpy(exact + 10, longdim, n - 10);
    CHECK(cb_npy_parse(exact, n, "long.npy", &t) == CB_ERR_FORMAT &&
          strstr(cb_last_error(), "entry 1234567890123456 is too large"));
    free(exact);
    n = npy_file(f, sizeof f, d, 8, 0);
    f[7] = 1; /* version 1.1 does not exist */
    CHECK(cb_npy_parse(f, n, "v11.npy", &t) == CB_ERR_UNSUPPORTED);
    /* What numpy writes, in its variants, still reads. */
    const char *fine[] = {"{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
                          "{'shape': (1, 2,), 'fortran_order': False, 'descr': '<f4'}",
                          "{\"descr\": \"<i8\", \"fortran_order\": False, \"shape\": (1,)}"};
    size_t data[] = {8, 8, 8};
    for (int i = 0; i < 3; i++) {
        n = npy_file(f, sizeof f, fine[i], data[i], 0);
        CHECK_OK(cb_npy_parse(f, n, "fine.npy", &t));
        cb_tensor_free(&t);
    }
}

/* PyTorch's load_state_dict is strict by default: tensors that the model
 * has no parameter for are refused, not silently dropped. */
TEST(params_load_refuses_extra_tensors_unless_non_strict)
{
    cb_model *m, *n;
    CHECK_OK(cb_model_create("lenet5", &m));
    CHECK_OK(cb_model_create("lenet5", &n));
    cb_model_init(m, 3);
    cb_tensor_list l = {0};
    CHECK_OK(cb_graph_params_to_list(&m->graph, &l));
    int64_t one = 1, sh[1] = {3};
    float extra[3] = {1, 2, 3};
    CHECK_OK(cb_tensor_list_add(&l, "bn.num_batches_tracked", CB_I64, 0, NULL, &one)); /* PyTorch's: ignored */
    cb_param_match how;
    CHECK_OK(cb_graph_params_load(&n->graph, &l, &how));
    CHECK(how == CB_MATCH_BY_NAME);
    CHECK_OK(cb_tensor_list_add(&l, "head.weight", CB_F32, 1, sh, extra));
    cb_model_init(n, 4);
    float before = n->graph.params[0];
    CHECK(cb_graph_params_load(&n->graph, &l, &how) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "head.weight") && strstr(cb_last_error(), "--non-strict") &&
          !strstr(cb_last_error(), "num_batches_tracked"));
    CHECK(n->graph.params[0] == before); /* nothing changed */
    cb_param_extra x;
    CHECK_OK(cb_graph_params_load_ex(&n->graph, &l, 0, &how, &x));
    CHECK(x.count == 1 && strcmp(x.names, "head.weight") == 0);
    CHECK(memcmp(m->graph.params, n->graph.params, m->graph.n_params * sizeof(float)) == 0);
    /* Loaded by order, an integer tensor left over is extra too. */
    free(l.items[--l.count].data);
    for (int i = 0; i < 10; i++) snprintf(l.items[i].name, CB_MAX_NAME, "%d.%s", i, i % 2 ? "bias" : "weight");
    snprintf(l.items[10].name, CB_MAX_NAME, "step");
    CHECK(cb_graph_params_load(&n->graph, &l, &how) == CB_ERR_FORMAT && strstr(cb_last_error(), "step"));
    CHECK_OK(cb_graph_params_load_ex(&n->graph, &l, 0, &how, &x));
    CHECK(how == CB_MATCH_BY_ORDER && x.count == 1 && strcmp(x.names, "step") == 0);
    /* Through a file: the model-level loaders are strict too. */
    cb_tensor_list_free(&l);
    l = (cb_tensor_list){0};
    CHECK_OK(cb_graph_params_to_list(&m->graph, &l));
    CHECK_OK(cb_tensor_list_add(&l, "head.weight", CB_F32, 1, sh, extra));
    const char *path = tmp("extra.safetensors");
    CHECK_OK(cb_safetensors_write(path, &l, NULL));
    cb_model *o = NULL;
    cb_load_info info;
    CHECK(cb_model_load("lenet5", path, 0, &o, &info) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), path) && strstr(cb_last_error(), "head.weight"));
    CHECK_OK(cb_model_load_ex("lenet5", path, 0, 0, &o, &info));
    CHECK(info.extra.count == 1);
    cb_model_free(o);
    cb_tensor_list_free(&l);
    cb_model_free(m);
    cb_model_free(n);
}

/* Runs a model on the same batch and returns its outputs (malloc'd). */
static float *forward(cb_model *m, const float *x, int batch)
{
    cb_exec *ex;
    CHECK_OK(cb_exec_create(&m->graph, batch, 0, CB_KERNELS_FAST, &ex));
    int64_t in = cb_node_numel(&m->graph.nodes[m->input]), out = cb_node_numel(&m->graph.nodes[m->graph.output]);
    memcpy(cb_exec_value(ex, m->input), x, (size_t)(batch * in) * sizeof(float));
    CHECK_OK(cb_exec_forward(ex, batch));
    float *y = malloc((size_t)(batch * out) * sizeof(float));
    memcpy(y, cb_exec_value(ex, m->graph.output), (size_t)(batch * out) * sizeof(float));
    cb_exec_free(ex);
    return y;
}

TEST(onnx_export_import_round_trip)
{
    /* VGG-16 exercises BatchNormalization (running statistics set away
     * from their initial values) and dropout (exported as Identity). */
    const char *names[] = {"lenet1", "lenet5", "vgg16"};
    for (int k = 0; k < 3; k++) {
        cb_model *m, *o;
        CHECK_OK(cb_model_create(names[k], &m));
        cb_model_init(m, 11);
        for (int i = 0; i < m->graph.count; i++) /* give running statistics non-trivial values */
            if (m->graph.nodes[i].op == CB_OP_PARAM && m->graph.nodes[i].buffer) {
                float *p = cb_graph_param_data(&m->graph, i);
                for (int64_t j = 0; j < cb_node_numel(&m->graph.nodes[i]); j++) p[j] = 0.5f + 0.01f * (float)(j % 7);
            }
        const char *path = tmp("model.onnx");
        CHECK_OK(cb_onnx_export(m, path));
        CHECK_OK(cb_onnx_load(path, 1, &o));
        if (!o) { cb_model_free(m); continue; }
        CHECK(o->classes == 10 && o->n_inputs == 1 && o->fixed_batch == 0);
        int64_t per = cb_node_numel(&m->graph.nodes[m->input]);
        float *x = malloc((size_t)(3 * per) * sizeof *x);
        for (int64_t i = 0; i < 3 * per; i++) x[i] = (float)((i * 37) % 101) / 101.0f;
        float *a = forward(m, x, 3), *b = forward(o, x, 3);
        CHECK(memcmp(a, b, 30 * sizeof(float)) == 0); /* same graph, same kernels: identical */
        free(x);
        free(a);
        free(b);
        cb_model_free(o);
        cb_model_free(m);
    }
}

/* A small recurrent classifier: ids [5] -> embedding 20 x 4 -> LSTM / GRU /
 * GRU-rb hidden 3 -> last step -> dense 3 -> 1 -> sigmoid. */
static cb_model *small_rnn(int kind)
{
    cb_model *m = calloc(1, sizeof *m);
    snprintf(m->name, sizeof m->name, "small-rnn");
    m->labels = -1;
    m->classes = 1;
    cb_graph *g = &m->graph;
    cb_graph_init(g);
    int64_t t[1] = {5};
    m->input = cb_graph_input(g, "input", 1, t);
    int h = cb_graph_embedding(g, "embedding", m->input, 20, 4);
    h = kind == 0 ? cb_graph_lstm(g, "rnn", h, 3) : cb_graph_gru(g, "rnn", h, 3, kind == 2);
    h = cb_graph_linear(g, "fc", cb_graph_last_step(g, h), 1, 1);
    g->output = cb_graph_unary(g, CB_OP_SIGMOID, h);
    m->n_inputs = m->n_outputs = 1;
    m->inputs[0] = m->input;
    m->outputs[0] = g->output;
    CHECK_OK(cb_graph_finalize(g));
    cb_model_init(m, 5);
    return m;
}

TEST(onnx_recurrent_round_trip)
{
    /* Gate reordering on export and back on import must give the same
     * function; the parameters come back under their canonical names. */
    float x[3 * 5];
    for (int i = 0; i < 15; i++) x[i] = (float)((i * 7) % 20);
    for (int kind = 0; kind < 3; kind++) {
        cb_model *m = small_rnn(kind), *o = NULL;
        const char *path = tmp("rnn.onnx");
        CHECK_OK(cb_onnx_export(m, path));
        CHECK_OK(cb_onnx_load(path, 0, &o));
        if (!o) { cb_model_free(m); continue; }
        float *a = forward(m, x, 3), *b = forward(o, x, 3);
        CHECK(memcmp(a, b, 3 * sizeof(float)) == 0);
        CHECK(a[0] != a[1] || a[1] != a[2]); /* the inputs matter */
        cb_tensor_list pm = {0}, po = {0};
        CHECK_OK(cb_graph_params_to_list(&m->graph, &pm));
        CHECK_OK(cb_graph_params_to_list(&o->graph, &po));
        const char *names[] = {"embedding.weight", "rnn.weight_ih_l0", "rnn.weight_hh_l0", "rnn.bias_ih_l0",
                               "rnn.bias_hh_l0"};
        for (int k = 0; k < 5; k++) {
            const cb_tensor *u = cb_tensor_list_find(&pm, names[k]), *v = cb_tensor_list_find(&po, names[k]);
            CHECK(u && v && cb_tensor_numel(u) == cb_tensor_numel(v) &&
                  memcmp(u->data, v->data, (size_t)cb_tensor_numel(u) * sizeof(float)) == 0);
        }
        /* a graph node of the other kind of GRU would compute something else */
        for (int i = 0; kind > 0 && i < o->graph.count; i++)
            if (o->graph.nodes[i].op == CB_OP_GRU) CHECK(o->graph.nodes[i].reset_before == (kind == 2));
        cb_tensor_list_free(&pm);
        cb_tensor_list_free(&po);
        free(a);
        free(b);
        cb_model_free(o);
        cb_model_free(m);
    }
}

TEST(onnx_rejects_bad_graphs)
{
    cb_model *m, *o = NULL;
    CHECK_OK(cb_model_create("lenet1", &m));
    const char *path = tmp("l1.onnx");
    CHECK_OK(cb_onnx_export(m, path));
    cb_model_free(m);
    size_t len = 0;
    unsigned char *buf = slurp(path, &len);
    /* Every truncation is refused without a crash. */
    for (size_t cut = 0; cut < len; cut += len / 97 + 1) {
        CHECK(cb_onnx_import(buf, cut, "cut.onnx", 0, &o) != CB_OK);
        CHECK(o == NULL);
    }
    /* An unknown operator: rename Tanh to a 4-letter op crossbind lacks. */
    unsigned char *t = memmem(buf, len, "Tanh", 4);
    CHECK(t != NULL);
    if (t) {
        memcpy(t, "Erfx", 4);
        CHECK(cb_onnx_import(buf, len, "op.onnx", 0, &o) == CB_ERR_UNSUPPORTED);
        CHECK(strstr(cb_last_error(), "Erfx") != NULL);
        memcpy(t, "Tanh", 4);
    }
    free(buf);
}

TEST(half_precision_state_dicts_widen_to_float)
{
    /* HalfStorage with values 1.0 (0x3c00), -2.0 (0xc000), 65504 (0x7bff), 2^-24 (0x0001). */
    const uint16_t halves[4] = {0x3c00, 0xc000, 0x7bff, 0x0001};
    unsigned char pkl[512];
    size_t plen = tensor_pickle(pkl, "torch._utils\n_rebuild_tensor_v2\n", 0, 2, 2, 2, 1);
    unsigned char *h = memmem(pkl, plen, "FloatStorage", 12);
    CHECK(h != NULL);
    /* Same length name: "HalfStorage" is one shorter, so rebuild the GLOBAL. */
    if (h) memcpy(h, "HalfStorage\n", 12), memmove(h + 12, h + 13, plen - (size_t)(h + 13 - pkl)), plen--;
    /* The storage numel (12) must match the 4 halves: patch BININT1 12 -> 4. */
    unsigned char *k = memmem(pkl, plen, "cpu\x4b\x0c", 5);
    CHECK(k != NULL);
    if (k) k[4] = 4;
    cb_zip_writer *w;
    unsigned char *buf;
    size_t len;
    CHECK_OK(cb_zip_writer_create(&w));
    CHECK_OK(cb_zip_writer_add(w, "m/data.pkl", pkl, plen));
    CHECK_OK(cb_zip_writer_add(w, "m/data/0", halves, sizeof halves));
    CHECK_OK(cb_zip_writer_finish(w, &buf, &len));
    cb_tensor_list l;
    CHECK_OK(cb_torch_parse(buf, len, "half.pt", &l));
    if (l.count == 1) {
        const float *f = l.items[0].data;
        CHECK(l.items[0].dtype == CB_F32 && f[0] == 1.0f && f[1] == -2.0f && f[2] == 65504.0f &&
              f[3] == 5.9604644775390625e-08f);
    }
    cb_tensor_list_free(&l);
    free(buf);
}

/* Found by fuzzing: a header without 'shape' used to do pointer arithmetic on NULL. */
TEST(npy_header_without_shape_is_refused)
{
    const char hdr[] = "\x93NUMPY\x01\x00\x1a\x00{'descr': '<f4', 'a': 1}\n";
    cb_tensor t;
    CHECK(cb_npy_parse((const unsigned char *)hdr, sizeof hdr - 1, "noshape.npy", &t) == CB_ERR_FORMAT);
}

/* Found by fuzzing: an IDX header promising 2^40 bytes made the reader
 * allocate them before reading; now memory follows the data read. */
TEST(idx_header_cannot_demand_huge_memory)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s/idxhuge", test_tmpdir());
    mkdir(dir, 0700);
    const unsigned char images[] = {0, 0, 8, 3, 0, 0x0f, 0x42, 0x40, 0, 0, 0x10, 0, 0, 0, 0x10, 0, 1, 2, 3};
    const unsigned char labels[] = {0, 0, 8, 1, 0, 0, 0, 1, 3};
    char path[700];
    snprintf(path, sizeof path, "%s/t10k-images-idx3-ubyte", dir);
    FILE *f = fopen(path, "wb");
    fwrite(images, 1, sizeof images, f);
    fclose(f);
    snprintf(path, sizeof path, "%s/t10k-labels-idx1-ubyte", dir);
    f = fopen(path, "wb");
    fwrite(labels, 1, sizeof labels, f);
    fclose(f);
    cb_dataset d;
    CHECK(cb_mnist_load(dir, 0, 0, &d) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "truncated") != NULL);
}

/* ONNX external data: the file a descriptor holds is checked where it
 * actually lies, so a link that changes between the path's check and the
 * open cannot lead the reader out of the model's directory. */
TEST(external_data_checks_the_opened_file)
{
    char dir[PATH_MAX], p[PATH_MAX + 64], opened[PATH_MAX];
    const char *made = tmp("ext-model");
    CHECK(mkdir(made, 0700) == 0 && mkdir(tmp("ext-model2"), 0700) == 0 && mkdir(tmp("ext-out"), 0700) == 0);
    CHECK(realpath(made, dir) != NULL);
    const char *files[] = {"ext-model/in.bin", "ext-model2/sibling.bin", "ext-out/out.bin"};
    for (int k = 0; k < 3; k++) {
        FILE *f = fopen(tmp(files[k]), "wb");
        CHECK(f != NULL);
        if (f) fclose(f);
    }
    snprintf(p, sizeof p, "%s/link.bin", dir);
    CHECK(symlink(tmp("ext-out/out.bin"), p) == 0);
    int fd = open(tmp("ext-model/in.bin"), O_RDONLY);
    CHECK(fd >= 0 && cb_fd_inside_dir(fd, dir, opened, sizeof opened) == 1);
    close(fd);
    fd = open(p, O_RDONLY); /* the link, followed by open */
    CHECK(fd >= 0 && cb_fd_inside_dir(fd, dir, opened, sizeof opened) == 0);
    CHECK(strstr(opened, "ext-out/out.bin") != NULL);
    close(fd);
    fd = open(tmp("ext-model2/sibling.bin"), O_RDONLY); /* a directory whose name extends the model's */
    CHECK(fd >= 0 && cb_fd_inside_dir(fd, dir, opened, sizeof opened) == 0);
    close(fd);
}
