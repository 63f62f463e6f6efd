// LayerParams: typed access to one layer node's `params`, with messages a student can act on.
#pragma once

#include "graph/types.h"
#include "model/layer_spec_error.h"
#include "util/json_input.h"

#include <c10/util/Optional.h>
#include <torch/expanding_array.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace codefy::model {

using util::describe_json;

/// `"a", "b", "c"`: each item quoted, comma-separated.
std::string quoted_list(const std::vector<std::string>& items);

/// The lowest whole number a parameter may take when it has no lower bound.
constexpr int64_t kAnyInt = std::numeric_limits<int64_t>::min();

/// "a whole number" or "a whole number >= min", for messages.
std::string whole_number(int64_t min);

/// The `params` object of one layer node, read through typed getters that
/// throw LayerSpecError naming the layer and the parameter.
class LayerParams {
 public:
  /// `defs`: the layer type's parameters as the layer catalogue defines them
  /// (names, and the defaults the *_or_default getters fall back to; the
  /// catalogue is their one definition). Rejects names not among them up
  /// front, so the message can list every parameter the layer takes (and
  /// suggest the one a typo meant). `params` may be null (no params given);
  /// `defs` must outlive this object.
  LayerParams(std::string id, std::string type, const nlohmann::json* params, const std::vector<graph::ParamDef>& defs);

  const std::string& id() const { return id_; }
  const std::string& type() const { return type_; }

  /// Throws LayerSpecError blaming parameter `name`.
  [[noreturn]] void fail(const std::string& name, const std::string& message) const;

  /// The raw value, or nullptr when absent. JSON null counts as absent unless `keep_null`.
  const nlohmann::json* find(const std::string& name, bool keep_null = false) const;

  /// A required whole number >= min.
  int64_t integer(const std::string& name, int64_t min = kAnyInt) const;
  /// A whole number >= min, or the catalogue's default when absent.
  int64_t integer_or_default(const std::string& name, int64_t min = kAnyInt) const;
  /// A whole number >= min, or nullopt when absent.
  c10::optional<int64_t> optional_integer(const std::string& name, int64_t min = kAnyInt) const;
  /// A number in [min, max], or the catalogue's default when absent.
  double real_or_default(const std::string& name, double min = -std::numeric_limits<double>::infinity(),
                         double max = std::numeric_limits<double>::infinity()) const;
  /// Absent gives the catalogue's default (null: nullopt); an explicit null gives nullopt (PyTorch's None).
  c10::optional<double> optional_real_or_default(const std::string& name,
                                                 double min = -std::numeric_limits<double>::infinity()) const;
  /// true or false, or the catalogue's default when absent.
  bool boolean_or_default(const std::string& name) const;
  /// One of `choices`, or the catalogue's default when absent.
  std::string choice_or_default(const std::string& name, const std::vector<std::string>& choices) const;
  /// The catalogue's default of `name`; a std::logic_error when the layer
  /// table reads a parameter the catalogue does not define.
  const nlohmann::json& default_of(const std::string& name) const;
  /// An int or a non-empty list of ints (LayerNorm's normalized_shape).
  std::vector<int64_t> int_list(const std::string& name, int64_t min) const;
  /// `v` as a whole number >= min (`name` is the parameter it came from, for messages).
  int64_t to_int(const std::string& name, const nlohmann::json& v, int64_t min) const;

  /// A required int or list of D ints, as PyTorch's kernel_size/stride/padding accept.
  template <size_t D>
  torch::ExpandingArray<D> ints(const std::string& name, int64_t min) const {
    const nlohmann::json* v = find(name);
    if (v == nullptr) missing(name, ints_what<D>(min));
    return to_ints<D>(name, *v, min);
  }

  /// An int or list of D ints, or the catalogue's default when absent.
  template <size_t D>
  torch::ExpandingArray<D> ints_or_default(const std::string& name, int64_t min) const {
    const nlohmann::json* v = find(name);
    return to_ints<D>(name, v == nullptr ? default_of(name) : *v, min);
  }

  /// `v` as an int or a list of D ints, each >= min.
  template <size_t D>
  torch::ExpandingArray<D> to_ints(const std::string& name, const nlohmann::json& v, int64_t min) const {
    if (v.is_number_integer()) return torch::ExpandingArray<D>(to_int(name, v, min));
    if (!v.is_array() || v.size() != D ||
        !std::all_of(v.begin(), v.end(), [](const nlohmann::json& e) { return e.is_number_integer(); }))
      fail(name, "expected " + ints_what<D>(min) + ", got " + describe_json(v));
    std::vector<int64_t> values;
    for (const auto& e : v) values.push_back(to_int(name, e, min));
    return torch::ExpandingArray<D>(values);
  }

 private:
  [[noreturn]] void missing(const std::string& name, const std::string& what) const;
  double to_real(const std::string& name, const nlohmann::json& v, double min, double max) const;

  template <size_t D>
  static std::string ints_what(int64_t min) {
    if (D == 1) return whole_number(min) + " or a list of 1 such number";
    return whole_number(min) + " or a list of " + std::to_string(D) + " such numbers";
  }

  std::string id_, type_;
  const std::vector<graph::ParamDef>& defs_;
  const nlohmann::json* params_ = nullptr;
};

}  // namespace codefy::model
