// Weight files: PyTorch state_dicts (.pt/.pth, readable by Python's torch.load)
// and .safetensors. Writes are atomic. The public face of the parts:
// state_dict.h (what a module holds), safetensors.h, pickle_reader.h.
#pragma once

#include "train/safetensors.h"
#include "train/state_dict.h"

#include <filesystem>

namespace codefy::train {

/// Saves by extension: ".safetensors" → safetensors, anything else → a
/// PyTorch pickle of a str→Tensor dict (torch.load reads it). Atomic: a temp
/// file in the same folder renamed over `path`; on failure the old file stays.
/// Creates missing parent folders.
void save_weights(const std::filesystem::path& path, const StateDict& dict);

/// Loads either format (by content, not extension). Throws std::runtime_error
/// naming the path on a missing, truncated or foreign file.
StateDict load_weights(const std::filesystem::path& path);

/// Whether `path` is a weights file of a kind save_weights writes, judged by
/// its first bytes: a zip archive (PyTorch's .pt) or a safetensors header.
/// What ModelSaver may replace.
bool is_weights_file(const std::filesystem::path& path);

}  // namespace codefy::train
