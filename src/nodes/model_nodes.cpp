// Models: SequentialModel (CodefyUI's v2 layers spec).
#include "model/layer_shapes.h"
#include "model/layer_spec.h"
#include "model/layer_spec_error.h"
#include "model/sequential_model.h"
#include "nodes/library.h"

#include <optional>

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

/// A whole-number param of a node as written in the graph (a number or a
/// numeric string), else `fallback`.
int64_t int_param(const graph::NodeSpec& n, const char* name, int64_t fallback) {
  const auto it = n.params.find(name);
  if (it == n.params.end()) return fallback;
  if (it->is_number()) return it->get<int64_t>();
  if (it->is_string()) {
    try {
      return std::stoll(it->get<std::string>());
    } catch (const std::exception&) {
    }
  }
  return fallback;
}

/// The node feeding input `port` of `target`, or nullptr.
const graph::NodeSpec* source_of(const graph::Graph& g, const std::string& target, const std::string& port) {
  for (const auto& e : g.edges)
    if (e.kind == graph::EdgeKind::kData && e.target == target && e.target_handle == port) return g.node(e.source);
  return nullptr;
}

/// Where a SequentialModel's samples come from, when the graph tells: the
/// dataset node behind the DataLoader of a TrainingLoop the model feeds, and
/// the sizes of one sample (after the batch dimension) its params give.
struct SampleSource {
  const graph::NodeSpec* dataset = nullptr;
  const graph::NodeSpec* trainer = nullptr;
  std::vector<int64_t> shape;
};

std::optional<SampleSource> sample_source(const graph::Graph& g, const graph::NodeSpec& model) {
  for (const auto& e : g.edges) {
    if (e.kind != graph::EdgeKind::kData || e.source != model.id || e.target_handle != "model") continue;
    const graph::NodeSpec* trainer = g.node(e.target);
    if (!trainer || trainer->type != "TrainingLoop") continue;
    const graph::NodeSpec* loader = source_of(g, trainer->id, "dataloader");
    if (!loader || loader->type != "DataLoader") continue;
    const graph::NodeSpec* data = source_of(g, loader->id, "dataset");
    if (!data) continue;
    if (data->type == "Dataset") return SampleSource{data, trainer, {1, 28, 28}};  // MNIST, FashionMNIST
    if (data->type == "ToyDataset") return SampleSource{data, trainer, {int_param(*data, "n_features", 2)}};
  }
  return std::nullopt;
}

std::string shape_text(const std::vector<int64_t>& shape) { return nlohmann::json(shape).dump(); }

/// Checks each SequentialModel that runs: its `layers` must be a v2 spec
/// that parses, and, when `thorough` (`codefy validate`, POST
/// /api/graph/validate) and the graph tells the shape of a sample (see
/// sample_source), the layers must accept a batch of one such sample. A run
/// does not trace: it meets the same fault when it trains. The trace is
/// bounded well below the layer editor's (validation answers on the caller's
/// thread); a model past those bounds is only parsed.
std::vector<graph::Issue> check_sequential_models(const graph::Graph& g, const graph::Plan& plan, bool thorough) {
  std::vector<graph::Issue> issues;
  for (const auto& n : g.nodes) {
    if (n.type != "SequentialModel" || !plan.contains(n.id)) continue;
    const auto add = [&](const std::string& message) {
      issues.push_back({g.name, n.id, n.type, "param \"layers\"", message});
    };
    const auto it = n.params.find("layers");
    const nlohmann::json spec = it == n.params.end() ? nlohmann::json(model::kDefaultLayerSpec) : *it;
    try {
      model::connect_layers(model::parse_layer_spec(spec));
    } catch (const model::LayerSpecError& e) {
      add(e.what());
      continue;
    }
    const auto source = thorough ? sample_source(g, n) : std::nullopt;
    if (!source) continue;
    model::ShapeLimits limits;
    limits.input_elements_max = int64_t{1} << 20;
    limits.parameters_max = int64_t{1} << 22;
    limits.activations_max = int64_t{1} << 22;
    limits.multiply_adds_max = 2e8;
    try {
      const model::ShapeTrace trace = model::trace_layer_shapes(spec, source->shape, limits);
      if (trace.error && !trace.error->over_limit)
        add("for a sample of shape " + shape_text(source->shape) + " from " + source->dataset->type + " \"" +
            source->dataset->id + "\" (trained by " + source->trainer->id + "): " + trace.error->message);
    } catch (const model::ShapeRequestError&) {  // a sample too large to trace here: the run will tell
    }
  }
  return issues;
}

}  // namespace

void nodes::register_model_nodes(NodeRegistry& r) {
  register_sequential_model(r);
  r.add_check(check_sequential_models);
}

}  // namespace codefy
