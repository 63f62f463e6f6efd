// Memory before Run: for each training node of a graph, a few real training
// steps at two small micro-batches split its peak into fixed bytes (weights,
// gradients, optimizer state, data, workspace) and bytes per sample
// (activations); from those, the peak of any micro-batch, the largest one
// that fits the memory available, and the (micro-batch, accumulate_steps)
// pairs that keep the effective batch (the seed article's recipe). The graph
// itself is never changed.
#pragma once

#include "engine/node.h"
#include "graph/graph.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace codefy {

struct PlanOptions {
  /// The memory to plan for; unset: the CPU budget in force, else what the
  /// device has free (available RAM, a card's free memory).
  std::optional<int64_t> budget_bytes;
  /// Where budget_bytes came from, for the report ("--budget-mb").
  std::string budget_source = "--budget-mb";
  /// The effective batch the options reach; unset: each training node's own
  /// (batch x accumulate_steps).
  std::optional<int64_t> target_effective_batch;
  /// Headroom: a configuration fits when its predicted peak x (1 + margin)
  /// is within the memory available.
  double margin = 0.1;
};

/// One measured micro-batch: the training node's peak bytes on its device.
struct MeasuredPeak {
  int64_t micro_batch = 0;
  int64_t peak_bytes = 0;
};

/// A configuration that reaches the effective batch.
struct PlanOption {
  std::string precision;
  int64_t micro_batch = 0, accumulate_steps = 0, effective_batch = 0;
  int64_t predicted_peak_bytes = 0;
  bool fits = false;
};

/// The fit of one precision: peak(m) = max(fixed + per_sample x m, validation).
struct PeakModel {
  std::string precision;
  std::vector<MeasuredPeak> measured;
  int64_t fixed_bytes = 0;
  int64_t per_sample_bytes = 0;
  /// The validation pass's peak when it is above training's at the measured batches (0: below).
  int64_t validation_peak_bytes = 0;
  /// Fails even at micro-batch 1 within the memory available.
  bool fails_at_one = false;
  int64_t predict(int64_t micro_batch) const;
};

/// The plan of one training node.
struct TrainingPlan {
  std::string node_id, node_type;
  std::string device;
  int64_t available_bytes = 0;
  std::string available_source;
  /// The node that sets the batch (DataLoader.batch_size).
  std::string batch_node_id, batch_node_type, batch_param;
  std::string precision;  ///< the graph's (as it would run: fp16 on a CPU runs fp32)
  int64_t micro_batch = 0, accumulate_steps = 1, effective_batch = 0;
  int world_size = 1;
  PeakModel model;  ///< of `precision`
  int64_t predicted_peak_bytes = 0;
  bool fits = false;
  /// The largest micro-batch that fits with the margin in `precision`; -1: any (nothing grows with it).
  int64_t max_micro_batch = 0;
  int64_t parameter_bytes = 0, gradient_bytes = 0, optimizer_state_bytes = 0;
  std::vector<PeakModel> other_precisions;
  std::vector<PlanOption> options;
  std::vector<std::string> notes;
  double seconds = 0;  ///< measuring took
};

struct MemoryPlan {
  std::string graph;
  std::vector<TrainingPlan> plans;
  /// Every training node's configuration fits.
  bool fits() const;
  nlohmann::json to_json() const;
};

/// Thrown when a graph has nothing to plan (no training node whose batch a node sets).
class NothingToPlan : public InputError {
 public:
  using InputError::InputError;
};

/// Plans every training node of `g` (a node whose type declares a batch
/// input, a precision and accumulation: TrainingLoop). Each measurement runs
/// the node and what it depends on (nothing downstream) with the batch node's
/// batch size set to the micro-batch, two optimizer updates (Adam's state
/// exists after the first) and no accumulation; the validation pass once more.
/// `settings` gives the base folder, file access, device override and
/// cancellation; the thread count is left as it is. Throws
/// graph::ValidationError for an invalid graph, NothingToPlan, Cancelled.
MemoryPlan plan_memory(const graph::Graph& g, const NodeRegistry& registry, const RunSettings& settings,
                       const PlanOptions& options);

}  // namespace codefy
