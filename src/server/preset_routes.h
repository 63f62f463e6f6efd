// The presets Codefy knows (graph/presets.h), in CodefyUI's shape:
// GET /api/presets and GET /api/presets/{name}, which CodefyUI's editor loads
// with the node definitions to fill its palette and draw preset cards.
#pragma once

#include "graph/types.h"
#include "server/routes.h"

namespace codefy::server {

/// A preset as CodefyUI's PresetDefinition: preset_name, category,
/// description, tags, nodes, edges, exposed_inputs and exposed_outputs (each
/// with the data_type of the inner port it stands for) and exposed_params
/// (each with the param_def of the inner param, as /api/nodes gives it).
nlohmann::json preset_json(const nlohmann::json& definition, const graph::NodeCatalog& catalog);

/// Adds GET /api/presets (every preset whose inner node types all exist, by
/// name) and GET /api/presets/{name} (404 for an unknown or unservable one).
void add_preset_routes(RouteTable& table, const graph::NodeCatalog& catalog);

}  // namespace codefy::server
