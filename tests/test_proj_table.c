/* The embedding-projection rewrite of recurrent inference
 * (src/graph/proj_table.c): a recurrent layer reading an embedding looks
 * its input projections up in the table E W_ih^T. It must give the
 * reference level's outputs, use weights written between passes unless
 * the parameters are frozen, and project directly where a batch holds
 * fewer tokens than the vocabulary. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

enum { T = 6, VOCAB = 11, DIM = 5, MAXB = 4 };

static int build(cb_graph *g, int gru, int *ids, int *out)
{
    cb_graph_init(g);
    const int64_t t[1] = {T};
    *ids = cb_graph_input(g, "ids", 1, t);
    const int e = cb_graph_embedding(g, "emb", *ids, VOCAB, DIM);
    const int l = gru ? cb_graph_gru(g, "rnn", e, 16, 0) : cb_graph_lstm(g, "rnn", e, 8);
    *out = cb_graph_linear(g, "head", cb_graph_last_step(g, l), 3, 1);
    g->output = *out;
    if (cb_graph_finalize(g) != CB_OK) return -1;
    cb_rng r;
    cb_rng_seed(&r, 9);
    cb_graph_init_params(g, &r);
    return 0;
}

static void run(cb_exec *ex, int ids, int out, int batch, float *y)
{
    float *in = cb_exec_value(ex, ids);
    for (int i = 0; i < batch * T; i++) in[i] = (float)((i * 5 + 3) % VOCAB);
    CHECK_OK(cb_exec_forward(ex, batch));
    memcpy(y, cb_exec_value(ex, out), (size_t)batch * 3 * sizeof *y);
}

TEST(projection_table_matches_reference_and_reads_written_weights)
{
    for (int gru = 0; gru <= 1; gru++) {
        cb_graph g;
        int ids, out;
        CHECK(build(&g, gru, &ids, &out) == 0);
        cb_exec *ex = NULL, *ref = NULL, *frozen = NULL;
        CHECK_OK(cb_exec_create(&g, MAXB, 0, CB_KERNELS_FAST, &ex));
        CHECK_OK(cb_exec_create(&g, MAXB, 0, CB_KERNELS_REFERENCE, &ref));
        CHECK_OK(cb_exec_create(&g, MAXB, 0, CB_KERNELS_FUSED, &frozen));
        if (!ex || !ref || !frozen) return;
        char *plan = cb_exec_plan_text(ex);
        CHECK(plan && strstr(plan, "input projection looked up by token") && strstr(plan, "projection tables"));
        free(plan);
        plan = cb_exec_plan_text(ref);
        CHECK(plan && !strstr(plan, "looked up")); /* the reference level has no rewrites */
        free(plan);
        cb_exec_freeze_params(frozen);
        float y[MAXB * 3], yr[MAXB * 3], yf[MAXB * 3], y1[MAXB * 3];
        /* 4 x 6 tokens >= 11: the table; 1 x 6 < 11: direct projection */
        for (int batch = 1; batch <= MAXB; batch += MAXB - 1) {
            run(ex, ids, out, batch, y);
            run(ref, ids, out, batch, yr);
            CHECK(check_close("table or direct projection: the reference level's", y, yr, batch * 3, TOL_KERNEL_ATOL,
                              TOL_KERNEL_RTOL));
        }
        run(frozen, ids, out, MAXB, y1);
        CHECK(check_close("fused, frozen: the reference level's", y1, yr, MAXB * 3, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL));
        /* W_ih written between passes: used unless frozen */
        float *w = cb_graph_param_data(&g, cb_graph_find(&g, "rnn.weight_ih_l0"));
        CHECK(w != NULL);
        if (!w) return;
        const int rows = gru ? 3 * 16 : 4 * 8;
        for (int i = 0; i < rows * DIM; i++) w[i] = -1.5f * w[i] + 0.01f;
        run(ex, ids, out, MAXB, y);
        run(ref, ids, out, MAXB, yr);
        CHECK(check_close("after writing W_ih: the reference level's", y, yr, MAXB * 3, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL));
        int changed = 0;
        for (int i = 0; i < MAXB * 3; i++) changed |= fabsf(yr[i] - y1[i]) > 1e-4f;
        CHECK(changed);
        run(frozen, ids, out, MAXB, yf);
        CHECK(check_close("frozen: the table of its first pass", yf, y1, MAXB * 3, 0, 0));
        /* operations done per sample: the projections only where the table is not made once */
        CHECK(cb_exec_forward_flops_done(ex) == cb_graph_forward_flops_done(&g));
        CHECK(cb_exec_forward_flops_done(frozen) == cb_graph_forward_flops_done(&g) - 2.0 * T * DIM * rows);
        cb_exec_free(ex);
        cb_exec_free(ref);
        cb_exec_free(frozen);
        cb_graph_free(&g);
    }
}
