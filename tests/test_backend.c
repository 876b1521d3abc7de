/* The backend interface (src/backend/backend.h) and the executor's copies
 * through it (cb_exec_read / cb_exec_write). */
#include <string.h>
#include "harness.h"
#include "../src/backend/backend.h"

TEST(cpu_backend_allocates_zeroed_and_copies)
{
    const cb_backend *be = cb_backend_find("cpu");
    CHECK(be == cb_backend_cpu());
    void *ctx;
    CHECK_OK(be->open(&ctx));
    float *p = be->alloc(ctx, 1000 * sizeof(float));
    CHECK(p != NULL);
    if (!p) return;
    int zero = 1;
    for (int i = 0; i < 1000; i++) zero &= p[i] == 0.0f;
    CHECK(zero);
    float host[3] = {1, -2, 3}, back[3] = {0};
    be->copy_in(ctx, p + 10, host, sizeof host);
    be->sync(ctx);
    be->copy_out(ctx, back, p + 10, sizeof back);
    CHECK(!memcmp(host, back, sizeof host));
    be->zero(ctx, p + 10, sizeof host);
    CHECK(p[10] == 0.0f && p[12] == 0.0f);
    be->release(ctx, p, 1000 * sizeof(float));
    be->close(ctx);
    CHECK(cb_backend_find("cuda") == NULL);
    CHECK(strstr(cb_last_error(), "no backend 'cuda'") != NULL);
}

TEST(exec_read_write_check_their_span)
{
    cb_model *m;
    CHECK_OK(cb_model_create("lenet5", &m));
    if (!m) return;
    cb_model_init(m, 7);
    cb_exec *ex = NULL;
    CHECK_OK(cb_exec_create(&m->graph, 4, 0, CB_KERNELS_FAST, &ex));
    if (!ex) {
        cb_model_free(m);
        return;
    }
    static float x[4 * 28 * 28], y[4 * 10], y2[10];
    for (int i = 0; i < 4 * 28 * 28; i++) x[i] = (float)((i * 37) % 101) / 101.0f;
    CHECK_OK(cb_exec_write(ex, m->input, 0, 4, x));
    CHECK_OK(cb_exec_forward(ex, 4));
    CHECK_OK(cb_exec_read(ex, m->graph.output, 0, 4, y));
    CHECK_OK(cb_exec_read(ex, m->graph.output, 3, 1, y2)); /* the fourth sample alone */
    CHECK(!memcmp(y2, y + 30, sizeof y2));
    CHECK(cb_exec_read(ex, m->graph.output, 2, 3, y) == CB_ERR_INVALID_ARG); /* past the planned 4 */
    CHECK(strstr(cb_last_error(), "outside the planned") != NULL);
    CHECK(cb_exec_read(ex, m->graph.count, 0, 1, y) == CB_ERR_INVALID_ARG);
    CHECK(cb_exec_write(ex, m->input, -1, 1, x) == CB_ERR_INVALID_ARG);
    cb_exec_free(ex);
    cb_model_free(m);
}
