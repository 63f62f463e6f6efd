// A training run's progress events as types: the config a TrainingLoop
// starts with, a sampled batch and an epoch's end. The trainer builds them;
// what reads them (the run history, the terminal's progress line, the
// WebSocket's message types) reads the types, and the JSON every client sees
// (`codefy run --json`'s progress lines, /ws/execution's progress frames) is
// their to_json, described once by progress_schema().
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace codefy::train {

/// What an event is, by its "event" field; kOther for events of other nodes.
enum class ProgressKind { kConfig, kBatch, kEpoch, kOther };
ProgressKind progress_kind(const nlohmann::json& event);

/// The run's settings as it starts (model, device, batches, precision, ...).
struct ConfigProgress {
  nlohmann::json config = nlohmann::json::object();

  nlohmann::json to_json() const;
  /// nullopt when `e` is not a config event of this shape.
  static std::optional<ConfigProgress> from_json(const nlohmann::json& e);
};

/// A batch, sampled a few times a second. A training loop's carries every
/// field; other nodes' batch progress (a sampler's steps) only the counts.
struct BatchProgress {
  int64_t batch = 0, total_batches = 0;
  std::optional<int64_t> epoch, total_epochs, step;
  std::optional<double> loss, lr, samples_per_s, grad_norm;
  std::optional<int64_t> timestep;  ///< a diffusion sampler's current timestep

  nlohmann::json to_json() const;
  static std::optional<BatchProgress> from_json(const nlohmann::json& e);
};

/// An epoch's end.
struct EpochProgress {
  int64_t epoch = 0, total_epochs = 0, step = 0;
  double loss = 0, lr = 0, seconds = 0;
  std::optional<double> grad_norm, val_loss, val_accuracy;
  /// With early stopping.
  std::optional<int64_t> patience_counter, best_epoch;
  /// The whole history so far, on the first and last epoch and a few times a second between.
  std::optional<std::vector<double>> losses, val_losses, val_accuracies;
  /// Peak bytes per device so far (the TrainingLoop node adds it); null when not given.
  nlohmann::json peak_memory_bytes;

  nlohmann::json to_json() const;
  static std::optional<EpochProgress> from_json(const nlohmann::json& e);
};

/// The three events as JSON Schema: {"config": ..., "batch": ..., "epoch": ...}.
nlohmann::json progress_schema();

}  // namespace codefy::train
