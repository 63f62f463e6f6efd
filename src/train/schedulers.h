// Learning-rate schedulers with PyTorch's formulas, stepped per update or per epoch.
#pragma once

#include <torch/optim/optimizer.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace codefy::train {

/// Scheduler types Codefy knows, in CodefyUI's spelling (plus "LinearWarmup").
const std::vector<std::string>& scheduler_types();

/// Options of every scheduler (PyTorch names and defaults).
struct SchedulerOptions {
  std::string type = "StepLR";
  int64_t step_size = 10;               ///< StepLR
  double gamma = 0.1;                   ///< StepLR, MultiStepLR, ExponentialLR
  std::vector<int64_t> milestones;      ///< MultiStepLR
  int64_t t_max = 10;                   ///< CosineAnnealingLR
  double eta_min = 0.0;                 ///< CosineAnnealingLR
  double max_lr = 0.01;                 ///< OneCycleLR
  int64_t total_steps = 0;              ///< OneCycleLR (0: epochs x updates per epoch, filled by the loop)
  double pct_start = 0.3;               ///< OneCycleLR
  std::string anneal_strategy = "cos";  ///< OneCycleLR: "cos" or "linear"
  double div_factor = 25.0;             ///< OneCycleLR
  double final_div_factor = 1e4;        ///< OneCycleLR
  std::string mode = "min";             ///< ReduceLROnPlateau
  double factor = 0.1;                  ///< ReduceLROnPlateau
  int64_t patience = 10;                ///< ReduceLROnPlateau
  double threshold = 1e-4;              ///< ReduceLROnPlateau (relative)
  int64_t cooldown = 0;                 ///< ReduceLROnPlateau
  double min_lr = 0.0;                  ///< ReduceLROnPlateau
  int64_t warmup_steps = 0;             ///< linear warmup, in updates (any type; LinearWarmup alone)
  double warmup_start_factor = 0.0;     ///< warmup starts at base_lr x this factor
};

/// A scheduler bound to an optimizer. OneCycleLR and the warmup act per
/// optimizer update; the others per epoch (ReduceLROnPlateau on a metric).
class Scheduler {
 public:
  /// Reads the optimizer's current learning rates as the base rates.
  Scheduler(torch::optim::Optimizer& optimizer, SchedulerOptions options);
  const SchedulerOptions& options() const { return options_; }
  /// True when the learning rate moves per optimizer update: OneCycleLR,
  /// LinearWarmup, and any type with warmup_steps > 0 (during the warmup).
  bool steps_per_update() const;
  /// True for the per-epoch schedules (StepLR, MultiStepLR, ExponentialLR,
  /// CosineAnnealingLR, ReduceLROnPlateau). A type with a warmup is both:
  /// call step_update() after every update and step_epoch() after every epoch;
  /// each is a harmless no-op (it only counts) where it does not apply.
  bool steps_per_epoch() const;
  /// Sets OneCycleLR's total_steps when the graph left it 0 (a value the graph
  /// set is kept, like PyTorch's explicit total_steps).
  void set_total_steps(int64_t total);
  /// Applies the learning rate for the current counters: at the start of
  /// training warmup's first value and OneCycle's initial lr. Throws
  /// std::invalid_argument when OneCycleLR still has no total_steps.
  void begin();
  /// After each optimizer update. OneCycleLR throws std::invalid_argument when
  /// stepped past total_steps, as PyTorch does.
  void step_update();
  /// After each epoch; `metric` is the validation (else training) loss, used by ReduceLROnPlateau.
  void step_epoch(double metric);
  /// Current learning rate of the first group.
  double lr() const;
  /// Counters, base rates and plateau state, for checkpoints.
  nlohmann::json state() const;
  /// Restores state() output and applies the learning rate it implies, so a
  /// resumed run continues identically. Throws std::invalid_argument for a
  /// state of another type or another number of parameter groups.
  void load_state(const nlohmann::json& state);

 private:
  double factor_for_warmup() const;
  /// The schedule's own learning rate for group `i`, before the warmup factor.
  double main_lr(size_t i) const;
  /// OneCycleLR's learning rate after `step` updates.
  double one_cycle_lr(int64_t step) const;
  /// Recomputes epoch_lrs_ by replaying PyTorch's recursive get_lr over epochs_.
  void replay_epochs();
  void apply();
  torch::optim::Optimizer* optimizer_;
  SchedulerOptions options_;
  std::vector<double> base_lrs_;
  std::vector<double> plateau_lrs_;
  std::vector<double> epoch_lrs_;  ///< derived from base_lrs_ and epochs_ (not saved)
  int64_t updates_ = 0;
  int64_t epochs_ = 0;
  double best_ = 0.0;
  bool has_best_ = false;
  int64_t bad_epochs_ = 0;
  int64_t cooldown_left_ = 0;
};
using SchedulerPtr = std::shared_ptr<Scheduler>;

}  // namespace codefy::train
