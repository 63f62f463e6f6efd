// Gradients in one contiguous buffer, and the global gradient norm and
// clipping built on it.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace codefy::train {

/// Global L2 norm of the parameters' gradients as a 0-dim float tensor on
/// their device (no host sync). Parameters without a gradient count as zero.
at::Tensor grad_norm(const std::vector<at::Tensor>& parameters);

/// Scales gradients so their global norm is at most `max_norm` (PyTorch's
/// clip_grad_norm_: coefficient max_norm / (norm + 1e-6), clamped at 1);
/// returns the norm before clipping (0-dim tensor, no host sync).
at::Tensor clip_grad_norm(const std::vector<at::Tensor>& parameters, double max_norm);

/// The parameters' gradients as views into one contiguous buffer per (device,
/// dtype), as DDP's gradient_as_bucket_view: zeroing, the global norm and
/// clipping then cost one tensor operation each instead of one per parameter,
/// which is most of the per-update overhead on small models (bench/RESULTS.md).
///
/// Autograd accumulates into a defined gradient in place, so the views survive
/// backward. A parameter is bound lazily, when it first has a gradient (its
/// values are copied in), so a parameter that never gets one keeps an
/// undefined gradient and the optimizer skips it, as without the buffer.
/// If anything replaces a bound gradient, the next sync() binds it again.
class GradBuffer {
 public:
  explicit GradBuffer(std::vector<at::Tensor> parameters);

  /// Binds every parameter whose gradient is defined but not its view
  /// (copying the values). Call after backward, before norm()/clip().
  void sync();
  /// Zeroes every gradient (one fill per buffer) and keeps the views.
  void zero();
  /// Global L2 norm of all gradients, 0-dim float tensor, no host sync.
  at::Tensor norm() const;
  /// clip_grad_norm over the buffer; returns the norm before clipping.
  at::Tensor clip(double max_norm);

  const std::vector<at::Tensor>& parameters() const { return parameters_; }
  /// The buffers themselves (one per device and dtype).
  const std::vector<at::Tensor>& buffers() const { return buffers_; }

 private:
  std::vector<at::Tensor> parameters_;
  std::vector<at::Tensor> buffers_;
  std::vector<at::Tensor> views_;  ///< views_[i] is parameters_[i]'s slice of its buffer
};

}  // namespace codefy::train
