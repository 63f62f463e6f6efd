// The micro-batch step on its own: forward under autocast, loss × 1/N,
// scaled backward that accumulates, the undivided loss back without a sync.
#include "train/micro_batch.h"
#include "tiny_training.h"
#include "train/grad_scaler.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <optional>

namespace codefy::train {
namespace {

using namespace fixtures;

/// Gradients of sum_i loss_i · factor on a fresh TinyNet, by plain autograd.
std::vector<torch::Tensor> reference_gradients(const DatasetPtr& data, const std::vector<int64_t>& rows,
                                               double factor) {
  auto net = tiny_net();
  for (int64_t r : rows) {
    auto out = net->forward(data->inputs.slice(0, r, r + 1));
    (torch::nn::functional::cross_entropy(out, data->targets.slice(0, r, r + 1)) * factor).backward();
  }
  std::vector<torch::Tensor> g;
  for (auto& p : net->parameters()) g.push_back(p.grad().clone());
  return g;
}

MicroBatchOptions micro_batches_of(int64_t n) {
  MicroBatchOptions o;
  o.accumulate_steps = n;
  return o;
}

TEST(MicroBatchStep, DividesTheLossByNAndReturnsItUndivided) {
  auto data = tiny_data(4);
  auto net = tiny_net();
  auto loss = make_loss("CrossEntropyLoss");
  const torch::Tensor x = data->inputs.slice(0, 0, 1), y = data->targets.slice(0, 0, 1);
  const torch::Tensor l = micro_batch_step(*net, *loss, x, y, micro_batches_of(4));

  const auto want = reference_gradients(data, {0}, 0.25);
  for (size_t i = 0; i < want.size(); ++i)
    expect_tensors_close(net->parameters()[i].grad(), want[i], "grad " + std::to_string(i));
  // The loss as reported: undivided, detached (nothing holds the graph), a 0-dim tensor left on its device.
  auto fresh = tiny_net();
  EXPECT_FLOAT_EQ(l.item<float>(), torch::nn::functional::cross_entropy(fresh->forward(x), y).item<float>());
  EXPECT_FALSE(l.requires_grad());
  EXPECT_EQ(l.dim(), 0);
}

TEST(MicroBatchStep, AccumulatesOverTheWindowAndDividesByNNotByTheCallCount) {
  // Three micro-batches with N = 4, as in a short last window: Σ grad(loss_i) / 4.
  auto data = tiny_data(4);
  auto net = tiny_net();
  auto loss = make_loss("CrossEntropyLoss");
  for (int64_t r = 0; r < 3; ++r)
    micro_batch_step(*net, *loss, data->inputs.slice(0, r, r + 1), data->targets.slice(0, r, r + 1),
                     micro_batches_of(4));
  const auto want = reference_gradients(data, {0, 1, 2}, 0.25);
  for (size_t i = 0; i < want.size(); ++i)
    expect_tensors_close(net->parameters()[i].grad(), want[i], "grad " + std::to_string(i));
}

TEST(MicroBatchStep, NOfOneLeavesTheLossAloneAndThreeDividesByThree) {
  auto data = tiny_data(4);
  auto loss = make_loss("CrossEntropyLoss");
  for (const int64_t n : {1, 3}) {
    auto net = tiny_net();
    micro_batch_step(*net, *loss, data->inputs.slice(0, 1, 2), data->targets.slice(0, 1, 2), micro_batches_of(n));
    const auto want = reference_gradients(data, {1}, 1.0 / static_cast<double>(n));
    for (size_t i = 0; i < want.size(); ++i)
      expect_tensors_close(net->parameters()[i].grad(), want[i],
                           "N " + std::to_string(n) + ", grad " + std::to_string(i));
  }
  EXPECT_THROW(micro_batch_step(*tiny_net(), *loss, data->inputs, data->targets, micro_batches_of(0)),
               std::invalid_argument);
}

TEST(MicroBatchStep, BackwardIsMultipliedByTheScalersScale) {
  auto data = tiny_data(4);
  auto net = tiny_net();
  GradScaler scaler(GradScalerOptions{1024.0});
  micro_batch_step(*net, *make_loss("CrossEntropyLoss"), data->inputs.slice(0, 0, 1), data->targets.slice(0, 0, 1),
                   micro_batches_of(2), &scaler);
  const auto want = reference_gradients(data, {0}, 1024.0 / 2.0);
  for (size_t i = 0; i < want.size(); ++i)
    expect_tensors_close(net->parameters()[i].grad(), want[i], "grad " + std::to_string(i));
}

/// A TinyNet that records the dtype of its output.
class DtypeRecordingNet : public TinyNet {
 public:
  torch::Tensor forward(const torch::Tensor& x) override {
    auto out = TinyNet::forward(x);
    dtype = out.scalar_type();
    return out;
  }
  c10::ScalarType dtype = c10::ScalarType::Undefined;
};

TEST(MicroBatchStep, ForwardRunsUnderAutocastAndBackwardOutsideIt) {
  if (!check_precision(Precision::kBf16, c10::Device(c10::kCPU)).warning.empty())
    GTEST_SKIP() << "this LibTorch has no CPU bf16 autocast";
  auto data = tiny_data(4);
  torch::manual_seed(3);
  DtypeRecordingNet net;
  MicroBatchOptions o;
  o.precision = Precision::kBf16;
  micro_batch_step(net, *make_loss("CrossEntropyLoss"), data->inputs, data->targets, o);
  EXPECT_EQ(net.dtype, torch::kBFloat16);
  for (auto& p : net.parameters()) EXPECT_EQ(p.grad().scalar_type(), torch::kFloat);  // float32 weights, float32 grads
  // The guard ended with the step.
  EXPECT_EQ(torch::mm(torch::ones({2, 2}), torch::ones({2, 2})).scalar_type(), torch::kFloat);
}

/// Conv1d(2→3, k3) → flatten → Linear(12→2): a convolution takes its weight
/// as it is, so autocast can cache the weight's cast (LibTorch 1.13's CPU
/// Linear casts a transposed view instead, which it never caches).
class TinyConvNet : public Model {
 public:
  TinyConvNet() : Model("TinyConvNet") {
    conv_ = register_module("conv", torch::nn::Conv1d(2, 3, 3));
    fc_ = register_module("fc", torch::nn::Linear(12, 2));
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    return fc_(torch::tanh(conv_(x.reshape({x.size(0), 2, 6}))).flatten(1));
  }
  torch::nn::Conv1d conv_{nullptr};
  torch::nn::Linear fc_{nullptr};
};

// One window of four bf16 micro-batches, with or without an
// AutocastCacheScope around it; returns the accumulated gradients. With
// `nudge`, the convolution's weight changes in place after the first
// micro-batch: a window that reuses its casts does not see it.
std::vector<torch::Tensor> bf16_window_gradients(bool cache_scope, bool nudge) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(5);
  const torch::Tensor inputs = torch::randn({8, 12}, gen), targets = torch::randint(0, 2, {8}, gen);
  torch::manual_seed(3);
  TinyConvNet net;
  auto loss = make_loss("CrossEntropyLoss");
  MicroBatchOptions o = micro_batches_of(4);
  o.precision = Precision::kBf16;
  std::optional<AutocastCacheScope> scope;
  if (cache_scope) scope.emplace(o.precision);
  for (int64_t i = 0; i < 4; ++i) {
    micro_batch_step(net, *loss, inputs.slice(0, 2 * i, 2 * i + 2), targets.slice(0, 2 * i, 2 * i + 2), o);
    if (nudge && i == 0) {
      torch::NoGradGuard no_grad;
      net.conv_->weight.add_(0.5);
    }
  }
  scope.reset();
  std::vector<torch::Tensor> g;
  for (auto& p : net.parameters()) g.push_back(p.grad().clone());
  return g;
}

TEST(MicroBatchStep, WindowCacheScopeCastsWeightsOncePerWindowWithTheSameGradients) {
  if (!check_precision(Precision::kBf16, c10::Device(c10::kCPU)).warning.empty())
    GTEST_SKIP() << "this LibTorch has no CPU bf16 autocast";
  // Unchanged weights: reusing the casts gives bit-for-bit the same gradients.
  const auto per_micro_batch = bf16_window_gradients(false, false);
  const auto per_window = bf16_window_gradients(true, false);
  ASSERT_EQ(per_micro_batch.size(), per_window.size());
  for (size_t k = 0; k < per_window.size(); ++k) EXPECT_TRUE(torch::equal(per_micro_batch[k], per_window[k])) << k;
  // The casts are reused: a weight changed mid-window is seen only without the scope.
  const auto nudged_per_micro_batch = bf16_window_gradients(false, true);
  const auto nudged_per_window = bf16_window_gradients(true, true);
  bool differs_without = false, differs_with = false;
  for (size_t k = 0; k < per_window.size(); ++k) {
    differs_without = differs_without || !torch::equal(nudged_per_micro_batch[k], per_micro_batch[k]);
    differs_with = differs_with || !torch::equal(nudged_per_window[k], per_window[k]);
  }
  EXPECT_TRUE(differs_without);
  EXPECT_FALSE(differs_with);
  // The scope ended: the next autocast region casts afresh.
  EXPECT_TRUE(torch::equal(bf16_window_gradients(false, false)[0], per_micro_batch[0]));
}

}  // namespace
}  // namespace codefy::train
