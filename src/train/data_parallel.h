// What training needs from a data-parallel world (several processes, one
// model): who this process is, and the collectives. distributed:: implements it on
// c10d; train:: only sees this interface.
#pragma once

#include "train/update.h"

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace codefy::train {

/// A group of processes training one model together (DDP). Every call is a
/// collective: every rank makes the same calls in the same order.
class DataParallel {
 public:
  virtual ~DataParallel() = default;
  /// This process's rank in [0, world_size()).
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  /// The collective backend's name ("gloo", "nccl").
  virtual std::string backend() const = 0;
  /// Where the ranks met, for the run's config event: {store: file, path} or
  /// {store: tcp, address, listens_on[, warning]}; null when it does not say.
  virtual nlohmann::json rendezvous() const { return nullptr; }
  /// Sets every tensor, in place, to rank `root`'s values.
  virtual void broadcast(const std::vector<at::Tensor>& tensors, int root = 0) = 0;
  /// Sums every tensor over the ranks, in place.
  virtual void all_reduce_sum(const std::vector<at::Tensor>& tensors) = 0;
  /// The gradient reducer of a training run: averages the window's gradients
  /// over the ranks once per update.
  virtual std::shared_ptr<GradientReducer> make_gradient_reducer() = 0;
  /// What this rank is doing now ("epoch 2, update 14"), named by the other
  /// ranks' errors when this one stops answering.
  virtual void set_activity(const std::string& /*activity*/) {}
  /// Counters for the run's metrics (gradient reductions, time in them, bytes).
  virtual nlohmann::json counters() const { return nlohmann::json::object(); }
};

}  // namespace codefy::train
