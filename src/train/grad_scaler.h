// The gradient scaler for fp16 training, with PyTorch's
// GradScaler semantics and state keys.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>
#include <nlohmann/json.hpp>

#include <vector>

namespace codefy::train {

/// PyTorch's GradScaler defaults.
struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

/// Multiplies the loss before backward so small fp16 gradients do not
/// underflow, and divides the gradients back before the update. A step whose
/// gradients hold inf/NaN is skipped and the scale backs off; after
/// `growth_interval` clean steps it grows. On CUDA it uses LibTorch's fused
/// `_amp_*` ops; elsewhere plain tensor ops (LibTorch 1.13 has the fused ops
/// for CUDA only). No host sync except the one read in step().
class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  /// loss x scale (the scale lives on the loss's device).
  torch::Tensor scale(const torch::Tensor& loss);
  /// Divides every gradient by the scale in place and records whether any is
  /// inf/NaN. Call once per update, before clipping.
  void unscale(const std::vector<torch::Tensor>& parameters);
  /// Whether the last unscale found inf/NaN (one host read).
  bool found_inf() const;
  /// Steps unless the gradients were non-finite; returns whether it stepped.
  bool step(torch::optim::Optimizer& optimizer);
  /// Backs off after a non-finite step, grows after growth_interval clean ones.
  void update();

  double get_scale() const;
  int64_t growth_tracker() const;
  /// PyTorch's state_dict keys: scale, growth_factor, backoff_factor,
  /// growth_interval, _growth_tracker.
  nlohmann::json state_dict() const;
  /// Restores a state_dict; throws std::invalid_argument naming a missing or bad key.
  void load_state_dict(const nlohmann::json& state);

 private:
  void ensure_on(const c10::Device& device);
  GradScalerOptions options_;
  torch::Tensor scale_;           ///< 1-element float32
  torch::Tensor growth_tracker_;  ///< 1-element int32
  torch::Tensor found_inf_;       ///< 1-element float32, set by unscale()
  bool unscaled_ = false;
};

}  // namespace codefy::train
