// Helpers shared by the model tests: a v2 spec builder, CodefyUI's default
// spec, and checks for LayerSpecError.
#pragma once

#include "model/layer_spec_error.h"
#include "model/sequential_model.h"

#include <gtest/gtest.h>
#include <torch/nn/module.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace codefy::model {

/// Builds v2 specs: an Input "in" (port p_x) first, the Output "out" (port p_y) last.
class Spec {
 public:
  Spec() { nodes_.push_back({{"id", "in"}, {"type", "Input"}, {"ports", {{{"id", "p_x"}, {"name", "x"}}}}}); }

  Spec& layer(const std::string& id, const std::string& type, const nlohmann::json& params = nlohmann::json::object()) {
    nodes_.push_back({{"id", id}, {"type", type}, {"params", params}});
    return *this;
  }

  /// Edges from "in" and into "out" get the port handles, as the editor writes them.
  Spec& edge(const std::string& from, const std::string& to) {
    nlohmann::json e = {{"id", "e" + std::to_string(edges_.size() + 1)},
                        {"source", from},
                        {"target", to},
                        {"sourceHandle", nullptr},
                        {"targetHandle", nullptr}};
    if (from == "in") e["sourceHandle"] = "p_x";
    if (to == "out") e["targetHandle"] = "p_y";
    edges_.push_back(e);
    return *this;
  }

  /// A straight line in -> ids... -> out.
  Spec& chain(const std::vector<std::string>& ids) {
    std::string prev = "in";
    for (const auto& id : ids) edge(prev, id), prev = id;
    return edge(prev, "out");
  }

  nlohmann::json build(bool with_output = true) const {
    nlohmann::json nodes = nodes_;
    if (with_output) nodes.push_back({{"id", "out"}, {"type", "Output"}, {"ports", {{{"id", "p_y"}, {"name", "y"}}}}});
    return {{"version", 2}, {"nodes", nodes}, {"edges", edges_}};
  }

 private:
  nlohmann::json nodes_ = nlohmann::json::array(), edges_ = nlohmann::json::array();
};

/// Input -> one layer "l" -> Output.
inline nlohmann::json single_layer(const std::string& type, const nlohmann::json& params) {
  return Spec().layer("l", type, params).chain({"l"}).build();
}

/// Runs `fn`, expecting a LayerSpecError with these fields and a message containing `fragment`.
inline void expect_spec_error(const std::function<void()>& fn, const std::string& layer_id, const std::string& param,
                              const std::string& fragment) {
  try {
    fn();
    ADD_FAILURE() << "expected a LayerSpecError containing: " << fragment;
  } catch (const LayerSpecError& e) {
    EXPECT_EQ(e.layer_id(), layer_id) << e.what();
    EXPECT_EQ(e.param(), param) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

/// build_sequential_model(spec) must fail as expect_spec_error describes.
inline void expect_build_error(const nlohmann::json& spec, const std::string& layer_id, const std::string& param,
                               const std::string& fragment) {
  expect_spec_error([&] { build_sequential_model(spec); }, layer_id, param, fragment);
}

/// The names of a module's parameters, in order.
inline std::vector<std::string> parameter_names(const torch::nn::Module& m) {
  std::vector<std::string> names;
  for (const auto& p : m.named_parameters()) names.push_back(p.key());
  return names;
}

}  // namespace codefy::model
