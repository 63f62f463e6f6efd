// The v2 layer spec's three steps: parse, build, connect.
#include "model/layer_spec.h"

#include "model/layer_catalog.h"

#include "model/layer_spec_error.h"
#include "util/json_input.h"
#include "util/text.h"

#include <torch/torch.h>

#include <algorithm>
#include <deque>
#include <map>
#include <sstream>
#include <utility>

namespace codefy::model {

using nlohmann::json;

namespace {

const json* member(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

/// The spec itself: CodefyUI stores it as a JSON string in the `layers` param.
json spec_object(const json& spec) {
  if (!spec.is_string()) return spec;
  try {
    return util::parse_json(spec.get<std::string>());
  } catch (const util::JsonInputError& e) {
    throw LayerSpecError("", "", "", std::string("the layers spec is not valid JSON (") + e.what() + ")");
  }
}

std::vector<SpecPort> read_ports(const json& node, const std::string& id, const std::string& type) {
  const json* ports = member(node, "ports");
  if (ports == nullptr || !ports->is_array() || ports->empty())
    throw LayerSpecError(
        id, type, "ports",
        "the " + type + " node needs a \"ports\" list with one port, such as [{\"id\": \"p_x\", \"name\": \"x\"}]");
  std::vector<SpecPort> out;
  for (const auto& p : *ports) {
    const json* pid = p.is_object() ? member(p, "id") : nullptr;
    const json* name = p.is_object() ? member(p, "name") : nullptr;
    if (pid == nullptr || !pid->is_string() || name == nullptr || !name->is_string())
      throw LayerSpecError(id, type, "ports", "each port needs a text \"id\" and \"name\", got " + describe_json(p));
    SpecPort port{pid->get<std::string>(), name->get<std::string>()};
    for (const auto& seen : out) {
      if (seen.name == port.name) throw LayerSpecError(id, type, "ports", "two ports are named \"" + port.name + "\"");
      if (seen.id == port.id) throw LayerSpecError(id, type, "ports", "two ports have the id \"" + port.id + "\"");
    }
    out.push_back(std::move(port));
  }
  if (out.size() > 1) {
    std::vector<std::string> names;
    names.reserve(out.size());
    for (const auto& p : out) names.push_back(p.name);
    throw LayerSpecError(id, type, "ports",
                         "has " + std::to_string(out.size()) + " ports (" + quoted_list(names) +
                             "), but a Codefy model takes one tensor in and gives one tensor out, so the " + type +
                             " node must have exactly one port");
  }
  return out;
}

std::optional<std::string> read_handle(const json& edge, const char* key, const std::string& label) {
  const json* v = member(edge, key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_string())
    throw LayerSpecError("", "", "",
                         label + ": \"" + key + "\" must be a port id (text) or null, got " + describe_json(*v));
  return v->get<std::string>();
}

std::vector<SpecNode> read_nodes(const json& spec, std::map<std::string, size_t>& index_of) {
  const json* nodes_json = member(spec, "nodes");
  if (nodes_json == nullptr || !nodes_json->is_array())
    throw LayerSpecError("", "", "nodes", "the spec needs a \"nodes\" list");
  std::vector<SpecNode> nodes;
  for (size_t i = 0; i < nodes_json->size(); ++i) {
    const json& n = (*nodes_json)[i];
    if (!n.is_object())
      throw LayerSpecError("", "", "",
                           "node #" + std::to_string(i + 1) + " must be an object, got " + describe_json(n));
    const json* id = member(n, "id");
    const json* type = member(n, "type");
    const std::string type_name = type != nullptr && type->is_string() ? type->get<std::string>() : "";
    if (id == nullptr || !id->is_string() || id->get<std::string>().empty())
      throw LayerSpecError("", type_name, "", "node #" + std::to_string(i + 1) + " needs a non-empty text \"id\"");
    SpecNode node;
    node.id = id->get<std::string>();
    if (type_name.empty()) throw LayerSpecError(node.id, "", "", "the node needs a text \"type\", such as \"Conv2d\"");
    node.type = type_name;
    if (node.id.find('.') != std::string::npos) {
      std::string renamed = node.id;
      std::replace(renamed.begin(), renamed.end(), '.', '_');
      throw LayerSpecError(node.id, node.type, "",
                           "node ids can't contain '.', which separates the parts of parameter names "
                           "(layers.<id>.weight); rename it, e.g. to \"" +
                               renamed + "\"");
    }
    if (!index_of.emplace(node.id, i).second)
      throw LayerSpecError(node.id, node.type, "", "two nodes have the id \"" + node.id + "\"; ids must be unique");
    if (const json* params = member(n, "params")) node.params = *params;
    if (node.type == "Input" || node.type == "Output") node.ports = read_ports(n, node.id, node.type);
    nodes.push_back(std::move(node));
  }
  return nodes;
}

/// The one node of `type` ("Input" or "Output").
size_t only_boundary(const std::vector<SpecNode>& nodes, const std::string& type) {
  std::vector<size_t> found;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].type == type) found.push_back(i);
  if (found.empty())
    throw LayerSpecError("", "", "",
                         "the graph has no " + type + " node; it needs exactly one, connected " +
                             (type == "Input" ? "to the first layer" : "from the last layer"));
  if (found.size() > 1)
    throw LayerSpecError(nodes[found[1]].id, type, "",
                         "the graph has " + std::to_string(found.size()) + " " + type + " nodes; it needs exactly one");
  return found.front();
}

std::vector<SpecEdge> read_edges(const json& spec, const std::vector<SpecNode>& nodes,
                                 const std::map<std::string, size_t>& index_of) {
  const json* edges_json = member(spec, "edges");
  if (edges_json != nullptr && !edges_json->is_array())
    throw LayerSpecError("", "", "edges", "\"edges\" must be a list, got " + describe_json(*edges_json));
  std::vector<SpecEdge> edges;
  if (edges_json == nullptr) return edges;
  for (size_t i = 0; i < edges_json->size(); ++i) {
    const json& e = (*edges_json)[i];
    std::string label = "edge #" + std::to_string(i + 1);
    if (!e.is_object()) throw LayerSpecError("", "", "", label + " must be an object, got " + describe_json(e));
    if (const json* id = member(e, "id"); id != nullptr && id->is_string())
      label = "edge \"" + id->get<std::string>() + "\"";
    size_t ends[2];
    const char* keys[2] = {"source", "target"};
    for (int k = 0; k < 2; ++k) {
      const json* v = member(e, keys[k]);
      if (v == nullptr || !v->is_string())
        throw LayerSpecError("", "", "", label + " needs a text \"" + keys[k] + "\" naming a node");
      auto it = index_of.find(v->get<std::string>());
      if (it == index_of.end())
        throw LayerSpecError("", "", "",
                             label + " " + (k == 0 ? "comes from" : "goes to") + " \"" + v->get<std::string>() +
                                 "\", which is not a node in the graph");
      ends[k] = it->second;
    }
    label += " (" + nodes[ends[0]].id + " -> " + nodes[ends[1]].id + ")";
    edges.push_back(
        {label, ends[0], ends[1], read_handle(e, "sourceHandle", label), read_handle(e, "targetHandle", label)});
  }
  return edges;
}

/// LibTorch prints its modules as "torch::nn::Conv2d(...)"; students know them as "Conv2d(...)".
std::string pretty(const torch::nn::Module& module) {
  std::ostringstream os;
  module.pretty_print(os);
  std::string text = os.str();
  const std::string prefix = "torch::nn::";
  for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at))
    text.erase(at, prefix.size());
  return text;
}

bool is_boundary(const LayerGraph& graph, size_t node) { return node == graph.input || node == graph.output; }

/// Kahn's algorithm over nodes in list order with a FIFO queue, as CodefyUI
/// does. A cycle is an error that shows the cycle.
std::vector<size_t> topological_order(const std::vector<SpecNode>& nodes, const std::vector<SpecEdge>& edges) {
  std::vector<size_t> indegree(nodes.size(), 0);
  std::vector<std::vector<size_t>> next(nodes.size());
  for (const auto& e : edges) {
    ++indegree[e.target];
    next[e.source].push_back(e.target);
  }
  std::deque<size_t> queue;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (indegree[i] == 0) queue.push_back(i);
  std::vector<size_t> order;
  while (!queue.empty()) {
    const size_t n = queue.front();
    queue.pop_front();
    order.push_back(n);
    for (size_t m : next[n])
      if (--indegree[m] == 0) queue.push_back(m);
  }
  if (order.size() == nodes.size()) return order;

  // Every node left over has a left-over predecessor; walking back along them
  // must revisit a node, and the walk from there is a cycle to show.
  std::vector<int> seen_at(nodes.size(), -1);
  std::vector<size_t> walk;
  size_t n = 0;
  while (indegree[n] == 0) ++n;
  while (seen_at[n] < 0) {
    seen_at[n] = static_cast<int>(walk.size());
    walk.push_back(n);
    for (const auto& e : edges)
      if (e.target == n && indegree[e.source] > 0) {
        n = e.source;
        break;
      }
  }
  std::vector<size_t> cycle(walk.begin() + seen_at[n], walk.end());
  std::reverse(cycle.begin(), cycle.end());
  // Start the cycle at the node listed first, so the message is stable.
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  std::string path;
  for (size_t i : cycle) path += nodes[i].id + " -> ";
  path += nodes[cycle.front()].id;
  throw LayerSpecError(nodes[cycle.front()].id, nodes[cycle.front()].type, "",
                       "Graph contains a cycle (" + path + "); data must flow one way from Input to Output");
}

std::string handle_text(const std::optional<std::string>& handle) {
  return handle ? "\"" + *handle + "\"" : std::string("none");
}

}  // namespace

LayerGraph parse_layer_spec(const json& spec_in) {
  const json spec = spec_object(spec_in);
  if (!spec.is_object())
    throw LayerSpecError("", "", "",
                         "the layers spec must be a JSON object like {\"version\": 2, \"nodes\": [...], \"edges\": "
                         "[...]}, got " +
                             describe_json(spec));
  const json* version = member(spec, "version");
  if (version == nullptr || !version->is_number_integer() || version->get<int64_t>() != 2)
    throw LayerSpecError("", "", "version",
                         "Unsupported graph spec version: " + (version ? version->dump() : std::string("none given")) +
                             " (SequentialModel reads version 2)");
  LayerGraph graph;
  std::map<std::string, size_t> index_of;
  graph.nodes = read_nodes(spec, index_of);
  graph.input = only_boundary(graph.nodes, "Input");
  graph.output = only_boundary(graph.nodes, "Output");
  graph.edges = read_edges(spec, graph.nodes, index_of);
  return graph;
}

BuiltNode build_node(const LayerGraph& graph, size_t index) {
  const SpecNode& node = graph.nodes[index];
  BuiltNode out;
  try {
    if (const LayerDef* layer = find_layer_def(node.type)) {
      BuiltLayer made = layer->build(LayerParams(node.id, node.type, &node.params, layer_param_defs(node.type)));
      out.description = pretty(*made.module);
      out.module = std::move(made.module);
      out.layer = std::move(made.forward);
    } else if (const MergeDef* merge = find_merge_def(node.type)) {
      out.merge =
          merge->make(LayerParams(node.id, node.type, &node.params, layer_param_defs(node.type)), &out.description);
    } else {
      throw LayerSpecError(node.id, node.type, "", "unknown layer type");
    }
  } catch (const c10::OutOfMemoryError&) {
    throw;  // the weights did not fit: not a problem with the spec
  } catch (const c10::Error& e) {
    // LibTorch's own option checks, for anything the LayerParams checks missed.
    throw LayerSpecError(node.id, node.type, "", e.msg());
  }
  return out;
}

std::vector<BuiltNode> build_layers(const LayerGraph& graph) {
  std::vector<BuiltNode> built(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (!is_boundary(graph, i)) built[i] = build_node(graph, i);
  return built;
}

Wiring connect_layers(const LayerGraph& graph) {
  const std::vector<size_t> order = topological_order(graph.nodes, graph.edges);

  const SpecNode& in_node = graph.nodes[graph.input];
  const SpecNode& out_node = graph.nodes[graph.output];
  Wiring wiring;
  wiring.inputs.resize(graph.nodes.size());
  std::optional<size_t> output_source;
  size_t input_uses = 0;
  for (const SpecEdge& e : graph.edges) {
    if (e.target == graph.input)
      throw LayerSpecError(in_node.id, "Input", "", e.label + " goes into the Input node; nothing can feed the Input");
    if (e.source == graph.output)
      throw LayerSpecError(out_node.id, "Output", "",
                           e.label + " leaves the Output node; the Output can't feed layers");
    if (e.source == graph.input) {
      if (e.source_handle != in_node.ports[0].id)
        throw LayerSpecError(in_node.id, "Input", "sourceHandle",
                             e.label + " must set \"sourceHandle\" to the Input port id \"" + in_node.ports[0].id +
                                 "\", got " + handle_text(e.source_handle));
      ++input_uses;
    }
    // A sourceHandle from a layer is ignored: layers have a single output.
    if (e.target == graph.output) {
      if (e.target_handle != out_node.ports[0].id)
        throw LayerSpecError(out_node.id, "Output", "targetHandle",
                             e.label + " must set \"targetHandle\" to the Output port id \"" + out_node.ports[0].id +
                                 "\", got " + handle_text(e.target_handle));
      if (output_source)
        throw LayerSpecError(
            out_node.id, "Output", "",
            "Output port \"" + out_node.ports[0].name + "\" has more than one incoming edge; it needs exactly one");
      output_source = e.source;
    } else {
      wiring.inputs[e.target].push_back(e.source);
    }
  }
  if (input_uses == 0)
    throw LayerSpecError(in_node.id, "Input", "",
                         "Input port '" + in_node.ports[0].name + "' is unused; connect it to the first layer");
  if (!output_source)
    throw LayerSpecError(
        out_node.id, "Output", "",
        "Output port \"" + out_node.ports[0].name + "\" has no incoming edge; connect the last layer to it");
  wiring.output_source = *output_source;

  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (is_boundary(graph, i)) continue;
    const SpecNode& node = graph.nodes[i];
    const std::vector<size_t>& inputs = wiring.inputs[i];
    if (const MergeDef* merge = find_merge_def(node.type)) {
      if (inputs.size() < merge->min_inputs || inputs.size() > merge->max_inputs)
        throw LayerSpecError(
            node.id, node.type, "",
            "has " + std::to_string(inputs.size()) + (inputs.size() == 1 ? " input" : " inputs") + " but needs " +
                (merge->min_inputs == merge->max_inputs ? "exactly " + std::to_string(merge->min_inputs)
                                                        : "at least " + std::to_string(merge->min_inputs)));
    } else if (find_layer_def(node.type) != nullptr) {
      if (inputs.size() != 1) {
        std::vector<std::string> sources;
        sources.reserve(inputs.size());
        for (size_t s : inputs) sources.push_back(graph.nodes[s].id);
        throw LayerSpecError(node.id, node.type, "",
                             inputs.empty()
                                 ? "has no input; connect the Input or another layer to it"
                                 : "has " + std::to_string(inputs.size()) + " inputs (from " + quoted_list(sources) +
                                       ") but takes exactly one; combine them first with a merge node (Add, Concat, "
                                       "Multiply, Subtract, Mean or Stack)");
      }
    } else {
      throw LayerSpecError(node.id, node.type, "", "unknown layer type");
    }
  }

  for (size_t i : order)
    if (!is_boundary(graph, i)) wiring.order.push_back(i);
  return wiring;
}

}  // namespace codefy::model
