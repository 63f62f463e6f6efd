// The exporters' shared reading of a spec and their literals.
#include "model/export_code.h"

#include "model/layer_catalog.h"
#include "model/layer_spec_error.h"
#include "model/modules.h"
#include "model/params.h"
#include "util/text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

namespace codefy::model::export_code {

namespace {

const std::set<std::string>& python_keywords() {
  static const std::set<std::string> words = {
      "False",    "None",   "True",  "and",  "as",     "assert",   "async",   "await", "break", "class",
      "continue", "def",    "del",   "elif", "else",   "except",   "finally", "for",   "from",  "global",
      "if",       "import", "in",    "is",   "lambda", "nonlocal", "not",     "or",    "pass",  "raise",
      "return",   "try",    "while", "with", "yield",  "match",    "case",    "print", "exec"};
  return words;
}

/// Names the generated code uses itself, which a node's variable must not shadow.
const std::set<std::string>& reserved_names() {
  static const std::set<std::string> names = {"x",    "self",     "torch",   "nn",    "math",  "Tensor",
                                              "List", "Optional", "Tuple",   "int",   "float", "bool",
                                              "str",  "layers",   "getattr", "super", "range", "len"};
  return names;
}

/// `id` as an identifier: other characters become '_', a leading digit or a
/// clash with a keyword or reserved name gets a prefix.
std::string variable_for(const std::string& id) {
  std::string name;
  for (char c : id) name += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  // A leading '_' is kept for the exporters' own temporaries.
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) || name[0] == '_' ||
      python_keywords().count(name) || reserved_names().count(name))
    name = "n_" + name;
  return name;
}

}  // namespace

ExportGraph read_export_graph(const nlohmann::json& spec) {
  ExportGraph out;
  out.graph = parse_layer_spec(spec);
  out.wiring = connect_layers(out.graph);
  std::set<std::string> taken;
  out.names.resize(out.graph.nodes.size());
  for (size_t i = 0; i < out.graph.nodes.size(); ++i) {
    if (i == out.graph.output) continue;
    std::string name = i == out.graph.input ? "x" : variable_for(out.graph.nodes[i].id);
    const std::string base = name;
    for (int n = 2; taken.count(name); ++n) name = base + "_" + std::to_string(n);
    taken.insert(name);
    out.names[i] = name;
  }
  return out;
}

bool is_identifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return !python_keywords().count(name);
}

std::string float_literal(double value) {
  if (std::isnan(value)) return "float(\"nan\")";
  if (std::isinf(value)) return value > 0 ? "float(\"inf\")" : "-float(\"inf\")";
  // The shortest of %.15g..%.17g that reads back exactly.
  char text[64];
  for (int digits = 15; digits <= 17; ++digits) {
    std::snprintf(text, sizeof(text), "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  std::string out = text;
  if (out.find_first_of(".eEn") == std::string::npos) out += ".0";
  return out;
}

std::string bool_literal(bool value) { return value ? "True" : "False"; }

std::string int_list(const std::vector<int64_t>& values) {
  std::vector<std::string> items;
  items.reserve(values.size());
  for (int64_t v : values) items.push_back(std::to_string(v));
  return "[" + util::join(items, ", ") + "]";
}

std::string string_literal(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", u);
      out += escaped;
    } else {
      out += c;  // UTF-8 passes through: both languages read UTF-8 source.
    }
  }
  return out + "\"";
}

std::optional<std::string> shape_layer_expression(const std::string& type, const torch::nn::Module& module,
                                                  const std::string& in) {
  if (type == "Reshape") {
    const auto& m = dynamic_cast<const ReshapeImpl&>(module);
    std::vector<std::string> sizes{in + ".size(0)"};
    for (int64_t s : m.shape()) sizes.push_back(std::to_string(s));
    return in + ".reshape([" + util::join(sizes, ", ") + "])";
  }
  if (type == "SelectIndex") {
    const auto& m = dynamic_cast<const SelectIndexImpl&>(module);
    return in + ".select(" + std::to_string(m.dim()) + ", " + std::to_string(m.index()) + ")";
  }
  if (type == "Permute") return in + ".permute(" + int_list(dynamic_cast<const PermuteImpl&>(module).dims()) + ")";
  if (type == "Chomp1d") {
    const int64_t chomp = dynamic_cast<const Chomp1dImpl&>(module).chomp_size();
    return in + "[:, :, :" + in + ".size(2) - " + std::to_string(chomp) + "].contiguous()";
  }
  return std::nullopt;
}

std::string merge_expression(const SpecNode& node, const std::vector<std::string>& inputs) {
  const MergeDef* def = find_merge_def(node.type);
  if (def == nullptr) throw LayerSpecError(node.id, node.type, "", "is not a merge");
  const LayerParams params(node.id, node.type, &node.params, layer_param_defs(node.type));
  const std::string list = "[" + util::join(inputs, ", ") + "]";
  if (node.type == "Add") return util::join(inputs, " + ");
  if (node.type == "Multiply") return util::join(inputs, " * ");
  if (node.type == "Subtract") return inputs.at(0) + " - " + inputs.at(1);
  if (node.type == "Mean") return "torch.stack(" + list + ", 0).mean(0)";
  if (node.type == "Concat") return "torch.cat(" + list + ", " + std::to_string(params.integer_or_default("dim")) + ")";
  if (node.type == "Stack")
    return "torch.stack(" + list + ", " + std::to_string(params.integer_or_default("dim")) + ")";
  throw LayerSpecError(node.id, node.type, "", "this merge has no export code yet");
}

}  // namespace codefy::model::export_code
