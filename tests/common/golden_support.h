// Running one node type outside a graph and comparing its outputs with
// golden values PyTorch computed (tests/golden/*.json, from scripts/golden/).
#pragma once

#include "nodes/library.h"
#include "test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <string>

namespace codefy::testing {

inline c10::ScalarType golden_dtype(const std::string& name) {
  if (name == "float64") return torch::kFloat64;
  if (name == "int64") return torch::kInt64;
  if (name == "int32") return torch::kInt32;
  if (name == "bool") return torch::kBool;
  return torch::kFloat32;
}

/// A golden tensor {shape, dtype, values}.
inline torch::Tensor golden_tensor(const nlohmann::json& j) {
  const auto values = j["values"].get<std::vector<double>>();
  const auto shape = j["shape"].get<std::vector<int64_t>>();
  return torch::tensor(values, torch::kFloat64).to(golden_dtype(j["dtype"])).reshape(shape);
}

/// A golden input: a tensor when it has a shape, else the JSON itself (lists, text, numbers).
inline Value golden_value(const nlohmann::json& j) {
  if (j.is_object() && j.contains("shape")) return golden_tensor(j);
  return j;
}

/// Runs one node type outside a graph, as the executor would: params over
/// the defaults, LibTorch's generator seeded `seed`, verbose or not.
inline ValueMap run_node(const std::string& type, const nlohmann::json& params, ValueMap inputs, uint64_t seed = 0,
                         bool verbose = false) {
  const NodeType* t = nodes::builtin().get(type);
  if (!t) throw std::runtime_error("no node type " + type);
  nlohmann::json p = nlohmann::json::object();
  for (const auto& d : t->def.params) p[d.name] = d.default_value;
  for (auto it = params.begin(); it != params.end(); ++it) p[it.key()] = it.value();
  RunSettings settings;
  settings.verbose = verbose;
  NodeContext ctx(NodeRef{"test", "n1", type}, t->def, p, std::move(inputs), settings);
  torch::manual_seed(seed);
  return t->execute(ctx);
}

/// `actual` equals the golden tensor: shape, dtype, values (floating: to a
/// tolerance that allows for a different summation order).
inline void expect_tensor(const torch::Tensor& actual, const nlohmann::json& expected, const std::string& what,
                          double atol = 1e-5) {
  ASSERT_TRUE(actual.defined()) << what;
  const torch::Tensor want = golden_tensor(expected);
  ASSERT_EQ(actual.sizes(), want.sizes()) << what;
  EXPECT_EQ(actual.scalar_type(), want.scalar_type()) << what;
  if (want.is_floating_point())
    EXPECT_TRUE(torch::allclose(actual.to(torch::kFloat64), want.to(torch::kFloat64), 1e-4, atol))
        << what << ": max difference "
        << (actual.to(torch::kFloat64) - want.to(torch::kFloat64)).abs().max().item<double>();
  else
    EXPECT_TRUE(torch::equal(actual, want)) << what << "\n" << actual << "\n" << want;
}

/// The case `name` of a golden file's {"cases": [...]}; throws when it has none.
inline const nlohmann::json& golden_case_in(const nlohmann::json& golden, const std::string& name) {
  for (const auto& c : golden["cases"])
    if (c["name"] == name) return c;
  throw std::runtime_error("no golden case " + name);
}

/// A golden case's inputs as node inputs.
inline ValueMap golden_inputs(const nlohmann::json& c) {
  ValueMap in;
  for (auto it = c["inputs"].begin(); it != c["inputs"].end(); ++it) in[it.key()] = golden_value(it.value());
  return in;
}

/// Every golden output of the case is among `out`, equal to its value.
inline void expect_golden_outputs(const ValueMap& out, const nlohmann::json& c, double atol = 1e-5) {
  for (auto it = c["outputs"].begin(); it != c["outputs"].end(); ++it) {
    const auto found = out.find(it.key());
    ASSERT_NE(found, out.end()) << "no output " << it.key();
    if (it.value().is_object() && it.value().contains("shape")) {
      ASSERT_TRUE(std::holds_alternative<torch::Tensor>(found->second)) << it.key() << " is not a tensor";
      expect_tensor(std::get<torch::Tensor>(found->second), it.value(), it.key(), atol);
    } else {
      ASSERT_TRUE(std::holds_alternative<nlohmann::json>(found->second)) << it.key() << " is not JSON";
      EXPECT_EQ(std::get<nlohmann::json>(found->second), it.value()) << it.key();
    }
  }
}

}  // namespace codefy::testing
