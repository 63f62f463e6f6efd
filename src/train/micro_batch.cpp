#include "train/micro_batch.h"

#include "train/accumulation.h"

#include <torch/torch.h>

#include <stdexcept>

namespace codefy::train {

torch::Tensor micro_batch_step(Model& model, const LossFunction& loss, const torch::Tensor& inputs,
                               const torch::Tensor& targets, const MicroBatchOptions& options, GradScaler* scaler) {
  if (options.accumulate_steps < 1) throw std::invalid_argument("accumulate_steps must be at least 1");
  torch::Tensor l;
  {
    // Forward and loss only: backward runs outside autocast.
    AutocastGuard autocast(options.precision, options.device);
    l = loss(model.forward(inputs), targets);
  }
  // A multiplication by 1/N, and none at N = 1: the arithmetic every earlier
  // run used, so weights stay bit-for-bit the same.
  const torch::Tensor to_backward =
      options.accumulate_steps > 1 ? l * accumulation_loss_scale(options.accumulate_steps) : l;
  (scaler ? scaler->scale(to_backward) : to_backward).backward();
  return l.detach();
}

}  // namespace codefy::train
