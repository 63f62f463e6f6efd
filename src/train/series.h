// Time series for forecasting: a seeded synthetic multi-feature series and
// the sliding windows (inputs) and horizons (targets) a forecaster trains on.
#pragma once

#include "util/errors.h"

#include "train/data.h"

#include <torch/types.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace codefy::train {

struct SeriesOptions {
  int64_t steps = 8192;
  int64_t features = 32;
  double noise = 0.1;
  uint64_t seed = 0;
};

/// float32 [steps, features]: each feature a seasonal wave (its own period,
/// phase and amplitude, with a slower harmonic), a linear trend and
/// Gaussian noise; feature 0 also follows feature 1 three steps late, so the
/// other features help to forecast it. The same options give the same
/// series, bit for bit; LibTorch's global generator is left alone.
torch::Tensor make_series(const SeriesOptions& options);

/// An option that does not fit the series; `option` names it (the node's param of that name).
class SeriesOptionError : public InputError {
 public:
  SeriesOptionError(std::string option, const std::string& message)
      : InputError(option + ": " + message), option_(std::move(option)), message_(message) {}
  const std::string& option() const { return option_; }
  /// The message without the option's name.
  const std::string& message() const { return message_; }

 private:
  std::string option_, message_;
};

struct WindowOptions {
  int64_t window = 256;  ///< input steps per sample
  int64_t horizon = 16;  ///< target steps per sample, right after the window
  int64_t target = 0;    ///< the feature (column) forecast
  int64_t stride = 1;    ///< steps between the starts of neighbouring samples
  double val_fraction = 0.2;
  bool normalize = true;  ///< standardise each feature with the training part's mean and std
};

/// A series cut into forecasting samples. Inputs are [N, window, features]
/// and targets [N, horizon] views of one standardised copy of the series:
/// the windows overlap in memory, so a 20,000-window data set costs the
/// series' bytes, and a batch copies only its own samples.
struct WindowedSeries {
  Dataset train;            ///< every sample whose horizon ends before `split`
  Dataset val;              ///< every sample whose horizon starts at or after `split`
  torch::Tensor series;     ///< [steps, features], standardised when asked
  torch::Tensor mean, std;  ///< [features]; zeros and ones without normalize
  int64_t split = 0;        ///< first step of the validation part
};

/// Cuts `series` [steps, features] into windows. Throws
/// std::invalid_argument naming the option at fault (a window and horizon
/// longer than either part, a target out of range...).
WindowedSeries make_windows(const torch::Tensor& series, const WindowOptions& options);

}  // namespace codefy::train
