// The fp16 gradient scaler on its CPU path (R-PREC-6, R-PREC-7): PyTorch's
// GradScaler rules, checked step by step.
#include "train/grad_scaler.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

namespace codefy::train {
namespace {

struct Fixture {
  torch::Tensor w = torch::tensor({1.0f, 2.0f}).requires_grad_(true);
  std::unique_ptr<torch::optim::SGD> opt =
      std::make_unique<torch::optim::SGD>(std::vector<torch::Tensor>{w}, torch::optim::SGDOptions(0.1));
  /// Backward of scale(loss) where loss = sum(w * g) gives w.grad = scale * g.
  void backward(GradScaler& s, torch::Tensor g) { s.scale((w * g).sum()).backward(); }
};

TEST(GradScaler, ScalesLossAndUnscalesGradientsExactly) {
  GradScalerOptions o;
  o.init_scale = 1024.0;
  GradScaler s(o);
  Fixture f;
  f.backward(s, torch::tensor({0.5f, -0.25f}));
  EXPECT_TRUE(torch::equal(f.w.grad(), torch::tensor({512.0f, -256.0f})));
  s.unscale({f.w});
  EXPECT_TRUE(torch::equal(f.w.grad(), torch::tensor({0.5f, -0.25f})));
  EXPECT_FALSE(s.found_inf());
  EXPECT_TRUE(s.step(*f.opt));
  EXPECT_TRUE(torch::allclose(f.w.detach(), torch::tensor({0.95f, 2.025f})));
}

TEST(GradScaler, InfSkipsTheStepAndBacksOff) {
  GradScaler s;  // PyTorch defaults: 65536, backoff 0.5
  Fixture f;
  f.backward(s, torch::tensor({std::numeric_limits<float>::infinity(), 1.0f}));
  const auto before = f.w.detach().clone();
  s.unscale({f.w});
  EXPECT_TRUE(s.found_inf());
  EXPECT_FALSE(s.step(*f.opt));
  EXPECT_TRUE(torch::equal(f.w.detach(), before));  // no update leaked through
  s.update();
  EXPECT_EQ(s.get_scale(), 32768.0);
  EXPECT_EQ(s.growth_tracker(), 0);
}

TEST(GradScaler, GrowsAfterGrowthIntervalCleanSteps) {
  GradScalerOptions o;
  o.init_scale = 8.0;
  o.growth_interval = 3;
  GradScaler s(o);
  Fixture f;
  for (int i = 1; i <= 3; ++i) {
    f.opt->zero_grad();
    f.backward(s, torch::tensor({0.1f, 0.1f}));
    s.unscale({f.w});
    EXPECT_TRUE(s.step(*f.opt));
    s.update();
    EXPECT_EQ(s.get_scale(), i < 3 ? 8.0 : 16.0) << "after clean step " << i;
    EXPECT_EQ(s.growth_tracker(), i < 3 ? i : 0);
  }
  // A NaN resets the tracker as well as backing off.
  f.opt->zero_grad();
  f.backward(s, torch::tensor({std::numeric_limits<float>::quiet_NaN(), 0.0f}));
  s.unscale({f.w});
  EXPECT_FALSE(s.step(*f.opt));
  s.update();
  EXPECT_EQ(s.get_scale(), 8.0);
  EXPECT_EQ(s.growth_tracker(), 0);
}

TEST(GradScaler, StateRoundTripsWithPyTorchKeys) {
  GradScalerOptions o;
  o.init_scale = 4.0;
  o.growth_interval = 5;
  GradScaler s(o);
  Fixture f;
  f.backward(s, torch::tensor({0.1f, 0.1f}));
  s.unscale({f.w});
  s.step(*f.opt);
  s.update();
  const auto state = s.state_dict();
  for (const char* key : {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"})
    EXPECT_TRUE(state.contains(key)) << key;
  GradScaler back;
  back.load_state_dict(nlohmann::json::parse(state.dump()));  // through text, as a checkpoint stores it
  EXPECT_EQ(back.get_scale(), 4.0);
  EXPECT_EQ(back.growth_tracker(), 1);
  EXPECT_EQ(back.state_dict(), state);
  EXPECT_THROW(back.load_state_dict({{"scale", "big"}}), std::invalid_argument);
}

TEST(GradScaler, RefusesOptionsPyTorchRefuses) {
  GradScalerOptions o;
  o.backoff_factor = 1.5;
  EXPECT_THROW(GradScaler{o}, std::invalid_argument);
}

}  // namespace
}  // namespace codefy::train
