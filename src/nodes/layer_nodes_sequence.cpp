// Layers as forward nodes on sequences and for diffusion: CodefyUI's
// PositionalEncoding, MultiHeadAttention, TransformerEncoder/Decoder,
// MoELayer, LSTM, GRU, RNNCell, Upsample, TimestepEmbedding, GaussianNoise.
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
// LLM and Transformer: PositionalEncoding, MultiHeadAttention, encoder and
// decoder stacks, MoELayer. CodefyUI builds these sequence-first.

/// A sequence-first tensor with a batch dimension: `x` itself, or, when
/// `unbatched` ([seq, D]), a batch of one ([seq, 1, D]).
Tensor as_batch(const Tensor& x, bool unbatched) { return unbatched ? x.unsqueeze(1) : x; }

/// Vaswani et al.'s encoding, computed as CodefyUI computes it (float32).
Tensor sinusoidal_encoding(int64_t seq, int64_t d) {
  using torch::indexing::None;
  using torch::indexing::Slice;
  Tensor pe = torch::zeros({seq, d});
  const Tensor position = torch::arange(seq, torch::kFloat32).unsqueeze(1);
  const Tensor div_term = torch::exp(torch::arange(0, d, 2, torch::kFloat32) * -(std::log(10000.0) / d));
  const int64_t even = (d + 1) / 2, odd = d / 2;
  pe.index_put_({Slice(), Slice(0, None, 2)}, torch::sin(position * div_term.slice(0, 0, even)));
  pe.index_put_({Slice(), Slice(1, None, 2)}, torch::cos(position * div_term.slice(0, 0, odd)));
  return pe;
}

void register_positional_encoding(NodeRegistry& r) {
  graph::NodeDef d{
      "PositionalEncoding",
      "LLM",
      "Add positional information to token embeddings. `sinusoidal` uses the Vaswani et al. (2017) "
      "formula PE(pos, 2i)=sin(pos/10000^(2i/d)); `learnable` returns a seeded random pattern "
      "(deterministic per seed).",
      {tensor_in("Input embeddings of shape [seq, D] or [seq, batch, D].")},
      {tensor_out("Input + positional encoding, same shape as input."),
       def::out("pe", DataType::kTensor, "The positional encoding alone, shape [seq, D] — useful for visualisation.")},
      {def::select("mode", "sinusoidal", {"sinusoidal", "learnable"},
                   "sinusoidal=Vaswani formula; learnable=seeded random init."),
       def::integer("max_len", 512, "Maximum sequence length supported. Inputs longer than this raise an error.", 1),
       def::integer("seed", 42, "Seed for `learnable` mode initialisation. Ignored for `sinusoidal`.")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const Tensor x = tensor_input(ctx, "tensor").to(torch::kFloat32);
    require_rank("tensor", x, {2, 3}, "[seq, D] or [seq, batch, D]");
    const int64_t seq = x.size(0), dim = x.size(-1), max_len = ctx.param_int("max_len");
    if (seq > max_len)
      fail_shape("tensor", "at most max_len = " + std::to_string(max_len) + " positions (dimension 0)", x);
    Tensor pe;
    if (ctx.param_string("mode") == "sinusoidal") {
      pe = sinusoidal_encoding(seq, dim);
    } else {
      // A generator of its own, so the node's global RNG stream is untouched.
      at::Generator gen = at::detail::createCPUGenerator(static_cast<uint64_t>(ctx.param_int("seed")));
      pe = torch::randn({seq, dim}, gen, torch::kFloat32) * (1.0 / std::sqrt(static_cast<double>(dim)));
    }
    pe = pe.to(x.device());
    return ValueMap{{"tensor", x.dim() == 2 ? x + pe : x + pe.unsqueeze(1)}, {"pe", pe}};
  });
}

void register_multi_head_attention(NodeRegistry& r) {
  graph::NodeDef d{"MultiHeadAttention",
                   "Transformer",
                   "Apply multi-head attention mechanism (wraps nn.MultiheadAttention). Core: "
                   "$\\text{Attention}(Q,K,V)=\\text{softmax}(\\frac{QK^T}{\\sqrt{d_k}})V$",
                   {def::in("query", DataType::kTensor, "Query tensor (seq_len, batch, embed_dim)"),
                    def::in("key", DataType::kTensor, "Key tensor (seq_len, batch, embed_dim)"),
                    def::in("value", DataType::kTensor, "Value tensor (seq_len, batch, embed_dim)")},
                   {def::out("output", DataType::kTensor, "Attention output tensor"),
                    def::out("weights", DataType::kTensor, "Attention weight tensor")},
                   {def::integer("embed_dim", 512, "Total dimension of the model"),
                    def::integer("num_heads", 8, "Number of parallel attention heads")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const int64_t dim = ctx.param_int("embed_dim");
    const char* const layout = "(seq_len, batch, embed_dim) or unbatched (seq_len, embed_dim)";
    const Tensor& q = float_input(ctx, "query");
    const Tensor& k = float_input(ctx, "key");
    const Tensor& v = float_input(ctx, "value");
    for (const auto& [port, t] : {std::pair<const char*, const Tensor&>{"query", q}, {"key", k}, {"value", v}}) {
      require_size(port, t, {2, 3}, layout, -1, "embed_dim", "embed_dim", dim);
      if (t.dim() != q.dim()) fail_shape(port, "as many dimensions as query " + shape_text(q.sizes()), t);
    }
    if (k.size(0) != v.size(0)) fail_shape("key", "the same seq_len as value " + shape_text(v.sizes()), k);
    for (const auto& [port, t] : {std::pair<const char*, const Tensor&>{"key", k}, {"value", v}})
      if (q.dim() == 3 && t.size(1) != q.size(1))
        fail_shape(port, "the same batch as query " + shape_text(q.sizes()), t);
    auto layer = kept_layer(ctx, [&] {
      const int64_t heads = int_at_least(ctx, "num_heads", 1);
      int_at_least(ctx, "embed_dim", 1);
      if (dim % heads != 0)
        NodeContext::fail_param("num_heads", "embed_dim (" + std::to_string(dim) +
                                                 ") must be divisible by num_heads (" + std::to_string(heads) + ")");
      auto mha = torch::nn::MultiheadAttention(torch::nn::MultiheadAttentionOptions(dim, heads));
      const auto& impl = mha.ptr();  // the one-tensor forward is self-attention
      return model::BuiltLayer{impl, [impl](const Tensor& t) { return std::get<0>(impl->forward(t, t, t)); }};
    });
    ready(*layer, q, false);
    torch::NoGradGuard no_grad;
    // LibTorch's attention takes batched input only; unbatched input is a
    // batch of one, its outputs without that dimension, as PyTorch gives them.
    const bool unbatched = q.dim() == 2;
    auto [output, weights] = layer->as<torch::nn::MultiheadAttentionImpl>().forward(
        as_batch(q, unbatched), as_batch(k, unbatched), as_batch(v, unbatched));
    if (unbatched) {
      output = output.squeeze(1);
      weights = weights.squeeze(0);
    }
    return ValueMap{{"output", output}, {"weights", weights}};
  });
}

std::vector<graph::ParamDef> transformer_params() {
  return {def::integer("d_model", 512, "Dimension of the model"), def::integer("nhead", 8, "Number of attention heads"),
          def::integer("num_layers", 6, "Number of encoder layers"),
          def::integer("dim_feedforward", 2048, "Dimension of feedforward network")};
}

const char* const kSequence = "(seq_len, batch, d_model) or unbatched (seq_len, d_model)";

/// The options of one layer of a stack: PyTorch's defaults (dropout 0.1,
/// relu) but for what the node's params set; the stack runs in eval mode.
template <class LayerOptions>
LayerOptions transformer_layer(const NodeContext& ctx) {
  const int64_t d_model = int_at_least(ctx, "d_model", 1), heads = int_at_least(ctx, "nhead", 1);
  if (d_model % heads != 0)
    NodeContext::fail_param("nhead", "d_model (" + std::to_string(d_model) + ") must be divisible by nhead (" +
                                         std::to_string(heads) + ")");
  return LayerOptions(d_model, heads).dim_feedforward(int_at_least(ctx, "dim_feedforward", 1));
}

void register_transformer_encoder(NodeRegistry& r) {
  graph::NodeDef d{"TransformerEncoder",
                   "Transformer",
                   "Apply Transformer encoder stack to input tensor",
                   {tensor_in("Input tensor (seq_len, batch, d_model)")},
                   {tensor_out("Encoded output tensor")},
                   transformer_params()};
  r.add(std::move(d), [](NodeContext& ctx) {
    const Tensor& x = float_input(ctx, "tensor");
    require_size("tensor", x, {2, 3}, kSequence, -1, "d_model", "d_model", ctx.param_int("d_model"));
    auto layer = kept_layer(ctx, [&] {
      return built(torch::nn::TransformerEncoder(torch::nn::TransformerEncoderOptions(
          transformer_layer<torch::nn::TransformerEncoderLayerOptions>(ctx), int_at_least(ctx, "num_layers", 1))));
    });
    const bool unbatched = x.dim() == 2;
    const Tensor y = run_layer(*layer, as_batch(x, unbatched), false);
    return ValueMap{{"tensor", unbatched ? y.squeeze(1) : y}};
  });
}

void register_transformer_decoder(NodeRegistry& r) {
  auto params = transformer_params();
  params[2].description = "Number of decoder layers";
  graph::NodeDef d{"TransformerDecoder",
                   "Transformer",
                   "Apply Transformer decoder stack to input tensor with encoder memory",
                   {tensor_in("Target tensor (seq_len, batch, d_model)"),
                    def::in("memory", DataType::kTensor, "Encoder output / memory tensor")},
                   {tensor_out("Decoded output tensor")},
                   std::move(params)};
  r.add(std::move(d), [](NodeContext& ctx) {
    const int64_t d_model = ctx.param_int("d_model");
    const Tensor& x = float_input(ctx, "tensor");
    const Tensor& memory = float_input(ctx, "memory");
    require_size("tensor", x, {2, 3}, kSequence, -1, "d_model", "d_model", d_model);
    require_size("memory", memory, {x.dim()}, kSequence, -1, "d_model", "d_model", d_model);
    if (x.dim() == 3 && memory.size(1) != x.size(1))
      fail_shape("memory", "the same batch as tensor " + shape_text(x.sizes()), memory);
    auto layer = kept_layer(ctx, [&] {
      auto decoder = torch::nn::TransformerDecoder(torch::nn::TransformerDecoderOptions(
          transformer_layer<torch::nn::TransformerDecoderLayerOptions>(ctx), int_at_least(ctx, "num_layers", 1)));
      // The one-tensor forward attends to itself; the node passes the memory.
      const auto& impl = decoder.ptr();
      return model::BuiltLayer{impl, [impl](const Tensor& t) { return impl->forward(t, t); }};
    });
    ready(*layer, x, false);
    torch::NoGradGuard no_grad;
    const bool unbatched = x.dim() == 2;
    const Tensor y =
        layer->as<torch::nn::TransformerDecoderImpl>().forward(as_batch(x, unbatched), as_batch(memory, unbatched));
    return ValueMap{{"tensor", unbatched ? y.squeeze(1) : y}};
  });
}

void register_moe_layer(NodeRegistry& r) {
  graph::NodeDef d{
      "MoELayer",
      "Transformer",
      "Mixture-of-Experts FFN. For each token, a gate picks the top-k experts by softmax score; the layer output is "
      "the weighted sum of those experts' outputs. The architecture used in Switch / Mixtral / DeepSeek-MoE.",
      {def::in("x", DataType::kTensor, "Input hidden states [B, T, H].")},
      {def::out("output", DataType::kTensor, "MoE output, same shape as input [B, T, H]."),
       def::out("routing_weights", DataType::kTensor, "Per-token softmax weights over top-k experts [B, T, k]."),
       def::out("expert_indices", DataType::kTensor, "Per-token top-k expert ids [B, T, k].")},
      {def::integer("num_experts", 4, "Number of expert FFNs.", 1),
       def::integer("top_k", 2, "Experts per token (clamped to num_experts).", 1),
       def::integer("hidden_dim", 128, "Token hidden size H.", 1),
       def::integer("expert_hidden_dim", 256, "Inner width of each expert FFN.", 1),
       def::integer("seed", 42, "Init seed for reproducibility.")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const int64_t hidden = ctx.param_int("hidden_dim");
    Tensor x = tensor_input(ctx, "x").to(torch::kFloat32);
    require_size("x", x, {2, 3}, "[B, T, H] or [T, H]", -1, "H", "hidden_dim", hidden);
    if (x.dim() == 2) x = x.unsqueeze(0);  // [T, H] as [1, T, H], as CodefyUI
    auto layer = kept_layer(ctx, [&] {
      const int64_t experts = int_at_least(ctx, "num_experts", 1), top_k = int_at_least(ctx, "top_k", 1);
      const int64_t inner = int_at_least(ctx, "expert_hidden_dim", 1);
      int_at_least(ctx, "hidden_dim", 1);
      // CodefyUI seeds the global RNG with the node's `seed` and builds in PyTorch's order.
      torch::manual_seed(static_cast<uint64_t>(ctx.param_int("seed")));
      auto moe = model::MixtureOfExperts(experts, top_k, hidden, inner);
      const auto& impl = moe.ptr();
      return model::BuiltLayer{impl, [impl](const Tensor& t) { return std::get<0>(impl->forward(t)); }};
    });
    ready(*layer, x, false);
    torch::NoGradGuard no_grad;
    auto [output, weights, indices] = layer->as<model::MixtureOfExpertsImpl>().forward(x);
    return ValueMap{{"output", output}, {"routing_weights", weights}, {"expert_indices", indices}};
  });
}

// ---------------------------------------------------------------------------
// RNN.

void register_recurrent(NodeRegistry& r, const char* name, const char* description, const char* kind) {
  graph::NodeDef d{name,
                   "RNN",
                   description,
                   {tensor_in("Input tensor (batch, seq_len, input_size) if batch_first=True")},
                   {def::out("output", DataType::kTensor, "Output tensor containing hidden states for each time step"),
                    def::out("hidden", DataType::kTensor, "Final hidden state (h_n)")},
                   {def::integer("input_size", 128, "Number of expected features in the input"),
                    def::integer("hidden_size", 256, "Number of features in the hidden state"),
                    def::integer("num_layers", 1, "Number of recurrent layers"),
                    def::boolean("batch_first", true, "If True, input/output shape is (batch, seq, feature)"),
                    def::boolean("bidirectional", false, std::string("If True, becomes a bidirectional ") + kind)}};
  const bool lstm = std::string(name) == "LSTM";
  r.add(std::move(d), [lstm](NodeContext& ctx) {
    const int64_t in = ctx.param_int("input_size");
    const bool batch_first = ctx.param_bool("batch_first");
    const Tensor& given = float_input(ctx, "tensor");
    require_size("tensor", given, {2, 3},
                 batch_first ? "(batch, seq_len, input_size) or unbatched (seq_len, input_size)"
                             : "(seq_len, batch, input_size) or unbatched (seq_len, input_size)",
                 -1, "input_size", "input_size", in);
    // Unbatched input runs as a batch of one, its outputs without that
    // dimension, as PyTorch gives them.
    const bool unbatched = given.dim() == 2;
    const int64_t batch_dim = batch_first ? 0 : 1;
    const Tensor x = unbatched ? given.unsqueeze(batch_dim) : given;
    const auto unbatch = [&](const Tensor& output, const Tensor& hidden) {
      return unbatched ? ValueMap{{"output", output.squeeze(batch_dim)}, {"hidden", hidden.squeeze(1)}}
                       : ValueMap{{"output", output}, {"hidden", hidden}};
    };
    auto layer = kept_layer(ctx, [&] {
      const int64_t hidden = int_at_least(ctx, "hidden_size", 1), layers = int_at_least(ctx, "num_layers", 1);
      int_at_least(ctx, "input_size", 1);
      const bool bidirectional = ctx.param_bool("bidirectional");
      if (lstm) {
        auto m = torch::nn::LSTM(torch::nn::LSTMOptions(in, hidden)
                                     .num_layers(layers)
                                     .batch_first(batch_first)
                                     .bidirectional(bidirectional));
        const auto& impl = m.ptr();
        return model::BuiltLayer{impl, [impl](const Tensor& t) { return std::get<0>(impl->forward(t)); }};
      }
      auto m = torch::nn::GRU(
          torch::nn::GRUOptions(in, hidden).num_layers(layers).batch_first(batch_first).bidirectional(bidirectional));
      const auto& impl = m.ptr();
      return model::BuiltLayer{impl, [impl](const Tensor& t) { return std::get<0>(impl->forward(t)); }};
    });
    ready(*layer, x, false);
    torch::NoGradGuard no_grad;
    if (lstm) {
      const auto [output, state] = layer->as<torch::nn::LSTMImpl>().forward(x);
      return unbatch(output, std::get<0>(state));
    }
    const auto [output, hidden] = layer->as<torch::nn::GRUImpl>().forward(x);
    return unbatch(output, hidden);
  });
}

void register_rnn_cell(NodeRegistry& r) {
  graph::NodeDef d{
      "RNNCell",
      "RNN",
      "Combines this input with the previous hidden state",
      {tensor_in("Input at this time step [batch, input_size]."),
       def::in("hidden", DataType::kTensor, "Hidden state from previous step [batch, hidden_size]. Defaults to zeros.",
               true)},
      {def::out("hidden", DataType::kTensor, "New hidden state [batch, hidden_size].")},
      {def::integer("input_size", 8, "Dimension of the input vector at each time step.", 1),
       def::integer("hidden_size", 16, "Dimension of the hidden state.", 1),
       def::select("nonlinearity", "tanh", {"tanh", "relu"}, "Activation applied to the recurrence output."),
       def::integer("seed", 42, "Seed for the W_ih / W_hh / bias initialisation.")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const int64_t in = ctx.param_int("input_size"), hidden_size = ctx.param_int("hidden_size");
    const Tensor x = tensor_input(ctx, "tensor").to(torch::kFloat32);
    require_size("tensor", x, {2}, "[batch, input_size]", 1, "input_size", "input_size", in);
    Tensor h;
    if (const Tensor* given = ctx.input_if<Tensor>("hidden")) {
      h = given->to(torch::kFloat32);
      if (h.dim() != 2 || h.size(0) != x.size(0) || h.size(1) != hidden_size)
        fail_shape("hidden",
                   "[batch, hidden_size] = [" + std::to_string(x.size(0)) + ", " + std::to_string(hidden_size) +
                       "] (batch of tensor " + shape_text(x.sizes()) + ")",
                   h);
    }
    auto layer = kept_layer(ctx, [&] {
      int_at_least(ctx, "input_size", 1);
      int_at_least(ctx, "hidden_size", 1);
      const bool relu = ctx.param_string("nonlinearity") == "relu";
      torch::nn::RNNCellOptions options(in, hidden_size);
      if (relu)
        options.nonlinearity(torch::kReLU);
      else
        options.nonlinearity(torch::kTanh);
      auto cell = torch::nn::RNNCell(options);
      // CodefyUI's deterministic init from the node's `seed`: the weight
      // matrices normal / sqrt(hidden_size), in nn.RNNCell's parameter order, the biases zero.
      at::Generator gen = at::detail::createCPUGenerator(static_cast<uint64_t>(ctx.param_int("seed")));
      const double scale = 1.0 / std::sqrt(static_cast<double>(hidden_size));
      torch::NoGradGuard no_grad;
      for (Tensor* w : {&cell->weight_ih, &cell->weight_hh}) w->copy_(torch::randn(w->sizes(), gen) * scale);
      for (Tensor* b : {&cell->bias_ih, &cell->bias_hh}) b->zero_();
      return built(cell);
    });
    ready(*layer, x, false);
    torch::NoGradGuard no_grad;
    return ValueMap{{"hidden", layer->as<torch::nn::RNNCellImpl>().forward(x, h)}};
  });
}

// ---------------------------------------------------------------------------
// Diffusion: Upsample, TimestepEmbedding, GaussianNoise.

void register_upsample(NodeRegistry& r) {
  graph::NodeDef d{"Upsample",
                   "Diffusion",
                   "Pure spatial upsampling via F.interpolate — no learnable weights. Doubles spatial dims by "
                   "default. Use this for U-Net decoder paths when you don't want the upsampling step to learn "
                   "(compare with `ConvTranspose2d`, which does).",
                   {tensor_in("Input tensor [N, C, ...] — 1D, 2D, or 3D spatial dims.")},
                   {tensor_out("Upsampled tensor with spatial dims scaled by `scale_factor`.")},
                   {def::select("mode", "nearest", {"nearest", "bilinear", "area"},
                                "Interpolation mode. nearest=replicate pixels, bilinear=blend neighbours (smoother), "
                                "area=averaging (useful for downsampling)."),
                    def::number("scale_factor", 2.0, "Multiply spatial dims by this. 2.0 doubles, 0.5 halves.", 0.1)}};
  r.add(std::move(d), [](NodeContext& ctx) {
    namespace F = torch::nn::functional;
    const std::string mode = ctx.param_string("mode");
    const double scale = ctx.param_float("scale_factor");
    if (!(scale > 0)) NodeContext::fail_param("scale_factor", "must be positive, got " + std::to_string(scale));
    const Tensor& x = tensor_input(ctx, "tensor");
    if (mode == "bilinear")
      require_rank("tensor", x, {4}, "[N, C, H, W] (bilinear interpolates two spatial dims)");
    else
      require_rank("tensor", x, {3, 4, 5}, "[N, C, ...] with 1, 2 or 3 spatial dims");
    auto options = F::InterpolateFuncOptions().scale_factor(std::vector<double>(x.dim() - 2, scale));
    if (mode == "bilinear")
      options.mode(torch::kBilinear).align_corners(false);
    else if (mode == "area")
      options.mode(torch::kArea);
    else
      options.mode(torch::kNearest);
    // Interpolated in float32 and given back in the input's dtype, as CodefyUI.
    return ValueMap{{"tensor", F::interpolate(x.to(torch::kFloat32), options).to(x.scalar_type())}};
  });
}

void register_timestep_embedding(NodeRegistry& r) {
  graph::NodeDef d{"TimestepEmbedding",
                   "Diffusion",
                   "Encode a diffusion timestep $t$ into a vector that conditions U-Net blocks. Sinusoidal frequency "
                   "bank (à la Vaswani) followed by Linear→SiLU→Linear, the standard DDPM recipe.",
                   {def::in("timestep", DataType::kTensor, "Scalar int, 0-d tensor, or [B] tensor of timesteps.")},
                   {def::out("embedding", DataType::kTensor, "Float32 tensor of shape [B, embed_dim].")},
                   {def::integer("embed_dim", 32, "Dimension of the time vector. Must be even (sin/cos halves).", 2),
                    def::integer("max_period", 10000,
                                 "Largest period in the frequency bank — controls how many distinct timesteps the "
                                 "embedding can resolve.",
                                 1),
                    def::integer("seed", 42, "Seed for the projection-layer initialisation.")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const int64_t dim = int_at_least(ctx, "embed_dim", 2);
    if (dim % 2 != 0) NodeContext::fail_param("embed_dim", "must be even, got " + std::to_string(dim));
    const Value& given = ctx.input("timestep");
    // Timesteps go into the frequency bank as float32, as CodefyUI's .float().
    const Tensor t =
        (std::holds_alternative<double>(given) ? torch::tensor(std::get<double>(given)) : tensor_input(ctx, "timestep"))
            .to(torch::kFloat32);
    auto layer = kept_layer(ctx, [&] {
      const int64_t period = int_at_least(ctx, "max_period", 1);
      return built(model::TimestepEmbedding(dim, period, static_cast<uint64_t>(ctx.param_int("seed"))));
    });
    return ValueMap{{"embedding", run_layer(*layer, t, false)}};
  });
}

void register_gaussian_noise(NodeRegistry& r) {
  graph::NodeDef d{
      "GaussianNoise",
      "Diffusion",
      "Sample i.i.d. Gaussian noise of a given shape",
      {def::in("shape_ref", DataType::kTensor, "Optional reference tensor — noise will match its shape.", true)},
      {def::out("noise", DataType::kTensor, "Float32 tensor sampled from N(mean, std²).")},
      {def::text("shape", "1,3,8,8",
                 "Comma-separated dimensions, e.g. '1,3,32,32'. Used only when `shape_ref` is not connected."),
       def::number("mean", 0.0, "Mean of the Gaussian. Defaults to 0 (standard normal)."),
       def::number("std", 1.0, "Standard deviation. Defaults to 1 (standard normal).", 0.0),
       def::integer("seed", 42, "Seed for reproducibility. Same seed → same noise.")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const Tensor* ref = ctx.input_if<Tensor>("shape_ref");
    const std::vector<int64_t> shape = ref ? ref->sizes().vec() : sizes_param(ctx, "shape", "'1,3,32,32'");
    const double mean = ctx.param_float("mean"), std = std::max(0.0, ctx.param_float("std"));
    // A generator of its own from the node's `seed`: same seed, same noise, as CodefyUI.
    at::Generator gen = at::detail::createCPUGenerator(static_cast<uint64_t>(ctx.param_int("seed")));
    Tensor noise = torch::randn(shape, gen, torch::kFloat32);
    if (std != 1.0) noise = noise * std;
    if (mean != 0.0) noise = noise + mean;
    return ValueMap{{"noise", ref ? noise.to(ref->device()) : noise}};
  });
}

}  // namespace

void register_sequence_layers(NodeRegistry& r) {
  register_positional_encoding(r);
  register_multi_head_attention(r);
  register_transformer_encoder(r);
  register_transformer_decoder(r);
  register_moe_layer(r);
  register_recurrent(r, "LSTM",
                     "Apply LSTM recurrent layer to input sequence (wraps nn.LSTM). Gates: input, forget, cell, "
                     "output.",
                     "LSTM");
  register_recurrent(r, "GRU", "Apply GRU recurrent layer to input sequence (wraps nn.GRU). Gates: reset, update.",
                     "GRU");
  register_rnn_cell(r);
  register_upsample(r);
  register_timestep_embedding(r);
  register_gaussian_noise(r);
}

}  // namespace codefy::layer_node
