#include "graph/validate.h"

#include "graph/plan.h"

#include <cmath>
#include <map>
#include <sstream>
#include <unordered_map>

namespace codefy::graph {

std::string Issue::to_string() const {
  std::ostringstream s;
  s << "graph \"" << graph << "\"";
  if (!node_id.empty()) {
    s << ": node " << node_id;
    if (!node_type.empty()) s << " (" << node_type << ")";
  }
  if (!field.empty()) s << ", " << field;
  s << ": " << message;
  return s.str();
}

namespace {

std::string join_issues(const std::vector<Issue>& issues) {
  std::string s = std::to_string(issues.size()) + (issues.size() == 1 ? " problem" : " problems") + " in the graph:";
  for (const auto& i : issues) s += "\n  - " + i.to_string();
  return s;
}

std::string describe(const json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

std::string format_number(double d) {
  std::ostringstream s;
  s << d;
  return s.str();
}

}  // namespace

ValidationError::ValidationError(std::vector<Issue> issues) : Error(join_issues(issues)), issues_(std::move(issues)) {}

std::string check_param_value(const ParamDef& def, const json& v) {
  std::optional<double> number;
  switch (def.type) {
    case ParamType::kInt:
      if (v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>())) {
        number = v.get<double>();
      } else {
        return "expected an integer, got " + describe(v);
      }
      break;
    case ParamType::kFloat:
      if (!v.is_number()) return "expected a number, got " + describe(v);
      number = v.get<double>();
      if (!std::isfinite(*number)) return "expected a finite number, got " + describe(v);
      break;
    case ParamType::kBool:
      if (!v.is_boolean()) return "expected true or false, got " + describe(v);
      break;
    case ParamType::kSelect: {
      if (!v.is_string()) return "expected one of the options, got " + describe(v);
      if (def.open_options) break;
      const auto s = v.get<std::string>();
      bool found = false;
      for (const auto& o : def.options) found = found || o == s;
      if (!found) {
        std::string list;
        for (const auto& o : def.options) list += (list.empty() ? "" : ", ") + o;
        return "\"" + s + "\" is not one of the options (" + list + ")";
      }
      break;
    }
    case ParamType::kString:
    case ParamType::kModelFile:
    case ParamType::kDataFile:
      if (!v.is_string()) return "expected a string, got " + describe(v);
      if (def.required && v.get<std::string>().empty()) return "must not be empty";
      break;
    case ParamType::kTensorGrid: {
      // A list, or the text of one (what an editor without a grid widget sends).
      const json list = v.is_string() ? json::parse(v.get<std::string>(), nullptr, false) : v;
      if (!list.is_array()) return "expected a nested list of numbers, got " + describe(v);
      break;
    }
  }
  if (number) {
    if (def.min_value && *number < *def.min_value)
      return "value " + format_number(*number) + " is below the minimum " + format_number(*def.min_value);
    if (def.max_value && *number > *def.max_value)
      return "value " + format_number(*number) + " is above the maximum " + format_number(*def.max_value);
  }
  return "";
}

const std::map<std::string, std::string>& unavailable_node_types() {
  static const std::map<std::string, std::string> table = {
      {"HuggingFaceDataset",
       "it downloads its dataset from the Hugging Face Hub and reads it with the Python datasets library"},
      {"KaggleDataset", "it downloads its dataset from Kaggle with the Python kaggle client and an API key"},
      {"EnvWrapper", "it wraps a Gymnasium environment, a Python-only library"},
      {"WordVector", "its pre-trained GloVe vectors are downloaded at run time"},
      {"HFTextGenerate", "it downloads a Hugging Face language model and runs it with the Python transformers library"},
      {"LLMChat", "it sends the prompt to a language-model service over the network"},
      {"TextEmbedding", "it downloads a sentence-transformers model, a Python-only library"},
      {"PythonScript", "it runs Python code, and Codefy has no Python interpreter"},
  };
  return table;
}

std::vector<Issue> validate(const Graph& g, const NodeCatalog& catalog) { return validate(g, catalog, make_plan(g)); }

std::vector<Issue> validate(const Graph& g, const NodeCatalog& catalog, const Plan& plan) {
  std::vector<Issue> issues;
  auto add = [&](const NodeSpec* n, std::string field, std::string message) {
    issues.push_back({g.name, n ? n->id : "", n ? n->type : "", std::move(field), std::move(message)});
  };

  bool has_start = false;
  for (const auto& n : g.nodes) has_start = has_start || n.type == "Start";
  if (!has_start) add(nullptr, "", "no Start node: connect a Start node's trigger to the first node to run");

  // Nodes by id, looked up once per edge: linear in the graph's size, where
  // a search per edge (Graph::node) made large graphs quadratic.
  std::unordered_map<std::string, const NodeSpec*> by_id;
  by_id.reserve(g.nodes.size());
  for (const auto& n : g.nodes) by_id.emplace(n.id, &n);
  const auto node = [&](const std::string& id) -> const NodeSpec* {
    const auto it = by_id.find(id);
    return it == by_id.end() ? nullptr : it->second;
  };

  // Edges: endpoints, ports, types. Only edges between nodes that run matter
  // for ports and types; a dangling edge is always an error.
  std::unordered_map<std::string, std::map<std::string, int>> fed;  // node -> input port -> count
  for (const auto& e : g.edges) {
    const NodeSpec* s = node(e.source);
    const NodeSpec* t = node(e.target);
    if (!s) add(t, "edge " + e.id, "source node \"" + e.source + "\" does not exist");
    if (!t) add(s, "edge " + e.id, "target node \"" + e.target + "\" does not exist");
    if (!s || !t || e.kind == EdgeKind::kTrigger) continue;
    if (!plan.contains(t->id)) continue;
    const NodeDef* sd = catalog.find(s->type);
    const NodeDef* td = catalog.find(t->type);
    const std::optional<PortDef> out = sd ? sd->output_for(e.source_handle, s->params) : std::nullopt;
    const PortDef* in = td ? td->input(e.target_handle) : nullptr;
    if (sd && !out)
      add(s, "output \"" + e.source_handle + "\"", "edge " + e.id + " leaves from an output this node does not have");
    if (td && !in)
      add(t, "input \"" + e.target_handle + "\"", "edge " + e.id + " arrives at an input this node does not have");
    if (out && in && !is_compatible(out->type, in->type))
      add(t, "input \"" + in->name + "\"",
          std::string("type mismatch: ") + to_string(in->type) + " expected, but edge " + e.id + " brings " +
              to_string(out->type) + " from " + s->id + " (" + s->type + ")." + out->name);
    if (in) ++fed[t->id][in->name];
  }

  for (const auto& n : g.nodes) {
    if (!plan.contains(n.id)) continue;
    const NodeDef* def = catalog.find(n.type);
    if (!def) {
      const auto& unavailable = unavailable_node_types();
      const auto why = unavailable.find(n.type);
      if (why != unavailable.end())
        add(&n, "", "\"" + n.type + "\" is unavailable in Codefy: " + why->second);
      else
        add(&n, "", "unknown node type \"" + n.type + "\"");
      continue;
    }
    for (const auto& in : def->inputs) {
      const auto fed_node = fed.find(n.id);
      const auto fed_port = fed_node == fed.end() ? nullptr : &fed_node->second;
      const int count = fed_port && fed_port->count(in.name) ? fed_port->at(in.name) : 0;
      if (count == 0 && !in.optional) add(&n, "input \"" + in.name + "\"", "required input is not connected");
      if (count > 1) add(&n, "input \"" + in.name + "\"", std::to_string(count) + " edges arrive at one input");
    }
    for (auto it = n.params.begin(); it != n.params.end(); ++it) {
      const ParamDef* p = def->param(it.key());
      if (!p) continue;                    // CodefyUI keeps params of other versions; ignored, kept on save
      if (it.value().is_null()) continue;  // null means "use the default"
      std::string problem = check_param_value(*p, it.value());
      if (!problem.empty()) add(&n, "param \"" + p->name + "\"", problem);
    }
    for (const auto& p : def->params)
      if (p.required && !n.params.contains(p.name) && (p.default_value.is_null() || p.default_value == ""))
        add(&n, "param \"" + p.name + "\"", "required parameter is missing");
  }

  for (const auto& id : plan.cyclic) {
    const NodeSpec* n = node(id);
    add(n, "", "is part of a cycle: the nodes that run must form a directed acyclic graph");
  }
  return issues;
}

json issues_json(const std::vector<Issue>& issues) {
  json a = json::array();
  for (const auto& i : issues)
    a.push_back({{"graph", i.graph},
                 {"node_id", i.node_id},
                 {"node_type", i.node_type},
                 {"field", i.field},
                 {"message", i.message}});
  return a;
}

}  // namespace codefy::graph
