#include "engine/graph_contract.h"

#include "engine/value.h"
#include "util/image_size.h"

#include <torch/torch.h>

#include <cmath>
#include <regex>
#include <set>
#include <stdexcept>

namespace codefy {

namespace {

const char* json_type_of(const nlohmann::json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

std::string param_text(const nlohmann::json& params, const char* key, const char* fallback) {
  if (!params.contains(key)) return fallback;
  const auto& v = params.at(key);
  return v.is_string() ? v.get<std::string>() : v.dump();
}

/// Names a caller can write in JSON, a URL and a command line alike.
bool valid_contract_name(const std::string& name) {
  static const std::regex pattern("^[a-zA-Z_][a-zA-Z0-9_]{0,63}$");
  return std::regex_match(name, pattern);
}

template <typename Entry>
void check_contract_names(const std::vector<Entry>& entries, const std::string& kind,
                          std::vector<std::string>& problems) {
  std::set<std::string> seen;
  for (const auto& e : entries) {
    if (e.name.empty())
      problems.push_back(kind + " node '" + e.node_id + "' has an empty name");
    else if (!valid_contract_name(e.name))
      problems.push_back(kind + " name '" + e.name + "' (node '" + e.node_id +
                         "') is invalid: it must match ^[a-zA-Z_][a-zA-Z0-9_]{0,63}$");
    if (!seen.insert(e.name).second) problems.push_back("duplicate " + kind + " name '" + e.name + "'");
  }
}

/// A tensor's values as nested JSON lists, as PyTorch's tolist() writes them.
nlohmann::json tensor_values(const torch::Tensor& t) {
  if (t.dim() == 0) {
    if (t.scalar_type() == torch::kBool) return t.item<bool>();
    if (c10::isFloatingType(t.scalar_type())) {
      const double d = t.item<double>();
      return std::isfinite(d) ? nlohmann::json(d) : nlohmann::json(nullptr);
    }
    return t.item<int64_t>();
  }
  nlohmann::json a = nlohmann::json::array();
  for (int64_t i = 0; i < t.size(0); ++i) a.push_back(tensor_values(t[i]));
  return a;
}

nlohmann::json output_json(const Value& v) {
  if (const auto* t = std::get_if<torch::Tensor>(&v)) {
    if (!t->defined() || t->numel() > kMaxOutputElements || c10::isComplexType(t->scalar_type())) {
      nlohmann::json s = summarize(v);
      if (t->defined() && t->numel() > kMaxOutputElements)
        s["note"] = "more than " + std::to_string(kMaxOutputElements) + " elements: summarized, not written out";
      return s;
    }
    const torch::Tensor host = t->detach().to(torch::kCPU);
    return tensor_values(c10::isFloatingType(host.scalar_type()) ? host.to(torch::kFloat64) : host);
  }
  if (const auto* d = std::get_if<double>(&v)) return std::isfinite(*d) ? nlohmann::json(*d) : nlohmann::json(nullptr);
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* i = std::get_if<Image>(&v)) return i->base64_png;
  if (const auto* j = std::get_if<nlohmann::json>(&v)) return *j;
  if (std::holds_alternative<std::monostate>(v)) return nullptr;
  return summarize(v);
}

}  // namespace

const ContractInput* Contract::input(const std::string& name) const {
  for (const auto& i : inputs)
    if (i.name == name) return &i;
  return nullptr;
}

nlohmann::json Contract::to_json() const {
  nlohmann::json in = nlohmann::json::array(), out = nlohmann::json::array();
  for (const auto& i : inputs)
    in.push_back({{"name", i.name},
                  {"type", i.type},
                  {"required", i.required},
                  {"default", i.default_text},
                  {"description", i.description},
                  {"node_id", i.node_id}});
  for (const auto& o : outputs)
    out.push_back({{"name", o.name}, {"description", o.description}, {"node_id", o.node_id}});
  return {{"inputs", in}, {"outputs", out}, {"problems", problems}};
}

namespace {

/// An integer input travels as a double: beyond 2^53 it is no longer exact.
constexpr double kLargestExactInteger = 9007199254740992.0;  // 2^53

std::string check_integer(const nlohmann::json& v) {
  const std::string text = v.dump();
  bool exact = true;
  if (v.is_number_unsigned()) {
    exact = v.get<uint64_t>() <= static_cast<uint64_t>(kLargestExactInteger);
  } else if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    exact = i >= -static_cast<int64_t>(kLargestExactInteger) && i <= static_cast<int64_t>(kLargestExactInteger);
  } else {
    const double d = v.get<double>();
    if (!std::isfinite(d) || std::floor(d) != d) return "expected integer, got non-integral number " + text;
    exact = std::fabs(d) <= kLargestExactInteger;
  }
  if (!exact)
    return "expected integer from -9007199254740992 to 9007199254740992 (2^53, the largest exact in a number), got " +
           text;
  return "";
}

/// An image input: base64 text of a PNG no larger than the pixel cap, checked
/// from its header before anything is decoded.
std::string check_image(const nlohmann::json& v) {
  if (!v.is_string()) return std::string("expected base64 image string, got ") + json_type_of(v);
  const auto size = util::png_size_base64(v.get_ref<const std::string&>());
  if (!size) return "expected a base64 PNG image; the text does not start as a PNG does";
  return util::image_too_large(*size);
}

}  // namespace

std::string check_input_value(const nlohmann::json& v, const std::string& type) {
  const std::string got = json_type_of(v);
  if (type == "image") return check_image(v);
  if (type == "string") return v.is_string() ? "" : "expected string, got " + got;
  if (type == "number") return v.is_number() ? "" : "expected number, got " + got;
  if (type == "integer") return v.is_number() ? check_integer(v) : "expected integer, got " + got;
  if (type == "boolean") return v.is_boolean() ? "" : "expected boolean, got " + got;
  if (type == "json") return "";
  return "unknown input type '" + type + "'";
}

nlohmann::json parse_input_default(const std::string& text, const std::string& type) {
  if (type == "string" || type == "image") return text;
  std::string t = text;
  t.erase(0, t.find_first_not_of(" \t\r\n"));
  t.erase(t.find_last_not_of(" \t\r\n") + 1);
  nlohmann::json v;
  if (type == "boolean") {
    std::string lower;
    for (char c : t) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower != "true" && lower != "false")
      throw std::invalid_argument("\"" + text + "\" does not parse as boolean (use 'true'/'false')");
    v = lower == "true";
  } else {
    v = nlohmann::json::parse(type == "json" ? text : t, nullptr, false);
    if (v.is_discarded() || (type != "json" && !v.is_number()))
      throw std::invalid_argument("\"" + text + "\" does not parse as " + type);
  }
  if (const std::string problem = check_input_value(v, type); !problem.empty()) throw std::invalid_argument(problem);
  return v;
}

Contract derive_contract(const graph::Graph& g) {
  Contract c;
  for (const auto& n : g.nodes) {
    if (!n.preset_id.empty()) continue;  // the contract is the top level's, as CodefyUI derives it
    if (n.type == "GraphInput") {
      ContractInput i;
      i.name = param_text(n.params, "name", "input");
      i.type = param_text(n.params, "type", "string");
      i.required = !n.params.contains("required") || n.params.at("required") != false;
      i.default_text = param_text(n.params, "default", "");
      i.description = param_text(n.params, "description", "");
      i.node_id = n.id;
      c.inputs.push_back(std::move(i));
    } else if (n.type == "GraphOutput") {
      c.outputs.push_back({param_text(n.params, "name", "output"), param_text(n.params, "description", ""), n.id});
    }
  }
  if (c.outputs.empty()) c.problems.push_back("graph has no GraphOutput node: declare at least one output");
  check_contract_names(c.inputs, "input", c.problems);
  check_contract_names(c.outputs, "output", c.problems);
  for (const auto& i : c.inputs) {
    if (i.type == "image") {
      if (!i.required)
        c.problems.push_back("image input '" + i.name + "' must be required=true (base64 has no API-side default)");
      continue;
    }
    if (i.required) continue;  // a required input's default is only the canvas's test value
    try {
      parse_input_default(i.default_text, i.type);
    } catch (const std::invalid_argument& e) {
      c.problems.push_back("optional input '" + i.name + "': default does not parse as " + i.type + " (" + e.what() +
                           ")");
    }
  }
  return c;
}

nlohmann::json inject_inputs(graph::Graph& g, const Contract& c, const nlohmann::json& inputs) {
  nlohmann::json problems = nlohmann::json::array();
  if (!inputs.is_null() && !inputs.is_object()) {
    problems.push_back({{"field", "inputs"}, {"reason", "must be an object of {name: value}"}});
    return problems;
  }
  const nlohmann::json given = inputs.is_object() ? inputs : nlohmann::json::object();
  for (auto it = given.begin(); it != given.end(); ++it)
    if (!c.input(it.key()))
      problems.push_back({{"field", "inputs." + it.key()}, {"reason", "the graph declares no input of this name"}});
  for (const auto& i : c.inputs) {
    if (!given.contains(i.name)) {
      if (i.required) problems.push_back({{"field", "inputs." + i.name}, {"reason", "required input is missing"}});
      continue;
    }
    if (const std::string why = check_input_value(given.at(i.name), i.type); !why.empty())
      problems.push_back({{"field", "inputs." + i.name}, {"reason", why}});
  }
  if (!problems.empty()) return problems;
  for (const auto& i : c.inputs)
    if (given.contains(i.name)) g.node(i.node_id)->params["value"] = given.at(i.name);
  return problems;
}

nlohmann::json collect_outputs(const Contract& c, const RunResult& result) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& o : c.outputs) {
    const auto node = result.outputs.find(o.node_id);
    if (node == result.outputs.end()) {
      out[o.name] = nullptr;  // not reached from the run's entry points
      continue;
    }
    const auto v = node->second.find("value");
    out[o.name] = v == node->second.end() ? nlohmann::json(nullptr) : output_json(v->second);
  }
  return out;
}

}  // namespace codefy
