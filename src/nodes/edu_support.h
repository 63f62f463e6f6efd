// What the teaching nodes of the foundations and rl packs share: their inputs
// as CodefyUI takes them (a tensor, a number or a nested list), the checks
// and the Python-style number text their messages use.
#pragma once

#include "nodes/library.h"
#include "nodes/table_values.h"
#include "nodes/tensor_checks.h"

#include <torch/torch.h>

#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace codefy::nodes::edu {

using graph::DataType;
using nlohmann::json;
using torch::Tensor;

/// The most elements a teaching node allocates for one intermediate (a
/// pairwise difference tensor, a weight matrix, the stacked windows): far
/// past a lesson's data, well below what would exhaust memory.
constexpr int64_t kMaxElements = int64_t{1} << 28;

[[noreturn]] inline void bad_input(const std::string& port, const std::string& message) {
  NodeContext::fail_input(port, message);
}
[[noreturn]] inline void bad_param(const std::string& name, const std::string& message) {
  NodeContext::fail_param(name, message);
}

inline std::string shape_of(const Tensor& t) { return shape_text(t.sizes()); }
inline std::string num(int64_t v) { return std::to_string(v); }
/// Python's `format(v, ".{precision}g")`.
inline std::string fmt_g(double v, int precision = 6) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", precision, v);
  return buf;
}
/// Python's str() of a float.
inline std::string py_float(double v) { return python_number(json(v)); }

/// torch.as_tensor of a (nested) list of numbers: integers give int64,
/// anything else float32, unless `dtype` says otherwise.
inline Tensor tensor_from_json(const std::string& port, const json& j, std::optional<c10::ScalarType> dtype) {
  std::vector<int64_t> shape;
  for (const json* cur = &j; cur->is_array(); cur = &(*cur)[0]) {
    shape.push_back(static_cast<int64_t>(cur->size()));
    if (cur->empty()) break;
  }
  std::vector<double> values;
  bool integral = true;
  std::function<void(const json&, size_t)> walk = [&](const json& x, size_t depth) {
    if (depth == shape.size()) {
      if (x.is_boolean()) {
        values.push_back(x.get<bool>() ? 1.0 : 0.0);
      } else if (x.is_number()) {
        integral = integral && x.is_number_integer();
        values.push_back(x.get<double>());
      } else {
        bad_input(port, "expects numbers, got " + x.dump());
      }
      return;
    }
    if (!x.is_array() || static_cast<int64_t>(x.size()) != shape[depth])
      bad_input(port, "is a ragged nested list, not a tensor of shape " + shape_text(shape));
    for (const auto& e : x) walk(e, depth + 1);
  };
  walk(j, 0);
  const Tensor t = torch::tensor(values, torch::kFloat64).reshape(shape);
  return t.to(dtype ? *dtype : (integral ? torch::kInt64 : torch::kFloat32));
}

/// Input `port` as CodefyUI's nodes take it: a tensor, a number or a list
/// of numbers (torch.as_tensor), converted to `dtype` when given.
inline Tensor edu_tensor(const NodeContext& ctx, const std::string& port,
                         std::optional<c10::ScalarType> dtype = torch::kFloat32) {
  const Value& v = ctx.input(port);
  if (const auto* t = std::get_if<Tensor>(&v)) return dtype ? t->to(*dtype) : *t;
  if (const auto* d = std::get_if<double>(&v))
    return torch::scalar_tensor(*d, torch::kFloat64).to(dtype ? *dtype : torch::kFloat32);
  if (const auto* j = std::get_if<json>(&v)) return tensor_from_json(port, *j, dtype);
  return ctx.input_as<Tensor>(port);  // refuses the value, naming its kind
}

/// The same, on the CPU (the classical nodes loop over it there, as CodefyUI does).
inline Tensor cpu_tensor(const NodeContext& ctx, const std::string& port,
                         std::optional<c10::ScalarType> dtype = torch::kFloat32) {
  return edu_tensor(ctx, port, dtype).detach().to(torch::kCPU);
}

/// torch.linalg.vector_norm(t, dim=-1): the L2 norm of each row.
inline Tensor row_norms(const Tensor& t) {
  const std::vector<int64_t> last{-1};
  return at::linalg_vector_norm(t, 2, last, false, c10::nullopt);
}

/// "expects a 2-D tensor ([N, D]), got shape [4]", naming the port.
inline void need_rank(const std::string& port, const Tensor& t, int64_t rank, const std::string& layout) {
  check_rank(port, t, {rank}, layout);
}

/// x_query has the features x_train has.
inline void need_same_features(const Tensor& x_train, const Tensor& x_query) {
  if (x_query.size(1) != x_train.size(1))
    bad_input("x_query", "has " + num(x_query.size(1)) + " features (shape " + shape_of(x_query) +
                             ") but x_train has " + num(x_train.size(1)) + " (shape " + shape_of(x_train) + ")");
}

inline std::vector<graph::PortDef> train_query_inputs(DataType labels, const std::string& x_desc,
                                                      const std::string& y_desc, const std::string& q_desc) {
  return {def::in("x_train", DataType::kTensor, x_desc), def::in("y_train", labels, y_desc),
          def::in("x_query", DataType::kTensor, q_desc)};
}

/// A LIST input as CodefyUI passes it on: a list stays as it is, a tensor
/// becomes the list of its values.
inline json list_value(const NodeContext& ctx, const std::string& port) {
  const Value& v = ctx.input(port);
  if (const auto* j = std::get_if<json>(&v)) return *j;
  if (const auto* t = std::get_if<Tensor>(&v)) {
    const Tensor c = t->detach().to(torch::kCPU).reshape(-1);
    json out = json::array();
    const Tensor d = c.to(torch::kFloat64).contiguous();
    for (int64_t i = 0; i < d.numel(); ++i) {
      const double x = d.data_ptr<double>()[i];
      if (c.is_floating_point())
        out.push_back(x);
      else
        out.push_back(static_cast<int64_t>(x));
    }
    return out;
  }
  return json::array();
}

}  // namespace codefy::nodes::edu

namespace codefy::nodes::edu_foundations {

/// Registers Edu-FFN, Edu-SlidingWindow, Edu-TokenEmbedding and
/// Edu-VectorSimilarity (edu_foundations_neural_nodes.cpp).
void register_neural_nodes(NodeRegistry& r);

}  // namespace codefy::nodes::edu_foundations
