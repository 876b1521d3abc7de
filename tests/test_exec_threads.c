/* The executor's memory against the thread count: per-thread workspaces
 * sized for one thread each, never more of them than the batch has work
 * for, and results that do not depend on how many threads were asked. */
#include <stdlib.h>
#include <string.h>
#include "harness.h"

/* Planned bytes of an executor of model `name` for `batch` samples at
 * `threads` threads (0: creation failed). */
static size_t planned(const char *name, int batch, int with_grads, int threads)
{
    cb_model *m = NULL;
    cb_exec *ex = NULL;
    size_t bytes = 0;
    CHECK_OK(cb_set_threads(threads));
    CHECK_OK(cb_model_create(name, &m));
    if (m && cb_exec_create(&m->graph, batch, with_grads, CB_KERNELS_FAST, &ex) == CB_OK) bytes = cb_exec_bytes(ex);
    else fprintf(stderr, "  %s batch %d at %d threads: %s\n", name, batch, threads, cb_last_error());
    cb_exec_free(ex);
    cb_model_free(m);
    return bytes;
}

TEST(exec_memory_at_most_linear_in_threads)
{
    static const char *const models[] = {"lenet1", "lenet5"};
    for (size_t k = 0; k < sizeof models / sizeof *models; k++)
        for (int grads = 0; grads <= 1; grads++)
            for (int batch = 16; batch <= 256; batch *= 4) {
                const size_t one = planned(models[k], batch, grads, 1), many = planned(models[k], batch, grads, 300);
                CHECK(one && many);
                /* Each thread adds its own buffers once, sized for itself: a
                 * LeNet's (a sample's planes, a block of 16 samples) stay
                 * under 1 MiB a thread. Sized for all threads, every thread's
                 * would grow with the count (quadratic in all). */
                if (many < one || many - one > (size_t)299 << 20) {
                    fprintf(stderr, "  %s batch %d %s: %zu bytes at 1 thread, %zu at 300\n", models[k], batch,
                            grads ? "training" : "inference", one, many);
                    CHECK(0);
                }
            }
    CHECK_OK(cb_set_threads(2));
}

TEST(exec_memory_bounded_by_the_batch)
{
    /* A batch of 64 samples cannot use more than 64 threads: asking for 300
     * plans no more than asking for 64. */
    static const char *const models[] = {"lenet1", "lenet5"};
    for (size_t k = 0; k < sizeof models / sizeof *models; k++)
        for (int grads = 0; grads <= 1; grads++) {
            const size_t at64 = planned(models[k], 64, grads, 64), at300 = planned(models[k], 64, grads, 300);
            if (!at64 || at300 > at64) {
                fprintf(stderr, "  %s %s batch 64: %zu bytes at 64 threads, %zu at 300\n", models[k],
                        grads ? "training" : "inference", at64, at300);
                CHECK(0);
            }
        }
    CHECK_OK(cb_set_threads(2));
}

/* One forward (and, training, backward) pass of LeNet-1 on `batch` seeded
 * samples, planned at plan_threads and run at run_threads; the logits
 * and the parameter gradients into out (classes * batch + params floats). */
static void lenet1_pass(int batch, int with_grads, int plan_threads, int run_threads, float *out)
{
    cb_model *m = NULL;
    cb_exec *ex = NULL;
    CHECK_OK(cb_set_threads(plan_threads));
    CHECK_OK(cb_model_create("lenet1", &m));
    if (!m) return;
    cb_model_init(m, 7);
    CHECK_OK(cb_exec_create(&m->graph, batch, with_grads, CB_KERNELS_FAST, &ex));
    if (!ex) {
        cb_model_free(m);
        return;
    }
    CHECK_OK(cb_set_threads(run_threads));
    float *x = cb_exec_value(ex, m->input), *y = cb_exec_value(ex, m->labels);
    cb_rng rng;
    cb_rng_seed(&rng, 11);
    for (int64_t i = 0; i < (int64_t)batch * 28 * 28; i++) x[i] = cb_rng_uniform(&rng);
    for (int i = 0; i < batch; i++) y[i] = (float)(i % 10);
    CHECK_OK(cb_exec_forward(ex, batch));
    memcpy(out, cb_exec_value(ex, m->graph.output), (size_t)batch * 10 * sizeof *out);
    if (with_grads) {
        CHECK_OK(cb_exec_backward(ex, batch));
        memcpy(out + (size_t)batch * 10, m->graph.grads, m->graph.n_params * sizeof *out);
    }
    cb_exec_free(ex);
    cb_model_free(m);
}

TEST(exec_results_do_not_depend_on_idle_threads)
{
    /* More threads than samples, and threads raised after the plan: the
     * same logits and gradients as one thread (to float rounding of the
     * threads' partial sums), and no kernel writes past its workspace. */
    cb_model *m = NULL;
    CHECK_OK(cb_model_create("lenet1", &m));
    if (!m) return;
    const size_t n = 20 * 10 + m->graph.n_params;
    cb_model_free(m);
    float *ref = calloc(n, sizeof *ref), *got = calloc(n, sizeof *got);
    for (int grads = 0; grads <= 1; grads++) {
        lenet1_pass(20, grads, 1, 1, ref);
        lenet1_pass(20, grads, 64, 64, got);
        CHECK(check_close("64 threads, 20 samples", got, ref, (int64_t)n, 1e-5, 1e-4));
        lenet1_pass(20, grads, 2, 8, got);
        CHECK(check_close("planned at 2 threads, run at 8", got, ref, (int64_t)n, 1e-5, 1e-4));
    }
    free(ref);
    free(got);
    CHECK_OK(cb_set_threads(2));
}
