/* The convolution kernels, named, with the rule under which each runs:
 * one list, best first, that every choice of a convolution kernel reads
 * (the executor's plan, once per node and sample count; the ops-level
 * cb_conv2d_fwd_fast / _bwd_fast). `crossbind plan --kernels` prints it.
 * The figures in the comments are the measurements that ordered the list. */
#include <stddef.h>
#include <string.h>
#include "crossbind/exec.h"
#include "ops.h"

static int fast_level(const cb_conv_ctx *c) { return c->level != CB_KERNELS_REFERENCE; }
static int dilated(const cb_conv_ctx *c) { return c->s.dh > 1 || c->s.dw > 1; }
/* The specialised kernels take neither groups nor dilation. */
static int ungrouped_fast(const cb_conv_ctx *c) { return c->groups <= 1 && !dilated(c) && fast_level(c); }

/* Dilated convolutions (rare in the models studied) run through its
 * direct loops too, at the levels above reference. */
static int grouped_ok(const cb_conv_ctx *c) { return c->groups > 1 || (dilated(c) && fast_level(c)); }
static int ref_ok(const cb_conv_ctx *c) { return c->groups <= 1 && c->level == CB_KERNELS_REFERENCE; }
/* The fusion rewrite gave it its activation and a 2x2 max pooling, which
 * only this kernel computes (exec.c plan_fusion). */
static int flat_pool_ok(const cb_conv_ctx *c) { return ungrouped_fast(c) && c->pool_fused; }
/* Training only: inference takes the sliced kernels below. */
static int nb_fwd_ok(const cb_conv_ctx *c) { return ungrouped_fast(c) && c->training && cb_conv2d_fwd_nb_ok(&c->s); }
/* oneDNN's buffers are one per executor: never inside a slice. */
static int onednn_fwd_ok(const cb_conv_ctx *c)
{
    return ungrouped_fast(c) && (c->dnnl & CB_DNNL_FWD) && !c->in_parallel;
}
static int onednn_bwd_ok(const cb_conv_ctx *c) { return ungrouped_fast(c) && (c->dnnl & CB_DNNL_BWD); }
static int dense_ok(const cb_conv_ctx *c) { return ungrouped_fast(c) && cb_conv2d_dense_ok(&c->s); }
/* The flattened-row kernel does better than the direct one on the LeNets'
 * few-channel layers: per batch of 128 at 2 threads, LeNet-1's first layer
 * 0.19-0.27 -> 0.18-0.25 ms, its second 0.29-0.50 -> 0.27-0.38 ms; in
 * training per 12,800 samples, LeNet-1's first layer with its tanh 47-49 ->
 * 40-41 ms. */
static int flat_ok(const cb_conv_ctx *c) { return ungrouped_fast(c) && cb_conv2d_flat_ok(&c->s); }
static int direct_ok(const cb_conv_ctx *c) { return ungrouped_fast(c) && cb_conv2d_direct_pays(&c->s); }
static int whole_window_ok(const cb_conv_ctx *c) { return ungrouped_fast(c) && cb_conv2d_whole_window(&c->s); }
/* Samples in the vector lanes: the second layer's backward per 12,800
 * samples, LeNet-1 87-100 -> 57-66 ms (against the flat data and direct
 * weight gradients), LeNet-5 139-156 -> 107-121 ms (against oneDNN's data
 * gradient and the direct weight gradient). */
static int nb_bwd_ok(const cb_conv_ctx *c) { return ungrouped_fast(c) && cb_conv2d_bwd_nb_ok(&c->s); }
static int dgrad_flat_ok(const cb_conv_ctx *c) { return ungrouped_fast(c) && cb_conv2d_dgrad_own(&c->s); }
/* The first layer's backward per 12,800 samples: LeNet-1 75-81 -> 33 ms
 * against oneDNN, LeNet-5 83 -> 60 ms. */
static int wgrad_direct_ok(const cb_conv_ctx *c) { return ungrouped_fast(c) && cb_conv2d_wgrad_direct_ok(&c->s); }
static int small_ok(const cb_conv_ctx *c) { return ungrouped_fast(c) && cb_conv2d_small_bwd_ok(&c->s); }
static int im2col_ok(const cb_conv_ctx *c) { return ungrouped_fast(c); }

/* Best first. A kernel with CB_KPASS_JOINT computes both gradients in one
 * call, so where it takes the weight gradient it takes the data gradient
 * too. */
static const cb_conv_kernel_desc kernels[] = {
    {CB_CK_GROUPED, "grouped", "cpu", CB_KPASS_FWD | CB_KPASS_DGRAD | CB_KPASS_WGRAD | CB_KPASS_JOINT, grouped_ok,
     "groups > 1 (depthwise too), at every level; dilated, above reference"},
    {CB_CK_REF, "reference", "cpu", CB_KPASS_FWD | CB_KPASS_DGRAD | CB_KPASS_WGRAD | CB_KPASS_JOINT, ref_ok,
     "level reference"},
    {CB_CK_FLAT_POOL, "flat_pool", "cpu", CB_KPASS_FWD, flat_pool_ok,
     "its activation and 2x2 max pooling fused into it"},
    {CB_CK_NB_FWD, "nb_fwd", "cpu", CB_KPASS_FWD, nb_fwd_ok, "training, few channels, 16 samples in the lanes"},
    {CB_CK_ONEDNN, "onednn", "cpu", CB_KPASS_FWD, onednn_fwd_ok,
     "oneDNN set up for its forward (cb_dnnl_conv_use), outside a slice"},
    {CB_CK_ONEDNN, "onednn", "cpu", CB_KPASS_DGRAD | CB_KPASS_WGRAD | CB_KPASS_JOINT, onednn_bwd_ok,
     "oneDNN set up for its backward (cb_dnnl_conv_use)"},
    {CB_CK_DENSE, "dense", "cpu", CB_KPASS_FWD | CB_KPASS_DGRAD | CB_KPASS_WGRAD | CB_KPASS_JOINT, dense_ok,
     "every output sees every input (VGG-16's 2x2 layers), 64 samples or more"},
    {CB_CK_FLAT, "flat", "cpu", CB_KPASS_FWD, flat_ok, "stride 1, few channels: flattened rows"},
    {CB_CK_DIRECT, "direct", "cpu", CB_KPASS_FWD, direct_ok, "stride 1, few channels, rows of 6 or more"},
    {CB_CK_WHOLE_WINDOW, "whole_window", "cpu", CB_KPASS_FWD | CB_KPASS_DGRAD | CB_KPASS_WGRAD | CB_KPASS_JOINT,
     whole_window_ok, "the window is the whole unpadded input: a fully connected product"},
    {CB_CK_NB_BWD, "nb_bwd", "cpu", CB_KPASS_DGRAD | CB_KPASS_WGRAD | CB_KPASS_JOINT, nb_bwd_ok,
     "few channels, 16 samples in the lanes"},
    {CB_CK_DGRAD_FLAT, "dgrad_flat", "cpu", CB_KPASS_DGRAD, dgrad_flat_ok, "at most 4 input channels"},
    {CB_CK_WGRAD_DIRECT, "wgrad_direct", "cpu", CB_KPASS_WGRAD, wgrad_direct_ok, "small planes, few channels"},
    {CB_CK_SMALL, "small", "cpu", CB_KPASS_DGRAD | CB_KPASS_WGRAD, small_ok,
     "one sample's lowered input fits in cache: per-thread lowering"},
    {CB_CK_IM2COL, "im2col", "cpu", CB_KPASS_FWD | CB_KPASS_DGRAD | CB_KPASS_WGRAD, im2col_ok,
     "anything else: lowered chunks of samples, one SGEMM each"},
};
#define N_KERNELS (int)(sizeof kernels / sizeof kernels[0])

const cb_conv_kernel_desc *cb_conv_kernel_list(int *count)
{
    *count = N_KERNELS;
    return kernels;
}

const char *cb_conv_kernel_name(cb_conv_kernel k)
{
    if (k == CB_CK_NONE) return "none";
    for (int i = 0; i < N_KERNELS; i++)
        if (kernels[i].id == k) return kernels[i].name;
    return "?";
}

/* The first kernel of the context's backend that runs `pass` and supports
 * the context; the list ends with kernels that take anything their level
 * allows, so only a backend without them finds none. */
static const cb_conv_kernel_desc *first(const cb_conv_ctx *c, unsigned pass)
{
    const char *backend = c->backend ? c->backend : "cpu";
    for (int i = 0; i < N_KERNELS; i++)
        if ((kernels[i].passes & pass) && !strcmp(kernels[i].backend, backend) && kernels[i].supports(c))
            return &kernels[i];
    return NULL;
}

cb_conv_kernel cb_conv_select_fwd(const cb_conv_ctx *c)
{
    const cb_conv_kernel_desc *k = first(c, CB_KPASS_FWD);
    return k ? k->id : CB_CK_NONE;
}

cb_conv_bwd_choice cb_conv_select_bwd(const cb_conv_ctx *c, int want_dx)
{
    const cb_conv_kernel_desc *w = first(c, CB_KPASS_WGRAD);
    cb_conv_bwd_choice k = {CB_CK_NONE, w ? w->id : CB_CK_NONE};
    if (want_dx) {
        const cb_conv_kernel_desc *d = w && (w->passes & CB_KPASS_JOINT) ? w : first(c, CB_KPASS_DGRAD);
        k.dgrad = d ? d->id : CB_CK_NONE;
    }
    return k;
}

/* The ops-level fast kernels: a fastmath inference forward and a backward
 * with neither oneDNN nor rewrites. */
static cb_conv_ctx plain_ctx(const cb_conv_shape *s, int training)
{
    return (cb_conv_ctx){.s = *s, .groups = 1, .level = CB_KERNELS_FAST, .training = training};
}

void cb_conv2d_fwd_fast(const cb_conv_shape *s, const float *x, const float *w, const float *b, cb_act act,
                        float *y, float *ws)
{
    cb_conv_ctx c = plain_ctx(s, 0);
    cb_conv2d_fwd_kernel(cb_conv_select_fwd(&c), s, x, w, b, act, y, ws);
}

void cb_conv2d_bwd_fast(const cb_conv_shape *s, const float *x, const float *w, const float *dy,
                        float *dx, float *dw, float *db, float *ws)
{
    cb_conv_ctx c = plain_ctx(s, 1);
    cb_conv2d_bwd_kernels(cb_conv_select_bwd(&c, dx != NULL), s, x, w, dy, dx, dw, db, ws);
}
