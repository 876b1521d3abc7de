// Evaluation passes and their metrics, as the Python runner's evaluate():
// one pass in file order, in evaluation mode without gradients.
#pragma once
#include <torch/torch.h>

#include <string>

#include "common.h"
#include "data.h"
#include "models.h"

namespace cb {

struct EvalResult {
    int64_t correct = 0;
    double accuracy = 0, loss = 0;  // mean loss over the samples
    double f1 = NAN, auc = NAN;     // with_metrics only
    double seconds = 0;             // the pass without the metrics
    torch::Tensor pred, probs, logits;
};

// Binary models: prediction p >= 0.5, binary cross-entropy, F1 over both
// classes and the AUC of p; otherwise argmax, cross-entropy, macro F1 and
// macro one-vs-rest AUC of the softmax.
EvalResult evaluate(Model& model, const Dataset& d, int64_t batch, bool with_metrics, const std::string& name);

int cmd_eval(const Args& args);

}  // namespace cb
