#include "eval.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>

#include "json.h"

namespace cb {
namespace F = torch::nn::functional;

namespace {

// NumPy's mean of a short list of doubles: its pairwise sum (8 partial sums
// from 8 values on), so that the metrics equal the Python runner's to the bit.
double numpy_mean(const std::vector<double>& v) {
    if (v.empty()) return NAN;
    size_t n = v.size();
    double s;
    if (n < 8) {
        s = 0.0;  // NumPy starts from -0.0, which adds the same
        for (double x : v) s += x;
    } else {
        double r[8];
        for (int j = 0; j < 8; j++) r[j] = v[size_t(j)];
        size_t i = 8;
        for (; i < n - n % 8; i += 8)
            for (int j = 0; j < 8; j++) r[j] += v[i + size_t(j)];
        s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) s += v[i];
    }
    return s / double(n);
}

double f1_macro(const std::vector<int64_t>& pred, const std::vector<int64_t>& labels, int k) {
    std::vector<double> scores;
    for (int c = 0; c < k; c++) {
        int64_t tp = 0, fp = 0, fn = 0;
        for (size_t i = 0; i < pred.size(); i++) {
            tp += pred[i] == c && labels[i] == c;
            fp += pred[i] == c && labels[i] != c;
            fn += pred[i] != c && labels[i] == c;
        }
        if (tp + fp + fn) scores.push_back(double(2 * tp) / double(2 * tp + fp + fn));
    }
    return numpy_mean(scores);
}

// Mann-Whitney AUC with tied scores sharing their mean rank (a stable sort, as
// NumPy's mergesort).
double auc_binary(const std::vector<float>& score, const std::vector<bool>& positive) {
    size_t n = score.size();
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; i++) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score[a] < score[b]; });
    std::vector<double> ranks(n);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && score[order[j]] == score[order[i]]) j++;
        for (size_t k = i; k < j; k++) ranks[k] = double(i + 1 + j) / 2.0;
        i = j;
    }
    int64_t npos = 0;
    double rank_sum = 0;  // half-integers below 2^53: exact in any order
    for (size_t k = 0; k < n; k++)
        if (positive[order[k]]) { npos++; rank_sum += ranks[k]; }
    int64_t nneg = int64_t(n) - npos;
    if (npos == 0 || nneg == 0) return NAN;
    return (rank_sum - double(npos * (npos + 1)) / 2.0) / double(npos * nneg);
}

}  // namespace

EvalResult evaluate(Model& model, const Dataset& d, int64_t batch, bool with_metrics, const std::string& name) {
    model.train(false);
    bool bin = is_binary(name);
    EvalResult r;
    int64_t n = d.size();
    double t0 = now_s();
    std::vector<torch::Tensor> outs;
    {
        torch::NoGradGuard no_grad;
        for (int64_t i = 0; i < n; i += batch) {
            int64_t len = std::min(batch, n - i);
            torch::Tensor xb = d.x.narrow(0, i, len), yb = d.y.narrow(0, i, len);
            torch::Tensor out = model.forward(xb);
            if (bin)
                r.loss += F::binary_cross_entropy(out.squeeze(1), yb, F::BinaryCrossEntropyFuncOptions().reduction(torch::kSum)).item<double>();
            else
                r.loss += F::cross_entropy(out, yb, F::CrossEntropyFuncOptions().reduction(torch::kSum)).item<double>();
            outs.push_back(out);
        }
    }
    r.seconds = now_s() - t0;
    r.logits = torch::cat(outs);
    torch::Tensor labels = d.y.to(torch::kLong);
    r.pred = bin ? r.logits.select(1, 0).ge(0.5).to(torch::kLong) : r.logits.argmax(1);
    r.correct = r.pred.eq(labels).sum().item<int64_t>();
    r.accuracy = double(r.correct) / double(n);
    r.loss /= double(n);
    if (with_metrics) {
        torch::Tensor pc = r.pred.contiguous(), lc = labels.contiguous();
        std::vector<int64_t> pv(pc.data_ptr<int64_t>(), pc.data_ptr<int64_t>() + n);
        std::vector<int64_t> lv(lc.data_ptr<int64_t>(), lc.data_ptr<int64_t>() + n);
        int k = bin ? 2 : 10;
        r.probs = bin ? r.logits : torch::softmax(r.logits, 1);
        torch::Tensor probs = r.probs.contiguous();
        r.f1 = f1_macro(pv, lv, k);
        std::vector<double> aucs;
        for (int c = bin ? 1 : 0; c < k; c++) {
            torch::Tensor col = probs.select(1, bin ? 0 : c).contiguous();
            std::vector<float> s(col.data_ptr<float>(), col.data_ptr<float>() + n);
            std::vector<bool> pos(size_t(n), false);
            for (int64_t i = 0; i < n; i++) pos[size_t(i)] = lv[size_t(i)] == c;
            double a = auc_binary(s, pos);
            if (!std::isnan(a)) aucs.push_back(a);
        }
        r.auc = bin ? (aucs.empty() ? NAN : aucs[0]) : numpy_mean(aucs);
    }
    return r;
}

int cmd_eval(const Args& args) {
    check_model(args.model);
    if (!args.has("weights")) fail("eval needs --weights FILE");
    std::string device = args.str("device", "cpu");
    if (device != "cpu") fail("device '" + device + "' is not available to this runner (cpu only)");
    int64_t batch = args.integer("batch", 128, 1), repeat = args.integer("repeat", 5, 1);
    int64_t threads = args.integer("threads", int64_t(std::max(1u, std::thread::hardware_concurrency())), 1);
    int64_t limit = args.integer("limit-test", 0, 0);
    setup_torch(threads);
    std::string weights = args.str("weights");
    Model model = load_model(args.model, weights);
    Dataset test = load_data(args.model, args.str("data", default_data_dir(args.model)), false, limit);
    evaluate(model, test, batch, false, args.model);  // warm-up
    std::vector<double> times;
    std::vector<int64_t> counts;
    EvalResult r;
    for (int64_t i = 0; i < repeat; i++) {
        // F1 and AUC from the last timed pass; its time excludes the metrics
        r = evaluate(model, test, batch, i == repeat - 1, args.model);
        times.push_back(r.seconds);
        counts.push_back(r.correct);
    }
    if (args.has("predictions")) {
        std::string path = args.str("predictions");
        std::ofstream f(path);
        if (!f) fail("cannot write " + path);
        int64_t k = r.probs.size(1);
        f << "index,label,prediction";
        for (int64_t j = 0; j < k; j++) f << ",p" << j;
        f << "\n";
        torch::Tensor labels = test.y.to(torch::kLong), probs = r.probs.to(torch::kDouble).contiguous();
        char buf[32];
        for (int64_t i = 0; i < test.size(); i++) {
            f << i << "," << labels[i].item<int64_t>() << "," << r.pred[i].item<int64_t>();
            for (int64_t j = 0; j < k; j++) {
                std::snprintf(buf, sizeof buf, "%.9g", probs[i][j].item<double>());
                f << "," << buf;
            }
            f << "\n";
        }
        if (!f) fail("cannot write " + path);
    }
    if (args.has("logits")) {
        try {
            write_npy(args.str("logits"), r.logits);
        } catch (const std::runtime_error& e) {
            fail(e.what());
        }
    }
    double mean = 0;
    for (double t : times) mean += t;
    mean /= double(times.size());
    JsonObject res;
    res.str("binding", kBinding).str("model", args.model).str("load_mode", model.mode).str("format", model.kind)
        .str("weights", weights).integer("correct", r.correct).integer("total", test.size()).num("accuracy", r.accuracy)
        .num("loss", r.loss).num("f1_macro", r.f1).num("auc_macro", r.auc).integer("batch", batch)
        .integer("threads", threads).raw("times_s", json_list(times)).raw("correct_per_pass", json_list(counts))
        .num("mean_time_s", mean);
    if (args.has("json")) {
        std::cout << res.dump() << std::endl;
    } else {
        std::printf("%s: %lld/%lld correct, accuracy %.4f, loss %.4f, macro F1 %.4f, AUC %.4f, mean time %.4fs over %lld passes\n",
                    args.model.c_str(), (long long)r.correct, (long long)test.size(), r.accuracy, r.loss, r.f1, r.auc, mean,
                    (long long)repeat);
    }
    return 0;
}

}  // namespace cb
