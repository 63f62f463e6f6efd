// Models: SequentialModel (CodefyUI's v2 layers spec).
#include "model/sequential_model.h"
#include "nodes/library.h"

namespace codefy {

using graph::DataType;

namespace {

void register_sequential_model(NodeRegistry& r) {
  graph::NodeDef d{"SequentialModel",
                   "Training",
                   "Build a model from a layer graph (CodefyUI's v2 spec: Input, layers, merges, Output).",
                   {},
                   {def::out("model", DataType::kModel, "The model, freshly initialised from the run seed")},
                   {def::text("layers", model::kDefaultLayerSpec, "DAG JSON (v2 schema) describing the model graph")}};
  d.cacheable = false;        // hands out a module that training mutates...
  d.persistent_state = true;  // ...which the editor keeps between runs (weights_persistent)
  r.add(std::move(d), [](NodeContext& ctx) {
    train::ModelPtr built;
    try {
      built = model::build_sequential_model(ctx.params().at("layers"));
    } catch (const model::LayerSpecError& e) {
      // Its message already names the layer, type and parameter at fault.
      NodeContext::fail_param("layers", e.what());
    }
    return ValueMap{{"model", built}};
  });
}

}  // namespace

void nodes::register_model_nodes(NodeRegistry& r) { register_sequential_model(r); }

}  // namespace codefy
