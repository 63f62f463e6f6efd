// Layers as forward nodes on a tensor, for images and features: CodefyUI's
// Linear, Embedding, Conv1d/2d, ConvTranspose2d, pooling, Dropout,
// Activation and the normalization nodes. Each builds its module once (from
// the layer table where SequentialModel has the same layer), keeps it in the
// node state store and checks its input's shape against the params first.
#include "nodes/layer_node_support.h"

#include "model/modules.h"
#include "model/params.h"
#include "nodes/tensor_checks.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>

namespace codefy::layer_node {

namespace {

using nodes::shape_text;

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
        NodeContext::fail_input(
            "tensor", "expected indices from 0 to num_embeddings - 1 = " + std::to_string(count - 1) +
                          ", got values from " + std::to_string(low) + " to " + std::to_string(high) + " (shape " +
                          shape_text(given.sizes()) + ")");
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
    const auto pool =
        table_layer("AvgPool2d", {{"kernel_size", kernel}, {"stride", ctx.param_int("stride")}, {"padding", padding}});
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
      {"relu", "ReLU"}, {"sigmoid", "Sigmoid"}, {"tanh", "Tanh"},           {"leaky_relu", "LeakyReLU"},
      {"elu", "ELU"},   {"gelu", "GELU"},       {"silu", "SiLU"},           {"mish", "Mish"},
      {"selu", "SELU"}, {"softmax", "Softmax"}, {"hardswish", "Hardswish"}, {"prelu", "PReLU"}};
  std::vector<std::string> options;
  options.reserve(kFunctions.size());
  for (const auto& f : kFunctions) options.push_back(f.first);
  graph::NodeDef d{"Activation",
                   "CNN",
                   "Applies the selected nonlinearity; shape unchanged",
                   {tensor_in("Input tensor")},
                   {tensor_out("Activated output tensor")},
                   {def::select("function", "relu", options, "Activation function to apply")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const std::string function = ctx.param_string("function");
    const auto it =
        std::find_if(kFunctions.begin(), kFunctions.end(), [&](const auto& f) { return f.first == function; });
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
  graph::NodeDef d{
      "LayerNorm",
      "Normalization",
      "Apply layer normalization (wraps nn.LayerNorm). $y = \\frac{x - \\mu}{\\sqrt{\\sigma^2 + "
      "\\epsilon}} \\gamma + \\beta$",
      {tensor_in("Input tensor")},
      {tensor_out("Normalized output tensor")},
      {def::text("normalized_shape", "512", "Shape to normalize over as comma-separated ints (e.g. '512' or '64,32')"),
       def::number("eps", 1e-5, "Epsilon for numerical stability")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const std::vector<int64_t> shape = sizes_param(ctx, "normalized_shape", "'512' or '64,32'");
    const Tensor& x = float_input(ctx, "tensor");
    const auto n = static_cast<int64_t>(shape.size());
    bool fits = x.dim() >= n;
    for (int64_t i = 0; fits && i < n; ++i) fits = x.size(x.dim() - n + i) == shape[static_cast<size_t>(i)];
    if (!fits) fail_shape("tensor", "a tensor ending in normalized_shape " + nlohmann::json(shape).dump(), x);
    auto layer = kept_layer(ctx, [&] {
      return table_layer("LayerNorm", {{"normalized_shape", shape}, {"eps", ctx.param_float("eps")}});
    });
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

}  // namespace

void register_vision_layers(NodeRegistry& r) {
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
}

}  // namespace codefy::layer_node
