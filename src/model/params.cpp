// LayerParams: typed getters over a layer's `params`, and the wording of their errors.
#include "model/params.h"

#include "util/text.h"

#include <sstream>
#include <stdexcept>
#include <utility>

namespace codefy::model {

using nlohmann::json;

std::string quoted_list(const std::vector<std::string>& items) {
  return items.empty() ? std::string() : "\"" + util::join(items, "\", \"") + "\"";
}

std::string whole_number(int64_t min) {
  if (min == kAnyInt) return "a whole number";
  return "a whole number >= " + std::to_string(min);
}

namespace {

/// Levenshtein distance, to suggest the parameter a typo meant.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

LayerParams::LayerParams(std::string id, std::string type, const json* params, const std::vector<graph::ParamDef>& defs)
    : id_(std::move(id)), type_(std::move(type)), defs_(defs) {
  if (params == nullptr || params->is_null()) return;
  if (!params->is_object())
    throw LayerSpecError(id_, type_, "",
                         "\"params\" must be an object such as {\"p\": 0.5}, got " + describe_json(*params));
  params_ = params;
  std::vector<std::string> known;
  for (const auto& d : defs_) known.push_back(d.name);
  for (const auto& item : params->items()) {
    if (std::find(known.begin(), known.end(), item.key()) != known.end()) continue;
    std::string message = type_ + " has no parameter \"" + item.key() + "\"";
    std::string best;
    size_t best_distance = 3;  // Suggest only close matches: 1-2 typos or a case difference.
    for (const auto& k : known) {
      const size_t d = util::lower(k) == util::lower(item.key()) ? 0 : edit_distance(k, item.key());
      if (d < best_distance) best_distance = d, best = k;
    }
    if (!best.empty()) message += " (did you mean \"" + best + "\"?)";
    message += known.empty() ? "; it takes no parameters" : "; its parameters are " + quoted_list(known);
    throw LayerSpecError(id_, type_, item.key(), message);
  }
}

const json& LayerParams::default_of(const std::string& name) const {
  for (const auto& d : defs_)
    if (d.name == name) return d.default_value;
  // A name the catalogue does not define is a bug in the layer table, not in the spec.
  throw std::logic_error("model/layer_table.cpp: " + type_ + " reads parameter " + name +
                         ", which model/layer_catalog.cpp does not define");
}

void LayerParams::fail(const std::string& name, const std::string& message) const {
  throw LayerSpecError(id_, type_, name, message);
}

const json* LayerParams::find(const std::string& name, bool keep_null) const {
  (void)default_of(name);  // a parameter the catalogue does not define: a bug in the layer table
  if (params_ == nullptr) return nullptr;
  auto it = params_->find(name);
  if (it == params_->end() || (it->is_null() && !keep_null)) return nullptr;
  return &*it;
}

int64_t LayerParams::integer(const std::string& name, int64_t min) const {
  const json* v = find(name);
  if (v == nullptr) missing(name, whole_number(min));
  return to_int(name, *v, min);
}

int64_t LayerParams::integer_or_default(const std::string& name, int64_t min) const {
  const json* v = find(name);
  return to_int(name, v == nullptr ? default_of(name) : *v, min);
}

c10::optional<int64_t> LayerParams::optional_integer(const std::string& name, int64_t min) const {
  const json* v = find(name);
  if (v == nullptr) return c10::nullopt;
  return to_int(name, *v, min);
}

double LayerParams::real_or_default(const std::string& name, double min, double max) const {
  const json* v = find(name);
  return to_real(name, v == nullptr ? default_of(name) : *v, min, max);
}

c10::optional<double> LayerParams::optional_real_or_default(const std::string& name, double min) const {
  const json* v = find(name, /*keep_null=*/true);
  if (v == nullptr) v = &default_of(name);
  if (v->is_null()) return c10::nullopt;
  return to_real(name, *v, min, std::numeric_limits<double>::infinity());
}

bool LayerParams::boolean_or_default(const std::string& name) const {
  const json* v = find(name);
  if (v == nullptr) v = &default_of(name);
  if (!v->is_boolean()) fail(name, "expected true or false, got " + describe_json(*v));
  return v->get<bool>();
}

std::string LayerParams::choice_or_default(const std::string& name, const std::vector<std::string>& choices) const {
  const json* v = find(name);
  if (v == nullptr) v = &default_of(name);
  if (!v->is_string() || std::find(choices.begin(), choices.end(), v->get<std::string>()) == choices.end())
    fail(name, "expected one of " + quoted_list(choices) + ", got " + describe_json(*v));
  return v->get<std::string>();
}

std::vector<int64_t> LayerParams::int_list(const std::string& name, int64_t min) const {
  const json* v = find(name);
  const std::string what = whole_number(min) + " or a list of them";
  if (v == nullptr) missing(name, what);
  if (v->is_number_integer()) return {to_int(name, *v, min)};
  if (!v->is_array() || v->empty()) fail(name, "expected " + what + ", got " + describe_json(*v));
  std::vector<int64_t> values;
  for (const auto& e : *v) {
    if (!e.is_number_integer()) fail(name, "expected " + what + ", got " + describe_json(*v));
    values.push_back(to_int(name, e, min));
  }
  return values;
}

int64_t LayerParams::to_int(const std::string& name, const json& v, int64_t min) const {
  if (!v.is_number_integer()) fail(name, "expected " + whole_number(min) + ", got " + describe_json(v));
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    fail(name, "the value " + v.dump() + " is too large");
  const auto value = v.get<int64_t>();
  if (value < min) fail(name, "must be at least " + std::to_string(min) + ", got " + std::to_string(value));
  return value;
}

void LayerParams::missing(const std::string& name, const std::string& what) const {
  fail(name, "required parameter is missing (" + type_ + " needs " + what + " here)");
}

double LayerParams::to_real(const std::string& name, const json& v, double min, double max) const {
  if (!v.is_number()) fail(name, "expected a number, got " + describe_json(v));
  const auto value = v.get<double>();
  if (value < min || value > max) {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    std::ostringstream os;
    os << "must be";
    if (min > -kInf) os << " at least " << min;
    if (min > -kInf && max < kInf) os << " and";
    if (max < kInf) os << " at most " << max;
    os << ", got " << value;
    fail(name, os.str());
  }
  return value;
}

}  // namespace codefy::model
