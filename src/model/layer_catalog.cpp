// The layer catalogue's entries: each layer and merge type's parameters,
// their one definition (names, defaults, limits and descriptions for an
// editor). The builders in layer_table.cpp read their defaults from here
// through LayerParams and check what a value may be; the catalogue's tests
// hold the two together (the same types in the same order, every default
// builds, a builder reads no parameter defined nowhere).
#include "model/layer_catalog.h"

#include "model/layer_table.h"

#include <limits>
#include <stdexcept>
#include <utility>

namespace codefy::model {

using graph::ParamDef;
using graph::ParamType;
using nlohmann::json;

namespace {

ParamDef param(std::string name, ParamType type, json value, std::string description) {
  ParamDef p;
  p.name = std::move(name);
  p.type = type;
  p.default_value = std::move(value);
  p.description = std::move(description);
  return p;
}

ParamDef with_min(ParamDef p, double min) {
  p.min_value = min;
  return p;
}

/// A param the layer cannot be built without; `start` is what a new layer gets.
ParamDef required_int(std::string name, int64_t start, std::string description, double min = 1) {
  ParamDef p = with_min(param(std::move(name), ParamType::kInt, start, std::move(description)), min);
  p.required = true;
  return p;
}

ParamDef int_or(std::string name, json fallback, std::string description,
                double min = -std::numeric_limits<double>::infinity()) {
  ParamDef p = param(std::move(name), ParamType::kInt, std::move(fallback), std::move(description));
  if (min > -std::numeric_limits<double>::infinity()) p.min_value = min;
  return p;
}

ParamDef real_or(std::string name, json fallback, std::string description, double min = 0,
                 double max = std::numeric_limits<double>::infinity()) {
  ParamDef p = with_min(param(std::move(name), ParamType::kFloat, std::move(fallback), std::move(description)), min);
  if (max < std::numeric_limits<double>::infinity()) p.max_value = max;
  return p;
}

ParamDef bool_or(std::string name, bool fallback, std::string description) {
  return param(std::move(name), ParamType::kBool, fallback, std::move(description));
}

ParamDef choice(std::string name, std::string fallback, std::vector<std::string> options, std::string description) {
  ParamDef p = param(std::move(name), ParamType::kSelect, std::move(fallback), std::move(description));
  p.options = std::move(options);
  return p;
}

ParamDef inplace() {
  return bool_or("inplace", false, "Accepted for PyTorch compatibility; Codefy never changes a layer's input");
}

std::vector<ParamDef> conv_params(int64_t in, int64_t out, bool transpose) {
  std::vector<ParamDef> p = {
      required_int("in_channels", in, "Input channels"),
      required_int("out_channels", out, "Output channels"),
      required_int("kernel_size", 3, "Kernel size: a whole number or one per dimension"),
      int_or("stride", 1, "Stride: a whole number or one per dimension", 1),
      int_or("padding", 0,
             transpose ? "Padding: a whole number or one per dimension"
                       : "Padding: a whole number, one per dimension, \"same\" or \"valid\"",
             0),
  };
  if (transpose) p.push_back(int_or("output_padding", 0, "Extra size added to one side of the output", 0));
  if (!transpose) p.push_back(int_or("dilation", 1, "Spacing between kernel elements", 1));
  p.push_back(int_or("groups", 1, "Blocked connections from input to output channels", 1));
  p.push_back(bool_or("bias", true, "Learn an additive bias"));
  if (transpose) p.push_back(int_or("dilation", 1, "Spacing between kernel elements", 1));
  p.push_back(choice("padding_mode", "zeros",
                     transpose ? std::vector<std::string>{"zeros"}
                               : std::vector<std::string>{"zeros", "reflect", "replicate", "circular"},
                     "How the padding is filled"));
  return p;
}

std::vector<ParamDef> batch_norm_params(bool instance) {
  return {required_int("num_features", 32, "Number of features (channels)"),
          real_or("eps", 1e-5, "Added to the variance for numerical stability"),
          real_or("momentum", 0.1,
                  instance ? "Running statistics' update factor"
                           : "Running statistics' update factor (null: a cumulative average)"),
          bool_or("affine", !instance, "Learn a scale and shift"),
          bool_or("track_running_stats", !instance, "Keep running mean and variance for evaluation")};
}

std::vector<ParamDef> rnn_params(bool lstm) {
  std::vector<ParamDef> p = {required_int("input_size", 128, "Features per time step"),
                             required_int("hidden_size", 128, "Features in the hidden state"),
                             int_or("num_layers", 1, "Stacked recurrent layers", 1),
                             bool_or("bias", true, "Learn biases"),
                             bool_or("batch_first", false, "Input is [batch, seq, feature]"),
                             real_or("dropout", 0.0, "Dropout between stacked layers", 0, 1),
                             bool_or("bidirectional", false, "Run both directions")};
  if (lstm) p.push_back(int_or("proj_size", 0, "Project the hidden state to this size (0: no projection)", 0));
  return p;
}

std::vector<ParamDef> transformer_params() {
  return {required_int("d_model", 512, "Model dimension"),
          required_int("nhead", 8, "Attention heads (must divide d_model)"),
          int_or("num_layers", 1, "Stacked layers", 1),
          int_or("dim_feedforward", 2048, "Feed-forward width", 1),
          real_or("dropout", 0.1, "Dropout probability", 0, 1),
          choice("activation", "relu", {"relu", "gelu"}, "Feed-forward activation")};
}

LayerTypeInfo layer(std::string type, std::string category, std::vector<ParamDef> params) {
  LayerTypeInfo info;
  info.type = std::move(type);
  info.category = std::move(category);
  info.params = std::move(params);
  return info;
}

LayerTypeInfo merge(std::string type, std::vector<ParamDef> params) {
  LayerTypeInfo info = layer(std::move(type), "Merge", std::move(params));
  info.merge = true;
  const MergeDef* def = find_merge_def(info.type);
  if (def == nullptr) throw std::logic_error("layer catalogue: no merge type " + info.type);
  info.min_inputs = def->min_inputs;
  info.max_inputs = def->max_inputs;
  return info;
}

std::vector<LayerTypeInfo> make_catalog() {
  const ParamDef dim = int_or("dim", 1, "Dimension to join along");
  return {
      layer("Linear", "Linear",
            {required_int("in_features", 512, "Input features"), required_int("out_features", 10, "Output features"),
             bool_or("bias", true, "Learn an additive bias")}),
      layer("Conv1d", "Convolution", conv_params(1, 32, false)),
      layer("Conv2d", "Convolution", conv_params(1, 32, false)),
      layer("ConvTranspose2d", "Convolution", conv_params(32, 16, true)),
      layer("MaxPool2d", "Pooling",
            {required_int("kernel_size", 2, "Window size"),
             int_or("stride", nullptr, "Stride (null: the kernel size)", 1),
             int_or("padding", 0, "Implicit negative-infinity padding", 0),
             int_or("dilation", 1, "Spacing between window elements", 1),
             bool_or("ceil_mode", false, "Round the output size up")}),
      layer("AvgPool2d", "Pooling",
            {required_int("kernel_size", 2, "Window size"),
             int_or("stride", nullptr, "Stride (null: the kernel size)", 1),
             int_or("padding", 0, "Implicit zero padding", 0), bool_or("ceil_mode", false, "Round the output size up"),
             bool_or("count_include_pad", true, "Count the padding in the average"),
             int_or("divisor_override", nullptr, "Divide by this instead of the window size", 1)}),
      layer("AdaptiveAvgPool2d", "Pooling",
            {required_int("output_size", 1, "Output size: a whole number or [height, width]")}),
      layer("BatchNorm1d", "Normalization", batch_norm_params(false)),
      layer("BatchNorm2d", "Normalization", batch_norm_params(false)),
      layer("LayerNorm", "Normalization",
            {required_int("normalized_shape", 512, "Size of the last dimension(s): a whole number or a list"),
             real_or("eps", 1e-5, "Added to the variance for numerical stability"),
             bool_or("elementwise_affine", true, "Learn a scale and shift")}),
      layer("GroupNorm", "Normalization",
            {required_int("num_groups", 8, "Groups (must divide num_channels)"),
             required_int("num_channels", 32, "Channels"),
             real_or("eps", 1e-5, "Added to the variance for numerical stability"),
             bool_or("affine", true, "Learn a scale and shift")}),
      layer("InstanceNorm2d", "Normalization", batch_norm_params(true)),
      layer("Dropout", "Regularization", {real_or("p", 0.5, "Dropout probability", 0, 1), inplace()}),
      layer("Flatten", "Utility",
            {int_or("start_dim", 1, "First dimension to flatten"), int_or("end_dim", -1, "Last dimension to flatten")}),
      layer("Embedding", "Linear",
            {required_int("num_embeddings", 10000, "Vocabulary size"),
             required_int("embedding_dim", 256, "Embedding dimension"),
             int_or("padding_idx", nullptr, "Index whose embedding stays zero (null: none)"),
             real_or("max_norm", nullptr, "Renormalise embeddings longer than this (null: never)"),
             real_or("norm_type", 2.0, "The p of the p-norm for max_norm", -std::numeric_limits<double>::infinity()),
             bool_or("scale_grad_by_freq", false, "Scale gradients by word frequency"),
             bool_or("sparse", false, "Sparse gradients")}),
      [] {
        LayerTypeInfo r = layer(
            "Reshape", "Utility",
            {param("shape", ParamType::kString, "-1", "Sizes after the batch dimension, such as \"64,7,7\" (one -1)")});
        r.params[0].required = true;
        return r;
      }(),
      layer("SelectIndex", "Utility",
            {int_or("dim", 1, "Dimension to index"), int_or("index", 0, "Index to keep (-1: the last)")}),
      [] {
        LayerTypeInfo r = layer("Permute", "Utility",
                                {param("dims", ParamType::kString, "0,2,1",
                                       "New order of every dimension, the batch's (0) first, such as \"0,2,1\"")});
        r.params[0].required = true;
        return r;
      }(),
      layer("Chomp1d", "Convolution",
            {required_int("chomp_size", 2,
                          "Steps dropped from the end: (kernel_size - 1) x dilation of the Conv1d before it, which "
                          "makes it causal",
                          0)}),
      layer("LSTM", "Recurrent", rnn_params(true)),
      layer("GRU", "Recurrent", rnn_params(false)),
      layer("TransformerEncoder", "Attention", transformer_params()),
      layer("TransformerDecoder", "Attention", transformer_params()),
      layer("MultiHeadAttention", "Attention",
            {required_int("embed_dim", 512, "Embedding dimension"),
             required_int("num_heads", 8, "Attention heads (must divide embed_dim)"),
             real_or("dropout", 0.0, "Dropout on attention weights", 0, 1)}),
      layer("ReLU", "Activation", {inplace()}),
      layer("GELU", "Activation", {choice("approximate", "none", {"none", "tanh"}, "Approximation")}),
      layer("Sigmoid", "Activation", {}),
      layer("Tanh", "Activation", {}),
      layer("LeakyReLU", "Activation",
            {real_or("negative_slope", 0.01, "Slope below zero", -std::numeric_limits<double>::infinity()), inplace()}),
      layer("ELU", "Activation",
            {real_or("alpha", 1.0, "Scale below zero", -std::numeric_limits<double>::infinity()), inplace()}),
      layer("SiLU", "Activation", {inplace()}),
      layer("Mish", "Activation", {inplace()}),
      layer("SELU", "Activation", {inplace()}),
      layer("PReLU", "Activation",
            {int_or("num_parameters", 1, "Learned slopes: 1 or the number of channels", 1),
             real_or("init", 0.25, "Initial slope", -std::numeric_limits<double>::infinity())}),
      layer("Hardswish", "Activation", {inplace()}),
      layer("Softmax", "Activation", {int_or("dim", -1, "Dimension that sums to 1")}),
      merge("Add", {}),
      merge("Concat", {dim}),
      merge("Multiply", {}),
      merge("Subtract", {}),
      merge("Mean", {}),
      merge("Stack", {int_or("dim", 1, "Dimension of the new axis")}),
  };
}

json limit(const std::optional<double>& v) { return v ? json(*v) : json(); }

}  // namespace

const std::vector<LayerTypeInfo>& layer_catalog() {
  static const std::vector<LayerTypeInfo> catalog = make_catalog();
  return catalog;
}

const std::vector<ParamDef>& layer_param_defs(const std::string& type) {
  for (const LayerTypeInfo& info : layer_catalog())
    if (info.type == type) return info.params;
  throw std::logic_error("model/layer_catalog.cpp: no entry for layer type " + type);
}

json layer_catalog_json() {
  json out = json::array();
  for (const LayerTypeInfo& info : layer_catalog()) {
    json params = json::array();
    for (const ParamDef& p : info.params)
      params.push_back({{"name", p.name},
                        {"param_type", graph::to_string(p.type)},
                        {"default", p.default_value},
                        {"description", p.description},
                        {"options", p.options},
                        {"min_value", limit(p.min_value)},
                        {"max_value", limit(p.max_value)},
                        {"required", p.required}});
    const bool any = info.max_inputs == std::numeric_limits<size_t>::max();
    out.push_back({{"type", info.type},
                   {"category", info.category},
                   {"kind", info.merge ? "merge" : "layer"},
                   {"min_inputs", info.min_inputs},
                   {"max_inputs", any ? json() : json(info.max_inputs)},
                   {"params", std::move(params)}});
  }
  return out;
}

}  // namespace codefy::model
