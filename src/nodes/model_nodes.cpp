// Models: SequentialModel (CodefyUI's v2 layers spec).
#include "engine/node.h"
#include "nodes/layers.h"

namespace codefy {

using graph::DataType;

namespace {

// CodefyUI's default: the MNIST CNN.
constexpr const char* kDefaultLayers =
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

}  // namespace

void register_model_nodes(NodeRegistry& r) {
  graph::NodeDef d{"SequentialModel", "Training",
                   "Build a model from a layer graph (CodefyUI's v2 spec: Input, layers, merges, Output).",
                   {}, {def::out("model", DataType::kModel, "The model, freshly initialised from the run seed")},
                   {def::text("layers", kDefaultLayers, "DAG JSON (v2 schema) describing the model graph")}};
  d.cacheable = false;        // hands out a module that training mutates...
  d.persistent_state = true;  // ...which the editor keeps between runs (weights_persistent)
  r.add(std::move(d), [](NodeContext& ctx) {
    const auto& v = ctx.params().at("layers");
    train::ModelPtr model;
    try {
      model = layers::build_sequential_model(v);
    } catch (const layers::LayerSpecError& e) {
      std::string where = "layer " + e.layer_id();
      if (!e.layer_type().empty()) where += " (" + e.layer_type() + ")";
      if (!e.param().empty()) where += ", param \"" + e.param() + "\"";
      NodeContext::fail_param("layers", where + ": " + e.what());
    }
    return ValueMap{{"model", model}};
  });
}

}  // namespace codefy
