// The layer table: every layer and merge type SequentialModel knows, the
// parameters each takes, and how to build it from them.
#pragma once

#include "model/params.h"

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace codefy::model {

/// A layer's forward pass: one tensor in, one tensor out.
using LayerFn = std::function<torch::Tensor(const torch::Tensor&)>;
/// A merge's forward pass: its inputs in edge-list order, one tensor out.
using MergeFn = std::function<torch::Tensor(const std::vector<torch::Tensor>&)>;

/// A built layer: the module to register (its parameters) and how to run it.
struct BuiltLayer {
  std::shared_ptr<torch::nn::Module> module;
  LayerFn forward;
};

/// One layer type: its name and its builder. Its parameters (names,
/// defaults, limits) are defined once, in the layer catalogue
/// (layer_param_defs), which the builder's LayerParams reads.
struct LayerDef {
  const char* type;
  BuiltLayer (*build)(const LayerParams&);
};

/// One merge type (several inputs, no module, like CodefyUI): its name, how
/// many inputs it takes, and a maker that also writes the options describe()
/// shows after the input names (", dim=1") to `describe_extra`. Its
/// parameters are the catalogue's, as a layer's.
struct MergeDef {
  const char* type;
  size_t min_inputs, max_inputs;
  MergeFn (*make)(const LayerParams&, std::string* describe_extra);
};

/// Layer types in CodefyUI's palette order: layers, wrappers, then activations.
const std::vector<LayerDef>& layer_defs();
/// Merge types: Add, Concat, Multiply, Subtract, Mean, Stack.
const std::vector<MergeDef>& merge_defs();

/// The layer named `type`, or nullptr.
const LayerDef* find_layer_def(const std::string& type);
/// The merge named `type`, or nullptr.
const MergeDef* find_merge_def(const std::string& type);

/// Every node type a spec may use: Input, Output, the layers, then the merges.
const std::vector<std::string>& layer_types();

}  // namespace codefy::model
