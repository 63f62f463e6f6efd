// Layers as forward nodes on a tensor: CodefyUI's Linear, Conv2d, BatchNorm2d,
// MultiHeadAttention, LSTM... nodes. A node with weights builds its module
// once (from the layer table where SequentialModel has the same layer), keeps
// it in the node state store and runs it on its input; the input's shape is
// checked against the params first, so a mismatch names the port and both
// shapes before anything large is allocated.
#include "model/layer_spec_error.h"
#include "model/layer_table.h"
#include "model/modules.h"
#include "model/params.h"
#include "nodes/library.h"
#include "nodes/tensor_checks.h"
#include "util/parse.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace codefy {

// Named as well as anonymous: the node files are compiled together (a unity
// build), where another file's helpers of the same name would collide.
namespace layer_node {
namespace {

using graph::DataType;
using nodes::shape_text;
using torch::Tensor;

// ---------------------------------------------------------------------------
// Input checks.

/// Fails blaming input `port`: what it should have been, and the shape it has.
[[noreturn]] void fail_shape(const std::string& port, const std::string& expected, const Tensor& got) {
  NodeContext::fail_input(port, "expected " + expected + ", got a tensor of shape " + shape_text(got.sizes()));
}

/// Input `port` as a tensor; a MODEL or a number there is refused by its kind.
const Tensor& tensor_input(const NodeContext& ctx, const std::string& port) { return ctx.input_as<Tensor>(port); }

/// Input `port`, which must hold floating-point numbers (a layer's weights are float).
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

/// `x` must have one of `ranks` dimensions (`layout` says what they are).
void require_rank(const std::string& port, const Tensor& x, const std::vector<int64_t>& ranks,
                  const std::string& layout) {
  for (int64_t r : ranks)
    if (x.dim() == r) return;
  fail_shape(port, "a " + ranks_text(ranks) + " tensor " + layout, x);
}

/// `x` must have one of `ranks` dimensions and size `size` in dimension `dim`
/// (negative: from the end), the value of param `param`.
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

/// Each spatial size of `x` (its dimensions from `first` on), padded on both
/// sides, must hold one window of `kernel`.
void require_window(const std::string& port, const Tensor& x, int64_t first, int64_t kernel, int64_t padding) {
  if (kernel < 1 || padding < 0) return;  // the layer's builder names the param
  for (int64_t d = first; d < x.dim(); ++d)
    if (x.size(d) + 2 * padding < kernel)
      fail_shape(port,
                 "each spatial size to be at least " + std::to_string(kernel - 2 * padding) + " (kernel_size " +
                     std::to_string(kernel) + " with padding " + std::to_string(padding) + ")",
                 x);
}

/// Comma-separated whole numbers ("64,32", spaces allowed); nullopt when empty or not all such.
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

/// Param `name` as sizes: a number, or text of comma-separated ones, each >= 1.
std::vector<int64_t> sizes_param(const NodeContext& ctx, const std::string& name, const std::string& example) {
  const nlohmann::json& v = ctx.params().at(name);
  std::optional<std::vector<int64_t>> sizes;
  if (v.is_number_integer())
    sizes = std::vector<int64_t>{v.get<int64_t>()};
  else if (v.is_string())
    sizes = parse_sizes(v.get<std::string>());
  if (!sizes || std::any_of(sizes->begin(), sizes->end(), [](int64_t s) { return s < 1; }))
    NodeContext::fail_param(name, "expected positive whole numbers separated by commas (e.g. " + example + "), got " +
                                      v.dump());
  return *sizes;
}

/// Fails blaming `name` unless it is at least `min`.
int64_t int_at_least(const NodeContext& ctx, const std::string& name, int64_t min) {
  const int64_t v = ctx.param_int(name);
  if (v < min) NodeContext::fail_param(name, "must be at least " + std::to_string(min) + ", got " + std::to_string(v));
  return v;
}

// ---------------------------------------------------------------------------
// Modules: built from the layer table, kept in the node state store.

/// The layer table's `type` built from `params` (its names), with its checks;
/// a param it refuses is blamed on the node param of the same name.
model::BuiltLayer table_layer(const char* type, const nlohmann::json& params) {
  const model::LayerDef* def = model::find_layer_def(type);
  try {
    const model::LayerParams p("", "", &params, def->params);
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

template <class Holder>
model::BuiltLayer built(Holder holder) {
  auto impl = holder.ptr();
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

/// Readies `m` to run on `x`: train or eval mode, and on `x`'s device (and,
/// for floating input, its dtype) - a kept module follows its input.
void ready(torch::nn::Module& m, const Tensor& x, bool train) {
  m.train(train);
  const auto params = m.parameters();
  if (params.empty()) return;
  if (params.front().device() != x.device()) m.to(x.device());
  if (x.is_floating_point() && params.front().scalar_type() != x.scalar_type()) m.to(x.scalar_type());
}

/// Runs a one-tensor layer on `x` without autograd (forward nodes do not train).
Tensor run_layer(LayerModule& layer, const Tensor& x, bool train) {
  ready(layer, x, train);
  torch::NoGradGuard no_grad;
  return layer.forward(x);
}

/// Runs a parameter-free layer built for this call only.
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

// ---------------------------------------------------------------------------
// Utility: Linear, Embedding.

void register_linear(NodeRegistry& r) {
  graph::NodeDef d{"Linear",
                   "Utility",
                   "Fully-connected (dense) layer: $y = xW^T + b$. Wraps nn.Linear(in_features, out_features).",
                   {tensor_in("Input tensor (..., in_features)")},
                   {tensor_out("Output tensor (..., out_features)")},
                   {def::integer("in_features", 512, "Input feature size"),
                    def::integer("out_features", 10, "Output feature size")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const int64_t in = ctx.param_int("in_features");
    const Tensor& x = float_input(ctx, "tensor");
    if (x.dim() < 1 || x.size(-1) != in)
      fail_shape("tensor", "a tensor (..., in_features) with in_features = " + std::to_string(in), x);
    auto layer = kept_layer(ctx, [&] {
      return table_layer("Linear", {{"in_features", in}, {"out_features", ctx.param_int("out_features")}});
    });
    return ValueMap{{"tensor", run_layer(*layer, x, false)}};
  });
}

void register_embedding(NodeRegistry& r) {
  graph::NodeDef d{"Embedding",
                   "Utility",
                   "Learnable embedding lookup (wraps nn.Embedding). Maps integer indices to vectors from a trainable "
                   "weight matrix $W$ — conceptually $E[i] = W[i, :]$. For pre-trained word vectors (GloVe, etc.) "
                   "use the `WordVector` node in the LLM category instead.",
                   {tensor_in("Input tensor of integer indices (LongTensor)")},
                   {tensor_out("Embedding output tensor")},
                   {def::integer("num_embeddings", 10000, "Size of the vocabulary"),
                    def::integer("embedding_dim", 256, "Dimension of each embedding vector"),
                    def::integer("padding_idx", -1, "Index for padding token (-1 for none)")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const int64_t count = ctx.param_int("num_embeddings");
    const Tensor& given = tensor_input(ctx, "tensor");
    // Whole numbers in a float tensor (TensorCreate's arange) count as indices too.
    if (given.scalar_type() == torch::kBool || given.is_complex() ||
        (given.is_floating_point() && given.numel() > 0 && !torch::equal(given, given.trunc())))
      NodeContext::fail_input("tensor", "expected integer indices, got " + torch_dtype_name(given.scalar_type()) +
                                            " of shape " + shape_text(given.sizes()) +
                                            (given.is_floating_point() ? " holding fractions" : ""));
    const Tensor indices = given.to(torch::kLong);
    if (indices.numel() > 0) {
      const int64_t low = indices.min().item<int64_t>(), high = indices.max().item<int64_t>();
      if (low < 0 || high >= count)
        NodeContext::fail_input("tensor", "expected indices from 0 to num_embeddings - 1 = " +
                                              std::to_string(count - 1) + ", got values from " + std::to_string(low) +
                                              " to " + std::to_string(high) + " (shape " + shape_text(given.sizes()) + ")");
    }
    auto layer = kept_layer(ctx, [&] {
      nlohmann::json p = {{"num_embeddings", count}, {"embedding_dim", ctx.param_int("embedding_dim")}};
      if (const int64_t pad = ctx.param_int("padding_idx"); pad >= 0) p["padding_idx"] = pad;  // < 0: none
      return table_layer("Embedding", p);
    });
    return ValueMap{{"tensor", run_layer(*layer, indices, false)}};
  });
}

// ---------------------------------------------------------------------------
// CNN: convolutions, pooling, dropout, activation, BatchNorm2d.

const char* const kImage = "(N, C, H, W)";

void register_conv(NodeRegistry& r, const char* name, const char* description, const char* input, int64_t dims) {
  graph::NodeDef d{name,
                   "CNN",
                   description,
                   {tensor_in(input)},
                   {tensor_out("Convolved output tensor")},
                   {def::integer("in_channels", 1, "Number of input channels"),
                    def::integer("out_channels", 32, "Number of output channels"),
                    def::integer("kernel_size", 3, "Size of the convolving kernel"),
                    def::integer("stride", 1, "Stride of the convolution"),
                    def::integer("padding", 1, "Zero-padding added to both sides")}};
  const std::string type = name;
  const std::string layout = dims == 1 ? "(N, C, L)" : kImage;
  r.add(std::move(d), [type, layout, dims](NodeContext& ctx) {
    const int64_t in = ctx.param_int("in_channels"), kernel = ctx.param_int("kernel_size");
    const int64_t padding = ctx.param_int("padding");
    const Tensor& x = float_input(ctx, "tensor");
    require_size("tensor", x, {dims + 2}, layout, 1, "C", "in_channels", in);
    require_window("tensor", x, 2, kernel, padding);
    auto layer = kept_layer(ctx, [&] {
      return table_layer(type.c_str(), {{"in_channels", in},
                                        {"out_channels", ctx.param_int("out_channels")},
                                        {"kernel_size", kernel},
                                        {"stride", ctx.param_int("stride")},
                                        {"padding", padding}});
    });
    return ValueMap{{"tensor", run_layer(*layer, x, false)}};
  });
}

void register_conv_transpose2d(NodeRegistry& r) {
  graph::NodeDef d{"ConvTranspose2d",
                   "CNN",
                   "Apply 2D transposed convolution (deconvolution) to input tensor (wraps nn.ConvTranspose2d). Used "
                   "to upsample feature maps.",
                   {tensor_in("Input tensor (N, C, H, W)")},
                   {tensor_out("Upsampled output tensor")},
                   {def::integer("in_channels", 64, "Number of input channels"),
                    def::integer("out_channels", 32, "Number of output channels"),
                    def::integer("kernel_size", 2, "Size of the convolving kernel"),
                    def::integer("stride", 2, "Stride of the convolution"),
                    def::integer("padding", 0, "Zero-padding added to both sides"),
                    def::integer("output_padding", 0, "Additional size added to output shape")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const int64_t in = ctx.param_int("in_channels");
    const Tensor& x = float_input(ctx, "tensor");
    require_size("tensor", x, {4}, kImage, 1, "C", "in_channels", in);
    auto layer = kept_layer(ctx, [&] {
      return table_layer("ConvTranspose2d", {{"in_channels", in},
                                             {"out_channels", ctx.param_int("out_channels")},
                                             {"kernel_size", ctx.param_int("kernel_size")},
                                             {"stride", ctx.param_int("stride")},
                                             {"padding", ctx.param_int("padding")},
                                             {"output_padding", ctx.param_int("output_padding")}});
    });
    return ValueMap{{"tensor", run_layer(*layer, x, false)}};
  });
}

void register_max_pool2d(NodeRegistry& r) {
  graph::NodeDef d{"MaxPool2d",
                   "CNN",
                   "Largest value in each window; height and width shrink",
                   {tensor_in("Input tensor (N, C, H, W)")},
                   {tensor_out("Pooled output tensor")},
                   {def::integer("kernel_size", 2, "Size of the max pooling window"),
                    def::integer("stride", 2, "Stride of the pooling window")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const int64_t kernel = ctx.param_int("kernel_size");
    const Tensor& x = tensor_input(ctx, "tensor");
    require_rank("tensor", x, {4}, kImage);
    require_window("tensor", x, 2, kernel, 0);
    const auto pool = table_layer("MaxPool2d", {{"kernel_size", kernel}, {"stride", ctx.param_int("stride")}});
    return ValueMap{{"tensor", run_once(pool, x, false)}};
  });
}

void register_avg_pool2d(NodeRegistry& r) {
  graph::NodeDef d{"AvgPool2d",
                   "CNN",
                   "Average of each window; height and width shrink",
                   {tensor_in("Input tensor (N, C, H, W)")},
                   {tensor_out("Pooled output tensor")},
                   {def::integer("kernel_size", 2, "Size of the pooling window"),
                    def::integer("stride", 2, "Stride of the pooling window"),
                    def::integer("padding", 0, "Zero-padding added to both sides")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const int64_t kernel = ctx.param_int("kernel_size"), padding = ctx.param_int("padding");
    if (kernel >= 1 && padding * 2 > kernel)
      NodeContext::fail_param("padding", "must be at most half of kernel_size (" + std::to_string(kernel) + "), got " +
                                             std::to_string(padding));
    const Tensor& x = float_input(ctx, "tensor");
    require_rank("tensor", x, {4}, kImage);
    require_window("tensor", x, 2, kernel, padding);
    const auto pool = table_layer(
        "AvgPool2d", {{"kernel_size", kernel}, {"stride", ctx.param_int("stride")}, {"padding", padding}});
    return ValueMap{{"tensor", run_once(pool, x, false)}};
  });
}

void register_adaptive_avg_pool2d(NodeRegistry& r) {
  graph::NodeDef d{"AdaptiveAvgPool2d",
                   "CNN",
                   "Averages each channel to a fixed height and width",
                   {tensor_in("Input tensor (N, C, H, W)")},
                   {tensor_out("Pooled output tensor with fixed spatial size")},
                   {def::integer("output_height", 1, "Target output height"),
                    def::integer("output_width", 1, "Target output width")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const int64_t height = int_at_least(ctx, "output_height", 1), width = int_at_least(ctx, "output_width", 1);
    const Tensor& x = float_input(ctx, "tensor");
    require_rank("tensor", x, {4}, kImage);
    const auto pool = table_layer("AdaptiveAvgPool2d", {{"output_size", {height, width}}});
    return ValueMap{{"tensor", run_once(pool, x, false)}};
  });
}

void register_dropout(NodeRegistry& r) {
  graph::NodeDef d{"Dropout",
                   "CNN",
                   "Zeros each element at random, scaling the rest up",
                   {tensor_in("Input tensor")},
                   {tensor_out("Tensor with dropout applied")},
                   {def::number("p", 0.5, "Probability of an element to be zeroed", 0.0, 1.0)}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const Tensor& x = float_input(ctx, "tensor");
    const auto dropout = table_layer("Dropout", {{"p", ctx.param_float("p")}});
    // In training mode, as CodefyUI's node: it drops on every run, from the node's seed.
    return ValueMap{{"tensor", run_once(dropout, x, true)}};
  });
}

void register_activation(NodeRegistry& r) {
  // CodefyUI's function names and the layer table's types for them.
  static const std::vector<std::pair<std::string, const char*>> kFunctions = {
      {"relu", "ReLU"}, {"sigmoid", "Sigmoid"}, {"tanh", "Tanh"}, {"leaky_relu", "LeakyReLU"},
      {"elu", "ELU"},   {"gelu", "GELU"},       {"silu", "SiLU"}, {"mish", "Mish"},
      {"selu", "SELU"}, {"softmax", "Softmax"}, {"hardswish", "Hardswish"}, {"prelu", "PReLU"}};
  std::vector<std::string> options;
  for (const auto& f : kFunctions) options.push_back(f.first);
  graph::NodeDef d{"Activation",
                   "CNN",
                   "Applies the selected nonlinearity; shape unchanged",
                   {tensor_in("Input tensor")},
                   {tensor_out("Activated output tensor")},
                   {def::select("function", "relu", options, "Activation function to apply")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const std::string function = ctx.param_string("function");
    const auto it = std::find_if(kFunctions.begin(), kFunctions.end(),
                                 [&](const auto& f) { return f.first == function; });
    if (it == kFunctions.end()) NodeContext::fail_param("function", "unsupported activation function: " + function);
    const Tensor& x = tensor_input(ctx, "tensor");
    // Softmax over the last dimension; prelu a fresh slope of 0.25 each run, as CodefyUI.
    const auto activation = table_layer(it->second, nlohmann::json::object());
    return ValueMap{{"tensor", run_once(activation, x, false)}};
  });
}

/// BatchNorm normalises with the batch's statistics (CodefyUI's node leaves
/// its module in training mode and describes per-batch statistics), which
/// needs more than one value per channel.
void require_batch_values(const Tensor& x) {
  int64_t per_channel = x.size(0);
  for (int64_t d = 2; d < x.dim(); ++d) per_channel *= x.size(d);
  if (per_channel <= 1)
    fail_shape("tensor", "more than one value per channel to normalise with the batch's statistics", x);
}

void register_batch_norm2d(NodeRegistry& r) {
  graph::NodeDef d{"BatchNorm2d",
                   "CNN",
                   "Apply 2D batch normalization (wraps nn.BatchNorm2d). Normalises each channel: $y = \\frac{x - "
                   "\\mu_C}{\\sqrt{\\sigma_C^2 + \\epsilon}} \\gamma + \\beta$ where $\\mu_C, \\sigma_C^2$ are "
                   "per-channel statistics over (N, H, W).",
                   {tensor_in("Input tensor (N, C, H, W)")},
                   {tensor_out("Normalized output tensor")},
                   {def::integer("num_features", 32, "Number of features (channels) to normalize")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const int64_t features = ctx.param_int("num_features");
    const Tensor& x = float_input(ctx, "tensor");
    require_size("tensor", x, {4}, kImage, 1, "C", "num_features", features);
    require_batch_values(x);
    auto layer = kept_layer(ctx, [&] { return table_layer("BatchNorm2d", {{"num_features", features}}); });
    return ValueMap{{"tensor", run_layer(*layer, x, true)}};
  });
}

// ---------------------------------------------------------------------------
// Normalization.

void register_batch_norm1d(NodeRegistry& r) {
  graph::NodeDef d{"BatchNorm1d",
                   "Normalization",
                   "Apply 1D batch normalization (wraps nn.BatchNorm1d). Used after Linear layers.",
                   {tensor_in("Input tensor (N, C) or (N, C, L)")},
                   {tensor_out("Normalized output tensor")},
                   {def::integer("num_features", 128, "Number of features to normalize")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const int64_t features = ctx.param_int("num_features");
    const Tensor& x = float_input(ctx, "tensor");
    require_size("tensor", x, {2, 3}, "(N, C) or (N, C, L)", 1, "C", "num_features", features);
    require_batch_values(x);
    auto layer = kept_layer(ctx, [&] { return table_layer("BatchNorm1d", {{"num_features", features}}); });
    return ValueMap{{"tensor", run_layer(*layer, x, true)}};
  });
}

void register_layer_norm(NodeRegistry& r) {
  graph::NodeDef d{"LayerNorm",
                   "Normalization",
                   "Apply layer normalization (wraps nn.LayerNorm). $y = \\frac{x - \\mu}{\\sqrt{\\sigma^2 + "
                   "\\epsilon}} \\gamma + \\beta$",
                   {tensor_in("Input tensor")},
                   {tensor_out("Normalized output tensor")},
                   {def::text("normalized_shape", "512",
                              "Shape to normalize over as comma-separated ints (e.g. '512' or '64,32')"),
                    def::number("eps", 1e-5, "Epsilon for numerical stability")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const std::vector<int64_t> shape = sizes_param(ctx, "normalized_shape", "'512' or '64,32'");
    const Tensor& x = float_input(ctx, "tensor");
    const auto n = static_cast<int64_t>(shape.size());
    bool fits = x.dim() >= n;
    for (int64_t i = 0; fits && i < n; ++i) fits = x.size(x.dim() - n + i) == shape[static_cast<size_t>(i)];
    if (!fits)
      fail_shape("tensor", "a tensor ending in normalized_shape " + nlohmann::json(shape).dump(), x);
    auto layer = kept_layer(
        ctx, [&] { return table_layer("LayerNorm", {{"normalized_shape", shape}, {"eps", ctx.param_float("eps")}}); });
    return ValueMap{{"tensor", run_layer(*layer, x, false)}};
  });
}

void register_group_norm(NodeRegistry& r) {
  graph::NodeDef d{"GroupNorm",
                   "Normalization",
                   "Apply group normalization (wraps nn.GroupNorm). Used in modern CNN architectures.",
                   {tensor_in("Input tensor (N, C, *)")},
                   {tensor_out("Normalized output tensor")},
                   {def::integer("num_groups", 32, "Number of groups to divide channels into"),
                    def::integer("num_channels", 256, "Number of channels (must be divisible by num_groups)")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const int64_t channels = ctx.param_int("num_channels");
    const Tensor& x = float_input(ctx, "tensor");
    if (x.dim() < 2 || x.size(1) != channels)
      fail_shape("tensor", "a tensor (N, C, *) with C = num_channels = " + std::to_string(channels), x);
    auto layer = kept_layer(ctx, [&] {
      return table_layer("GroupNorm", {{"num_groups", ctx.param_int("num_groups")}, {"num_channels", channels}});
    });
    return ValueMap{{"tensor", run_layer(*layer, x, false)}};
  });
}

void register_instance_norm2d(NodeRegistry& r) {
  graph::NodeDef d{"InstanceNorm2d",
                   "Normalization",
                   "Apply 2D instance normalization (wraps nn.InstanceNorm2d). Used in style transfer and image "
                   "generation.",
                   {tensor_in("Input tensor (N, C, H, W)")},
                   {tensor_out("Normalized output tensor")},
                   {def::integer("num_features", 64, "Number of features (channels)"),
                    def::boolean("affine", false, "Whether to use learnable affine parameters")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const int64_t features = ctx.param_int("num_features");
    const Tensor& x = float_input(ctx, "tensor");
    require_size("tensor", x, {4}, kImage, 1, "C", "num_features", features);
    if (x.size(2) * x.size(3) <= 1)
      fail_shape("tensor", "more than one spatial value (H x W > 1) to normalise each instance over", x);
    auto layer = kept_layer(ctx, [&] {
      return table_layer("InstanceNorm2d", {{"num_features", features}, {"affine", ctx.param_bool("affine")}});
    });
    return ValueMap{{"tensor", run_layer(*layer, x, false)}};
  });
}

// ---------------------------------------------------------------------------
// LLM and Transformer: PositionalEncoding, MultiHeadAttention, encoder and
// decoder stacks, MoELayer. CodefyUI builds these sequence-first.

/// A sequence-first tensor with a batch dimension: `x` itself, or, when
/// `unbatched` ([seq, D]), a batch of one ([seq, 1, D]).
Tensor as_batch(const Tensor& x, bool unbatched) { return unbatched ? x.unsqueeze(1) : x; }

/// Vaswani et al.'s encoding, computed as CodefyUI computes it (float32).
Tensor sinusoidal_encoding(int64_t seq, int64_t d) {
  using torch::indexing::None;
  using torch::indexing::Slice;
  Tensor pe = torch::zeros({seq, d});
  const Tensor position = torch::arange(seq, torch::kFloat32).unsqueeze(1);
  const Tensor div_term = torch::exp(torch::arange(0, d, 2, torch::kFloat32) * -(std::log(10000.0) / d));
  const int64_t even = (d + 1) / 2, odd = d / 2;
  pe.index_put_({Slice(), Slice(0, None, 2)}, torch::sin(position * div_term.slice(0, 0, even)));
  pe.index_put_({Slice(), Slice(1, None, 2)}, torch::cos(position * div_term.slice(0, 0, odd)));
  return pe;
}

void register_positional_encoding(NodeRegistry& r) {
  graph::NodeDef d{"PositionalEncoding",
                   "LLM",
                   "Add positional information to token embeddings. `sinusoidal` uses the Vaswani et al. (2017) "
                   "formula PE(pos, 2i)=sin(pos/10000^(2i/d)); `learnable` returns a seeded random pattern "
                   "(deterministic per seed).",
                   {tensor_in("Input embeddings of shape [seq, D] or [seq, batch, D].")},
                   {tensor_out("Input + positional encoding, same shape as input."),
                    def::out("pe", DataType::kTensor,
                             "The positional encoding alone, shape [seq, D] — useful for visualisation.")},
                   {def::select("mode", "sinusoidal", {"sinusoidal", "learnable"},
                                "sinusoidal=Vaswani formula; learnable=seeded random init."),
                    def::integer("max_len", 512,
                                 "Maximum sequence length supported. Inputs longer than this raise an error.", 1),
                    def::integer("seed", 42, "Seed for `learnable` mode initialisation. Ignored for `sinusoidal`.")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const Tensor x = tensor_input(ctx, "tensor").to(torch::kFloat32);
    require_rank("tensor", x, {2, 3}, "[seq, D] or [seq, batch, D]");
    const int64_t seq = x.size(0), dim = x.size(-1), max_len = ctx.param_int("max_len");
    if (seq > max_len)
      fail_shape("tensor", "at most max_len = " + std::to_string(max_len) + " positions (dimension 0)", x);
    Tensor pe;
    if (ctx.param_string("mode") == "sinusoidal") {
      pe = sinusoidal_encoding(seq, dim);
    } else {
      // A generator of its own, so the node's global RNG stream is untouched.
      at::Generator gen = at::detail::createCPUGenerator(static_cast<uint64_t>(ctx.param_int("seed")));
      pe = torch::randn({seq, dim}, gen, torch::kFloat32) * (1.0 / std::sqrt(static_cast<double>(dim)));
    }
    pe = pe.to(x.device());
    return ValueMap{{"tensor", x.dim() == 2 ? x + pe : x + pe.unsqueeze(1)}, {"pe", pe}};
  });
}

void register_multi_head_attention(NodeRegistry& r) {
  graph::NodeDef d{"MultiHeadAttention",
                   "Transformer",
                   "Apply multi-head attention mechanism (wraps nn.MultiheadAttention). Core: "
                   "$\\text{Attention}(Q,K,V)=\\text{softmax}(\\frac{QK^T}{\\sqrt{d_k}})V$",
                   {def::in("query", DataType::kTensor, "Query tensor (seq_len, batch, embed_dim)"),
                    def::in("key", DataType::kTensor, "Key tensor (seq_len, batch, embed_dim)"),
                    def::in("value", DataType::kTensor, "Value tensor (seq_len, batch, embed_dim)")},
                   {def::out("output", DataType::kTensor, "Attention output tensor"),
                    def::out("weights", DataType::kTensor, "Attention weight tensor")},
                   {def::integer("embed_dim", 512, "Total dimension of the model"),
                    def::integer("num_heads", 8, "Number of parallel attention heads")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const int64_t dim = ctx.param_int("embed_dim");
    const char* const layout = "(seq_len, batch, embed_dim) or unbatched (seq_len, embed_dim)";
    const Tensor& q = float_input(ctx, "query");
    const Tensor& k = float_input(ctx, "key");
    const Tensor& v = float_input(ctx, "value");
    for (const auto& [port, t] : {std::pair<const char*, const Tensor&>{"query", q}, {"key", k}, {"value", v}}) {
      require_size(port, t, {2, 3}, layout, -1, "embed_dim", "embed_dim", dim);
      if (t.dim() != q.dim()) fail_shape(port, "as many dimensions as query " + shape_text(q.sizes()), t);
    }
    if (k.size(0) != v.size(0)) fail_shape("key", "the same seq_len as value " + shape_text(v.sizes()), k);
    for (const auto& [port, t] : {std::pair<const char*, const Tensor&>{"key", k}, {"value", v}})
      if (q.dim() == 3 && t.size(1) != q.size(1)) fail_shape(port, "the same batch as query " + shape_text(q.sizes()), t);
    auto layer = kept_layer(ctx, [&] {
      const int64_t heads = int_at_least(ctx, "num_heads", 1);
      int_at_least(ctx, "embed_dim", 1);
      if (dim % heads != 0)
        NodeContext::fail_param("num_heads", "embed_dim (" + std::to_string(dim) + ") must be divisible by num_heads (" +
                                                 std::to_string(heads) + ")");
      auto mha = torch::nn::MultiheadAttention(torch::nn::MultiheadAttentionOptions(dim, heads));
      auto impl = mha.ptr();  // the one-tensor forward is self-attention
      return model::BuiltLayer{impl, [impl](const Tensor& t) { return std::get<0>(impl->forward(t, t, t)); }};
    });
    ready(*layer, q, false);
    torch::NoGradGuard no_grad;
    // LibTorch's attention takes batched input only; unbatched input is a
    // batch of one, its outputs without that dimension, as PyTorch gives them.
    const bool unbatched = q.dim() == 2;
    auto [output, weights] = layer->as<torch::nn::MultiheadAttentionImpl>().forward(
        as_batch(q, unbatched), as_batch(k, unbatched), as_batch(v, unbatched));
    if (unbatched) {
      output = output.squeeze(1);
      weights = weights.squeeze(0);
    }
    return ValueMap{{"output", output}, {"weights", weights}};
  });
}

std::vector<graph::ParamDef> transformer_params() {
  return {def::integer("d_model", 512, "Dimension of the model"),
          def::integer("nhead", 8, "Number of attention heads"),
          def::integer("num_layers", 6, "Number of encoder layers"),
          def::integer("dim_feedforward", 2048, "Dimension of feedforward network")};
}

const char* const kSequence = "(seq_len, batch, d_model) or unbatched (seq_len, d_model)";

/// The options of one layer of a stack: PyTorch's defaults (dropout 0.1,
/// relu) but for what the node's params set; the stack runs in eval mode.
template <class LayerOptions>
LayerOptions transformer_layer(const NodeContext& ctx) {
  const int64_t d_model = int_at_least(ctx, "d_model", 1), heads = int_at_least(ctx, "nhead", 1);
  if (d_model % heads != 0)
    NodeContext::fail_param("nhead", "d_model (" + std::to_string(d_model) + ") must be divisible by nhead (" +
                                         std::to_string(heads) + ")");
  return LayerOptions(d_model, heads).dim_feedforward(int_at_least(ctx, "dim_feedforward", 1));
}

void register_transformer_encoder(NodeRegistry& r) {
  graph::NodeDef d{"TransformerEncoder",
                   "Transformer",
                   "Apply Transformer encoder stack to input tensor",
                   {tensor_in("Input tensor (seq_len, batch, d_model)")},
                   {tensor_out("Encoded output tensor")},
                   transformer_params()};
  r.add(std::move(d), [](NodeContext& ctx) {
    const Tensor& x = float_input(ctx, "tensor");
    require_size("tensor", x, {2, 3}, kSequence, -1, "d_model", "d_model", ctx.param_int("d_model"));
    auto layer = kept_layer(ctx, [&] {
      return built(torch::nn::TransformerEncoder(torch::nn::TransformerEncoderOptions(
          transformer_layer<torch::nn::TransformerEncoderLayerOptions>(ctx), int_at_least(ctx, "num_layers", 1))));
    });
    const bool unbatched = x.dim() == 2;
    const Tensor y = run_layer(*layer, as_batch(x, unbatched), false);
    return ValueMap{{"tensor", unbatched ? y.squeeze(1) : y}};
  });
}

void register_transformer_decoder(NodeRegistry& r) {
  auto params = transformer_params();
  params[2].description = "Number of decoder layers";
  graph::NodeDef d{"TransformerDecoder",
                   "Transformer",
                   "Apply Transformer decoder stack to input tensor with encoder memory",
                   {tensor_in("Target tensor (seq_len, batch, d_model)"),
                    def::in("memory", DataType::kTensor, "Encoder output / memory tensor")},
                   {tensor_out("Decoded output tensor")},
                   std::move(params)};
  r.add(std::move(d), [](NodeContext& ctx) {
    const int64_t d_model = ctx.param_int("d_model");
    const Tensor& x = float_input(ctx, "tensor");
    const Tensor& memory = float_input(ctx, "memory");
    require_size("tensor", x, {2, 3}, kSequence, -1, "d_model", "d_model", d_model);
    require_size("memory", memory, {x.dim()}, kSequence, -1, "d_model", "d_model", d_model);
    if (x.dim() == 3 && memory.size(1) != x.size(1))
      fail_shape("memory", "the same batch as tensor " + shape_text(x.sizes()), memory);
    auto layer = kept_layer(ctx, [&] {
      auto decoder = torch::nn::TransformerDecoder(torch::nn::TransformerDecoderOptions(
          transformer_layer<torch::nn::TransformerDecoderLayerOptions>(ctx), int_at_least(ctx, "num_layers", 1)));
      // The one-tensor forward attends to itself; the node passes the memory.
      auto impl = decoder.ptr();
      return model::BuiltLayer{impl, [impl](const Tensor& t) { return impl->forward(t, t); }};
    });
    ready(*layer, x, false);
    torch::NoGradGuard no_grad;
    const bool unbatched = x.dim() == 2;
    const Tensor y =
        layer->as<torch::nn::TransformerDecoderImpl>().forward(as_batch(x, unbatched), as_batch(memory, unbatched));
    return ValueMap{{"tensor", unbatched ? y.squeeze(1) : y}};
  });
}

void register_moe_layer(NodeRegistry& r) {
  graph::NodeDef d{
      "MoELayer",
      "Transformer",
      "Mixture-of-Experts FFN. For each token, a gate picks the top-k experts by softmax score; the layer output is "
      "the weighted sum of those experts' outputs. The architecture used in Switch / Mixtral / DeepSeek-MoE.",
      {def::in("x", DataType::kTensor, "Input hidden states [B, T, H].")},
      {def::out("output", DataType::kTensor, "MoE output, same shape as input [B, T, H]."),
       def::out("routing_weights", DataType::kTensor, "Per-token softmax weights over top-k experts [B, T, k]."),
       def::out("expert_indices", DataType::kTensor, "Per-token top-k expert ids [B, T, k].")},
      {def::integer("num_experts", 4, "Number of expert FFNs.", 1),
       def::integer("top_k", 2, "Experts per token (clamped to num_experts).", 1),
       def::integer("hidden_dim", 128, "Token hidden size H.", 1),
       def::integer("expert_hidden_dim", 256, "Inner width of each expert FFN.", 1),
       def::integer("seed", 42, "Init seed for reproducibility.")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const int64_t hidden = ctx.param_int("hidden_dim");
    Tensor x = tensor_input(ctx, "x").to(torch::kFloat32);
    require_size("x", x, {2, 3}, "[B, T, H] or [T, H]", -1, "H", "hidden_dim", hidden);
    if (x.dim() == 2) x = x.unsqueeze(0);  // [T, H] as [1, T, H], as CodefyUI
    auto layer = kept_layer(ctx, [&] {
      const int64_t experts = int_at_least(ctx, "num_experts", 1), top_k = int_at_least(ctx, "top_k", 1);
      const int64_t inner = int_at_least(ctx, "expert_hidden_dim", 1);
      int_at_least(ctx, "hidden_dim", 1);
      // CodefyUI seeds the global RNG with the node's `seed` and builds in PyTorch's order.
      torch::manual_seed(static_cast<uint64_t>(ctx.param_int("seed")));
      auto moe = model::MixtureOfExperts(experts, top_k, hidden, inner);
      auto impl = moe.ptr();
      return model::BuiltLayer{impl, [impl](const Tensor& t) { return std::get<0>(impl->forward(t)); }};
    });
    ready(*layer, x, false);
    torch::NoGradGuard no_grad;
    auto [output, weights, indices] = layer->as<model::MixtureOfExpertsImpl>().forward(x);
    return ValueMap{{"output", output}, {"routing_weights", weights}, {"expert_indices", indices}};
  });
}

// ---------------------------------------------------------------------------
// RNN.

void register_recurrent(NodeRegistry& r, const char* name, const char* description, const char* kind) {
  graph::NodeDef d{name,
                   "RNN",
                   description,
                   {tensor_in("Input tensor (batch, seq_len, input_size) if batch_first=True")},
                   {def::out("output", DataType::kTensor, "Output tensor containing hidden states for each time step"),
                    def::out("hidden", DataType::kTensor, "Final hidden state (h_n)")},
                   {def::integer("input_size", 128, "Number of expected features in the input"),
                    def::integer("hidden_size", 256, "Number of features in the hidden state"),
                    def::integer("num_layers", 1, "Number of recurrent layers"),
                    def::boolean("batch_first", true, "If True, input/output shape is (batch, seq, feature)"),
                    def::boolean("bidirectional", false, std::string("If True, becomes a bidirectional ") + kind)}};
  const bool lstm = std::string(name) == "LSTM";
  r.add(std::move(d), [lstm](NodeContext& ctx) {
    const int64_t in = ctx.param_int("input_size");
    const bool batch_first = ctx.param_bool("batch_first");
    const Tensor& given = float_input(ctx, "tensor");
    require_size("tensor", given, {2, 3},
                 batch_first ? "(batch, seq_len, input_size) or unbatched (seq_len, input_size)"
                             : "(seq_len, batch, input_size) or unbatched (seq_len, input_size)",
                 -1, "input_size", "input_size", in);
    // Unbatched input runs as a batch of one, its outputs without that
    // dimension, as PyTorch gives them.
    const bool unbatched = given.dim() == 2;
    const int64_t batch_dim = batch_first ? 0 : 1;
    const Tensor x = unbatched ? given.unsqueeze(batch_dim) : given;
    const auto unbatch = [&](const Tensor& output, const Tensor& hidden) {
      return unbatched ? ValueMap{{"output", output.squeeze(batch_dim)}, {"hidden", hidden.squeeze(1)}}
                       : ValueMap{{"output", output}, {"hidden", hidden}};
    };
    auto layer = kept_layer(ctx, [&] {
      const int64_t hidden = int_at_least(ctx, "hidden_size", 1), layers = int_at_least(ctx, "num_layers", 1);
      int_at_least(ctx, "input_size", 1);
      const bool bidirectional = ctx.param_bool("bidirectional");
      if (lstm) {
        auto m = torch::nn::LSTM(
            torch::nn::LSTMOptions(in, hidden).num_layers(layers).batch_first(batch_first).bidirectional(bidirectional));
        auto impl = m.ptr();
        return model::BuiltLayer{impl, [impl](const Tensor& t) { return std::get<0>(impl->forward(t)); }};
      }
      auto m = torch::nn::GRU(
          torch::nn::GRUOptions(in, hidden).num_layers(layers).batch_first(batch_first).bidirectional(bidirectional));
      auto impl = m.ptr();
      return model::BuiltLayer{impl, [impl](const Tensor& t) { return std::get<0>(impl->forward(t)); }};
    });
    ready(*layer, x, false);
    torch::NoGradGuard no_grad;
    if (lstm) {
      const auto [output, state] = layer->as<torch::nn::LSTMImpl>().forward(x);
      return unbatch(output, std::get<0>(state));
    }
    const auto [output, hidden] = layer->as<torch::nn::GRUImpl>().forward(x);
    return unbatch(output, hidden);
  });
}

void register_rnn_cell(NodeRegistry& r) {
  graph::NodeDef d{
      "RNNCell",
      "RNN",
      "Combines this input with the previous hidden state",
      {tensor_in("Input at this time step [batch, input_size]."),
       def::in("hidden", DataType::kTensor, "Hidden state from previous step [batch, hidden_size]. Defaults to zeros.",
               true)},
      {def::out("hidden", DataType::kTensor, "New hidden state [batch, hidden_size].")},
      {def::integer("input_size", 8, "Dimension of the input vector at each time step.", 1),
       def::integer("hidden_size", 16, "Dimension of the hidden state.", 1),
       def::select("nonlinearity", "tanh", {"tanh", "relu"}, "Activation applied to the recurrence output."),
       def::integer("seed", 42, "Seed for the W_ih / W_hh / bias initialisation.")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const int64_t in = ctx.param_int("input_size"), hidden_size = ctx.param_int("hidden_size");
    const Tensor x = tensor_input(ctx, "tensor").to(torch::kFloat32);
    require_size("tensor", x, {2}, "[batch, input_size]", 1, "input_size", "input_size", in);
    Tensor h;
    if (const Tensor* given = ctx.input_if<Tensor>("hidden")) {
      h = given->to(torch::kFloat32);
      if (h.dim() != 2 || h.size(0) != x.size(0) || h.size(1) != hidden_size)
        fail_shape("hidden",
                   "[batch, hidden_size] = [" + std::to_string(x.size(0)) + ", " + std::to_string(hidden_size) +
                       "] (batch of tensor " + shape_text(x.sizes()) + ")",
                   h);
    }
    auto layer = kept_layer(ctx, [&] {
      int_at_least(ctx, "input_size", 1);
      int_at_least(ctx, "hidden_size", 1);
      const bool relu = ctx.param_string("nonlinearity") == "relu";
      torch::nn::RNNCellOptions options(in, hidden_size);
      if (relu)
        options.nonlinearity(torch::kReLU);
      else
        options.nonlinearity(torch::kTanh);
      auto cell = torch::nn::RNNCell(options);
      // CodefyUI's deterministic init from the node's `seed`: the weight
      // matrices normal / sqrt(hidden_size), in nn.RNNCell's parameter order, the biases zero.
      at::Generator gen = at::detail::createCPUGenerator(static_cast<uint64_t>(ctx.param_int("seed")));
      const double scale = 1.0 / std::sqrt(static_cast<double>(hidden_size));
      torch::NoGradGuard no_grad;
      for (Tensor* w : {&cell->weight_ih, &cell->weight_hh}) w->copy_(torch::randn(w->sizes(), gen) * scale);
      for (Tensor* b : {&cell->bias_ih, &cell->bias_hh}) b->zero_();
      return built(cell);
    });
    ready(*layer, x, false);
    torch::NoGradGuard no_grad;
    return ValueMap{{"hidden", layer->as<torch::nn::RNNCellImpl>().forward(x, h)}};
  });
}

// ---------------------------------------------------------------------------
// Diffusion: Upsample, TimestepEmbedding, GaussianNoise.

void register_upsample(NodeRegistry& r) {
  graph::NodeDef d{"Upsample",
                   "Diffusion",
                   "Pure spatial upsampling via F.interpolate — no learnable weights. Doubles spatial dims by "
                   "default. Use this for U-Net decoder paths when you don't want the upsampling step to learn "
                   "(compare with `ConvTranspose2d`, which does).",
                   {tensor_in("Input tensor [N, C, ...] — 1D, 2D, or 3D spatial dims.")},
                   {tensor_out("Upsampled tensor with spatial dims scaled by `scale_factor`.")},
                   {def::select("mode", "nearest", {"nearest", "bilinear", "area"},
                                "Interpolation mode. nearest=replicate pixels, bilinear=blend neighbours (smoother), "
                                "area=averaging (useful for downsampling)."),
                    def::number("scale_factor", 2.0, "Multiply spatial dims by this. 2.0 doubles, 0.5 halves.", 0.1)}};
  r.add(std::move(d), [](NodeContext& ctx) {
    namespace F = torch::nn::functional;
    const std::string mode = ctx.param_string("mode");
    const double scale = ctx.param_float("scale_factor");
    if (!(scale > 0)) NodeContext::fail_param("scale_factor", "must be positive, got " + std::to_string(scale));
    const Tensor& x = tensor_input(ctx, "tensor");
    if (mode == "bilinear")
      require_rank("tensor", x, {4}, "[N, C, H, W] (bilinear interpolates two spatial dims)");
    else
      require_rank("tensor", x, {3, 4, 5}, "[N, C, ...] with 1, 2 or 3 spatial dims");
    auto options = F::InterpolateFuncOptions().scale_factor(std::vector<double>(x.dim() - 2, scale));
    if (mode == "bilinear")
      options.mode(torch::kBilinear).align_corners(false);
    else if (mode == "area")
      options.mode(torch::kArea);
    else
      options.mode(torch::kNearest);
    // Interpolated in float32 and given back in the input's dtype, as CodefyUI.
    return ValueMap{{"tensor", F::interpolate(x.to(torch::kFloat32), options).to(x.scalar_type())}};
  });
}

void register_timestep_embedding(NodeRegistry& r) {
  graph::NodeDef d{"TimestepEmbedding",
                   "Diffusion",
                   "Encode a diffusion timestep $t$ into a vector that conditions U-Net blocks. Sinusoidal frequency "
                   "bank (à la Vaswani) followed by Linear→SiLU→Linear, the standard DDPM recipe.",
                   {def::in("timestep", DataType::kTensor, "Scalar int, 0-d tensor, or [B] tensor of timesteps.")},
                   {def::out("embedding", DataType::kTensor, "Float32 tensor of shape [B, embed_dim].")},
                   {def::integer("embed_dim", 32, "Dimension of the time vector. Must be even (sin/cos halves).", 2),
                    def::integer("max_period", 10000,
                                 "Largest period in the frequency bank — controls how many distinct timesteps the "
                                 "embedding can resolve.",
                                 1),
                    def::integer("seed", 42, "Seed for the projection-layer initialisation.")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const int64_t dim = int_at_least(ctx, "embed_dim", 2);
    if (dim % 2 != 0) NodeContext::fail_param("embed_dim", "must be even, got " + std::to_string(dim));
    const Value& given = ctx.input("timestep");
    // Timesteps go into the frequency bank as float32, as CodefyUI's .float().
    const Tensor t = (std::holds_alternative<double>(given) ? torch::tensor(std::get<double>(given))
                                                            : tensor_input(ctx, "timestep"))
                         .to(torch::kFloat32);
    auto layer = kept_layer(ctx, [&] {
      const int64_t period = int_at_least(ctx, "max_period", 1);
      return built(model::TimestepEmbedding(dim, period, static_cast<uint64_t>(ctx.param_int("seed"))));
    });
    return ValueMap{{"embedding", run_layer(*layer, t, false)}};
  });
}

void register_gaussian_noise(NodeRegistry& r) {
  graph::NodeDef d{
      "GaussianNoise",
      "Diffusion",
      "Sample i.i.d. Gaussian noise of a given shape",
      {def::in("shape_ref", DataType::kTensor, "Optional reference tensor — noise will match its shape.", true)},
      {def::out("noise", DataType::kTensor, "Float32 tensor sampled from N(mean, std²).")},
      {def::text("shape", "1,3,8,8",
                 "Comma-separated dimensions, e.g. '1,3,32,32'. Used only when `shape_ref` is not connected."),
       def::number("mean", 0.0, "Mean of the Gaussian. Defaults to 0 (standard normal)."),
       def::number("std", 1.0, "Standard deviation. Defaults to 1 (standard normal).", 0.0),
       def::integer("seed", 42, "Seed for reproducibility. Same seed → same noise.")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const Tensor* ref = ctx.input_if<Tensor>("shape_ref");
    const std::vector<int64_t> shape = ref ? ref->sizes().vec() : sizes_param(ctx, "shape", "'1,3,32,32'");
    const double mean = ctx.param_float("mean"), std = std::max(0.0, ctx.param_float("std"));
    // A generator of its own from the node's `seed`: same seed, same noise, as CodefyUI.
    at::Generator gen = at::detail::createCPUGenerator(static_cast<uint64_t>(ctx.param_int("seed")));
    Tensor noise = torch::randn(shape, gen, torch::kFloat32);
    if (std != 1.0) noise = noise * std;
    if (mean != 0.0) noise = noise + mean;
    return ValueMap{{"noise", ref ? noise.to(ref->device()) : noise}};
  });
}

void register_all(NodeRegistry& r) {
  register_linear(r);
  register_embedding(r);
  register_conv(r, "Conv1d",
                "Apply 1D convolution to input tensor (wraps nn.Conv1d). $y[i]=\\sum_k x[i+k]\\cdot w[k]+b$",
                "Input tensor (N, C, L)", 1);
  register_conv(r, "Conv2d",
                "Apply 2D convolution to input tensor (wraps nn.Conv2d). $y[i,j]=\\sum_{k,l} x[i+k,j+l]\\cdot "
                "w[k,l] + b$",
                "Input tensor (N, C, H, W)", 2);
  register_conv_transpose2d(r);
  register_max_pool2d(r);
  register_avg_pool2d(r);
  register_adaptive_avg_pool2d(r);
  register_dropout(r);
  register_activation(r);
  register_batch_norm2d(r);
  register_batch_norm1d(r);
  register_layer_norm(r);
  register_group_norm(r);
  register_instance_norm2d(r);
  register_positional_encoding(r);
  register_multi_head_attention(r);
  register_transformer_encoder(r);
  register_transformer_decoder(r);
  register_moe_layer(r);
  register_recurrent(r, "LSTM",
                     "Apply LSTM recurrent layer to input sequence (wraps nn.LSTM). Gates: input, forget, cell, "
                     "output.",
                     "LSTM");
  register_recurrent(r, "GRU", "Apply GRU recurrent layer to input sequence (wraps nn.GRU). Gates: reset, update.",
                     "GRU");
  register_rnn_cell(r);
  register_upsample(r);
  register_timestep_embedding(r);
  register_gaussian_noise(r);
}

}  // namespace
}  // namespace layer_node

void nodes::register_layer_nodes(NodeRegistry& r) { layer_node::register_all(r); }

}  // namespace codefy
