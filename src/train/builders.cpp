// Losses and optimizers by name. The math is LibTorch's own (functional losses,
// torch::optim); this file only maps CodefyUI's names and options onto it and
// refuses, up front and as std::invalid_argument, what PyTorch would refuse.
#include "train/builders.h"
#include "train/checks.h"
#include "train/fused_optim.h"
#include "util/text.h"

#include <torch/nn/functional/loss.h>
#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace codefy::train {
namespace {

using detail::number;
using detail::require;

namespace F = torch::nn::functional;

/// Class-index targets must be int64 for LibTorch's kernels; data pipelines
/// often hand over float or int32 labels, so those are converted rather than
/// failing deep inside the kernel. A floating target shaped like the
/// prediction is a class-probability target (PyTorch >= 1.10) and stays as is.
torch::Tensor class_target(const torch::Tensor& prediction, const torch::Tensor& target) {
  if (target.is_floating_point() && target.sizes() == prediction.sizes()) return target.to(prediction.dtype());
  return target.scalar_type() == torch::kLong ? target : target.to(torch::kLong);
}

/// Regression and BCE targets: the prediction's dtype, and [N] reshaped to a
/// [N,1] prediction (otherwise PyTorch would broadcast to [N,N], silently
/// computing the wrong loss).
torch::Tensor regression_target(const torch::Tensor& prediction, const torch::Tensor& target) {
  torch::Tensor t = target.scalar_type() == prediction.scalar_type() ? target : target.to(prediction.dtype());
  if (prediction.dim() == 2 && prediction.size(1) == 1 && t.dim() == 1 && t.size(0) == prediction.size(0))
    t = t.unsqueeze(1);
  return t;
}

/// `x >= 0` that is also false for NaN.
bool non_negative(double x) { return x >= 0.0; }

}  // namespace

const std::vector<std::string>& loss_types() {
  static const std::vector<std::string> types = {"CrossEntropyLoss", "MSELoss", "BCEWithLogitsLoss", "L1Loss",
                                                 "SmoothL1Loss",     "NLLLoss", "HuberLoss"};
  return types;
}

LossPtr make_loss(const std::string& type, const LossOptions& options) {
  auto loss = std::make_shared<LossFunction>();
  loss->type = type;
  if (type == "CrossEntropyLoss") {
    // PyTorch checks this inside the kernel, at the first batch; say it now.
    require(options.label_smoothing >= 0.0 && options.label_smoothing <= 1.0,
            "CrossEntropyLoss: label_smoothing must be between 0.0 and 1.0, got " + number(options.label_smoothing));
    const auto fopts = F::CrossEntropyFuncOptions().label_smoothing(options.label_smoothing);
    loss->fn = [fopts](const torch::Tensor& p, const torch::Tensor& t) {
      return F::cross_entropy(p, class_target(p, t), fopts);
    };
  } else if (type == "NLLLoss") {
    loss->fn = [](const torch::Tensor& p, const torch::Tensor& t) {
      return F::nll_loss(p, t.scalar_type() == torch::kLong ? t : t.to(torch::kLong));
    };
  } else if (type == "MSELoss") {
    loss->fn = [](const torch::Tensor& p, const torch::Tensor& t) { return F::mse_loss(p, regression_target(p, t)); };
  } else if (type == "L1Loss") {
    loss->fn = [](const torch::Tensor& p, const torch::Tensor& t) { return F::l1_loss(p, regression_target(p, t)); };
  } else if (type == "SmoothL1Loss") {
    require(non_negative(options.beta), "SmoothL1Loss: beta must be >= 0, got " + number(options.beta));
    const double beta = options.beta;
    // LibTorch 1.13's functional smooth_l1_loss ignores SmoothL1LossFuncOptions::beta
    // and takes beta as a separate argument.
    loss->fn = [beta](const torch::Tensor& p, const torch::Tensor& t) {
      return F::smooth_l1_loss(p, regression_target(p, t), F::SmoothL1LossFuncOptions(), beta);
    };
  } else if (type == "HuberLoss") {
    require(options.delta > 0.0, "HuberLoss: delta must be > 0, got " + number(options.delta));
    const auto fopts = F::HuberLossFuncOptions().delta(options.delta);
    loss->fn = [fopts](const torch::Tensor& p, const torch::Tensor& t) {
      return F::huber_loss(p, regression_target(p, t), fopts);
    };
  } else if (type == "BCEWithLogitsLoss") {
    loss->fn = [](const torch::Tensor& p, const torch::Tensor& t) {
      return F::binary_cross_entropy_with_logits(p, regression_target(p, t));
    };
  } else {
    throw std::invalid_argument("Unsupported loss function type: '" + type +
                                "' (known: " + util::join(loss_types(), ", ") + ")");
  }
  return loss;
}

const std::vector<std::string>& optimizer_types() {
  static const std::vector<std::string> types = {"Adam", "SGD", "AdamW", "RMSprop", "Adagrad"};
  return types;
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::vector<torch::Tensor>& parameters,
                                                        const OptimizerOptions& o) {
  const std::string& t = o.type;
  const auto& known = optimizer_types();
  if (std::find(known.begin(), known.end(), t) == known.end())
    throw std::invalid_argument("Unsupported optimizer type: '" + t + "' (known: " + util::join(known, ", ") + ")");
  // The same checks as PyTorch's constructors; LibTorch's own TORCH_CHECKs
  // would throw c10::Error, which callers cannot tell from a runtime failure.
  require(!parameters.empty(), t + ": optimizer got an empty parameter list");
  require(non_negative(o.lr), t + ": invalid learning rate: " + number(o.lr));
  require(non_negative(o.weight_decay), t + ": invalid weight_decay value: " + number(o.weight_decay));

  if (t == "SGD") {
    require(non_negative(o.momentum), "SGD: invalid momentum value: " + number(o.momentum));
    require(!o.nesterov || (o.momentum > 0 && o.dampening == 0),
            "SGD: nesterov momentum requires a momentum > 0 and zero dampening (momentum=" + number(o.momentum) +
                ", dampening=" + number(o.dampening) + ")");
    return std::make_unique<FusedSGD>(parameters, torch::optim::SGDOptions(o.lr)
                                                      .momentum(o.momentum)
                                                      .dampening(o.dampening)
                                                      .nesterov(o.nesterov)
                                                      .weight_decay(o.weight_decay));
  }
  if (t == "Adam" || t == "AdamW") {
    require(non_negative(o.eps), t + ": invalid epsilon value: " + number(o.eps));
    require(o.beta1 >= 0 && o.beta1 < 1, t + ": invalid beta parameter at index 0: " + number(o.beta1));
    require(o.beta2 >= 0 && o.beta2 < 1, t + ": invalid beta parameter at index 1: " + number(o.beta2));
    if (t == "Adam")
      return std::make_unique<FusedAdam>(parameters, torch::optim::AdamOptions(o.lr)
                                                         .betas({o.beta1, o.beta2})
                                                         .eps(o.eps)
                                                         .weight_decay(o.weight_decay)
                                                         .amsgrad(o.amsgrad));
    // weight_decay is passed explicitly: LibTorch's AdamW default (1e-2) would
    // otherwise apply to a graph that asked for 0.
    return std::make_unique<FusedAdamW>(parameters, torch::optim::AdamWOptions(o.lr)
                                                        .betas({o.beta1, o.beta2})
                                                        .eps(o.eps)
                                                        .weight_decay(o.weight_decay)
                                                        .amsgrad(o.amsgrad));
  }
  if (t == "RMSprop") {
    require(non_negative(o.eps), "RMSprop: invalid epsilon value: " + number(o.eps));
    require(non_negative(o.momentum), "RMSprop: invalid momentum value: " + number(o.momentum));
    require(non_negative(o.alpha), "RMSprop: invalid alpha value: " + number(o.alpha));
    return std::make_unique<torch::optim::RMSprop>(parameters, torch::optim::RMSpropOptions(o.lr)
                                                                   .alpha(o.alpha)
                                                                   .eps(o.eps)
                                                                   .weight_decay(o.weight_decay)
                                                                   .momentum(o.momentum)
                                                                   .centered(o.centered));
  }
  // Adagrad. Its PyTorch default eps is 1e-10; the shared options default to
  // Adam's 1e-8, which here means "left at default".
  const double eps = o.eps == OptimizerOptions{}.eps ? 1e-10 : o.eps;
  require(non_negative(eps), "Adagrad: invalid epsilon value: " + number(eps));
  require(non_negative(o.lr_decay), "Adagrad: invalid lr_decay value: " + number(o.lr_decay));
  return std::make_unique<torch::optim::Adagrad>(
      parameters, torch::optim::AdagradOptions(o.lr).lr_decay(o.lr_decay).weight_decay(o.weight_decay).eps(eps));
}

double get_lr(const torch::optim::Optimizer& optimizer) {
  const auto& groups = optimizer.param_groups();
  if (groups.empty()) throw std::invalid_argument("get_lr: the optimizer has no parameter groups");
  return groups.front().options().get_lr();
}

void set_lr(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

}  // namespace codefy::train
