// Losses and optimizers against PyTorch's own values (tests/golden/*.json,
// written by scripts/golden/make_golden.py) and PyTorch's refusals.
#include "train/builders.h"

#include "../common/test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>

namespace codefy::train {
namespace {

using nlohmann::json;

using codefy::testing::read_golden;

/// The golden tolerance: 1e-5 relative with a 1e-6 absolute floor.

torch::Dtype dtype_of(const std::string& name) {
  if (name == "float32") return torch::kFloat;
  if (name == "float64") return torch::kDouble;
  if (name == "int64") return torch::kLong;
  if (name == "int32") return torch::kInt;
  throw std::runtime_error("unknown dtype " + name);
}

torch::Tensor tensor_from(const json& j) {
  const auto values = j.at("values").get<std::vector<double>>();
  const auto shape = j.at("shape").get<std::vector<int64_t>>();
  return torch::tensor(values, torch::kDouble).reshape(shape).to(dtype_of(j.at("dtype").get<std::string>()));
}

std::vector<double> flat(const torch::Tensor& t) {
  const torch::Tensor c = t.detach().to(torch::kDouble).contiguous().flatten();
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

template <typename Fn>
std::string message_of(Fn&& fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no std::invalid_argument thrown)";
}

// ---------------------------------------------------------------------------- losses

TEST(Losses, MatchPyTorchValuesAndGradients) {
  const json golden = read_golden("losses.json");
  ASSERT_GE(golden.at("cases").size(), 7u);
  for (const auto& c : golden.at("cases")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    LossOptions options;
    const auto& o = c.at("options");
    options.label_smoothing = o.value("label_smoothing", options.label_smoothing);
    options.beta = o.value("beta", options.beta);
    options.delta = o.value("delta", options.delta);
    const LossPtr loss = make_loss(c.at("type").get<std::string>(), options);
    torch::Tensor p = tensor_from(c.at("prediction")).requires_grad_(true);
    const torch::Tensor t = tensor_from(c.at("target"));
    const torch::Tensor value = (*loss)(p, t);
    ASSERT_EQ(value.dim(), 0);
    EXPECT_EQ(value.scalar_type(), p.scalar_type());
    EXPECT_TRUE(codefy::testing::close_to_pytorch(value.item<double>(), c.at("loss").get<double>(), "loss", 1e-6));
    value.backward();
    const auto grad = flat(p.grad());
    const auto expected = c.at("grad").at("values").get<std::vector<double>>();
    ASSERT_EQ(grad.size(), expected.size());
    for (size_t i = 0; i < grad.size(); ++i)
      EXPECT_TRUE(codefy::testing::close_to_pytorch(grad[i], expected[i], "grad[" + std::to_string(i) + "]", 1e-6));
  }
}

TEST(Losses, EveryKnownTypeIsCovered) {
  const json golden = read_golden("losses.json");
  for (const auto& type : loss_types()) {
    bool found = false;
    for (const auto& c : golden.at("cases")) found = found || c.at("type") == type;
    EXPECT_TRUE(found) << type << " has no golden case";
    EXPECT_EQ(make_loss(type)->type, type);
  }
  EXPECT_EQ(loss_types().size(), 7u);
}

TEST(Losses, UnknownTypeListsKnownTypes) {
  const std::string msg = message_of([] { make_loss("KLDivLoss"); });
  EXPECT_NE(msg.find("KLDivLoss"), std::string::npos) << msg;
  for (const auto& type : loss_types()) EXPECT_NE(msg.find(type), std::string::npos) << msg;
}

TEST(Losses, RefusesOptionsPyTorchRefuses) {
  LossOptions o;
  o.label_smoothing = 1.5;
  EXPECT_THROW(make_loss("CrossEntropyLoss", o), std::invalid_argument);
  o = {};
  o.beta = -0.1;
  EXPECT_THROW(make_loss("SmoothL1Loss", o), std::invalid_argument);
  o = {};
  o.delta = 0.0;
  EXPECT_THROW(make_loss("HuberLoss", o), std::invalid_argument);
  // Options of other losses are not looked at.
  o = {};
  o.delta = 0.0;
  EXPECT_NO_THROW(make_loss("MSELoss", o));
}

TEST(Losses, RegressionTargetShapedToColumnPrediction) {
  // A [N] target against an [N,1] prediction would broadcast to [N,N] in
  // plain PyTorch; Codefy compares element by element.
  const auto loss = make_loss("L1Loss");
  const torch::Tensor p = torch::tensor({1.0f, 2.0f, 3.0f}).unsqueeze(1);
  const torch::Tensor t = torch::tensor({1.0, 2.0, 5.0}, torch::kDouble);
  EXPECT_NEAR((*loss)(p, t).item<double>(), 2.0 / 3.0, 1e-6);
  EXPECT_EQ((*loss)(p, t).scalar_type(), torch::kFloat);
}

TEST(Losses, FloatClassLabelsAreClassIndices) {
  const auto loss = make_loss("CrossEntropyLoss");
  const torch::Tensor p = torch::tensor({{2.0f, 0.0f}, {0.0f, 2.0f}});
  const double with_long = (*loss)(p, torch::tensor({0, 1}, torch::kLong)).item<double>();
  EXPECT_DOUBLE_EQ((*loss)(p, torch::tensor({0.0f, 1.0f})).item<double>(), with_long);
}

// ---------------------------------------------------------------------------- optimizers

OptimizerOptions optimizer_options_from(const json& o) {
  OptimizerOptions r;
  r.type = o.at("type").get<std::string>();
  r.lr = o.value("lr", r.lr);
  r.weight_decay = o.value("weight_decay", r.weight_decay);
  r.momentum = o.value("momentum", r.momentum);
  r.dampening = o.value("dampening", r.dampening);
  r.nesterov = o.value("nesterov", r.nesterov);
  r.beta1 = o.value("beta1", r.beta1);
  r.beta2 = o.value("beta2", r.beta2);
  r.eps = o.value("eps", r.eps);
  r.amsgrad = o.value("amsgrad", r.amsgrad);
  r.alpha = o.value("alpha", r.alpha);
  r.centered = o.value("centered", r.centered);
  r.lr_decay = o.value("lr_decay", r.lr_decay);
  return r;
}

torch::Tensor f64(const json& j) {
  // Nested lists of numbers: flatten, then shape from the nesting.
  if (j.at(0).is_array()) {
    std::vector<torch::Tensor> rows;
    for (const auto& r : j) rows.push_back(f64(r));
    return torch::stack(rows);
  }
  return torch::tensor(j.get<std::vector<double>>(), torch::kDouble);
}

TEST(Optimizers, MatchPyTorchAfterFiveSteps) {
  const json golden = read_golden("optimizers.json");
  const json& obj = golden.at("objective");
  const torch::Tensor a = f64(obj.at("a")), c = f64(obj.at("c")), q = f64(obj.at("q")), k = f64(obj.at("k"));
  const int64_t steps = golden.at("steps").get<int64_t>();
  std::set<std::string> types_seen;
  for (const auto& cs : golden.at("cases")) {
    SCOPED_TRACE(cs.at("name").get<std::string>());
    torch::Tensor w = f64(obj.at("w0")).requires_grad_(true);
    torch::Tensor v = f64(obj.at("v0")).requires_grad_(true);
    const OptimizerOptions options = optimizer_options_from(cs.at("options"));
    types_seen.insert(options.type);
    auto opt = make_optimizer({w, v}, options);
    for (int64_t s = 0; s < steps; ++s) {
      opt->zero_grad();
      // The script's objective: sum(a (w-c)^2) + sum(q v^2 + k v) + 0.1 sum(w)^2.
      const torch::Tensor loss = (a * (w - c).pow(2)).sum() + (q * v.pow(2) + k * v).sum() + 0.1 * w.sum().pow(2);
      loss.backward();
      opt->step();
    }
    const auto gw = flat(w), gv = flat(v);
    const auto ew = flat(f64(cs.at("w"))), ev = flat(f64(cs.at("v")));
    for (size_t i = 0; i < ew.size(); ++i)
      EXPECT_TRUE(codefy::testing::close_to_pytorch(gw[i], ew[i], "w[" + std::to_string(i) + "]", 1e-6));
    for (size_t i = 0; i < ev.size(); ++i)
      EXPECT_TRUE(codefy::testing::close_to_pytorch(gv[i], ev[i], "v[" + std::to_string(i) + "]", 1e-6));
  }
  for (const auto& type : optimizer_types()) EXPECT_TRUE(types_seen.count(type)) << type << " has no golden case";
}

std::vector<torch::Tensor> one_param() { return {torch::zeros({2}, torch::requires_grad())}; }

TEST(Optimizers, UnknownTypeListsKnownTypes) {
  OptimizerOptions o;
  o.type = "Rprop";
  const std::string msg = message_of([&] { make_optimizer(one_param(), o); });
  EXPECT_NE(msg.find("Rprop"), std::string::npos) << msg;
  for (const auto& type : optimizer_types()) EXPECT_NE(msg.find(type), std::string::npos) << msg;
}

TEST(Optimizers, RefusesWhatPyTorchRefuses) {
  auto refused = [](auto edit) {
    OptimizerOptions o;
    edit(o);
    return message_of([&] { make_optimizer(one_param(), o); });
  };
  std::string msg = refused([](OptimizerOptions& o) {
    o.type = "SGD";
    o.nesterov = true;
  });
  EXPECT_NE(msg.find("nesterov"), std::string::npos) << msg;
  msg = refused([](OptimizerOptions& o) {
    o.type = "SGD";
    o.nesterov = true;
    o.momentum = 0.9;
    o.dampening = 0.1;
  });
  EXPECT_NE(msg.find("dampening"), std::string::npos) << msg;
  msg = refused([](OptimizerOptions& o) { o.lr = -0.1; });
  EXPECT_NE(msg.find("learning rate"), std::string::npos) << msg;
  msg = refused([](OptimizerOptions& o) { o.lr = std::nan(""); });
  EXPECT_NE(msg.find("learning rate"), std::string::npos) << msg;
  msg = refused([](OptimizerOptions& o) {
    o.type = "AdamW";
    o.weight_decay = -1;
  });
  EXPECT_NE(msg.find("weight_decay"), std::string::npos) << msg;
  msg = refused([](OptimizerOptions& o) { o.beta1 = 1.0; });
  EXPECT_NE(msg.find("beta"), std::string::npos) << msg;
  msg = refused([](OptimizerOptions& o) { o.beta2 = -0.5; });
  EXPECT_NE(msg.find("index 1"), std::string::npos) << msg;
  msg = refused([](OptimizerOptions& o) {
    o.type = "RMSprop";
    o.momentum = -0.5;
  });
  EXPECT_NE(msg.find("momentum"), std::string::npos) << msg;
  msg = refused([](OptimizerOptions& o) {
    o.type = "RMSprop";
    o.alpha = -1;
  });
  EXPECT_NE(msg.find("alpha"), std::string::npos) << msg;
  msg = refused([](OptimizerOptions& o) {
    o.type = "Adagrad";
    o.lr_decay = -1;
  });
  EXPECT_NE(msg.find("lr_decay"), std::string::npos) << msg;
  msg = refused([](OptimizerOptions& o) {
    o.type = "Adam";
    o.eps = -1e-8;
  });
  EXPECT_NE(msg.find("epsilon"), std::string::npos) << msg;

  OptimizerOptions ok;
  EXPECT_THROW(make_optimizer({}, ok), std::invalid_argument);
  ok.type = "SGD";
  ok.momentum = 0.9;
  ok.nesterov = true;
  EXPECT_NO_THROW(make_optimizer(one_param(), ok));
}

TEST(Optimizers, DefaultsFollowPyTorch) {
  OptimizerOptions o;
  o.type = "AdamW";
  auto adamw = make_optimizer(one_param(), o);
  // LibTorch's AdamW default is 1e-2; the graph asked for 0.
  EXPECT_EQ(dynamic_cast<const torch::optim::AdamWOptions&>(adamw->defaults()).weight_decay(), 0.0);
  o.type = "Adagrad";
  auto adagrad = make_optimizer(one_param(), o);
  EXPECT_EQ(dynamic_cast<const torch::optim::AdagradOptions&>(adagrad->defaults()).eps(), 1e-10);
  o.eps = 1e-3;
  adagrad = make_optimizer(one_param(), o);
  EXPECT_EQ(dynamic_cast<const torch::optim::AdagradOptions&>(adagrad->defaults()).eps(), 1e-3);
  for (const auto& type : optimizer_types()) {
    o = {};
    o.type = type;
    o.lr = 0.25;
    EXPECT_DOUBLE_EQ(get_lr(*make_optimizer(one_param(), o)), 0.25) << type;
  }
}

TEST(Optimizers, SetLrReachesEveryGroup) {
  for (const auto& type : optimizer_types()) {
    OptimizerOptions o;
    o.type = type;
    auto opt = make_optimizer(one_param(), o);
    opt->add_param_group(torch::optim::OptimizerParamGroup({torch::zeros({3}, torch::requires_grad())}));
    ASSERT_EQ(opt->param_groups().size(), 2u);
    set_lr(*opt, 0.125);
    for (const auto& g : opt->param_groups()) EXPECT_DOUBLE_EQ(g.options().get_lr(), 0.125) << type;
    EXPECT_DOUBLE_EQ(get_lr(*opt), 0.125) << type;
  }
}

}  // namespace
}  // namespace codefy::train
