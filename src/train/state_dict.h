// State dicts: a module's named parameters and buffers, read out and loaded back.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <string>
#include <utility>
#include <vector>

namespace codefy::train {

/// Named tensors in a stable order (a state_dict).
using StateDict = std::vector<std::pair<std::string, torch::Tensor>>;

/// Parameters and buffers of a module, named as PyTorch names them ("0.weight"),
/// in PyTorch's order. The tensors are detached aliases of the module's own.
StateDict state_dict(const torch::nn::Module& module);

/// Copies `dict` into the module's parameters and buffers. Throws
/// std::runtime_error naming every missing, unexpected, duplicate or
/// mis-shaped key, and then leaves the module as it was.
void load_state_dict(torch::nn::Module& module, const StateDict& dict);

/// `t` as it goes into a weights file: detached, on the CPU, contiguous and
/// owning exactly its bytes (a slice of a larger tensor would otherwise drag
/// the whole storage along). Throws std::invalid_argument naming `name` for an
/// undefined or non-dense tensor.
torch::Tensor tensor_for_file(const std::string& name, const torch::Tensor& t);

}  // namespace codefy::train
