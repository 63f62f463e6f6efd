// A Linear under CPU bf16 autocast on its weight's kept bf16 copy: the same
// output as autocast's Linear, its gradients to bf16 rounding, the weight's
// gradient added in place; SequentialModel takes it for larger Linears; the
// copy is cast again when its weight changes and written by the single-pass
// optimizers in their update; and a short training run follows the one on
// autocast's own Linear.
#include "model/bf16_linear.h"

#include "model/sequential_model.h"
#include "spec_builder.h"
#include "train/bf16_mirrors.h"
#include "train/fused_optim.h"
#include "train/model.h"
#include "train/precision.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

namespace codefy::model {
namespace {

using torch::Tensor;

const c10::Device kCpu(c10::kCPU);

// Close to bf16 rounding: a product of bf16 values summed in another order.
void expect_close_bf16(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.sizes(), b.sizes());
  const double scale = b.abs().max().item<double>();
  EXPECT_LE((a.to(torch::kFloat) - b.to(torch::kFloat)).abs().max().item<double>(), 1e-2 * scale + 1e-6);
}

TEST(Bf16Linear, GivesAutocastsOutputAndGradients) {
  torch::manual_seed(1);
  torch::nn::Linear ref(64, 48), ours(64, 48);
  {
    torch::NoGradGuard no_grad;
    ours->weight.copy_(ref->weight);
    ours->bias.copy_(ref->bias);
  }
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{32, 64}, std::vector<int64_t>{4, 8, 64}}) {
    SCOPED_TRACE(c10::str(shape));
    const Tensor x = torch::randn(shape);
    const Tensor x_ref = x.clone().requires_grad_(true), x_ours = x.clone().requires_grad_(true);
    Tensor y_ref, y_ours;
    {
      train::AutocastGuard autocast(train::Precision::kBf16, kCpu);
      y_ref = ref->forward(x_ref);
      y_ours = bf16_linear(x_ours, ours->weight, ours->bias, ours->weight.to(torch::kBFloat16));
    }
    EXPECT_EQ(y_ours.scalar_type(), torch::kBFloat16);
    if (shape.size() == 2)
      EXPECT_TRUE(torch::equal(y_ours, y_ref));  // the same addmm
    else
      expect_close_bf16(y_ours, y_ref);
    const Tensor seed = torch::randn(y_ref.sizes()).to(torch::kBFloat16);
    y_ref.backward(seed);
    y_ours.backward(seed);
    EXPECT_EQ(x_ours.grad().scalar_type(), torch::kFloat);  // the input's own dtype, as autocast's cast gives
    expect_close_bf16(x_ours.grad(), x_ref.grad());
    expect_close_bf16(ours->weight.grad(), ref->weight.grad());
    expect_close_bf16(ours->bias.grad(), ref->bias.grad());
  }
}

TEST(Bf16Linear, AddsTheWeightGradientIntoTheOneThereInPlace) {
  torch::manual_seed(2);
  torch::nn::Linear l(16, 8);
  const Tensor wb = l->weight.to(torch::kBFloat16);
  const Tensor x = torch::randn({5, 16});
  const auto once = [&] {
    train::AutocastGuard autocast(train::Precision::kBf16, kCpu);
    return bf16_linear(x, l->weight, l->bias, wb);
  };
  once().sum().backward();  // no gradient yet: autograd makes one
  const Tensor first = l->weight.grad().clone();
  const void* storage = l->weight.grad().data_ptr();
  once().sum().backward();  // now added into it, not replaced
  EXPECT_EQ(l->weight.grad().data_ptr(), storage);
  EXPECT_TRUE(torch::allclose(l->weight.grad(), 2 * first));
  // What the gradient is: sum over rows of x, per output, to bf16 rounding.
  expect_close_bf16(first, x.sum(0).expand({8, 16}));
}

TEST(Bf16Linear, WithoutBiasAndWithAFrozenWeight) {
  torch::manual_seed(7);
  torch::nn::Linear ref(torch::nn::LinearOptions(32, 16).bias(false)),
      ours(torch::nn::LinearOptions(32, 16).bias(false));
  {
    torch::NoGradGuard no_grad;
    ours->weight.copy_(ref->weight);
  }
  const Tensor x = torch::randn({8, 32});
  Tensor y_ref, y_ours;
  {
    train::AutocastGuard autocast(train::Precision::kBf16, kCpu);
    y_ref = ref->forward(x);
    y_ours = bf16_linear(x, ours->weight, Tensor(), ours->weight.to(torch::kBFloat16));
  }
  EXPECT_TRUE(torch::equal(y_ours, y_ref));
  y_ours.sum().backward();
  y_ref.sum().backward();
  expect_close_bf16(ours->weight.grad(), ref->weight.grad());

  // A frozen weight gets no gradient; the input still does.
  ours->weight.requires_grad_(false);
  const Tensor xg = x.clone().requires_grad_(true);
  const Tensor before = ours->weight.grad().clone();
  {
    train::AutocastGuard autocast(train::Precision::kBf16, kCpu);
    y_ours = bf16_linear(xg, ours->weight, Tensor(), ours->weight.to(torch::kBFloat16));
  }
  y_ours.sum().backward();
  EXPECT_TRUE(xg.grad().defined());
  EXPECT_TRUE(torch::equal(ours->weight.grad(), before));  // nothing added
}

std::shared_ptr<train::Model> mlp() {
  return build_sequential_model(Spec()
                                    .layer("l1", "Linear", {{"in_features", 128}, {"out_features", 256}})
                                    .layer("r1", "ReLU")
                                    .layer("l2", "Linear", {{"in_features", 256}, {"out_features", 256}})
                                    .layer("r2", "ReLU")
                                    .layer("l3", "Linear", {{"in_features", 256}, {"out_features", 10}})
                                    .chain({"l1", "r1", "l2", "r2", "l3"})
                                    .build());
}

TEST(Bf16Linear, SequentialModelKeepsCopiesAndCastsThemAgainWhenAWeightChanges) {
  torch::manual_seed(3);
  auto model = mlp();
  train::Bf16Mirrors* mirrors = model->bf16_mirrors();
  ASSERT_NE(mirrors, nullptr);
  auto params = model->named_parameters();
  const Tensor x = torch::randn({64, 128});
  const auto forward = [&] {
    train::AutocastGuard autocast(train::Precision::kBf16, kCpu);
    return model->forward(x);
  };
  Tensor out = forward();
  // l1 and l2 (64 rows x 32k, 64k multiply-adds each... over a million) read copies; the 10-way output runs in fp32.
  EXPECT_EQ(mirrors->casts(), 2u);
  EXPECT_EQ(out.scalar_type(), torch::kFloat);
  out = forward();
  EXPECT_EQ(mirrors->casts(), 2u);  // unchanged weights: the same copies
  {
    torch::NoGradGuard no_grad;
    params["layers.l2.weight"].mul_(0.5);  // anything writing a weight (a checkpoint, a user) is seen
  }
  const Tensor changed = forward();
  EXPECT_EQ(mirrors->casts(), 3u);
  // The output is autocast's with the changed weight.
  Tensor ref;
  {
    train::AutocastGuard autocast(train::Precision::kBf16, kCpu);
    namespace F = torch::nn::functional;
    Tensor h = torch::relu(F::linear(x, params["layers.l1.weight"], params["layers.l1.bias"]));
    h = torch::relu(F::linear(h, params["layers.l2.weight"], params["layers.l2.bias"]));
    train::CpuAutocastOff fp32;
    ref = F::linear(h.to(torch::kFloat), params["layers.l3.weight"], params["layers.l3.bias"]);
  }
  EXPECT_TRUE(torch::equal(changed, ref));
  // Outside bf16 autocast: LibTorch's Linear, no copy read.
  const Tensor plain = model->forward(x);
  EXPECT_EQ(plain.scalar_type(), torch::kFloat);
  EXPECT_EQ(mirrors->casts(), 3u);
}

// The copies the optimizer wrote are LibTorch's rounding of the new weights, and current.
void expect_optimizer_writes_copies(torch::optim::Optimizer& optimizer, train::WritesBf16Mirrors& writer,
                                    train::Model& model) {
  train::Bf16Mirrors* mirrors = model.bf16_mirrors();
  writer.write_bf16_mirrors(mirrors);
  const Tensor x = torch::randn({64, 128});
  const Tensor y = torch::randint(0, 10, {64});
  for (int step = 0; step < 3; ++step) {
    optimizer.zero_grad();
    Tensor loss;
    {
      train::AutocastGuard autocast(train::Precision::kBf16, kCpu);
      loss = torch::nn::functional::cross_entropy(model.forward(x), y);
    }
    loss.backward();
    optimizer.step();
  }
  EXPECT_EQ(mirrors->casts(), 2u);  // cast once at the first forward, then written by each step
  for (const char* name : {"layers.l1.weight", "layers.l2.weight"}) {
    const Tensor w = model.named_parameters()[name];
    EXPECT_TRUE(torch::equal(mirrors->of(w), w.to(torch::kBFloat16))) << name;
  }
  EXPECT_EQ(mirrors->casts(), 2u);  // of() found them current
  writer.write_bf16_mirrors(nullptr);
}

TEST(Bf16Linear, SinglePassAdamWritesTheCopiesInItsUpdate) {
  torch::manual_seed(4);
  auto model = mlp();
  train::FusedAdam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
  expect_optimizer_writes_copies(adam, adam, *model);
  EXPECT_TRUE(adam.last_step_fused());
}

TEST(Bf16Linear, SinglePassSgdWritesTheCopiesInItsUpdate) {
  torch::manual_seed(5);
  auto model = mlp();
  train::FusedSGD sgd(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  expect_optimizer_writes_copies(sgd, sgd, *model);
  EXPECT_TRUE(sgd.last_step_fused());
}

// Twenty Adam steps of the MLP on its kept copies against the same model
// written with LibTorch's Linear under autocast (a Sequential, casting every
// weight at every forward): the losses agree to bf16 rounding.
TEST(Bf16Linear, TrainingFollowsAutocastsOwnLinear) {
  torch::manual_seed(6);
  auto model = mlp();
  namespace nn = torch::nn;
  nn::Sequential ref(nn::Linear(128, 256), nn::ReLU(), nn::Linear(256, 256), nn::ReLU(), nn::Linear(256, 10));
  {
    torch::NoGradGuard no_grad;
    const auto ours = model->parameters();
    const auto theirs = ref->parameters();
    ASSERT_EQ(ours.size(), theirs.size());
    for (size_t i = 0; i < ours.size(); ++i) theirs[i].copy_(ours[i]);
  }
  train::FusedAdam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
  adam.write_bf16_mirrors(model->bf16_mirrors());
  torch::optim::Adam ref_adam(ref->parameters(), torch::optim::AdamOptions(1e-3));
  const Tensor x = torch::randn({256, 128});
  const Tensor y = torch::randint(0, 10, {256});
  std::vector<double> ours, theirs;
  for (int step = 0; step < 20; ++step) {
    const Tensor xb = x.narrow(0, (step % 4) * 64, 64), yb = y.narrow(0, (step % 4) * 64, 64);
    for (bool mine : {true, false}) {
      torch::optim::Optimizer& opt = mine ? static_cast<torch::optim::Optimizer&>(adam) : ref_adam;
      opt.zero_grad();
      Tensor loss;
      {
        train::AutocastGuard autocast(train::Precision::kBf16, kCpu);
        Tensor logits;
        if (mine) {
          logits = model->forward(xb);
        } else {
          Tensor h = ref[3]->as<nn::ReLU>()->forward(ref[2]->as<nn::Linear>()->forward(
              ref[1]->as<nn::ReLU>()->forward(ref[0]->as<nn::Linear>()->forward(xb))));
          train::CpuAutocastOff fp32;  // the small output layer in fp32, as SequentialModel runs it
          logits = ref[4]->as<nn::Linear>()->forward(h.to(torch::kFloat));
        }
        loss = torch::nn::functional::cross_entropy(logits, yb);
      }
      loss.backward();
      opt.step();
      (mine ? ours : theirs).push_back(loss.item<double>());
    }
  }
  EXPECT_LT(ours.back(), 0.9 * ours.front());  // it learns (random labels: slowly)
  for (size_t i = 0; i < ours.size(); ++i) EXPECT_NEAR(ours[i], theirs[i], 0.02 * theirs[i] + 1e-3) << "step " << i;
  adam.write_bf16_mirrors(nullptr);
}

}  // namespace
}  // namespace codefy::model
