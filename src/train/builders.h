// Losses and optimizers by name, with PyTorch's semantics and defaults.
#pragma once

#include "train/model.h"

#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace codefy::train {

/// Loss types Codefy knows, in CodefyUI's spelling.
const std::vector<std::string>& loss_types();

/// A loss: prediction and target in, scalar out (mean reduction).
struct LossFunction {
  std::string type;
  std::function<torch::Tensor(const torch::Tensor& prediction, const torch::Tensor& target)> fn;
  torch::Tensor operator()(const torch::Tensor& p, const torch::Tensor& t) const { return fn(p, t); }
};
using LossPtr = std::shared_ptr<const LossFunction>;

/// Options of the losses that have any (PyTorch names and defaults).
struct LossOptions {
  double label_smoothing = 0.0;  ///< CrossEntropyLoss
  double beta = 1.0;             ///< SmoothL1Loss
  double delta = 1.0;            ///< HuberLoss
};

/// Makes a loss; throws std::invalid_argument for an unknown type.
/// CrossEntropyLoss/NLLLoss take int64 class targets; the regression losses
/// and BCEWithLogitsLoss cast targets to the prediction's dtype and reshape
/// [N] targets to a [N,1] prediction.
LossPtr make_loss(const std::string& type, const LossOptions& options = {});

/// Optimizer types Codefy knows, in CodefyUI's spelling.
const std::vector<std::string>& optimizer_types();

/// Every optimizer option; each optimizer reads the ones PyTorch gives it.
struct OptimizerOptions {
  std::string type = "Adam";
  double lr = 1e-3;
  double weight_decay = 0.0;
  double momentum = 0.0;   ///< SGD, RMSprop
  double dampening = 0.0;  ///< SGD
  bool nesterov = false;   ///< SGD
  double beta1 = 0.9;      ///< Adam, AdamW
  double beta2 = 0.999;    ///< Adam, AdamW
  double eps = 1e-8;       ///< Adam, AdamW, RMSprop (1e-8), Adagrad (1e-10 when left at default)
  bool amsgrad = false;    ///< Adam, AdamW
  double alpha = 0.99;     ///< RMSprop
  bool centered = false;   ///< RMSprop
  double lr_decay = 0.0;   ///< Adagrad
};

/// Makes a LibTorch optimizer over `parameters`; throws std::invalid_argument
/// for an unknown type or an option PyTorch would refuse (e.g. nesterov
/// without momentum).
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::vector<torch::Tensor>& parameters,
                                                        const OptimizerOptions& options);

/// What flows on OPTIMIZER ports: the optimizer with its state, and the model
/// whose parameters it updates.
struct OptimizerHandle {
  std::string type;
  OptimizerOptions options;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  ModelPtr model;
};
using OptimizerPtr = std::shared_ptr<OptimizerHandle>;

/// Learning rate of the first parameter group.
double get_lr(const torch::optim::Optimizer& optimizer);
/// Sets the learning rate of every parameter group.
void set_lr(torch::optim::Optimizer& optimizer, double lr);

}  // namespace codefy::train
