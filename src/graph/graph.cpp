#include "graph/graph.h"

#include "util/atomic_file.h"
#include "util/json_input.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <unordered_set>

namespace codefy::graph {

namespace {

struct TypeName {
  DataType type;
  const char* name;
};
constexpr TypeName kDataTypes[] = {
    {DataType::kTensor, "TENSOR"},       {DataType::kModel, "MODEL"},
    {DataType::kDataset, "DATASET"},     {DataType::kDataLoader, "DATALOADER"},
    {DataType::kOptimizer, "OPTIMIZER"}, {DataType::kLossFn, "LOSS_FN"},
    {DataType::kScalar, "SCALAR"},       {DataType::kString, "STRING"},
    {DataType::kImage, "IMAGE"},         {DataType::kList, "LIST"},
    {DataType::kTransform, "TRANSFORM"}, {DataType::kAny, "ANY"},
    {DataType::kTrigger, "TRIGGER"},
};

std::string string_field(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<long long>());
  throw GraphFormatError(where + ": \"" + key + "\" must be a string");
}

}  // namespace

const char* to_string(DataType t) {
  for (const auto& e : kDataTypes)
    if (e.type == t) return e.name;
  return "ANY";
}

const char* to_string(ParamType t) {
  switch (t) {
    case ParamType::kInt: return "int";
    case ParamType::kFloat: return "float";
    case ParamType::kString: return "string";
    case ParamType::kBool: return "bool";
    case ParamType::kSelect: return "select";
    case ParamType::kModelFile: return "model_file";
    case ParamType::kDataFile: return "data_file";
    case ParamType::kTensorGrid: return "tensor_grid";
  }
  return "string";
}

std::optional<DataType> data_type_from_string(const std::string& s) {
  for (const auto& e : kDataTypes)
    if (s == e.name) return e.type;
  return std::nullopt;
}

bool is_compatible(DataType source, DataType target) {
  if (source == DataType::kTrigger || target == DataType::kTrigger)
    return source == DataType::kTrigger && target == DataType::kTrigger;
  if (source == target || target == DataType::kAny || source == DataType::kAny) return true;
  return source == DataType::kImage && target == DataType::kTensor;
}

json type_rules_json() {
  json names = json::array();
  json compatible = json::object();
  for (const auto& s : kDataTypes) {
    names.push_back(s.name);
    json targets = json::array();
    for (const auto& t : kDataTypes)
      if (is_compatible(s.type, t.type)) targets.push_back(t.name);
    compatible[s.name] = std::move(targets);
  }
  return {{"data_types", std::move(names)}, {"compatible", std::move(compatible)}};
}

const PortDef* NodeDef::input(const std::string& port) const {
  for (const auto& p : inputs)
    if (p.name == port) return &p;
  return nullptr;
}
const PortDef* NodeDef::output(const std::string& port) const {
  for (const auto& p : outputs)
    if (p.name == port) return &p;
  return nullptr;
}
std::optional<PortDef> NodeDef::output_for(const std::string& port, const json& params) const {
  if (const PortDef* p = output(port)) return *p;
  if (!output_family || port.rfind(output_family->prefix, 0) != 0) return std::nullopt;
  const std::string digits = port.substr(output_family->prefix.size());
  if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos ||
      (digits.size() > 1 && digits[0] == '0'))
    return std::nullopt;
  const ParamDef* count_def = param(output_family->count_param);
  double count = count_def && count_def->default_value.is_number() ? count_def->default_value.get<double>() : 0;
  if (params.contains(output_family->count_param) && params.at(output_family->count_param).is_number())
    count = params.at(output_family->count_param).get<double>();
  if (count_def && count_def->min_value) count = std::max(count, *count_def->min_value);
  if (count_def && count_def->max_value) count = std::min(count, *count_def->max_value);
  const int index = std::stoi(digits);
  if (index >= count) return std::nullopt;
  return PortDef{port, output_family->type, "Output " + digits, false};
}

const ParamDef* NodeDef::param(const std::string& n) const {
  for (const auto& p : params)
    if (p.name == n) return &p;
  return nullptr;
}

bool NodeDef::wants_ranks(const json& params) const {
  if (ranks_when.param.empty()) return false;
  const auto it = params.find(ranks_when.param);
  return it != params.end() && it->is_string() && it->get<std::string>() == ranks_when.value;
}

json to_json(const NodeDef& def) {
  auto ports = [](const std::vector<PortDef>& v) {
    json a = json::array();
    for (const auto& p : v)
      a.push_back({{"name", p.name},
                   {"data_type", to_string(p.type)},
                   {"description", p.description},
                   {"optional", p.optional}});
    return a;
  };
  json params = json::array();
  for (const auto& p : def.params) {
    json j = {{"name", p.name},
              {"param_type", to_string(p.type)},
              {"default", p.default_value},
              {"description", p.description},
              {"options", p.options},
              {"min_value", p.min_value ? json(*p.min_value) : json()},
              {"max_value", p.max_value ? json(*p.max_value) : json()}};
    if (p.advanced) j["advanced"] = true;
    if (p.open_options) j["open_options"] = true;  // options are suggestions (device strings); CodefyUI ignores it
    params.push_back(std::move(j));
  }
  json j = {{"node_name", def.name},       {"category", def.category},      {"description", def.description},
            {"inputs", ports(def.inputs)}, {"outputs", ports(def.outputs)}, {"params", std::move(params)}};
  if (def.output_family)  // CodefyUI's editor knows Split's by name; ours reads this
    j["output_family"] = {{"prefix", def.output_family->prefix},
                          {"count_param", def.output_family->count_param},
                          {"data_type", to_string(def.output_family->type)}};
  return j;
}

const NodeSpec* Graph::node(const std::string& id) const {
  for (const auto& n : nodes)
    if (n.id == id) return &n;
  return nullptr;
}
NodeSpec* Graph::node(const std::string& id) {
  for (auto& n : nodes)
    if (n.id == id) return &n;
  return nullptr;
}

Graph graph_from_json(const json& j, const std::string& source) {
  if (!j.is_object()) throw GraphFormatError(source + ": a graph must be a JSON object");
  Graph g;
  g.raw = j;
  g.name = string_field(j, "name", source);
  if (g.name.empty()) g.name = source;
  g.description = string_field(j, "description", source);
  const json empty = json::array();
  const json& nodes = j.contains("nodes") ? j.at("nodes") : empty;
  const json& edges = j.contains("edges") ? j.at("edges") : empty;
  if (!nodes.is_array()) throw GraphFormatError(source + ": \"nodes\" must be an array");
  if (!edges.is_array()) throw GraphFormatError(source + ": \"edges\" must be an array");
  if (nodes.size() > kMaxNodes)
    throw GraphFormatError(source + ": the graph has " + std::to_string(nodes.size()) + " nodes; at most " +
                           std::to_string(kMaxNodes) + " are allowed");
  if (edges.size() > kMaxEdges)
    throw GraphFormatError(source + ": the graph has " + std::to_string(edges.size()) + " edges; at most " +
                           std::to_string(kMaxEdges) + " are allowed");
  std::unordered_set<std::string> ids;  // a set, not a search per node: a large graph is read in linear time
  g.nodes.reserve(nodes.size());
  g.edges.reserve(edges.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const json& n = nodes[i];
    const std::string where = source + ": nodes[" + std::to_string(i) + "]";
    if (!n.is_object()) throw GraphFormatError(where + " must be an object");
    NodeSpec spec;
    spec.raw = n;
    spec.id = string_field(n, "id", where);
    spec.type = string_field(n, "type", where);
    if (spec.id.empty()) throw GraphFormatError(where + " has no \"id\"");
    if (spec.type.empty()) throw GraphFormatError(where + " (id " + spec.id + ") has no \"type\"");
    if (!ids.insert(spec.id).second) throw GraphFormatError(source + ": two nodes have the id \"" + spec.id + "\"");
    if (auto d = n.find("data"); d != n.end() && !d->is_null()) {
      if (!d->is_object()) throw GraphFormatError(where + " (id " + spec.id + "): \"data\" must be an object");
      if (auto p = d->find("params"); p != d->end() && !p->is_null()) {
        if (!p->is_object()) throw GraphFormatError(where + " (id " + spec.id + "): \"data.params\" must be an object");
        spec.params = *p;
      }
      if (auto p = d->find("internalParams"); p != d->end() && !p->is_null()) {
        if (!p->is_object())
          throw GraphFormatError(where + " (id " + spec.id + "): \"data.internalParams\" must be an object");
        spec.internal_params = *p;
      }
    }
    g.nodes.push_back(std::move(spec));
  }
  for (size_t i = 0; i < edges.size(); ++i) {
    const json& e = edges[i];
    const std::string where = source + ": edges[" + std::to_string(i) + "]";
    if (!e.is_object()) throw GraphFormatError(where + " must be an object");
    EdgeSpec spec;
    spec.raw = e;
    spec.id = string_field(e, "id", where);
    if (spec.id.empty()) spec.id = "edges[" + std::to_string(i) + "]";
    spec.source = string_field(e, "source", where);
    spec.target = string_field(e, "target", where);
    spec.source_handle = string_field(e, "sourceHandle", where);
    spec.target_handle = string_field(e, "targetHandle", where);
    const std::string kind = string_field(e, "type", where);
    // CodefyUI marks trigger edges by type, and older files only by handle.
    spec.kind = (kind == "trigger" || spec.source_handle == "trigger") ? EdgeKind::kTrigger : EdgeKind::kData;
    if (spec.source.empty() || spec.target.empty())
      throw GraphFormatError(where + " (id " + spec.id + ") needs \"source\" and \"target\"");
    g.edges.push_back(std::move(spec));
  }
  return g;
}

Graph parse_graph(const std::string& text, const std::string& source) {
  json j;
  try {
    j = util::parse_json(text);
  } catch (const util::JsonInputError& e) {
    throw GraphFormatError(source + ": not valid JSON (" + e.what() + ")");
  }
  return graph_from_json(j, source);
}

Graph load_graph_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw GraphFormatError(path.string() + ": cannot open the graph file");
  std::stringstream ss;
  ss << in.rdbuf();
  Graph g = parse_graph(ss.str(), path.string());
  g.base_dir = std::filesystem::absolute(path).parent_path();
  return g;
}

json to_json(const Graph& g) {
  json j = g.raw.is_object() ? g.raw : json::object();
  j["name"] = g.name;
  if (!g.description.empty() || j.contains("description")) j["description"] = g.description;
  json nodes = json::array();
  for (const auto& n : g.nodes) {
    json nj = n.raw.is_object() ? n.raw : json::object();
    nj["id"] = n.id;
    nj["type"] = n.type;
    json& data = nj["data"];
    if (!data.is_object()) data = json::object();
    data["params"] = n.params;
    if (!n.internal_params.empty() || data.contains("internalParams")) data["internalParams"] = n.internal_params;
    nodes.push_back(std::move(nj));
  }
  json edges = json::array();
  for (const auto& e : g.edges) {
    json ej = e.raw.is_object() ? e.raw : json::object();
    ej["id"] = e.id;
    ej["source"] = e.source;
    ej["target"] = e.target;
    if (!e.source_handle.empty()) ej["sourceHandle"] = e.source_handle;
    if (!e.target_handle.empty()) ej["targetHandle"] = e.target_handle;
    if (e.kind == EdgeKind::kTrigger) ej["type"] = "trigger";
    edges.push_back(std::move(ej));
  }
  j["nodes"] = std::move(nodes);
  j["edges"] = std::move(edges);
  return j;
}

void save_graph_file(const Graph& g, const std::filesystem::path& path) {
  util::write_file_atomic(path, to_json(g).dump(2) + "\n");
}

}  // namespace codefy::graph
