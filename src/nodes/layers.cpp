// SequentialModel: builds a LibTorch module from CodefyUI's `layers` spec v2.
//
// The spec is a small DAG: one Input node, one Output node, layer nodes and
// merge nodes, joined by edges. We mirror CodefyUI's `build_graph_model`:
// layers are registered in a ModuleDict called "layers" keyed by node id (so
// parameters are named `layers.<id>.weight` like the PyTorch original), and
// the forward pass evaluates the nodes in Kahn topological order.
#include "nodes/layers.h"

#include "util/parse.h"

#include <torch/torch.h>

#include <algorithm>
#include <cctype>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

namespace codefy::layers {

using nlohmann::json;
using torch::Tensor;

namespace {

std::string compose_message(const std::string& layer_id, const std::string& layer_type, const std::string& param,
                            const std::string& message) {
  std::string where;
  if (!layer_id.empty()) where = "layer \"" + layer_id + "\"";
  if (!layer_type.empty()) where += where.empty() ? layer_type : " (" + layer_type + ")";
  if (!param.empty()) where += (where.empty() ? "parameter \"" : ", parameter \"") + param + "\"";
  return where.empty() ? message : where + ": " + message;
}

}  // namespace

LayerSpecError::LayerSpecError(std::string layer_id, std::string layer_type, std::string param,
                               const std::string& message)
    : std::runtime_error(compose_message(layer_id, layer_type, param, message)),
      layer_id_(std::move(layer_id)),
      layer_type_(std::move(layer_type)),
      param_(std::move(param)) {}

namespace {

// ---------------------------------------------------------------------------
// Small helpers for messages.

/// A JSON value as a student would read it in an error message.
std::string describe_json(const json& v) {
  std::string text = v.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return text;
    case json::value_t::string:
      return "the text " + text;
    case json::value_t::array:
      return "the list " + text;
    case json::value_t::object:
      return "the object " + text;
    case json::value_t::number_float:
      return "the decimal number " + text;
    default:
      return text;
  }
}

std::string quoted_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "\"" : ", \"") + s + "\"";
  return out;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// Levenshtein distance, to suggest the parameter a typo meant.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// LibTorch prints its modules as "torch::nn::Conv2d(...)"; students know them as "Conv2d(...)".
std::string pretty(const torch::nn::Module& module) {
  std::ostringstream os;
  module.pretty_print(os);
  std::string text = os.str();
  const std::string prefix = "torch::nn::";
  for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at))
    text.erase(at, prefix.size());
  return text;
}

std::string shape_of(const Tensor& t) {
  std::ostringstream os;
  os << t.sizes();
  return os.str();
}

// ---------------------------------------------------------------------------
// Params: typed access to one node's `params`, with student-readable errors.

constexpr int64_t kAnyInt = std::numeric_limits<int64_t>::min();

std::string whole_number(int64_t min) {
  if (min == kAnyInt) return "a whole number";
  return "a whole number >= " + std::to_string(min);
}

class Params {
 public:
  /// Rejects names not in `known` up front, so the message can list every parameter the layer takes.
  Params(std::string id, std::string type, const json* params, const std::vector<std::string>& known)
      : id_(std::move(id)), type_(std::move(type)), known_(known) {
    if (params == nullptr || params->is_null()) return;
    if (!params->is_object())
      throw LayerSpecError(id_, type_, "",
                           "\"params\" must be an object such as {\"p\": 0.5}, got " + describe_json(*params));
    params_ = params;
    for (const auto& item : params->items()) {
      if (std::find(known_.begin(), known_.end(), item.key()) != known_.end()) continue;
      std::string message = type_ + " has no parameter \"" + item.key() + "\"";
      std::string best;
      size_t best_distance = 3;  // Suggest only close matches: 1-2 typos or a case difference.
      for (const auto& k : known_) {
        const size_t d = lower(k) == lower(item.key()) ? 0 : edit_distance(k, item.key());
        if (d < best_distance) best_distance = d, best = k;
      }
      if (!best.empty()) message += " (did you mean \"" + best + "\"?)";
      message += known_.empty() ? "; it takes no parameters" : "; its parameters are " + quoted_list(known_);
      throw LayerSpecError(id_, type_, item.key(), message);
    }
  }

  const std::string& id() const { return id_; }
  const std::string& type() const { return type_; }

  [[noreturn]] void fail(const std::string& name, const std::string& message) const {
    throw LayerSpecError(id_, type_, name, message);
  }

  /// The raw value, or nullptr when absent. JSON null counts as absent unless `keep_null`.
  const json* find(const std::string& name, bool keep_null = false) const {
    // A name missing from `known` is a bug in this file, not in the spec.
    if (std::find(known_.begin(), known_.end(), name) == known_.end())
      throw std::logic_error("layers.cpp: " + type_ + " reads undeclared parameter " + name);
    if (params_ == nullptr) return nullptr;
    auto it = params_->find(name);
    if (it == params_->end() || (it->is_null() && !keep_null)) return nullptr;
    return &*it;
  }

  int64_t integer(const std::string& name, int64_t min = kAnyInt) const {
    const json* v = find(name);
    if (v == nullptr) missing(name, whole_number(min));
    return to_int(name, *v, min);
  }

  int64_t integer_or(const std::string& name, int64_t fallback, int64_t min = kAnyInt) const {
    const json* v = find(name);
    return v == nullptr ? fallback : to_int(name, *v, min);
  }

  c10::optional<int64_t> optional_integer(const std::string& name, int64_t min = kAnyInt) const {
    const json* v = find(name);
    if (v == nullptr) return c10::nullopt;
    return to_int(name, *v, min);
  }

  double real_or(const std::string& name, double fallback, double min = -std::numeric_limits<double>::infinity(),
                 double max = std::numeric_limits<double>::infinity()) const {
    const json* v = find(name);
    return v == nullptr ? fallback : to_real(name, *v, min, max);
  }

  /// Absent gives `fallback`; an explicit null gives nullopt (PyTorch's None).
  c10::optional<double> optional_real(const std::string& name, c10::optional<double> fallback,
                                      double min = -std::numeric_limits<double>::infinity()) const {
    const json* v = find(name, /*keep_null=*/true);
    if (v == nullptr) return fallback;
    if (v->is_null()) return c10::nullopt;
    return to_real(name, *v, min, std::numeric_limits<double>::infinity());
  }

  bool boolean_or(const std::string& name, bool fallback) const {
    const json* v = find(name);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) fail(name, "expected true or false, got " + describe_json(*v));
    return v->get<bool>();
  }

  std::string choice_or(const std::string& name, const std::string& fallback,
                        const std::vector<std::string>& choices) const {
    const json* v = find(name);
    if (v == nullptr) return fallback;
    if (!v->is_string() || std::find(choices.begin(), choices.end(), v->get<std::string>()) == choices.end())
      fail(name, "expected one of " + quoted_list(choices) + ", got " + describe_json(*v));
    return v->get<std::string>();
  }

  /// An int or a list of D ints, as PyTorch's kernel_size/stride/padding accept.
  template <size_t D>
  torch::ExpandingArray<D> ints(const std::string& name, int64_t min) const {
    const json* v = find(name);
    if (v == nullptr) missing(name, ints_what<D>(min));
    return to_ints<D>(name, *v, min);
  }

  template <size_t D>
  torch::ExpandingArray<D> ints_or(const std::string& name, int64_t fallback, int64_t min) const {
    const json* v = find(name);
    return v == nullptr ? torch::ExpandingArray<D>(fallback) : to_ints<D>(name, *v, min);
  }

  template <size_t D>
  torch::ExpandingArray<D> to_ints(const std::string& name, const json& v, int64_t min) const {
    if (v.is_number_integer()) return torch::ExpandingArray<D>(to_int(name, v, min));
    if (!v.is_array() || v.size() != D ||
        !std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_number_integer(); }))
      fail(name, "expected " + ints_what<D>(min) + ", got " + describe_json(v));
    std::vector<int64_t> values;
    for (const auto& e : v) values.push_back(to_int(name, e, min));
    return torch::ExpandingArray<D>(values);
  }

  /// An int or a non-empty list of ints (LayerNorm's normalized_shape).
  std::vector<int64_t> int_list(const std::string& name, int64_t min) const {
    const json* v = find(name);
    const std::string what = whole_number(min) + " or a list of them";
    if (v == nullptr) missing(name, what);
    if (v->is_number_integer()) return {to_int(name, *v, min)};
    if (!v->is_array() || v->empty()) fail(name, "expected " + what + ", got " + describe_json(*v));
    std::vector<int64_t> values;
    for (const auto& e : *v) {
      if (!e.is_number_integer()) fail(name, "expected " + what + ", got " + describe_json(*v));
      values.push_back(to_int(name, e, min));
    }
    return values;
  }

  int64_t to_int(const std::string& name, const json& v, int64_t min) const {
    if (!v.is_number_integer()) fail(name, "expected " + whole_number(min) + ", got " + describe_json(v));
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(name, "the value " + v.dump() + " is too large");
    const auto value = v.get<int64_t>();
    if (value < min) fail(name, "must be at least " + std::to_string(min) + ", got " + std::to_string(value));
    return value;
  }

 private:
  [[noreturn]] void missing(const std::string& name, const std::string& what) const {
    fail(name, "required parameter is missing (" + type_ + " needs " + what + " here)");
  }

  template <size_t D>
  static std::string ints_what(int64_t min) {
    if (D == 1) return whole_number(min) + " or a list of 1 such number";
    return whole_number(min) + " or a list of " + std::to_string(D) + " such numbers";
  }

  double to_real(const std::string& name, const json& v, double min, double max) const {
    if (!v.is_number()) fail(name, "expected a number, got " + describe_json(v));
    const auto value = v.get<double>();
    if (value < min || value > max) {
      std::ostringstream os;
      os << "must be";
      if (min > -std::numeric_limits<double>::infinity()) os << " at least " << min;
      if (min > -std::numeric_limits<double>::infinity() && max < std::numeric_limits<double>::infinity()) os << " and";
      if (max < std::numeric_limits<double>::infinity()) os << " at most " << max;
      os << ", got " << value;
      fail(name, os.str());
    }
    return value;
  }

  std::string id_, type_;
  const std::vector<std::string>& known_;
  const json* params_ = nullptr;
};

// ---------------------------------------------------------------------------
// Modules LibTorch lacks, and CodefyUI's one-tensor-in/one-tensor-out wrappers.
// The wrappers keep CodefyUI's attribute names (lstm, gru, encoder, decoder,
// attn) because they are state_dict key prefixes.

class ReshapeImpl : public torch::nn::Module {
 public:
  explicit ReshapeImpl(std::vector<int64_t> shape) : Module("Reshape"), shape_(std::move(shape)) {}
  /// Keeps the batch dimension: x.view(x.size(0), *shape) in CodefyUI.
  Tensor forward(const Tensor& x) {
    std::vector<int64_t> sizes{x.size(0)};
    sizes.insert(sizes.end(), shape_.begin(), shape_.end());
    return x.reshape(sizes);  // reshape, not view: also works on non-contiguous input.
  }
  void pretty_print(std::ostream& os) const override { os << "Reshape(shape=" << c10::IntArrayRef(shape_) << ")"; }

 private:
  std::vector<int64_t> shape_;
};
TORCH_MODULE(Reshape);

class SelectIndexImpl : public torch::nn::Module {
 public:
  SelectIndexImpl(int64_t dim, int64_t index) : Module("SelectIndex"), dim_(dim), index_(index) {}
  Tensor forward(const Tensor& x) { return x.select(dim_, index_); }
  void pretty_print(std::ostream& os) const override {
    os << "SelectIndex(dim=" << dim_ << ", index=" << index_ << ")";
  }

 private:
  int64_t dim_, index_;
};
TORCH_MODULE(SelectIndex);

// LibTorch 1.13 has SiLU and Mish modules but no Hardswish.
class HardswishImpl : public torch::nn::Module {
 public:
  HardswishImpl() : Module("Hardswish") {}
  Tensor forward(const Tensor& x) { return torch::hardswish(x); }
  void pretty_print(std::ostream& os) const override { os << "Hardswish()"; }
};
TORCH_MODULE(Hardswish);

class LstmBlockImpl : public torch::nn::Module {
 public:
  explicit LstmBlockImpl(const torch::nn::LSTMOptions& options) : Module("LSTM") {
    lstm_ = register_module("lstm", torch::nn::LSTM(options));
  }
  /// The full output sequence; the hidden state is dropped, as in CodefyUI.
  Tensor forward(const Tensor& x) { return std::get<0>(lstm_->forward(x)); }
  void pretty_print(std::ostream& os) const override { lstm_->pretty_print(os); }

 private:
  torch::nn::LSTM lstm_{nullptr};
};
TORCH_MODULE(LstmBlock);

class GruBlockImpl : public torch::nn::Module {
 public:
  explicit GruBlockImpl(const torch::nn::GRUOptions& options) : Module("GRU") {
    gru_ = register_module("gru", torch::nn::GRU(options));
  }
  Tensor forward(const Tensor& x) { return std::get<0>(gru_->forward(x)); }
  void pretty_print(std::ostream& os) const override { gru_->pretty_print(os); }

 private:
  torch::nn::GRU gru_{nullptr};
};
TORCH_MODULE(GruBlock);

// LibTorch 1.13's transformer and attention modules are sequence-first while
// CodefyUI builds them with batch_first=True, so [batch, seq, feature] input
// is transposed around them.
Tensor to_sequence_first(const Tensor& x) { return x.dim() == 3 ? x.transpose(0, 1) : x; }

struct TransformerConfig {
  int64_t d_model, nhead, num_layers, dim_feedforward;
  double dropout;
  std::string activation;

  void print(std::ostream& os, const char* name) const {
    os << name << "(d_model=" << d_model << ", nhead=" << nhead << ", num_layers=" << num_layers
       << ", dim_feedforward=" << dim_feedforward << ", dropout=" << dropout << ", activation=" << activation
       << ", batch_first=true)";
  }
};

template <class LayerOptions>
LayerOptions transformer_layer_options(const TransformerConfig& c) {
  LayerOptions o(c.d_model, c.nhead);
  o.dim_feedforward(c.dim_feedforward).dropout(c.dropout);
  if (c.activation == "gelu")
    o.activation(torch::kGELU);
  else
    o.activation(torch::kReLU);
  return o;
}

class TransformerEncoderBlockImpl : public torch::nn::Module {
 public:
  explicit TransformerEncoderBlockImpl(TransformerConfig config)
      : Module("TransformerEncoder"), config_(std::move(config)) {
    encoder_ = register_module(
        "encoder",
        torch::nn::TransformerEncoder(torch::nn::TransformerEncoderOptions(
            transformer_layer_options<torch::nn::TransformerEncoderLayerOptions>(config_), config_.num_layers)));
  }
  Tensor forward(const Tensor& x) { return to_sequence_first(encoder_->forward(to_sequence_first(x))); }
  void pretty_print(std::ostream& os) const override { config_.print(os, "TransformerEncoder"); }

 private:
  TransformerConfig config_;
  torch::nn::TransformerEncoder encoder_{nullptr};
};
TORCH_MODULE(TransformerEncoderBlock);

class TransformerDecoderBlockImpl : public torch::nn::Module {
 public:
  explicit TransformerDecoderBlockImpl(TransformerConfig config)
      : Module("TransformerDecoder"), config_(std::move(config)) {
    decoder_ = register_module(
        "decoder",
        torch::nn::TransformerDecoder(torch::nn::TransformerDecoderOptions(
            transformer_layer_options<torch::nn::TransformerDecoderLayerOptions>(config_), config_.num_layers)));
  }
  /// Self-attention mode: the memory is the input itself, as in CodefyUI.
  Tensor forward(const Tensor& x) {
    const Tensor s = to_sequence_first(x);
    return to_sequence_first(decoder_->forward(s, s));
  }
  void pretty_print(std::ostream& os) const override { config_.print(os, "TransformerDecoder"); }

 private:
  TransformerConfig config_;
  torch::nn::TransformerDecoder decoder_{nullptr};
};
TORCH_MODULE(TransformerDecoderBlock);

class MultiHeadAttentionBlockImpl : public torch::nn::Module {
 public:
  explicit MultiHeadAttentionBlockImpl(const torch::nn::MultiheadAttentionOptions& options)
      : Module("MultiHeadAttention"), options_(options) {
    attn_ = register_module("attn", torch::nn::MultiheadAttention(options));
  }
  /// Self-attention; the attention weights are discarded.
  Tensor forward(const Tensor& x) {
    const Tensor s = to_sequence_first(x);
    return to_sequence_first(std::get<0>(attn_->forward(s, s, s, /*key_padding_mask=*/{}, /*need_weights=*/false)));
  }
  void pretty_print(std::ostream& os) const override {
    os << "MultiHeadAttention(embed_dim=" << options_.embed_dim() << ", num_heads=" << options_.num_heads()
       << ", dropout=" << options_.dropout() << ", batch_first=true)";
  }

 private:
  torch::nn::MultiheadAttentionOptions options_;
  torch::nn::MultiheadAttention attn_{nullptr};
};
TORCH_MODULE(MultiHeadAttentionBlock);

// ---------------------------------------------------------------------------
// Layer builders: one entry per type, with the parameter names it accepts.

using LayerFn = std::function<Tensor(const Tensor&)>;

struct Built {
  std::shared_ptr<torch::nn::Module> module;
  LayerFn forward;
};

template <class Holder>
Built wrap(Holder holder) {
  auto impl = holder.ptr();
  return {impl, [impl](const Tensor& x) { return impl->forward(x); }};
}

template <size_t D>
typename torch::nn::ConvOptions<D>::padding_t conv_padding(const Params& p) {
  const json* v = p.find("padding");
  if (v == nullptr) return torch::ExpandingArray<D>(0);
  if (v->is_string() && v->get<std::string>() == "same") return torch::kSame;
  if (v->is_string() && v->get<std::string>() == "valid") return torch::kValid;
  if (v->is_string())
    p.fail("padding", "expected a whole number, a list of them, \"same\" or \"valid\", got " + describe_json(*v));
  return p.to_ints<D>("padding", *v, 0);
}

torch::nn::detail::conv_padding_mode_t padding_mode(const Params& p, const std::vector<std::string>& allowed) {
  const std::string mode = p.choice_or("padding_mode", "zeros", allowed);
  if (mode == "reflect") return torch::kReflect;
  if (mode == "replicate") return torch::kReplicate;
  if (mode == "circular") return torch::kCircular;
  return torch::kZeros;
}

void check_groups(const Params& p, int64_t groups, int64_t in_channels, int64_t out_channels) {
  if (in_channels % groups != 0 || out_channels % groups != 0)
    p.fail("groups", "in_channels (" + std::to_string(in_channels) + ") and out_channels (" +
                         std::to_string(out_channels) + ") must both be divisible by groups (" +
                         std::to_string(groups) + ")");
}

template <size_t D, class Holder>
Built build_conv(const Params& p) {
  const int64_t in = p.integer("in_channels", 1), out = p.integer("out_channels", 1);
  torch::nn::ConvOptions<D> o(in, out, p.ints<D>("kernel_size", 1));
  const int64_t groups = p.integer_or("groups", 1, 1);
  check_groups(p, groups, in, out);
  o.stride(p.ints_or<D>("stride", 1, 1))
      .padding(conv_padding<D>(p))
      .dilation(p.ints_or<D>("dilation", 1, 1))
      .groups(groups)
      .bias(p.boolean_or("bias", true))
      .padding_mode(padding_mode(p, {"zeros", "reflect", "replicate", "circular"}));
  return wrap(Holder(o));
}

Built build_conv_transpose2d(const Params& p) {
  const int64_t in = p.integer("in_channels", 1), out = p.integer("out_channels", 1);
  torch::nn::ConvTranspose2dOptions o(in, out, p.ints<2>("kernel_size", 1));
  const int64_t groups = p.integer_or("groups", 1, 1);
  check_groups(p, groups, in, out);
  o.stride(p.ints_or<2>("stride", 1, 1))
      .padding(p.ints_or<2>("padding", 0, 0))
      .output_padding(p.ints_or<2>("output_padding", 0, 0))
      .dilation(p.ints_or<2>("dilation", 1, 1))
      .groups(groups)
      .bias(p.boolean_or("bias", true))
      .padding_mode(padding_mode(p, {"zeros"}));  // PyTorch's ConvTranspose only supports zeros.
  return wrap(torch::nn::ConvTranspose2d(o));
}

/// PyTorch's pooling stride defaults to kernel_size (stride=None).
torch::ExpandingArray<2> pool_stride(const Params& p, const torch::ExpandingArray<2>& kernel) {
  const json* v = p.find("stride");
  return v == nullptr ? kernel : p.to_ints<2>("stride", *v, 1);
}

Built build_max_pool2d(const Params& p) {
  const auto kernel = p.ints<2>("kernel_size", 1);
  torch::nn::MaxPool2dOptions o(kernel);
  o.stride(pool_stride(p, kernel))
      .padding(p.ints_or<2>("padding", 0, 0))
      .dilation(p.ints_or<2>("dilation", 1, 1))
      .ceil_mode(p.boolean_or("ceil_mode", false));
  return wrap(torch::nn::MaxPool2d(o));
}

Built build_avg_pool2d(const Params& p) {
  const auto kernel = p.ints<2>("kernel_size", 1);
  torch::nn::AvgPool2dOptions o(kernel);
  o.stride(pool_stride(p, kernel))
      .padding(p.ints_or<2>("padding", 0, 0))
      .ceil_mode(p.boolean_or("ceil_mode", false))
      .count_include_pad(p.boolean_or("count_include_pad", true))
      .divisor_override(p.optional_integer("divisor_override", 1));
  return wrap(torch::nn::AvgPool2d(o));
}

Built build_adaptive_avg_pool2d(const Params& p) {
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
Built build_batch_norm(const Params& p) {
  torch::nn::BatchNormOptions o(p.integer("num_features", 1));
  o.eps(p.real_or("eps", 1e-5, 0))
      .momentum(p.optional_real("momentum", 0.1, 0))
      .affine(p.boolean_or("affine", true))
      .track_running_stats(p.boolean_or("track_running_stats", true));
  return wrap(Holder(o));
}

Built build_instance_norm2d(const Params& p) {
  torch::nn::InstanceNorm2dOptions o(p.integer("num_features", 1));
  o.eps(p.real_or("eps", 1e-5, 0))
      .momentum(p.real_or("momentum", 0.1, 0))
      .affine(p.boolean_or("affine", false))
      .track_running_stats(p.boolean_or("track_running_stats", false));
  return wrap(torch::nn::InstanceNorm2d(o));
}

Built build_layer_norm(const Params& p) {
  torch::nn::LayerNormOptions o(p.int_list("normalized_shape", 1));
  o.eps(p.real_or("eps", 1e-5, 0)).elementwise_affine(p.boolean_or("elementwise_affine", true));
  return wrap(torch::nn::LayerNorm(o));
}

Built build_group_norm(const Params& p) {
  const int64_t groups = p.integer("num_groups", 1), channels = p.integer("num_channels", 1);
  if (channels % groups != 0)
    p.fail("num_groups", "num_channels (" + std::to_string(channels) + ") must be divisible by num_groups (" +
                             std::to_string(groups) + ")");
  torch::nn::GroupNormOptions o(groups, channels);
  o.eps(p.real_or("eps", 1e-5, 0)).affine(p.boolean_or("affine", true));
  return wrap(torch::nn::GroupNorm(o));
}

/// `inplace` is accepted for PyTorch compatibility but not honoured: a value
/// in the graph may feed several layers, and changing it in place would
/// corrupt the others. The result is the same either way.
void ignore_inplace(const Params& p) { (void)p.boolean_or("inplace", false); }

Built build_dropout(const Params& p) {
  const double prob = p.real_or("p", 0.5, 0, 1);
  ignore_inplace(p);
  return wrap(torch::nn::Dropout(torch::nn::DropoutOptions(prob)));
}

Built build_flatten(const Params& p) {
  return wrap(torch::nn::Flatten(
      torch::nn::FlattenOptions().start_dim(p.integer_or("start_dim", 1)).end_dim(p.integer_or("end_dim", -1))));
}

Built build_reshape(const Params& p) {
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
      const auto size = first == std::string::npos ? std::nullopt
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

Built build_select_index(const Params& p) {
  return wrap(SelectIndex(p.integer_or("dim", 1), p.integer_or("index", 0)));
}

Built build_embedding(const Params& p) {
  const int64_t count = p.integer("num_embeddings", 1);
  torch::nn::EmbeddingOptions o(count, p.integer("embedding_dim", 1));
  const auto padding_idx = p.optional_integer("padding_idx");
  if (padding_idx && (*padding_idx >= count || *padding_idx < -count))
    p.fail("padding_idx", "must be within num_embeddings (-" + std::to_string(count) + " to " +
                              std::to_string(count - 1) + "), got " + std::to_string(*padding_idx));
  o.padding_idx(padding_idx)
      .max_norm(p.optional_real("max_norm", c10::nullopt, 0))
      .norm_type(p.real_or("norm_type", 2.0))
      .scale_grad_by_freq(p.boolean_or("scale_grad_by_freq", false))
      .sparse(p.boolean_or("sparse", false));
  return wrap(torch::nn::Embedding(o));
}

template <class Options>
Options rnn_options(const Params& p) {
  Options o(p.integer("input_size", 1), p.integer("hidden_size", 1));
  o.num_layers(p.integer_or("num_layers", 1, 1))
      .bias(p.boolean_or("bias", true))
      .batch_first(p.boolean_or("batch_first", false))
      .dropout(p.real_or("dropout", 0.0, 0, 1))
      .bidirectional(p.boolean_or("bidirectional", false));
  return o;
}

Built build_lstm(const Params& p) {
  auto o = rnn_options<torch::nn::LSTMOptions>(p);
  const int64_t proj = p.integer_or("proj_size", 0, 0);
  if (proj >= o.hidden_size())
    p.fail("proj_size", "must be smaller than hidden_size (" + std::to_string(o.hidden_size()) + ")");
  o.proj_size(proj);
  return wrap(LstmBlock(o));
}

Built build_gru(const Params& p) { return wrap(GruBlock(rnn_options<torch::nn::GRUOptions>(p))); }

void check_heads(const Params& p, const char* dim_name, int64_t dim, const char* heads_name, int64_t heads) {
  if (dim % heads != 0)
    p.fail(heads_name, std::string(dim_name) + " (" + std::to_string(dim) + ") must be divisible by " + heads_name +
                           " (" + std::to_string(heads) + ")");
}

TransformerConfig transformer_config(const Params& p) {
  TransformerConfig c{};
  c.d_model = p.integer("d_model", 1);
  c.nhead = p.integer("nhead", 1);
  check_heads(p, "d_model", c.d_model, "nhead", c.nhead);
  c.num_layers = p.integer_or("num_layers", 1, 1);
  c.dim_feedforward = p.integer_or("dim_feedforward", 2048, 1);
  c.dropout = p.real_or("dropout", 0.1, 0, 1);
  c.activation = p.choice_or("activation", "relu", {"relu", "gelu"});
  return c;
}

Built build_multi_head_attention(const Params& p) {
  const int64_t dim = p.integer("embed_dim", 1), heads = p.integer("num_heads", 1);
  check_heads(p, "embed_dim", dim, "num_heads", heads);
  return wrap(MultiHeadAttentionBlock(
      torch::nn::MultiheadAttentionOptions(dim, heads).dropout(p.real_or("dropout", 0.0, 0, 1))));
}

struct LayerDef {
  const char* type;
  std::vector<std::string> params;
  Built (*build)(const Params&);
};

// Order follows CodefyUI's palette: layers, wrappers, then activations.
const std::vector<LayerDef>& layer_defs() {
  static const std::vector<LayerDef> defs = {
      {"Linear",
       {"in_features", "out_features", "bias"},
       [](const Params& p) {
         return wrap(
             torch::nn::Linear(torch::nn::LinearOptions(p.integer("in_features", 1), p.integer("out_features", 1))
                                   .bias(p.boolean_or("bias", true))));
       }},
      {"Conv1d",
       {"in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias",
        "padding_mode"},
       build_conv<1, torch::nn::Conv1d>},
      {"Conv2d",
       {"in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias",
        "padding_mode"},
       build_conv<2, torch::nn::Conv2d>},
      {"ConvTranspose2d",
       {"in_channels", "out_channels", "kernel_size", "stride", "padding", "output_padding", "groups", "bias",
        "dilation", "padding_mode"},
       build_conv_transpose2d},
      {"MaxPool2d", {"kernel_size", "stride", "padding", "dilation", "ceil_mode"}, build_max_pool2d},
      {"AvgPool2d",
       {"kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"},
       build_avg_pool2d},
      {"AdaptiveAvgPool2d", {"output_size"}, build_adaptive_avg_pool2d},
      {"BatchNorm1d",
       {"num_features", "eps", "momentum", "affine", "track_running_stats"},
       build_batch_norm<torch::nn::BatchNorm1d>},
      {"BatchNorm2d",
       {"num_features", "eps", "momentum", "affine", "track_running_stats"},
       build_batch_norm<torch::nn::BatchNorm2d>},
      {"LayerNorm", {"normalized_shape", "eps", "elementwise_affine"}, build_layer_norm},
      {"GroupNorm", {"num_groups", "num_channels", "eps", "affine"}, build_group_norm},
      {"InstanceNorm2d", {"num_features", "eps", "momentum", "affine", "track_running_stats"}, build_instance_norm2d},
      {"Dropout", {"p", "inplace"}, build_dropout},
      {"Flatten", {"start_dim", "end_dim"}, build_flatten},
      {"Embedding",
       {"num_embeddings", "embedding_dim", "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse"},
       build_embedding},
      {"Reshape", {"shape"}, build_reshape},
      {"SelectIndex", {"dim", "index"}, build_select_index},
      {"LSTM",
       {"input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout", "bidirectional", "proj_size"},
       build_lstm},
      {"GRU",
       {"input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout", "bidirectional"},
       build_gru},
      {"TransformerEncoder",
       {"d_model", "nhead", "num_layers", "dim_feedforward", "dropout", "activation"},
       [](const Params& p) { return wrap(TransformerEncoderBlock(transformer_config(p))); }},
      {"TransformerDecoder",
       {"d_model", "nhead", "num_layers", "dim_feedforward", "dropout", "activation"},
       [](const Params& p) { return wrap(TransformerDecoderBlock(transformer_config(p))); }},
      {"MultiHeadAttention", {"embed_dim", "num_heads", "dropout"}, build_multi_head_attention},
      // Activations.
      {"ReLU",
       {"inplace"},
       [](const Params& p) {
         ignore_inplace(p);
         return wrap(torch::nn::ReLU());
       }},
      {"GELU",
       {"approximate"},
       [](const Params& p) {
         return wrap(torch::nn::GELU(
             torch::nn::GELUOptions().approximate(p.choice_or("approximate", "none", {"none", "tanh"}))));
       }},
      {"Sigmoid", {}, [](const Params&) { return wrap(torch::nn::Sigmoid()); }},
      {"Tanh", {}, [](const Params&) { return wrap(torch::nn::Tanh()); }},
      {"LeakyReLU",
       {"negative_slope", "inplace"},
       [](const Params& p) {
         ignore_inplace(p);
         return wrap(
             torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(p.real_or("negative_slope", 0.01))));
       }},
      {"ELU",
       {"alpha", "inplace"},
       [](const Params& p) {
         ignore_inplace(p);
         return wrap(torch::nn::ELU(torch::nn::ELUOptions().alpha(p.real_or("alpha", 1.0))));
       }},
      {"SiLU",
       {"inplace"},
       [](const Params& p) {
         ignore_inplace(p);
         return wrap(torch::nn::SiLU());
       }},
      {"Mish",
       {"inplace"},
       [](const Params& p) {
         ignore_inplace(p);
         return wrap(torch::nn::Mish());
       }},
      {"SELU",
       {"inplace"},
       [](const Params& p) {
         ignore_inplace(p);
         return wrap(torch::nn::SELU());
       }},
      {"PReLU",
       {"num_parameters", "init"},
       [](const Params& p) {
         return wrap(torch::nn::PReLU(torch::nn::PReLUOptions()
                                          .num_parameters(p.integer_or("num_parameters", 1, 1))
                                          .init(p.real_or("init", 0.25))));
       }},
      {"Hardswish",
       {"inplace"},
       [](const Params& p) {
         ignore_inplace(p);
         return wrap(Hardswish());
       }},
      // CodefyUI fixes dim=-1 (PyTorch's own default is an implicit, deprecated dim).
      {"Softmax",
       {"dim"},
       [](const Params& p) { return wrap(torch::nn::Softmax(torch::nn::SoftmaxOptions(p.integer_or("dim", -1)))); }},
  };
  return defs;
}

// ---------------------------------------------------------------------------
// Merges: several inputs, in edge-list order; no module, like CodefyUI.

using MergeFn = std::function<Tensor(const std::vector<Tensor>&)>;

struct MergeDef {
  const char* type;
  std::vector<std::string> params;
  size_t min_inputs, max_inputs;
  MergeFn (*make)(const Params&, std::string* describe_extra);
};

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

const std::vector<MergeDef>& merge_defs() {
  constexpr size_t kMany = std::numeric_limits<size_t>::max();
  static const std::vector<MergeDef> defs = {
      {"Add", {}, 2, kMany, [](const Params&, std::string*) -> MergeFn { return add_all; }},
      {"Concat",
       {"dim"},
       1,
       kMany,
       [](const Params& p, std::string* extra) -> MergeFn {
         const int64_t dim = p.integer_or("dim", 1);
         *extra = ", dim=" + std::to_string(dim);
         return [dim](const std::vector<Tensor>& xs) { return torch::cat(xs, dim); };
       }},
      {"Multiply", {}, 2, kMany, [](const Params&, std::string*) -> MergeFn { return multiply_all; }},
      {"Subtract",
       {},
       2,
       2,
       [](const Params&, std::string*) -> MergeFn {
         return [](const std::vector<Tensor>& xs) { return xs[0] - xs[1]; };
       }},
      {"Mean",
       {},
       2,
       kMany,
       [](const Params&, std::string*) -> MergeFn {
         return [](const std::vector<Tensor>& xs) { return torch::stack(xs, 0).mean(0); };
       }},
      {"Stack",
       {"dim"},
       1,
       kMany,
       [](const Params& p, std::string* extra) -> MergeFn {
         const int64_t dim = p.integer_or("dim", 1);
         *extra = ", dim=" + std::to_string(dim);
         return [dim](const std::vector<Tensor>& xs) { return torch::stack(xs, dim); };
       }},
  };
  return defs;
}

// ---------------------------------------------------------------------------
// The model.

/// One node evaluated in the forward pass (a layer or a merge).
struct Step {
  std::string id, type;
  size_t slot;                 // Where its output goes (the node's index).
  std::vector<size_t> inputs;  // Slots it reads, in edge-list order.
  LayerFn layer;               // Set for plain layers.
  MergeFn merge;               // Set for merges.
  std::string description;     // For describe().
};

class GraphModel : public train::Model {
 public:
  GraphModel(const std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>>& modules,
             std::vector<Step> steps, size_t slots, size_t input_slot, size_t output_slot)
      : train::Model(std::string("SequentialModel")),
        steps_(std::move(steps)),
        slots_(slots),
        input_slot_(input_slot),
        output_slot_(output_slot) {
    layers_ = register_module("layers", torch::nn::ModuleDict(modules));
  }

  Tensor forward(const Tensor& x) override {
    std::vector<Tensor> values(slots_);
    values[input_slot_] = x;
    for (const Step& step : steps_) {
      try {
        if (step.layer) {
          values[step.slot] = step.layer(values[step.inputs.front()]);
        } else {
          std::vector<Tensor> inputs;
          for (size_t i : step.inputs) inputs.push_back(values[i]);
          values[step.slot] = step.merge(inputs);
        }
      } catch (const c10::OutOfMemoryError&) {
        throw;  // Not a problem with the spec.
      } catch (const c10::Error& e) {
        // Name the layer: LibTorch's message alone doesn't say which one failed.
        std::string shapes;
        for (size_t i : step.inputs) shapes += (shapes.empty() ? "" : ", ") + shape_of(values[i]);
        std::string message = e.msg();
        while (!message.empty() && std::isspace(static_cast<unsigned char>(message.back()))) message.pop_back();
        throw LayerSpecError(step.id, step.type, "",
                             (step.inputs.size() == 1 ? "failed on input of shape " : "failed on inputs of shapes ") +
                                 shapes + ": " + message);
      }
    }
    return values[output_slot_];
  }

  std::string describe() const override {
    std::string out;
    for (const Step& step : steps_) out += (out.empty() ? "" : "\n") + step.id + ": " + step.description;
    return out;
  }

 private:
  torch::nn::ModuleDict layers_{nullptr};
  std::vector<Step> steps_;
  size_t slots_, input_slot_, output_slot_;
};

// ---------------------------------------------------------------------------
// Reading and checking the spec.

struct Port {
  std::string id, name;
};

struct Node {
  std::string id, type;
  const json* params = nullptr;
  std::vector<Port> ports;  // Input/Output only.
};

struct Edge {
  std::string label;  // For messages: `edge "e3" (a -> b)`.
  size_t source, target;
  std::optional<std::string> source_handle, target_handle;
};

const json* member(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

json parse_spec(const json& spec) {
  if (!spec.is_string()) return spec;
  try {
    return json::parse(spec.get<std::string>());
  } catch (const json::parse_error& e) {
    std::string detail = e.what();
    if (const size_t at = detail.find("] "); detail.rfind("[json.exception", 0) == 0 && at != std::string::npos)
      detail = detail.substr(at + 2);
    throw LayerSpecError("", "", "", "the layers spec is not valid JSON (" + detail + ")");
  }
}

std::vector<Port> read_ports(const json& node, const std::string& id, const std::string& type) {
  const json* ports = member(node, "ports");
  if (ports == nullptr || !ports->is_array() || ports->empty())
    throw LayerSpecError(
        id, type, "ports",
        "the " + type + " node needs a \"ports\" list with one port, such as [{\"id\": \"p_x\", \"name\": \"x\"}]");
  std::vector<Port> out;
  for (const auto& p : *ports) {
    const json* pid = p.is_object() ? member(p, "id") : nullptr;
    const json* name = p.is_object() ? member(p, "name") : nullptr;
    if (pid == nullptr || !pid->is_string() || name == nullptr || !name->is_string())
      throw LayerSpecError(id, type, "ports", "each port needs a text \"id\" and \"name\", got " + describe_json(p));
    Port port{pid->get<std::string>(), name->get<std::string>()};
    for (const auto& seen : out) {
      if (seen.name == port.name) throw LayerSpecError(id, type, "ports", "two ports are named \"" + port.name + "\"");
      if (seen.id == port.id) throw LayerSpecError(id, type, "ports", "two ports have the id \"" + port.id + "\"");
    }
    out.push_back(std::move(port));
  }
  if (out.size() > 1) {
    std::vector<std::string> names;
    for (const auto& p : out) names.push_back(p.name);
    throw LayerSpecError(id, type, "ports",
                         "has " + std::to_string(out.size()) + " ports (" + quoted_list(names) +
                             "), but a Codefy model takes one tensor in and gives one tensor out, so the " + type +
                             " node must have exactly one port");
  }
  return out;
}

std::optional<std::string> read_handle(const json& edge, const char* key, const std::string& label) {
  const json* v = member(edge, key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_string())
    throw LayerSpecError("", "", "",
                         label + ": \"" + key + "\" must be a port id (text) or null, got " + describe_json(*v));
  return v->get<std::string>();
}

/// Kahn's algorithm over nodes in list order with a FIFO queue, as CodefyUI does.
std::vector<size_t> topological_order(const std::vector<Node>& nodes, const std::vector<Edge>& edges) {
  std::vector<size_t> indegree(nodes.size(), 0);
  std::vector<std::vector<size_t>> next(nodes.size());
  for (const auto& e : edges) {
    ++indegree[e.target];
    next[e.source].push_back(e.target);
  }
  std::deque<size_t> queue;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (indegree[i] == 0) queue.push_back(i);
  std::vector<size_t> order;
  while (!queue.empty()) {
    const size_t n = queue.front();
    queue.pop_front();
    order.push_back(n);
    for (size_t m : next[n])
      if (--indegree[m] == 0) queue.push_back(m);
  }
  if (order.size() == nodes.size()) return order;

  // Every node left over has a left-over predecessor; walking back along them
  // must revisit a node, and the walk from there is a cycle to show.
  std::vector<int> seen_at(nodes.size(), -1);
  std::vector<size_t> walk;
  size_t n = 0;
  while (indegree[n] == 0) ++n;
  while (seen_at[n] < 0) {
    seen_at[n] = static_cast<int>(walk.size());
    walk.push_back(n);
    for (const auto& e : edges)
      if (e.target == n && indegree[e.source] > 0) {
        n = e.source;
        break;
      }
  }
  std::vector<size_t> cycle(walk.begin() + seen_at[n], walk.end());
  std::reverse(cycle.begin(), cycle.end());
  // Start the cycle at the node listed first, so the message is stable.
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  std::string path;
  for (size_t i : cycle) path += nodes[i].id + " -> ";
  path += nodes[cycle.front()].id;
  throw LayerSpecError(nodes[cycle.front()].id, nodes[cycle.front()].type, "",
                       "Graph contains a cycle (" + path + "); data must flow one way from Input to Output");
}

}  // namespace

const std::vector<std::string>& layer_types() {
  static const std::vector<std::string> types = [] {
    std::vector<std::string> out{"Input", "Output"};
    for (const auto& d : layer_defs()) out.emplace_back(d.type);
    for (const auto& d : merge_defs()) out.emplace_back(d.type);
    return out;
  }();
  return types;
}

train::ModelPtr build_sequential_model(const nlohmann::json& spec_in) {
  const json spec = parse_spec(spec_in);
  if (!spec.is_object())
    throw LayerSpecError(
        "", "", "",
        "the layers spec must be a JSON object like {\"version\": 2, \"nodes\": [...], \"edges\": [...]}, "
        "got " +
            describe_json(spec));
  const json* version = member(spec, "version");
  if (version == nullptr || !version->is_number_integer() || version->get<int64_t>() != 2)
    throw LayerSpecError("", "", "version",
                         "Unsupported graph spec version: " + (version ? version->dump() : std::string("none given")) +
                             " (SequentialModel reads version 2)");

  // --- Nodes.
  const json* nodes_json = member(spec, "nodes");
  if (nodes_json == nullptr || !nodes_json->is_array())
    throw LayerSpecError("", "", "nodes", "the spec needs a \"nodes\" list");
  std::vector<Node> nodes;
  std::map<std::string, size_t> index_of;
  std::vector<size_t> inputs, outputs;
  for (size_t i = 0; i < nodes_json->size(); ++i) {
    const json& n = (*nodes_json)[i];
    if (!n.is_object())
      throw LayerSpecError("", "", "",
                           "node #" + std::to_string(i + 1) + " must be an object, got " + describe_json(n));
    const json* id = member(n, "id");
    const json* type = member(n, "type");
    const std::string type_name = type != nullptr && type->is_string() ? type->get<std::string>() : "";
    if (id == nullptr || !id->is_string() || id->get<std::string>().empty())
      throw LayerSpecError("", type_name, "", "node #" + std::to_string(i + 1) + " needs a non-empty text \"id\"");
    Node node;
    node.id = id->get<std::string>();
    if (type_name.empty()) throw LayerSpecError(node.id, "", "", "the node needs a text \"type\", such as \"Conv2d\"");
    node.type = type_name;
    if (node.id.find('.') != std::string::npos)
      throw LayerSpecError(
          node.id, node.type, "",
          "node ids can't contain '.', which separates the parts of parameter names "
          "(layers.<id>.weight); rename it, e.g. to \"" +
              [&] {
                std::string s = node.id;
                std::replace(s.begin(), s.end(), '.', '_');
                return s;
              }() +
              "\"");
    if (!index_of.emplace(node.id, i).second)
      throw LayerSpecError(node.id, node.type, "", "two nodes have the id \"" + node.id + "\"; ids must be unique");
    node.params = member(n, "params");
    if (node.type == "Input" || node.type == "Output") {
      (node.type == "Input" ? inputs : outputs).push_back(i);
      node.ports = read_ports(n, node.id, node.type);
    }
    nodes.push_back(std::move(node));
  }
  for (const auto& [list, type] : {std::pair{&inputs, "Input"}, std::pair{&outputs, "Output"}}) {
    if (list->empty())
      throw LayerSpecError("", "", "",
                           std::string("the graph has no ") + type + " node; it needs exactly one, connected " +
                               (std::string(type) == "Input" ? "to the first layer" : "from the last layer"));
    if (list->size() > 1)
      throw LayerSpecError(
          nodes[(*list)[1]].id, type, "",
          "the graph has " + std::to_string(list->size()) + " " + type + " nodes; it needs exactly one");
  }
  const size_t input = inputs.front(), output = outputs.front();

  // --- Layers, in node-list order (the ModuleDict order, hence parameters() order).
  std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> modules;
  std::map<size_t, Step> steps;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& node = nodes[i];
    if (i == input || i == output) continue;
    Step step;
    step.id = node.id;
    step.type = node.type;
    step.slot = i;
    const auto layer =
        std::find_if(layer_defs().begin(), layer_defs().end(), [&](const LayerDef& d) { return node.type == d.type; });
    const auto merge =
        std::find_if(merge_defs().begin(), merge_defs().end(), [&](const MergeDef& d) { return node.type == d.type; });
    try {
      if (layer != layer_defs().end()) {
        Built built = layer->build(Params(node.id, node.type, node.params, layer->params));
        step.layer = std::move(built.forward);
        step.description = pretty(*built.module);
        modules.emplace_back(node.id, std::move(built.module));
      } else if (merge != merge_defs().end()) {
        step.merge = merge->make(Params(node.id, node.type, node.params, merge->params), &step.description);
      } else {
        throw LayerSpecError(node.id, node.type, "", "unknown layer type");
      }
    } catch (const c10::Error& e) {
      // LibTorch's own option checks, for anything the Params checks missed.
      throw LayerSpecError(node.id, node.type, "", e.msg());
    }
    steps.emplace(i, std::move(step));
  }

  // --- Edges.
  const json* edges_json = member(spec, "edges");
  if (edges_json != nullptr && !edges_json->is_array())
    throw LayerSpecError("", "", "edges", "\"edges\" must be a list, got " + describe_json(*edges_json));
  std::vector<Edge> edges;
  if (edges_json != nullptr) {
    for (size_t i = 0; i < edges_json->size(); ++i) {
      const json& e = (*edges_json)[i];
      std::string label = "edge #" + std::to_string(i + 1);
      if (!e.is_object()) throw LayerSpecError("", "", "", label + " must be an object, got " + describe_json(e));
      if (const json* id = member(e, "id"); id != nullptr && id->is_string())
        label = "edge \"" + id->get<std::string>() + "\"";
      size_t ends[2];
      const char* keys[2] = {"source", "target"};
      for (int k = 0; k < 2; ++k) {
        const json* v = member(e, keys[k]);
        if (v == nullptr || !v->is_string())
          throw LayerSpecError("", "", "", label + " needs a text \"" + keys[k] + "\" naming a node");
        auto it = index_of.find(v->get<std::string>());
        if (it == index_of.end())
          throw LayerSpecError("", "", "",
                               label + " " + (k == 0 ? "comes from" : "goes to") + " \"" + v->get<std::string>() +
                                   "\", which is not a node in the graph");
        ends[k] = it->second;
      }
      label += " (" + nodes[ends[0]].id + " -> " + nodes[ends[1]].id + ")";
      edges.push_back(
          {label, ends[0], ends[1], read_handle(e, "sourceHandle", label), read_handle(e, "targetHandle", label)});
    }
  }

  const std::vector<size_t> order = topological_order(nodes, edges);

  // --- Connections.
  const Node& in_node = nodes[input];
  const Node& out_node = nodes[output];
  std::optional<size_t> output_source;
  size_t input_uses = 0;
  for (const Edge& e : edges) {
    if (e.target == input)
      throw LayerSpecError(in_node.id, "Input", "", e.label + " goes into the Input node; nothing can feed the Input");
    if (e.source == output)
      throw LayerSpecError(out_node.id, "Output", "",
                           e.label + " leaves the Output node; the Output can't feed layers");
    if (e.source == input) {
      if (e.source_handle != in_node.ports[0].id)
        throw LayerSpecError(in_node.id, "Input", "sourceHandle",
                             e.label + " must set \"sourceHandle\" to the Input port id \"" + in_node.ports[0].id +
                                 "\", got " + (e.source_handle ? "\"" + *e.source_handle + "\"" : std::string("none")));
      ++input_uses;
    }
    // A sourceHandle from a layer is ignored: layers have a single output.
    if (e.target == output) {
      if (e.target_handle != out_node.ports[0].id)
        throw LayerSpecError(out_node.id, "Output", "targetHandle",
                             e.label + " must set \"targetHandle\" to the Output port id \"" + out_node.ports[0].id +
                                 "\", got " + (e.target_handle ? "\"" + *e.target_handle + "\"" : std::string("none")));
      if (output_source)
        throw LayerSpecError(
            out_node.id, "Output", "",
            "Output port \"" + out_node.ports[0].name + "\" has more than one incoming edge; it needs exactly one");
      output_source = e.source;
    } else {
      steps.at(e.target).inputs.push_back(e.source);
    }
  }
  if (input_uses == 0)
    throw LayerSpecError(in_node.id, "Input", "",
                         "Input port '" + in_node.ports[0].name + "' is unused; connect it to the first layer");
  if (!output_source)
    throw LayerSpecError(
        out_node.id, "Output", "",
        "Output port \"" + out_node.ports[0].name + "\" has no incoming edge; connect the last layer to it");
  for (auto& [index, step] : steps) {
    std::vector<std::string> sources;
    for (size_t s : step.inputs) sources.push_back(nodes[s].id);
    if (step.layer) {
      if (step.inputs.size() != 1)
        throw LayerSpecError(step.id, step.type, "",
                             step.inputs.empty()
                                 ? "has no input; connect the Input or another layer to it"
                                 : "has " + std::to_string(step.inputs.size()) + " inputs (from " +
                                       quoted_list(sources) +
                                       ") but takes exactly one; combine them first with a merge node (Add, Concat, "
                                       "Multiply, Subtract, Mean or Stack)");
    } else {
      const MergeDef& def = *std::find_if(merge_defs().begin(), merge_defs().end(),
                                          [&](const MergeDef& d) { return step.type == d.type; });
      if (step.inputs.size() < def.min_inputs || step.inputs.size() > def.max_inputs)
        throw LayerSpecError(step.id, step.type, "",
                             "has " + std::to_string(step.inputs.size()) +
                                 (step.inputs.size() == 1 ? " input" : " inputs") + " but needs " +
                                 (def.min_inputs == def.max_inputs ? "exactly " + std::to_string(def.min_inputs)
                                                                   : "at least " + std::to_string(def.min_inputs)));
      std::string extra = step.description;
      step.description = step.type + "(" + [&] {
        std::string s;
        for (const auto& id : sources) s += (s.empty() ? "" : ", ") + id;
        return s;
      }() + extra + ")";
    }
  }

  std::vector<Step> ordered;
  for (size_t i : order)
    if (i != input && i != output) ordered.push_back(std::move(steps.at(i)));
  return std::make_shared<GraphModel>(modules, std::move(ordered), nodes.size(), input, *output_source);
}

}  // namespace codefy::layers
