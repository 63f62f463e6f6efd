// What the teaching nodes of CodefyUI's `deep` plugin pack share: size
// limits, Python-style number and shape text, seeded generators, LIST and mask
// inputs, and the form the node state store keeps their modules in.
#pragma once

#include "model/layer_table.h"
#include "nodes/library.h"
#include "nodes/tensor_checks.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

namespace codefy::nodes::edu_deep {

using graph::DataType;
using torch::Tensor;
namespace F = torch::nn::functional;

/// The most elements one tensor a teaching node makes may have (2^28 floats,
/// 1 GiB): far past a lesson, well below what would exhaust memory.
constexpr double kMaxElements = static_cast<double>(int64_t{1} << 28);

/// A count of elements as a whole number ("1099511627776").
inline std::string count_text(double count) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", count);
  return buf;
}

/// Refuses, blaming param `name`, when `count` elements are more than kMaxElements.
inline void limit_param(const std::string& name, double count, const std::string& what) {
  if (count > kMaxElements)
    NodeContext::fail_param(
        name, what + " would have " + count_text(count) + " elements, more than a teaching node allows (2^28)");
}
/// The same, blaming input `port` and naming its shape.
inline void limit_input(const std::string& port, const Tensor& t, double count, const std::string& what) {
  if (count > kMaxElements)
    NodeContext::fail_input(port, "shape " + shape_text(t.sizes()) + " would make " + what + " of " +
                                      count_text(count) + " elements, more than a teaching node allows (2^28)");
}

/// An input as float32, as CodefyUI's `.float()`.
inline Tensor float_in(const NodeContext& ctx, const std::string& port) {
  return tensor_input(ctx, port).to(torch::kFloat32);
}

/// A generator of its own seeded `seed`, as `torch.Generator().manual_seed(seed)`.
inline at::Generator seeded(int64_t seed) { return at::detail::createCPUGenerator(static_cast<uint64_t>(seed)); }

/// Python's tuple of a shape: "(2, 3)", "(4,)", "()".
inline std::string tuple_text(c10::IntArrayRef sizes) {
  std::string s = "(";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + (sizes.size() == 1 ? ",)" : ")");
}

/// Python's repr of a float (shortest text that reads back the same).
inline std::string py_float(double v) {
  char buf[40];
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*g", p, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eni") == std::string::npos) s += ".0";
  return s;
}

/// A step scalar: CodefyUI records every scalar as a float.
inline double f64(int64_t v) { return static_cast<double>(v); }

/// Python's round() of a non-negative double: halves go to the even neighbour.
inline int64_t py_round(double v) { return static_cast<int64_t>(std::nearbyint(v)); }

/// Up to `cap` indices in [0, n), evenly spaced with the first and last, as
/// CodefyUI samples the timesteps and windows it records.
inline std::set<int64_t> sampled_indices(int64_t n, int64_t cap) {
  std::set<int64_t> out;
  if (n <= cap) {
    for (int64_t i = 0; i < n; ++i) out.insert(i);
    return out;
  }
  for (int64_t k = 0; k < cap; ++k)
    out.insert(py_round(static_cast<double>(k) * static_cast<double>(n - 1) / static_cast<double>(cap - 1)));
  return out;
}

/// A LIST input passed through (CodefyUI's `list(inputs.get(name) or [])`).
inline nlohmann::json list_through(const NodeContext& ctx, const std::string& port) {
  if (!ctx.has_input(port)) return nlohmann::json::array();
  const Value& v = ctx.input(port);
  if (const auto* j = std::get_if<nlohmann::json>(&v)) {
    if (j->is_array()) return *j;
    if (j->is_null()) return nlohmann::json::array();
  }
  if (const auto* t = std::get_if<Tensor>(&v)) {
    nlohmann::json out = nlohmann::json::array();
    const Tensor flat = t->detach().to(torch::kCPU).to(torch::kFloat64).reshape({-1});
    for (int64_t i = 0; i < flat.numel(); ++i) out.push_back(flat[i].item<double>());
    return out;
  }
  return ctx.input_as<nlohmann::json>(port);  // refuses other kinds, naming the port
}

/// A [seq, seq] (or [q, k]) boolean mask input; True blocks a position.
inline Tensor mask_input(const NodeContext& ctx, int64_t rows, int64_t cols, const std::string& node,
                         const std::string& expected) {
  Tensor m = tensor_input(ctx, "mask").to(torch::kBool);
  if (m.dim() != 2 || m.size(0) != rows || m.size(1) != cols)
    NodeContext::fail_input("mask", node + ": mask shape " + shape_text(m.sizes()) + " doesn't match " + expected);
  return m;
}

/// A module as the node state store keeps it (see layer_node::kept_layer);
/// its one-tensor forward is never called by these nodes.
template <class Holder>
model::BuiltLayer as_built(Holder holder) {
  const auto& impl = holder.ptr();
  return {impl, [](const Tensor& x) { return x; }};
}

// Each section of the pack registers its nodes.
void register_attention_nodes(NodeRegistry& r);  // edu_deep_sequence_nodes.cpp
void register_rnn_nodes(NodeRegistry& r);        // edu_deep_sequence_nodes.cpp
void register_diffusion_nodes(NodeRegistry& r);  // edu_deep_diffusion_nodes.cpp

}  // namespace codefy::nodes::edu_deep
