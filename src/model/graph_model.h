// GraphModel: the module SequentialModel builds, running its layers and merges in order.
#pragma once

#include "model/conv_layout.h"
#include "model/layer_table.h"
#include "train/bf16_mirrors.h"
#include "train/model.h"

#include <torch/nn/modules/container/moduledict.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace codefy::model {

/// One node evaluated in the forward pass: a layer or a merge.
struct Step {
  std::string id, type;
  size_t slot;                 ///< where its output goes (the node's index in the spec)
  std::vector<size_t> inputs;  ///< slots it reads, in edge-list order
  LayerFn layer;               ///< set for plain layers
  MergeFn merge;               ///< set for merges
  std::string description;     ///< its line in describe()
  /// On the CPU, lay a 4-D input and output out channels-last: LibTorch's
  /// pooling runs about 10x faster that way, and a convolution's output in
  /// that layout keeps the activation after it, and its backward, in it too.
  bool channels_last = false;
  /// A Linear's in_features × out_features (0 for other steps): under CPU
  /// bf16 autocast a Linear this small for its batch runs in fp32 instead.
  int64_t linear_size = 0;
  /// The Linear itself (null for other steps): a larger one under CPU bf16
  /// autocast reads its weight's bf16 copy (model/bf16_linear.h).
  std::shared_ptr<torch::nn::LinearImpl> linear = nullptr;
  /// The Conv2d itself (null for other steps), for conv2d_channels_last.
  std::shared_ptr<torch::nn::Conv2dImpl> conv = nullptr;
};

/// A model over a layer DAG: the input goes into one slot, each step reads
/// slots and writes its own, the output is read from one slot. Modules are
/// registered in a ModuleDict called "layers", keyed by node id, so parameters
/// are named `layers.<id>.weight` as in CodefyUI's PyTorch original.
class GraphModel : public train::Model {
 public:
  /// `modules` in registration (parameters()) order; `steps` in evaluation order.
  GraphModel(const std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>>& modules,
             std::vector<Step> steps, size_t slots, size_t input_slot, size_t output_slot);

  /// Runs the steps. When LibTorch rejects a step's input (a shape mismatch),
  /// throws LayerSpecError naming the layer and the shapes it got.
  torch::Tensor forward(const torch::Tensor& x) override;
  /// `<id>: <description>`, one line per step, in evaluation order.
  std::string describe() const override;
  /// The bf16 copies of its Linear weights that CPU bf16 autocast reads.
  train::Bf16Mirrors* bf16_mirrors() override { return &mirrors_; }

 private:
  torch::nn::ModuleDict layers_{nullptr};
  std::vector<Step> steps_;
  size_t slots_, input_slot_, output_slot_;
  /// Per step, the slots it is the last reader of (the output's never): a
  /// value goes as soon as nothing ahead reads it, so a forward without
  /// gradients holds only what is still needed.
  std::vector<std::vector<size_t>> released_after_;
  train::Bf16Mirrors mirrors_;
};

}  // namespace codefy::model
