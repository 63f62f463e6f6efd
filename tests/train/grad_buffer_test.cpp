// Gradients as views into one buffer (train/grad_buffer): the views survive
// backward and accumulation, the norm and clipping match a per-parameter
// reference computed in double, and parameters that never get a gradient
// are left alone by the optimizer, exactly as without the buffer.
#include "train/grad_buffer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

namespace codefy::train {
namespace {

bool inside(const torch::Tensor& view, const torch::Tensor& buffer) {
  const auto* p = static_cast<const char*>(view.data_ptr());
  const auto* b = static_cast<const char*>(buffer.data_ptr());
  return p >= b && p + view.nbytes() <= b + buffer.nbytes();
}

/// sqrt(sum g^2) over every gradient, in double: the reference norm.
double reference_norm(const std::vector<torch::Tensor>& params) {
  double s = 0;
  for (const auto& p : params)
    if (p.grad().defined()) s += p.grad().to(torch::kDouble).pow(2).sum().item<double>();
  return std::sqrt(s);
}

TEST(GradBuffer, ViewsSurviveBackwardAndAccumulateLikePlainGradients) {
  torch::manual_seed(3);
  torch::nn::Linear a(5, 4), b(5, 4);
  b->weight.data().copy_(a->weight.data());
  b->bias.data().copy_(a->bias.data());
  GradBuffer grads(a->parameters());
  ASSERT_EQ(grads.buffers().size(), 1u);
  EXPECT_EQ(grads.buffers()[0].numel(), 5 * 4 + 4);
  const auto x1 = torch::randn({3, 5}), x2 = torch::randn({3, 5});
  for (int step = 0; step < 3; ++step) {  // three updates, two micro-batches each
    for (const auto& x : {x1, x2}) {
      a->forward(x * (step + 1)).pow(2).sum().backward();
      b->forward(x * (step + 1)).pow(2).sum().backward();
    }
    grads.sync();
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_TRUE(inside(a->parameters()[i].grad(), grads.buffers()[0])) << "step " << step;
      EXPECT_TRUE(torch::allclose(a->parameters()[i].grad(), b->parameters()[i].grad(), 1e-6, 1e-6));
    }
    grads.zero();
    b->zero_grad();
    EXPECT_EQ(grads.buffers()[0].abs().sum().item<float>(), 0.0f);
    EXPECT_TRUE(inside(a->weight.grad(), grads.buffers()[0]));
  }
}

TEST(GradBuffer, NormAndClipMatchThePerParameterReference) {
  torch::manual_seed(4);
  torch::nn::Sequential net(torch::nn::Linear(6, 8), torch::nn::Tanh(), torch::nn::Linear(8, 3));
  auto params = net->parameters();
  net->forward(torch::randn({10, 6})).pow(2).sum().backward();
  GradBuffer grads(params);
  grads.sync();
  const double expected = reference_norm(params);
  EXPECT_NEAR(grads.norm().item<double>(), expected, 1e-6 * expected);
  EXPECT_NEAR(grad_norm(params).item<double>(), expected, 1e-6 * expected);

  const auto before = params[0].grad().clone();
  const double max_norm = expected / 4;
  const double returned = grads.clip(max_norm).item<double>();
  EXPECT_NEAR(returned, expected, 1e-6 * expected);  // the norm before clipping
  EXPECT_NEAR(reference_norm(params), max_norm, 1e-5 * max_norm);
  EXPECT_TRUE(torch::allclose(params[0].grad(), before * (max_norm / (expected + 1e-6)), 1e-5, 1e-7));
  grads.clip(expected * 10);  // a norm already under the limit is left as it is
  EXPECT_NEAR(reference_norm(params), max_norm, 1e-5 * max_norm);
}

TEST(GradBuffer, AParameterWithoutAGradientIsSkippedByTheOptimizer) {
  auto used = torch::ones({3}).requires_grad_(true);
  auto unused = torch::ones({2}).requires_grad_(true);
  torch::optim::SGD sgd(std::vector<torch::Tensor>{used, unused}, torch::optim::SGDOptions(0.1).weight_decay(0.5));
  GradBuffer grads({used, unused});
  for (int i = 0; i < 2; ++i) {
    (used * 2).sum().backward();
    grads.sync();
    EXPECT_FALSE(unused.grad().defined());
    sgd.step();
    grads.zero();
  }
  EXPECT_TRUE(torch::equal(unused.detach(), torch::ones({2})));  // no weight decay applied without a gradient
  EXPECT_FALSE(torch::equal(used.detach(), torch::ones({3})));
}

TEST(GradBuffer, AReplacedGradientIsBoundAgainWithItsValues) {
  auto w = torch::zeros({4}).requires_grad_(true);
  GradBuffer grads({w});
  (w * torch::arange(4).to(torch::kFloat)).sum().backward();
  grads.sync();
  ASSERT_TRUE(inside(w.grad(), grads.buffers()[0]));
  w.mutable_grad() = torch::full({4}, 7.0f);  // someone set .grad to a new tensor
  grads.sync();
  EXPECT_TRUE(inside(w.grad(), grads.buffers()[0]));
  EXPECT_TRUE(torch::equal(grads.buffers()[0], torch::full({4}, 7.0f)));
  EXPECT_NEAR(grads.norm().item<double>(), 14.0, 1e-6);
}

TEST(GradBuffer, OneBufferPerDtype) {
  auto f = torch::ones({3}).requires_grad_(true);
  auto d = torch::ones({2}, torch::kDouble).requires_grad_(true);
  GradBuffer grads({f, d});
  ASSERT_EQ(grads.buffers().size(), 2u);
  ((f * 3).sum() + (d * 4).sum().to(torch::kFloat)).backward();
  grads.sync();
  EXPECT_NEAR(grads.norm().item<double>(), std::sqrt(3 * 9.0 + 2 * 16.0), 1e-5);
  EXPECT_EQ(grads.buffers()[1].scalar_type(), torch::kDouble);
}

}  // namespace
}  // namespace codefy::train
