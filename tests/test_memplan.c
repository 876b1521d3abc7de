/* The values' memory plan of inference (src/graph/memplan.c): above the
 * reference level, values whose lives do not overlap share buffers, a
 * residual operand keeps its buffer until the Add reads it, captured
 * values get buffers of their own without changing the plan, and a value
 * no step writes cannot be read as if it were there. */
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "harness.h"
#include "../src/graph/slots.h"

enum { C = 8, HW = 48, MAXB = 8, CLASSES = 10 };

/* Heavy enough per sample (37 MFLOP) that its batch runs whole (at fused
 * and fastmath where oneDNN is built in, 8 samples in lanes on two threads:
 * there only the values no step writes go without buffers): three
 * convolutions, a residual Add reaching back over two of them, pooling and
 * a classifier. */
static int build(cb_graph *g, int *x)
{
    const int64_t dims[3] = {C, HW, HW};
    if (cb_graph_init(g) != CB_OK) return -1;
    *x = cb_graph_input(g, "x", 3, dims);
    const int r1 = cb_graph_unary(g, CB_OP_RELU, cb_graph_conv2d(g, "c1", *x, 16, 3, 1, 1, 1));
    const int r2 = cb_graph_unary(g, CB_OP_RELU, cb_graph_conv2d(g, "c2", r1, 16, 3, 1, 1, 1));
    const int c3 = cb_graph_conv2d(g, "c3", r2, 16, 3, 1, 1, 1);
    const int r3 = cb_graph_unary(g, CB_OP_RELU, cb_graph_add(g, r1, c3));
    const int c4 = cb_graph_conv2d(g, "c4", cb_graph_pool2d(g, CB_OP_MAXPOOL2D, r3, 2, 2, 0), 16, 3, 1, 1, 1);
    g->output = cb_graph_linear(g, "fc", cb_graph_unary(g, CB_OP_FLATTEN, c4), CLASSES, 1);
    if (cb_graph_finalize(g) != CB_OK) return -1;
    cb_rng rng;
    cb_rng_seed(&rng, 11);
    cb_graph_init_params(g, &rng);
    return 0;
}

static void fill_input(cb_exec *ex, int x, int batch, float phase)
{
    float *in = cb_exec_value(ex, x);
    for (int i = 0; i < batch * C * HW * HW; i++) in[i] = sinf(phase + 0.013f * (float)i);
}

static int is_value(const cb_graph *g, int i) { return g->nodes[i].op != CB_OP_PARAM; }

TEST(inference_values_share_buffers_by_liveness)
{
    cb_graph g;
    int x = -1;
    CHECK(build(&g, &x) == 0);
    cb_exec *ref = NULL;
    CHECK_OK(cb_exec_create(&g, MAXB, 0, CB_KERNELS_REFERENCE, &ref));
    const cb_kernels levels[] = {CB_KERNELS_EXACT, CB_KERNELS_FUSED, CB_KERNELS_FAST};
    float *got = malloc((size_t)MAXB * 16 * HW * HW * sizeof *got);
    for (int l = 0; l < 3 && ref; l++) {
        cb_exec *plain = NULL, *caught = NULL;
        CHECK_OK(cb_exec_create(&g, MAXB, 0, levels[l], &plain));
        CHECK_OK(cb_exec_create(&g, MAXB, 0, levels[l], &caught));
        if (!plain || !caught) break;
        int captured = 0;
        for (int i = 0; i < g.count; i++)
            if (is_value(&g, i)) {
                CHECK_OK(cb_exec_capture(caught, i));
                captured++;
            }
        CHECK(captured > 10);
        char *a = cb_exec_plan_text(plain), *b = cb_exec_plan_text(caught);
        CHECK(a && b && strcmp(a, b) == 0); /* capture changes nothing in the plan */
        const int lanes = a && strstr(a, "in lanes over threads") != NULL;
        CHECK(lanes == (levels[l] != CB_KERNELS_EXACT && a && strstr(a, "oneDNN in use") && cb_get_threads() > 1));
        CHECK(a && strstr(a, "values") &&
              strstr(a, lanes ? "(only those a step writes; all:" : "(shared by liveness; one each:"));
        free(a), free(b);
        /* Some two values written by the pass share one buffer (where the
         * values are plain: at fused and fastmath the blocked rewrite, where
         * built in, keeps most of them in its own buffers). */
        int shared = 0;
        for (int i = 0; i < g.count; i++)
            for (int j = i + 1; j < g.count; j++)
                shared += is_value(&g, i) && is_value(&g, j) && !(g.nodes[j].op == CB_OP_FLATTEN) &&
                          cb_exec_value(plain, i) && cb_exec_value(plain, i) == cb_exec_value(plain, j);
        CHECK(shared > 0 || levels[l] != CB_KERNELS_EXACT);
        const int batches[] = {MAXB, 3, 1, 2};
        for (int t = 0; t < 4; t++) {
            const int n = batches[t];
            fill_input(ref, x, n, (float)t);
            fill_input(plain, x, n, (float)t);
            fill_input(caught, x, n, (float)t);
            CHECK_OK(cb_exec_forward(ref, n));
            CHECK_OK(cb_exec_forward(plain, n));
            CHECK_OK(cb_exec_forward(caught, n));
            const float *want = cb_exec_value(ref, g.output);
            CHECK(check_close("output, shared values", cb_exec_value(plain, g.output), want, n * CLASSES,
                              TOL_KERNEL_ATOL, TOL_KERNEL_RTOL));
            CHECK(check_close("output, captured values", cb_exec_value(caught, g.output), want, n * CLASSES,
                              TOL_KERNEL_ATOL, TOL_KERNEL_RTOL));
            /* Every value the pass writes, read after it, is the reference's. */
            for (int i = 0; i < g.count; i++) {
                int by;
                if (!is_value(&g, i) || !cb_exec_materialised(caught, i, &by)) continue;
                const int64_t per = g.nodes[i].batched ? cb_node_numel(&g.nodes[i]) : 0;
                if (!g.nodes[i].batched || g.nodes[i].op == CB_OP_INPUT) continue;
                CHECK_OK(cb_exec_read(caught, i, 0, n, got));
                CHECK(check_close(g.nodes[i].name, got, cb_exec_value(ref, i), n * per, TOL_KERNEL_ATOL,
                                  TOL_KERNEL_RTOL));
            }
        }
        /* A value that no step writes has no buffer to read. */
        if (levels[l] != CB_KERNELS_EXACT) {
            const int c1 = cb_graph_find(&g, "c1.weight") + 2; /* c1's output: weight, bias, conv */
            int by;
            CHECK(g.nodes[c1].op == CB_OP_CONV2D && !cb_exec_materialised(plain, c1, &by));
            CHECK(cb_exec_value(plain, c1) == NULL);
            CHECK(cb_exec_read(plain, c1, 0, 1, got) == CB_ERR_INVALID_ARG);
        }
        cb_exec_free(plain);
        cb_exec_free(caught);
    }
    free(got);
    cb_exec_free(ref);
    cb_graph_free(&g);
}

/* The interval allocator itself, on random lives: two items share memory
 * only where their lives are disjoint (one starting at the step another
 * ends never shares with it), and sharing does save memory. */
TEST(shared_buffers_never_overlap_in_time)
{
    enum { N = 60 };
    int start[N], end[N];
    size_t floats[N], off[N], total = 0;
    cb_rng rng;
    cb_rng_seed(&rng, 5);
    for (int round = 0; round < 50; round++) {
        size_t sum = 0;
        for (int k = 0; k < N; k++) {
            start[k] = (int)(cb_rng_next(&rng) % 40) - (k % 7 == 0); /* some unplanned (-1) */
            end[k] = start[k] + (int)(cb_rng_next(&rng) % 6);
            floats[k] = 1 + cb_rng_next(&rng) % 100;
            if (start[k] >= 0) sum += floats[k];
        }
        CHECK_OK(cb_slots_assign(N, start, end, floats, off, &total));
        CHECK(total < sum);
        for (int a = 0; a < N; a++)
            for (int b = a + 1; b < N; b++) {
                if (start[a] < 0 || start[b] < 0) continue;
                const int in_time = start[a] <= end[b] && start[b] <= end[a];
                const int in_memory = off[a] < off[b] + floats[b] && off[b] < off[a] + floats[a];
                CHECK(!(in_time && in_memory));
                CHECK(off[a] + floats[a] <= total);
            }
    }
}
