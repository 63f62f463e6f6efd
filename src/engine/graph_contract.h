// A graph used as a function: the inputs and outputs its GraphInput and
// GraphOutput nodes declare (CodefyUI's contract), the caller's values put
// into the graph, and the declared outputs taken out of a run.
#pragma once

#include "engine/executor.h"
#include "graph/graph.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace codefy {

struct ContractInput {
  std::string name;
  std::string type;  ///< string, number, integer, boolean, json or image
  bool required = true;
  std::string default_text;
  std::string description;
  std::string node_id;
};

struct ContractOutput {
  std::string name;
  std::string description;
  std::string node_id;
};

/// What a graph declares: its inputs and outputs, and what is wrong with
/// the declaration (duplicate or malformed names, no output, an optional
/// input whose default does not parse). A graph with problems cannot be
/// called as a function.
struct Contract {
  std::vector<ContractInput> inputs;
  std::vector<ContractOutput> outputs;
  std::vector<std::string> problems;

  const ContractInput* input(const std::string& name) const;
  /// {"inputs": [...], "outputs": [...], "problems": [...]}, as GET /api/graph/contract shows it.
  nlohmann::json to_json() const;
};

/// The contract of a graph's top-level GraphInput / GraphOutput nodes.
Contract derive_contract(const graph::Graph& g);

/// What is wrong with `value` as a caller's value of a `type` input ("" when
/// nothing): JSON's types strictly — no text for numbers, booleans are not
/// numbers, an integer may be written 3.0; an image is a base64 string.
std::string check_input_value(const nlohmann::json& value, const std::string& type);

/// A canvas default (text) parsed per `type` and checked as a caller's
/// value would be; throws std::invalid_argument saying why it does not parse.
nlohmann::json parse_input_default(const std::string& text, const std::string& type);

/// Puts the caller's `inputs` ({name: value}) into the GraphInput nodes as
/// their `value` param. Returns what is wrong, one {field, reason} per
/// problem (an unknown name, a required input left out, a value of the
/// wrong type); the graph is changed only when the list is empty.
nlohmann::json inject_inputs(graph::Graph& g, const Contract& c, const nlohmann::json& inputs);

/// The most elements a tensor output is written out with; a larger one is
/// answered with its summary (shape, dtype, statistics) instead.
constexpr int64_t kMaxOutputElements = 1 << 20;

/// The declared outputs of a finished run by name: tensors as nested lists,
/// numbers, text and JSON as they are, anything else as its summary.
nlohmann::json collect_outputs(const Contract& c, const RunResult& result);

}  // namespace codefy
