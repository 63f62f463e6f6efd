// What the layer nodes share (layer_nodes_vision.cpp, layer_nodes_sequence.cpp):
// input checks that name the port and both shapes before anything large is
// allocated, and the modules a layer node builds once from the layer table
// and keeps in the node state store.
#pragma once

#include "engine/node.h"
#include "model/layer_table.h"
#include "nodes/library.h"

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace codefy::layer_node {

using graph::DataType;
using torch::Tensor;

/// Fails blaming input `port`: what it should have been, and the shape it has.
[[noreturn]] void fail_shape(const std::string& port, const std::string& expected, const Tensor& got);
/// Input `port` as a tensor; a MODEL or a number there is refused by its kind.
const Tensor& tensor_input(const NodeContext& ctx, const std::string& port);
/// Input `port`, which must hold floating-point numbers (a layer's weights are float).
const Tensor& float_input(const NodeContext& ctx, const std::string& port);
/// "2, 3 or 4-D".
std::string ranks_text(const std::vector<int64_t>& ranks);
/// `x` must have one of `ranks` dimensions (`layout` says what they are).
void require_rank(const std::string& port, const Tensor& x, const std::vector<int64_t>& ranks,
                  const std::string& layout);
/// `x` must have one of `ranks` dimensions and size `size` in dimension `dim`
/// (negative: from the end), the value of param `param`.
void require_size(const std::string& port, const Tensor& x, const std::vector<int64_t>& ranks,
                  const std::string& layout, int64_t dim, const std::string& name, const std::string& param,
                  int64_t size);
/// Each spatial size of `x` (its dimensions from `first` on), padded on both
/// sides, must hold one window of `kernel`.
void require_window(const std::string& port, const Tensor& x, int64_t first, int64_t kernel, int64_t padding);
/// Comma-separated whole numbers ("64,32", spaces allowed); nullopt when empty or not all such.
std::optional<std::vector<int64_t>> parse_sizes(std::string_view text);
/// Param `name` as sizes: a number, or text of comma-separated ones, each >= 1.
std::vector<int64_t> sizes_param(const NodeContext& ctx, const std::string& name, const std::string& example);
/// Fails blaming `name` unless it is at least `min`.
int64_t int_at_least(const NodeContext& ctx, const std::string& name, int64_t min);

/// The layer table's `type` built from `params` (its names), with its checks;
/// a param it refuses is blamed on the node param of the same name.
model::BuiltLayer table_layer(const char* type, const nlohmann::json& params);

template <class Holder>
model::BuiltLayer built(Holder holder) {
  const auto& impl = holder.ptr();
  return {impl, [impl](const Tensor& x) { return impl->forward(x); }};
}

/// A layer node's module as a MODEL value, the form the node state store
/// keeps (and counts the bytes of). Its one-tensor forward is the layer's.
class LayerModule : public train::Model {
 public:
  explicit LayerModule(model::BuiltLayer layer) : train::Model("LayerModule"), forward_(std::move(layer.forward)) {
    layer_ = register_module("layer", std::move(layer.module));
  }
  Tensor forward(const Tensor& x) override { return forward_(x); }
  std::string describe() const override {
    std::ostringstream os;
    layer_->pretty_print(os);
    return os.str();
  }
  /// The layer as the module type its node built.
  template <class M>
  M& as() const {
    return dynamic_cast<M&>(*layer_);
  }

 private:
  std::shared_ptr<torch::nn::Module> layer_;
  model::LayerFn forward_;
};

/// This node's module: the one in the node state store when it was built
/// from the same params and seed, so a second run reuses its weights and an
/// edited param builds a new one; else `build()`'s, with LibTorch's RNG
/// seeded from the node's seed, kept for the next run. Without a store (a
/// CLI run) every run builds afresh - the same weights, from the same seed.
std::shared_ptr<LayerModule> kept_layer(const NodeContext& ctx, const std::function<model::BuiltLayer()>& build);
/// Readies `m` to run on `x`: train or eval mode, and on `x`'s device (and,
/// for floating input, its dtype) - a kept module follows its input.
void ready(torch::nn::Module& m, const Tensor& x, bool train);
/// Runs a one-tensor layer on `x` without autograd (forward nodes do not train).
Tensor run_layer(LayerModule& layer, const Tensor& x, bool train);
/// Runs a parameter-free layer built for this call only.
Tensor run_once(const model::BuiltLayer& layer, const Tensor& x, bool train);

graph::PortDef tensor_in(std::string description);
graph::PortDef tensor_out(std::string description);

/// The Utility, CNN and Normalization layer nodes.
void register_vision_layers(NodeRegistry& r);
/// The Transformer, RNN and diffusion layer nodes.
void register_sequence_layers(NodeRegistry& r);

}  // namespace codefy::layer_node
