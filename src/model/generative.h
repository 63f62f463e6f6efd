// The models CodefyUI's RL and diffusion nodes build from a seed: RewardModel's
// scoring head and DiffusionUNet's small time-conditioned U-Net, with the
// DDPM reverse loop (DDPMSampler) that runs it. Weights are drawn from a
// local generator seeded by the node's `seed` param, in CodefyUI's order, so
// the same seed gives PyTorch's numbers; module names are CodefyUI's
// (state_dict keys `net.0.weight`, `down_blocks.0.conv1.weight`, ...).
#pragma once

#include "train/model.h"

#include <ATen/core/Tensor.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace codefy::model {

/// RewardModel's head: Linear(input_dim, hidden_dim) -> ReLU -> Linear(hidden_dim, 1),
/// each Linear initialised as PyTorch's reset_parameters does (weight and bias
/// uniform in +-1/sqrt(fan_in)) from a generator seeded `seed`.
class RewardHead : public train::Model {
 public:
  RewardHead(int64_t input_dim, int64_t hidden_dim, int64_t seed);
  /// [B, H] -> [B]; [B, T, H] scores the last token.
  torch::Tensor forward(const torch::Tensor& h) override;
  std::string describe() const override;
  int64_t input_dim() const { return input_dim_; }

 private:
  int64_t input_dim_, hidden_dim_;
  torch::nn::Sequential net_{nullptr};
};

/// Sinusoidal timestep embedding followed by Linear(D, 4D) -> SiLU -> Linear(4D, D).
class TimestepMlpImpl : public torch::nn::Module {
 public:
  TimestepMlpImpl(int64_t embed_dim, int64_t max_period, int64_t seed);
  /// [B] timesteps -> [B, D].
  torch::Tensor forward(const torch::Tensor& timesteps);

 private:
  int64_t embed_dim_, max_period_;
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr};
};
TORCH_MODULE(TimestepMlp);

/// The diffusion residual block: SiLU(GroupNorm) -> Conv3x3 -> + time bias ->
/// SiLU(GroupNorm) -> Conv3x3, plus a 1x1 skip when the channels change.
class DiffusionResBlockImpl : public torch::nn::Module {
 public:
  DiffusionResBlockImpl(int64_t in_channels, int64_t out_channels, int64_t groups, int64_t time_emb_dim, int64_t seed);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& time_emb);

 private:
  torch::nn::GroupNorm norm1_{nullptr}, norm2_{nullptr};
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, skip_{nullptr};
  torch::nn::Linear time_proj_{nullptr};
};
TORCH_MODULE(DiffusionResBlock);

/// DiffusionUNet's parameters (CodefyUI's names and defaults).
struct UNetOptions {
  int64_t in_channels = 3;
  int64_t base_channels = 16;
  std::vector<int64_t> channel_mult{1, 2, 4};
  int64_t time_emb_dim = 32;
  int64_t num_groups = 4;
  int64_t seed = 42;
};

/// `text` ("1,2,4") as channel multipliers; throws std::invalid_argument saying why not.
std::vector<int64_t> parse_channel_mult(const std::string& text);
/// What is wrong with `o` as (param name, message), or an empty name when nothing is.
std::pair<std::string, std::string> check_unet_options(const UNetOptions& o);

/// The toy U-Net: stem conv, one ResBlock and 2x max-pool per level but the
/// last, a bottleneck ResBlock, then per level nearest 2x upsampling, concat
/// with the skip and a ResBlock, and a 1x1 head back to in_channels. Every
/// ResBlock gets the same timestep embedding.
class DiffusionUNet : public train::Model {
 public:
  explicit DiffusionUNet(const UNetOptions& o);
  /// Refuses: the U-Net needs a timestep too (forward(x, t), DDPMSampler).
  torch::Tensor forward(const torch::Tensor& x) override;
  /// x [N, in_channels, H, W] (H, W divisible by spatial_divisor()), t a
  /// 0-d, [1] or [N] tensor of timesteps -> predicted noise, shape of x.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& t);
  std::string describe() const override;
  const UNetOptions& options() const { return options_; }
  /// H and W must be multiples of this (2 per pooling level).
  int64_t spatial_divisor() const { return int64_t{1} << down_blocks_->size(); }

 private:
  UNetOptions options_;
  TimestepMlp time_mlp_{nullptr};
  torch::nn::Conv2d stem_{nullptr}, head_{nullptr};
  torch::nn::ModuleList down_blocks_{nullptr}, up_blocks_{nullptr};
  DiffusionResBlock bottleneck_{nullptr};
};

/// DDPMSampler's parameters (CodefyUI's names and defaults).
struct DdpmOptions {
  int64_t num_steps = 20;
  std::string schedule = "linear";  ///< "linear" (beta_start..beta_end) or "cosine" (Nichol & Dhariwal)
  double beta_start = 0.0001;
  double beta_end = 0.02;
  int64_t seed = 42;  ///< of the Gaussian noise added at each step but the last
};

/// The betas of a schedule, [num_steps] float32.
torch::Tensor ddpm_betas(const DdpmOptions& o);

/// The reverse DDPM loop from x_T = `noise`: num_steps calls of the model,
/// each x_{t-1} = (x_t - beta_t / sqrt(1 - alpha_bar_t) * eps) / sqrt(alpha_t)
/// + sqrt(beta_t) z for t > 0. `after_step(done)` runs after each step (it
/// may throw to stop).
torch::Tensor ddpm_sample(DiffusionUNet& model, const torch::Tensor& noise, const DdpmOptions& o,
                          const std::function<void(int64_t done)>& after_step = {});

}  // namespace codefy::model
