#include "train.h"

#include <ATen/CPUGeneratorImpl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>

#include "data.h"
#include "eval.h"
#include "json.h"
#include "models.h"

namespace cb {
namespace F = torch::nn::functional;

namespace {

torch::Tensor loss_of(const std::string& name, const torch::Tensor& out, const torch::Tensor& y) {
    if (is_binary(name)) return F::binary_cross_entropy(out.squeeze(1), y);
    return F::cross_entropy(out, y);
}

void make_dirs(const std::string& dir) {
    std::string path;
    size_t pos = 0;
    while (pos != std::string::npos) {
        pos = dir.find('/', pos + 1);
        path = dir.substr(0, pos);
        if (!path.empty() && mkdir(path.c_str(), 0777) != 0 && errno != EEXIST)
            fail("output directory " + dir + " is not writable: cannot create " + path + ": " + std::strerror(errno));
    }
    std::string probe = dir + "/.probe";
    FILE* f = std::fopen(probe.c_str(), "w");
    if (!f) fail("output directory " + dir + " is not writable: " + std::strerror(errno));
    std::fclose(f);
    std::remove(probe.c_str());
}

void copy_file(const std::string& from, const std::string& to) {
    std::ifstream in(from, std::ios::binary);
    if (!in) fail("cannot open " + from);
    std::ofstream out(to, std::ios::binary | std::ios::trunc);
    out << in.rdbuf();
    if (!out) fail("cannot write " + to);
}

}  // namespace

int cmd_train(const Args& args) {
    const std::string& name = args.model;
    check_model(name);
    if (args.has("seed") && args.has("run")) fail("give --seed or --run, not both");
    int64_t run = args.integer("run", 1, 1);
    if (run > 5) fail("--run must be 1 to 5, got " + std::to_string(run));
    int64_t seed = args.has("seed") ? args.integer("seed", 0, 0) : kSeeds[run - 1];
    std::string device = args.str("device", "cpu");
    if (device != "cpu") fail("device '" + device + "' is not available to this runner (cpu only)");
    // What the user left out comes from the protocol's configuration.
    Protocol proto = protocol_of(name);
    std::string optimizer = args.str("optimizer", "");
    double lr;
    if (optimizer.empty()) {
        optimizer = proto.optimizer;
        lr = args.real("lr", proto.lr);
    } else {
        if (optimizer != "sgd" && optimizer != "adam") fail("--optimizer is sgd or adam, got '" + optimizer + "'");
        lr = args.real("lr", optimizer == "adam" ? 1e-3 : 0.05);
    }
    double momentum = args.real("momentum", 0.0), weight_decay = args.real("weight-decay", 0.0);
    int64_t batch = args.integer("batch", proto.batch, 1), epochs = args.integer("epochs", proto.epochs, 1);
    int64_t threads = args.integer("threads", int64_t(std::max(1u, std::thread::hardware_concurrency())), 1);
    int64_t limit_train = args.integer("limit-train", 0, 0), limit_test = args.integer("limit-test", 0, 0);
    bool shuffle = args.has("shuffle"), subactivities = args.has("subactivities"), quiet = args.has("quiet");
    bool no_dropout = args.has("no-dropout");
    std::string data_dir = args.str("data", default_data_dir(name));
    std::string init = args.str("init", "");
    setup_torch(threads);

    std::string out = args.str("out", "runs/" + name + "-" + std::to_string(seed) + "-" + kBinding);
    make_dirs(out);
    std::string run_json = out + "/run.json";
    std::remove(run_json.c_str());
    Dataset train = load_data(name, data_dir, true, limit_train);
    Dataset test = load_data(name, data_dir, false, limit_test);
    torch::manual_seed(uint64_t(seed));
    std::shared_ptr<Net> model = build_model(name, no_dropout);  // parity runs: each binding would draw its own masks
    if (!init.empty()) {
        std::string kind = file_kind(init);
        if (kind != "safetensors") fail("--init needs a .safetensors file; " + init + " is " + (kind == "unknown" ? "not one" : kind));
        load_weights(*model, init);
    }
    save_safetensors(*model, out + "/init.safetensors", name);
    if (is_binary(name)) copy_file(data_dir + "/vocab.txt", out + "/vocab.txt");  // the vocabulary travels with the run
    std::unique_ptr<torch::optim::Optimizer> opt;
    if (optimizer == "adam")
        opt = std::make_unique<torch::optim::Adam>(model->parameters(), torch::optim::AdamOptions(lr).weight_decay(weight_decay));
    else
        opt = std::make_unique<torch::optim::SGD>(
            model->parameters(), torch::optim::SGDOptions(lr).momentum(momentum).weight_decay(weight_decay));
    auto gen = at::make_generator<at::CPUGeneratorImpl>(uint64_t(seed));

    JsonObject info;
    info.str("format", "crossbind-run/1").str("status", "incomplete").str("binding", kBinding).str("model", name)
        .integer("seed", seed).integer("run", args.has("seed") ? 0 : run).str("data", data_dir)
        .integer("n_train", train.size()).integer("n_test", test.size()).integer("batch", batch).str("optimizer", optimizer)
        .num("lr", lr).num("momentum", momentum).num("weight_decay", weight_decay).boolean("shuffle", shuffle)
        .boolean("dropout", !no_dropout).raw("init", init.empty() ? "null" : json_string(init)).integer("threads", threads)
        .raw("versions", JsonObject().str("libtorch", torch_version()).str("compiler", compiler_version()).dump(2, 1))
        .str("machine", machine()).raw("epochs", "[]");
    std::vector<JsonObject> epoch_log;
    auto epochs_json = [&]() {
        std::string s = "[";
        for (size_t k = 0; k < epoch_log.size(); k++) s += (k ? "," : "") + std::string("\n    ") + epoch_log[k].dump(2, 2);
        return s + (epoch_log.empty() ? "]" : "\n  ]");
    };
    auto write_run = [&]() {
        info.raw("epochs", epochs_json());
        write_file_atomic(run_json, info.dump(2) + "\n");
    };

    Model m{model, nullptr, "parameters", "safetensors"};
    double sub_load = 0, sub_forward = 0, sub_backward = 0, eval_total = 0;
    int64_t n = train.size();
    EvalResult te;
    double t_start = now_s();
    for (int64_t epoch = 1; epoch <= epochs; epoch++) {
        model->train();
        torch::Tensor order;
        if (shuffle) order = torch::randperm(n, gen, torch::kLong);
        double t_epoch = now_s();
        for (int64_t i = 0; i < n; i += batch) {
            double t0 = now_s();
            int64_t len = std::min(batch, n - i);
            torch::Tensor xb, yb;
            if (!order.defined()) {
                xb = train.x.narrow(0, i, len);
                yb = train.y.narrow(0, i, len);
            } else {
                torch::Tensor idx = order.narrow(0, i, len);
                xb = train.x.index({idx});
                yb = train.y.index({idx});
            }
            double t1 = now_s();
            opt->zero_grad(true);
            torch::Tensor loss = loss_of(name, model->forward(xb), yb);
            double t2 = now_s();
            loss.backward();
            opt->step();
            if (subactivities) {
                double t3 = now_s();
                sub_load += t1 - t0;
                sub_forward += t2 - t1;
                sub_backward += t3 - t2;
            }
        }
        double t_eval = now_s();
        EvalResult tr = evaluate(m, train, batch, false, name);
        bool last = epoch == epochs;
        te = evaluate(m, test, batch, last, name);
        double eval_s = now_s() - t_eval;
        eval_total += eval_s;
        JsonObject e;
        e.integer("epoch", epoch).num("train_acc", tr.accuracy).num("test_acc", te.accuracy).num("train_loss", tr.loss)
            .num("test_loss", te.loss).num("train_time_s", t_eval - t_epoch).num("eval_time_s", eval_s);
        epoch_log.push_back(e);
        if (!quiet)
            std::fprintf(stderr, "epoch %lld/%lld  train acc %.4f loss %.4f  test acc %.4f loss %.4f  (%.2fs train, %.2fs eval)\n",
                         (long long)epoch, (long long)epochs, tr.accuracy, tr.loss, te.accuracy, te.loss, t_eval - t_epoch, eval_s);
        if (!last) write_run();
    }
    double total = now_s() - t_start;
    save_safetensors(*model, out + "/final.safetensors", name);
    info.str("status", "complete").num("training_time_s", total - eval_total).num("eval_time_s", eval_total)
        .num("total_time_s", total).num("test_accuracy", te.accuracy).integer("test_correct", te.correct)
        .num("f1_macro", te.f1).num("auc_macro", te.auc);
    if (subactivities)
        info.raw("subactivities_s", JsonObject().num("load", sub_load).num("forward", sub_forward).num("backward", sub_backward).dump(2, 1));
    write_run();
    std::printf("%s: test accuracy %.4f (%lld/%lld), macro F1 %.4f, AUC %.4f, training %.2fs, eval %.2fs -> %s\n", name.c_str(),
                te.accuracy, (long long)te.correct, (long long)test.size(), te.f1, te.auc, total - eval_total, eval_total,
                run_json.c_str());
    return 0;
}

}  // namespace cb
