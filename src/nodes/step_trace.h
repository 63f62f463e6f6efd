// A teaching node's intermediate steps (CodefyUI's verbose step trace).
#pragma once

#include "engine/node.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace codefy::nodes {

/// Records a node's algorithm step by step when the run is verbose: step i's
/// tensors become extra outputs named `__step__{i}__{tensor}` and its name,
/// description and scalars the JSON output `__step__{i}__meta`, as CodefyUI's
/// run output store names them, so the inspector lists them beside the
/// ports. When the run is not verbose nothing is kept.
class StepRecorder {
 public:
  explicit StepRecorder(const NodeContext& ctx) : on_(ctx.verbose()) {}

  bool on() const { return on_; }

  void record(const std::string& name, const std::string& description,
              const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
              nlohmann::json scalars = nlohmann::json::object()) {
    if (!on_) return;
    nlohmann::json names = nlohmann::json::array();
    for (const auto& [tensor_name, t] : tensors) {
      names.push_back(tensor_name);
      outputs_[step_port(steps_, tensor_name)] = t.detach().clone();
    }
    outputs_[step_port(steps_, "meta")] = nlohmann::json{{"index", steps_},
                                                         {"name", name},
                                                         {"description", description},
                                                         {"scalars", std::move(scalars)},
                                                         {"tensors", std::move(names)}};
    ++steps_;
  }

  /// Adds the recorded steps to a node's outputs.
  ValueMap& add_to(ValueMap& outputs) {
    for (auto& [k, v] : outputs_) outputs[k] = std::move(v);
    outputs_.clear();
    return outputs;
  }

 private:
  bool on_;
  int steps_ = 0;
  ValueMap outputs_;
};

}  // namespace codefy::nodes
