// Modules LibTorch lacks, and CodefyUI's one-tensor-in/one-tensor-out wrappers
// around LibTorch's multi-output ones. The wrappers keep CodefyUI's attribute
// names (lstm, gru, encoder, decoder, attn) because they are state_dict key prefixes.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/rnn.h>
#include <torch/nn/modules/transformer.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace codefy::model {

/// x.view(x.size(0), *shape) in CodefyUI: reshapes everything after the batch dimension.
class ReshapeImpl : public torch::nn::Module {
 public:
  explicit ReshapeImpl(std::vector<int64_t> shape);
  torch::Tensor forward(const torch::Tensor& x);
  void pretty_print(std::ostream& os) const override;

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

 private:
  int64_t dim_, index_;
};
TORCH_MODULE(SelectIndex);

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

 private:
  torch::nn::MultiheadAttentionOptions options_;
  torch::nn::MultiheadAttention attn_{nullptr};
};
TORCH_MODULE(MultiHeadAttentionBlock);

}  // namespace codefy::model
