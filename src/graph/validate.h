// Validation: every problem of a graph, found before anything runs.
#pragma once

#include "graph/graph.h"
#include "graph/plan.h"
#include "graph/types.h"
#include "util/errors.h"

#include <map>
#include <string>
#include <vector>

namespace codefy::graph {

/// One problem found in a graph, naming where it is.
struct Issue {
  std::string graph;    ///< graph name
  std::string node_id;  ///< empty for graph-level problems
  std::string node_type;
  std::string field;  ///< port or parameter name, or edge id; may be empty
  std::string message;
  /// `graph "G": node n7 (TrainingLoop), param "epochs": <message>`.
  std::string to_string() const;
};

/// The issues as JSON: [{graph, node_id, node_type, field, message}, ...].
json issues_json(const std::vector<Issue>& issues);

/// Thrown by anything that refuses an invalid graph; carries every issue.
class ValidationError : public Error {
 public:
  explicit ValidationError(std::vector<Issue> issues);
  const std::vector<Issue>& issues() const { return issues_; }

 private:
  std::vector<Issue> issues_;
};

/// CodefyUI node types Codefy does not offer because they need a network or
/// a Python-only library at run time, each with the reason: validation
/// reports them as unavailable instead of unknown.
const std::map<std::string, std::string>& unavailable_node_types();

/// Checks a parameter value against its definition; returns the problem or "".
std::string check_param_value(const ParamDef& def, const json& value);

/// Collects every problem of the nodes that would run (see plan.h), plus
/// graph-level problems (no Start, cycles, dangling edges). Expects a graph
/// whose presets are already expanded.
std::vector<Issue> validate(const Graph& g, const NodeCatalog& catalog);
/// The same with the graph's plan made already (make_plan(g)). Linear in
/// the number of nodes and edges (up to map lookups).
std::vector<Issue> validate(const Graph& g, const NodeCatalog& catalog, const Plan& plan);

}  // namespace codefy::graph
