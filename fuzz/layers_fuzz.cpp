// A SequentialModel's v2 layer spec as the layer editor sends it (POST
// /api/layers/shapes: {"layers": spec or its JSON text, "input_shape":
// [sizes]}): the spec parsed and wired, then the shape trace, which builds
// each layer and runs a zero sample through it. Refusals allowed: the
// route's 400s (HttpError there, here a return), LayerSpecError from the
// parse, ShapeRequestError from the trace; a layer's fault must end the
// trace with its error, not escape.
#include "fuzz/fuzz_targets.h"
#include "model/layer_shapes.h"
#include "model/layer_spec.h"
#include "model/layer_spec_error.h"
#include "util/json_input.h"

#include <stdexcept>

namespace codefy::fuzz {

void layers(std::string_view data) {
  nlohmann::json body;
  try {
    body = util::parse_json(data);
  } catch (const util::JsonInputError&) {
    return;
  }
  // The route's checks of the body (server/layer_routes.cpp), each a 400 there.
  if (!body.is_object() || !body.contains("layers")) return;
  nlohmann::json spec = body["layers"];
  if (spec.is_string()) {
    try {
      spec = util::parse_json(spec.get<std::string>());
    } catch (const util::JsonInputError&) {
      return;
    }
  }
  if (!spec.is_object() || !spec.contains("nodes") || !spec["nodes"].is_array()) return;
  const auto shape_it = body.find("input_shape");
  if (shape_it == body.end() || !shape_it->is_array()) return;
  std::vector<int64_t> input_shape;
  for (const nlohmann::json& s : *shape_it) {
    if (!s.is_number_integer()) return;
    input_shape.push_back(s.get<int64_t>());
  }

  try {
    model::connect_layers(model::parse_layer_spec(spec));
  } catch (const model::LayerSpecError&) {
  }

  // Limits well below the route's (16M input elements, 64M weights and
  // outputs, 8e9 multiply-adds), so an input costs milliseconds: the code
  // that holds a layer against them is the same.
  model::ShapeLimits limits;
  limits.input_elements_max = int64_t{1} << 16;
  limits.parameters_max = int64_t{1} << 20;
  limits.activations_max = int64_t{1} << 20;
  limits.multiply_adds_max = 1e7;
  try {
    const model::ShapeTrace trace = model::trace_layer_shapes(spec, input_shape, limits);
    (void)model::to_json(trace).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    check(trace.error || !trace.output_shape.empty(), "a trace without an error has no output shape");
  } catch (const model::ShapeRequestError&) {
  }
}

}  // namespace codefy::fuzz
