/* Training loop and metrics: determinism, learning, and metric values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

static void synthetic(cb_dataset *d, int n, uint64_t seed)
{
    memset(d, 0, sizeof *d);
    d->n = n; d->c = 1; d->h = 28; d->w = 28; d->classes = 10;
    d->x = malloc((size_t)n * 784 * sizeof(float));
    d->y = malloc((size_t)n * sizeof(float));
    cb_rng r;
    cb_rng_seed(&r, seed);
    for (int i = 0; i < n; i++) {
        int c = i % 10;
        d->y[i] = (float)c;
        /* a class-dependent bright bar plus noise: learnable in a few steps */
        for (int p = 0; p < 784; p++)
            d->x[(size_t)i * 784 + p] = 0.3f * (float)cb_rng_uniform(&r) + ((p / 28) / 3 == c ? 0.7f : 0.0f);
    }
}

static void train_once(const char *model, int shuffle, cb_train_result *r, float **params, size_t *n)
{
    cb_dataset tr, te;
    synthetic(&tr, 300, 1);
    synthetic(&te, 100, 2);
    cb_model *m;
    CHECK_OK(cb_model_create(model, &m));
    cb_model_init(m, 42);
    cb_train_options o = {.epochs = 3, .batch = 64, .optim = cb_optim_defaults(CB_OPTIM_SGD, 0.05f),
                          .shuffle = shuffle, .shuffle_seed = 42, .kernels = CB_KERNELS_FAST};
    CHECK_OK(cb_train(m, &tr, &te, &o, r));
    *n = m->graph.n_params;
    *params = malloc(*n * sizeof(float));
    memcpy(*params, m->graph.params, *n * sizeof(float));
    cb_model_free(m);
    cb_dataset_free(&tr);
    cb_dataset_free(&te);
}

TEST(training_is_deterministic)
{
    for (int shuffle = 0; shuffle < 2; shuffle++) {
        cb_train_result a, b;
        float *pa, *pb;
        size_t na, nb;
        train_once("lenet5", shuffle, &a, &pa, &na);
        train_once("lenet5", shuffle, &b, &pb, &nb);
        CHECK(a.n_epochs == 3 && b.n_epochs == 3);
        for (int e = 0; e < a.n_epochs && e < b.n_epochs; e++) {
            CHECK(a.epochs[e].train_acc == b.epochs[e].train_acc);
            CHECK(a.epochs[e].test_loss == b.epochs[e].test_loss);
            CHECK(a.epochs[e].train_loss == b.epochs[e].train_loss);
        }
        CHECK(na == nb && memcmp(pa, pb, na * sizeof(float)) == 0);
        free(pa);
        free(pb);
        cb_train_result_free(&a);
        cb_train_result_free(&b);
    }
}

TEST(training_learns_and_reports)
{
    cb_train_result r;
    float *p;
    size_t n;
    train_once("lenet1", 0, &r, &p, &n);
    CHECK(n == 4326);
    CHECK(r.n_epochs == 3);
    CHECK(r.epochs[2].train_loss < r.epochs[0].train_loss);
    CHECK(r.final_test.accuracy > 0.5); /* chance is 0.1 */
    CHECK(r.final_test.total == 100 && !isnan(r.final_test.f1_macro) && r.final_test.auc_macro > 0.5);
    /* Evaluation time is kept out of the training time: the training time is
     * the epochs' training loops and little else. */
    double loops = 0;
    for (int e = 0; e < r.n_epochs; e++) loops += r.epochs[e].train_time_s;
    CHECK(r.eval_time_s > 0 && loops <= r.training_time_s + 1e-9 && loops > 0.9 * r.training_time_s);
    free(p);
    cb_train_result_free(&r);
}

TEST(model_parameter_counts_match_protocol)
{
    cb_model *m;
    CHECK_OK(cb_model_create("lenet5", &m));
    CHECK(cb_model_param_count(m) == 61706);
    cb_model_free(m);
    CHECK(cb_model_create("resnet9000", &m) == CB_ERR_NOT_FOUND);
    CHECK(strstr(cb_last_error(), "lenet5") != NULL);
}

TEST(init_reproduces_pytorch_bounds)
{
    cb_model *m;
    CHECK_OK(cb_model_create("lenet5", &m));
    cb_model_init(m, 287426343);
    /* every parameter within +-1/sqrt(fan_in), and spread over that range */
    for (int i = 0; i < m->graph.count; i++) {
        const cb_node *nd = &m->graph.nodes[i];
        if (nd->op != CB_OP_PARAM) continue;
        double bound = 1.0 / sqrt((double)nd->fan_in), lo = 1, hi = -1;
        const float *v = cb_graph_param_data(&m->graph, i);
        for (int64_t k = 0; k < cb_node_numel(nd); k++) {
            if (v[k] < lo) lo = v[k];
            if (v[k] > hi) hi = v[k];
        }
        CHECK(lo >= -bound && hi <= bound);
        if (cb_node_numel(nd) > 100) CHECK(hi > 0.9 * bound && lo < -0.9 * bound);
    }
    cb_model_free(m);
}

TEST(metrics_match_hand_computed_values)
{
    float labels[6] = {0, 1, 2, 0, 1, 2};
    int pred[6] = {0, 1, 1, 0, 2, 2};
    CHECK(fabs(cb_accuracy(pred, labels, 6) - 4.0 / 6) < 1e-12);
    CHECK(fabs(cb_f1_macro(pred, labels, 6, 3) - 2.0 / 3) < 1e-12);
    double work[16];
    float s1[4] = {0.1f, 0.4f, 0.35f, 0.8f}, y1[4] = {0, 0, 1, 1};
    CHECK(fabs(cb_auc_macro(s1, y1, 4, 1, work) - 0.75) < 1e-12);
    float s2[4] = {0.5f, 0.5f, 0.5f, 0.9f}, y2[4] = {0, 1, 0, 1};
    CHECK(fabs(cb_auc_macro(s2, y2, 4, 1, work) - 0.75) < 1e-12);
    float allpos[2] = {1, 1};
    CHECK(isnan(cb_auc_macro(s2, allpos, 2, 1, work)));
    /* multi-class one-vs-rest: perfect scores give 1 */
    float probs[9] = {0.8f, 0.1f, 0.1f, 0.2f, 0.7f, 0.1f, 0.1f, 0.2f, 0.7f}, y3[3] = {0, 1, 2};
    CHECK(fabs(cb_auc_macro(probs, y3, 3, 3, work) - 1.0) < 1e-12);
}

TEST(train_rejects_bad_options)
{
    cb_dataset tr, te;
    synthetic(&tr, 20, 1);
    synthetic(&te, 10, 2);
    cb_model *m;
    CHECK_OK(cb_model_create("lenet1", &m));
    cb_train_result r;
    cb_train_options o = {.epochs = 0, .batch = 8, .optim = cb_optim_defaults(CB_OPTIM_SGD, 0.05f)};
    CHECK(cb_train(m, &tr, &te, &o, &r) == CB_ERR_INVALID_ARG);
    cb_train_result_free(&r);
    o.epochs = 1;
    o.optim.lr = -1;
    CHECK(cb_train(m, &tr, &te, &o, &r) == CB_ERR_INVALID_ARG);
    cb_train_result_free(&r);
    o.optim.lr = 0.05f;
    tr.h = 27;
    CHECK(cb_train(m, &tr, &te, &o, &r) == CB_ERR_SHAPE);
    tr.h = 28;
    cb_train_result_free(&r);
    cb_model_free(m);
    cb_dataset_free(&tr);
    cb_dataset_free(&te);
}
