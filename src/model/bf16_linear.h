// A Linear under CPU bf16 autocast that reads its weight's bf16 copy
// (train/bf16_mirrors.h) instead of casting the weight at every forward, and
// adds its weight's bf16 gradient into the float32 gradient in one pass.
#pragma once

#include <torch/types.h>

namespace codefy::model {

/// What CPU bf16 autocast computes for linear(x, weight, bias): x and bias
/// in bf16, x @ weight_bf16^T + bias, a bf16 output; `weight_bf16` is
/// `weight` rounded to bf16. Backward gives x and bias their gradients as
/// autocast's would, and adds the weight's bf16 gradient into the weight's
/// float32 gradient in place when one exists (the cast and the accumulation
/// of autocast's path in one pass; nothing else hears of that gradient, as
/// no gradient hooks are run for it), else hands it to autograd as float32.
/// Not differentiable twice.
torch::Tensor bf16_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                          const torch::Tensor& weight_bf16);

}  // namespace codefy::model
