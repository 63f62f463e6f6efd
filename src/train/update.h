// The optimizer update at the end of an accumulation window, and the seam
// where data-parallel training reduces gradients across processes.
#pragma once

#include "train/grad_buffer.h"
#include "train/grad_scaler.h"
#include "train/schedulers.h"

#include <torch/optim/optimizer.h>

#include <optional>

namespace codefy::train {

/// Where data-parallel training plugs into the loop (DDP's gradient
/// all-reduce). The trainer tells it, before each micro-batch, whether that
/// micro-batch ends its accumulation window, and calls reduce() exactly once
/// per optimizer update: after the window's backward passes, before the
/// gradients are unscaled, checked or clipped. A reducer that averages across
/// processes there gives every process the same gradients, hence the same
/// skip decision, clipping and step.
class GradientReducer {
 public:
  virtual ~GradientReducer() = default;
  /// Called before each micro-batch's forward. `last_in_window` is true when
  /// the update follows this micro-batch's backward: a reducer that
  /// communicates during backward skips the others (DDP's no_sync).
  virtual void begin_micro_batch(bool /*last_in_window*/) {}
  /// Reduces the window's gradients in place: the sum over its micro-batches
  /// of the gradients of loss / N, still multiplied by the gradient scaler's
  /// scale when there is one. Every defined gradient is then a view into one
  /// of `grads.buffers()`, so reducing the buffers reduces all of them, one
  /// operation per buffer.
  virtual void reduce(GradBuffer& grads) = 0;
};

/// How the update treats the accumulated gradients.
struct UpdateOptions {
  /// Clip the global gradient L2 norm to this value; 0 disables.
  double grad_clip_norm = 0.0;
  /// Compute the global gradient norm even without clipping (one host read),
  /// report it, and skip the update when it is not finite.
  bool log_grad_norm = true;
};

/// What one update did.
struct UpdateResult {
  /// False when the update was skipped because the gradients were not finite.
  bool stepped = false;
  /// The global gradient norm (unscaled, before clipping) when it was computed
  /// (clipping or log_grad_norm); absent when the gradient scaler found
  /// inf/NaN, whose norm means nothing. Without a scaler it may be NaN or inf.
  std::optional<double> grad_norm;
};

/// The end of an accumulation window, in this order: reducer (if any) →
/// unscale (if a scaler) → non-finite check (the scaler's found-inf, else the
/// norm) → clip once → optimizer step unless non-finite → scaler update →
/// per-update scheduler step, only if the optimizer stepped → zero the
/// gradients, a skipped update's too. At most two host reads: the scaler's
/// found-inf flag and the norm.
UpdateResult apply_update(GradBuffer& grads, torch::optim::Optimizer& optimizer, const UpdateOptions& options,
                          GradScaler* scaler = nullptr, Scheduler* scheduler = nullptr,
                          GradientReducer* reducer = nullptr);

}  // namespace codefy::train
