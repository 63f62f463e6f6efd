// A tiny deterministic network, data set and optimizer that the training
// loop's tests share (trainer, micro-batch step, update, gradient reducer).
#pragma once

#include "train/builders.h"
#include "train/data.h"
#include "train/model.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace codefy::train::fixtures {

/// Linear(4,3) → tanh → Linear(3,2): small, nonlinear, deterministic.
class TinyNet : public Model {
 public:
  TinyNet() : Model("TinyNet") {
    a_ = register_module("a", torch::nn::Linear(4, 3));
    b_ = register_module("b", torch::nn::Linear(3, 2));
  }
  torch::Tensor forward(const torch::Tensor& x) override { return b_(torch::tanh(a_(x))); }

 private:
  torch::nn::Linear a_{nullptr}, b_{nullptr};
};

/// A TinyNet with the same initial weights on every call.
inline std::shared_ptr<TinyNet> tiny_net() {
  torch::manual_seed(3);
  return std::make_shared<TinyNet>();
}

/// `n` samples of 4 features with 2 classes, the same on every call.
inline DatasetPtr tiny_data(int64_t n) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(11);
  auto d = std::make_shared<Dataset>();
  d->inputs = torch::randn({n, 4}, gen);
  d->targets = torch::randint(0, 2, {n}, gen);
  d->num_classes = 2;
  return d;
}

/// An unshuffled loader over `data`.
inline DataLoader tiny_loader(const DatasetPtr& data, int64_t batch_size) {
  DataLoaderOptions o;
  o.batch_size = batch_size;
  o.shuffle = false;
  return DataLoader(data, o);
}

inline std::shared_ptr<OptimizerHandle> tiny_optimizer(const std::shared_ptr<TinyNet>& net, const std::string& type,
                                                       double lr) {
  auto h = std::make_shared<OptimizerHandle>();
  OptimizerOptions o;
  o.type = type;
  o.lr = lr;
  h->type = type;
  h->options = o;
  h->optimizer = make_optimizer(net->parameters(), o);
  return h;
}

/// Copies of the parameters' current values.
inline std::vector<torch::Tensor> values_of(torch::nn::Module& net) {
  std::vector<torch::Tensor> v;
  for (auto& p : net.parameters()) v.push_back(p.detach().clone());
  return v;
}

/// Relative agreement to 1e-6 of the largest magnitude (float32 with a
/// different summation order).
inline void expect_tensors_close(const torch::Tensor& actual, const torch::Tensor& expected, const std::string& what) {
  const double err = (actual - expected).abs().max().item<double>();
  const double scale = std::max(expected.abs().max().item<double>(), 1e-3);
  EXPECT_LE(err / scale, 1e-6) << what << ": max abs diff " << err;
}

}  // namespace codefy::train::fixtures
