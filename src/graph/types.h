// Port and parameter types, node definitions: what validation needs to know
// about a node type, in CodefyUI's vocabulary. No LibTorch here.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace codefy::graph {

using json = nlohmann::json;

/// The type carried by a port (CodefyUI's DataType).
enum class DataType {
  kTensor,
  kModel,
  kDataset,
  kDataLoader,
  kOptimizer,
  kLossFn,
  kScalar,
  kString,
  kImage,
  kList,
  kTransform,
  kAny,
  kTrigger
};

/// The widget/type of a parameter (CodefyUI's ParamType).
/// kTensorGrid: a nested list of numbers (TensorInput's inline tensor editor), or null.
enum class ParamType { kInt, kFloat, kString, kBool, kSelect, kModelFile, kDataFile, kTensorGrid };

/// CodefyUI's spelling ("TENSOR", "LOSS_FN", ...).
const char* to_string(DataType t);
/// CodefyUI's spelling ("int", "select", ...).
const char* to_string(ParamType t);
/// Parses CodefyUI's spelling; std::nullopt when unknown.
std::optional<DataType> data_type_from_string(const std::string& s);

/// CodefyUI's compatibility rule: may a `source` output feed a `target` input?
bool is_compatible(DataType source, DataType target);
/// The rule as data, for editors that check connections while dragging:
/// {"data_types": ["TENSOR", ...], "compatible": {"<source>": ["<target>", ...]}}.
json type_rules_json();

/// One input or output of a node type.
struct PortDef {
  std::string name;
  DataType type = DataType::kAny;
  std::string description;
  bool optional = false;
};

/// One parameter of a node type, with its default and limits.
struct ParamDef {
  std::string name;
  ParamType type = ParamType::kString;
  json default_value;
  std::string description;
  std::vector<std::string> options;  ///< for kSelect
  std::optional<double> min_value;
  std::optional<double> max_value;
  bool advanced = false;  ///< folded under "Advanced" in the editor
  bool required = false;  ///< must be non-empty (e.g. a file path)
  /// The options are suggestions and any string is accepted: device params,
  /// whose strings are parsed at run time with a warning and a fallback.
  bool open_options = false;
};

/// Everything known about a node type before it runs.
struct NodeDef {
  std::string name;
  std::string category;
  std::string description;
  std::vector<PortDef> inputs;
  std::vector<PortDef> outputs;
  std::vector<ParamDef> params;
  /// Whether a cache may serve this node's outputs (never for training or
  /// for nodes that hand out mutable handles).
  bool cacheable = true;
  /// Whether its outputs (a freshly initialised module) are kept in the node
  /// state store between editor runs, so training continues from the weights
  /// of the last run (CodefyUI's weights_persistent, the node state store).
  bool persistent_state = false;

  /// What the out-of-memory advice may tell a person to change on this node,
  /// by param or port name ("" when it has none). The advice reads these;
  /// nothing in the engine names a node type.
  struct MemoryHints {
    std::string batch_param;       ///< its own batch size (DataLoader's, EvaluateModel's batch_size)
    std::string batch_input;       ///< the input whose source node sets its batch (TrainingLoop's dataloader)
    std::string precision_param;   ///< it trains under autocast: bf16 halves activation memory
    std::string accumulate_param;  ///< it accumulates gradients: more steps of smaller batches
  };
  MemoryHints memory_hints{};
  /// A node that runs on every rank of a data-parallel world when `param`
  /// has `value` (TrainingLoop's strategy = ddp); both empty: never.
  struct RanksWhen {
    std::string param, value;
  };
  RanksWhen ranks_when{};
  /// Whether its outputs are the run's results a person reads at the end: its
  /// JSON "metrics" output whole, else its scalar outputs (`codefy run`).
  bool reports_results = false;

  /// Outputs whose number a param sets (Split's chunk_0 .. chunk_{chunks-1}):
  /// `outputs` lists those of the param's default, and a node has
  /// `prefix + i` for every i below its own param (clamped to the param's limits).
  struct PortFamily {
    std::string prefix;
    std::string count_param;
    DataType type = DataType::kAny;
  };
  std::optional<PortFamily> output_family = std::nullopt;

  const PortDef* input(const std::string& port) const;
  const PortDef* output(const std::string& port) const;
  /// Output `port` of a node with these params: a declared one or one of its family.
  std::optional<PortDef> output_for(const std::string& port, const json& params) const;
  const ParamDef* param(const std::string& name) const;
  /// Whether a node with these params (defaults not filled) runs on every rank (see ranks_when).
  bool wants_ranks(const json& params) const;
};

/// CodefyUI's `/api/nodes` entry for one node type.
json to_json(const NodeDef& def);

/// Looks up node definitions by type name; implemented by the node registry.
class NodeCatalog {
 public:
  virtual ~NodeCatalog() = default;
  /// The definition of `type`, or nullptr when unknown.
  virtual const NodeDef* find(const std::string& type) const = 0;
};

}  // namespace codefy::graph
