// The study's data sets, read as runners/pytorch/cb_data.py reads them: the
// same files, sample order, limits and scaling.
#pragma once
#include <ATen/ATen.h>

#include <string>

namespace cb {

struct Dataset {
    at::Tensor x;  // float32 [n,1,28,28] / [n,3,32,32] in [0,1], or int64 token ids [n,300]
    at::Tensor y;  // int64 class labels, or float32 0/1 for the binary models
    int64_t size() const { return x.size(0); }
};

// The training or test split of the model's data set; limit 0 = all. Fails
// with the file and what is wrong with it.
Dataset load_data(const std::string& model, const std::string& dir, bool train, int64_t limit);

}  // namespace cb
