// The out-of-memory report: which node, which device, what to try
// (cheapest first, tailored to the graph), the memory line, the original error.
#pragma once

#include "device/memory.h"
#include "graph/graph.h"

#include <string>
#include <vector>

namespace codefy {

/// The node whose batch-size param sets a node's batch: the source of its
/// `input` (its memory hints' batch_input), when that source declares a
/// batch size (DataLoader's batch_size); none otherwise.
struct BatchSource {
  const graph::NodeSpec* node = nullptr;
  std::string param;
};
BatchSource batch_source(const graph::NodeCatalog& catalog, const graph::Graph& g, const graph::NodeSpec& node,
                         const std::string& input);

/// Advice for node `node_id` of `g` (its `params` with defaults filled in),
/// cheapest first, from the memory hints its definition and its batch
/// source's declare (`catalog`): names the node that sets its batch and that
/// batch size, and leaves out what is already done (no "set precision to
/// bf16" when it is bf16, no "lower batch_size" at 1).
std::vector<std::string> oom_advice(const graph::NodeCatalog& catalog, const graph::Graph& g,
                                    const std::string& node_id, const nlohmann::json& params, c10::Device device);

/// The memory line: CUDA live/reserved/peak/card; CPU live at the failure,
/// peak and budget from the counting allocator; "" when nothing was counted.
std::string oom_memory_line(const device::MemoryReading& m, int64_t live_at_failure);

/// The whole report: node and device, what to try, the memory line, the original error.
std::string oom_report(const std::string& node_type, const std::string& node_id, c10::Device device,
                       const std::vector<std::string>& advice, const std::string& memory_line,
                       const std::string& original_error);

}  // namespace codefy
