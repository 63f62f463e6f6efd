#include "graph/presets.h"

namespace codefy {
const std::vector<std::pair<std::string, std::string>>& embedded_files();
}

namespace codefy::graph {

namespace {

constexpr const char* kPresetPrefix = "preset:";

std::string internal_id(const std::string& preset_node, const std::string& internal) {
  return preset_node + "__" + internal;  // CodefyUI's spelling
}

const json* find_exposed(const json& def, const char* key, const std::string& name) {
  auto it = def.find(key);
  if (it == def.end() || !it->is_array()) return nullptr;
  const json& list = *it;
  for (const auto& e : list)
    if (e.value("name", "") == name) return &e;
  return nullptr;
}

}  // namespace

const std::map<std::string, PresetDef>& builtin_presets() {
  static const std::map<std::string, PresetDef> presets = [] {
    std::map<std::string, PresetDef> m;
    for (const auto& [file, text] : embedded_files()) {
      json j = json::parse(text);
      const std::string name = j.value("preset_name", file);
      m[name] = PresetDef{name, std::move(j)};
    }
    return m;
  }();
  return presets;
}

Graph expand_presets(const Graph& g) {
  const auto& presets = builtin_presets();
  Graph out = g;
  out.nodes.clear();
  out.edges.clear();
  std::map<std::string, const json*> expanded;  // preset node id -> definition
  for (const auto& n : g.nodes) {
    if (n.type.rfind(kPresetPrefix, 0) != 0) {
      out.nodes.push_back(n);
      continue;
    }
    auto it = presets.find(n.type.substr(std::string(kPresetPrefix).size()));
    if (it == presets.end()) {
      out.nodes.push_back(n);  // validation reports the unknown type
      continue;
    }
    const json& def = it->second.definition;
    expanded[n.id] = &def;
    for (const auto& in : def.value("nodes", json::array())) {
      NodeSpec spec;
      const std::string iid = in.value("id", "");
      spec.id = internal_id(n.id, iid);
      spec.type = in.value("type", "");
      spec.params = in.value("params", json::object());
      if (auto p = n.internal_params.find(iid); p != n.internal_params.end() && p->is_object()) spec.params.update(*p);
      spec.preset_id = n.id;
      spec.raw = {{"id", spec.id}, {"type", spec.type}};
      out.nodes.push_back(std::move(spec));
    }
    int k = 0;
    for (const auto& ie : def.value("edges", json::array())) {
      EdgeSpec e;
      e.id = internal_id(n.id, ie.value("id", "e" + std::to_string(k++)));
      e.source = internal_id(n.id, ie.value("source", ""));
      e.target = internal_id(n.id, ie.value("target", ""));
      e.source_handle = ie.value("sourceHandle", "");
      e.target_handle = ie.value("targetHandle", "");
      out.edges.push_back(std::move(e));
    }
  }
  for (const auto& e : g.edges) {
    auto ts = expanded.find(e.target);
    auto ss = expanded.find(e.source);
    if (ts == expanded.end() && ss == expanded.end()) {
      out.edges.push_back(e);
      continue;
    }
    if (e.kind == EdgeKind::kTrigger && ts != expanded.end()) {
      // A trigger into a preset enables every node inside it.
      int k = 0;
      for (const auto& in : ts->second->value("nodes", json::array())) {
        EdgeSpec t = e;
        t.id = e.id + "#" + std::to_string(k++);
        t.target = internal_id(e.target, in.value("id", ""));
        out.edges.push_back(std::move(t));
      }
      continue;
    }
    EdgeSpec r = e;
    if (ts != expanded.end()) {
      if (const json* x = find_exposed(*ts->second, "exposed_inputs", e.target_handle)) {
        r.target = internal_id(e.target, x->value("internal_node", ""));
        r.target_handle = x->value("internal_port", "");
      }
    }
    if (ss != expanded.end()) {
      if (const json* x = find_exposed(*ss->second, "exposed_outputs", e.source_handle)) {
        r.source = internal_id(e.source, x->value("internal_node", ""));
        r.source_handle = x->value("internal_port", "");
      }
    }
    out.edges.push_back(std::move(r));
  }
  return out;
}

}  // namespace codefy::graph
