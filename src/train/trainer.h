// The training loop itself, free of graphs: what the TrainingLoop node runs.
#pragma once

#include "train/builders.h"
#include "train/data.h"
#include "train/data_parallel.h"
#include "train/grad_buffer.h"
#include "train/grad_scaler.h"
#include "train/model.h"
#include "train/precision.h"
#include "train/schedulers.h"
#include "train/update.h"

#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace codefy::train {

/// How to train.
struct TrainOptions {
  int64_t epochs = 5;
  /// How the intra-op thread count was chosen, for the config event ("": not said).
  std::string threads_reason;
  /// Stop when the monitored loss (validation, else training) has not improved
  /// for this many epochs, and restore the best weights; 0 disables.
  int64_t early_stopping_patience = 0;
  /// Clip the global gradient L2 norm to this value at each update; 0 disables.
  double grad_clip_norm = 0.0;
  c10::Device device = c10::Device(c10::kCPU);
  /// Mixed precision requested (checked against the device before the first batch).
  Precision precision = Precision::kFp32;
  /// Micro-batches per optimizer update; each loss is divided by this.
  int64_t accumulate_steps = 1;
  /// Stop after this many optimizer updates (not micro-batches); 0 = no limit.
  int64_t max_steps = 0;
  /// Compute the gradient L2 norm at every update (one host read per update),
  /// report it, and skip updates whose norm is not finite.
  bool log_grad_norm = true;
  /// Fail the run after this many consecutive skipped updates instead of
  /// silently training on NaN.
  int64_t max_consecutive_skips = 5;
  /// Gradient scaler for fp16: used when the run's precision is fp16 (or when
  /// `force_grad_scaler`), starting from `grad_scaler_state` when given.
  nlohmann::json grad_scaler_state;
  bool force_grad_scaler = false;
  /// Seeds LibTorch's RNG at the start of every epoch from (seed, epoch), so
  /// dropout in epoch e draws the same numbers whether or not the run resumed.
  uint64_t seed = 0;
  /// Resume: the epoch to start from (0-based; `epochs` stays the total), the
  /// counters so far, and the scheduler's state (null: fresh schedule).
  int64_t start_epoch = 0;
  int64_t initial_steps = 0;
  int64_t initial_batches = 0;
  nlohmann::json scheduler_state;
  /// Minimum seconds between two "batch" progress events (each costs one host
  /// sync), and between two "epoch" events that carry the whole loss history.
  double progress_interval_s = 0.25;
  /// Data-parallel training's gradient reduction, called once per update
  /// before unscaling (see GradientReducer); null in a single process.
  std::shared_ptr<GradientReducer> gradient_reducer;
  /// Data-parallel training (DDP) when set with a world of two or more: rank
  /// 0's parameters and buffers are broadcast at the start and its buffers
  /// before every forward, the gradients are averaged once per update (its
  /// make_gradient_reducer() unless gradient_reducer is set), the epoch loss
  /// is the mean over ranks, and Stop is agreed on once per update so every
  /// rank stops at the same one. `train_data` is then this rank's shard.
  std::shared_ptr<DataParallel> data_parallel;
};

/// Hooks into the run around the loop.
struct TrainHooks {
  /// Receives {"event": "config" | "batch" | "epoch", ...} (CodefyUI's progress frames).
  /// Every epoch sends one; the history arrays ride on the first, the last,
  /// and otherwise at most one per progress_interval_s (more apart past 1000 epochs).
  std::function<void(const nlohmann::json&)> progress;
  /// Polled before every batch; true ends training (throws codefy::Cancelled).
  std::function<bool()> should_stop;
  /// Warnings that do not stop training (precision fallback, BatchNorm with tiny batches, skipped updates).
  std::function<void(const std::string&)> warn;
};

/// What training produced.
struct TrainResult {
  std::vector<double> losses;          ///< mean training loss per epoch
  std::vector<double> val_losses;      ///< mean validation loss per epoch (empty without validation)
  std::vector<double> val_accuracies;  ///< validation accuracy per epoch (classification losses with validation only)
  nlohmann::json metrics;              ///< CodefyUI's metrics dict, plus Codefy's counters
  nlohmann::json grad_scaler_state;    ///< the scaler's state_dict, null when no scaler ran
};

/// Trains `model` in place. The optimizer is used as given (its state lives
/// on between runs); the scheduler steps per update or per epoch as its type
/// says. Each epoch runs micro_batch_step() per batch and apply_update() at
/// the end of every accumulation window (see there for the update's order).
/// Losses stay on the device and are read back once per epoch and with each
/// "batch" progress event; the update reads the scaler's flag and the
/// gradient norm: no host sync per micro-batch.
TrainResult train_model(Model& model, const DataLoader& train_data, const DataLoader* val_data,
                        OptimizerHandle& optimizer, const LossFunction& loss, Scheduler* scheduler,
                        const TrainOptions& options, const TrainHooks& hooks);

/// What one validation pass measured.
struct Evaluation {
  double loss = 0.0;  ///< mean of the per-batch losses
  /// Fraction of samples whose highest output is the target class: only for
  /// CrossEntropyLoss/NLLLoss with class-index targets (samples at PyTorch's
  /// ignore_index -100 are left out, as the loss leaves them out).
  std::optional<double> accuracy;
};

/// True for the losses whose targets are class indices (CrossEntropyLoss, NLLLoss).
bool is_classification_loss(const LossFunction& loss);

/// The validation pass: mean loss, and accuracy for classification, over a
/// loader in eval mode without gradients. Both are summed on the device and
/// read back together once at the end (no host sync per batch).
Evaluation evaluate(Model& model, const DataLoader& data, const LossFunction& loss, c10::Device device,
                    Precision precision = Precision::kFp32);

}  // namespace codefy::train
