// A trained SequentialModel as a TorchScript module: built here in C++ with
// the trained parameters and buffers, and a forward compiled by LibTorch's
// own torch::jit from TorchScript source generated from the layer graph
// (aten ops only, so no Python class is needed to load it). The saved file
// loads with torch::jit::load in C++ and torch.jit.load in Python. The
// PyTorch source form is model/export_source.h.
#pragma once

#include "model/export_source.h"

#include <torch/csrc/jit/api/module.h>
#include <torch/nn/module.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace codefy::model {

/// The TorchScript source of the module's methods for `spec`, run over
/// `model` (the module build_sequential_model made from that spec, trained
/// or not): `forward(self, x: Tensor) -> Tensor` and the helpers it calls.
/// It computes the model in eval mode (Dropout passes its input through,
/// BatchNorm uses its running statistics): an inference export. Tensors are
/// read as attributes under Codefy's names (self.layers.<id>.weight).
/// Throws LayerSpecError for a spec Codefy can't build, and ExportError
/// naming the layer for a layer TorchScript can't express (Embedding with
/// max_norm: it renormalises its weights in place during forward) or a
/// model that does not match the spec.
std::string torchscript_source(const nlohmann::json& spec, const torch::nn::Module& model);

/// A torch::jit::Module holding copies of `model`'s parameters and buffers on
/// the CPU, in submodules named as Codefy's state dict names them (its
/// state_dict() keys are Codefy's: "layers.c1.weight"), with a `training`
/// flag (false) on each, and the methods of torchscript_source defined.
/// Throws as torchscript_source.
torch::jit::Module torchscript_module(const nlohmann::json& spec, const torch::nn::Module& model,
                                      const std::string& class_name = "Model");

/// Saves torchscript_module(spec, model) to `path` (atomically; missing
/// folders created), with the spec beside the code in the archive as the
/// extra file "codefy_layer_spec.json" (read back with torch::jit::load's
/// extra files, or torch.jit.load's _extra_files). Throws as torchscript_module, and
/// codefy::Error naming the path when it can't be written.
void save_torchscript(const nlohmann::json& spec, const torch::nn::Module& model, const std::filesystem::path& path);

}  // namespace codefy::model
