// The layer nodes' shared input checks and module store (see the header).
#include "nodes/layer_node_support.h"

#include "model/layer_catalog.h"
#include "model/layer_spec_error.h"
#include "model/params.h"
#include "nodes/tensor_checks.h"
#include "util/parse.h"

#include <algorithm>

namespace codefy {

namespace layer_node {

using nodes::shape_text;

// ---------------------------------------------------------------------------
// Input checks.

[[noreturn]] void fail_shape(const std::string& port, const std::string& expected, const Tensor& got) {
  NodeContext::fail_input(port, "expected " + expected + ", got a tensor of shape " + shape_text(got.sizes()));
}

const Tensor& tensor_input(const NodeContext& ctx, const std::string& port) { return ctx.input_as<Tensor>(port); }

const Tensor& float_input(const NodeContext& ctx, const std::string& port) {
  const Tensor& x = tensor_input(ctx, port);
  if (!x.is_floating_point())
    NodeContext::fail_input(port, "expected a floating-point tensor, got " + torch_dtype_name(x.scalar_type()) +
                                      " of shape " + shape_text(x.sizes()));
  return x;
}

std::string ranks_text(const std::vector<int64_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i)
    out += (i == 0 ? "" : i + 1 == ranks.size() ? " or " : ", ") + std::to_string(ranks[i]);
  return out + "-D";
}

void require_rank(const std::string& port, const Tensor& x, const std::vector<int64_t>& ranks,
                  const std::string& layout) {
  for (int64_t r : ranks)
    if (x.dim() == r) return;
  fail_shape(port, "a " + ranks_text(ranks) + " tensor " + layout, x);
}

void require_size(const std::string& port, const Tensor& x, const std::vector<int64_t>& ranks,
                  const std::string& layout, int64_t dim, const std::string& name, const std::string& param,
                  int64_t size) {
  bool rank_ok = false;
  for (int64_t r : ranks) rank_ok = rank_ok || x.dim() == r;
  if (!rank_ok || x.size(dim) != size)
    fail_shape(port,
               "a " + ranks_text(ranks) + " tensor " + layout + " with " + name + " = " +
                   (name == param ? "" : param + " = ") + std::to_string(size),
               x);
}

void require_window(const std::string& port, const Tensor& x, int64_t first, int64_t kernel, int64_t padding) {
  if (kernel < 1 || padding < 0) return;  // the layer's builder names the param
  for (int64_t d = first; d < x.dim(); ++d)
    if (x.size(d) + 2 * padding < kernel)
      fail_shape(port,
                 "each spatial size to be at least " + std::to_string(kernel - 2 * padding) + " (kernel_size " +
                     std::to_string(kernel) + " with padding " + std::to_string(padding) + ")",
                 x);
}

std::optional<std::vector<int64_t>> parse_sizes(std::string_view text) {
  std::vector<int64_t> sizes;
  while (true) {
    const size_t comma = text.find(',');
    std::string_view part = text.substr(0, comma);
    const size_t first = part.find_first_not_of(" \t");
    if (first != std::string_view::npos) {
      part = part.substr(first, part.find_last_not_of(" \t") + 1 - first);
      const auto size = util::parse_int(part);
      if (!size) return std::nullopt;
      sizes.push_back(*size);
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  if (sizes.empty()) return std::nullopt;
  return sizes;
}

std::vector<int64_t> sizes_param(const NodeContext& ctx, const std::string& name, const std::string& example) {
  const nlohmann::json& v = ctx.params().at(name);
  std::optional<std::vector<int64_t>> sizes;
  if (v.is_number_integer())
    sizes = std::vector<int64_t>{v.get<int64_t>()};
  else if (v.is_string())
    sizes = parse_sizes(v.get<std::string>());
  if (!sizes || std::any_of(sizes->begin(), sizes->end(), [](int64_t s) { return s < 1; }))
    NodeContext::fail_param(
        name, "expected positive whole numbers separated by commas (e.g. " + example + "), got " + v.dump());
  return *sizes;
}

int64_t int_at_least(const NodeContext& ctx, const std::string& name, int64_t min) {
  const int64_t v = ctx.param_int(name);
  if (v < min) NodeContext::fail_param(name, "must be at least " + std::to_string(min) + ", got " + std::to_string(v));
  return v;
}

// ---------------------------------------------------------------------------
// Modules: built from the layer table, kept in the node state store.

model::BuiltLayer table_layer(const char* type, const nlohmann::json& params) {
  const model::LayerDef* def = model::find_layer_def(type);
  try {
    const model::LayerParams p("", "", &params, model::layer_param_defs(type));
    return def->build(p);
  } catch (const model::LayerSpecError& e) {
    // Without a layer id and type its message is `parameter "<name>": <what>`;
    // the executor adds the node's identity and the param itself.
    std::string message = e.what();
    const std::string prefix = "parameter \"" + e.param() + "\": ";
    if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
    if (e.param().empty()) throw NodeFailure("", message);
    NodeContext::fail_param(e.param(), message);
  }
}

std::shared_ptr<LayerModule> kept_layer(const NodeContext& ctx, const std::function<model::BuiltLayer()>& build) {
  const RunSettings& run = ctx.run();
  const std::string key = ctx.node().type + '\n' + ctx.params().dump() + '\n' + std::to_string(ctx.seed());
  const std::string slot = node_state_key(run.state_scope, ctx.node().id);
  if (run.state_store) {
    if (auto kept = run.state_store->get(slot); kept && kept->key == key) {
      const auto it = kept->outputs.find("module");
      if (it != kept->outputs.end())
        if (const auto* model = std::get_if<train::ModelPtr>(&it->second))
          if (auto layer = std::dynamic_pointer_cast<LayerModule>(*model)) return layer;
    }
  }
  torch::manual_seed(ctx.seed());
  auto layer = std::make_shared<LayerModule>(build());
  if (run.state_store) {
    ValueMap kept{{"module", train::ModelPtr(layer)}};
    const int64_t bytes = value_bytes(kept);
    run.state_store->put(slot, PersistedState{key, std::move(kept)}, bytes);
  }
  return layer;
}

void ready(torch::nn::Module& m, const Tensor& x, bool train) {
  m.train(train);
  const auto params = m.parameters();
  if (params.empty()) return;
  if (params.front().device() != x.device()) m.to(x.device());
  if (x.is_floating_point() && params.front().scalar_type() != x.scalar_type()) m.to(x.scalar_type());
}

Tensor run_layer(LayerModule& layer, const Tensor& x, bool train) {
  ready(layer, x, train);
  torch::NoGradGuard no_grad;
  return layer.forward(x);
}

Tensor run_once(const model::BuiltLayer& layer, const Tensor& x, bool train) {
  layer.module->train(train);
  torch::NoGradGuard no_grad;
  return layer.forward(x);
}

graph::PortDef tensor_in(std::string description) {
  return def::in("tensor", DataType::kTensor, std::move(description));
}
graph::PortDef tensor_out(std::string description) {
  return def::out("tensor", DataType::kTensor, std::move(description));
}

}  // namespace layer_node

void nodes::register_layer_nodes(NodeRegistry& r) {
  layer_node::register_vision_layers(r);
  layer_node::register_sequence_layers(r);
}

}  // namespace codefy
