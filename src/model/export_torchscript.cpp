// torchscript_source / torchscript_module: the layer graph as TorchScript
// over aten ops, each layer written as the LibTorch module Codefy runs
// computes it (the same ops in the same order, so the results are Codefy's).
#include "model/export_torchscript.h"

#include "model/export_code.h"
#include "model/modules.h"
#include "train/state_dict.h"
#include "util/atomic_file.h"
#include "util/text.h"

#include <torch/torch.h>

#include <cctype>
#include <cmath>
#include <optional>
#include <set>
#include <sstream>
#include <typeinfo>

namespace codefy::model {

using export_code::bool_literal;
using export_code::float_literal;
using export_code::int_list;
using export_code::string_literal;

namespace {

/// The attention of LibTorch's F::multi_head_attention_forward for Codefy's
/// layers (packed in-projection with bias, no bias_k/v, no zero attention,
/// no masks), in eval mode: self-attention projects q, k and v at once; with
/// another memory (the decoder's cross-attention) q and k, v separately.
constexpr const char* kAttentionMethod = R"(
def _codefy_attention(self, query: Tensor, memory: Tensor, in_w: Tensor, in_b: Tensor, out_w: Tensor, out_b: Tensor, num_heads: int, scaling: float, self_attention: bool) -> Tensor:
    tgt_len = query.size(0)
    bsz = query.size(1)
    embed_dim = query.size(2)
    head_dim = embed_dim // num_heads
    if self_attention:
        qkv = torch.linear(query, in_w, in_b).chunk(3, -1)
        q = qkv[0]
        k = qkv[1]
        v = qkv[2]
    else:
        q = torch.linear(query, in_w[0:embed_dim], in_b[0:embed_dim])
        kv = torch.linear(memory, in_w[embed_dim:], in_b[embed_dim:]).chunk(2, -1)
        k = kv[0]
        v = kv[1]
    q = q * scaling
    q = q.contiguous().view([tgt_len, bsz * num_heads, head_dim]).transpose(0, 1)
    k = k.contiguous().view([-1, bsz * num_heads, head_dim]).transpose(0, 1)
    v = v.contiguous().view([-1, bsz * num_heads, head_dim]).transpose(0, 1)
    weights = torch.softmax(torch.bmm(q, k.transpose(1, 2)), -1)
    out = torch.bmm(weights, v).transpose(0, 1).contiguous().view([tgt_len, bsz, embed_dim])
    return torch.linear(out, out_w, out_b)
)";

const torch::nn::Module* find_child(const torch::nn::Module& module, const std::string& name) {
  for (const auto& child : module.named_children())
    if (child.key() == name) return child.value().get();
  return nullptr;
}

/// Writes one node's statements, reading tensors by their state-dict names
/// (each checked against the model's).
class TorchScriptWriter {
 public:
  TorchScriptWriter(const SpecNode& node, const std::set<std::string>& tensors, std::vector<std::string>& lines)
      : node_(node), tensors_(tensors), lines_(lines) {}

  bool uses_attention() const { return attention_; }

  void layer(const torch::nn::Module& m, const std::string& in, const std::string& out);

 private:
  [[noreturn]] void fail(const std::string& why) const { throw ExportError(node_.id, node_.type, "", why); }

  /// `self.layers.<id>.<path>` as an expression, or nullopt when the model has no such tensor.
  std::optional<std::string> find_tensor(const std::vector<std::string>& path) const {
    std::vector<std::string> atoms{"layers", node_.id};
    atoms.insert(atoms.end(), path.begin(), path.end());
    if (!tensors_.count(util::join(atoms, "."))) return std::nullopt;
    std::string expr = "self";
    for (const auto& a : atoms)
      expr = export_code::is_identifier(a) ? expr + "." + a : "getattr(" + expr + ", " + string_literal(a) + ")";
    return expr;
  }
  std::string tensor(const std::vector<std::string>& path) const {
    if (auto e = find_tensor(path)) return *e;
    fail("the model has no tensor \"layers." + node_.id + "." + util::join(path, ".") +
         "\"; it was not built from this spec");
  }
  std::string optional_tensor(const std::vector<std::string>& path) const { return find_tensor(path).value_or("None"); }

  template <class Impl>
  const Impl& as(const torch::nn::Module& m) const {
    const auto* impl = dynamic_cast<const Impl*>(&m);
    if (impl == nullptr)
      fail("the model's module here is " + m.name() + ", not this layer type's; it was not built from this spec");
    return *impl;
  }

  void emit(const std::string& line) { lines_.push_back(line); }

  template <size_t D, class Impl>
  void conv(const torch::nn::Module& m, const std::string& in, const std::string& out);
  template <class Impl>
  void batch_norm(const torch::nn::Module& m, const std::string& in, const std::string& out);
  void lstm(const LstmBlockImpl& block, const std::string& in, const std::string& out);
  void gru(const GruBlockImpl& block, const std::string& in, const std::string& out);
  std::string attention(const std::vector<std::string>& prefix, const torch::nn::MultiheadAttentionImpl& mha,
                        const std::string& query, const std::string& memory, bool self_attention);
  std::string layer_norm(const std::vector<std::string>& prefix, const torch::nn::LayerNormImpl& norm,
                         const std::string& in);
  std::string feed_forward(const std::vector<std::string>& prefix, const std::string& in,
                           const torch::nn::activation_t& activation);

  const SpecNode& node_;
  const std::set<std::string>& tensors_;
  std::vector<std::string>& lines_;
  bool attention_ = false;
};

template <size_t D>
std::vector<int64_t> int_vector(const torch::ExpandingArray<D>& a) {
  return std::vector<int64_t>(a->begin(), a->end());
}

std::string optional_int(const c10::optional<int64_t>& v) { return v ? std::to_string(*v) : "None"; }

template <size_t D, class Impl>
void TorchScriptWriter::conv(const torch::nn::Module& m, const std::string& in, const std::string& out) {
  const auto& o = as<Impl>(m).options;
  const std::string fn = std::string("torch.conv") + (o.transposed() ? "_transpose" : "") + std::to_string(D) + "d";
  const std::string w = tensor({"weight"}), b = optional_tensor({"bias"});
  const auto& padding = o.padding();
  if (o.transposed()) {
    const auto* pad = export_code::variant_if<torch::ExpandingArray<D>>(padding);
    if (pad == nullptr) fail("a transposed convolution takes numbers as padding");
    emit(out + " = " + fn + "(" + in + ", " + w + ", " + b + ", " + int_list(int_vector<D>(o.stride())) + ", " +
         int_list(int_vector<D>(*pad)) + ", " + int_list(int_vector<D>(o.output_padding())) + ", " +
         std::to_string(o.groups()) + ", " + int_list(int_vector<D>(o.dilation())) + ")");
    return;
  }
  std::string source = in, padding_arg;
  const std::string mode = torch::enumtype::get_enum_name(o.padding_mode());
  if (mode != "kZeros") {
    // LibTorch pads first (_reversed_padding_repeated_twice), then convolves unpadded.
    std::vector<int64_t> twice(2 * D, 0);
    if (export_code::variant_if<torch::enumtype::kSame>(padding)) {
      for (size_t i = 0; i < D; ++i) {
        const int64_t total = (*o.dilation())[i] * ((*o.kernel_size())[i] - 1);
        twice[2 * i] = total / 2;
        twice[2 * i + 1] = total - total / 2;
      }
    } else if (const auto* pad = export_code::variant_if<torch::ExpandingArray<D>>(padding)) {
      for (size_t i = 0; i < D; ++i) twice[2 * i] = twice[2 * i + 1] = (**pad)[D - 1 - i];
    }
    std::string name = mode.substr(1);
    name[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(name[0])));
    source = "torch.pad(" + in + ", " + int_list(twice) + ", " + string_literal(name) + ")";
    padding_arg = int_list(std::vector<int64_t>(D, 0));
  } else if (export_code::variant_if<torch::enumtype::kSame>(padding)) {
    padding_arg = "\"same\"";
  } else if (export_code::variant_if<torch::enumtype::kValid>(padding)) {
    padding_arg = "\"valid\"";
  } else {
    padding_arg = int_list(int_vector<D>(*export_code::variant_if<torch::ExpandingArray<D>>(padding)));
  }
  emit(out + " = " + fn + "(" + source + ", " + w + ", " + b + ", " + int_list(int_vector<D>(o.stride())) + ", " +
       padding_arg + ", " + int_list(int_vector<D>(o.dilation())) + ", " + std::to_string(o.groups()) + ")");
}

template <class Impl>
void TorchScriptWriter::batch_norm(const torch::nn::Module& m, const std::string& in, const std::string& out) {
  const auto& o = as<Impl>(m).options;
  // Eval mode: the running statistics, or the batch's when the layer keeps none.
  emit(out + " = torch.batch_norm(" + in + ", " + optional_tensor({"weight"}) + ", " + optional_tensor({"bias"}) +
       ", " + optional_tensor({"running_mean"}) + ", " + optional_tensor({"running_var"}) + ", " +
       bool_literal(!o.track_running_stats()) + ", " + float_literal(o.momentum().value_or(0.0)) + ", " +
       float_literal(o.eps()) + ", False)");
}

template <class Options>
std::vector<std::string> rnn_weights(const Options& o, bool projections) {
  std::vector<std::string> names;
  for (int64_t layer = 0; layer < o.num_layers(); ++layer) {
    for (int direction = 0; direction < (o.bidirectional() ? 2 : 1); ++direction) {
      const std::string suffix = std::to_string(layer) + (direction == 1 ? "_reverse" : "");
      names.push_back("weight_ih_l" + suffix);
      names.push_back("weight_hh_l" + suffix);
      if (o.bias()) {
        names.push_back("bias_ih_l" + suffix);
        names.push_back("bias_hh_l" + suffix);
      }
      if (projections) names.push_back("weight_hr_l" + suffix);
    }
  }
  return names;
}

void TorchScriptWriter::lstm(const LstmBlockImpl& block, const std::string& in, const std::string& out) {
  const auto& o = block.lstm()->options;
  const int64_t states = o.num_layers() * (o.bidirectional() ? 2 : 1);
  const std::string batch = in + ".size(" + (o.batch_first() ? "0" : "1") + ")";
  const int64_t hidden_out = o.proj_size() > 0 ? o.proj_size() : o.hidden_size();
  std::vector<std::string> weights;
  for (const auto& name : rnn_weights(o, o.proj_size() > 0)) weights.push_back(tensor({"lstm", name}));
  emit("_h = torch.zeros([" + std::to_string(states) + ", " + batch + ", " + std::to_string(hidden_out) +
       "], dtype=" + in + ".dtype, device=" + in + ".device)");
  emit("_c = torch.zeros([" + std::to_string(states) + ", " + batch + ", " + std::to_string(o.hidden_size()) +
       "], dtype=" + in + ".dtype, device=" + in + ".device)");
  emit(out + " = torch.lstm(" + in + ", [_h, _c], [" + util::join(weights, ", ") + "], " + bool_literal(o.bias()) +
       ", " + std::to_string(o.num_layers()) + ", " + float_literal(o.dropout()) + ", False, " +
       bool_literal(o.bidirectional()) + ", " + bool_literal(o.batch_first()) + ")[0]");
}

void TorchScriptWriter::gru(const GruBlockImpl& block, const std::string& in, const std::string& out) {
  const auto& o = block.gru()->options;
  const int64_t states = o.num_layers() * (o.bidirectional() ? 2 : 1);
  const std::string batch = in + ".size(" + (o.batch_first() ? "0" : "1") + ")";
  std::vector<std::string> weights;
  for (const auto& name : rnn_weights(o, false)) weights.push_back(tensor({"gru", name}));
  emit("_h = torch.zeros([" + std::to_string(states) + ", " + batch + ", " + std::to_string(o.hidden_size()) +
       "], dtype=" + in + ".dtype, device=" + in + ".device)");
  emit(out + " = torch.gru(" + in + ", _h, [" + util::join(weights, ", ") + "], " + bool_literal(o.bias()) + ", " +
       std::to_string(o.num_layers()) + ", " + float_literal(o.dropout()) + ", False, " +
       bool_literal(o.bidirectional()) + ", " + bool_literal(o.batch_first()) + ")[0]");
}

std::vector<std::string> joined(std::vector<std::string> prefix, const std::string& name) {
  prefix.push_back(name);
  return prefix;
}

std::string TorchScriptWriter::attention(const std::vector<std::string>& prefix,
                                         const torch::nn::MultiheadAttentionImpl& mha, const std::string& query,
                                         const std::string& memory, bool self_attention) {
  const auto& o = mha.options;
  if (!o.bias() || o.add_bias_kv() || o.add_zero_attn() || o.kdim() != o.embed_dim() || o.vdim() != o.embed_dim())
    fail("its attention has options Codefy's layers never set (no bias, bias_kv, zero attention or other key sizes)");
  attention_ = true;
  const int64_t head_dim = o.embed_dim() / o.num_heads();
  // As LibTorch: q * (1 / sqrt(head_dim)), the factor a double.
  const double scaling = 1 / std::sqrt(static_cast<double>(head_dim));
  return "self._codefy_attention(" + query + ", " + memory + ", " + tensor(joined(prefix, "in_proj_weight")) + ", " +
         tensor(joined(prefix, "in_proj_bias")) + ", " + tensor(joined(joined(prefix, "out_proj"), "weight")) + ", " +
         tensor(joined(joined(prefix, "out_proj"), "bias")) + ", " + std::to_string(o.num_heads()) + ", " +
         float_literal(scaling) + ", " + bool_literal(self_attention) + ")";
}

std::string TorchScriptWriter::layer_norm(const std::vector<std::string>& prefix, const torch::nn::LayerNormImpl& norm,
                                          const std::string& in) {
  return "torch.layer_norm(" + in + ", " + int_list(norm.options.normalized_shape()) + ", " +
         optional_tensor(joined(prefix, "weight")) + ", " + optional_tensor(joined(prefix, "bias")) + ", " +
         float_literal(norm.options.eps()) + ")";
}

std::string TorchScriptWriter::feed_forward(const std::vector<std::string>& prefix, const std::string& in,
                                            const torch::nn::activation_t& activation) {
  std::string act;
  if (export_code::variant_if<torch::enumtype::kReLU>(activation))
    act = "torch.relu";
  else if (export_code::variant_if<torch::enumtype::kGELU>(activation))
    act = "torch.gelu";
  else
    fail("its activation is a function, which TorchScript source can't name");
  return "torch.linear(" + act + "(torch.linear(" + in + ", " + tensor(joined(joined(prefix, "linear1"), "weight")) +
         ", " + tensor(joined(joined(prefix, "linear1"), "bias")) + ")), " +
         tensor(joined(joined(prefix, "linear2"), "weight")) + ", " +
         tensor(joined(joined(prefix, "linear2"), "bias")) + ")";
}

void TorchScriptWriter::layer(const torch::nn::Module& m, const std::string& in, const std::string& out) {
  namespace tnn = torch::nn;
  const std::string& type = node_.type;
  const auto call = [&](const std::string& expr) { emit(out + " = " + expr); };
  if (type == "Linear") {
    as<tnn::LinearImpl>(m);
    call("torch.linear(" + in + ", " + tensor({"weight"}) + ", " + optional_tensor({"bias"}) + ")");
  } else if (type == "Conv1d") {
    conv<1, tnn::Conv1dImpl>(m, in, out);
  } else if (type == "Conv2d") {
    conv<2, tnn::Conv2dImpl>(m, in, out);
  } else if (type == "ConvTranspose2d") {
    conv<2, tnn::ConvTranspose2dImpl>(m, in, out);
  } else if (type == "MaxPool2d") {
    const auto& o = as<tnn::MaxPool2dImpl>(m).options;
    call("torch.max_pool2d(" + in + ", " + int_list(int_vector<2>(o.kernel_size())) + ", " +
         int_list(int_vector<2>(o.stride())) + ", " + int_list(int_vector<2>(o.padding())) + ", " +
         int_list(int_vector<2>(o.dilation())) + ", " + bool_literal(o.ceil_mode()) + ")");
  } else if (type == "AvgPool2d") {
    const auto& o = as<tnn::AvgPool2dImpl>(m).options;
    call("torch.avg_pool2d(" + in + ", " + int_list(int_vector<2>(o.kernel_size())) + ", " +
         int_list(int_vector<2>(o.stride())) + ", " + int_list(int_vector<2>(o.padding())) + ", " +
         bool_literal(o.ceil_mode()) + ", " + bool_literal(o.count_include_pad()) + ", " +
         optional_int(o.divisor_override()) + ")");
  } else if (type == "AdaptiveAvgPool2d") {
    const auto& size = *as<tnn::AdaptiveAvgPool2dImpl>(m).options.output_size();
    // As LibTorch: a None size keeps the input's.
    const std::string h = size[0] ? std::to_string(*size[0]) : in + ".size(-2)";
    const std::string w = size[1] ? std::to_string(*size[1]) : in + ".size(-1)";
    call("torch.adaptive_avg_pool2d(" + in + ", [" + h + ", " + w + "])");
  } else if (type == "BatchNorm1d") {
    batch_norm<tnn::BatchNorm1dImpl>(m, in, out);
  } else if (type == "BatchNorm2d") {
    batch_norm<tnn::BatchNorm2dImpl>(m, in, out);
  } else if (type == "LayerNorm") {
    call(layer_norm({}, as<tnn::LayerNormImpl>(m), in));
  } else if (type == "GroupNorm") {
    const auto& o = as<tnn::GroupNormImpl>(m).options;
    call("torch.group_norm(" + in + ", " + std::to_string(o.num_groups()) + ", " + optional_tensor({"weight"}) + ", " +
         optional_tensor({"bias"}) + ", " + float_literal(o.eps()) + ")");
  } else if (type == "InstanceNorm2d") {
    const auto& o = as<tnn::InstanceNorm2dImpl>(m).options;
    call("torch.instance_norm(" + in + ", " + optional_tensor({"weight"}) + ", " + optional_tensor({"bias"}) + ", " +
         optional_tensor({"running_mean"}) + ", " + optional_tensor({"running_var"}) + ", " +
         bool_literal(!o.track_running_stats()) + ", " + float_literal(o.momentum()) + ", " + float_literal(o.eps()) +
         ", False)");
  } else if (type == "Dropout") {
    as<tnn::DropoutImpl>(m);
    call(in);  // eval mode
  } else if (type == "Flatten") {
    const auto& o = as<tnn::FlattenImpl>(m).options;
    call("torch.flatten(" + in + ", " + std::to_string(o.start_dim()) + ", " + std::to_string(o.end_dim()) + ")");
  } else if (type == "Embedding") {
    const auto& o = as<tnn::EmbeddingImpl>(m).options;
    if (o.max_norm())
      fail(
          "max_norm renormalises the embedding's weights in place during forward, which a TorchScript export "
          "can't do without changing its own weights; export without max_norm, or use the PyTorch source form");
    int64_t padding_idx = o.padding_idx().value_or(-1);
    if (padding_idx < -1) padding_idx += o.num_embeddings();
    call("torch.embedding(" + tensor({"weight"}) + ", " + in + ", " + std::to_string(padding_idx) + ", " +
         bool_literal(o.scale_grad_by_freq()) + ", " + bool_literal(o.sparse()) + ")");
  } else if (type == "LSTM") {
    lstm(as<LstmBlockImpl>(m), in, out);
  } else if (type == "GRU") {
    gru(as<GruBlockImpl>(m), in, out);
  } else if (type == "TransformerEncoder") {
    const auto& encoder = *as<TransformerEncoderBlockImpl>(m).encoder();
    emit("_s = " + in + ".transpose(0, 1) if " + in + ".dim() == 3 else " + in);
    for (size_t i = 0; i < encoder.layers->size(); ++i) {
      const auto& l = encoder.layers->at<tnn::TransformerEncoderLayerImpl>(i);
      const std::vector<std::string> p{"encoder", "layers", std::to_string(i)};
      // Post-norm, dropouts off: norm1(x + attention(x)), norm2(x + feed_forward(x)).
      emit("_a = " + attention(joined(p, "self_attn"), *l.self_attn, "_s", "_s", true));
      emit("_s = " + layer_norm(joined(p, "norm1"), *l.norm1, "_s + _a"));
      emit("_a = " + feed_forward(p, "_s", l.options.activation()));
      emit("_s = " + layer_norm(joined(p, "norm2"), *l.norm2, "_s + _a"));
    }
    if (!encoder.norm.is_empty()) fail("its encoder has a final norm, which Codefy's layers never add");
    call("_s.transpose(0, 1) if _s.dim() == 3 else _s");
  } else if (type == "TransformerDecoder") {
    const auto& decoder = *as<TransformerDecoderBlockImpl>(m).decoder();
    emit("_m = " + in + ".transpose(0, 1) if " + in + ".dim() == 3 else " + in);
    emit("_s = _m");
    for (size_t i = 0; i < decoder.layers->size(); ++i) {
      const auto& l = decoder.layers->at<tnn::TransformerDecoderLayerImpl>(i);
      const std::vector<std::string> p{"decoder", "layers", std::to_string(i)};
      // Self-attention, then attention over the memory (the block's input), then the feed-forward.
      emit("_a = " + attention(joined(p, "self_attn"), *l.self_attn, "_s", "_s", true));
      emit("_s = " + layer_norm(joined(p, "norm1"), *l.norm1, "_s + _a"));
      emit("_a = " + attention(joined(p, "multihead_attn"), *l.multihead_attn, "_s", "_m", false));
      emit("_s = " + layer_norm(joined(p, "norm2"), *l.norm2, "_s + _a"));
      emit("_a = " + feed_forward(p, "_s", l.options.activation()));
      emit("_s = " + layer_norm(joined(p, "norm3"), *l.norm3, "_s + _a"));
    }
    if (!decoder.norm.is_empty()) fail("its decoder has a final norm, which Codefy's layers never add");
    call("_s.transpose(0, 1) if _s.dim() == 3 else _s");
  } else if (type == "MultiHeadAttention") {
    const auto& mha = *as<MultiHeadAttentionBlockImpl>(m).attn();
    emit("_s = " + in + ".transpose(0, 1) if " + in + ".dim() == 3 else " + in);
    emit("_a = " + attention({"attn"}, mha, "_s", "_s", true));
    call("_a.transpose(0, 1) if _a.dim() == 3 else _a");
  } else if (type == "ReLU") {
    call("torch.relu(" + in + ")");
  } else if (type == "GELU") {
    call("torch.gelu(" + in + ", approximate=" + string_literal(as<tnn::GELUImpl>(m).options.approximate()) + ")");
  } else if (type == "Sigmoid") {
    call("torch.sigmoid(" + in + ")");
  } else if (type == "Tanh") {
    call("torch.tanh(" + in + ")");
  } else if (type == "LeakyReLU") {
    call("torch.leaky_relu(" + in + ", " + float_literal(as<tnn::LeakyReLUImpl>(m).options.negative_slope()) + ")");
  } else if (type == "ELU") {
    call("torch.elu(" + in + ", " + float_literal(as<tnn::ELUImpl>(m).options.alpha()) + ")");
  } else if (type == "SiLU") {
    call("torch.silu(" + in + ")");
  } else if (type == "Mish") {
    call("torch.mish(" + in + ")");
  } else if (type == "SELU") {
    call("torch.selu(" + in + ")");
  } else if (type == "PReLU") {
    as<tnn::PReLUImpl>(m);
    call("torch.prelu(" + in + ", " + tensor({"weight"}) + ")");
  } else if (type == "Hardswish") {
    call("torch.hardswish(" + in + ")");
  } else if (type == "Softmax") {
    call("torch.softmax(" + in + ", " + std::to_string(as<tnn::SoftmaxImpl>(m).options.dim()) + ")");
  } else {
    fail("has no TorchScript code in Codefy yet");
  }
}

/// A TorchScript class name from a LibTorch module's ("torch::nn::LinearImpl" -> "Linear").
std::string class_name_of(const torch::nn::Module& m) {
  std::string name = m.name();
  if (const size_t colon = name.rfind("::"); colon != std::string::npos) name = name.substr(colon + 2);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, "Impl") == 0) name.resize(name.size() - 4);
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  if (name.empty() || !std::isalpha(static_cast<unsigned char>(name[0]))) name = "Module_" + name;
  return name;
}

bool holds_tensors(const torch::nn::Module& m) {
  for (const auto& p : m.named_parameters(/*recurse=*/true))
    if (p.value().defined()) return true;
  for (const auto& b : m.named_buffers(/*recurse=*/true))
    if (b.value().defined()) return true;
  return false;
}

torch::Tensor exported_copy(const torch::Tensor& t) {
  return t.detach().to(torch::kCPU).clone(at::MemoryFormat::Contiguous);
}

/// `from`'s parameters, buffers and (tensor-holding) children, recursively,
/// as a TorchScript module of class `qualified` in `cu`.
torch::jit::Module mirror_module(const torch::nn::Module& from, const c10::QualifiedName& qualified,
                                 const std::shared_ptr<torch::jit::CompilationUnit>& cu) {
  torch::jit::Module to(qualified, cu, /*shouldMangle=*/true);
  to.register_attribute("training", c10::BoolType::get(), false);
  for (const auto& p : from.named_parameters(/*recurse=*/false))
    if (p.value().defined())
      to.register_parameter(p.key(), exported_copy(p.value()).requires_grad_(p.value().requires_grad()),
                            /*is_buffer=*/false);
  for (const auto& b : from.named_buffers(/*recurse=*/false))
    if (b.value().defined()) to.register_buffer(b.key(), exported_copy(b.value()));
  for (const auto& child : from.named_children())
    if (holds_tensors(*child.value()))
      to.register_module(child.key(), mirror_module(*child.value(),
                                                    c10::QualifiedName(std::vector<std::string>{
                                                        "__torch__", "codefy_export", class_name_of(*child.value())}),
                                                    cu));
  return to;
}

}  // namespace

std::string torchscript_source(const nlohmann::json& spec, const torch::nn::Module& model) {
  const export_code::ExportGraph g = export_code::read_export_graph(spec);
  const LayerGraph& graph = g.graph;
  std::set<std::string> tensors;
  for (const auto& item : train::state_dict(model)) tensors.insert(item.first);
  const torch::nn::Module* layers = find_child(model, "layers");

  std::vector<std::string> lines;
  bool attention = false;
  for (size_t i : g.wiring.order) {
    const SpecNode& node = graph.nodes[i];
    std::vector<std::string> inputs;
    for (size_t s : g.wiring.inputs[i]) inputs.push_back(g.names[s]);
    if (find_merge_def(node.type) != nullptr) {
      lines.push_back(g.names[i] + " = " + export_code::merge_expression(node, inputs));
      continue;
    }
    const torch::nn::Module* module = layers == nullptr ? nullptr : find_child(*layers, node.id);
    if (module == nullptr)
      throw ExportError(
          node.id, node.type, "",
          "the model has no layer \"" + node.id + "\" (layers." + node.id + "); it was not built from this spec");
    try {
      if (auto e = export_code::shape_layer_expression(node.type, *module, inputs.at(0))) {
        lines.push_back(g.names[i] + " = " + *e);
        continue;
      }
    } catch (const std::bad_cast&) {
      throw ExportError(node.id, node.type, "",
                        "the model's module here is " + module->name() + "; it was not built from this spec");
    }
    TorchScriptWriter writer(node, tensors, lines);
    writer.layer(*module, inputs.at(0), g.names[i]);
    attention = attention || writer.uses_attention();
  }

  std::string out = "def forward(self, x: Tensor) -> Tensor:\n";
  for (const auto& line : lines) out += "    " + line + "\n";
  out += "    return " + g.names[g.wiring.output_source] + "\n";
  if (attention) out += kAttentionMethod;
  return out;
}

torch::jit::Module torchscript_module(const nlohmann::json& spec, const torch::nn::Module& model,
                                      const std::string& class_name) {
  if (!export_code::is_identifier(class_name))
    throw ExportError("", "", "", "the class name \"" + class_name + "\" is not an identifier");
  const std::string source = torchscript_source(spec, model);
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  torch::jit::Module module =
      mirror_module(model, c10::QualifiedName(std::vector<std::string>{"__torch__", "codefy_export", class_name}), cu);
  try {
    module.define(source);
  } catch (const std::exception& e) {
    // The source is ours: a failure here is Codefy's bug, reported with what TorchScript said.
    throw ExportError("", "", "", std::string("TorchScript did not compile the exported forward: ") + e.what());
  }
  module.eval();
  return module;
}

void save_torchscript(const nlohmann::json& spec, const torch::nn::Module& model, const std::filesystem::path& path) {
  const torch::jit::Module module = torchscript_module(spec, model);
  std::ostringstream bytes;
  const torch::jit::ExtraFilesMap extra{
      {"codefy_layer_spec.json", spec.is_string() ? spec.get<std::string>() : spec.dump()}};
  module.save(bytes, extra);
  util::write_file_atomic(path, bytes.str());
}

}  // namespace codefy::model
