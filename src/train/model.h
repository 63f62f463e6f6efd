// The model type that flows on MODEL ports.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <memory>
#include <string>

namespace codefy::train {

class Bf16Mirrors;

/// A trainable model: a LibTorch module with one tensor in and one tensor out.
/// Every node that makes a model (SequentialModel, ModelLoader...) returns one.
class Model : public torch::nn::Module {
 public:
  using torch::nn::Module::Module;
  /// Runs the model on a batch.
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
  /// One line per layer, for Print and error messages.
  virtual std::string describe() const { return name(); }
  /// The bf16 copies of weights its forward reads under CPU bf16 autocast,
  /// for the optimizer to keep current; nullptr when it keeps none.
  virtual Bf16Mirrors* bf16_mirrors() { return nullptr; }
};

using ModelPtr = std::shared_ptr<Model>;

/// Number of trainable scalars.
int64_t count_parameters(const torch::nn::Module& m);

/// Multiply-adds of one forward pass of `model` on `batch` (a whole batch,
/// on the model's device), counted from the matrix products and
/// convolutions LibTorch runs for it (addmm, mm, bmm, _convolution), without
/// gradients and in evaluation mode (the mode is restored after). Runs one
/// sample and scales by the batch size, so it costs a sample's memory.
double forward_multiply_adds(Model& model, const torch::Tensor& batch);

}  // namespace codefy::train
