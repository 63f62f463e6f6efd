// The layer catalogue: every layer and merge type of the layer table as data
// an editor can offer (category, params with type, default and limits), in
// the shape of CodefyUI's layer palette (LAYER_DEFS in its LayersEditorModal),
// whose params are /api/nodes' ParamDefinition.
#pragma once

#include "graph/types.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace codefy::model {

/// One layer or merge type as an editor shows it.
struct LayerTypeInfo {
  std::string type;      ///< "Conv2d"
  std::string category;  ///< CodefyUI's palette group: "Convolution", "Pooling", ..., "Merge"
  bool merge = false;    ///< a merge (several inputs, no weights) rather than a layer
  size_t min_inputs = 1, max_inputs = 1;
  /// In the layer table's order. `required` params have no default in
  /// PyTorch; their `default_value` is what a new layer starts with
  /// (CodefyUI's palette values). The others' `default_value` is PyTorch's,
  /// used when the param is absent (null where PyTorch's is None).
  std::vector<graph::ParamDef> params;
};

/// Every type of layer_defs() then merge_defs(), in that order.
const std::vector<LayerTypeInfo>& layer_catalog();

/// The parameters of layer or merge `type`, as the catalogue defines them:
/// the one definition of their names and defaults, which the layer table's
/// builders read through LayerParams. Throws std::logic_error for a type the
/// catalogue lacks (a layer table entry without its catalogue entry).
const std::vector<graph::ParamDef>& layer_param_defs(const std::string& type);

/// The catalogue as GET /api/layers answers it: a list of
/// {type, category, kind: "layer"|"merge", min_inputs, max_inputs (null: any),
///  params: [{name, param_type, default, description, options, min_value,
///  max_value, required}]}.
nlohmann::json layer_catalog_json();

}  // namespace codefy::model
