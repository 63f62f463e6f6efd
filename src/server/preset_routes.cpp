// The preset routes: the built-in presets with their ports' types and their
// params' definitions filled in from the node catalogue.
#include "server/preset_routes.h"

#include "graph/presets.h"

namespace codefy::server {

using nlohmann::json;

namespace {

const json* find_inner(const json& definition, const std::string& id) {
  const auto nodes = definition.find("nodes");
  if (nodes == definition.end() || !nodes->is_array()) return nullptr;
  for (const auto& n : *nodes)  // by reference: the pointer outlives the loop
    if (n.value("id", "") == id) return &n;
  return nullptr;
}

/// The data type of port `port` of inner node `node` ("input" or "output" side); ANY when unknown.
std::string port_type(const json& definition, const graph::NodeCatalog& catalog, const std::string& node,
                      const std::string& port, bool input) {
  const json* inner = find_inner(definition, node);
  const graph::NodeDef* def = inner ? catalog.find(inner->value("type", "")) : nullptr;
  const graph::PortDef* p = def ? (input ? def->input(port) : def->output(port)) : nullptr;
  return p ? graph::to_string(p->type) : "ANY";
}

/// The /api/nodes entry of inner param `name` of `node`; null when unknown.
json param_def(const json& definition, const graph::NodeCatalog& catalog, const std::string& node,
               const std::string& name) {
  const json* inner = find_inner(definition, node);
  const graph::NodeDef* def = inner ? catalog.find(inner->value("type", "")) : nullptr;
  if (!def) return nullptr;
  const json entry = graph::to_json(*def);
  for (const auto& p : entry.at("params"))
    if (p.value("name", "") == name) return p;
  return nullptr;
}

/// Whether every inner node of the preset is a known node type; CodefyUI's
/// preset registry does not load one that is not, and neither is it served here.
bool runnable(const json& definition, const graph::NodeCatalog& catalog) {
  for (const auto& n : definition.value("nodes", json::array()))
    if (!catalog.find(n.value("type", ""))) return false;
  return true;
}

}  // namespace

json preset_json(const json& definition, const graph::NodeCatalog& catalog) {
  json nodes = json::array();
  for (const auto& n : definition.value("nodes", json::array()))
    nodes.push_back(
        {{"id", n.value("id", "")}, {"type", n.value("type", "")}, {"params", n.value("params", json::object())}});
  json edges = json::array();
  for (const auto& e : definition.value("edges", json::array()))
    edges.push_back({{"source", e.value("source", "")},
                     {"sourceHandle", e.value("sourceHandle", "")},
                     {"target", e.value("target", "")},
                     {"targetHandle", e.value("targetHandle", "")}});
  const auto ports = [&](const char* key, bool input) {
    json out = json::array();
    for (const auto& p : definition.value(key, json::array())) {
      const std::string node = p.value("internal_node", ""), port = p.value("internal_port", "");
      std::string type = p.value("data_type", "");
      if (type.empty()) type = port_type(definition, catalog, node, port, input);
      out.push_back({{"name", p.value("name", "")},
                     {"internal_node", node},
                     {"internal_port", port},
                     {"data_type", type},
                     {"description", p.value("description", "")}});
    }
    return out;
  };
  json params = json::array();
  for (const auto& p : definition.value("exposed_params", json::array())) {
    const std::string node = p.value("internal_node", ""), name = p.value("param_name", "");
    params.push_back({{"internal_node", node},
                      {"param_name", name},
                      {"display_name", p.value("display_name", name)},
                      {"group", p.value("group", "")},
                      {"param_def", param_def(definition, catalog, node, name)}});
  }
  return {{"preset_name", definition.value("preset_name", "")},
          {"category", definition.value("category", "Preset")},
          {"description", definition.value("description", "")},
          {"tags", definition.value("tags", json::array())},
          {"nodes", std::move(nodes)},
          {"edges", std::move(edges)},
          {"exposed_inputs", ports("exposed_inputs", true)},
          {"exposed_outputs", ports("exposed_outputs", false)},
          {"exposed_params", std::move(params)}};
}

void add_preset_routes(RouteTable& table, const graph::NodeCatalog& catalog) {
  table.add("GET", "/api/presets", [&catalog](const Request&, const PathParams&) {
    json all = json::array();
    for (const auto& [name, preset] : graph::builtin_presets())
      if (runnable(preset.definition, catalog)) all.push_back(preset_json(preset.definition, catalog));
    return Response::json(200, all);
  });
  table.add("GET", "/api/presets/{name}", [&catalog](const Request&, const PathParams& p) {
    const auto& presets = graph::builtin_presets();
    const auto it = presets.find(p.at("name"));
    if (it == presets.end() || !runnable(it->second.definition, catalog))
      return Response::error(404, "Preset '" + p.at("name") + "' not found");
    return Response::json(200, preset_json(it->second.definition, catalog));
  });
}

}  // namespace codefy::server
