// Gradient accumulation windows: which micro-batch ends an optimizer update.
#pragma once

#include <cstdint>
#include <stdexcept>

namespace codefy::train {

/// What each micro-batch's loss is multiplied by when `accumulate_steps`
/// batches make one update: 1/N for every window, the short last one too,
/// so N batches add up to the mean over the larger batch.
inline double accumulation_loss_scale(int64_t accumulate_steps) { return 1.0 / static_cast<double>(accumulate_steps); }

/// Splits an epoch's micro-batches into windows of `accumulate_steps`. The
/// last window of an epoch may be short; windows never cross epochs, so an
/// epoch always ends on an update. Every micro-batch's loss is divided by the
/// full N, short window included, so a short window takes a proportionally
/// smaller step.
class AccumulationWindow {
 public:
  AccumulationWindow(int64_t batches_per_epoch, int64_t accumulate_steps)
      : batches_(batches_per_epoch), n_(accumulate_steps) {
    if (n_ < 1) throw std::invalid_argument("accumulate_steps must be at least 1");
  }
  int64_t accumulate_steps() const { return n_; }
  /// The factor each micro-batch's loss is multiplied by before backward.
  double loss_scale() const { return accumulation_loss_scale(n_); }
  /// Whether micro-batch `index` (0-based, within the epoch) completes an update.
  bool ends_update(int64_t index) const { return (index + 1) % n_ == 0 || index + 1 == batches_; }
  /// True when micro-batch `index` is the first of its window.
  bool starts_update(int64_t index) const { return index % n_ == 0; }
  /// Optimizer updates per epoch.
  int64_t updates_per_epoch() const { return (batches_ + n_ - 1) / n_; }

 private:
  int64_t batches_;
  int64_t n_;
};

}  // namespace codefy::train
