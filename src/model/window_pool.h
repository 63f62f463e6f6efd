// MaxPool2d over non-overlapping windows on the CPU, through single-pass
// loops (model/window_pool_kernels.h): in bfloat16 LibTorch 1.13's own CPU
// pooling and its backward took half of a small CNN's training step.
#pragma once

#include <torch/nn/options/pooling.h>
#include <torch/types.h>

namespace codefy::model {

/// Whether `o` pools in non-overlapping square windows (stride = kernel
/// size, no padding, no dilation) of a side window_max_pool2d takes.
bool window_max_pool_options(const torch::nn::MaxPool2dOptions& o);

/// Whether `x` can take window_max_pool2d with a `k`×`k` window (`ceil_mode`
/// as the layer has it): a channels-last [N, C, H, W] CPU tensor of float or
/// bfloat16, at least one whole window high and wide, and with ceil_mode
/// only when the windows tile it exactly.
bool window_max_pool_input(const torch::Tensor& x, int64_t k, bool ceil_mode);

/// max_pool2d(x, k) (stride k) with LibTorch's values and gradients: the
/// gradient goes to each window's first maximum (a NaN wins). Output
/// channels-last. Differentiable once (its backward is not itself tracked).
torch::Tensor window_max_pool2d(const torch::Tensor& x, int64_t k);

}  // namespace codefy::model
