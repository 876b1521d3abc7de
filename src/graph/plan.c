/* The executor's plan as stable text: how each batch size runs (whole,
 * one chunk, sliced), and per node what runs it, forward and backward,
 * with every convolution's kernel for every sample count it will see.
 * It is read from the tables the executor runs from (exec_internal.h), so
 * it names what runs, not a second guess at it; its SHA-256 identifies the
 * plan in results (run.json, bench). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../core/json.h"
#include "../core/sha256.h"
#include "exec_internal.h"
#include "blocked.h"

#define CB_STR_(x) #x
#define CB_STR(x) CB_STR_(x)

static const char *isa(void)
{
#if defined(__AVX512F__)
    return "avx512";
#elif defined(__AVX2__)
    return "avx2";
#else
    return "generic";
#endif
}

/* "n1-63 flat, n64-128 dense": the runs of equal kernels over the sample
 * counts marked in `used` (1..max). */
static void put_ranges(cb_buf *b, const uint8_t *kernel, const unsigned char *used, int max)
{
    int first = 1;
    for (int n = 1; n <= max; n++) {
        if (!used[n]) continue;
        int end = n;
        while (end + 1 <= max && used[end + 1] && kernel[end + 1] == kernel[n]) end++;
        if (end > n) cb_buf_printf(b, "%sn%d-%d %s", first ? "" : ", ", n, end, cb_conv_kernel_name(kernel[n]));
        else cb_buf_printf(b, "%sn%d %s", first ? "" : ", ", n, cb_conv_kernel_name(kernel[n]));
        first = 0;
        n = end;
    }
}

/* Sample counts forward_range runs with: outside a parallel region
 * (`whole`) and inside one (`sliced`), over batches 1..max; the run modes
 * printed as ranges of equal mode. */
static void put_modes(cb_buf *b, const cb_exec *ex, unsigned char *whole, unsigned char *sliced)
{
    const int max = ex->max_batch;
    int from = 1, prev_threads = 0;
    exec_mode prev = EXEC_WHOLE;
    for (int n = 1; n <= max + 1; n++) {
        int threads = 0;
        exec_mode m = EXEC_WHOLE;
        if (n <= max) {
            m = cb_exec_mode(ex, n, ex->kthreads, &threads);
            if (m == EXEC_SLICED) {
                const int chunk = cb_exec_chunk(ex, n);
                sliced[n < chunk ? n : chunk] = 1;
                if (n % chunk) sliced[n % chunk] = 1;
            } else {
                whole[n] = 1;
            }
        }
        if (n > 1 && (n > max || m != prev || threads != prev_threads)) {
            cb_buf_printf(b, "batches %d-%d: %s\n", from, n - 1,
                          prev == EXEC_WHOLE       ? "the whole batch, threaded kernels"
                          : prev == EXEC_ONE_CHUNK ? "one chunk on the calling thread, single-threaded kernels"
                          : ex->lanes ? "the batch split evenly into chunks of " CB_STR(LANE_CHUNK_MIN) " to "
                                        CB_STR(LANE_CHUNK_MAX) " samples, at least one per thread, in lanes over "
                                        "threads (the blocked steps each lane's own), single-threaded kernels in each"
                          : ex->recurrent ? "chunks of up to " CB_STR(SLICE_SAMPLES) " samples, or one per thread where "
                                            "that is more, over threads, single-threaded kernels in each"
                                          : "chunks of up to " CB_STR(SLICE_SAMPLES) " samples over threads, "
                                            "single-threaded kernels in each");
            from = n;
        }
        prev = m;
        prev_threads = threads;
    }
}

static const char *level_name(const cb_exec *ex) { return cb_level_name(ex->kernels); }

/* The kernel of a node other than a convolution: its op's reference or
 * optimised loops, and for the activations and recurrent gates which math
 * (the approximations of fastmath.h at fastmath, else libm's). Backward
 * passes of activations read the output only and are exact at every level. */
static void put_kernel(cb_buf *b, const cb_exec *ex, cb_op op, int backward)
{
    const char *name = cb_op_name(op);
    const int approx = ex->kernels == CB_KERNELS_FAST;
    if (ex->kernels == CB_KERNELS_REFERENCE) cb_buf_printf(b, "%s.reference", name);
    else if ((op == CB_OP_TANH || op == CB_OP_SIGMOID) && !backward)
        cb_buf_printf(b, "%s.%s", name, approx ? "approx" : "exact");
    else if (op == CB_OP_LSTM || op == CB_OP_GRU) cb_buf_printf(b, "%s.fast, %s gates", name, approx ? "approximate" : "libm");
    else cb_buf_printf(b, "%s.fast", name);
}

/* The node whose forward computes fused node i (plan_fusion). */
static int fused_into(const cb_exec *ex, int i) { return ex->fused[i] == FUSED_POOL ? i - 2 : i - 1; }

int cb_exec_materialised(const cb_exec *ex, int i, int *by)
{
    const cb_graph *g = ex->g;
    *by = -1;
    if (i < 0 || i >= g->count) return 0;
    const cb_node *n = &g->nodes[i];
    if (cb_blk_member(ex->blk, i)) return cb_blk_materialised(ex->blk, i, by);
    /* A value a ReLU overwrites in place (training). */
    for (int k = i + 1; k < g->count; k++)
        if (ex->inplace[k] == i) {
            *by = k;
            return 0;
        }
    /* A convolution computing its activation writes only the activation. */
    if (n->op == CB_OP_CONV2D && i + 1 < g->count && ex->fused[i + 1]) {
        *by = i + 1;
        return 0;
    }
    /* ... and with the pooling after it, in inference only the pooling. */
    if (ex->fused[i] == 1 && i + 1 < g->count && ex->fused[i + 1] == FUSED_POOL && !ex->with_grads) {
        *by = i + 1;
        return 0;
    }
    return n->op != CB_OP_PARAM;
}

static void put_forward(cb_buf *b, const cb_exec *ex, int i, const unsigned char *whole, const unsigned char *sliced)
{
    const cb_graph *g = ex->g;
    const cb_node *n = &g->nodes[i];
    if (n->op == CB_OP_INPUT) {
        cb_buf_printf(b, "input");
    } else if (n->op == CB_OP_FLATTEN) {
        cb_buf_printf(b, "view of node %d", n->in[0]);
    } else if (cb_blk_member(ex->blk, i)) {
        cb_blk_describe(ex->blk, g, i, b);
    } else if (ex->fused[i]) {
        int by;
        cb_buf_printf(b, "by node %d (%s)%s", fused_into(ex, i), g->nodes[fused_into(ex, i)].name,
                      cb_exec_materialised(ex, i, &by) ? "" : ", not materialised");
    } else if (n->op == CB_OP_CONV2D) {
        cb_buf_printf(b, "conv2d");
        if (i + 1 < g->count && ex->fused[i + 1]) cb_buf_printf(b, "+%s", cb_op_name(g->nodes[i + 1].op));
        if (i + 2 < g->count && ex->fused[i + 2] == FUSED_POOL) cb_buf_printf(b, "+%s", cb_op_name(g->nodes[i + 2].op));
        int by;
        cb_buf_printf(b, "%s: ", cb_exec_materialised(ex, i, &by) ? "" : " (its own output not materialised)");
        put_ranges(b, ex->kfwd[i], whole, ex->max_batch);
        int any = 0;
        for (int k = 1; k <= ex->max_batch && !any; k++) any = sliced[k];
        if (any) {
            cb_buf_printf(b, "; in slices ");
            put_ranges(b, ex->kpar[i], sliced, ex->max_batch);
        }
    } else {
        put_kernel(b, ex, n->op, 0);
        if (n->op == CB_OP_SOFTMAX_XENT || n->op == CB_OP_BCE) cb_buf_printf(b, " over the whole batch");
        const int rnn = n->op == CB_OP_LSTM || n->op == CB_OP_GRU, fast = ex->kernels != CB_KERNELS_REFERENCE;
        const int h = rnn ? (int)n->dims[1] : 0;
        if (rnn && !ex->with_grads && cb_rnn_infer_packs(h, fast))
            cb_buf_printf(b, "; single-threaded kernels, and one sample on all threads, multiply a recurrent matrix "
                             "packed once per pass");
        if (rnn && !ex->with_grads) cb_ptable_describe(ex, i, b);
        if (ex->inplace[i] >= 0) cb_buf_printf(b, ", in place over node %d's value (not materialised)", ex->inplace[i]);
    }
}

static void put_backward(cb_buf *b, const cb_exec *ex, int i, const unsigned char *all)
{
    const cb_graph *g = ex->g;
    const cb_node *n = &g->nodes[i];
    if (n->op == CB_OP_INPUT || n->op == CB_OP_FLATTEN) return;
    if (ex->pool_after[i] >= 0) {
        cb_buf_printf(b, "by node %d (%s), its gradient not materialised", ex->pool_after[i],
                      g->nodes[ex->pool_after[i]].name);
        return;
    }
    if (n->op == CB_OP_CONV2D) {
        cb_buf_printf(b, "weights ");
        put_ranges(b, ex->kwgrad[i], all, ex->max_batch);
        if (ex->kdgrad[i][1] != CB_CK_NONE) { /* none where the input takes no gradient */
            cb_buf_printf(b, "; data ");
            put_ranges(b, ex->kdgrad[i], all, ex->max_batch);
        }
    } else {
        put_kernel(b, ex, n->op, 1);
    }
    for (int k = 0; k < g->count; k++)
        if (ex->pool_after[k] == i) cb_buf_printf(b, ", with node %d's (%s)", k, g->nodes[k].name);
    if (n->n_in && ex->stored_by[n->in[0]] == i) cb_buf_printf(b, ", stores node %d's gradient", n->in[0]);
}

char *cb_exec_plan_text(const cb_exec *ex)
{
    const cb_graph *g = ex->g;
    const int max = ex->max_batch;
    cb_buf b = {0};
    unsigned char *whole = calloc((size_t)max + 1, 1), *sliced = calloc((size_t)max + 1, 1);
    unsigned char *all = malloc((size_t)max + 1);
    if (!whole || !sliced || !all) {
        free(whole);
        free(sliced);
        free(all);
        return NULL;
    }
    memset(all, 1, (size_t)max + 1);
    cb_buf_printf(&b, "crossbind plan: %s, level %s, batches 1-%d, %d thread%s\n",
                  ex->with_grads ? "training" : "inference", level_name(ex), max, ex->kthreads,
                  ex->kthreads == 1 ? "" : "s");
    cb_buf_printf(&b, "build: %s, oneDNN %s\n", isa(), ex->dnnl ? "in use" : cb_dnnl_version() ? "not used" : "absent");
    const double mib = sizeof(float) / 1048576.0;
    cb_buf_printf(&b, "memory: values %.1f MiB", ex->val_floats * mib);
    if (ex->val_reuse)
        cb_buf_printf(&b, ex->lanes ? " (only those a step writes; all: %.1f MiB)"
                                    : " (shared by liveness; one each: %.1f MiB)", ex->val_unshared * mib);
    if (ex->with_grads && ex->grad_reuse)
        cb_buf_printf(&b, ", gradients %.1f MiB (shared by liveness; one each: %.1f MiB)", ex->grad_floats * mib,
                      ex->grad_unshared * mib);
    else if (ex->with_grads)
        cb_buf_printf(&b, ", gradients %.1f MiB (one each)", ex->grad_floats * mib);
    cb_buf_printf(&b, ", kept for backward %.1f MiB, workspace %.1f MiB", ex->aux_floats * mib, ex->ws_floats * mib);
    if (ex->blk) cb_buf_printf(&b, ", blocked buffers %.1f MiB", cb_exec_blk_bytes(ex) / 1048576.0);
    if (ex->ptable_floats) cb_buf_printf(&b, ", projection tables %.1f MiB", ex->ptable_floats * sizeof(float) / 1048576.0);
    cb_buf_printf(&b, "\n");
    put_modes(&b, ex, whole, sliced);
    for (int i = 0; i < g->count; i++) {
        const cb_node *n = &g->nodes[i];
        if (n->op == CB_OP_PARAM) continue; /* parameters are memory, not steps */
        cb_buf_printf(&b, "%d %s %s [", i, n->name, cb_op_name(n->op));
        for (int d = 0; d < n->ndim; d++) cb_buf_printf(&b, "%s%lld", d ? "," : "", (long long)n->dims[d]);
        cb_buf_printf(&b, "]\n  forward: ");
        put_forward(&b, ex, i, whole, sliced);
        cb_buf_printf(&b, "\n");
        if (ex->with_grads && ex->needs_grad[i] && n->op != CB_OP_INPUT && n->op != CB_OP_FLATTEN) {
            cb_buf_printf(&b, "  backward: ");
            put_backward(&b, ex, i, all);
            cb_buf_printf(&b, "\n");
        }
    }
    free(whole);
    free(sliced);
    free(all);
    if (!cb_buf_ok(&b)) {
        cb_buf_free(&b);
        return NULL;
    }
    return b.data;
}

cb_status cb_exec_plan_sha256(const cb_exec *ex, char hex[65])
{
    char *text = cb_exec_plan_text(ex);
    if (!text) return cb_fail(CB_ERR_NOMEM, "out of memory printing an executor's plan");
    cb_sha256_hex(text, strlen(text), hex);
    free(text);
    return CB_OK;
}

char *cb_kernel_list_text(void)
{
    cb_buf b = {0};
    int count;
    const cb_conv_kernel_desc *k = cb_conv_kernel_list(&count);
    cb_buf_printf(&b, "conv2d kernels, best first (the first that runs a pass and whose rule holds is chosen):\n");
    for (int i = 0; i < count; i++)
        cb_buf_printf(&b, "  %-12s %-4s %s%s%s%s  %s\n", k[i].name, k[i].backend,
                      k[i].passes & CB_KPASS_FWD ? "fwd " : "    ", k[i].passes & CB_KPASS_DGRAD ? "dgrad " : "      ",
                      k[i].passes & CB_KPASS_WGRAD ? "wgrad " : "      ",
                      k[i].passes & CB_KPASS_JOINT ? "joint" : "     ", k[i].rule);
    cb_blk_list_kernels(&b);
    cb_buf_printf(&b, "other ops: one kernel per level (reference: double sums, single-threaded; fast and fused:\n"
                      "optimised, exact; fastmath: approximate tanh, logistic and exp), named op.level in plans\n");
    if (b.failed) {
        free(b.data);
        return NULL;
    }
    return b.data;
}
