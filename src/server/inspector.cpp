// The run output store and node state store routes.
#include "server/inspector.h"

#include "util/json_input.h"
#include "util/parse.h"

#include <algorithm>
#include <functional>

namespace codefy::server {

namespace {

/// Whether a node state key belongs to `graph_id`'s scope.
std::function<bool(const std::string&)> in_graph_scope(const std::string& graph_id) {
  return [prefix = node_state_key(graph_id, "")](const std::string& k) { return k.rfind(prefix, 0) == 0; };
}

}  // namespace

Inspector::Inspector(const store::StoreSettings& stores)
    : limits_(stores), run_outputs_(stores.run_output_store), node_state_(stores.node_state_store) {}

void Inspector::record_outputs(const std::string& run_id, const RunResult& result) {
  RunCapture capture;
  for (const auto& [id, outputs] : result.outputs) capture.nodes[id] = outputs;
  const int64_t bytes = capture_bytes(capture);
  run_outputs_.put(run_id, std::move(capture), bytes);
}

nlohmann::json Inspector::health() const {
  const auto runs = run_outputs_.stats();
  const auto modules = node_state_.stats();
  return {{"run_output_store",
           {{"runs", runs.entries},
            {"max_runs", limits_.run_output_store.max_entries},
            {"bytes", runs.bytes},
            {"max_bytes", limits_.run_output_store.max_bytes}}},
          {"node_state_store",
           {{"modules", modules.entries},
            {"max_modules", limits_.node_state_store.max_entries},
            {"bytes", modules.bytes},
            {"max_bytes", limits_.node_state_store.max_bytes}}}};
}

void Inspector::add_routes(RouteTable& table) {
  table.add("GET", "/api/execution/outputs/{run_id}",
            [this](const Request&, const PathParams& p) { return outputs_list(p.at("run_id")); });
  table.add("DELETE", "/api/execution/outputs/{run_id}",
            [this](const Request&, const PathParams& p) { return outputs_delete(p.at("run_id")); });
  table.add("GET", "/api/execution/outputs/{run_id}/{node_id}/{port}",
            [this](const Request& r, const PathParams& p) { return output_port(r, p); });
  table.add("POST", "/api/execution/state/reset",
            [this](const Request& r, const PathParams&) { return state_reset(r); });
  table.add("GET", "/api/execution/state/list", [this](const Request& r, const PathParams&) { return state_list(r); });
}

Response Inspector::outputs_list(const std::string& run_id) {
  const auto capture = run_outputs_.get(run_id);
  if (!capture) return Response::error(404, "run '" + run_id + "' not found");
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& [id, ports] : capture->nodes)
    for (const auto& [port, value] : ports) rows.push_back(output_row(id, port, value));
  return Response::json(200, rows);
}

Response Inspector::outputs_delete(const std::string& run_id) {
  if (!run_outputs_.erase(run_id)) return Response::error(404, "run '" + run_id + "' not found");
  return Response::json(200, {{"run_id", run_id}, {"deleted", true}});
}

Response Inspector::output_port(const Request& r, const PathParams& p) {
  const std::string &run_id = p.at("run_id"), &node_id = p.at("node_id"), &port = p.at("port");
  const auto capture = run_outputs_.get(run_id);
  if (!capture) return Response::error(404, "run '" + run_id + "' not found");
  const auto node = capture->nodes.find(node_id);
  const ValueMap::const_iterator value =
      node == capture->nodes.end() ? ValueMap::const_iterator() : node->second.find(port);
  if (node == capture->nodes.end() || value == node->second.end())
    return Response::error(404, "output '" + node_id + "." + port + "' not found in run '" + run_id + "'");
  int64_t max_elements = 4096;
  if (auto m = r.query.find("max_elements"); m != r.query.end()) {
    const auto v = util::parse_int(m->second);
    if (!v || *v < 1 || *v > 1000000)
      return Response::error(422, "max_elements must be a whole number from 1 to 1000000");
    max_elements = *v;
  }
  const auto slice = r.query.find("slice");
  nlohmann::json j = output_values(value->second, slice == r.query.end() ? "" : slice->second, max_elements);
  j["run_id"] = run_id;
  j["node_id"] = node_id;
  j["port"] = port;
  return Response::json(200, j);
}

Response Inspector::state_reset(const Request& r) {
  const nlohmann::json body = r.json_body();
  if (!body.is_object() || !body.contains("graph_id") || !body["graph_id"].is_string())
    return Response::error(422, "the body needs \"graph_id\" (a string)");
  const std::string graph_id = body["graph_id"];
  size_t evicted = 0;
  // node_ids given (even empty) resets those nodes only; anything but a list
  // of ids is refused, never read as "the whole graph".
  if (const auto ids = body.find("node_ids"); ids != body.end() && !ids->is_null()) {
    if (!ids->is_array() || !std::all_of(ids->begin(), ids->end(), [](const auto& id) { return id.is_string(); }))
      return Response::error(422, "\"node_ids\" must be a list of node ids (text), got " + util::describe_json(*ids));
    for (const auto& id : *ids)
      if (node_state_.erase(node_state_key(graph_id, id.get<std::string>()))) ++evicted;
    return Response::json(200, {{"graph_id", graph_id}, {"scope", "nodes"}, {"evicted", evicted}});
  }
  evicted = node_state_.erase_if(in_graph_scope(graph_id));
  return Response::json(200, {{"graph_id", graph_id}, {"scope", "graph"}, {"evicted", evicted}});
}

Response Inspector::state_list(const Request& r) const {
  const auto graph = r.query.find("graph_id");
  if (graph == r.query.end()) return Response::json(200, {{"total", node_state_.stats().entries}});
  const auto match = in_graph_scope(graph->second);
  const size_t prefix = node_state_key(graph->second, "").size();
  nlohmann::json ids = nlohmann::json::array();
  for (const auto& k : node_state_.keys())
    if (match(k)) ids.push_back(k.substr(prefix));
  return Response::json(200, {{"graph_id", graph->second}, {"count", ids.size()}, {"node_ids", ids}});
}

}  // namespace codefy::server
