// The study's models as torch::nn modules, with the module and parameter
// names of runners/pytorch/crossbind_torch.py (so state-dict names match) and
// the same forward operations in the same order; loading and saving them.
#pragma once
#include <torch/script.h>
#include <torch/torch.h>

#include <memory>
#include <string>

#include "tensor_io.h"

namespace cb {

struct Net : torch::nn::Module {
    virtual torch::Tensor forward(torch::Tensor x) = 0;
};

// A fresh model drawn from torch's default generator (seed it first);
// dropout probability 0 with no_dropout.
std::shared_ptr<Net> build_model(const std::string& name, bool no_dropout);

// The state dict in PyTorch's order: each module's parameters, then its
// buffers, modules in registration order.
NamedTensors state_dict(torch::nn::Module& m);

// Weights from a safetensors file into the model, as the Python runner's
// load_weights: every state entry must be present with its shape (BatchNorm's
// num_batches_tracked may be absent: 0).
void load_weights(Net& model, const std::string& path);
void save_safetensors(Net& model, const std::string& path, const std::string& name);

// A model ready to run: this binding's module (parameters load mode) or a
// TorchScript module (serialization load mode).
struct Model {
    std::shared_ptr<Net> net;
    std::shared_ptr<torch::jit::Module> script;
    std::string mode, kind;  // "parameters"/"serialization"; "safetensors"/"torchscript"

    torch::Tensor forward(const torch::Tensor& x);
    void train(bool on = true);
    std::vector<torch::Tensor> parameters();
};

// The weights format by content: safetensors, pt, torchscript, onnx or unknown.
std::string file_kind(const std::string& path);
Model load_model(const std::string& name, const std::string& path);

}  // namespace cb
