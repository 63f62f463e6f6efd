// The output shape and parameter count of each node of a v2 layer spec for a
// sample input: what an editor shows beside each layer while it is edited.
#pragma once

#include "util/errors.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace codefy::model {

/// What one trace may cost: the request is refused (ShapeRequestError) past
/// the first two; the trace stops with an error at the node that would pass
/// the last two.
struct ShapeLimits {
  int64_t input_elements_max = int64_t{1} << 24;  ///< elements of the sample input (16M)
  size_t nodes_max = 256;                         ///< nodes in the spec
  int64_t parameters_max = int64_t{1} << 26;      ///< weights of the whole model (64M, 256 MiB)
  int64_t activations_max = int64_t{1} << 26;     ///< elements of all outputs together (64M)
  double multiply_adds_max = 8e9;                 ///< estimated multiply-adds (8e9: about a second on one core)
};

/// A request the trace refuses outright: an input shape that is not a list of
/// sizes, or past the limits, a spec with too many nodes.
class ShapeRequestError : public InputError {
 public:
  using InputError::InputError;
};

/// One evaluated node.
struct NodeShape {
  std::string id, type;
  std::vector<int64_t> output_shape;  ///< batch dimension first (1)
  int64_t parameters = 0;             ///< weights of its module (merges: 0)
};

/// Where and why a trace stopped.
struct ShapeError {
  std::string node_id, node_type, param;  ///< each empty when nothing in particular is to blame
  std::string message;                    ///< the full message, naming the node
  bool over_limit = false;                ///< the trace stopped at a limit: the layer itself may be fine
};

/// A spec traced with a sample input.
struct ShapeTrace {
  std::vector<NodeShape> nodes;       ///< in evaluation order, up to the failing node
  std::vector<int64_t> output_shape;  ///< the model's output; empty after an error
  int64_t parameters = 0;             ///< the model's weights (after an error: those of the nodes traced)
  std::optional<ShapeError> error;
};

/// Builds each layer of `spec` (a v2 spec, as an object or a JSON string) and
/// runs a batch of one sample of `input_shape` (the sizes after the batch
/// dimension) through it on the CPU, without gradients, in evaluation mode,
/// node by node in the spec's evaluation order. Zeros are the sample (whole
/// numbers when the first layer is an Embedding). A problem with the spec or
/// a layer that rejects its input ends the trace with `error`. Throws
/// ShapeRequestError for a request past `limits` or an input shape that is
/// not 1 to 6 sizes >= 1.
ShapeTrace trace_layer_shapes(const nlohmann::json& spec, const std::vector<int64_t>& input_shape,
                              const ShapeLimits& limits = {});

/// A trace as POST /api/layers/shapes answers it: {nodes: [{id, type,
/// output_shape, params}], output_shape (null after an error), total_params,
/// error: null or {node_id, node_type, param, message}}.
nlohmann::json to_json(const ShapeTrace& trace);

}  // namespace codefy::model
