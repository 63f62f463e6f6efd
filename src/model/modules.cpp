// The custom modules of model/modules.h.
#include "model/modules.h"

#include <torch/torch.h>

#include <utility>

namespace codefy::model {

using torch::Tensor;

ReshapeImpl::ReshapeImpl(std::vector<int64_t> shape) : Module("Reshape"), shape_(std::move(shape)) {}

Tensor ReshapeImpl::forward(const Tensor& x) {
  std::vector<int64_t> sizes{x.size(0)};
  sizes.insert(sizes.end(), shape_.begin(), shape_.end());
  return x.reshape(sizes);  // reshape, not view: also works on non-contiguous input.
}

void ReshapeImpl::pretty_print(std::ostream& os) const { os << "Reshape(shape=" << c10::IntArrayRef(shape_) << ")"; }

SelectIndexImpl::SelectIndexImpl(int64_t dim, int64_t index) : Module("SelectIndex"), dim_(dim), index_(index) {}

Tensor SelectIndexImpl::forward(const Tensor& x) { return x.select(dim_, index_); }

void SelectIndexImpl::pretty_print(std::ostream& os) const {
  os << "SelectIndex(dim=" << dim_ << ", index=" << index_ << ")";
}

HardswishImpl::HardswishImpl() : Module("Hardswish") {}

Tensor HardswishImpl::forward(const Tensor& x) { return torch::hardswish(x); }

void HardswishImpl::pretty_print(std::ostream& os) const { os << "Hardswish()"; }

LstmBlockImpl::LstmBlockImpl(const torch::nn::LSTMOptions& options) : Module("LSTM") {
  lstm_ = register_module("lstm", torch::nn::LSTM(options));
}

Tensor LstmBlockImpl::forward(const Tensor& x) { return std::get<0>(lstm_->forward(x)); }

void LstmBlockImpl::pretty_print(std::ostream& os) const { lstm_->pretty_print(os); }

GruBlockImpl::GruBlockImpl(const torch::nn::GRUOptions& options) : Module("GRU") {
  gru_ = register_module("gru", torch::nn::GRU(options));
}

Tensor GruBlockImpl::forward(const Tensor& x) { return std::get<0>(gru_->forward(x)); }

void GruBlockImpl::pretty_print(std::ostream& os) const { gru_->pretty_print(os); }

void TransformerConfig::print(std::ostream& os, const char* name) const {
  os << name << "(d_model=" << d_model << ", nhead=" << nhead << ", num_layers=" << num_layers
     << ", dim_feedforward=" << dim_feedforward << ", dropout=" << dropout << ", activation=" << activation
     << ", batch_first=true)";
}

namespace {

// LibTorch 1.13's transformer and attention modules are sequence-first while
// CodefyUI builds them with batch_first=True, so [batch, seq, feature] input
// is transposed around them.
Tensor to_sequence_first(const Tensor& x) { return x.dim() == 3 ? x.transpose(0, 1) : x; }

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

}  // namespace

TransformerEncoderBlockImpl::TransformerEncoderBlockImpl(TransformerConfig config)
    : Module("TransformerEncoder"), config_(std::move(config)) {
  encoder_ = register_module(
      "encoder",
      torch::nn::TransformerEncoder(torch::nn::TransformerEncoderOptions(
          transformer_layer_options<torch::nn::TransformerEncoderLayerOptions>(config_), config_.num_layers)));
}

Tensor TransformerEncoderBlockImpl::forward(const Tensor& x) {
  return to_sequence_first(encoder_->forward(to_sequence_first(x)));
}

void TransformerEncoderBlockImpl::pretty_print(std::ostream& os) const { config_.print(os, "TransformerEncoder"); }

TransformerDecoderBlockImpl::TransformerDecoderBlockImpl(TransformerConfig config)
    : Module("TransformerDecoder"), config_(std::move(config)) {
  decoder_ = register_module(
      "decoder",
      torch::nn::TransformerDecoder(torch::nn::TransformerDecoderOptions(
          transformer_layer_options<torch::nn::TransformerDecoderLayerOptions>(config_), config_.num_layers)));
}

Tensor TransformerDecoderBlockImpl::forward(const Tensor& x) {
  const Tensor s = to_sequence_first(x);
  return to_sequence_first(decoder_->forward(s, s));
}

void TransformerDecoderBlockImpl::pretty_print(std::ostream& os) const { config_.print(os, "TransformerDecoder"); }

MultiHeadAttentionBlockImpl::MultiHeadAttentionBlockImpl(const torch::nn::MultiheadAttentionOptions& options)
    : Module("MultiHeadAttention"), options_(options) {
  attn_ = register_module("attn", torch::nn::MultiheadAttention(options));
}

Tensor MultiHeadAttentionBlockImpl::forward(const Tensor& x) {
  const Tensor s = to_sequence_first(x);
  return to_sequence_first(std::get<0>(attn_->forward(s, s, s, /*key_padding_mask=*/{}, /*need_weights=*/false)));
}

void MultiHeadAttentionBlockImpl::pretty_print(std::ostream& os) const {
  os << "MultiHeadAttention(embed_dim=" << options_.embed_dim() << ", num_heads=" << options_.num_heads()
     << ", dropout=" << options_.dropout() << ", batch_first=true)";
}

}  // namespace codefy::model
