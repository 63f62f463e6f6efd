// The custom modules of model/modules.h.
#include "model/modules.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
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

PermuteImpl::PermuteImpl(std::vector<int64_t> dims) : Module("Permute"), dims_(std::move(dims)) {}

Tensor PermuteImpl::forward(const Tensor& x) {
  TORCH_CHECK(x.dim() == static_cast<int64_t>(dims_.size()), "Permute: dims ", c10::IntArrayRef(dims_), " name ",
              dims_.size(), " dimensions, but the input has ", x.dim(), " (shape ", x.sizes(), ")");
  return x.permute(dims_);
}

void PermuteImpl::pretty_print(std::ostream& os) const { os << "Permute(dims=" << c10::IntArrayRef(dims_) << ")"; }

Chomp1dImpl::Chomp1dImpl(int64_t chomp_size) : Module("Chomp1d"), chomp_size_(chomp_size) {}

Tensor Chomp1dImpl::forward(const Tensor& x) {
  TORCH_CHECK(x.dim() == 3, "Chomp1d expects [batch, channels, time], got shape ", x.sizes());
  TORCH_CHECK(x.size(2) > chomp_size_, "Chomp1d: chomp_size ", chomp_size_, " leaves nothing of ", x.size(2),
              " time steps (shape ", x.sizes(), ")");
  return x.slice(2, 0, x.size(2) - chomp_size_).contiguous();
}

void Chomp1dImpl::pretty_print(std::ostream& os) const { os << "Chomp1d(chomp_size=" << chomp_size_ << ")"; }

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

namespace {

/// One expert of MixtureOfExperts: fc1 -> SiLU -> fc2.
class ExpertFfnImpl : public torch::nn::Module {
 public:
  ExpertFfnImpl(int64_t hidden_dim, int64_t expert_hidden_dim) : Module("ExpertFFN") {
    fc1_ = register_module("fc1", torch::nn::Linear(hidden_dim, expert_hidden_dim));
    fc2_ = register_module("fc2", torch::nn::Linear(expert_hidden_dim, hidden_dim));
  }
  Tensor forward(const Tensor& x) { return fc2_->forward(torch::silu(fc1_->forward(x))); }

 private:
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr};
};
TORCH_MODULE(ExpertFfn);

}  // namespace

MixtureOfExpertsImpl::MixtureOfExpertsImpl(int64_t num_experts, int64_t top_k, int64_t hidden_dim,
                                           int64_t expert_hidden_dim)
    : Module("MoELayer"), num_experts_(num_experts), top_k_(std::max<int64_t>(1, std::min(top_k, num_experts))) {
  // Registration order is CodefyUI's construction order, so the same global
  // seed draws the same initial weights.
  gate_ = register_module("gate", torch::nn::Linear(torch::nn::LinearOptions(hidden_dim, num_experts).bias(false)));
  experts_ = register_module("experts", torch::nn::ModuleList());
  for (int64_t e = 0; e < num_experts; ++e) experts_->push_back(ExpertFfn(hidden_dim, expert_hidden_dim));
}

std::tuple<Tensor, Tensor, Tensor> MixtureOfExpertsImpl::forward(const Tensor& x) {
  const int64_t b = x.size(0), t = x.size(1), h = x.size(2);
  const auto [top_values, top_index] = torch::topk(gate_->forward(x), top_k_, -1);
  const Tensor weights = torch::softmax(top_values, -1);
  const Tensor flat_x = x.reshape({b * t, h});
  const Tensor flat_index = top_index.reshape({b * t, top_k_});
  const Tensor flat_weights = weights.reshape({b * t, top_k_});
  Tensor out = torch::zeros_like(flat_x);
  // Slot by slot, expert by expert, as CodefyUI: each token is added to once
  // per slot, so the sums are the same as its masked updates.
  for (int64_t k = 0; k < top_k_; ++k) {
    for (int64_t e = 0; e < num_experts_; ++e) {
      const Tensor rows = (flat_index.select(1, k) == e).nonzero().squeeze(1);
      if (rows.numel() == 0) continue;
      const Tensor y = experts_->ptr<ExpertFfnImpl>(static_cast<size_t>(e))->forward(flat_x.index_select(0, rows));
      const Tensor w = flat_weights.select(1, k).index_select(0, rows).unsqueeze(-1);
      out.index_put_({rows}, out.index_select(0, rows) + w * y);
    }
  }
  return {out.reshape({b, t, h}), weights, top_index};
}

void MixtureOfExpertsImpl::pretty_print(std::ostream& os) const {
  os << "MoELayer(num_experts=" << num_experts_ << ", top_k=" << top_k_ << ")";
}

TimestepEmbeddingImpl::TimestepEmbeddingImpl(int64_t embed_dim, int64_t max_period, uint64_t seed)
    : Module("TimestepEmbedding"), embed_dim_(embed_dim), max_period_(max_period) {
  fc1_ = register_module("fc1", torch::nn::Linear(embed_dim, 4 * embed_dim));
  fc2_ = register_module("fc2", torch::nn::Linear(4 * embed_dim, embed_dim));
  at::Generator gen = at::detail::createCPUGenerator(seed);
  const double scale = 1.0 / std::sqrt(static_cast<double>(embed_dim));
  torch::NoGradGuard no_grad;
  for (auto* layer : {fc1_.get(), fc2_.get()}) {
    layer->weight.copy_(torch::randn(layer->weight.sizes(), gen) * scale);
    layer->bias.zero_();
  }
}

Tensor TimestepEmbeddingImpl::forward(const Tensor& timesteps) {
  const Tensor t = timesteps.dim() == 0 ? timesteps.unsqueeze(0) : timesteps;
  const int64_t half = embed_dim_ / 2;
  const Tensor freqs =
      torch::exp(-std::log(static_cast<double>(max_period_)) * torch::arange(half, torch::kFloat32) / half)
          .to(t.device());
  const Tensor args = t.to(torch::kFloat32).unsqueeze(-1) * freqs.unsqueeze(0);
  const Tensor embedding = torch::cat({torch::sin(args), torch::cos(args)}, -1);
  return fc2_->forward(torch::silu(fc1_->forward(embedding)));
}

void TimestepEmbeddingImpl::pretty_print(std::ostream& os) const {
  os << "TimestepEmbedding(embed_dim=" << embed_dim_ << ", max_period=" << max_period_ << ")";
}

}  // namespace codefy::model
