// One micro-batch of an accumulation window: forward, loss and backward.
#pragma once

#include "train/builders.h"
#include "train/grad_scaler.h"
#include "train/model.h"
#include "train/precision.h"

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace codefy::train {

/// How a micro-batch runs.
struct MicroBatchOptions {
  /// The device autocast targets (the batch is already on it).
  c10::Device device = c10::Device(c10::kCPU);
  /// The precision the run uses (after check_precision).
  Precision precision = Precision::kFp32;
  /// N, the micro-batches per update: each loss is multiplied by 1/N before
  /// backward, so the window's gradient is that of the mean loss. A short last
  /// window is divided by the same N.
  int64_t accumulate_steps = 1;
};

/// Runs one micro-batch: forward and loss under autocast, then backward of
/// loss × 1/N (times the scaler's scale when a scaler is given), which adds
/// to the parameters' gradients. Returns the loss undivided and detached,
/// still on its device: no host sync, reading it is the caller's choice.
at::Tensor micro_batch_step(Model& model, const LossFunction& loss, const at::Tensor& inputs, const at::Tensor& targets,
                            const MicroBatchOptions& options, GradScaler* scaler = nullptr);

}  // namespace codefy::train
