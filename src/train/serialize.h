// Weight files: PyTorch state_dict (.pt/.pth, readable by Python's torch.load)
// and .safetensors. Writes are atomic.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace codefy::train {

/// Named tensors in a stable order (a state_dict).
using StateDict = std::vector<std::pair<std::string, torch::Tensor>>;

/// Parameters and buffers of a module, named as PyTorch names them ("0.weight").
StateDict state_dict(const torch::nn::Module& module);

/// Copies `dict` into the module's parameters and buffers. Throws
/// std::runtime_error naming every missing, unexpected or mis-shaped key.
void load_state_dict(torch::nn::Module& module, const StateDict& dict);

/// Saves by extension: ".safetensors" → safetensors, anything else → a
/// PyTorch pickle of a str→Tensor dict (torch.load reads it). Atomic: a temp
/// file in the same folder renamed over `path`; on failure the old file stays.
/// Creates missing parent folders.
void save_weights(const std::filesystem::path& path, const StateDict& dict);

/// Loads either format (by content, not extension). Throws std::runtime_error
/// naming the path on a missing, truncated or foreign file.
StateDict load_weights(const std::filesystem::path& path);

/// safetensors encoding of a dict (exposed for tests).
std::string encode_safetensors(const StateDict& dict);
StateDict decode_safetensors(const std::string& bytes, const std::string& source);

}  // namespace codefy::train
