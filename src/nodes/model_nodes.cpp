// Models: SequentialModel (CodefyUI's v2 layers spec).
#include "model/layer_shapes.h"
#include "model/layer_spec.h"
#include "model/layer_spec_error.h"
#include "model/sequential_model.h"
#include "nodes/library.h"

#include <optional>
#include <unordered_map>
#include <vector>

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
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number_float()) {  // converted only within int64's range: past it the conversion is undefined
    const double d = it->get<double>();
    return d > -9.2e18 && d < 9.2e18 ? static_cast<int64_t>(d) : fallback;
  }
  if (it->is_string()) {
    try {
      return std::stoll(it->get<std::string>());
    } catch (const std::exception&) {
    }
  }
  return fallback;
}

/// A graph's data edges by where they leave and where they arrive, made
/// once per check: a search of every edge per model made a graph of many
/// models quadratic.
struct DataEdges {
  explicit DataEdges(const graph::Graph& g) {
    for (const auto& n : g.nodes) nodes.emplace(n.id, &n);
    for (const auto& e : g.edges) {
      if (e.kind != graph::EdgeKind::kData) continue;
      from[e.source].push_back(&e);
      into.emplace(e.target + '\n' + e.target_handle, &e);  // the first edge into a port, as before
    }
  }
  const graph::NodeSpec* node(const std::string& id) const {
    const auto it = nodes.find(id);
    return it == nodes.end() ? nullptr : it->second;
  }
  /// The node feeding input `port` of `target`, or nullptr.
  const graph::NodeSpec* source_of(const std::string& target, const std::string& port) const {
    const auto it = into.find(target + '\n' + port);
    return it == into.end() ? nullptr : node(it->second->source);
  }
  std::unordered_map<std::string, const graph::NodeSpec*> nodes;
  std::unordered_map<std::string, std::vector<const graph::EdgeSpec*>> from;
  std::unordered_map<std::string, const graph::EdgeSpec*> into;
};

/// Where a SequentialModel's samples come from, when the graph tells: the
/// dataset node behind the DataLoader of a TrainingLoop the model feeds, and
/// the sizes of one sample (after the batch dimension) its params give.
struct SampleSource {
  const graph::NodeSpec* dataset = nullptr;
  const graph::NodeSpec* trainer = nullptr;
  std::vector<int64_t> shape;
};

std::optional<SampleSource> sample_source(const DataEdges& edges, const graph::NodeSpec& model) {
  const auto out = edges.from.find(model.id);
  if (out == edges.from.end()) return std::nullopt;
  for (const graph::EdgeSpec* e : out->second) {
    if (e->target_handle != "model") continue;
    const graph::NodeSpec* trainer = edges.node(e->target);
    if (!trainer || trainer->type != "TrainingLoop") continue;
    const graph::NodeSpec* loader = edges.source_of(trainer->id, "dataloader");
    if (!loader || loader->type != "DataLoader") continue;
    const graph::NodeSpec* data = edges.source_of(loader->id, "dataset");
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
/// thread); a model past those bounds is only parsed. A spec traced for one
/// sample shape is traced once however many models share it, and a graph
/// traces at most kTracesMax distinct ones (each may take a tenth of a
/// second): the rest are only parsed, so one graph cannot make validation
/// take minutes.
constexpr size_t kTracesMax = 16;

std::vector<graph::Issue> check_sequential_models(const graph::Graph& g, const graph::Plan& plan, bool thorough) {
  std::vector<graph::Issue> issues;
  std::optional<DataEdges> edges;                                      // made when a model is first traced
  std::unordered_map<std::string, std::optional<std::string>> traced;  // spec + shape -> the trace's fault
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
    if (!thorough) continue;
    if (!edges) edges.emplace(g);
    const auto source = sample_source(*edges, n);
    if (!source) continue;
    model::ShapeLimits limits;
    limits.input_elements_max = int64_t{1} << 20;
    limits.parameters_max = int64_t{1} << 22;
    limits.activations_max = int64_t{1} << 22;
    limits.multiply_adds_max = 2e8;
    const std::string key = spec.dump() + '\n' + shape_text(source->shape);
    auto found = traced.find(key);
    if (found == traced.end()) {
      if (traced.size() >= kTracesMax) continue;
      std::optional<std::string> fault;
      try {
        const model::ShapeTrace trace = model::trace_layer_shapes(spec, source->shape, limits);
        if (trace.error && !trace.error->over_limit) fault = trace.error->message;
      } catch (const model::ShapeRequestError&) {  // a sample too large to trace here: the run will tell
      }
      found = traced.emplace(key, std::move(fault)).first;
    }
    if (found->second)
      add("for a sample of shape " + shape_text(source->shape) + " from " + source->dataset->type + " \"" +
          source->dataset->id + "\" (trained by " + source->trainer->id + "): " + *found->second);
  }
  return issues;
}

}  // namespace

void nodes::register_model_nodes(NodeRegistry& r) {
  register_sequential_model(r);
  r.add_check(check_sequential_models);
}

}  // namespace codefy
