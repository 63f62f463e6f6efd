// Where a resumed training run continues: the epoch, counters, seeds, schedule
// and scaler state that make a continued run land on the weights of one
// uninterrupted run. The trainer writes it into a run's metrics,
// CheckpointSaver keeps it in a checkpoint, CheckpointLoader gives it back and
// TrainingLoop reads it: one struct, one JSON codec, so the keys are written
// in one place.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>

namespace codefy::train {

struct ResumeState {
  int64_t last_epoch = 0;              ///< epochs completed overall: where the continued run starts
  int64_t total_steps = 0;             ///< optimizer updates so far
  int64_t total_batches = 0;           ///< forward passes so far
  std::optional<uint64_t> train_seed;  ///< the run's seed (dropout and the like); absent: the new run's own
  std::optional<uint64_t> data_seed;   ///< the data order's seed; absent: the loader's own
  nlohmann::json scheduler_state;      ///< null: a fresh schedule
  nlohmann::json grad_scaler_state;    ///< null: a fresh scaler

  /// Adds its fields to `j` (a run's metrics, a resume_state value).
  void write_to(nlohmann::json& j) const;
  nlohmann::json to_json() const;
  /// Reads its fields from a run's metrics or a resume_state value (other
  /// keys are left alone). Throws std::invalid_argument naming a field that
  /// is missing (last_epoch) or has the wrong type.
  static ResumeState from_json(const nlohmann::json& j);
  /// From a checkpoint's metadata: the saved metrics, its epoch and scaler state.
  static ResumeState from_checkpoint_meta(const nlohmann::json& meta);
};

}  // namespace codefy::train
