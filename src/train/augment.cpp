#include "train/augment.h"

#include "util/random.h"

#include <torch/torch.h>

#include <cmath>

namespace codefy::train {

namespace {

/// A sample's random stream: splitmix64 over a counter (cheap, and the same
/// on every machine and thread).
class Draws {
 public:
  explicit Draws(uint64_t seed) : state_(seed) {}
  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Uniform whole number in [0, n).
  int64_t below(int64_t n) { return static_cast<int64_t>(uniform() * static_cast<double>(n)); }

 private:
  uint64_t next() { return util::splitmix64(state_ += 0x9E3779B97F4A7C15ULL); }
  uint64_t state_;
};

AugmentationError bad(size_t i, const AugmentStep& s, const std::string& why) {
  return AugmentationError("transform step " + std::to_string(i + 1) + " (" + s.type + "): " + why);
}

at::Tensor random_crop(const at::Tensor& x, const AugmentStep& s, Draws& d) {
  namespace F = torch::nn::functional;
  at::Tensor padded = x;
  if (s.padding > 0) {
    const std::vector<int64_t> pad(4, s.padding);
    if (s.padding_mode == "constant")
      padded = F::pad(x.unsqueeze(0), F::PadFuncOptions(pad).mode(torch::kConstant).value(0)).squeeze(0);
    else if (s.padding_mode == "edge")
      padded = F::pad(x.unsqueeze(0), F::PadFuncOptions(pad).mode(torch::kReplicate)).squeeze(0);
    else
      padded = F::pad(x.unsqueeze(0), F::PadFuncOptions(pad).mode(torch::kReflect)).squeeze(0);
  }
  const int64_t h = padded.size(-2), w = padded.size(-1);
  const int64_t top = d.below(h - s.size + 1), left = d.below(w - s.size + 1);
  return padded.narrow(-2, top, s.size).narrow(-1, left, s.size);
}

at::Tensor random_rotation(const at::Tensor& x, const AugmentStep& s, Draws& d) {
  namespace F = torch::nn::functional;
  const double angle = (d.uniform() * 2 - 1) * s.degrees * M_PI / 180.0;
  const double c = std::cos(angle), si = std::sin(angle);
  const double h = static_cast<double>(x.size(-2)), w = static_cast<double>(x.size(-1));
  // Output pixel -> input pixel, about the centre, in normalized coordinates
  // (x right, y down; the aspect ratio kept).
  const at::Tensor theta = torch::tensor({{c, -si * h / w, 0.0}, {si * w / h, c, 0.0}}, torch::kFloat32).unsqueeze(0);
  const at::Tensor img = x.unsqueeze(0);
  const at::Tensor grid = F::affine_grid(theta, img.sizes().vec(), false);
  const auto nearest =
      F::GridSampleFuncOptions().mode(torch::kNearest).padding_mode(torch::kZeros).align_corners(false);
  at::Tensor out = F::grid_sample(img, grid, nearest);
  if (s.fill != 0) out += s.fill * (1 - F::grid_sample(torch::ones_like(img), grid, nearest));
  return out.squeeze(0);
}

at::Tensor normalize(const at::Tensor& x, const AugmentStep& s, size_t i) {
  const int64_t channels = x.size(0);
  const auto per_channel = [&](const std::vector<double>& v, const char* name) {
    if (v.size() != 1 && static_cast<int64_t>(v.size()) != channels)
      throw bad(i, s,
                std::string(name) + " has " + std::to_string(v.size()) + " values for " + std::to_string(channels) +
                    " channel(s); give one per channel, or one for all");
    std::vector<float> f(v.begin(), v.end());
    return torch::tensor(f, torch::kFloat32).view({-1, 1, 1});
  };
  const at::Tensor mean = per_channel(s.mean, "mean");  // mean first: the message names the first problem
  const at::Tensor std = per_channel(s.std, "std");
  return (x - mean) / std;
}

}  // namespace

nlohmann::json Augmentation::to_json() const {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& s : steps) {
    nlohmann::json j = {{"type", s.type}};
    if (s.type == "RandomCrop") j.update({{"size", s.size}, {"padding", s.padding}, {"padding_mode", s.padding_mode}});
    if (s.type == "RandomHorizontalFlip") j["p"] = s.p;
    if (s.type == "RandomRotation") j.update({{"degrees", s.degrees}, {"fill", s.fill}});
    if (s.type == "NormalizeTransform") j.update({{"mean", s.mean}, {"std", s.std}});
    a.push_back(j);
  }
  return {{"transform", "chain"}, {"steps", a}};
}

Augmentation Augmentation::from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("steps") || !j["steps"].is_array())
    throw AugmentationError("expected a transform chain ({\"steps\": [...]}) from a transform node");
  Augmentation a;
  for (const auto& e : j["steps"]) {
    AugmentStep s;
    s.type = e.value("type", "");
    s.size = e.value("size", int64_t{0});
    s.padding = e.value("padding", int64_t{0});
    s.padding_mode = e.value("padding_mode", std::string("constant"));
    s.p = e.value("p", 0.5);
    s.degrees = e.value("degrees", 0.0);
    s.fill = e.value("fill", 0.0);
    s.mean = e.value("mean", std::vector<double>{});
    s.std = e.value("std", std::vector<double>{});
    const size_t i = a.steps.size();
    if (s.type == "RandomCrop") {
      if (s.size < 1) throw bad(i, s, "size must be >= 1");
      if (s.padding < 0) throw bad(i, s, "padding must be >= 0");
      if (s.padding_mode != "constant" && s.padding_mode != "edge" && s.padding_mode != "reflect")
        throw bad(i, s, "padding_mode \"" + s.padding_mode + "\" is not available in Codefy (constant, edge, reflect)");
    } else if (s.type == "RandomHorizontalFlip") {
      if (!(s.p >= 0 && s.p <= 1)) throw bad(i, s, "p must be in [0, 1]");
    } else if (s.type == "RandomRotation") {
      if (!(s.degrees >= 0 && s.degrees <= 180)) throw bad(i, s, "degrees must be in [0, 180]");
    } else if (s.type == "NormalizeTransform") {
      if (s.mean.empty() || s.std.empty()) throw bad(i, s, "needs mean and std");
      for (double v : s.std)
        if (v == 0) throw bad(i, s, "std cannot contain 0; it divides every pixel");
    } else if (s.type != "ToTensorTransform") {
      throw bad(i, s, "not a transform Codefy knows");
    }
    a.steps.push_back(std::move(s));
  }
  return a;
}

bool Augmentation::is_random() const {
  for (const auto& s : steps)
    if (s.type == "RandomCrop" || (s.type == "RandomHorizontalFlip" && s.p > 0) ||
        (s.type == "RandomRotation" && s.degrees > 0))
      return true;
  return false;
}

at::Tensor Augmentation::apply(const at::Tensor& sample, uint64_t draws) const {
  Draws d(draws);
  at::Tensor x = sample;
  for (size_t i = 0; i < steps.size(); ++i) {
    const AugmentStep& s = steps[i];
    if (x.dim() != 3)
      throw bad(i, s, "needs images [C, H, W]; a sample here is " + std::to_string(x.dim()) + "-dimensional");
    if (s.type == "RandomCrop") {
      if (x.size(-2) + 2 * s.padding < s.size || x.size(-1) + 2 * s.padding < s.size)
        throw bad(i, s,
                  "a " + std::to_string(s.size) + "x" + std::to_string(s.size) + " crop does not fit in " +
                      std::to_string(x.size(-2)) + "x" + std::to_string(x.size(-1)) + " images padded by " +
                      std::to_string(s.padding));
      if (s.padding_mode == "reflect" && (s.padding >= x.size(-2) || s.padding >= x.size(-1)))
        throw bad(i, s, "reflect padding must be smaller than the image");
      x = random_crop(x, s, d);
    } else if (s.type == "RandomHorizontalFlip") {
      if (d.uniform() < s.p) x = x.flip({-1});
    } else if (s.type == "RandomRotation") {
      if (s.degrees > 0) x = random_rotation(x, s, d);
    } else if (s.type == "NormalizeTransform") {
      x = normalize(x, s, i);
    }
  }
  return x.contiguous();
}

at::Tensor Augmentation::apply_batch(const at::Tensor& inputs, const at::Tensor& indices, uint64_t seed,
                                     int64_t epoch) const {
  const bool gray = inputs.dim() == 3;  // [N, H, W]: one channel
  const at::Tensor x = gray ? inputs.unsqueeze(1) : inputs;
  const auto idx = indices.to(torch::kInt64).contiguous();
  const int64_t* index = idx.data_ptr<int64_t>();
  const uint64_t epoch_seed = util::splitmix64(util::splitmix64(seed ^ 0xA7F3C0DEULL) ^ static_cast<uint64_t>(epoch));
  std::vector<at::Tensor> out;
  out.reserve(static_cast<size_t>(x.size(0)));
  for (int64_t k = 0; k < x.size(0); ++k)
    out.push_back(apply(x[k], util::splitmix64(epoch_seed ^ static_cast<uint64_t>(index[k]))));
  at::Tensor batch = torch::stack(out);
  return gray && batch.size(1) == 1 ? batch.squeeze(1) : batch;
}

}  // namespace codefy::train
