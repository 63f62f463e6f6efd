// Forecasting data (src/train/series.cpp): the generated series, its
// windows and horizons against slices taken one by one, the split by time;
// and bf16 on the CPU through the norms a Transformer uses.
#include "train/series.h"
#include "train/precision.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <stdexcept>

namespace codefy::train {
namespace {

TEST(Series, TheSameOptionsGiveTheSameSeriesAndTheGlobalGeneratorIsLeftAlone) {
  SeriesOptions o;
  o.steps = 500;
  o.features = 5;
  o.seed = 3;
  torch::manual_seed(11);
  const torch::Tensor before = torch::rand({4});
  torch::manual_seed(11);
  const torch::Tensor a = make_series(o);
  EXPECT_TRUE(torch::equal(torch::rand({4}), before)) << "make_series drew from the global generator";
  EXPECT_TRUE(torch::equal(a, make_series(o)));
  o.seed = 4;
  EXPECT_FALSE(torch::equal(a, make_series(o)));
  EXPECT_EQ(a.sizes(), (std::vector<int64_t>{500, 5}));
  EXPECT_EQ(a.scalar_type(), torch::kFloat32);
}

TEST(Series, FeatureZeroFollowsFeatureOneThreeStepsLate) {
  SeriesOptions o;
  o.steps = 4000;
  o.features = 4;
  o.noise = 0.0;
  const torch::Tensor x = make_series(o).to(torch::kFloat64);
  auto corr = [&](int64_t lag) {
    const torch::Tensor a = x.select(1, 0).narrow(0, lag, 4000 - 10);
    const torch::Tensor b = x.select(1, 1).narrow(0, 0, 4000 - 10);
    return torch::corrcoef(torch::stack({a, b}))[0][1].item<double>();
  };
  EXPECT_GT(corr(3), corr(0));
  EXPECT_GT(corr(3), 0.5);
}

TEST(Series, WindowsAndHorizonsAreTheSeriesSlicesSplitByTime) {
  const torch::Tensor raw = torch::randn({100, 3});
  WindowOptions o;
  o.window = 10;
  o.horizon = 4;
  o.target = 2;
  o.stride = 3;
  o.val_fraction = 0.25;
  const WindowedSeries w = make_windows(raw, o);
  EXPECT_EQ(w.split, 75);
  // Standardised with the first 75 steps only.
  const torch::Tensor train_part = raw.narrow(0, 0, 75);
  const torch::Tensor expected = (raw - train_part.mean(0)) / train_part.std(0);
  EXPECT_TRUE(torch::allclose(w.series, expected, 1e-5, 1e-6));
  // Every training sample ends before the split, in order of its start.
  ASSERT_EQ(w.train.size(), (75 - 14) / 3 + 1);
  for (int64_t i = 0; i < w.train.size(); ++i) {
    const int64_t s = i * 3;
    EXPECT_TRUE(torch::equal(w.train.inputs[i], w.series.narrow(0, s, 10))) << i;
    EXPECT_TRUE(torch::equal(w.train.targets[i], w.series.select(1, 2).narrow(0, s + 10, 4))) << i;
    EXPECT_LE(s + 14, 75);
  }
  // Validation targets start at the split; their windows reach back.
  ASSERT_EQ(w.val.size(), (100 - 65 - 14) / 3 + 1);
  for (int64_t i = 0; i < w.val.size(); ++i) {
    const int64_t s = 65 + i * 3;
    EXPECT_TRUE(torch::equal(w.val.inputs[i], w.series.narrow(0, s, 10))) << i;
    EXPECT_TRUE(torch::equal(w.val.targets[i], w.series.select(1, 2).narrow(0, s + 10, 4))) << i;
  }
  // The windows are views of one series: no copy per sample.
  EXPECT_EQ(w.train.inputs.storage().data_ptr().get(), w.series.storage().data_ptr().get());
  EXPECT_EQ(w.val.targets.storage().data_ptr().get(), w.series.storage().data_ptr().get());
}

TEST(Series, BadWindowsNameTheOptionAtFault) {
  const torch::Tensor raw = torch::randn({50, 2});
  auto fails_on = [&](WindowOptions o, const std::string& option) {
    try {
      make_windows(raw, o);
      ADD_FAILURE() << option << " accepted";
    } catch (const SeriesOptionError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(option + ":", 0), 0u) << e.what();
    }
  };
  WindowOptions o;
  o.window = 45;
  fails_on(o, "window");
  o = WindowOptions{};
  o.window = 5;
  o.target = 2;
  fails_on(o, "target");
  o.target = 0;
  o.val_fraction = 1.0;
  fails_on(o, "val_fraction");
}

TEST(Precision, ATransformerTrainsInBf16OnTheCpuWithLayerAndGroupNorms) {
  // LibTorch 1.13's CPU autocast alone fails on LayerNorm and GroupNorm
  // (a bf16 input meets fp32 weights); Codefy runs them in fp32.
  torch::manual_seed(0);
  torch::nn::TransformerEncoderLayer layer(
      torch::nn::TransformerEncoderLayerOptions(16, 2).dim_feedforward(32).dropout(0.0));
  torch::nn::GroupNorm group(torch::nn::GroupNormOptions(2, 16));
  const torch::Tensor x = torch::randn({5, 3, 16});
  auto loss_of = [&](Precision p) {
    layer->zero_grad();
    torch::Tensor loss;
    {
      AutocastGuard autocast(p, torch::kCPU);
      const torch::Tensor y = layer(x);
      loss = group(y.permute({1, 2, 0})).to(torch::kFloat32).pow(2).mean();
    }
    loss.backward();
    return std::make_pair(loss.item<double>(), layer->norm1->weight.grad().clone());
  };
  const auto [fp32_loss, fp32_grad] = loss_of(Precision::kFp32);
  const auto [bf16_loss, bf16_grad] = loss_of(Precision::kBf16);
  EXPECT_NEAR(bf16_loss, fp32_loss, 0.02 * std::abs(fp32_loss));
  ASSERT_TRUE(bf16_grad.defined());
  EXPECT_LT((bf16_grad - fp32_grad).abs().max().item<double>(), 0.05 * fp32_grad.abs().max().item<double>() + 1e-3);
}

TEST(Precision, RPREC_ANormOfABf16ActivationAnswersInBf16AsLibTorch2Does) {
  // Computed in fp32, handed back in bf16: an fp32 result would keep the
  // rest of a Transformer's residual stream in fp32, at twice the memory.
  torch::nn::LayerNorm norm(torch::nn::LayerNormOptions({16}));
  torch::nn::GroupNorm group(torch::nn::GroupNormOptions(2, 16));
  const torch::Tensor x = torch::randn({4, 16}).requires_grad_();
  AutocastGuard autocast(Precision::kBf16, torch::kCPU);
  const torch::Tensor bf16 = x.to(torch::kBFloat16);
  const torch::Tensor y = norm(bf16);
  EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(group(bf16).scalar_type(), torch::kBFloat16);
  EXPECT_EQ(norm(x).scalar_type(), torch::kFloat32);  // an fp32 input stays fp32
  const torch::Tensor reference = torch::layer_norm(bf16.to(torch::kFloat32), {16}, norm->weight, norm->bias);
  EXPECT_TRUE(torch::equal(y, reference.to(torch::kBFloat16)));
  y.to(torch::kFloat32).pow(2).sum().backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TRUE(norm->weight.grad().defined());
}

}  // namespace
}  // namespace codefy::train
