#include "train/update.h"

#include <torch/torch.h>

#include <cmath>

namespace codefy::train {

namespace {

/// Multiplies the gradients by min(1, max_norm / (norm + 1e-6)): the same
/// coefficient and ops as GradBuffer::clip, reusing the norm the non-finite
/// check already computed instead of computing it twice.
void clip_buffers_to_norm(const GradBuffer& grads, const torch::Tensor& norm, double max_norm) {
  torch::NoGradGuard no_grad;
  const torch::Tensor coef = (max_norm / (norm + 1e-6)).clamp_max(1.0);
  for (const auto& buffer : grads.buffers()) buffer.mul_(coef.to(buffer.device()).to(buffer.scalar_type()));
}

}  // namespace

UpdateResult apply_update(GradBuffer& grads, torch::optim::Optimizer& optimizer, const UpdateOptions& options,
                          GradScaler* scaler, Scheduler* scheduler, GradientReducer* reducer) {
  // Gradients autograd created during this window become views of the
  // buffer, so the reducer, the norm and the clip each see one tensor per buffer.
  grads.sync();
  if (reducer) reducer->reduce(grads);
  if (scaler) scaler->unscale(grads.parameters());

  torch::Tensor norm;
  if (options.grad_clip_norm > 0 || options.log_grad_norm) norm = grads.norm();
  UpdateResult result;
  bool finite = true;
  if (scaler) {
    finite = !scaler->found_inf();  // a host read
    if (finite && norm.defined()) result.grad_norm = norm.item<double>();
  } else if (norm.defined()) {
    result.grad_norm = norm.item<double>();  // a host read
    finite = std::isfinite(*result.grad_norm);
  }
  // The norm bounds the whole window's gradient, so it is clipped once here,
  // never per micro-batch.
  if (finite && options.grad_clip_norm > 0) clip_buffers_to_norm(grads, norm, options.grad_clip_norm);
  if (finite) optimizer.step();
  // With fp16 an occasional skip is expected: the scale backs off.
  if (scaler) scaler->update();
  if (finite && scheduler && scheduler->steps_per_update()) scheduler->step_update();
  // A skipped update's gradients go too: the next window starts from zero.
  grads.zero();
  result.stepped = finite;
  return result;
}

}  // namespace codefy::train
