// Modules LibTorch lacks, and CodefyUI's one-tensor-in/one-tensor-out wrappers
// around LibTorch's multi-output ones. The wrappers keep CodefyUI's attribute
// names (lstm, gru, encoder, decoder, attn) because they are state_dict key prefixes.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/rnn.h>
#include <torch/nn/modules/transformer.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

namespace codefy::model {

/// x.view(x.size(0), *shape) in CodefyUI: reshapes everything after the batch dimension.
class ReshapeImpl : public torch::nn::Module {
 public:
  explicit ReshapeImpl(std::vector<int64_t> shape);
  torch::Tensor forward(const torch::Tensor& x);
  void pretty_print(std::ostream& os) const override;
  /// The sizes after the batch dimension.
  const std::vector<int64_t>& shape() const { return shape_; }

 private:
  std::vector<int64_t> shape_;
};
TORCH_MODULE(Reshape);

/// x.select(dim, index): one slice, the dimension dropped.
class SelectIndexImpl : public torch::nn::Module {
 public:
  SelectIndexImpl(int64_t dim, int64_t index);
  torch::Tensor forward(const torch::Tensor& x);
  void pretty_print(std::ostream& os) const override;
  /// The dimension it selects in and the index it takes there.
  int64_t dim() const { return dim_; }
  int64_t index() const { return index_; }

 private:
  int64_t dim_, index_;
};
TORCH_MODULE(SelectIndex);

/// x.permute(dims): reorders every dimension, the batch's included ("0,2,1"
/// turns [batch, time, features] into the [batch, channels, time] Conv1d takes).
class PermuteImpl : public torch::nn::Module {
 public:
  explicit PermuteImpl(std::vector<int64_t> dims);
  torch::Tensor forward(const torch::Tensor& x);
  void pretty_print(std::ostream& os) const override;
  /// The new order of the dimensions, the batch's first.
  const std::vector<int64_t>& dims() const { return dims_; }

 private:
  std::vector<int64_t> dims_;
};
TORCH_MODULE(Permute);

/// Drops the last `chomp_size` steps of [batch, channels, time]: after a
/// Conv1d padded by (kernel_size - 1) * dilation it leaves a causal
/// convolution, each output seeing only its own step and earlier ones (the
/// temporal convolutional network's Chomp1d).
class Chomp1dImpl : public torch::nn::Module {
 public:
  explicit Chomp1dImpl(int64_t chomp_size);
  torch::Tensor forward(const torch::Tensor& x);
  void pretty_print(std::ostream& os) const override;
  /// How many time steps it drops at the end.
  int64_t chomp_size() const { return chomp_size_; }

 private:
  int64_t chomp_size_;
};
TORCH_MODULE(Chomp1d);

/// torch.nn.Hardswish: LibTorch 1.13 has SiLU and Mish modules but not this one.
class HardswishImpl : public torch::nn::Module {
 public:
  HardswishImpl();
  torch::Tensor forward(const torch::Tensor& x);
  void pretty_print(std::ostream& os) const override;
};
TORCH_MODULE(Hardswish);

/// An LSTM giving its full output sequence; the hidden state is dropped, as in CodefyUI.
class LstmBlockImpl : public torch::nn::Module {
 public:
  explicit LstmBlockImpl(const torch::nn::LSTMOptions& options);
  torch::Tensor forward(const torch::Tensor& x);
  void pretty_print(std::ostream& os) const override;
  /// The wrapped LSTM (its options and weights, for the exporters).
  const torch::nn::LSTM& lstm() const { return lstm_; }

 private:
  torch::nn::LSTM lstm_{nullptr};
};
TORCH_MODULE(LstmBlock);

/// A GRU giving its full output sequence; the hidden state is dropped, as in CodefyUI.
class GruBlockImpl : public torch::nn::Module {
 public:
  explicit GruBlockImpl(const torch::nn::GRUOptions& options);
  torch::Tensor forward(const torch::Tensor& x);
  void pretty_print(std::ostream& os) const override;
  /// The wrapped GRU (its options and weights, for the exporters).
  const torch::nn::GRU& gru() const { return gru_; }

 private:
  torch::nn::GRU gru_{nullptr};
};
TORCH_MODULE(GruBlock);

/// The options CodefyUI's TransformerEncoder/Decoder nodes take.
struct TransformerConfig {
  int64_t d_model, nhead, num_layers, dim_feedforward;
  double dropout;
  std::string activation;  ///< "relu" or "gelu"

  /// `name(d_model=..., ..., batch_first=true)`, for describe().
  void print(std::ostream& os, const char* name) const;
};

/// A batch-first transformer encoder stack, as CodefyUI builds it.
class TransformerEncoderBlockImpl : public torch::nn::Module {
 public:
  explicit TransformerEncoderBlockImpl(TransformerConfig config);
  torch::Tensor forward(const torch::Tensor& x);
  void pretty_print(std::ostream& os) const override;
  /// The options it was built with, and the sequence-first stack it wraps.
  const TransformerConfig& config() const { return config_; }
  const torch::nn::TransformerEncoder& encoder() const { return encoder_; }

 private:
  TransformerConfig config_;
  torch::nn::TransformerEncoder encoder_{nullptr};
};
TORCH_MODULE(TransformerEncoderBlock);

/// A batch-first transformer decoder stack in self-attention mode: the memory
/// is the input itself, as in CodefyUI.
class TransformerDecoderBlockImpl : public torch::nn::Module {
 public:
  explicit TransformerDecoderBlockImpl(TransformerConfig config);
  torch::Tensor forward(const torch::Tensor& x);
  void pretty_print(std::ostream& os) const override;
  /// The options it was built with, and the sequence-first stack it wraps.
  const TransformerConfig& config() const { return config_; }
  const torch::nn::TransformerDecoder& decoder() const { return decoder_; }

 private:
  TransformerConfig config_;
  torch::nn::TransformerDecoder decoder_{nullptr};
};
TORCH_MODULE(TransformerDecoderBlock);

/// Batch-first multi-head self-attention; the attention weights are discarded.
class MultiHeadAttentionBlockImpl : public torch::nn::Module {
 public:
  explicit MultiHeadAttentionBlockImpl(const torch::nn::MultiheadAttentionOptions& options);
  torch::Tensor forward(const torch::Tensor& x);
  void pretty_print(std::ostream& os) const override;
  /// The wrapped sequence-first attention (its options and weights, for the exporters).
  const torch::nn::MultiheadAttention& attn() const { return attn_; }

 private:
  torch::nn::MultiheadAttentionOptions options_;
  torch::nn::MultiheadAttention attn_{nullptr};
};
TORCH_MODULE(MultiHeadAttentionBlock);

/// CodefyUI's MoELayer: a bias-free gate scores the experts for each token,
/// the top_k of them (softmax over just those) each run a SiLU FFN
/// (fc1 -> SiLU -> fc2) on the token, and the output is their weighted sum.
/// Parameters are named as in CodefyUI (gate, experts.<i>.fc1, experts.<i>.fc2).
class MixtureOfExpertsImpl : public torch::nn::Module {
 public:
  /// `top_k` is clamped to [1, num_experts], as CodefyUI does.
  MixtureOfExpertsImpl(int64_t num_experts, int64_t top_k, int64_t hidden_dim, int64_t expert_hidden_dim);
  /// x: [B, T, hidden_dim]. Returns the output [B, T, hidden_dim], the routing
  /// weights [B, T, k] and the chosen experts' indices [B, T, k].
  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> forward(const torch::Tensor& x);
  void pretty_print(std::ostream& os) const override;

 private:
  int64_t num_experts_, top_k_;
  torch::nn::Linear gate_{nullptr};
  torch::nn::ModuleList experts_{nullptr};
};
TORCH_MODULE(MixtureOfExperts);

/// CodefyUI's TimestepEmbedding: a sinusoidal frequency bank of a timestep
/// (half sines, half cosines, periods up to max_period) then
/// Linear(D, 4D) -> SiLU -> Linear(4D, D). The weights are drawn from a
/// generator seeded with `seed` (normal, scaled by 1/sqrt(D)), the biases are
/// zero, as CodefyUI initialises them.
class TimestepEmbeddingImpl : public torch::nn::Module {
 public:
  TimestepEmbeddingImpl(int64_t embed_dim, int64_t max_period, uint64_t seed);
  /// timesteps: any shape (a 0-d one counts as [1]); returns [..., embed_dim].
  torch::Tensor forward(const torch::Tensor& timesteps);
  void pretty_print(std::ostream& os) const override;

 private:
  int64_t embed_dim_, max_period_;
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr};
};
TORCH_MODULE(TimestepEmbedding);

}  // namespace codefy::model
