#include "models.h"

#include <caffe2/serialize/inline_container.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "common.h"

namespace cb {
namespace F = torch::nn::functional;
using torch::Tensor;
using torch::nn::Conv2dOptions;

namespace {

struct LeNet1 : Net {
    torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
    torch::nn::Linear fc{nullptr};
    LeNet1() {
        conv1 = register_module("conv1", torch::nn::Conv2d(Conv2dOptions(1, 4, 5).padding(2)));
        conv2 = register_module("conv2", torch::nn::Conv2d(Conv2dOptions(4, 12, 5)));
        fc = register_module("fc", torch::nn::Linear(300, 10));
    }
    Tensor forward(Tensor x) override {
        x = F::max_pool2d(torch::tanh(conv1(x)), F::MaxPool2dFuncOptions(2));
        x = F::max_pool2d(torch::tanh(conv2(x)), F::MaxPool2dFuncOptions(2));
        return fc(torch::flatten(x, 1));
    }
};

struct LeNet5 : Net {
    torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr};
    torch::nn::Linear fc1{nullptr}, fc2{nullptr};
    LeNet5() {
        conv1 = register_module("conv1", torch::nn::Conv2d(Conv2dOptions(1, 6, 5).padding(2)));
        conv2 = register_module("conv2", torch::nn::Conv2d(Conv2dOptions(6, 16, 5)));
        conv3 = register_module("conv3", torch::nn::Conv2d(Conv2dOptions(16, 120, 5)));
        fc1 = register_module("fc1", torch::nn::Linear(120, 84));
        fc2 = register_module("fc2", torch::nn::Linear(84, 10));
    }
    Tensor forward(Tensor x) override {
        x = F::max_pool2d(torch::tanh(conv1(x)), F::MaxPool2dFuncOptions(2));
        x = F::max_pool2d(torch::tanh(conv2(x)), F::MaxPool2dFuncOptions(2));
        x = torch::tanh(conv3(x));
        x = torch::tanh(fc1(torch::flatten(x, 1)));
        return fc2(x);
    }
};

// 3x3 convolutions without bias, each with BatchNorm (PyTorch defaults) and
// ReLU; dense 512-4096-4096-10 with ReLU and dropout. Sequential containers
// named features / classifier give the state-dict names features.0.weight ...
struct VGG16 : Net {
    torch::nn::Sequential features, classifier;
    explicit VGG16(double dropout) {
        const int plan[] = {64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0};
        int64_t c = 3;
        for (int v : plan) {
            if (v == 0) {
                features->push_back(torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2)));
            } else {
                features->push_back(torch::nn::Conv2d(Conv2dOptions(c, v, 3).padding(1).bias(false)));
                features->push_back(torch::nn::BatchNorm2d(v));
                features->push_back(torch::nn::ReLU());
                c = v;
            }
        }
        classifier->push_back(torch::nn::Linear(512, 4096));
        classifier->push_back(torch::nn::ReLU());
        classifier->push_back(torch::nn::Dropout(dropout));
        classifier->push_back(torch::nn::Linear(4096, 4096));
        classifier->push_back(torch::nn::ReLU());
        classifier->push_back(torch::nn::Dropout(dropout));
        classifier->push_back(torch::nn::Linear(4096, 10));
        register_module("features", features);
        register_module("classifier", classifier);
    }
    Tensor forward(Tensor x) override { return classifier->forward(torch::flatten(features->forward(x), 1)); }
};

// Embedding 10,000 x 300, one recurrent layer (hidden 512, batch first), the
// last step, dropout, dense 512 -> 1, sigmoid.
struct RNNClassifier : Net {
    torch::nn::Embedding embedding{nullptr};
    torch::nn::LSTM lstm{nullptr};
    torch::nn::GRU gru{nullptr};
    torch::nn::Dropout dropout{nullptr};
    torch::nn::Linear fc{nullptr};
    RNNClassifier(const std::string& kind, double p) {
        embedding = register_module("embedding", torch::nn::Embedding(10000, 300));
        if (kind == "lstm")
            lstm = register_module("rnn", torch::nn::LSTM(torch::nn::LSTMOptions(300, 512).batch_first(true)));
        else
            gru = register_module("rnn", torch::nn::GRU(torch::nn::GRUOptions(300, 512).batch_first(true)));
        dropout = register_module("dropout", torch::nn::Dropout(p));
        fc = register_module("fc", torch::nn::Linear(512, 1));
    }
    Tensor forward(Tensor x) override {
        Tensor e = embedding(x);
        Tensor h = lstm ? std::get<0>(lstm(e)) : std::get<0>(gru(e));
        return torch::sigmoid(fc(dropout(h.select(1, -1))));
    }
};

}  // namespace

std::shared_ptr<Net> build_model(const std::string& name, bool no_dropout) {
    check_model(name);
    double p = no_dropout ? 0.0 : 0.5;
    if (name == "lenet1") return std::make_shared<LeNet1>();
    if (name == "lenet5") return std::make_shared<LeNet5>();
    if (name == "vgg16") return std::make_shared<VGG16>(p);
    return std::make_shared<RNNClassifier>(name, p);
}

NamedTensors state_dict(torch::nn::Module& m) {
    NamedTensors out;
    for (const auto& mod : m.named_modules("", /*include_self=*/true)) {
        std::string prefix = mod.key().empty() ? "" : mod.key() + ".";
        for (const auto& p : mod.value()->named_parameters(/*recurse=*/false)) out.emplace_back(prefix + p.key(), p.value());
        for (const auto& b : mod.value()->named_buffers(/*recurse=*/false)) out.emplace_back(prefix + b.key(), b.value());
    }
    return out;
}

static bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

static std::string shape_text(const torch::Tensor& t) {
    std::string s = "[";
    for (int64_t k = 0; k < t.dim(); k++) s += (k ? ", " : "") + std::to_string(t.size(k));
    return s + "]";
}

void load_weights(Net& model, const std::string& path) {
    NamedTensors file;
    try {
        file = read_safetensors(path);
    } catch (const std::runtime_error& e) {
        std::string why = e.what();  // the reader's messages name the file
        fail("cannot read weights " + (why.rfind(path, 0) == 0 ? why : path + ": " + why));
    }
    auto find = [&](const std::string& k) -> torch::Tensor* {
        for (auto& nt : file)
            if (nt.first == k) return &nt.second;
        return nullptr;
    };
    NamedTensors state = state_dict(model);
    std::string missing;
    for (const auto& s : state)
        if (!find(s.first) && !ends_with(s.first, "num_batches_tracked")) missing += (missing.empty() ? "" : ", ") + s.first;
    if (!missing.empty()) fail(path + ": parameters missing from the file: " + missing);
    torch::NoGradGuard no_grad;
    for (auto& s : state) {
        torch::Tensor* t = find(s.first);
        if (ends_with(s.first, "num_batches_tracked")) {
            // BatchNorm's step counter is not a parameter crossbind keeps: absent, it starts at 0.
            if (!t) { s.second.zero_(); continue; }
            if (t->numel() == 1) { s.second.copy_(t->reshape(s.second.sizes()).to(torch::kLong)); continue; }
        }
        if (t->sizes() != s.second.sizes())
            fail(path + ": parameter " + s.first + " has shape " + shape_text(*t) + ", the model needs " + shape_text(s.second));
        s.second.copy_(t->to(s.second.scalar_type()));
    }
}

void save_safetensors(Net& model, const std::string& path, const std::string& name) {
    write_safetensors(path, state_dict(model), {{"model", name}, {"format", "crossbind-weights/1"}});
}

torch::Tensor Model::forward(const torch::Tensor& x) {
    if (net) return net->forward(x);
    return script->forward({x}).toTensor();
}

void Model::train(bool on) {
    if (net) net->train(on);
    else script->train(on);
}

std::vector<torch::Tensor> Model::parameters() {
    if (net) return net->parameters();
    std::vector<torch::Tensor> out;
    for (const auto& p : script->parameters()) out.push_back(p);
    return out;
}

std::string file_kind(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) fail("cannot open weights " + path + ": " + std::strerror(errno));
    char head[9] = {0};
    f.read(head, 9);
    size_t n = size_t(f.gcount());
    if (n >= 4 && std::memcmp(head, "PK\x03\x04", 4) == 0) {
        // A zip: TorchScript archives hold constants.pkl, torch.save's state dicts do not.
        try {
            caffe2::serialize::PyTorchStreamReader reader(path);
            return reader.hasRecord("constants.pkl") ? "torchscript" : "pt";
        } catch (const c10::Error& e) {
            fail(path + ": not a readable PyTorch zip archive: " + e.what_without_backtrace());
        }
    }
    if (n == 9 && head[8] == '{' && head[5] == 0 && head[6] == 0 && head[7] == 0) return "safetensors";
    if (n >= 2 && head[0] == 0x08) return "onnx";
    return "unknown";
}

Model load_model(const std::string& name, const std::string& path) {
    check_model(name);
    std::string kind = file_kind(path);
    Model m;
    m.kind = kind;
    if (kind == "torchscript") {
        try {
            m.script = std::make_shared<torch::jit::Module>(torch::jit::load(path, torch::kCPU));
        } catch (const c10::Error& e) {
            fail(path + ": cannot load TorchScript: " + e.what_without_backtrace());
        }
        m.mode = "serialization";
        return m;
    }
    if (kind == "onnx") fail(path + ": libtorch cannot run ONNX models (unsupported load mode for this binding)");
    if (kind == "pt")
        fail(path + ": a torch.save state dict (.pt) cannot be read by libtorch's C++ API (torch::pickle_load "
                    "turns its OrderedDict into None); use the .safetensors or TorchScript (.ts) file");
    if (kind != "safetensors") fail(path + ": unrecognised weights format");
    m.net = build_model(name, false);
    load_weights(*m.net, path);
    m.mode = "parameters";
    return m;
}

}  // namespace cb
