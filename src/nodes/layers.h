// SequentialModel: builds a LibTorch module from CodefyUI's `layers` spec v2.
#pragma once

#include "train/model.h"

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace codefy::layers {

/// A problem in a layers spec, naming the layer id, layer type and parameter
/// (each empty when it doesn't apply). what() reads, e.g.,
/// `layer "c1" (Conv2d), parameter "kernel_size": expected ...`.
class LayerSpecError : public std::runtime_error {
 public:
  LayerSpecError(std::string layer_id, std::string layer_type, std::string param, const std::string& message);
  const std::string& layer_id() const { return layer_id_; }
  const std::string& layer_type() const { return layer_type_; }
  const std::string& param() const { return param_; }

 private:
  std::string layer_id_, layer_type_, param_;
};

/// Layer types the builder knows (Input, Output and merges included).
const std::vector<std::string>& layer_types();

/// Builds the model of a v2 spec (`{"version":2, "nodes":[...], "edges":[...]}`),
/// given as a JSON object or as the JSON string CodefyUI stores in the
/// `layers` param. Parameters are initialised from LibTorch's global RNG, so
/// seed it first for reproducible weights. The model's forward() also throws
/// LayerSpecError, naming the layer, when LibTorch rejects a layer's input
/// (e.g. a shape mismatch).
train::ModelPtr build_sequential_model(const nlohmann::json& spec);

}  // namespace codefy::layers
