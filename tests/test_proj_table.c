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
        /* on a failed check below, fall through to the frees: nothing leaks */
        float *w = cb_graph_param_data(&g, cb_graph_find(&g, "rnn.weight_ih_l0"));
        CHECK(w != NULL);
        if (!ex || !ref || !frozen || !w) goto done;
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
    done:
        cb_exec_free(ex);
        cb_exec_free(ref);
        cb_exec_free(frozen);
        cb_graph_free(&g);
    }
}

/* A frozen executor makes its table once the tokens it projected directly
 * reach the vocabulary size (11 here; a pass of batch 1 is 6 tokens), or at
 * once on cb_exec_precompute. Observed through weights written after the
 * freeze (which the contract leaves to either weights): a table already made
 * keeps the old ones, a direct projection reads the new. */
TEST(frozen_table_is_made_once_it_pays_or_on_request)
{
    for (int gru = 0; gru <= 1; gru++) {
        cb_graph g;
        int ids, out;
        CHECK(build(&g, gru, &ids, &out) == 0);
        cb_exec *late = NULL, *early = NULL, *ref = NULL;
        CHECK_OK(cb_exec_create(&g, 1, 0, CB_KERNELS_FUSED, &late));
        CHECK_OK(cb_exec_create(&g, 1, 0, CB_KERNELS_FUSED, &early));
        CHECK_OK(cb_exec_create(&g, 1, 0, CB_KERNELS_REFERENCE, &ref));
        float *w = cb_graph_param_data(&g, cb_graph_find(&g, "rnn.weight_ih_l0"));
        const int n = (gru ? 3 * 16 : 4 * 8) * DIM;
        float *w0 = malloc((size_t)n * sizeof *w0), *w1 = malloc((size_t)n * sizeof *w1);
        CHECK(w && w0 && w1);
        if (!late || !early || !ref || !w || !w0 || !w1) goto done;
        CHECK(cb_exec_precompute(early) != CB_OK); /* not frozen yet: refused */
        cb_exec_freeze_params(late);
        cb_exec_freeze_params(early);
        CHECK_OK(cb_exec_precompute(early)); /* the table of w0 */
        memcpy(w0, w, (size_t)n * sizeof *w);
        for (int i = 0; i < n; i++) w1[i] = -1.5f * w0[i] + 0.01f;
        float y_old[3], y_new[3], y[3];
        run(ref, ids, out, 1, y_old);
        memcpy(w, w1, (size_t)n * sizeof *w);
        run(ref, ids, out, 1, y_new);
        CHECK(fabsf(y_old[0] - y_new[0]) + fabsf(y_old[1] - y_new[1]) > 1e-4f);
        run(early, ids, out, 1, y); /* the table made before w1 */
        CHECK(check_close("precomputed: the old weights'", y, y_old, 3, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL));
        memcpy(w, w0, (size_t)n * sizeof *w);
        run(late, ids, out, 1, y); /* 6 tokens: projected directly (w0) */
        CHECK(check_close("first pass, direct: the old weights'", y, y_old, 3, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL));
        memcpy(w, w1, (size_t)n * sizeof *w);
        run(late, ids, out, 1, y); /* 12 tokens >= 11: the table, of w1 */
        CHECK(check_close("second pass, the table made now: the new weights'", y, y_new, 3, TOL_KERNEL_ATOL,
                          TOL_KERNEL_RTOL));
        memcpy(w, w0, (size_t)n * sizeof *w);
        run(late, ids, out, 1, y); /* the table kept */
        CHECK(check_close("third pass, the table kept: still w1's", y, y_new, 3, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL));
    done:
        free(w0);
        free(w1);
        cb_exec_free(late);
        cb_exec_free(early);
        cb_exec_free(ref);
        cb_graph_free(&g);
    }
}
