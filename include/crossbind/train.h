/* crossbind: the study's training and evaluation protocol (protocol
 * section 3): full-set evaluation after every epoch, excluded from the
 * training time; optional subactivity timing. */
#ifndef CROSSBIND_TRAIN_H
#define CROSSBIND_TRAIN_H

#include "crossbind/data.h"
#include "crossbind/exec.h"
#include "crossbind/model.h"
#include "crossbind/optim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cb_eval_result {
    int64_t correct, total;
    double accuracy, loss;       /* loss: mean over samples */
    double f1_macro, auc_macro;  /* NaN unless metrics were asked for */
    double time_s;               /* the pass, batch copies included */
    /* Samples whose outputs hold a NaN or an infinity (a diverged or broken
     * model): the pass still completes, with predictions, F1 and AUC as
     * crossbind/stats.h defines them for such scores (AUC NaN where a
     * probability it ranks is NaN). */
    int64_t nonfinite;
} cb_eval_result;

/* Owns an inference executor and the buffers one data set needs, so that
 * evaluating allocates nothing. */
typedef struct cb_evaluator cb_evaluator;
cb_status cb_evaluator_create(cb_model *m, int batch, int64_t max_samples, cb_kernels kernels,
                              cb_evaluator **out);
void cb_evaluator_free(cb_evaluator *ev);
/* One pass over `d` in file order. with_metrics adds macro F1 and AUC
 * (and turns the stored scores into probabilities). */
cb_status cb_evaluate(cb_evaluator *ev, const cb_dataset *d, int with_metrics, cb_eval_result *out);
/* After cb_evaluate: the predicted class per sample, and the scores:
 * probabilities after a pass with metrics, the model's raw outputs otherwise. */
const int *cb_evaluator_predictions(const cb_evaluator *ev);
const float *cb_evaluator_scores(const cb_evaluator *ev);
/* The model's raw outputs (logits) of the last pass, [n, classes]. */
const float *cb_evaluator_logits(const cb_evaluator *ev);

typedef struct cb_train_progress {
    int epoch, epochs;              /* 1-based */
    int64_t step, steps;            /* within the epoch */
    double last_loss;               /* of the latest batch */
    double elapsed_s;               /* since training started */
    const struct cb_epoch_stats *finished; /* non-NULL once per finished epoch */
} cb_train_progress;

typedef struct cb_train_options {
    int epochs;
    int batch;
    cb_optim_config optim;
    uint64_t shuffle_seed;
    int shuffle;                    /* 0: file order, as the protocol */
    int subactivities;              /* time load / forward+loss / backward+step */
    cb_kernels kernels;
    void (*progress)(const cb_train_progress *p, void *user);
    void *user;
} cb_train_options;

typedef struct cb_epoch_stats {
    int epoch;
    double train_acc, test_acc, train_loss, test_loss;
    double train_time_s, eval_time_s;
} cb_epoch_stats;

typedef struct cb_train_result {
    cb_epoch_stats *epochs;         /* owned, n_epochs entries */
    int n_epochs;
    double training_time_s, eval_time_s, total_time_s;
    double load_s, forward_s, backward_s; /* subactivities (0 unless asked) */
    cb_eval_result final_test;      /* with macro F1 and AUC */
    char plan_sha256[65];           /* the training executor's plan (cb_exec_plan_sha256) */
} cb_train_result;

/* Trains `m` from its current parameters. On failure the epochs completed so
 * far stay in `out` (free it either way). */
cb_status cb_train(cb_model *m, const cb_dataset *train, const cb_dataset *test,
                   const cb_train_options *o, cb_train_result *out);
void cb_train_result_free(cb_train_result *r);

#ifdef __cplusplus
}
#endif
#endif
