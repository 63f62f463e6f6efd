// What the two export forms (model/export_source.h: a PyTorch model.py;
// model/export_torchscript.h: a TorchScript module) share: the spec read
// into evaluation order with a variable name per node, the code of the
// layers that have no weights and of the merges (the same text in Python and
// TorchScript), and how literals are written.
#pragma once

#include "model/layer_spec.h"

#include <torch/version.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace codefy::model::export_code {

/// A spec as the exporters read it.
struct ExportGraph {
  LayerGraph graph;
  Wiring wiring;
  /// Per node, the variable its output goes in: an identifier made from the
  /// node id ("x" for the Input), unique, never a keyword or a name the
  /// generated code uses itself.
  std::vector<std::string> names;
};

/// The alternative T of one of LibTorch's option variants (a convolution's
/// padding, a transformer's activation), or nullptr: c10::variant up to
/// LibTorch 2.0, std::variant since 2.1.
template <class T, class Variant>
const T* variant_if(const Variant& v) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  return std::get_if<T>(&v);
#else
  return c10::get_if<T>(&v);
#endif
}

/// Parses and connects `spec` (the checks build_sequential_model makes of the
/// wiring). Throws LayerSpecError.
ExportGraph read_export_graph(const nlohmann::json& spec);

/// Whether `name` can be written as a Python (and TorchScript) attribute or
/// variable: letters, digits and '_', not starting with a digit, no keyword.
bool is_identifier(const std::string& name);

/// A float literal that reads back as the same double ("0.1", "1e-05", "2.0").
std::string float_literal(double value);
/// "True" or "False".
std::string bool_literal(bool value);
/// `[1, 2]`.
std::string int_list(const std::vector<int64_t>& values);
/// A double-quoted string literal.
std::string string_literal(const std::string& text);

/// The expression computing a layer without weights whose code is the same in
/// Python and TorchScript (Reshape, SelectIndex, Permute, Chomp1d), from its
/// built module; nullopt for other layers. `in` is the input's variable.
std::optional<std::string> shape_layer_expression(const std::string& type, const torch::nn::Module& module,
                                                  const std::string& in);

/// The expression of merge node `node` over its inputs' variables, in edge-list order.
std::string merge_expression(const SpecNode& node, const std::vector<std::string>& inputs);

}  // namespace codefy::model::export_code
