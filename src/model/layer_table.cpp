// The layer table: a builder per layer type (LibTorch options from the node's
// params, PyTorch's defaults and checks) and a maker per merge type.
#include "model/layer_table.h"

#include "model/modules.h"
#include "model/window_pool.h"
#include "util/parse.h"

#include <torch/torch.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>

namespace codefy::model {

using nlohmann::json;
using torch::Tensor;

namespace {

// ---------------------------------------------------------------------------
// Layer builders.

template <class Holder>
BuiltLayer wrap(Holder holder) {
  const auto& impl = holder.ptr();
  return {impl, [impl](const Tensor& x) { return impl->forward(x); }};
}

template <size_t D>
typename torch::nn::ConvOptions<D>::padding_t conv_padding(const LayerParams& p) {
  const json* v = p.find("padding");
  if (v == nullptr) return torch::ExpandingArray<D>(0);
  if (v->is_string() && v->get<std::string>() == "same") return torch::kSame;
  if (v->is_string() && v->get<std::string>() == "valid") return torch::kValid;
  if (v->is_string())
    p.fail("padding", "expected a whole number, a list of them, \"same\" or \"valid\", got " + describe_json(*v));
  return p.to_ints<D>("padding", *v, 0);
}

torch::nn::detail::conv_padding_mode_t padding_mode(const LayerParams& p, const std::vector<std::string>& allowed) {
  const std::string mode = p.choice_or_default("padding_mode", allowed);
  if (mode == "reflect") return torch::kReflect;
  if (mode == "replicate") return torch::kReplicate;
  if (mode == "circular") return torch::kCircular;
  return torch::kZeros;
}

void check_groups(const LayerParams& p, int64_t groups, int64_t in_channels, int64_t out_channels) {
  if (in_channels % groups != 0 || out_channels % groups != 0)
    p.fail("groups", "in_channels (" + std::to_string(in_channels) + ") and out_channels (" +
                         std::to_string(out_channels) + ") must both be divisible by groups (" +
                         std::to_string(groups) + ")");
}

template <size_t D, class Holder>
BuiltLayer build_conv(const LayerParams& p) {
  const int64_t in = p.integer("in_channels", 1), out = p.integer("out_channels", 1);
  torch::nn::ConvOptions<D> o(in, out, p.ints<D>("kernel_size", 1));
  const int64_t groups = p.integer_or_default("groups", 1);
  check_groups(p, groups, in, out);
  o.stride(p.ints_or_default<D>("stride", 1))
      .padding(conv_padding<D>(p))
      .dilation(p.ints_or_default<D>("dilation", 1))
      .groups(groups)
      .bias(p.boolean_or_default("bias"))
      .padding_mode(padding_mode(p, {"zeros", "reflect", "replicate", "circular"}));
  return wrap(Holder(o));
}

BuiltLayer build_conv_transpose2d(const LayerParams& p) {
  const int64_t in = p.integer("in_channels", 1), out = p.integer("out_channels", 1);
  torch::nn::ConvTranspose2dOptions o(in, out, p.ints<2>("kernel_size", 1));
  const int64_t groups = p.integer_or_default("groups", 1);
  check_groups(p, groups, in, out);
  o.stride(p.ints_or_default<2>("stride", 1))
      .padding(p.ints_or_default<2>("padding", 0))
      .output_padding(p.ints_or_default<2>("output_padding", 0))
      .dilation(p.ints_or_default<2>("dilation", 1))
      .groups(groups)
      .bias(p.boolean_or_default("bias"))
      .padding_mode(padding_mode(p, {"zeros"}));  // PyTorch's ConvTranspose only supports zeros.
  return wrap(torch::nn::ConvTranspose2d(o));
}

/// PyTorch's pooling stride defaults to kernel_size (stride=None).
torch::ExpandingArray<2> pool_stride(const LayerParams& p, const torch::ExpandingArray<2>& kernel) {
  const json* v = p.find("stride");
  return v == nullptr ? kernel : p.to_ints<2>("stride", *v, 1);
}

BuiltLayer build_max_pool2d(const LayerParams& p) {
  const auto kernel = p.ints<2>("kernel_size", 1);
  torch::nn::MaxPool2dOptions o(kernel);
  o.stride(pool_stride(p, kernel))
      .padding(p.ints_or_default<2>("padding", 0))
      .dilation(p.ints_or_default<2>("dilation", 1))
      .ceil_mode(p.boolean_or_default("ceil_mode"));
  torch::nn::MaxPool2d pool(o);
  if (!window_max_pool_options(o)) return wrap(pool);
  // Non-overlapping windows over a channels-last CPU input (what
  // SequentialModel gives a pooling layer) take the single-pass loops.
  const auto& impl = pool.ptr();
  const int64_t k = (*o.kernel_size())[0];
  const bool ceil_mode = o.ceil_mode();
  return {impl, [impl, k, ceil_mode](const Tensor& x) {
            return window_max_pool_input(x, k, ceil_mode) ? window_max_pool2d(x, k) : impl->forward(x);
          }};
}

BuiltLayer build_avg_pool2d(const LayerParams& p) {
  const auto kernel = p.ints<2>("kernel_size", 1);
  torch::nn::AvgPool2dOptions o(kernel);
  o.stride(pool_stride(p, kernel))
      .padding(p.ints_or_default<2>("padding", 0))
      .ceil_mode(p.boolean_or_default("ceil_mode"))
      .count_include_pad(p.boolean_or_default("count_include_pad"))
      .divisor_override(p.optional_integer("divisor_override", 1));
  return wrap(torch::nn::AvgPool2d(o));
}

BuiltLayer build_adaptive_avg_pool2d(const LayerParams& p) {
  const json* v = p.find("output_size");
  const std::string what = "a whole number >= 1 or a list of 2 (each a whole number >= 1, or null to keep that size)";
  if (v == nullptr) p.fail("output_size", "required parameter is missing (AdaptiveAvgPool2d needs " + what + " here)");
  torch::ExpandingArrayWithOptionalElem<2> size(std::vector<int64_t>{1, 1});
  if (v->is_number_integer()) {
    size = torch::ExpandingArrayWithOptionalElem<2>(p.to_int("output_size", *v, 1));
  } else if (v->is_array() && v->size() == 2) {
    for (size_t i = 0; i < 2; ++i) {
      const json& e = (*v)[i];
      if (e.is_null())
        (*size)[i] = c10::nullopt;
      else if (e.is_number_integer())
        (*size)[i] = p.to_int("output_size", e, 1);
      else
        p.fail("output_size", "expected " + what + ", got " + describe_json(*v));
    }
  } else {
    p.fail("output_size", "expected " + what + ", got " + describe_json(*v));
  }
  return wrap(torch::nn::AdaptiveAvgPool2d(torch::nn::AdaptiveAvgPool2dOptions(size)));
}

template <class Holder>
BuiltLayer build_batch_norm(const LayerParams& p) {
  torch::nn::BatchNormOptions o(p.integer("num_features", 1));
  o.eps(p.real_or_default("eps", 0))
      .momentum(p.optional_real_or_default("momentum", 0))
      .affine(p.boolean_or_default("affine"))
      .track_running_stats(p.boolean_or_default("track_running_stats"));
  return wrap(Holder(o));
}

BuiltLayer build_instance_norm2d(const LayerParams& p) {
  torch::nn::InstanceNorm2dOptions o(p.integer("num_features", 1));
  o.eps(p.real_or_default("eps", 0))
      .momentum(p.real_or_default("momentum", 0))
      .affine(p.boolean_or_default("affine"))
      .track_running_stats(p.boolean_or_default("track_running_stats"));
  return wrap(torch::nn::InstanceNorm2d(o));
}

BuiltLayer build_layer_norm(const LayerParams& p) {
  torch::nn::LayerNormOptions o(p.int_list("normalized_shape", 1));
  o.eps(p.real_or_default("eps", 0)).elementwise_affine(p.boolean_or_default("elementwise_affine"));
  return wrap(torch::nn::LayerNorm(o));
}

BuiltLayer build_group_norm(const LayerParams& p) {
  const int64_t groups = p.integer("num_groups", 1), channels = p.integer("num_channels", 1);
  if (channels % groups != 0)
    p.fail("num_groups", "num_channels (" + std::to_string(channels) + ") must be divisible by num_groups (" +
                             std::to_string(groups) + ")");
  torch::nn::GroupNormOptions o(groups, channels);
  o.eps(p.real_or_default("eps", 0)).affine(p.boolean_or_default("affine"));
  return wrap(torch::nn::GroupNorm(o));
}

/// `inplace` is accepted for PyTorch compatibility but not honoured: a value
/// in the graph may feed several layers, and changing it in place would
/// corrupt the others. The result is the same either way.
void ignore_inplace(const LayerParams& p) { (void)p.boolean_or_default("inplace"); }

BuiltLayer build_dropout(const LayerParams& p) {
  const double prob = p.real_or_default("p", 0, 1);
  ignore_inplace(p);
  return wrap(torch::nn::Dropout(torch::nn::DropoutOptions(prob)));
}

BuiltLayer build_flatten(const LayerParams& p) {
  return wrap(torch::nn::Flatten(torch::nn::FlattenOptions()
                                     .start_dim(p.integer_or_default("start_dim"))
                                     .end_dim(p.integer_or_default("end_dim"))));
}

BuiltLayer build_reshape(const LayerParams& p) {
  const json* v = p.find("shape");
  const std::string what = "the sizes after the batch dimension, such as \"64,7,7\" (one of them may be -1)";
  if (v == nullptr) p.fail("shape", "required parameter is missing (Reshape needs " + what + ")");
  std::vector<int64_t> shape;
  if (v->is_string()) {
    std::stringstream in(v->get<std::string>());
    std::string part;
    while (std::getline(in, part, ',')) {
      const size_t first = part.find_first_not_of(" \t");
      const size_t last = part.find_last_not_of(" \t");
      const auto size = first == std::string::npos
                            ? std::nullopt
                            : util::parse_int(std::string_view(part).substr(first, last + 1 - first));
      if (!size) p.fail("shape", "\"" + part + "\" in " + v->dump() + " is not a whole number; expected " + what);
      shape.push_back(*size);
    }
  } else if (v->is_array()) {
    for (const auto& e : *v) {
      if (!e.is_number_integer()) p.fail("shape", "expected " + what + ", got " + describe_json(*v));
      shape.push_back(e.get<int64_t>());
    }
  } else {
    p.fail("shape", "expected " + what + ", got " + describe_json(*v));
  }
  if (shape.empty()) p.fail("shape", "is empty; expected " + what);
  if (std::count(shape.begin(), shape.end(), -1) > 1) p.fail("shape", "only one size may be -1");
  if (std::any_of(shape.begin(), shape.end(), [](int64_t s) { return s < -1 || s == 0; }))
    p.fail("shape", "sizes must be >= 1 (or -1 for one inferred size), got " + v->dump());
  return wrap(Reshape(shape));
}

BuiltLayer build_select_index(const LayerParams& p) {
  return wrap(SelectIndex(p.integer_or_default("dim"), p.integer_or_default("index")));
}

BuiltLayer build_permute(const LayerParams& p) {
  std::vector<int64_t> dims;
  const json* v = p.find("dims");
  if (v != nullptr && v->is_string()) {  // "0,2,1", as the Permute node writes it
    std::stringstream in(v->get<std::string>());
    std::string part;
    while (std::getline(in, part, ',')) {
      const size_t first = part.find_first_not_of(" \t"), last = part.find_last_not_of(" \t");
      const auto d = first == std::string::npos
                         ? std::nullopt
                         : util::parse_int(std::string_view(part).substr(first, last + 1 - first));
      if (!d)
        p.fail("dims",
               "expected whole numbers separated by commas, such as \"0,2,1\", got \"" + v->get<std::string>() + "\"");
      dims.push_back(*d);
    }
  } else {
    dims = p.int_list("dims", 0);
  }
  std::vector<int64_t> sorted = dims;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != static_cast<int64_t>(i))
      p.fail("dims", "must name each dimension 0.." + std::to_string(dims.size() - 1) + " once (a permutation)");
  if (dims.empty() || dims[0] != 0) p.fail("dims", "must keep the batch dimension first (start with 0)");
  return wrap(Permute(std::move(dims)));
}

BuiltLayer build_chomp1d(const LayerParams& p) { return wrap(Chomp1d(p.integer("chomp_size", 0))); }

BuiltLayer build_embedding(const LayerParams& p) {
  const int64_t count = p.integer("num_embeddings", 1);
  torch::nn::EmbeddingOptions o(count, p.integer("embedding_dim", 1));
  const auto padding_idx = p.optional_integer("padding_idx");
  if (padding_idx && (*padding_idx >= count || *padding_idx < -count))
    p.fail("padding_idx", "must be within num_embeddings (-" + std::to_string(count) + " to " +
                              std::to_string(count - 1) + "), got " + std::to_string(*padding_idx));
  o.padding_idx(padding_idx)
      .max_norm(p.optional_real_or_default("max_norm", 0))
      .norm_type(p.real_or_default("norm_type"))
      .scale_grad_by_freq(p.boolean_or_default("scale_grad_by_freq"))
      .sparse(p.boolean_or_default("sparse"));
  return wrap(torch::nn::Embedding(o));
}

template <class Options>
Options rnn_options(const LayerParams& p) {
  Options o(p.integer("input_size", 1), p.integer("hidden_size", 1));
  o.num_layers(p.integer_or_default("num_layers", 1))
      .bias(p.boolean_or_default("bias"))
      .batch_first(p.boolean_or_default("batch_first"))
      .dropout(p.real_or_default("dropout", 0, 1))
      .bidirectional(p.boolean_or_default("bidirectional"));
  return o;
}

BuiltLayer build_lstm(const LayerParams& p) {
  auto o = rnn_options<torch::nn::LSTMOptions>(p);
  const int64_t proj = p.integer_or_default("proj_size", 0);
  if (proj >= o.hidden_size())
    p.fail("proj_size", "must be smaller than hidden_size (" + std::to_string(o.hidden_size()) + ")");
  o.proj_size(proj);
  return wrap(LstmBlock(o));
}

BuiltLayer build_gru(const LayerParams& p) { return wrap(GruBlock(rnn_options<torch::nn::GRUOptions>(p))); }

void check_heads(const LayerParams& p, const char* dim_name, int64_t dim, const char* heads_name, int64_t heads) {
  if (dim % heads != 0)
    p.fail(heads_name, std::string(dim_name) + " (" + std::to_string(dim) + ") must be divisible by " + heads_name +
                           " (" + std::to_string(heads) + ")");
}

TransformerConfig transformer_config(const LayerParams& p) {
  TransformerConfig c{};
  c.d_model = p.integer("d_model", 1);
  c.nhead = p.integer("nhead", 1);
  check_heads(p, "d_model", c.d_model, "nhead", c.nhead);
  c.num_layers = p.integer_or_default("num_layers", 1);
  c.dim_feedforward = p.integer_or_default("dim_feedforward", 1);
  c.dropout = p.real_or_default("dropout", 0, 1);
  c.activation = p.choice_or_default("activation", {"relu", "gelu"});
  return c;
}

BuiltLayer build_multi_head_attention(const LayerParams& p) {
  const int64_t dim = p.integer("embed_dim", 1), heads = p.integer("num_heads", 1);
  check_heads(p, "embed_dim", dim, "num_heads", heads);
  return wrap(MultiHeadAttentionBlock(
      torch::nn::MultiheadAttentionOptions(dim, heads).dropout(p.real_or_default("dropout", 0, 1))));
}

}  // namespace

// Order follows CodefyUI's palette: layers, wrappers, then activations.
const std::vector<LayerDef>& layer_defs() {
  static const std::vector<LayerDef> defs = {
      {"Linear",
       [](const LayerParams& p) {
         return wrap(
             torch::nn::Linear(torch::nn::LinearOptions(p.integer("in_features", 1), p.integer("out_features", 1))
                                   .bias(p.boolean_or_default("bias"))));
       }},
      {"Conv1d", build_conv<1, torch::nn::Conv1d>},
      {"Conv2d", build_conv<2, torch::nn::Conv2d>},
      {"ConvTranspose2d", build_conv_transpose2d},
      {"MaxPool2d", build_max_pool2d},
      {"AvgPool2d", build_avg_pool2d},
      {"AdaptiveAvgPool2d", build_adaptive_avg_pool2d},
      {"BatchNorm1d", build_batch_norm<torch::nn::BatchNorm1d>},
      {"BatchNorm2d", build_batch_norm<torch::nn::BatchNorm2d>},
      {"LayerNorm", build_layer_norm},
      {"GroupNorm", build_group_norm},
      {"InstanceNorm2d", build_instance_norm2d},
      {"Dropout", build_dropout},
      {"Flatten", build_flatten},
      {"Embedding", build_embedding},
      {"Reshape", build_reshape},
      {"SelectIndex", build_select_index},
      {"Permute", build_permute},
      {"Chomp1d", build_chomp1d},
      {"LSTM", build_lstm},
      {"GRU", build_gru},
      {"TransformerEncoder", [](const LayerParams& p) { return wrap(TransformerEncoderBlock(transformer_config(p))); }},
      {"TransformerDecoder", [](const LayerParams& p) { return wrap(TransformerDecoderBlock(transformer_config(p))); }},
      {"MultiHeadAttention", build_multi_head_attention},
      // Activations.
      {"ReLU",
       [](const LayerParams& p) {
         ignore_inplace(p);
         return wrap(torch::nn::ReLU());
       }},
      {"GELU",
       [](const LayerParams& p) {
         return wrap(torch::nn::GELU(
             torch::nn::GELUOptions().approximate(p.choice_or_default("approximate", {"none", "tanh"}))));
       }},
      {"Sigmoid", [](const LayerParams&) { return wrap(torch::nn::Sigmoid()); }},
      {"Tanh", [](const LayerParams&) { return wrap(torch::nn::Tanh()); }},
      {"LeakyReLU",
       [](const LayerParams& p) {
         ignore_inplace(p);
         return wrap(
             torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(p.real_or_default("negative_slope"))));
       }},
      {"ELU",
       [](const LayerParams& p) {
         ignore_inplace(p);
         return wrap(torch::nn::ELU(torch::nn::ELUOptions().alpha(p.real_or_default("alpha"))));
       }},
      {"SiLU",
       [](const LayerParams& p) {
         ignore_inplace(p);
         return wrap(torch::nn::SiLU());
       }},
      {"Mish",
       [](const LayerParams& p) {
         ignore_inplace(p);
         return wrap(torch::nn::Mish());
       }},
      {"SELU",
       [](const LayerParams& p) {
         ignore_inplace(p);
         return wrap(torch::nn::SELU());
       }},
      {"PReLU",
       [](const LayerParams& p) {
         return wrap(torch::nn::PReLU(torch::nn::PReLUOptions()
                                          .num_parameters(p.integer_or_default("num_parameters", 1))
                                          .init(p.real_or_default("init"))));
       }},
      {"Hardswish",
       [](const LayerParams& p) {
         ignore_inplace(p);
         return wrap(Hardswish());
       }},
      // CodefyUI fixes dim=-1 (PyTorch's own default is an implicit, deprecated dim).
      {"Softmax",
       [](const LayerParams& p) {
         return wrap(torch::nn::Softmax(torch::nn::SoftmaxOptions(p.integer_or_default("dim"))));
       }},
  };
  return defs;
}

// ---------------------------------------------------------------------------
// Merges: several inputs, in edge-list order.

namespace {

Tensor add_all(const std::vector<Tensor>& xs) {
  Tensor out = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) out = out + xs[i];
  return out;
}

Tensor multiply_all(const std::vector<Tensor>& xs) {
  Tensor out = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) out = out * xs[i];
  return out;
}

}  // namespace

const std::vector<MergeDef>& merge_defs() {
  constexpr size_t kMany = std::numeric_limits<size_t>::max();
  static const std::vector<MergeDef> defs = {
      {"Add", 2, kMany, [](const LayerParams&, std::string*) -> MergeFn { return add_all; }},
      {"Concat", 1, kMany,
       [](const LayerParams& p, std::string* extra) -> MergeFn {
         const int64_t dim = p.integer_or_default("dim");
         *extra = ", dim=" + std::to_string(dim);
         return [dim](const std::vector<Tensor>& xs) { return torch::cat(xs, dim); };
       }},
      {"Multiply", 2, kMany, [](const LayerParams&, std::string*) -> MergeFn { return multiply_all; }},
      {"Subtract", 2, 2,
       [](const LayerParams&, std::string*) -> MergeFn {
         return [](const std::vector<Tensor>& xs) { return xs[0] - xs[1]; };
       }},
      {"Mean", 2, kMany,
       [](const LayerParams&, std::string*) -> MergeFn {
         return [](const std::vector<Tensor>& xs) { return torch::stack(xs, 0).mean(0); };
       }},
      {"Stack", 1, kMany,
       [](const LayerParams& p, std::string* extra) -> MergeFn {
         const int64_t dim = p.integer_or_default("dim");
         *extra = ", dim=" + std::to_string(dim);
         return [dim](const std::vector<Tensor>& xs) { return torch::stack(xs, dim); };
       }},
  };
  return defs;
}

const LayerDef* find_layer_def(const std::string& type) {
  const auto& defs = layer_defs();
  const auto it = std::find_if(defs.begin(), defs.end(), [&](const LayerDef& d) { return type == d.type; });
  return it == defs.end() ? nullptr : &*it;
}

const MergeDef* find_merge_def(const std::string& type) {
  const auto& defs = merge_defs();
  const auto it = std::find_if(defs.begin(), defs.end(), [&](const MergeDef& d) { return type == d.type; });
  return it == defs.end() ? nullptr : &*it;
}

const std::vector<std::string>& layer_types() {
  static const std::vector<std::string> types = [] {
    std::vector<std::string> out{"Input", "Output"};
    for (const auto& d : layer_defs()) out.emplace_back(d.type);
    for (const auto& d : merge_defs()) out.emplace_back(d.type);
    return out;
  }();
  return types;
}

}  // namespace codefy::model
