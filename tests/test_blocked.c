/* The blocked-layout rewrite of inference (src/graph/blocked.c) and its
 * contract with callers: parameters written between forward passes are
 * used (the weights and the batch normalisation folded into them), and
 * cb_exec_freeze_params keeps the ones the first pass converted; a batch
 * run whole and one run in lanes (chunks side by side, each thread its own
 * primitives) alike. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

enum { MAX_BATCH = 8, OUT = 32 };

/* Two 3x3 convolutions on 16 x 64 x 64 (heavy enough for the rewrite),
 * with a ReLU between them, a batch normalisation (away from the identity)
 * after the second and global pooling last. */
static int build(cb_graph *g, int *x)
{
    const int64_t dims[3] = {16, 64, 64};
    if (cb_graph_init(g) != CB_OK) return -1;
    *x = cb_graph_input(g, "x", 3, dims);
    const int c1 = cb_graph_conv2d(g, "c1", *x, 32, 3, 1, 1, 1);
    const int c2 = cb_graph_conv2d(g, "c2", cb_graph_unary(g, CB_OP_RELU, c1), OUT, 3, 1, 1, 1);
    g->output = cb_graph_global_avgpool(g, cb_graph_batchnorm2d(g, "bn", c2, 1e-5f, 0.1f));
    if (cb_graph_finalize(g) != CB_OK) return -1;
    cb_rng rng;
    cb_rng_seed(&rng, 3);
    cb_graph_init_params(g, &rng);
    static const char *const bn[] = {"bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"};
    for (int k = 0; k < 4; k++) {
        float *v = cb_graph_param_data(g, cb_graph_find(g, bn[k]));
        for (int c = 0; c < OUT; c++) v[c] = k == 3 ? 0.5f + 0.05f * (float)c : 0.3f * sinf((float)(k * OUT + c));
    }
    return 0;
}

static void forward(cb_exec *ex, const cb_graph *g, int x, int batch, float *y)
{
    float *in = cb_exec_value(ex, x);
    for (int i = 0; i < batch * 16 * 64 * 64; i++) in[i] = sinf(0.37f * (float)i);
    CHECK_OK(cb_exec_forward(ex, batch));
    memcpy(y, cb_exec_value(ex, g->output), (size_t)batch * OUT * sizeof *y);
}

static void scale_c2(cb_graph *g, float by)
{
    float *w = cb_graph_param_data(g, cb_graph_find(g, "c2.weight"));
    for (int i = 0; i < OUT * 32 * 9; i++) w[i] *= by;
}

static void shift_bn(cb_graph *g, float by)
{
    float *mean = cb_graph_param_data(g, cb_graph_find(g, "bn.running_mean"));
    for (int c = 0; c < OUT; c++) mean[c] += by;
}

/* At `batch` samples: 2 run whole; 8 in two lanes of 4 where there are
 * two threads or more. */
static void check_rewrite(int batch)
{
    cb_graph g;
    int x = -1;
    CHECK(build(&g, &x) == 0);
    cb_exec *ex = NULL, *ref = NULL, *frozen = NULL;
    CHECK_OK(cb_exec_create(&g, batch, 0, CB_KERNELS_FAST, &ex));
    CHECK_OK(cb_exec_create(&g, batch, 0, CB_KERNELS_REFERENCE, &ref));
    CHECK_OK(cb_exec_create(&g, batch, 0, CB_KERNELS_FAST, &frozen));
    if (!ex || !ref || !frozen) return;
    char *plan = cb_exec_plan_text(ex);
    CHECK(plan != NULL);
    /* Where oneDNN is built in, both convolutions are blocked members, the
     * second with the batch normalisation in its weights; 8 samples on two
     * threads run in lanes. */
    if (plan && strstr(plan, "oneDNN in use")) {
        CHECK(strstr(plan, "nChw") && strstr(plan, " +relu") && strstr(plan, "folded into the weights"));
        const int lanes = strstr(plan, "in lanes over threads") != NULL;
        CHECK(lanes == (batch == MAX_BATCH && cb_get_threads() > 1));
    }
    /* Operations done per sample: Winograd's method (nChw8c builds) does 16
     * products per channel pair and 2x2 block of outputs, 32 x 32 blocks. */
    if (plan && strstr(plan, "winograd F(2x2,3x3)"))
        CHECK(cb_exec_forward_flops_done(ex) == 2.0 * 16 * 32 * 32 * (16 * 32 + 32 * OUT));
    else
        CHECK(cb_exec_forward_flops_done(ex) == cb_graph_forward_flops_done(&g));
    CHECK(cb_exec_forward_flops_done(ref) == cb_graph_forward_flops_done(&g));
    free(plan);
    cb_exec_freeze_params(frozen);
    float y1[MAX_BATCH * OUT], y2[MAX_BATCH * OUT], yr[MAX_BATCH * OUT], yf[MAX_BATCH * OUT];
    forward(ex, &g, x, batch, y1);
    forward(frozen, &g, x, batch, yf);
    CHECK(check_close("first pass, frozen or not", yf, y1, batch * OUT, 0, 0));
    scale_c2(&g, 2.0f);
    forward(ex, &g, x, batch, y2);
    forward(ref, &g, x, batch, yr);
    CHECK(check_close("after writing weights: the reference level's", y2, yr, batch * OUT, 1e-5, 1e-4));
    int changed = 0;
    for (int i = 0; i < batch * OUT; i++) changed |= fabsf(y2[i] - y1[i]) > 1e-4f;
    CHECK(changed);
    forward(frozen, &g, x, batch, yf);
    CHECK(check_close("frozen: the weights of its first pass", yf, y1, batch * OUT, 0, 0));
    /* The batch normalisation's statistics, written between passes. */
    shift_bn(&g, 0.25f);
    float y3[MAX_BATCH * OUT];
    forward(ex, &g, x, batch, y3);
    forward(ref, &g, x, batch, yr);
    CHECK(check_close("after writing the statistics: the reference level's", y3, yr, batch * OUT, 1e-5, 1e-4));
    changed = 0;
    for (int i = 0; i < batch * OUT; i++) changed |= fabsf(y3[i] - y2[i]) > 1e-4f;
    CHECK(changed);
    forward(frozen, &g, x, batch, y3);
    CHECK(check_close("frozen: the statistics of its first pass", y3, y1, batch * OUT, 0, 0));
    cb_exec_free(ex);
    cb_exec_free(ref);
    cb_exec_free(frozen);
    cb_graph_free(&g);
}

TEST(blocked_rewrite_reads_weights_written_between_passes) { check_rewrite(2); }

TEST(blocked_rewrite_in_lanes_reads_weights_written_between_passes) { check_rewrite(MAX_BATCH); }

/* Lanes when the threads change between passes: made for 3 threads (24
 * samples: six chunks of 4), then 2 (15 samples: three chunks of 5, the
 * third lane idle), then 3 again; each pass gives what one thread running
 * the whole batch gives. */
TEST(blocked_lanes_follow_the_thread_count)
{
    enum { BIG = 24 };
    cb_graph g;
    int x = -1;
    CHECK(build(&g, &x) == 0);
    const int was = cb_get_threads();
    cb_exec *lanes = NULL, *whole = NULL;
    cb_set_threads(1);
    CHECK_OK(cb_exec_create(&g, BIG, 0, CB_KERNELS_FAST, &whole));
    cb_set_threads(3);
    CHECK_OK(cb_exec_create(&g, BIG, 0, CB_KERNELS_FAST, &lanes));
    float *a = malloc(BIG * OUT * sizeof *a), *b = malloc(BIG * OUT * sizeof *b);
    const int threads[] = {3, 2, 3}, batches[] = {BIG, 15, BIG};
    for (int k = 0; k < 3 && lanes && whole && a && b; k++) {
        cb_set_threads(threads[k]);
        forward(lanes, &g, x, batches[k], a);
        cb_set_threads(1);
        forward(whole, &g, x, batches[k], b);
        CHECK(check_close("lanes against one thread", a, b, batches[k] * OUT, 1e-6, 1e-5));
    }
    char *plan = lanes ? cb_exec_plan_text(lanes) : NULL;
    if (plan && strstr(plan, "oneDNN in use")) CHECK(strstr(plan, "in lanes over threads") != NULL);
    free(plan);
    free(a), free(b);
    cb_set_threads(was);
    cb_exec_free(lanes);
    cb_exec_free(whole);
    cb_graph_free(&g);
}

/* A zero Pad before a stride-2 depthwise convolution (as Keras' ZeroPadding2D,
 * with a row above too: sides of the padding differ) is folded into the convolution's
 * padding; a Pad of another value, one whose value was asked for at plan
 * time, or one of a plain value computed outside the plan, is not. The outputs are the reference level's either way,
 * and the taps on the folded zeros are not counted as done. */
static int build_padded(cb_graph *g, int *x, int pin_pad)
{
    const int64_t dims[3] = {16, 64, 64}, dw[4] = {32, 1, 3, 3}, w2[4] = {16, 32, 3, 3};
    if (cb_graph_init(g) != CB_OK) return -1;
    *x = cb_graph_input(g, "x", 3, dims);
    const int zeros[4] = {1, 0, 1, 1}, ring[4] = {1, 1, 1, 1}; /* top, left, bottom, right */
    /* zeros around a plain value computed outside the plan: not folded (its
     * buffer's life ends at the Pad's step, before the convolution's) */
    const int p0 = cb_graph_pad(g, cb_graph_unary(g, CB_OP_SIGMOID, *x), ring, 0.0f);
    const int c0 = cb_graph_unary(g, CB_OP_RELU, cb_graph_conv2d(g, "c0", p0, 32, 3, 1, 0, 1));
    const int p1 = cb_graph_pad(g, c0, zeros, 0.0f);
    g->nodes[p1].pinned = pin_pad;
    const cb_window s2 = {.kh = 3, .kw = 3, .sh = 2, .sw = 2}, s1 = {.kh = 3, .kw = 3, .sh = 1, .sw = 1};
    const int c1 = cb_graph_conv2d_grouped(g, "c1", p1, cb_graph_param(g, "c1.weight", 4, dw, CB_INIT_KAIMING_UNIFORM, 9),
                                           -1, &s2, 32);
    const int p2 = cb_graph_pad(g, cb_graph_unary(g, CB_OP_RELU, c1), ring, 0.5f);
    const int c2 = cb_graph_conv2d_with(g, "c2", p2, cb_graph_param(g, "c2.weight", 4, w2, CB_INIT_KAIMING_UNIFORM, 288),
                                        -1, &s1);
    g->output = cb_graph_global_avgpool(g, c2);
    if (cb_graph_finalize(g) != CB_OK) return -1;
    cb_rng rng;
    cb_rng_seed(&rng, 5);
    cb_graph_init_params(g, &rng);
    return p1;
}

static void check_pad_fold(int pin_pad)
{
    enum { B = 2 };
    cb_graph g;
    int x = -1;
    const int p1 = build_padded(&g, &x, pin_pad);
    CHECK(p1 >= 0);
    cb_exec *ex = NULL, *ref = NULL;
    CHECK_OK(cb_exec_create(&g, B, 0, CB_KERNELS_FUSED, &ex));
    CHECK_OK(cb_exec_create(&g, B, 0, CB_KERNELS_REFERENCE, &ref));
    if (!ex || !ref) return;
    char *plan = cb_exec_plan_text(ex);
    CHECK(plan != NULL);
    const int blocked = plan && strstr(plan, "oneDNN in use") && strstr(plan, "nChw");
    const char *folded = plan ? strstr(plan, "zeros folded into the padding of") : NULL;
    /* one Pad folded (the zeros, unless pinned), never the one of 0.5 */
    CHECK(!folded == (!blocked || pin_pad));
    CHECK(!folded || !strstr(folded + 1, "zeros folded into the padding of"));
    /* c1's taps on the folded zeros: 32 channels x (96^2 - 95^2) multiply-adds (a row above, a column right) */
    CHECK(cb_exec_forward_flops_done(ex) == cb_graph_forward_flops_done(&g) - (folded ? 2.0 * 32 * (96 * 96 - 95 * 95) : 0));
    free(plan);
    float y[B * 16], yr[B * 16];
    cb_exec *both[] = {ex, ref};
    for (int k = 0; k < 2; k++) {
        float *in = cb_exec_value(both[k], x);
        for (int i = 0; i < B * 16 * 64 * 64; i++) in[i] = sinf(0.11f * (float)i);
        CHECK_OK(cb_exec_forward(both[k], B));
        memcpy(k ? yr : y, cb_exec_value(both[k], g.output), sizeof y);
    }
    CHECK(check_close("pads folded or not: the reference level's", y, yr, B * 16, 1e-5, 1e-4));
    int by = -1;
    CHECK(cb_exec_materialised(ex, p1, &by) == !folded);
    cb_exec_free(ex);
    cb_exec_free(ref);
    cb_graph_free(&g);
}

TEST(blocked_zero_pad_folds_into_the_convolution) { check_pad_fold(0); }

TEST(blocked_pinned_pad_is_not_folded) { check_pad_fold(1); }
