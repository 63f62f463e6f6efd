// The update at the end of a window on its own: reducer → unscale →
// non-finite check → clip once → step unless skipped → scaler update →
// scheduler only if stepped → zero grad, on gradients set by hand.
#include "train/update.h"
#include "train/grad_buffer.h"
#include "train/grad_scaler.h"
#include "train/schedulers.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

namespace codefy::train {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

/// Two parameters, w1 = [1, 2] and w2 = [-1], with an SGD optimizer.
struct UpdateBench {
  std::vector<torch::Tensor> params{torch::tensor({1.0f, 2.0f}).requires_grad_(),
                                    torch::tensor({-1.0f}).requires_grad_()};
  torch::optim::SGD sgd;
  GradBuffer grads{params};

  explicit UpdateBench(double lr) : sgd(params, torch::optim::SGDOptions(lr)) {}
  /// The window's gradients as backward would leave them (g1 and g2, times `scale`).
  void set_grads(std::vector<float> g1, std::vector<float> g2, float scale = 1.0f) {
    params[0].mutable_grad() = torch::tensor(g1) * scale;
    params[1].mutable_grad() = torch::tensor(g2) * scale;
  }
  void expect_weights(std::vector<float> w1, std::vector<float> w2, const std::string& what) const {
    EXPECT_TRUE(torch::allclose(params[0].detach(), torch::tensor(w1), 1e-6, 1e-6)) << what << ": " << params[0];
    EXPECT_TRUE(torch::allclose(params[1].detach(), torch::tensor(w2), 1e-6, 1e-6)) << what << ": " << params[1];
  }
  void expect_zero_grads(const std::string& what) const {
    for (const auto& p : params) EXPECT_EQ(p.grad().abs().sum().item<double>(), 0.0) << what;
  }
};

/// LinearWarmup over 10 updates from half the rate: it moves at every update.
SchedulerOptions warmup() {
  SchedulerOptions o;
  o.type = "LinearWarmup";
  o.warmup_steps = 10;
  o.warmup_start_factor = 0.5;
  return o;
}

TEST(Update, StepsWithTheWindowsGradientThenZeroesIt) {
  UpdateBench b(0.5);
  b.set_grads({3, 0}, {4});  // global norm 5
  const UpdateResult r = apply_update(b.grads, b.sgd, UpdateOptions{});
  EXPECT_TRUE(r.stepped);
  ASSERT_TRUE(r.grad_norm.has_value());
  EXPECT_NEAR(*r.grad_norm, 5.0, 1e-6);
  b.expect_weights({1 - 0.5f * 3, 2}, {-1 - 0.5f * 4}, "w - lr·g");
  b.expect_zero_grads("after a step");
}

TEST(Update, SkippedNonFiniteUpdateLeavesWeightsAndSchedulerAndZeroesGrads) {
  for (const bool with_scaler : {false, true}) {
    SCOPED_TRACE(with_scaler ? "gradient scaler" : "norm check");
    UpdateBench b(0.5);
    Scheduler sched(b.sgd, warmup());
    sched.begin();
    const nlohmann::json sched_before = sched.state();
    const double lr_before = sched.lr();
    GradScaler scaler(GradScalerOptions{1024.0});
    b.set_grads({with_scaler ? kInf : kNaN, 0}, {4}, with_scaler ? 1024.0f : 1.0f);

    const UpdateResult r = apply_update(b.grads, b.sgd, UpdateOptions{}, with_scaler ? &scaler : nullptr, &sched);
    EXPECT_FALSE(r.stepped);
    b.expect_weights({1, 2}, {-1}, "skipped");
    EXPECT_EQ(sched.state(), sched_before);
    EXPECT_EQ(sched.lr(), lr_before);
    b.expect_zero_grads("a skipped update's gradients");
    if (with_scaler) {
      EXPECT_FALSE(r.grad_norm.has_value());  // the norm of inf gradients means nothing
      EXPECT_EQ(scaler.get_scale(), 512.0);   // and the scale backs off
    } else {
      ASSERT_TRUE(r.grad_norm.has_value());
      EXPECT_TRUE(std::isnan(*r.grad_norm));
    }
  }
}

TEST(Update, ClipsTheUnscaledGradientOnce) {
  // Gradients scaled by 1024 with a unit clip: clipping after unscaling steps
  // by g/|g| (|g| = 5); clipping before would step by g/(5·1024).
  UpdateBench b(1.0);
  GradScaler scaler(GradScalerOptions{1024.0});
  b.set_grads({3, 0}, {4}, 1024.0f);
  UpdateOptions o;
  o.grad_clip_norm = 1.0;
  const UpdateResult r = apply_update(b.grads, b.sgd, o, &scaler);
  EXPECT_TRUE(r.stepped);
  ASSERT_TRUE(r.grad_norm.has_value());
  EXPECT_NEAR(*r.grad_norm, 5.0, 1e-5) << "the reported norm is the unscaled one, before clipping";
  b.expect_weights({1 - 0.6f, 2}, {-1 - 0.8f}, "clipped to norm 1");
  EXPECT_EQ(scaler.growth_tracker(), 1);
}

TEST(Update, ClipLeavesASmallGradientAlone) {
  UpdateBench b(1.0);
  b.set_grads({0.3f, 0}, {0.4f});
  UpdateOptions o;
  o.grad_clip_norm = 1.0;
  apply_update(b.grads, b.sgd, o);
  b.expect_weights({1 - 0.3f, 2}, {-1 - 0.4f}, "norm 0.5 under the clip");
}

TEST(Update, SchedulerStepsOnlyWhenTheOptimizerStepped) {
  UpdateBench b(0.5);
  Scheduler per_update(b.sgd, warmup());
  per_update.begin();
  std::vector<int64_t> updates;
  for (const float g : {1.0f, kNaN, 1.0f}) {
    b.set_grads({g, 0}, {0});
    apply_update(b.grads, b.sgd, UpdateOptions{}, nullptr, &per_update);
    updates.push_back(per_update.state()["updates"].get<int64_t>());
  }
  EXPECT_EQ(updates, (std::vector<int64_t>{1, 1, 2}));

  // A per-epoch schedule is the epoch loop's business: the update leaves it alone.
  UpdateBench c(0.5);
  SchedulerOptions step_lr;
  step_lr.type = "StepLR";
  step_lr.step_size = 1;
  Scheduler per_epoch(c.sgd, step_lr);
  per_epoch.begin();
  c.set_grads({1, 0}, {0});
  apply_update(c.grads, c.sgd, UpdateOptions{}, nullptr, &per_epoch);
  EXPECT_EQ(per_epoch.lr(), 0.5);
  EXPECT_EQ(per_epoch.state()["updates"], 0);
}

TEST(Update, WithoutClipNormOrScalerNothingIsReadOrChecked) {
  UpdateBench b(0.5);
  b.set_grads({3, 0}, {4});
  UpdateOptions o;
  o.log_grad_norm = false;
  const UpdateResult r = apply_update(b.grads, b.sgd, o);
  EXPECT_TRUE(r.stepped);
  EXPECT_FALSE(r.grad_norm.has_value());
}

/// Records what it is given and halves the gradients through the buffers.
class HalvingReducer : public GradientReducer {
 public:
  void reduce(GradBuffer& grads) override {
    ++calls;
    seen.clear();
    for (const auto& p : grads.parameters()) seen.push_back(p.grad().clone());
    for (const auto& buffer : grads.buffers()) buffer.mul_(0.5);
  }
  int calls = 0;
  std::vector<torch::Tensor> seen;
};

TEST(Update, ReducerRunsOnceOnTheStillScaledGradientsBeforeUnscaling) {
  UpdateBench b(1.0);
  GradScaler scaler(GradScalerOptions{1024.0});
  HalvingReducer reducer;
  b.set_grads({3, 0}, {4}, 1024.0f);
  const UpdateResult r = apply_update(b.grads, b.sgd, UpdateOptions{}, &scaler, nullptr, &reducer);
  EXPECT_EQ(reducer.calls, 1);
  ASSERT_EQ(reducer.seen.size(), 2u);
  EXPECT_TRUE(torch::equal(reducer.seen[0], torch::tensor({3.0f * 1024, 0.0f})));
  EXPECT_TRUE(torch::equal(reducer.seen[1], torch::tensor({4.0f * 1024})));
  // Halving the buffers halved every parameter's gradient: the norm and the step see g/2.
  ASSERT_TRUE(r.grad_norm.has_value());
  EXPECT_NEAR(*r.grad_norm, 2.5, 1e-5);
  b.expect_weights({1 - 1.5f, 2}, {-1 - 2.0f}, "w - lr·g/2");
  b.expect_zero_grads("after the reduced update");
}

}  // namespace
}  // namespace codefy::train
