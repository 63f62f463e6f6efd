// Runs a graph: prepare (expand presets, validate, plan) once, run many times.
#pragma once

#include "engine/errors.h"
#include "engine/node.h"
#include "graph/graph.h"
#include "graph/plan.h"

#include <map>
#include <string>

namespace codefy {

/// A graph checked and planned against a registry, ready to run.
struct PreparedGraph {
  graph::Graph graph;  ///< presets expanded
  graph::Plan plan;
};

/// How thoroughly prepare() checks.
enum class Checks {
  kRun,       ///< what a run needs: params, wires, layer specs that parse
  kValidate,  ///< also what only running would show otherwise: layers traced with a sample of their data
};

/// Expands presets, validates and plans. Throws graph::ValidationError with
/// every problem found.
PreparedGraph prepare(const graph::Graph& g, const NodeRegistry& registry, Checks checks = Checks::kRun);

/// What a finished run produced.
struct RunResult {
  /// Outputs of every node that ran, by node id.
  std::map<std::string, ValueMap> outputs;
  /// Each node's peak of live CPU tensor bytes (when the counting allocator is installed).
  std::map<std::string, int64_t> peak_cpu_bytes;
  double seconds = 0.0;
};

/// Runs a prepared graph node by node in plan order, on the calling thread.
/// Before each node LibTorch's RNG is seeded from (run seed, node id), so a
/// node's random draws do not depend on which other nodes ran before it.
/// Throws NodeError (NodeOOMError for out-of-memory) naming the node, or
/// Cancelled when the token fires between nodes or inside a long node.
class Executor {
 public:
  explicit Executor(const NodeRegistry& registry) : registry_(registry) {}
  RunResult run(const PreparedGraph& prepared, const RunSettings& settings) const;

 private:
  /// A node ran out of memory: its report said to the observer, its kept
  /// outputs dropped, the device's cached memory given back.
  NodeOOMError out_of_memory_error(const graph::Graph& g, const NodeRef& ref, const nlohmann::json& params,
                                   c10::Device dev, const RunSettings& settings, const std::string& original) const;

  const NodeRegistry& registry_;
};

}  // namespace codefy
