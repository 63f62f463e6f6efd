// SequentialModel: a LibTorch module from CodefyUI's `layers` spec v2.
#pragma once

#include "model/layer_spec_error.h"
#include "train/model.h"

#include <nlohmann/json.hpp>

namespace codefy::model {

/// CodefyUI's default `layers` value, verbatim: the MNIST CNN (two 3x3
/// convolutions with ReLU and 2x2 max-pooling, then 3136 -> 128 -> 10).
inline constexpr const char* kDefaultLayerSpec =
    R"({"version":2,"nodes":[{"id":"in","type":"Input","ports":[{"id":"p_x","name":"x"}]},)"
    R"({"id":"c1","type":"Conv2d","params":{"in_channels":1,"out_channels":32,"kernel_size":3,"padding":1}},)"
    R"({"id":"r1","type":"ReLU"},{"id":"p1","type":"MaxPool2d","params":{"kernel_size":2,"stride":2}},)"
    R"({"id":"c2","type":"Conv2d","params":{"in_channels":32,"out_channels":64,"kernel_size":3,"padding":1}},)"
    R"({"id":"r2","type":"ReLU"},{"id":"p2","type":"MaxPool2d","params":{"kernel_size":2,"stride":2}},)"
    R"({"id":"f","type":"Flatten"},{"id":"l1","type":"Linear","params":{"in_features":3136,"out_features":128}},)"
    R"({"id":"r3","type":"ReLU"},{"id":"l2","type":"Linear","params":{"in_features":128,"out_features":10}},)"
    R"({"id":"out","type":"Output","ports":[{"id":"p_y","name":"y"}]}],)"
    R"("edges":[{"id":"e1","source":"in","sourceHandle":"p_x","target":"c1"},{"id":"e2","source":"c1","target":"r1"},)"
    R"({"id":"e3","source":"r1","target":"p1"},{"id":"e4","source":"p1","target":"c2"},)"
    R"({"id":"e5","source":"c2","target":"r2"},{"id":"e6","source":"r2","target":"p2"},)"
    R"({"id":"e7","source":"p2","target":"f"},{"id":"e8","source":"f","target":"l1"},)"
    R"({"id":"e9","source":"l1","target":"r3"},{"id":"e10","source":"r3","target":"l2"},)"
    R"({"id":"e11","source":"l2","target":"out","targetHandle":"p_y"}]})";

/// Builds the model of a v2 spec (`{"version":2, "nodes":[...], "edges":[...]}`),
/// given as a JSON object or as the JSON string CodefyUI stores in the
/// `layers` param. Throws LayerSpecError naming the layer and parameter at
/// fault. Parameters are initialised from LibTorch's global RNG, so seed it
/// first for reproducible weights. The model's forward() also throws
/// LayerSpecError, naming the layer, when LibTorch rejects a layer's input
/// (e.g. a shape mismatch).
train::ModelPtr build_sequential_model(const nlohmann::json& spec);

}  // namespace codefy::model
