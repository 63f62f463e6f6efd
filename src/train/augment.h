// Data augmentation as CodefyUI's transform chains describe it (RandomCrop,
// RandomHorizontalFlip, RandomRotation, NormalizeTransform, ToTensorTransform):
// steps applied to image tensors [C, H, W] in [0, 1]. A sample's random draws
// depend only on (loader seed, epoch, sample index), so a run augments the
// same way whatever else draws random numbers and however many workers
// prepare its batches.
#pragma once

#include "util/errors.h"

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace codefy::train {

/// A chain that cannot be applied: the message names the step.
class AugmentationError : public InputError {
 public:
  using InputError::InputError;
};

struct AugmentStep {
  /// CodefyUI's node name: "RandomCrop", "RandomHorizontalFlip",
  /// "RandomRotation", "NormalizeTransform", "ToTensorTransform".
  std::string type;
  int64_t size = 0;                       ///< RandomCrop: side of the square
  int64_t padding = 0;                    ///< RandomCrop: pixels added on every side first
  std::string padding_mode = "constant";  ///< constant (0), edge, reflect
  double p = 0.5;                         ///< RandomHorizontalFlip: probability
  double degrees = 0;                     ///< RandomRotation: angle drawn from [-degrees, degrees]
  double fill = 0;                        ///< RandomRotation: value of the corners left empty
  std::vector<double> mean, std;          ///< NormalizeTransform: one per channel, or one for all
};

/// A transform chain, in order.
struct Augmentation {
  std::vector<AugmentStep> steps;

  /// The chain as it travels on a TRANSFORM edge: {"steps": [{"type", ...}]}.
  nlohmann::json to_json() const;
  /// Throws AugmentationError naming the step that is malformed.
  static Augmentation from_json(const nlohmann::json& j);
  /// Whether some step draws random numbers.
  bool is_random() const;
  /// One sample [C, H, W]; `draws` is the sample's random stream.
  at::Tensor apply(const at::Tensor& sample, uint64_t draws) const;
  /// Every sample of a batch [N, C, H, W] (or [N, H, W]): sample k's stream
  /// is seeded by (seed, epoch, indices[k]).
  at::Tensor apply_batch(const at::Tensor& inputs, const at::Tensor& indices, uint64_t seed, int64_t epoch) const;
};

}  // namespace codefy::train
