// Tensor files read and written by this runner's own code: safetensors
// (8-byte little-endian header length, JSON header, raw little-endian data)
// and NumPy .npy. Readers throw std::runtime_error naming the file and what
// is wrong with it.
#pragma once
#include <ATen/ATen.h>

#include <string>
#include <utility>
#include <vector>

namespace cb {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;
using Metadata = std::vector<std::pair<std::string, std::string>>;

// Every tensor of the file (F32, F64, I64, I32, U8) in the header's order.
NamedTensors read_safetensors(const std::string& path);
// Writes the tensors in the given order (contiguous, little endian), the
// header as Python's json.dumps(separators=(",", ":")) writes it padded to
// 8 bytes, through a temporary file renamed into place.
void write_safetensors(const std::string& path, const NamedTensors& tensors, const Metadata& metadata);

// A C-order .npy of int64, float32, float64 or uint8.
at::Tensor read_npy(const std::string& path);
// float32 [N, K] (any float tensor is converted), format version 1.0.
void write_npy(const std::string& path, const at::Tensor& t);

std::string read_file(const std::string& path);  // the whole file; throws when it cannot be read
void write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace cb
