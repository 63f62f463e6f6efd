// The `deep` pack's attention nodes (Edu-SelfAttention, Edu-MultiHeadAttention,
// Edu-CrossAttention) and recurrent cells (Edu-RNNCell, Edu-LSTMCell); see
// edu_deep_nodes.cpp for what the pack is.
#include "nodes/edu_deep_support.h"
#include "nodes/layer_node_support.h"
#include "nodes/step_trace.h"

#include <limits>

namespace codefy::nodes::edu_deep {

// ---------------------------------------------------------------------------
// Modules kept in the node state store.

/// W_q, W_k, W_v (and W_o) without bias, weight = randn * 1/sqrt(embed_dim)
/// from a generator seeded `seed`, drawn in that order, as CodefyUI's
/// attention projections.
class AttentionProjImpl : public torch::nn::Module {
 public:
  AttentionProjImpl(int64_t embed_dim, bool with_output, int64_t seed) {
    const auto linear = [&](const char* name) {
      return register_module(name, torch::nn::Linear(torch::nn::LinearOptions(embed_dim, embed_dim).bias(false)));
    };
    w_q = linear("W_q");
    w_k = linear("W_k");
    w_v = linear("W_v");
    if (with_output) w_o = linear("W_o");
    at::Generator gen = seeded(seed);
    const double scale = 1.0 / std::sqrt(static_cast<double>(embed_dim));
    torch::NoGradGuard no_grad;
    for (auto* l : {&w_q, &w_k, &w_v, &w_o})
      if (*l) (*l)->weight.copy_(torch::randn((*l)->weight.sizes(), gen) * scale);
  }
  torch::nn::Linear w_q{nullptr}, w_k{nullptr}, w_v{nullptr}, w_o{nullptr};
};
TORCH_MODULE(AttentionProj);

// ---------------------------------------------------------------------------
// Attention: Edu-SelfAttention, Edu-MultiHeadAttention, Edu-CrossAttention.

/// An attention node's projections, kept in the node state store.
AttentionProjImpl& kept_projections(const NodeContext& ctx, int64_t embed_dim, bool with_output,
                                    std::shared_ptr<layer_node::LayerModule>& holder, const Tensor& x) {
  // Four [D, D] matrices at most; refused before any is drawn.
  limit_param("embed_dim", 4.0 * static_cast<double>(embed_dim) * static_cast<double>(embed_dim),
              "the projection weights");
  holder = layer_node::kept_layer(
      ctx, [&] { return as_built(AttentionProj(embed_dim, with_output, ctx.param_int("seed"))); });
  layer_node::ready(*holder, x, false);
  return holder->as<AttentionProjImpl>();
}

/// An attention input: [seq, D] or [seq, batch, D] with D = embed_dim.
Tensor attention_input(const NodeContext& ctx, const std::string& port, const std::string& node, int64_t embed_dim,
                       const std::string& what) {
  Tensor x = float_in(ctx, port);
  if (x.dim() == 0 || x.size(-1) != embed_dim)
    NodeContext::fail_input(port, node + ": " + what + " last dim " +
                                      (x.dim() ? std::to_string(x.size(-1)) : std::string("(none)")) + " of shape " +
                                      shape_text(x.sizes()) + " does not match embed_dim=" + std::to_string(embed_dim));
  return x;
}

/// The causal and the explicit mask combined (True = blocked); undefined when neither.
Tensor combined_mask(const NodeContext& ctx, int64_t seq, bool causal, const std::string& node) {
  Tensor m;
  if (causal) m = torch::triu(torch::ones({seq, seq}, torch::kBool), 1);
  if (ctx.has_input("mask")) {
    const Tensor ext = mask_input(ctx, seq, seq, node, "seq_len=" + std::to_string(seq));
    m = m.defined() ? (m | ext) : ext;
  }
  return m;
}

int64_t heads_param(const NodeContext& ctx, int64_t embed_dim, const std::string& node) {
  const int64_t heads = ctx.param_int("num_heads");
  if (embed_dim < 1)
    NodeContext::fail_param("embed_dim", node + ": embed_dim must be >= 1; got " + std::to_string(embed_dim));
  if (heads < 1 || embed_dim % heads != 0)
    NodeContext::fail_param("num_heads", node + ": embed_dim=" + std::to_string(embed_dim) +
                                             " must be divisible by num_heads=" + std::to_string(heads) + ".");
  return heads;
}

void register_self_attention(NodeRegistry& r) {
  graph::NodeDef d{
      "deep:Edu-SelfAttention",
      "LLM",
      "Hand-written single-head self-attention: Q,K,V = three Linear projections; scores = Q@K^T/√d; weights = "
      "softmax(scores); output = weights@V. Outputs the [seq, seq] weight matrix for direct heatmap visualisation.",
      {def::in("tensor", DataType::kTensor, "Input embeddings of shape [seq, D] or [seq, batch, D]."),
       def::in("mask", DataType::kTensor,
               "Optional [seq, seq] boolean mask (True = blocked). Combined with `causal` via OR.", true),
       def::in("labels", DataType::kList, "Optional token labels for heatmap viz axes. Pass-through to the viz layer.",
               true)},
      {def::out("output", DataType::kTensor, "Attention output, same shape as input."),
       def::out("weights", DataType::kTensor,
                "Attention weights — [seq, seq] for 2D input, [batch, seq, seq] for 3D input."),
       def::out("labels", DataType::kList,
                "Pass-through of the optional `labels` input — surfaces token names to the heatmap viz.")},
      {def::integer("embed_dim", 8, "Token dimension. Must match the upstream tensor's last dim.", 1),
       def::boolean("causal", false,
                    "Block positions from attending to anything to their right (decoder-style / GPT)."),
       def::number("temperature", 1.0,
                   "Divide scores by this before softmax. <1 sharpens, >1 flattens the distribution.", 0.01),
       def::integer("seed", 42, "Seed for the W_q/W_k/W_v initialisation. Same seed → same weights.")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const std::string node = "EduSelfAttention";
    const int64_t embed_dim = ctx.param_int("embed_dim");
    const Tensor x = attention_input(ctx, "tensor", node, embed_dim, "input");
    const bool causal = ctx.param_bool("causal");
    const double temperature = std::max(1e-6, ctx.param_float("temperature"));
    if (x.dim() != 2 && x.dim() != 3)
      NodeContext::fail_input("tensor",
                              node + " expects [seq, D] or [seq, batch, D]; got shape " + shape_text(x.sizes()));
    const bool squeeze = x.dim() == 2;
    const int64_t seq = x.size(0), d = x.size(-1);
    const Tensor x_bf = squeeze ? x.unsqueeze(0) : x.transpose(0, 1);
    limit_input("tensor", x, static_cast<double>(x_bf.size(0)) * seq * seq, "attention weights [batch, seq, seq]");
    const Tensor mask = combined_mask(ctx, seq, causal, node);

    std::shared_ptr<layer_node::LayerModule> holder;
    AttentionProjImpl& m = kept_projections(ctx, embed_dim, false, holder, x);
    torch::NoGradGuard no_grad;
    const Tensor Q = m.w_q->forward(x_bf), K = m.w_k->forward(x_bf), V = m.w_v->forward(x_bf);
    Tensor scores = torch::matmul(Q, K.transpose(-2, -1)) / std::sqrt(static_cast<double>(d));
    if (mask.defined())
      scores = scores.masked_fill(mask.to(scores.device()).unsqueeze(0), -std::numeric_limits<double>::infinity());
    // A fully masked row is NaN after softmax; it becomes zeros, as CodefyUI's.
    const Tensor weights = torch::nan_to_num(torch::softmax(scores / temperature, -1), 0.0);
    const Tensor out_bf = torch::matmul(weights, V);
    const Tensor output = squeeze ? out_bf.squeeze(0) : out_bf.transpose(0, 1);
    const Tensor weights_out = squeeze ? weights.squeeze(0) : weights;

    StepRecorder rec(ctx);
    const auto un = [&](const Tensor& t) { return squeeze ? t.squeeze(0) : t; };
    rec.record("input", "Input embeddings of shape " + tuple_text(x.sizes()) + ".", {{"tensor", x}});
    rec.record("compute_qkv", "Project the input three times: $Q = xW_q$, $K = xW_k$, $V = xW_v$.",
               {{"Q", un(Q)}, {"K", un(K)}, {"V", un(V)}});
    rec.record("scaled_scores", "Compute attention scores: $S = QK^T / \\sqrt{d}$.", {{"scores", un(scores)}},
               {{"d", static_cast<double>(d)}, {"sqrt_d", std::sqrt(static_cast<double>(d))}});
    if (mask.defined())
      rec.record("mask",
                 std::string("Apply mask (causal=") + (causal ? "True" : "False") +
                     ", explicit_mask=" + (ctx.has_input("mask") ? "True" : "False") + ").",
                 {{"mask", mask}});
    rec.record("softmax_weights",
               "Normalise with softmax / temperature (" + py_float(temperature) + "). Each row sums to 1.",
               {{"weights", weights_out}});
    rec.record("weighted_sum", "Weighted sum of value vectors: $O = AV$.", {{"output", output}});
    ValueMap out{{"output", output}, {"weights", weights_out}, {"labels", list_through(ctx, "labels")}};
    return rec.add_to(out);
  });
}

void register_multi_head_attention(NodeRegistry& r) {
  graph::NodeDef d{
      "deep:Edu-MultiHeadAttention",
      "LLM",
      "Toy multi-head self-attention. Splits embed_dim across num_heads, runs scaled dot-product attention per head, "
      "then mixes with W_o. Outputs [H, seq, seq] weights so each head's attention pattern can be visualised "
      "side-by-side.",
      {def::in("tensor", DataType::kTensor, "Input embeddings of shape [seq, D] or [seq, batch, D]."),
       def::in("mask", DataType::kTensor,
               "Optional [seq, seq] boolean mask (True = blocked). Combined with `causal` via OR.", true),
       def::in("labels", DataType::kList, "Optional token labels for heatmap viz axes.", true)},
      {def::out("output", DataType::kTensor, "Attention output, same shape as input."),
       def::out("weights", DataType::kTensor,
                "Per-head weights — [H, seq, seq] for 2D input, [batch, H, seq, seq] for 3D input."),
       def::out("labels", DataType::kList,
                "Pass-through of the optional `labels` input — surfaces token names to the heatmap viz.")},
      {def::integer("embed_dim", 8, "Token dimension. Must be divisible by num_heads.", 1),
       def::integer("num_heads", 2, "Number of parallel attention heads. Must divide embed_dim evenly.", 1),
       def::boolean("causal", false, "Block future positions per head (decoder-style)."),
       def::integer("seed", 42, "Seed for the W_q/W_k/W_v/W_o initialisation.")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const std::string node = "EduMultiHeadAttention";
    const int64_t embed_dim = ctx.param_int("embed_dim");
    const int64_t heads = heads_param(ctx, embed_dim, node), head_dim = embed_dim / heads;
    const Tensor x = attention_input(ctx, "tensor", node, embed_dim, "input");
    const bool causal = ctx.param_bool("causal");
    if (x.dim() != 2 && x.dim() != 3)
      NodeContext::fail_input("tensor",
                              node + " expects [seq, D] or [seq, batch, D]; got shape " + shape_text(x.sizes()));
    const bool squeeze = x.dim() == 2;
    const int64_t seq = x.size(0);
    const Tensor x_bf = squeeze ? x.unsqueeze(0) : x.transpose(0, 1);
    const int64_t B = x_bf.size(0);
    limit_input("tensor", x, static_cast<double>(B) * heads * seq * seq, "attention weights [batch, H, seq, seq]");
    const Tensor mask = combined_mask(ctx, seq, causal, node);

    std::shared_ptr<layer_node::LayerModule> holder;
    AttentionProjImpl& m = kept_projections(ctx, embed_dim, true, holder, x);
    torch::NoGradGuard no_grad;
    const auto split = [&](const Tensor& t) { return t.view({B, seq, heads, head_dim}).transpose(1, 2); };
    const Tensor Q = split(m.w_q->forward(x_bf)), K = split(m.w_k->forward(x_bf)), V = split(m.w_v->forward(x_bf));
    Tensor scores = torch::matmul(Q, K.transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim));
    if (mask.defined())
      scores = scores.masked_fill(mask.to(scores.device()).unsqueeze(0).unsqueeze(0),
                                  -std::numeric_limits<double>::infinity());
    const Tensor weights = torch::nan_to_num(torch::softmax(scores, -1), 0.0);
    const Tensor attended = torch::matmul(weights, V).transpose(1, 2).contiguous().view({B, seq, embed_dim});
    const Tensor out_bf = m.w_o->forward(attended);
    const Tensor output = squeeze ? out_bf.squeeze(0) : out_bf.transpose(0, 1);
    const Tensor weights_out = squeeze ? weights.squeeze(0) : weights;

    StepRecorder rec(ctx);
    const auto un = [&](const Tensor& t) { return squeeze ? t.squeeze(0) : t; };
    rec.record("input",
               "Input embeddings of shape " + tuple_text(x.sizes()) + "; embed_dim=" + std::to_string(embed_dim) +
                   ", num_heads=" + std::to_string(heads) + ", head_dim=" + std::to_string(head_dim) + ".",
               {{"tensor", x}});
    rec.record("compute_qkv", "Project Q, K, V and split each into H heads of size head_dim.",
               {{"Q", un(Q)}, {"K", un(K)}, {"V", un(V)}});
    rec.record("scaled_scores", "Per-head scores: $S_h = Q_h K_h^T / \\sqrt{d_h}$.", {{"scores", un(scores)}},
               {{"head_dim", static_cast<double>(head_dim)}, {"sqrt_dh", std::sqrt(static_cast<double>(head_dim))}});
    rec.record("softmax_weights", "Per-head softmax — each head learns a different attention pattern.",
               {{"weights", weights_out}});
    rec.record("concat_and_project", "Concatenate head outputs and mix with $W_o$.", {{"output", output}});
    ValueMap out{{"output", output}, {"weights", weights_out}, {"labels", list_through(ctx, "labels")}};
    return rec.add_to(out);
  });
}

void register_cross_attention(NodeRegistry& r) {
  graph::NodeDef d{
      "deep:Edu-CrossAttention",
      "Diffusion",
      "Multi-head cross-attention. $Q$ comes from `query`, $K$ and $V$ from `context` — they may have different "
      "sequence lengths. Outputs a rectangular [H, Q_seq, K_seq] attention map showing how each query position "
      "attended to each context token.",
      {def::in("query", DataType::kTensor, "Query tensor [Q_seq, D] or [Q_seq, batch, D]."),
       def::in("context", DataType::kTensor,
               "Key/value source [K_seq, D] or [K_seq, batch, D]. May differ in seq length from query."),
       def::in("mask", DataType::kTensor, "Optional [Q_seq, K_seq] boolean mask (True = blocked).", true),
       def::in("q_labels", DataType::kList, "Optional row labels for the heatmap viz (one per query position).", true),
       def::in("k_labels", DataType::kList, "Optional column labels for the heatmap viz (one per context position).",
               true)},
      {def::out("output", DataType::kTensor, "Attention output, same shape as query."),
       def::out("weights", DataType::kTensor,
                "Cross-attention weights — [H, Q_seq, K_seq] or [batch, H, Q_seq, K_seq]."),
       def::out("q_labels", DataType::kList, "Pass-through of the query labels for downstream viz."),
       def::out("k_labels", DataType::kList, "Pass-through of the context labels for downstream viz.")},
      {def::integer("embed_dim", 8, "Token dimension. Both query and context must use this same dim.", 1),
       def::integer("num_heads", 2, "Number of parallel attention heads. Must divide embed_dim.", 1),
       def::integer("seed", 42, "Seed for the W_q/W_k/W_v/W_o initialisation.")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const std::string node = "EduCrossAttention";
    const int64_t embed_dim = ctx.param_int("embed_dim");
    const int64_t heads = heads_param(ctx, embed_dim, node), head_dim = embed_dim / heads;
    const Tensor q_in = attention_input(ctx, "query", node, embed_dim, "query");
    const Tensor c_in = attention_input(ctx, "context", node, embed_dim, "context");
    const bool both2 = q_in.dim() == 2 && c_in.dim() == 2, both3 = q_in.dim() == 3 && c_in.dim() == 3;
    if (!both2 && !both3)
      NodeContext::fail_input("context", node + ": query and context must both be 2D or both be 3D, got query.shape=" +
                                             tuple_text(q_in.sizes()) + ", context.shape=" + tuple_text(c_in.sizes()) +
                                             ".");
    if (both3 && q_in.size(1) != c_in.size(1))
      NodeContext::fail_input("context", node + ": context batch " + std::to_string(c_in.size(1)) + " (shape " +
                                             shape_text(c_in.sizes()) + ") must match the query batch " +
                                             std::to_string(q_in.size(1)) + " (shape " + shape_text(q_in.sizes()) +
                                             ")");
    const bool squeeze = both2;
    const Tensor q_bf = squeeze ? q_in.unsqueeze(0) : q_in.transpose(0, 1);
    const Tensor c_bf = squeeze ? c_in.unsqueeze(0) : c_in.transpose(0, 1);
    const int64_t B = q_bf.size(0), Q_seq = q_bf.size(1), K_seq = c_bf.size(1);
    limit_input("context", c_in, static_cast<double>(B) * heads * Q_seq * K_seq,
                "attention weights [batch, H, Q_seq, K_seq]");
    Tensor mask;
    if (ctx.has_input("mask"))
      mask = mask_input(ctx, Q_seq, K_seq, node,
                        "(Q_seq=" + std::to_string(Q_seq) + ", K_seq=" + std::to_string(K_seq) + ")");

    std::shared_ptr<layer_node::LayerModule> holder;
    AttentionProjImpl& m = kept_projections(ctx, embed_dim, true, holder, q_in);
    torch::NoGradGuard no_grad;
    const auto split = [&](const Tensor& t, int64_t seq) { return t.view({B, seq, heads, head_dim}).transpose(1, 2); };
    const Tensor Q = split(m.w_q->forward(q_bf), Q_seq), K = split(m.w_k->forward(c_bf), K_seq),
                 V = split(m.w_v->forward(c_bf), K_seq);
    Tensor scores = torch::matmul(Q, K.transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim));
    if (mask.defined())
      scores = scores.masked_fill(mask.to(scores.device()).unsqueeze(0).unsqueeze(0),
                                  -std::numeric_limits<double>::infinity());
    const Tensor weights = torch::nan_to_num(torch::softmax(scores, -1), 0.0);
    const Tensor attended = torch::matmul(weights, V).transpose(1, 2).contiguous().view({B, Q_seq, embed_dim});
    const Tensor out_bf = m.w_o->forward(attended);
    const Tensor output = squeeze ? out_bf.squeeze(0) : out_bf.transpose(0, 1);
    const Tensor weights_out = squeeze ? weights.squeeze(0) : weights;

    StepRecorder rec(ctx);
    const auto un = [&](const Tensor& t) { return squeeze ? t.squeeze(0) : t; };
    const std::string b = std::to_string(B), dim = std::to_string(embed_dim);
    rec.record("input",
               "Query [Q_seq=" + std::to_string(Q_seq) + ", B=" + b + ", D=" + dim +
                   "], context [K_seq=" + std::to_string(K_seq) + ", B=" + b + ", D=" + dim + "]",
               {{"query", q_in}, {"context", c_in}});
    rec.record("compute_qkv", "Project Q from query, K and V from context — note the asymmetric source.",
               {{"Q", un(Q)}, {"K", un(K)}, {"V", un(V)}});
    rec.record("scaled_scores", "Scores: $S_h = Q_h K_h^T / \\sqrt{d_h}$ — rectangular [Q_seq × K_seq].",
               {{"scores", un(scores)}}, {{"head_dim", static_cast<double>(head_dim)}});
    rec.record("softmax_weights", "Per-head softmax over the K-axis.", {{"weights", weights_out}});
    rec.record("concat_and_project", "Concatenate heads, apply W_o.", {{"output", output}});
    ValueMap out{{"output", output},
                 {"weights", weights_out},
                 {"q_labels", list_through(ctx, "q_labels")},
                 {"k_labels", list_through(ctx, "k_labels")}};
    return rec.add_to(out);
  });
}

// ---------------------------------------------------------------------------
// RNN: Edu-RNNCell, Edu-LSTMCell.

/// Checks x_seq ([seq, input_size] or [N, seq, input_size]) and returns it batched.
Tensor sequence_input(const NodeContext& ctx, const std::string& node, int64_t input_size) {
  const Tensor x = float_in(ctx, "x_seq");
  if (x.dim() != 2 && x.dim() != 3)
    NodeContext::fail_input("x_seq", node + " expects x_seq of shape [seq, input_size] or [N, seq, input_size]; got " +
                                         shape_text(x.sizes()) + ".");
  if (x.size(-1) != input_size)
    NodeContext::fail_input("x_seq", node + ": x_seq last dim " + std::to_string(x.size(-1)) + " (shape " +
                                         shape_text(x.sizes()) +
                                         ") does not match input_size=" + std::to_string(input_size) + ".");
  return x.dim() == 3 ? x : x.unsqueeze(0);
}

/// An initial state [hidden] (broadcast over the batch) or [N, hidden]; zeros when absent.
Tensor initial_state(const NodeContext& ctx, const std::string& port, const std::string& node, int64_t n,
                     int64_t hidden, c10::Device device) {
  if (!ctx.has_input(port)) return torch::zeros({n, hidden}, torch::TensorOptions().device(device));
  const Tensor s = float_in(ctx, port).to(device);
  if (s.dim() == 1) {
    if (s.size(0) != hidden)
      NodeContext::fail_input(port, node + ": " + port + " has shape " + shape_text(s.sizes()) + ", expected [" +
                                        std::to_string(hidden) + "] (or [N, " + std::to_string(hidden) + "]).");
    return s.unsqueeze(0).expand({n, hidden}).contiguous();
  }
  if (s.dim() == 2) {
    if (s.size(0) != n || s.size(1) != hidden)
      NodeContext::fail_input(port, node + ": " + port + " has shape " + shape_text(s.sizes()) + ", expected [" +
                                        std::to_string(n) + ", " + std::to_string(hidden) +
                                        "] to match x_seq's batch.");
    return s.clone();
  }
  NodeContext::fail_input(
      port, node + ": " + port + " must be 1-D [hidden] or 2-D [N, hidden]; got shape " + shape_text(s.sizes()) + ".");
}

int64_t positive_param(const NodeContext& ctx, const std::string& name, const std::string& node) {
  const int64_t v = ctx.param_int(name);
  if (v < 1) NodeContext::fail_param(name, node + ": " + name + " must be >= 1; got " + std::to_string(v));
  return v;
}

/// How many timesteps a verbose recurrent-cell run records.
constexpr int64_t kMaxTimestepSteps = 6;

void register_rnn_cell(NodeRegistry& r) {
  graph::NodeDef d{
      "deep:Edu-RNNCell",
      "RNN",
      "A vanilla RNN unrolled over time. Computes h_t = activation(W_ih·x_t + b_ih + W_hh·h_{t-1} + b_hh) one "
      "timestep at a time, exposing the input contribution (Wx) and the memory contribution (Wh) separately so "
      "students see the hidden state blend new input with past state. Weights are deterministic from a seed and "
      "share nn.RNNCell's layout, so the unroll matches PyTorch exactly.",
      {def::in("x_seq", DataType::kTensor,
               "Input sequence of shape [seq, input_size], or a batch [N, seq, input_size] looped one sequence at a "
               "time."),
       def::in("h0", DataType::kTensor,
               "Optional initial hidden state [hidden_size] (or [N, hidden_size] for a batch). Defaults to zeros.",
               true)},
      {def::out("h_seq", DataType::kTensor,
                "All hidden states, [seq, hidden] for 2-D input or [N, seq, hidden] for 3-D input."),
       def::out("h_last", DataType::kTensor,
                "Final hidden state, [hidden] for 2-D input or [N, hidden] for 3-D input."),
       def::out("weights", DataType::kTensor,
                "Input-to-hidden weight W_ih [hidden, input], display-only so the lesson can inspect the "
                "learned/initialised parameters.")},
      {def::integer("input_size", 4, "Dimension of each input vector x_t. Must match x_seq's last dim.", 1),
       def::integer("hidden_size", 8, "Dimension of the hidden state h_t.", 1),
       def::select("activation", "tanh", {"tanh", "relu"},
                   "Nonlinearity applied to the pre-activation sum (matches nn.RNNCell's nonlinearity)."),
       def::integer("seed", 0, "Seed for the deterministic W_ih/W_hh/b_ih/b_hh initialisation (randn * 0.1).")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const std::string node = "EduRNNCell";
    const int64_t input_size = positive_param(ctx, "input_size", node);
    const int64_t hidden = positive_param(ctx, "hidden_size", node);
    const std::string activation = ctx.param_string("activation");
    const Tensor x_b = sequence_input(ctx, node, input_size);
    const bool batched = tensor_input(ctx, "x_seq").dim() == 3;
    if (activation != "tanh" && activation != "relu")
      NodeContext::fail_param("activation",
                              node + ": unknown activation '" + activation + "'; expected 'tanh' or 'relu'.");
    limit_param("hidden_size", static_cast<double>(hidden) * (input_size + hidden + 2), "the weights");
    const int64_t N = x_b.size(0), seq = x_b.size(1);
    limit_input("x_seq", x_b, static_cast<double>(N) * seq * hidden, "hidden states [N, seq, hidden]");
    const Tensor h0 = initial_state(ctx, "h0", node, N, hidden, x_b.device());

    // nn.RNNCell's layout, drawn in this order from the node's own generator.
    at::Generator gen = seeded(ctx.param_int("seed"));
    const Tensor W_ih = torch::randn({hidden, input_size}, gen) * 0.1;
    const Tensor W_hh = torch::randn({hidden, hidden}, gen) * 0.1;
    const Tensor b_ih = torch::randn({hidden}, gen) * 0.1;
    const Tensor b_hh = torch::randn({hidden}, gen) * 0.1;
    // Used on the input's device; the weights output stays as drawn.
    const Tensor w_ih_t = W_ih.to(x_b.device()).t(), w_hh_t = W_hh.to(x_b.device()).t(), bias_i = b_ih.to(x_b.device()),
                 bias_h = b_hh.to(x_b.device());

    StepRecorder rec(ctx);
    const std::set<int64_t> recorded = rec.on() ? sampled_indices(seq, kMaxTimestepSteps) : std::set<int64_t>{};
    Tensor h_seq_b = torch::empty({N, seq, hidden}, torch::TensorOptions().device(x_b.device()));
    Tensor h_prev = h0;
    for (int64_t t = 0; t < seq; ++t) {
      const Tensor x_t = x_b.select(1, t);
      const Tensor Wx = torch::matmul(x_t, w_ih_t) + bias_i;     // what the current input injects
      const Tensor Wh = torch::matmul(h_prev, w_hh_t) + bias_h;  // what the memory carries
      const Tensor h_t = activation == "tanh" ? torch::tanh(Wx + Wh) : torch::relu(Wx + Wh);
      h_seq_b.select(1, t).copy_(h_t);
      if (recorded.count(t))
        rec.record("t=" + std::to_string(t),
                   "Timestep " + std::to_string(t) + ": h_" + std::to_string(t) + " = " + activation +
                       "(W_ih·x_t + b_ih + W_hh·h_{prev} + b_hh). Wx is the input's contribution, Wh the memory's.",
                   {{"x_t", x_t[0]}, {"Wx", Wx[0]}, {"Wh", Wh[0]}, {"h_t", h_t[0]}});
      h_prev = h_t;
    }
    const Tensor h_seq = batched ? h_seq_b : h_seq_b.squeeze(0);
    const Tensor h_last = batched ? h_prev : h_prev.squeeze(0);
    rec.record("h_seq",
               "Stacked hidden states over all " + std::to_string(seq) + " timesteps, shape " +
                   tuple_text(h_seq.sizes()) + ".",
               {{"h_seq", h_seq}}, {{"seq", static_cast<double>(seq)}, {"hidden_size", static_cast<double>(hidden)}});
    ValueMap out{{"h_seq", h_seq}, {"h_last", h_last}, {"weights", W_ih}};
    return rec.add_to(out);
  });
}

void register_lstm_cell(NodeRegistry& r) {
  graph::NodeDef d{
      "deep:Edu-LSTMCell",
      "RNN",
      "An LSTM cell unrolled over time. Computes the forget/input/output gates and candidate (f, i, g, o), then c_t = "
      "f⊙c_{t-1} + i⊙g and h_t = o⊙tanh(c_t) at every step. Uses PyTorch's fused weight_ih/weight_hh/bias_ih/bias_hh "
      "convention (gate order i,f,g,o) so it matches torch.nn.LSTMCell exactly, and exposes the four gates and the "
      "cell state per timestep in verbose mode.",
      {def::in("x_seq", DataType::kTensor, "Input sequence, shape [seq, input_size] or [N, seq, input_size]."),
       def::in("h0", DataType::kTensor,
               "Optional initial hidden state, [hidden_size] or [N, hidden_size]. Defaults to zeros.", true),
       def::in("c0", DataType::kTensor,
               "Optional initial cell state, [hidden_size] or [N, hidden_size]. Defaults to zeros.", true)},
      {def::out("h_seq", DataType::kTensor, "All hidden states stacked over time — [seq, hidden] or [N, seq, hidden]."),
       def::out("h_last", DataType::kTensor, "Hidden state after the final timestep — [hidden] or [N, hidden]."),
       def::out("c_last", DataType::kTensor, "Cell state after the final timestep — [hidden] or [N, hidden]."),
       def::out("weight_ih", DataType::kTensor,
                "Fused input→gates weight [4*hidden, input] (gate order i,f,g,o). Sync into nn.LSTMCell."),
       def::out("weight_hh", DataType::kTensor,
                "Fused hidden→gates weight [4*hidden, hidden] (gate order i,f,g,o). Sync into nn.LSTMCell."),
       def::out("bias_ih", DataType::kTensor, "Input gate bias [4*hidden] (gate order i,f,g,o)."),
       def::out("bias_hh", DataType::kTensor, "Hidden gate bias [4*hidden] (gate order i,f,g,o).")},
      {def::integer("input_size", 4, "Dimension of each input vector x_t. Must match x_seq's last dim.", 1),
       def::integer("hidden_size", 8, "Dimension of the hidden / cell state H.", 1),
       def::integer("seed", 0, "Seed for the deterministic small-randn weight init. Same seed → same weights.")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const std::string node = "EduLSTMCell";
    const int64_t input_size = positive_param(ctx, "input_size", node);
    const int64_t H = positive_param(ctx, "hidden_size", node);
    const Tensor x_b = sequence_input(ctx, node, input_size);
    const bool batched = tensor_input(ctx, "x_seq").dim() == 3;
    const int64_t N = x_b.size(0), seq = x_b.size(1);
    if (seq == 0)
      NodeContext::fail_input(
          "x_seq", node + ": x_seq has zero timesteps (shape " + shape_text(tensor_input(ctx, "x_seq").sizes()) + ").");
    limit_param("hidden_size", 4.0 * static_cast<double>(H) * (input_size + H + 2), "the weights");
    limit_input("x_seq", x_b, static_cast<double>(N) * seq * H, "hidden states [N, seq, hidden]");
    Tensor h = initial_state(ctx, "h0", node, N, H, x_b.device());
    Tensor c = initial_state(ctx, "c0", node, N, H, x_b.device());

    // PyTorch's fused layout (gate order i, f, g, o), randn * 0.1 in this order.
    at::Generator gen = seeded(ctx.param_int("seed"));
    const Tensor weight_ih = torch::randn({4 * H, input_size}, gen) * 0.1;
    const Tensor weight_hh = torch::randn({4 * H, H}, gen) * 0.1;
    const Tensor bias_ih = torch::randn({4 * H}, gen) * 0.1;
    const Tensor bias_hh = torch::randn({4 * H}, gen) * 0.1;
    const Tensor w_ih = weight_ih.to(x_b.device()), w_hh = weight_hh.to(x_b.device()), b_ih = bias_ih.to(x_b.device()),
                 b_hh = bias_hh.to(x_b.device());

    StepRecorder rec(ctx);
    const std::set<int64_t> recorded = rec.on() ? sampled_indices(seq, kMaxTimestepSteps) : std::set<int64_t>{};
    const auto un = [&](const Tensor& t) { return batched ? t : t.squeeze(0); };
    std::vector<Tensor> h_states;
    using torch::indexing::Slice;
    for (int64_t t = 0; t < seq; ++t) {
      const Tensor x_t = x_b.select(1, t);
      const Tensor gates = torch::linear(x_t, w_ih, b_ih) + torch::linear(h, w_hh, b_hh);
      const Tensor i = torch::sigmoid(gates.index({Slice(), Slice(0, H)}));
      const Tensor f = torch::sigmoid(gates.index({Slice(), Slice(H, 2 * H)}));
      const Tensor g = torch::tanh(gates.index({Slice(), Slice(2 * H, 3 * H)}));
      const Tensor o = torch::sigmoid(gates.index({Slice(), Slice(3 * H, 4 * H)}));
      c = f * c + i * g;
      h = o * torch::tanh(c);
      h_states.push_back(h);
      if (recorded.count(t))
        rec.record(
            "timestep_" + std::to_string(t),
            "t=" + std::to_string(t) + ": gates i,f,g,o → c_t = f⊙c_{t-1} + i⊙g, h_t = o⊙tanh(c_t).",
            {{"x_t", un(x_t)}, {"i", un(i)}, {"f", un(f)}, {"g", un(g)}, {"o", un(o)}, {"c_t", un(c)}, {"h_t", un(h)}},
            {{"t", static_cast<double>(t)}});
    }
    const Tensor h_seq = un(torch::stack(h_states, 1)), h_last = un(h), c_last = un(c);
    rec.record("h_seq", "Stack every hidden state over time into h_seq.",
               {{"h_seq", h_seq}, {"h_last", h_last}, {"c_last", c_last}},
               {{"seq", static_cast<double>(seq)}, {"hidden_size", static_cast<double>(H)}});
    ValueMap out{{"h_seq", h_seq},         {"h_last", h_last},   {"c_last", c_last},  {"weight_ih", weight_ih},
                 {"weight_hh", weight_hh}, {"bias_ih", bias_ih}, {"bias_hh", bias_hh}};
    return rec.add_to(out);
  });
}

void register_attention_nodes(NodeRegistry& r) {
  register_self_attention(r);
  register_multi_head_attention(r);
  register_cross_attention(r);
}

void register_rnn_nodes(NodeRegistry& r) {
  register_rnn_cell(r);
  register_lstm_cell(r);
}

}  // namespace codefy::nodes::edu_deep
