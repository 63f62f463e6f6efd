// A SequentialModel's layer spec written out as plain PyTorch source: a
// standalone model.py whose module has the parameter names of Codefy's state
// dict, so the weights Codefy saved load into it with torch.load and
// load_state_dict (strict), without Codefy. The TorchScript form is
// model/export_torchscript.h.
#pragma once

#include "model/layer_spec_error.h"

#include <nlohmann/json.hpp>

#include <string>

namespace codefy::model {

/// A layer, or a spec, that an export form cannot write: names the layer id
/// and type (empty when the spec as a whole is at fault) and says why.
class ExportError : public LayerSpecError {
 public:
  using LayerSpecError::LayerSpecError;
};

/// The source of a model.py for a v2 layer spec (a JSON object, or the JSON
/// string CodefyUI stores): `import torch`, `from torch import nn`, the
/// wrapper classes the spec's LSTM, GRU, attention and transformer layers
/// need, and `class <class_name>(nn.Module)` whose `layers` ModuleDict holds
/// each layer with weights under its node id (`layers.<id>.weight`, as
/// Codefy's state dict) and whose forward runs the layer graph as Codefy
/// does. Every layer type of the layer table has code. Throws LayerSpecError
/// for a spec Codefy can't build, ExportError for a class name that is not a
/// Python identifier. Builds each layer once to read its options, leaving
/// LibTorch's global random generator as it found it.
std::string pytorch_source(const nlohmann::json& spec, const std::string& class_name = "Model");

}  // namespace codefy::model
