// The layer routes: the catalogue, and shape traces on the worker thread.
#include "server/layer_routes.h"

#include "model/layer_catalog.h"
#include "model/layer_shapes.h"
#include "util/json_input.h"

#include <utility>
#include <vector>

namespace codefy::server {

using nlohmann::json;

void LayerRoutes::add_routes(RouteTable& table) {
  table.add("GET", "/api/layers",
            [](const Request&, const PathParams&) { return Response::json(200, model::layer_catalog_json()); });
  table.add("POST", "/api/layers/shapes",
            Handler([this](const Request& r, const PathParams&, const Respond& respond) { shapes(r, respond); }));
}

void LayerRoutes::shapes(const Request& r, const Respond& respond) {
  // The body is checked here, on the I/O thread: only a spec and a shape go to the worker.
  const json body = r.json_body();
  if (!body.is_object()) throw HttpError(400, "expected {\"layers\": <v2 layer spec>, \"input_shape\": [sizes]}");
  const auto layers_it = body.find("layers");
  if (layers_it == body.end()) throw HttpError(400, "\"layers\" is missing: send the v2 layer spec");
  json spec = *layers_it;
  if (spec.is_string()) {
    try {
      spec = util::parse_json(spec.get<std::string>());
    } catch (const util::JsonInputError& e) {
      throw HttpError(400, std::string("\"layers\" is text that is not valid JSON: ") + e.what());
    }
  }
  if (!spec.is_object() || !spec.contains("nodes") || !spec["nodes"].is_array())
    throw HttpError(400,
                    "\"layers\" is not a layer spec: expected {\"version\": 2, \"nodes\": [...], \"edges\": [...]}");
  const auto shape_it = body.find("input_shape");
  if (shape_it == body.end() || !shape_it->is_array())
    throw HttpError(400, "\"input_shape\" must be a list of sizes after the batch dimension, such as [1, 28, 28]");
  std::vector<int64_t> input_shape;
  for (const json& s : *shape_it) {
    if (!s.is_number_integer())
      throw HttpError(400, "\"input_shape\" must be a list of whole numbers, got " + shape_it->dump());
    input_shape.push_back(s.get<int64_t>());
  }

  worker_.post(
      [spec = std::move(spec), input_shape = std::move(input_shape), respond] {
        try {
          respond(Response::json(200, model::to_json(model::trace_layer_shapes(spec, input_shape))));
        } catch (const model::ShapeRequestError& e) {
          respond(Response::error(400, e.what()));
        }
      },
      respond);
}

}  // namespace codefy::server
