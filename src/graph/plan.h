// The plan: which nodes run and in which order.
#pragma once

#include "graph/graph.h"

#include <set>
#include <string>
#include <vector>

namespace codefy::graph {

/// Nodes that run, in an order where every node comes after its inputs.
struct Plan {
  std::vector<std::string> order;
  /// Nodes that would run but sit on a cycle (order then omits them).
  std::vector<std::string> cyclic;
  bool contains(const std::string& id) const { return members.count(id) > 0; }
  std::set<std::string> members;
};

/// CodefyUI's rule: nodes reachable from a Start (through trigger and data
/// edges) run, together with every node they take data from. Order is
/// topological, ties broken by position in the file, so it is stable.
Plan make_plan(const Graph& g);

}  // namespace codefy::graph
