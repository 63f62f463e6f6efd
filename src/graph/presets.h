// Presets: a node of type `preset:<Name>` stands for a small subgraph.
#pragma once

#include "graph/graph.h"

#include <map>
#include <string>

namespace codefy::graph {

/// One preset definition (CodefyUI's presets/*.json shape).
struct PresetDef {
  std::string name;
  json definition;
};

/// The presets shipped with Codefy, by name ("Training Pipeline").
const std::map<std::string, PresetDef>& builtin_presets();

/// Replaces every `preset:<Name>` node by its internal nodes and rewires the
/// edges through the exposed ports. Internal node ids are `<preset id>__<internal id>` (as CodefyUI names them);
/// `internalParams` override the preset's defaults. Unknown presets are left
/// in place (validation then reports an unknown node type).
Graph expand_presets(const Graph& g);

}  // namespace codefy::graph
