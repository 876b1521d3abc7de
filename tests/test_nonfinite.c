/* Metrics and evaluation on NaN and infinite scores: every call terminates
 * with the result crossbind/stats.h defines. Each case runs in a child
 * process under an alarm, so that a metric that loops forever is reported
 * as a failure instead of stopping the suite. */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"

/* Runs fn in a child; it must exit 0 within `seconds`. */
static void bounded(const char *what, void (*fn)(void), unsigned seconds)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(seconds);
        test_failures = 0;
        fn();
        _exit(test_failures ? 1 : 0);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid) {
        fprintf(stderr, "  %s: could not run in a child process\n", what);
        test_failures++;
        return;
    }
    if (WIFSIGNALED(st)) {
        fprintf(stderr, "  %s: %s\n", what, WTERMSIG(st) == SIGALRM ? "did not finish (a loop that never ends?)"
                                                                     : "killed by a signal");
        test_failures++;
    } else if (WEXITSTATUS(st) != 0) {
        test_failures++;
    }
}

static void auc_cases(void)
{
    double work[64];
    const float y[4] = {0, 1, 1, 0};
    const float one_nan[4] = {0.1f, NAN, 0.7f, 0.3f}, all_nan[4] = {NAN, NAN, NAN, NAN};
    CHECK(isnan(cb_auc_macro(one_nan, y, 4, 1, work)));
    CHECK(isnan(cb_auc_macro(all_nan, y, 4, 1, work)));
    /* Infinities rank as numbers: the positives share the top rank. */
    const float inf[4] = {-INFINITY, INFINITY, INFINITY, 0.5f};
    CHECK(cb_auc_macro(inf, y, 4, 1, work) == 1.0);
    /* Macro AUC: a NaN in one class's column makes the whole value
     * undefined instead of silently dropping that class. */
    const float probs[6] = {0.9f, 0.1f, NAN, 0.8f, 0.7f, 0.3f}, y3[3] = {0, 1, 0};
    CHECK(isnan(cb_auc_macro(probs, y3, 3, 2, work)));
    /* Many NaN among many ties. */
    float big[32], yb[32];
    for (int i = 0; i < 32; i++) big[i] = i % 3 ? NAN : 0.5f, yb[i] = (float)(i % 2);
    CHECK(isnan(cb_auc_macro(big, yb, 32, 1, work)));
}

static void prediction_cases(void)
{
    const float rows[5 * 3] = {NAN, 1, 2, 1, NAN, 5, 1, 5, INFINITY, -INFINITY, -INFINITY, -INFINITY, 3, NAN, NAN};
    int pred[5];
    cb_predict_labels(rows, 5, 3, pred);
    CHECK(pred[0] == 0 && pred[1] == 1 && pred[2] == 2 && pred[3] == 0 && pred[4] == 1);
    CHECK(cb_count_nonfinite(rows, 5, 3) == 5);
    const float finite[2 * 3] = {1, 2, 3, -1, 0, 1e30f};
    CHECK(cb_count_nonfinite(finite, 2, 3) == 0);
    const float binary[3] = {NAN, 0.7f, INFINITY};
    cb_predict_labels(binary, 3, 1, pred);
    CHECK(pred[0] == 0 && pred[1] == 1 && pred[2] == 1);
    /* A label that names no class counts as wrong, never as a class. */
    const int p3[4] = {0, 0, 1, 1};
    const float labels[4] = {0, NAN, 1, -1};
    CHECK(fabs(cb_accuracy(p3, labels, 4) - 0.5) < 1e-12);
    double f1 = cb_f1_macro(p3, labels, 4, 2);
    CHECK(f1 > 0 && f1 < 1);
}

static void rank_statistic_cases(void)
{
    const double a[3] = {1, NAN, 3}, b[3] = {2, 4, 6}, ai[3] = {1, INFINITY, 3};
    double u, p, d;
    CHECK(cb_mann_whitney_u(a, 3, b, 3, &u, &p, NULL) == CB_ERR_INVALID_ARG);
    CHECK(strstr(cb_last_error(), "NaN") != NULL);
    CHECK(cb_mann_whitney_u(b, 3, a, 3, &u, &p, NULL) == CB_ERR_INVALID_ARG);
    CHECK(cb_cliff_delta(a, 3, b, 3, &d) == CB_ERR_INVALID_ARG);
    CHECK(cb_cliff_delta(b, 3, a, 3, &d) == CB_ERR_INVALID_ARG);
    CHECK_OK(cb_mann_whitney_u(ai, 3, b, 3, &u, &p, NULL));
    CHECK(u == 4.0 && p >= 0 && p <= 1);
    CHECK_OK(cb_cliff_delta(ai, 3, b, 3, &d));
    CHECK(fabs(d - (4.0 - 5.0) / 9.0) < 1e-12);
    CHECK(cb_dtw(a, 3, b, 3, -1, &d) == CB_ERR_INVALID_ARG);
    CHECK(cb_dtw(ai, 3, b, 3, 1, &d) == CB_ERR_INVALID_ARG);
}

TEST(metrics_on_nonfinite_scores_terminate_with_defined_results)
{
    bounded("AUC", auc_cases, 10);
    bounded("prediction, accuracy, F1", prediction_cases, 10);
    bounded("Mann-Whitney U, Cliff's delta, DTW", rank_statistic_cases, 10);
}

/* LeNet-1 with every parameter NaN, evaluated with metrics: the pass
 * completes, counts every sample as non-finite and leaves AUC undefined. */
static void nan_model_evaluation(void)
{
    cb_model *m;
    CHECK_OK(cb_model_create("lenet1", &m));
    if (!m) return;
    for (size_t i = 0; i < m->graph.n_params; i++) m->graph.params[i] = NAN;
    cb_dataset d = {.n = 10, .c = 1, .h = 28, .w = 28, .classes = 10};
    d.x = calloc(10 * 784, sizeof *d.x);
    d.y = malloc(10 * sizeof *d.y);
    for (int i = 0; i < 10; i++) d.y[i] = (float)i;
    cb_evaluator *ev;
    CHECK_OK(cb_evaluator_create(m, 4, 10, CB_KERNELS_FAST, &ev));
    cb_eval_result r;
    CHECK_OK(cb_evaluate(ev, &d, 1, &r));
    CHECK(r.total == 10 && r.nonfinite == 10 && r.correct == 1); /* every sample predicted as class 0 */
    CHECK(isnan(r.auc_macro) && !isnan(r.f1_macro));
    cb_evaluator_free(ev);
    cb_dataset_free(&d);
    cb_model_free(m);
}

TEST(evaluation_of_a_nan_model_finishes_and_counts_it)
{
    bounded("evaluation of LeNet-1 with NaN weights", nan_model_evaluation, 60);
}
