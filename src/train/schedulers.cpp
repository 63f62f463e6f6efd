// Learning-rate schedulers. LibTorch 1.13 ships only StepLR, so every schedule
// is written here from PyTorch 1.13's torch/optim/lr_scheduler.py, keeping its
// formulas and even its order of floating-point operations, so the rates match
// what PyTorch produces by stepping (tests/golden/schedulers.json).
//
// The warmup composes multiplicatively with the main schedule, which is what
// PyTorch gives when a LinearLR (stepped per update) and a chainable scheduler
// (stepped per epoch) share one optimizer.
#include "train/schedulers.h"
#include "train/checks.h"

#include "train/builders.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace codefy::train {
namespace {

using detail::number;
using detail::require;

constexpr double kPi = 3.14159265358979323846;  // == Python's math.pi
/// ReduceLROnPlateau's eps: a reduction smaller than this is skipped.
constexpr double kPlateauEps = 1e-8;

bool is_epoch_type(const std::string& t) {
  return t == "StepLR" || t == "MultiStepLR" || t == "ExponentialLR" || t == "CosineAnnealingLR" ||
         t == "ReduceLROnPlateau";
}

/// PyTorch's _annealing_cos / _annealing_linear.
double anneal(const std::string& strategy, double start, double end, double pct) {
  if (strategy == "cos") {
    const double cos_out = std::cos(kPi * pct) + 1;
    return end + (start - end) / 2.0 * cos_out;
  }
  return (end - start) * pct + start;
}

/// JSON cannot hold infinities; ReduceLROnPlateau's best can be one.
nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

}  // namespace

const std::vector<std::string>& scheduler_types() {
  static const std::vector<std::string> types = {
      "StepLR", "CosineAnnealingLR", "ExponentialLR", "ReduceLROnPlateau", "MultiStepLR", "OneCycleLR", "LinearWarmup"};
  return types;
}

Scheduler::Scheduler(torch::optim::Optimizer& optimizer, SchedulerOptions options)
    : optimizer_(&optimizer), options_(std::move(options)) {
  const std::string& t = options_.type;
  const auto& known = scheduler_types();
  if (std::find(known.begin(), known.end(), t) == known.end()) {
    std::string names;
    for (const auto& n : known) names += (names.empty() ? "" : ", ") + n;
    throw std::invalid_argument("Unsupported scheduler type: '" + t + "' (known: " + names + ")");
  }
  // PyTorch's own constructor checks, plus the ones whose violation PyTorch
  // only reports as a ZeroDivisionError when stepping.
  require(options_.warmup_steps >= 0, "warmup_steps must be >= 0, got " + std::to_string(options_.warmup_steps));
  require(options_.warmup_start_factor >= 0.0 && options_.warmup_start_factor <= 1.0,
          "warmup_start_factor must be between 0 and 1, got " + number(options_.warmup_start_factor));
  if (t == "StepLR")
    require(options_.step_size >= 1, "StepLR: step_size must be >= 1, got " + std::to_string(options_.step_size));
  if (t == "CosineAnnealingLR")
    require(options_.t_max >= 1, "CosineAnnealingLR: T_max must be >= 1, got " + std::to_string(options_.t_max));
  if (t == "OneCycleLR") {
    require(options_.total_steps >= 0,
            "OneCycleLR: total_steps must be a positive integer (or 0 for epochs x batches), got " +
                std::to_string(options_.total_steps));
    require(options_.pct_start >= 0.0 && options_.pct_start <= 1.0,
            "OneCycleLR: pct_start must be between 0 and 1, got " + number(options_.pct_start));
    require(options_.anneal_strategy == "cos" || options_.anneal_strategy == "linear",
            "OneCycleLR: anneal_strategy must be 'cos' or 'linear', got '" + options_.anneal_strategy + "'");
    require(options_.div_factor > 0 && options_.final_div_factor > 0,
            "OneCycleLR: div_factor and final_div_factor must be > 0");
  }
  if (t == "ReduceLROnPlateau") {
    require(options_.factor < 1.0, "ReduceLROnPlateau: factor should be < 1.0, got " + number(options_.factor));
    require(options_.mode == "min" || options_.mode == "max",
            "ReduceLROnPlateau: mode must be 'min' or 'max', got '" + options_.mode + "'");
    require(options_.patience >= 0 && options_.cooldown >= 0, "ReduceLROnPlateau: patience and cooldown must be >= 0");
  }
  if (t == "LinearWarmup") require(options_.warmup_steps > 0, "LinearWarmup needs warmup_steps > 0");

  for (const auto& group : optimizer_->param_groups()) base_lrs_.push_back(group.options().get_lr());
  plateau_lrs_ = base_lrs_;
  epoch_lrs_ = base_lrs_;
}

bool Scheduler::steps_per_update() const {
  return options_.type == "OneCycleLR" || options_.type == "LinearWarmup" || options_.warmup_steps > 0;
}

bool Scheduler::steps_per_epoch() const { return is_epoch_type(options_.type); }

void Scheduler::set_total_steps(int64_t total) {
  if (options_.total_steps == 0) options_.total_steps = total;
}

void Scheduler::begin() {
  if (options_.type == "OneCycleLR")
    require(options_.total_steps > 0,
            "OneCycleLR: total_steps must be a positive integer; set it, or let the training loop fill it in");
  apply();
}

void Scheduler::step_update() {
  if (options_.type == "OneCycleLR" && updates_ + 1 > options_.total_steps)
    throw std::invalid_argument("OneCycleLR: tried to step " + std::to_string(updates_ + 1) +
                                " times; the specified number of total steps is " +
                                std::to_string(options_.total_steps) +
                                " (set total_steps to at least epochs x batches, or 0 to have it computed)");
  ++updates_;
  if (steps_per_update()) apply();
}

void Scheduler::step_epoch(double metric) {
  ++epochs_;
  if (options_.type == "ReduceLROnPlateau") {
    // PyTorch's ReduceLROnPlateau.step with threshold_mode "rel". Before the
    // first metric, best is the mode's worst value (±inf), as in PyTorch.
    const bool min_mode = options_.mode == "min";
    const double inf = std::numeric_limits<double>::infinity();
    const double best = has_best_ ? best_ : (min_mode ? inf : -inf);
    const bool better =
        min_mode ? metric < best * (1. - options_.threshold) : metric > best * (options_.threshold + 1.);
    if (better) {
      best_ = metric;
      has_best_ = true;
      bad_epochs_ = 0;
    } else {
      ++bad_epochs_;
    }
    if (cooldown_left_ > 0) {
      --cooldown_left_;
      bad_epochs_ = 0;
    }
    if (bad_epochs_ > options_.patience) {
      for (double& lr : plateau_lrs_) {
        const double new_lr = std::max(lr * options_.factor, options_.min_lr);
        if (lr - new_lr > kPlateauEps) lr = new_lr;
      }
      cooldown_left_ = options_.cooldown;
      bad_epochs_ = 0;
    }
  } else if (steps_per_epoch()) {
    replay_epochs();
  }
  if (steps_per_epoch()) apply();
}

double Scheduler::lr() const { return get_lr(*optimizer_); }

double Scheduler::factor_for_warmup() const {
  const int64_t w = options_.warmup_steps;
  if (w <= 0 || updates_ >= w) return 1.0;
  // LinearLR's closed form with end_factor 1.
  const double sf = options_.warmup_start_factor;
  return sf + (1.0 - sf) * static_cast<double>(updates_) / static_cast<double>(w);
}

double Scheduler::one_cycle_lr(int64_t step) const {
  // PyTorch's OneCycleLR.get_lr, three_phase=False.
  const double initial_lr = options_.max_lr / options_.div_factor;
  const double min_lr = initial_lr / options_.final_div_factor;
  const double step_num = static_cast<double>(step);
  const double end0 = options_.pct_start * static_cast<double>(options_.total_steps) - 1;
  const double end1 = static_cast<double>(options_.total_steps) - 1;
  // PyTorch divides by zero for a phase of zero length; such a phase is taken
  // as complete (its end rate).
  auto pct = [](double num, double den) { return den == 0 ? 1.0 : num / den; };
  if (step_num <= end0) return anneal(options_.anneal_strategy, initial_lr, options_.max_lr, pct(step_num, end0));
  return anneal(options_.anneal_strategy, options_.max_lr, min_lr, pct(step_num - end0, end1 - end0));
}

void Scheduler::replay_epochs() {
  // PyTorch's recursive get_lr (what step() uses), from last_epoch 1 to
  // epochs_; cheap next to an epoch of training, and it makes epochs_ the only
  // state to save.
  const std::string& t = options_.type;
  const double gamma = options_.gamma;
  for (size_t i = 0; i < base_lrs_.size(); ++i) {
    const double base = base_lrs_[i];
    double lr = base;
    for (int64_t e = 1; e <= epochs_; ++e) {
      if (t == "StepLR") {
        if (e % options_.step_size == 0) lr = lr * gamma;
      } else if (t == "MultiStepLR") {
        const auto n = std::count(options_.milestones.begin(), options_.milestones.end(), e);
        if (n > 0) lr = lr * std::pow(gamma, static_cast<double>(n));
      } else if (t == "ExponentialLR") {
        lr = lr * gamma;
      } else if (t == "CosineAnnealingLR") {
        const double tm = static_cast<double>(options_.t_max);
        const double eta = options_.eta_min;
        if ((e - 1 - options_.t_max) % (2 * options_.t_max) == 0) {
          // Past a trough the ratio form would divide by 1 + cos(pi) = 0.
          lr = lr + (base - eta) * (1 - std::cos(kPi / tm)) / 2;
        } else {
          const double ed = static_cast<double>(e);
          lr = (1 + std::cos(kPi * ed / tm)) / (1 + std::cos(kPi * (ed - 1) / tm)) * (lr - eta) + eta;
        }
      }
    }
    epoch_lrs_[i] = lr;
  }
}

double Scheduler::main_lr(size_t i) const {
  const std::string& t = options_.type;
  if (t == "OneCycleLR") return one_cycle_lr(updates_);
  if (t == "ReduceLROnPlateau") return plateau_lrs_[i];
  if (t == "LinearWarmup") return base_lrs_[i];
  return epoch_lrs_[i];
}

void Scheduler::apply() {
  // OneCycleLR has no schedule until the loop has given it total_steps.
  if (options_.type == "OneCycleLR" && options_.total_steps <= 0) return;
  const double w = factor_for_warmup();
  auto& groups = optimizer_->param_groups();
  for (size_t i = 0; i < groups.size() && i < base_lrs_.size(); ++i) groups[i].options().set_lr(main_lr(i) * w);
}

nlohmann::json Scheduler::state() const {
  return {{"type", options_.type},
          {"updates", updates_},
          {"epochs", epochs_},
          {"total_steps", options_.total_steps},
          {"base_lrs", base_lrs_},
          {"plateau_lrs", plateau_lrs_},
          {"best", finite_or_null(best_)},
          {"has_best", has_best_},
          {"bad_epochs", bad_epochs_},
          {"cooldown_left", cooldown_left_}};
}

void Scheduler::load_state(const nlohmann::json& state) {
  // Everything is read before anything is changed, so a bad state leaves the
  // scheduler as it was.
  std::vector<double> base, plateau;
  int64_t updates = 0, epochs = 0, total_steps = 0, bad_epochs = 0, cooldown_left = 0;
  bool has_best = false;
  double best = 0.0;
  try {
    const std::string type = state.at("type").get<std::string>();
    require(type == options_.type, "scheduler state is for " + type + ", not " + options_.type);
    base = state.at("base_lrs").get<std::vector<double>>();
    plateau = state.at("plateau_lrs").get<std::vector<double>>();
    updates = state.at("updates").get<int64_t>();
    epochs = state.at("epochs").get<int64_t>();
    total_steps = state.at("total_steps").get<int64_t>();
    has_best = state.at("has_best").get<bool>();
    const auto& b = state.at("best");
    // A best that was ±inf can only be the extreme in the improving direction
    // (NaN never becomes best), which no later metric can beat.
    const double inf = std::numeric_limits<double>::infinity();
    if (has_best) best = b.is_null() ? (options_.mode == "min" ? -inf : inf) : b.get<double>();
    bad_epochs = state.at("bad_epochs").get<int64_t>();
    cooldown_left = state.at("cooldown_left").get<int64_t>();
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("malformed scheduler state: ") + e.what());
  }
  require(base.size() == optimizer_->param_groups().size() && plateau.size() == base.size(),
          "scheduler state has " + std::to_string(base.size()) + " parameter groups, the optimizer " +
              std::to_string(optimizer_->param_groups().size()));
  require(updates >= 0 && epochs >= 0 && bad_epochs >= 0 && cooldown_left >= 0,
          "malformed scheduler state: negative counter");
  updates_ = updates;
  epochs_ = epochs;
  options_.total_steps = total_steps;
  base_lrs_ = std::move(base);
  plateau_lrs_ = std::move(plateau);
  has_best_ = has_best;
  best_ = best;
  bad_epochs_ = bad_epochs;
  cooldown_left_ = cooldown_left;
  epoch_lrs_ = base_lrs_;
  if (steps_per_epoch() && options_.type != "ReduceLROnPlateau") replay_epochs();
  apply();
}

}  // namespace codefy::train
