#include "bench.h"

#include <cstdlib>
#include <iostream>
#include <memory>

#include "json.h"
#include "models.h"

namespace cb {
namespace F = torch::nn::functional;

namespace {

// Synthetic samples s0 .. s0+n-1: sample s is the flat index range
// [s * size, (s + 1) * size) of the input, pixel i = (i % 251) / 251, token
// i = (i * 7919) % 10000; label s % 10 (s % 2 for the binary models).
std::pair<torch::Tensor, torch::Tensor> batch_of(const std::string& name, int64_t s0, int64_t n) {
    std::vector<int64_t> shape = input_shape(name);
    int64_t size = 1;
    for (int64_t d : shape) size *= d;
    shape.insert(shape.begin(), n);
    torch::Tensor i = torch::arange(s0 * size, (s0 + n) * size, torch::kLong);
    torch::Tensor s = torch::arange(s0, s0 + n, torch::kLong);
    if (is_binary(name)) return {((i * 7919) % 10000).reshape(shape), (s % 2).to(torch::kFloat)};
    return {((i % 251).to(torch::kFloat) / 251.0).reshape(shape), s % 10};
}

torch::Tensor predict(const std::string& name, Model& model, const torch::Tensor& x) {
    torch::Tensor out = model.forward(x);
    // The IMDb models end in a sigmoid: their output is already a probability.
    if (is_binary(name)) return out.reshape(-1).ge(0.5).to(torch::kLong);
    return out.argmax(1);
}

std::vector<double> train_units(const Args& a, Model& model, int64_t batch, int64_t samples, int64_t repeat) {
    Protocol p = protocol_of(a.model);
    std::unique_ptr<torch::optim::Optimizer> opt;
    if (p.optimizer == "adam") opt = std::make_unique<torch::optim::Adam>(model.parameters(), torch::optim::AdamOptions(p.lr));
    else opt = std::make_unique<torch::optim::SGD>(model.parameters(), torch::optim::SGDOptions(p.lr));
    model.train(true);
    auto step = [&](const torch::Tensor& x, const torch::Tensor& y) {
        double t0 = now_s();
        opt->zero_grad(true);
        torch::Tensor out = model.forward(x);
        torch::Tensor loss = is_binary(a.model) ? F::binary_cross_entropy(out.squeeze(1), y) : F::cross_entropy(out, y);
        loss.backward();
        opt->step();
        return now_s() - t0;
    };
    {
        auto b = batch_of(a.model, 0, batch);  // 1 warm-up step
        step(b.first, b.second);
    }
    std::vector<double> times;
    for (int64_t r = 0; r < repeat; r++) {
        double t = 0;
        for (int64_t s0 = 0; s0 < samples; s0 += batch) {
            auto b = batch_of(a.model, s0, std::min(batch, samples - s0));
            t += step(b.first, b.second);
        }
        times.push_back(t);
    }
    return times;
}

std::vector<double> infer_units(const Args& a, Model& model, int64_t batch, int64_t samples, int64_t repeat) {
    model.train(false);
    torch::NoGradGuard no_grad;
    std::vector<double> times;
    for (int64_t r = 0; r <= repeat; r++) {  // pass 0 warms up
        double t = 0;
        for (int64_t s0 = 0; s0 < samples; s0 += batch) {
            torch::Tensor x = batch_of(a.model, s0, std::min(batch, samples - s0)).first;
            double t0 = now_s();
            predict(a.model, model, x);
            t += now_s() - t0;
        }
        if (r) times.push_back(t);
    }
    return times;
}

std::vector<double> latency_units(const Args& a, Model& model, int64_t samples) {
    model.train(false);
    torch::NoGradGuard no_grad;
    std::vector<double> times;
    for (int64_t s = 0; s < samples + 5; s++) {  // 5 warm-up samples
        torch::Tensor x = batch_of(a.model, s, 1).first;
        double t0 = now_s();
        predict(a.model, model, x);
        if (s >= 5) times.push_back(now_s() - t0);
    }
    return times;
}

}  // namespace

int cmd_bench(const Args& a) {
    if (!a.has("model") || !a.has("kind") || !a.has("weights")) fail("bench needs --model, --kind and --weights");
    Args args = a;
    args.model = a.str("model");
    check_model(args.model);
    std::string kind = a.str("kind");
    if (kind != "train" && kind != "infer" && kind != "latency" && kind != "startup")
        fail("bench: --kind is train, infer, latency or startup, got '" + kind + "'");
    int64_t batch = a.integer("batch", 1, 1), samples = a.integer("samples", 1, 1);
    int64_t repeat = a.integer("repeat", 1, 1), threads = a.integer("threads", 1, 1);
    if (kind == "train" && samples < batch) fail("bench: a training unit needs at least one whole batch (--samples >= --batch)");
    setup_torch(threads);
    Model model = load_model(args.model, a.str("weights"));
    if (kind == "startup") {
        model.train(false);
        int64_t label;
        {
            torch::NoGradGuard no_grad;
            label = predict(args.model, model, batch_of(args.model, 0, 1).first)[0].item<int64_t>();
        }
        // When the answer was ready, on the clock the harness started us by.
        double t = monotonic_s();
        std::cout << JsonObject().integer("label", label).num("monotonic_s", t).integer("vmhwm_kib", vmhwm_kib()).dump()
                  << std::endl;
        return 0;
    }
    std::vector<double> times = kind == "train" ? train_units(args, model, batch, samples, repeat)
                                : kind == "infer" ? infer_units(args, model, batch, samples, repeat)
                                                  : latency_units(args, model, samples);
    const char* ob = std::getenv("OPENBLAS_NUM_THREADS");
    std::cout << JsonObject().raw("times_s", json_list(times)).str("torch", torch_version())
                     .integer("torch_threads", at::get_num_threads()).str("openblas_threads", ob ? ob : "")
                     .integer("vmhwm_kib", vmhwm_kib()).dump()
              << std::endl;
    return 0;
}

}  // namespace cb
