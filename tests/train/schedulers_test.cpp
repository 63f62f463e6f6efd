// Schedulers against the learning rates PyTorch produces by stepping
// (tests/golden/schedulers.json, written by scripts/golden/make_golden.py),
// checkpoint round trips, and option checks.
#include "train/schedulers.h"

#include "train/builders.h"

#include "../common/test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>

namespace codefy::train {
namespace {

using nlohmann::json;

using codefy::testing::read_golden;

/// 1e-5 relative; the absolute floor is tiny because rates are plain double
/// arithmetic and some cases live near 1e-8 (ReduceLROnPlateau's eps rule).

SchedulerOptions scheduler_options_from(const json& o) {
  SchedulerOptions r;
  r.type = o.at("type").get<std::string>();
  r.step_size = o.value("step_size", r.step_size);
  r.gamma = o.value("gamma", r.gamma);
  r.milestones = o.value("milestones", r.milestones);
  r.t_max = o.value("t_max", r.t_max);
  r.eta_min = o.value("eta_min", r.eta_min);
  r.max_lr = o.value("max_lr", r.max_lr);
  r.total_steps = o.value("total_steps", r.total_steps);
  r.pct_start = o.value("pct_start", r.pct_start);
  r.anneal_strategy = o.value("anneal_strategy", r.anneal_strategy);
  r.div_factor = o.value("div_factor", r.div_factor);
  r.final_div_factor = o.value("final_div_factor", r.final_div_factor);
  r.mode = o.value("mode", r.mode);
  r.factor = o.value("factor", r.factor);
  r.patience = o.value("patience", r.patience);
  r.threshold = o.value("threshold", r.threshold);
  r.cooldown = o.value("cooldown", r.cooldown);
  r.min_lr = o.value("min_lr", r.min_lr);
  r.warmup_steps = o.value("warmup_steps", r.warmup_steps);
  r.warmup_start_factor = o.value("warmup_start_factor", r.warmup_start_factor);
  return r;
}

/// An SGD with one parameter group per learning rate.
std::unique_ptr<torch::optim::SGD> sgd(const std::vector<double>& lrs) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (double lr : lrs)
    groups.emplace_back(std::vector<torch::Tensor>{torch::zeros({1}, torch::requires_grad())},
                        std::make_unique<torch::optim::SGDOptions>(lr));
  return std::make_unique<torch::optim::SGD>(groups, torch::optim::SGDOptions(lrs.front()));
}

std::vector<double> lrs_of(const torch::optim::Optimizer& opt) {
  std::vector<double> r;
  for (const auto& g : opt.param_groups()) r.push_back(g.options().get_lr());
  return r;
}

/// Plays one golden case's events from `from` to `to` (exclusive), checking the
/// rates after each one.
void play(Scheduler& s, const torch::optim::Optimizer& opt, const json& c, size_t from, size_t to,
          size_t& metric_index) {
  const auto& events = c.at("events");
  for (size_t i = from; i < to; ++i) {
    const std::string e = events.at(i).get<std::string>();
    if (e == "begin") {
      s.begin();
    } else if (e == "update") {
      s.step_update();
    } else {
      const double metric = c.contains("metrics") ? c.at("metrics").at(metric_index++).get<double>() : 0.0;
      s.step_epoch(metric);
    }
    const auto expected = c.at("lrs").at(i).get<std::vector<double>>();
    const auto got = lrs_of(opt);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t g = 0; g < got.size(); ++g)
      EXPECT_TRUE(codefy::testing::close_to_pytorch(
          got[g], expected[g], "event " + std::to_string(i) + " (" + e + "), group " + std::to_string(g), 1e-15));
    EXPECT_DOUBLE_EQ(s.lr(), got[0]);
  }
}

TEST(Schedulers, MatchPyTorchLearningRates) {
  const json golden = read_golden("schedulers.json");
  std::set<std::string> types_seen;
  for (const auto& c : golden.at("cases")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    auto opt = sgd(c.at("base_lrs").get<std::vector<double>>());
    Scheduler s(*opt, scheduler_options_from(c.at("options")));
    types_seen.insert(s.options().type);
    size_t metric_index = 0;
    play(s, *opt, c, 0, c.at("events").size(), metric_index);
  }
  for (const auto& type : scheduler_types()) EXPECT_TRUE(types_seen.count(type)) << type << " has no golden case";
}

TEST(Schedulers, ResumedRunContinuesIdentically) {
  // Stop every golden case half-way, checkpoint through JSON text, resume on a
  // fresh optimizer whose rate is whatever the checkpointed optimizer held
  // (not the base rate), and check the rest of PyTorch's sequence.
  const json golden = read_golden("schedulers.json");
  for (const auto& c : golden.at("cases")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const auto base = c.at("base_lrs").get<std::vector<double>>();
    const SchedulerOptions options = scheduler_options_from(c.at("options"));
    const size_t n = c.at("events").size();
    for (size_t cut : {n / 3, n / 2 + 1}) {
      auto opt = sgd(base);
      Scheduler s(*opt, options);
      size_t metric_index = 0;
      play(s, *opt, c, 0, cut, metric_index);
      const std::string saved = s.state().dump();

      auto resumed_opt = sgd(lrs_of(*opt));
      Scheduler resumed(*resumed_opt, options);
      resumed.load_state(json::parse(saved));
      const auto expected = c.at("lrs").at(cut - 1).get<std::vector<double>>();
      const auto got = lrs_of(*resumed_opt);
      for (size_t g = 0; g < got.size(); ++g)
        EXPECT_TRUE(codefy::testing::close_to_pytorch(got[g], expected[g], "after load_state", 1e-15));
      size_t resumed_metric_index = metric_index;
      play(resumed, *resumed_opt, c, cut, n, resumed_metric_index);
      play(s, *opt, c, cut, n, metric_index);
      EXPECT_EQ(resumed.state(), s.state()) << "state after resuming differs from the uninterrupted run";
    }
  }
}

TEST(Schedulers, UnknownTypeListsKnownTypes) {
  auto opt = sgd({0.1});
  SchedulerOptions o;
  o.type = "CyclicLR";
  try {
    Scheduler s(*opt, o);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("CyclicLR"), std::string::npos) << msg;
    for (const auto& type : scheduler_types()) EXPECT_NE(msg.find(type), std::string::npos) << msg;
  }
}

TEST(Schedulers, RefusesBadOptions) {
  auto opt = sgd({0.1});
  auto refused = [&](auto edit) {
    SchedulerOptions o;
    edit(o);
    try {
      Scheduler s(*opt, o);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(refused([](SchedulerOptions& o) { o.step_size = 0; }).find("step_size"), std::string::npos);
  EXPECT_NE(refused([](SchedulerOptions& o) {
              o.type = "CosineAnnealingLR";
              o.t_max = 0;
            }).find("T_max"),
            std::string::npos);
  EXPECT_NE(refused([](SchedulerOptions& o) {
              o.type = "OneCycleLR";
              o.anneal_strategy = "exp";
            }).find("anneal_strategy"),
            std::string::npos);
  EXPECT_NE(refused([](SchedulerOptions& o) {
              o.type = "OneCycleLR";
              o.pct_start = 1.5;
            }).find("pct_start"),
            std::string::npos);
  EXPECT_NE(refused([](SchedulerOptions& o) {
              o.type = "ReduceLROnPlateau";
              o.factor = 1.0;
            }).find("factor"),
            std::string::npos);
  EXPECT_NE(refused([](SchedulerOptions& o) {
              o.type = "ReduceLROnPlateau";
              o.mode = "lowest";
            }).find("mode"),
            std::string::npos);
  EXPECT_NE(refused([](SchedulerOptions& o) { o.type = "LinearWarmup"; }).find("warmup_steps"), std::string::npos);
  EXPECT_NE(refused([](SchedulerOptions& o) { o.warmup_start_factor = 1.5; }).find("warmup_start_factor"),
            std::string::npos);
}

TEST(Schedulers, StepsPerUpdateOrEpoch) {
  auto opt = sgd({0.1});
  auto make = [&](const std::string& type, int64_t warmup) {
    SchedulerOptions o;
    o.type = type;
    o.warmup_steps = warmup;
    return Scheduler(*opt, o);
  };
  for (const std::string t : {"StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "ReduceLROnPlateau"}) {
    EXPECT_FALSE(make(t, 0).steps_per_update()) << t;
    EXPECT_TRUE(make(t, 0).steps_per_epoch()) << t;
    EXPECT_TRUE(make(t, 5).steps_per_update()) << t;
    EXPECT_TRUE(make(t, 5).steps_per_epoch()) << t;
  }
  EXPECT_TRUE(make("OneCycleLR", 0).steps_per_update());
  EXPECT_FALSE(make("OneCycleLR", 0).steps_per_epoch());
  EXPECT_TRUE(make("LinearWarmup", 3).steps_per_update());
  EXPECT_FALSE(make("LinearWarmup", 3).steps_per_epoch());
}

TEST(Schedulers, OneCycleNeedsAndBoundsTotalSteps) {
  auto opt = sgd({0.1});
  SchedulerOptions o;
  o.type = "OneCycleLR";
  o.max_lr = 0.1;
  Scheduler s(*opt, o);
  EXPECT_THROW(s.begin(), std::invalid_argument);
  EXPECT_DOUBLE_EQ(s.lr(), 0.1) << "no rate applied without total_steps";
  s.set_total_steps(4);
  EXPECT_EQ(s.options().total_steps, 4);
  s.set_total_steps(99);
  EXPECT_EQ(s.options().total_steps, 4) << "a total_steps already set is kept";
  s.begin();
  EXPECT_DOUBLE_EQ(s.lr(), 0.1 / 25.0);
  for (int i = 0; i < 4; ++i) s.step_update();
  EXPECT_THROW(s.step_update(), std::invalid_argument);
  s.step_epoch(1.0);  // per-epoch calls do not move a per-update schedule
  EXPECT_EQ(s.state().at("updates"), 4);
}

TEST(Schedulers, WarmupFromZeroAndOverOneCycle) {
  auto opt = sgd({0.2});
  SchedulerOptions o;
  o.type = "LinearWarmup";
  o.warmup_steps = 4;
  Scheduler s(*opt, o);
  s.begin();
  EXPECT_DOUBLE_EQ(s.lr(), 0.0);
  for (double expected : {0.05, 0.1, 0.15, 0.2, 0.2, 0.2}) {
    s.step_update();
    EXPECT_NEAR(s.lr(), expected, 1e-15);
  }

  // Warmup multiplies any schedule, OneCycleLR included.
  auto opt2 = sgd({0.2});
  o.type = "OneCycleLR";
  o.total_steps = 10;
  o.max_lr = 1.0;
  o.warmup_steps = 2;
  o.warmup_start_factor = 0.5;
  Scheduler warm(*opt2, o);
  auto opt3 = sgd({0.2});
  o.warmup_steps = 0;
  Scheduler plain(*opt3, o);
  warm.begin();
  plain.begin();
  EXPECT_DOUBLE_EQ(warm.lr(), 0.5 * plain.lr());
  warm.step_update();
  plain.step_update();
  EXPECT_DOUBLE_EQ(warm.lr(), 0.75 * plain.lr());
  warm.step_update();
  plain.step_update();
  EXPECT_DOUBLE_EQ(warm.lr(), plain.lr());
}

TEST(Schedulers, PlateauWithInfiniteBestRoundTrips) {
  auto opt = sgd({0.1});
  SchedulerOptions o;
  o.type = "ReduceLROnPlateau";
  o.patience = 0;
  o.factor = 0.5;
  Scheduler s(*opt, o);
  s.begin();
  s.step_epoch(-std::numeric_limits<double>::infinity());
  EXPECT_DOUBLE_EQ(s.lr(), 0.1);
  const json saved = json::parse(s.state().dump());
  auto opt2 = sgd({0.1});
  Scheduler resumed(*opt2, o);
  resumed.load_state(saved);
  resumed.step_epoch(-1e300);  // nothing beats -inf: a bad epoch, so a reduction
  EXPECT_DOUBLE_EQ(resumed.lr(), 0.05);
  // A NaN metric is never an improvement (PyTorch compares, and NaN compares false).
  auto opt3 = sgd({0.1});
  Scheduler fresh(*opt3, o);
  fresh.step_epoch(std::nan(""));
  EXPECT_FALSE(fresh.state().at("has_best").get<bool>());
}

TEST(Schedulers, LoadStateRefusesOtherSchedulers) {
  auto opt = sgd({0.1, 0.2});
  SchedulerOptions o;
  Scheduler s(*opt, o);
  const json state = s.state();

  SchedulerOptions other;
  other.type = "ExponentialLR";
  Scheduler e(*opt, other);
  EXPECT_THROW(e.load_state(state), std::invalid_argument);

  auto one_group = sgd({0.1});
  Scheduler narrow(*one_group, o);
  EXPECT_THROW(narrow.load_state(state), std::invalid_argument);

  json broken = state;
  broken.erase("epochs");
  Scheduler again(*opt, o);
  EXPECT_THROW(again.load_state(broken), std::invalid_argument);
  EXPECT_EQ(again.state(), state) << "a refused state changes nothing";
}

}  // namespace
}  // namespace codefy::train
