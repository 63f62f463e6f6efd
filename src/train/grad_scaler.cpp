#include "train/grad_scaler.h"

#include <torch/torch.h>

#include <stdexcept>

namespace codefy::train {

GradScaler::GradScaler(GradScalerOptions options) : options_(options) {
  if (options_.init_scale <= 0 || options_.growth_factor <= 1.0 || options_.backoff_factor <= 0 ||
      options_.backoff_factor >= 1.0 || options_.growth_interval < 1)
    throw std::invalid_argument(
        "gradient scaler needs init_scale > 0, growth_factor > 1, 0 < backoff_factor < 1, growth_interval >= 1");
  scale_ = torch::full({1}, options_.init_scale, torch::kFloat);
  growth_tracker_ = torch::zeros({1}, torch::kInt);
  found_inf_ = torch::zeros({1}, torch::kFloat);
}

void GradScaler::ensure_on(const c10::Device& device) {
  if (scale_.device() == device) return;
  scale_ = scale_.to(device);
  growth_tracker_ = growth_tracker_.to(device);
  found_inf_ = found_inf_.to(device);
}

torch::Tensor GradScaler::scale(const torch::Tensor& loss) {
  ensure_on(loss.device());
  return loss * scale_.to(loss.scalar_type());
}

void GradScaler::unscale(const std::vector<torch::Tensor>& parameters) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  for (const auto& p : parameters)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (!grads.empty()) ensure_on(grads.front().device());
  found_inf_.zero_();
  const torch::Tensor inv_scale = scale_.to(torch::kDouble).reciprocal().to(torch::kFloat);
  if (scale_.is_cuda()) {
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf_, inv_scale);
  } else {
    torch::Tensor any_inf = torch::zeros({1}, torch::TensorOptions().dtype(torch::kBool).device(scale_.device()));
    for (auto& g : grads) {
      any_inf = any_inf.logical_or(g.isfinite().logical_not().any().reshape({1}));
      g.mul_(inv_scale.to(g.scalar_type()));
    }
    found_inf_ = any_inf.to(torch::kFloat);
  }
  unscaled_ = true;
}

bool GradScaler::found_inf() const { return found_inf_.item<float>() != 0.0f; }

bool GradScaler::step(torch::optim::Optimizer& optimizer) {
  if (!unscaled_) throw std::logic_error("GradScaler::step before unscale");
  const bool skip = found_inf();
  if (!skip) optimizer.step();
  return !skip;
}

void GradScaler::update() {
  if (scale_.is_cuda()) {
    at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, options_.growth_factor, options_.backoff_factor,
                           options_.growth_interval);
  } else {
    // The same arithmetic as _amp_update_scale_, in tensor ops (no host sync).
    const torch::Tensor inf = found_inf_ > 0;
    const torch::Tensor grown = growth_tracker_ + 1;
    const torch::Tensor grow = grown >= options_.growth_interval;
    scale_ = torch::where(inf, scale_ * options_.backoff_factor,
                          torch::where(grow, scale_ * options_.growth_factor, scale_));
    growth_tracker_ = torch::where(inf.logical_or(grow), torch::zeros_like(growth_tracker_), grown);
  }
  unscaled_ = false;
}

double GradScaler::get_scale() const { return scale_.item<double>(); }
int64_t GradScaler::growth_tracker() const { return growth_tracker_.item<int64_t>(); }

nlohmann::json GradScaler::state_dict() const {
  return {{"scale", get_scale()},
          {"growth_factor", options_.growth_factor},
          {"backoff_factor", options_.backoff_factor},
          {"growth_interval", options_.growth_interval},
          {"_growth_tracker", growth_tracker()}};
}

void GradScaler::load_state_dict(const nlohmann::json& state) {
  auto number = [&](const char* key) {
    if (!state.is_object() || !state.contains(key) || !state.at(key).is_number())
      throw std::invalid_argument(std::string("grad_scaler_state: \"") + key + "\" is missing or not a number");
    return state.at(key).get<double>();
  };
  GradScalerOptions o;
  o.init_scale = number("scale");
  o.growth_factor = number("growth_factor");
  o.backoff_factor = number("backoff_factor");
  o.growth_interval = static_cast<int64_t>(number("growth_interval"));
  const auto tracker = static_cast<int64_t>(number("_growth_tracker"));
  const c10::Device device = scale_.device();
  *this = GradScaler(o);
  growth_tracker_.fill_(tracker);
  ensure_on(device);
}

}  // namespace codefy::train
