#include "train/series.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace codefy::train {

torch::Tensor make_series(const SeriesOptions& o) {
  if (o.steps < 2 || o.features < 1) throw SeriesOptionError("steps", "a series needs at least 2 steps and 1 feature");
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(o.seed);
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  const torch::Tensor t = torch::arange(o.steps, f64).unsqueeze(1);  // [T, 1]
  // Periods from a day of hourly steps to a week, one per feature in turn.
  const torch::Tensor periods = torch::tensor({24.0, 36.0, 48.0, 72.0, 96.0, 120.0, 168.0, 12.0}, f64)
                                    .repeat({(o.features + 7) / 8})
                                    .narrow(0, 0, o.features);
  const torch::Tensor amplitude = torch::rand({o.features}, gen, f64).mul_(1.5).add_(0.5);
  const torch::Tensor phase = torch::rand({o.features}, gen, f64).mul_(2 * M_PI);
  const torch::Tensor slope = torch::rand({o.features}, gen, f64).mul_(2).sub_(1);
  const torch::Tensor noise = torch::randn({o.steps, o.features}, gen, f64).mul_(o.noise);
  const torch::Tensor angle = t * (2 * M_PI) / periods + phase;
  torch::Tensor x = amplitude * (torch::sin(angle) + 0.5 * torch::sin(angle / 4)) + slope * (t / o.steps) + noise;
  if (o.features > 1) {
    // Feature 0 leans on feature 1 three steps back.
    const int64_t lag = 3;
    torch::Tensor lagged =
        torch::cat({x.select(1, 1).narrow(0, 0, 1).expand({lag}), x.select(1, 1).narrow(0, 0, o.steps - lag)});
    x.select(1, 0).mul_(0.4).add_(lagged, 0.6);
  }
  return x.to(torch::kFloat32).contiguous();
}

namespace {

Dataset windows_of(const torch::Tensor& series, const WindowOptions& o, int64_t first, int64_t count,
                   const std::string& name) {
  Dataset d;
  d.name = name;
  // unfold gives [N, features, window] views of the series; no copy.
  d.inputs = series.narrow(0, first, (count - 1) * o.stride + o.window).unfold(0, o.window, o.stride).transpose(1, 2);
  d.targets = series.select(1, o.target)
                  .narrow(0, first + o.window, (count - 1) * o.stride + o.horizon)
                  .unfold(0, o.horizon, o.stride);
  d.num_classes = 0;
  return d;
}

}  // namespace

WindowedSeries make_windows(const torch::Tensor& raw, const WindowOptions& o) {
  if (raw.dim() != 2)
    throw SeriesOptionError("series", "expected [steps, features], got " + std::to_string(raw.dim()) + " dimensions");
  const int64_t steps = raw.size(0), features = raw.size(1);
  if (o.window < 1) throw SeriesOptionError("window", "must be at least 1");
  if (o.horizon < 1) throw SeriesOptionError("horizon", "must be at least 1");
  if (o.stride < 1) throw SeriesOptionError("stride", "must be at least 1");
  if (o.target < 0 || o.target >= features)
    throw SeriesOptionError("target", "column " + std::to_string(o.target) + " is not one of the series' " +
                                          std::to_string(features) + " features");
  if (!(o.val_fraction > 0 && o.val_fraction < 1)) throw SeriesOptionError("val_fraction", "must be between 0 and 1");
  WindowedSeries w;
  w.split = static_cast<int64_t>(std::llround(static_cast<double>(steps) * (1 - o.val_fraction)));
  const int64_t span = o.window + o.horizon;
  // Training samples end (horizon included) before the split; validation
  // samples forecast steps from the split on, their windows reaching back.
  const int64_t train_count = w.split >= span ? (w.split - span) / o.stride + 1 : 0;
  const int64_t val_first = w.split - o.window;
  const int64_t val_count = val_first >= 0 && steps - val_first >= span ? (steps - val_first - span) / o.stride + 1 : 0;
  if (train_count < 1 || val_count < 1)
    throw SeriesOptionError("window", "window + horizon = " + std::to_string(span) + " steps do not fit in the " +
                                          (train_count < 1 ? "training part (" + std::to_string(w.split)
                                                           : "validation part (" + std::to_string(steps - w.split)) +
                                          " of " + std::to_string(steps) +
                                          " steps); use a longer series or a shorter window");
  torch::Tensor x = raw.to(torch::kFloat32);
  if (o.normalize) {
    const torch::Tensor part = x.narrow(0, 0, w.split);
    w.mean = part.mean(0);
    w.std = part.std(0).clamp_min(1e-6);
    x = ((x - w.mean) / w.std).contiguous();
  } else {
    w.mean = torch::zeros({features});
    w.std = torch::ones({features});
    x = x.contiguous();
  }
  w.series = x;
  w.train = windows_of(x, o, 0, train_count, "series train");
  w.val = windows_of(x, o, val_first, val_count, "series val");
  return w;
}

}  // namespace codefy::train
