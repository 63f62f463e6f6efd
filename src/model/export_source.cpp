// pytorch_source: a layer spec as a standalone PyTorch model.py.
#include "model/export_source.h"

#include "model/export_code.h"
#include "model/modules.h"
#include "util/text.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cctype>
#include <mutex>
#include <set>

namespace codefy::model {

using export_code::bool_literal;
using export_code::float_literal;
using export_code::int_list;
using export_code::string_literal;

namespace {

/// Saves LibTorch's global CPU generator and puts it back: reading a layer's
/// options means building it, and building draws its initial weights.
class GlobalRngKept {
 public:
  GlobalRngKept() : generator_(at::detail::getDefaultCPUGenerator()) {
    std::lock_guard<std::mutex> lock(generator_.mutex());
    state_ = generator_.get_state();
  }
  ~GlobalRngKept() {
    std::lock_guard<std::mutex> lock(generator_.mutex());
    generator_.set_state(state_);
  }
  GlobalRngKept(const GlobalRngKept&) = delete;
  GlobalRngKept& operator=(const GlobalRngKept&) = delete;

 private:
  at::Generator generator_;
  torch::Tensor state_;
};

template <size_t D>
std::string py_tuple(const torch::ExpandingArray<D>& values) {
  std::vector<std::string> items;
  for (int64_t v : *values) items.push_back(std::to_string(v));
  return "(" + util::join(items, ", ") + (D == 1 ? ",)" : ")");
}

std::string py_optional_int(const c10::optional<int64_t>& v) { return v ? std::to_string(*v) : "None"; }
std::string py_optional_float(const c10::optional<double>& v) { return v ? float_literal(*v) : "None"; }

template <size_t D>
std::string py_conv_padding(const typename torch::nn::detail::ConvNdOptions<D>::padding_t& padding) {
  if (export_code::variant_if<torch::enumtype::kSame>(padding)) return "\"same\"";
  if (export_code::variant_if<torch::enumtype::kValid>(padding)) return "\"valid\"";
  return py_tuple<D>(*export_code::variant_if<torch::ExpandingArray<D>>(padding));
}

/// "zeros", "reflect", "replicate" or "circular", from LibTorch's enum.
std::string py_padding_mode(const torch::nn::detail::conv_padding_mode_t& mode) {
  std::string name = torch::enumtype::get_enum_name(mode);  // "kZeros"
  name = name.substr(1);
  name[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(name[0])));
  return "\"" + name + "\"";
}

/// Whether LibTorch 1.13 pads this "same" convolution differently from
/// PyTorch: with a padding mode other than zeros it pads first, and lists
/// the amounts in dimension order where F.pad reads the last dimension first.
bool same_padding_swapped(const torch::nn::detail::ConvNdOptions<2>& o) {
  if (torch::enumtype::get_enum_name(o.padding_mode()) == "kZeros" ||
      !export_code::variant_if<torch::enumtype::kSame>(o.padding()))
    return false;
  return (*o.dilation())[0] * ((*o.kernel_size())[0] - 1) != (*o.dilation())[1] * ((*o.kernel_size())[1] - 1);
}

template <size_t D, class Impl>
std::string py_conv(const char* cls, const torch::nn::Module& module) {
  const auto& o = dynamic_cast<const Impl&>(module).options;
  std::string out = std::string("nn.") + cls + "(" + std::to_string(o.in_channels()) + ", " +
                    std::to_string(o.out_channels()) + ", kernel_size=" + py_tuple<D>(o.kernel_size()) +
                    ", stride=" + py_tuple<D>(o.stride()) + ", padding=" + py_conv_padding<D>(o.padding());
  if (o.transposed()) out += ", output_padding=" + py_tuple<D>(o.output_padding());
  out += ", dilation=" + py_tuple<D>(o.dilation()) + ", groups=" + std::to_string(o.groups()) +
         ", bias=" + bool_literal(o.bias());
  if (!o.transposed()) out += ", padding_mode=" + py_padding_mode(o.padding_mode());
  return out + ")";
}

template <class Impl>
std::string py_batch_norm(const char* cls, const torch::nn::Module& module) {
  const auto& o = dynamic_cast<const Impl&>(module).options;
  return std::string("nn.") + cls + "(" + std::to_string(o.num_features()) + ", eps=" + float_literal(o.eps()) +
         ", momentum=" + py_optional_float(o.momentum()) + ", affine=" + bool_literal(o.affine()) +
         ", track_running_stats=" + bool_literal(o.track_running_stats()) + ")";
}

template <class Options>
std::string py_rnn_options(const Options& o) {
  return std::to_string(o.input_size()) + ", " + std::to_string(o.hidden_size()) +
         ", num_layers=" + std::to_string(o.num_layers()) + ", bias=" + bool_literal(o.bias()) +
         ", batch_first=" + bool_literal(o.batch_first()) + ", dropout=" + float_literal(o.dropout()) +
         ", bidirectional=" + bool_literal(o.bidirectional());
}

std::string py_transformer(const char* cls, const TransformerConfig& c) {
  return std::string(cls) + "(d_model=" + std::to_string(c.d_model) + ", nhead=" + std::to_string(c.nhead) +
         ", num_layers=" + std::to_string(c.num_layers) + ", dim_feedforward=" + std::to_string(c.dim_feedforward) +
         ", dropout=" + float_literal(c.dropout) + ", activation=" + string_literal(c.activation) + ")";
}

/// The constructor of a layer's module in model.py. `blocks` collects the
/// wrapper classes it needs.
std::string py_module(const std::string& type, const torch::nn::Module& m, std::set<std::string>& blocks) {
  namespace tnn = torch::nn;
  if (type == "Linear") {
    const auto& o = dynamic_cast<const tnn::LinearImpl&>(m).options;
    return "nn.Linear(" + std::to_string(o.in_features()) + ", " + std::to_string(o.out_features()) +
           ", bias=" + bool_literal(o.bias()) + ")";
  }
  if (type == "Conv1d") return py_conv<1, tnn::Conv1dImpl>("Conv1d", m);
  if (type == "Conv2d") return py_conv<2, tnn::Conv2dImpl>("Conv2d", m);
  if (type == "ConvTranspose2d") return py_conv<2, tnn::ConvTranspose2dImpl>("ConvTranspose2d", m);
  if (type == "MaxPool2d") {
    const auto& o = dynamic_cast<const tnn::MaxPool2dImpl&>(m).options;
    return "nn.MaxPool2d(kernel_size=" + py_tuple<2>(o.kernel_size()) + ", stride=" + py_tuple<2>(o.stride()) +
           ", padding=" + py_tuple<2>(o.padding()) + ", dilation=" + py_tuple<2>(o.dilation()) +
           ", ceil_mode=" + bool_literal(o.ceil_mode()) + ")";
  }
  if (type == "AvgPool2d") {
    const auto& o = dynamic_cast<const tnn::AvgPool2dImpl&>(m).options;
    return "nn.AvgPool2d(kernel_size=" + py_tuple<2>(o.kernel_size()) + ", stride=" + py_tuple<2>(o.stride()) +
           ", padding=" + py_tuple<2>(o.padding()) + ", ceil_mode=" + bool_literal(o.ceil_mode()) +
           ", count_include_pad=" + bool_literal(o.count_include_pad()) +
           ", divisor_override=" + py_optional_int(o.divisor_override()) + ")";
  }
  if (type == "AdaptiveAvgPool2d") {
    const auto& size = *dynamic_cast<const tnn::AdaptiveAvgPool2dImpl&>(m).options.output_size();
    return "nn.AdaptiveAvgPool2d((" + py_optional_int(size[0]) + ", " + py_optional_int(size[1]) + "))";
  }
  if (type == "BatchNorm1d") return py_batch_norm<tnn::BatchNorm1dImpl>("BatchNorm1d", m);
  if (type == "BatchNorm2d") return py_batch_norm<tnn::BatchNorm2dImpl>("BatchNorm2d", m);
  if (type == "LayerNorm") {
    const auto& o = dynamic_cast<const tnn::LayerNormImpl&>(m).options;
    return "nn.LayerNorm(" + int_list(o.normalized_shape()) + ", eps=" + float_literal(o.eps()) +
           ", elementwise_affine=" + bool_literal(o.elementwise_affine()) + ")";
  }
  if (type == "GroupNorm") {
    const auto& o = dynamic_cast<const tnn::GroupNormImpl&>(m).options;
    return "nn.GroupNorm(" + std::to_string(o.num_groups()) + ", " + std::to_string(o.num_channels()) +
           ", eps=" + float_literal(o.eps()) + ", affine=" + bool_literal(o.affine()) + ")";
  }
  if (type == "InstanceNorm2d") {
    const auto& o = dynamic_cast<const tnn::InstanceNorm2dImpl&>(m).options;
    return "nn.InstanceNorm2d(" + std::to_string(o.num_features()) + ", eps=" + float_literal(o.eps()) +
           ", momentum=" + float_literal(o.momentum()) + ", affine=" + bool_literal(o.affine()) +
           ", track_running_stats=" + bool_literal(o.track_running_stats()) + ")";
  }
  if (type == "Dropout")
    return "nn.Dropout(p=" + float_literal(dynamic_cast<const tnn::DropoutImpl&>(m).options.p()) + ")";
  if (type == "Flatten") {
    const auto& o = dynamic_cast<const tnn::FlattenImpl&>(m).options;
    return "nn.Flatten(" + std::to_string(o.start_dim()) + ", " + std::to_string(o.end_dim()) + ")";
  }
  if (type == "Embedding") {
    const auto& o = dynamic_cast<const tnn::EmbeddingImpl&>(m).options;
    return "nn.Embedding(" + std::to_string(o.num_embeddings()) + ", " + std::to_string(o.embedding_dim()) +
           ", padding_idx=" + py_optional_int(o.padding_idx()) + ", max_norm=" + py_optional_float(o.max_norm()) +
           ", norm_type=" + float_literal(o.norm_type()) +
           ", scale_grad_by_freq=" + bool_literal(o.scale_grad_by_freq()) + ", sparse=" + bool_literal(o.sparse()) +
           ")";
  }
  if (type == "LSTM") {
    blocks.insert("LSTMBlock");
    const auto& o = dynamic_cast<const LstmBlockImpl&>(m).lstm()->options;
    return "LSTMBlock(" + py_rnn_options(o) + ", proj_size=" + std::to_string(o.proj_size()) + ")";
  }
  if (type == "GRU") {
    blocks.insert("GRUBlock");
    return "GRUBlock(" + py_rnn_options(dynamic_cast<const GruBlockImpl&>(m).gru()->options) + ")";
  }
  if (type == "TransformerEncoder") {
    blocks.insert("TransformerEncoderBlock");
    return py_transformer("TransformerEncoderBlock", dynamic_cast<const TransformerEncoderBlockImpl&>(m).config());
  }
  if (type == "TransformerDecoder") {
    blocks.insert("TransformerDecoderBlock");
    return py_transformer("TransformerDecoderBlock", dynamic_cast<const TransformerDecoderBlockImpl&>(m).config());
  }
  if (type == "MultiHeadAttention") {
    blocks.insert("MultiHeadAttentionBlock");
    const auto& o = dynamic_cast<const MultiHeadAttentionBlockImpl&>(m).attn()->options;
    return "MultiHeadAttentionBlock(" + std::to_string(o.embed_dim()) + ", " + std::to_string(o.num_heads()) +
           ", dropout=" + float_literal(o.dropout()) + ")";
  }
  if (type == "ReLU") return "nn.ReLU()";
  if (type == "GELU")
    return "nn.GELU(approximate=" + string_literal(dynamic_cast<const tnn::GELUImpl&>(m).options.approximate()) + ")";
  if (type == "Sigmoid") return "nn.Sigmoid()";
  if (type == "Tanh") return "nn.Tanh()";
  if (type == "LeakyReLU")
    return "nn.LeakyReLU(negative_slope=" +
           float_literal(dynamic_cast<const tnn::LeakyReLUImpl&>(m).options.negative_slope()) + ")";
  if (type == "ELU") return "nn.ELU(alpha=" + float_literal(dynamic_cast<const tnn::ELUImpl&>(m).options.alpha()) + ")";
  if (type == "SiLU") return "nn.SiLU()";
  if (type == "Mish") return "nn.Mish()";
  if (type == "SELU") return "nn.SELU()";
  if (type == "PReLU") {
    const auto& o = dynamic_cast<const tnn::PReLUImpl&>(m).options;
    return "nn.PReLU(num_parameters=" + std::to_string(o.num_parameters()) + ", init=" + float_literal(o.init()) + ")";
  }
  if (type == "Hardswish") return "nn.Hardswish()";
  if (type == "Softmax")
    return "nn.Softmax(dim=" + std::to_string(dynamic_cast<const tnn::SoftmaxImpl&>(m).options.dim()) + ")";
  return "";
}

// The wrapper classes, in the order they are written. Each keeps Codefy's
// attribute name (lstm, gru, encoder, decoder, attn): it is part of the
// parameter names. The attention layers hold PyTorch's own modules
// (sequence-first, as Codefy's LibTorch builds them) for their parameters,
// and run their layers through _attention, which rounds as LibTorch does:
// PyTorch's Python forward scales q after the product (and with
// batch_first=True takes a fused path), a few ulps away from Codefy.
const std::vector<std::pair<std::string, std::string>>& block_sources() {
  static const std::vector<std::pair<std::string, std::string>> sources = {
      {"LSTMBlock", R"(class LSTMBlock(nn.Module):
    """Codefy's LSTM layer: the output sequence; the final hidden and cell states are dropped."""

    def __init__(self, *args, **kwargs):
        super().__init__()
        self.lstm = nn.LSTM(*args, **kwargs)

    def forward(self, x):
        return self.lstm(x)[0]
)"},
      {"GRUBlock", R"(class GRUBlock(nn.Module):
    """Codefy's GRU layer: the output sequence; the final hidden state is dropped."""

    def __init__(self, *args, **kwargs):
        super().__init__()
        self.gru = nn.GRU(*args, **kwargs)

    def forward(self, x):
        return self.gru(x)[0]
)"},
      {"TransformerEncoderBlock", R"(class TransformerEncoderBlock(nn.Module):
    """Codefy's TransformerEncoder layer: [batch, sequence, d_model] in and out; post-norm layers, no final norm."""

    def __init__(self, d_model, nhead, num_layers, dim_feedforward, dropout, activation):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation)
        self.encoder = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)

    def forward(self, x):
        s = _sequence_first(x)
        for layer in self.encoder.layers:
            s = layer.norm1(s + layer.dropout1(_attention(layer.self_attn, s, s)))
            s = layer.norm2(s + layer.dropout2(layer.linear2(layer.dropout(layer.activation(layer.linear1(s))))))
        return _sequence_first(s)
)"},
      {"TransformerDecoderBlock", R"(class TransformerDecoderBlock(nn.Module):
    """Codefy's TransformerDecoder layer: [batch, sequence, d_model] in and out; the memory is the input itself."""

    def __init__(self, d_model, nhead, num_layers, dim_feedforward, dropout, activation):
        super().__init__()
        layer = nn.TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation)
        self.decoder = nn.TransformerDecoder(layer, num_layers)

    def forward(self, x):
        memory = _sequence_first(x)
        s = memory
        for layer in self.decoder.layers:
            s = layer.norm1(s + layer.dropout1(_attention(layer.self_attn, s, s)))
            s = layer.norm2(s + layer.dropout2(_attention(layer.multihead_attn, s, memory)))
            s = layer.norm3(s + layer.dropout3(layer.linear2(layer.dropout(layer.activation(layer.linear1(s))))))
        return _sequence_first(s)
)"},
      {"MultiHeadAttentionBlock", R"(class MultiHeadAttentionBlock(nn.Module):
    """Codefy's MultiHeadAttention layer: self-attention over [batch, sequence, embed_dim]; the weights are dropped."""

    def __init__(self, embed_dim, num_heads, dropout):
        super().__init__()
        self.attn = nn.MultiheadAttention(embed_dim, num_heads, dropout=dropout)

    def forward(self, x):
        s = _sequence_first(x)
        return _sequence_first(_attention(self.attn, s, s))
)"},
  };
  return sources;
}

constexpr const char* kAttentionHelpers = R"(def _sequence_first(x):
    """[batch, sequence, features] <-> [sequence, batch, features], as Codefy's attention layers turn them."""
    return x.transpose(0, 1) if x.dim() == 3 else x


def _attention(attn, query, memory):
    """attn (an nn.MultiheadAttention) over sequence-first tensors, computed as Codefy's LibTorch does:
    q scaled by 1 / sqrt(head_dim) before q k^T (PyTorch's own forward divides after), no masks."""
    tgt_len, bsz, embed_dim = query.shape
    head_dim = embed_dim // attn.num_heads
    w, b = attn.in_proj_weight, attn.in_proj_bias
    if query is memory:
        q, k, v = nn.functional.linear(query, w, b).chunk(3, -1)
    else:
        q = nn.functional.linear(query, w[:embed_dim], b[:embed_dim])
        k, v = nn.functional.linear(memory, w[embed_dim:], b[embed_dim:]).chunk(2, -1)
    q = q * (1 / math.sqrt(head_dim))
    q = q.contiguous().view(tgt_len, bsz * attn.num_heads, head_dim).transpose(0, 1)
    k = k.contiguous().view(-1, bsz * attn.num_heads, head_dim).transpose(0, 1)
    v = v.contiguous().view(-1, bsz * attn.num_heads, head_dim).transpose(0, 1)
    weights = torch.softmax(torch.bmm(q, k.transpose(1, 2)), -1)
    weights = nn.functional.dropout(weights, attn.dropout, attn.training)
    out = torch.bmm(weights, v).transpose(0, 1).contiguous().view(tgt_len, bsz, embed_dim)
    return nn.functional.linear(out, attn.out_proj.weight, attn.out_proj.bias)
)";

}  // namespace

std::string pytorch_source(const nlohmann::json& spec, const std::string& class_name) {
  std::set<std::string> taken_names{
      "LSTMBlock", "GRUBlock", "TransformerEncoderBlock", "TransformerDecoderBlock", "MultiHeadAttentionBlock",
      "torch",     "nn"};
  if (!export_code::is_identifier(class_name) || taken_names.count(class_name) || class_name[0] == '_')
    throw ExportError("", "", "",
                      "the class name \"" + class_name +
                          "\" is not a Python identifier of its own (letters, digits and '_', not "
                          "starting with a digit or '_', no keyword, not a name model.py uses)");
  const export_code::ExportGraph g = export_code::read_export_graph(spec);
  const LayerGraph& graph = g.graph;

  std::vector<std::string> expressions(graph.nodes.size());
  std::vector<std::string> dict_entries;
  std::set<std::string> blocks;
  {
    GlobalRngKept rng;
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      if (i == graph.input || i == graph.output) continue;
      const SpecNode& node = graph.nodes[i];
      std::vector<std::string> inputs;
      for (size_t s : g.wiring.inputs[i]) inputs.push_back(g.names[s]);
      if (find_merge_def(node.type) != nullptr) {
        expressions[i] = export_code::merge_expression(node, inputs);
        continue;
      }
      const BuiltNode built = build_node(graph, i);
      if (auto e = export_code::shape_layer_expression(node.type, *built.module, inputs.at(0))) {
        expressions[i] = *e;
        continue;
      }
      if (const auto* conv = dynamic_cast<const torch::nn::Conv2dImpl*>(built.module.get());
          conv != nullptr && same_padding_swapped(conv->options))
        throw ExportError(node.id, node.type, "padding",
                          "LibTorch 1.13, which Codefy trains with, pads a \"same\" convolution with padding_mode " +
                              py_padding_mode(conv->options.padding_mode()) +
                              " height-amounts-first where PyTorch pads width first, so with a kernel (or "
                              "dilation) that differs between height and width PyTorch's nn.Conv2d would compute "
                              "another result; the TorchScript export keeps Codefy's");
      const std::string module = py_module(node.type, *built.module, blocks);
      if (module.empty()) throw ExportError(node.id, node.type, "", "has no PyTorch source code in Codefy yet");
      dict_entries.push_back("                " + string_literal(node.id) + ": " + module + ",");
      expressions[i] = "self.layers[" + string_literal(node.id) + "](" + inputs.at(0) + ")";
    }
  }

  std::string out =
      "\"\"\"A model exported by Codefy from a SequentialModel layer spec: plain PyTorch.\n"
      "\n"
      "The parameter names are those of Codefy's state dict, so the weights Codefy saved load as they are:\n"
      "\n"
      "    model = " +
      class_name +
      "()\n"
      "    model.load_state_dict(torch.load(\"weights.pt\"))\n"
      "    model.eval()\n"
      "\"\"\"\n";
  const bool attention = blocks.count("TransformerEncoderBlock") || blocks.count("TransformerDecoderBlock") ||
                         blocks.count("MultiHeadAttentionBlock");
  if (attention) out += "import math\n\n";
  out += "import torch\nfrom torch import nn\n";
  if (attention) out += std::string("\n\n") + kAttentionHelpers;
  for (const auto& [name, source] : block_sources())
    if (blocks.count(name)) out += "\n\n" + source;

  out += "\n\nclass " + class_name + "(nn.Module):\n";
  out +=
      "    \"\"\"The spec's layer graph: its layers are layers[<node id>], the merges and reshapes are in "
      "forward.\"\"\"\n\n";
  out += "    def __init__(self):\n        super().__init__()\n";
  if (dict_entries.empty()) {
    out += "        self.layers = nn.ModuleDict()\n";
  } else {
    out += "        self.layers = nn.ModuleDict(\n            {\n";
    for (const auto& e : dict_entries) out += e + "\n";
    out += "            }\n        )\n";
  }
  out += "\n    def forward(self, x):\n";
  for (size_t i : g.wiring.order) out += "        " + g.names[i] + " = " + expressions[i] + "\n";
  out += "        return " + g.names[g.wiring.output_source] + "\n";
  return out;
}

}  // namespace codefy::model
