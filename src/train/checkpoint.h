// Training checkpoints that resume exactly: weights, optimizer state, and the
// counters, seeds and schedule a continued run needs.
#pragma once

#include "train/serialize.h"

#include <torch/optim/optimizer.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace codefy::train {

/// What a checkpoint file holds.
struct Checkpoint {
  StateDict model;
  /// The optimizer's state as LibTorch serialises it (step counts, moments, lr).
  std::string optimizer_state;
  /// epoch, optimizer type, losses, metrics (counters, seeds, scheduler state),
  /// grad_scaler_state.
  nlohmann::json meta = nlohmann::json::object();
};

/// The optimizer's state as bytes (a LibTorch archive).
std::string save_optimizer_state(const torch::optim::Optimizer& optimizer);
/// Restores what save_optimizer_state wrote into an optimizer over the same parameters.
void load_optimizer_state(torch::optim::Optimizer& optimizer, const std::string& bytes);

/// Writes a checkpoint atomically. Layout: the magic line "CODEFY-CHECKPOINT 1\n",
/// then three length-prefixed (u64 little-endian) parts: JSON metadata,
/// safetensors weights, optimizer archive.
void save_checkpoint(const std::filesystem::path& path, const Checkpoint& checkpoint);

/// Reads a checkpoint; a missing, truncated or foreign file gives a
/// std::runtime_error naming the path, never a crash.
Checkpoint load_checkpoint(const std::filesystem::path& path);

/// Whether `path` starts as a checkpoint save_checkpoint writes (what
/// CheckpointSaver may replace).
bool is_checkpoint_file(const std::filesystem::path& path);

}  // namespace codefy::train
