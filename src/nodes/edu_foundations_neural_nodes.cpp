// The neural and text teaching nodes of CodefyUI's `foundations` plugin pack:
// Edu-FFN, Edu-SlidingWindow (a convolution kernel sliding over an image),
// Edu-TokenEmbedding and Edu-VectorSimilarity, with their intermediate
// tensors in verbose runs, computed as CodefyUI's plugin nodes compute them.
#include "nodes/edu_support.h"
#include "nodes/library.h"
#include "nodes/step_trace.h"
#include "nodes/tensor_checks.h"
#include "util/random.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace codefy::nodes {
namespace edu_foundations {
namespace {

using namespace edu;

// ---------------------------------------------------------------------------- Edu-FFN

void register_ffn(NodeRegistry& r) {
  r.add({"foundations:Edu-FFN",
         "LLM",
         "Linear, activation, linear; plus hidden activations",
         {def::in("tensor", DataType::kTensor, "Input of shape [..., embed_dim].")},
         {def::out("tensor", DataType::kTensor, "Output, same shape as input."),
          def::out("activations", DataType::kTensor,
                   "Post-activation hidden state of shape [..., hidden_dim] — useful for visualisation.")},
         {def::integer("embed_dim", 8, "Input/output dimension. Must match the upstream tensor's last dim.", 1),
          def::integer("hidden_dim", 16, "Hidden dimension (typically 4×embed_dim in production).", 1),
          def::select("activation", "relu", {"relu", "gelu"}, "Non-linearity between the two linear layers."),
          def::integer("seed", 42, "Seed for the linear-layer initialisation. Same seed → same weights.")}},
        [](NodeContext& ctx) {
          const int64_t embed_dim = ctx.param_int("embed_dim"), hidden_dim = ctx.param_int("hidden_dim");
          if (embed_dim < 1) bad_param("embed_dim", "must be >= 1; got " + num(embed_dim));
          if (hidden_dim < 1) bad_param("hidden_dim", "must be >= 1; got " + num(hidden_dim));
          if (static_cast<double>(embed_dim) * static_cast<double>(hidden_dim) > static_cast<double>(kMaxElements))
            bad_param("hidden_dim", "embed_dim x hidden_dim is more weights than a toy block needs (at most 2^28)");
          const Tensor x = edu_tensor(ctx, "tensor");
          if (x.dim() == 0) bad_input("tensor", "must have shape [..., embed_dim]; got a 0-d tensor");
          if (x.size(-1) != embed_dim)
            bad_input("tensor", "last dim " + num(x.size(-1)) + " of shape " + shape_of(x) +
                                    " does not match embed_dim=" + num(embed_dim));
          const int64_t positions = x.numel() / embed_dim;  // exact: the last dim is embed_dim (>= 1)
          if (static_cast<double>(positions) * static_cast<double>(hidden_dim) > static_cast<double>(kMaxElements))
            bad_param("hidden_dim", "hidden activations of " + num(positions) + " positions x hidden_dim " +
                                        num(hidden_dim) + " for input " + shape_of(x) + " are too many (at most 2^28)");
          const std::string activation = ctx.param_string("activation");
          if (activation != "relu" && activation != "gelu")
            bad_param("activation", "unknown activation '" + activation + "' (relu or gelu)");
          // Both layers drawn from one generator seeded `seed`: fc1's weight
          // [hidden, embed] first, then fc2's [embed, hidden], each scaled by
          // 1/sqrt(fan_in); biases zero.
          at::Generator gen = at::detail::createCPUGenerator(static_cast<uint64_t>(ctx.param_int("seed")));
          const auto scale = [](int64_t fan_in) {
            return 1.0 / std::pow(static_cast<double>(std::max<int64_t>(1, fan_in)), 0.5);
          };
          const Tensor w1 =
              (torch::randn({hidden_dim, embed_dim}, gen, torch::kFloat32) * scale(embed_dim)).to(x.device());
          const Tensor w2 =
              (torch::randn({embed_dim, hidden_dim}, gen, torch::kFloat32) * scale(hidden_dim)).to(x.device());
          const Tensor b1 = torch::zeros({hidden_dim}, x.options()), b2 = torch::zeros({embed_dim}, x.options());
          const Tensor hidden = torch::linear(x, w1, b1);
          const Tensor activations = activation == "relu" ? torch::relu(hidden) : torch::gelu(hidden);
          const Tensor y = torch::linear(activations, w2, b2);
          StepRecorder rec(ctx);
          rec.record("input", "Input of shape " + shape_of(x) + ".", {{"tensor", x}});
          rec.record("linear1", "Project to hidden space: x @ W1.T + b1, hidden dim = " + num(hidden_dim) + ".",
                     {{"hidden", hidden}});
          rec.record("activation", "Apply " + activation + " non-linearity element-wise.",
                     {{"activations", activations}});
          rec.record("linear2", "Project back to embed_dim: a @ W2.T + b2.", {{"output", y}});
          ValueMap out{{"tensor", y}, {"activations", activations}};
          return rec.add_to(out);
        });
}

// ---------------------------------------------------------------------------- Edu-SlidingWindow

/// The 3x3 kernels of the kernel_preset param.
Tensor preset_kernel(const std::string& name) {
  const float ninth = 1.0f / 9.0f;
  const std::map<std::string, std::vector<float>> presets{
      {"identity", {0, 0, 0, 0, 1, 0, 0, 0, 0}},
      {"edge", {0, -1, 0, -1, 4, -1, 0, -1, 0}},
      {"sharpen", {0, -1, 0, -1, 5, -1, 0, -1, 0}},
      {"blur", {ninth, ninth, ninth, ninth, ninth, ninth, ninth, ninth, ninth}},
      {"sobel_x", {-1, 0, 1, -2, 0, 2, -1, 0, 1}},
      {"sobel_y", {-1, -2, -1, 0, 0, 0, 1, 2, 1}}};
  const auto it = presets.find(name);
  if (it == presets.end())
    bad_param("kernel_preset", "unknown kernel_preset '" + name +
                                   "'. Choose one of ['blur', 'edge', 'identity', 'sharpen', 'sobel_x', 'sobel_y'].");
  return torch::tensor(it->second).reshape({3, 3});
}

/// At most this many window positions are recorded in a verbose run, sampled evenly.
constexpr int64_t kMaxPositionSteps = 9;

void register_sliding_window(NodeRegistry& r) {
  r.add({"foundations:Edu-SlidingWindow",
         "Vision",
         "Hand-written convolution sliding window over one 2-D grayscale image. Zero-pads, then for every output "
         "position extracts the receptive field, multiplies elementwise by the kernel, and sums to one feature-map "
         "cell. Verbose mode records the patch, the product, and the summed value for each position (sampled if "
         "there are many).",
         {def::in("image", DataType::kTensor,
                  "2-D grayscale image [H, W]. A 3-D [1,H,W] or [C,H,W] tensor is auto-reduced to channel 0."),
          def::in("kernel", DataType::kTensor,
                  "Optional 2-D kernel [kH, kW]. If supplied it overrides the kernel_preset param.", true)},
         {def::out("feature_map", DataType::kTensor,
                   "Convolved output [Hout, Wout]; each cell is one window·kernel sum."),
          def::out("kernel", DataType::kTensor,
                   "The kernel actually used (preset or input), so the lesson can display it."),
          def::out("windows", DataType::kTensor,
                   "Stacked receptive fields [Hout*Wout, kH, kW] in row-major order — display-only, for inspecting "
                   "every patch.")},
         {def::select("kernel_preset", "edge", {"identity", "edge", "sharpen", "blur", "sobel_x", "sobel_y"},
                      "Built-in 3x3 kernel to slide. identity copies the centre pixel; edge is the Laplacian; blur is "
                      "a 3x3 mean; sobel_x / sobel_y are gradient filters. Ignored if a `kernel` input is connected."),
          def::integer("stride", 1, "Step (in pixels) between consecutive window positions.", 1),
          def::integer("padding", 0, "Number of zero pixels added on every side before sliding.", 0)}},
        [](NodeContext& ctx) {
          Tensor image = cpu_tensor(ctx, "image");
          std::string reduced_note;
          if (image.dim() == 3) {
            reduced_note = "Reduced 3-D image " + shape_of(image) + " to 2-D by taking channel 0.";
            image = image[0];
          }
          if (image.dim() != 2)
            bad_input("image",
                      "must be a 2-D image [H, W] (or 3-D [C, H, W] to auto-reduce); got shape " + shape_of(image));
          const std::string preset = ctx.param_string("kernel_preset");
          const bool kernel_given = ctx.has_input("kernel");
          const Tensor kernel = kernel_given ? cpu_tensor(ctx, "kernel") : preset_kernel(preset);
          const std::string kernel_source = kernel_given ? "input" : "preset:" + preset;
          if (kernel.dim() != 2) bad_input("kernel", "must be a 2-D kernel [kH, kW]; got shape " + shape_of(kernel));
          const int64_t kh = kernel.size(0), kw = kernel.size(1);
          if (kh < 1 || kw < 1) bad_input("kernel", "must be non-empty; got " + num(kh) + "x" + num(kw));
          const int64_t stride = ctx.param_int("stride"), padding = ctx.param_int("padding");
          if (stride < 1) bad_param("stride", "must be >= 1; got " + num(stride));
          if (padding < 0) bad_param("padding", "must be >= 0; got " + num(padding));
          const double padded_elements =
              static_cast<double>(image.size(0) + 2 * padding) * static_cast<double>(image.size(1) + 2 * padding);
          if (padding > kMaxElements || padded_elements > static_cast<double>(kMaxElements))
            bad_param("padding", "padding " + num(padding) + " makes the image " + shape_of(image) + " too large");
          const Tensor padded =
              padding > 0 ? torch::constant_pad_nd(image, {padding, padding, padding, padding}, 0.0) : image;
          const int64_t h_pad = padded.size(0), w_pad = padded.size(1);
          if (kh > h_pad || kw > w_pad)
            bad_input(kernel_given ? "kernel" : "image",
                      "kernel " + num(kh) + "x" + num(kw) + " does not fit in the padded image " + num(h_pad) + "x" +
                          num(w_pad) + " (original " + shape_of(image) + ", padding=" + num(padding) +
                          "). Reduce the kernel or increase padding.");
          const int64_t h_out = (h_pad - kh) / stride + 1, w_out = (w_pad - kw) / stride + 1;
          const int64_t positions = h_out * w_out;
          if (static_cast<double>(positions) * static_cast<double>(kh * kw) > static_cast<double>(kMaxElements))
            bad_input("image", "image " + shape_of(image) + " with a " + num(kh) + "x" + num(kw) + " kernel has " +
                                   num(positions) + " windows, too many to stack (at most 2^28 values)");
          // Every receptive field, row-major: padded[r*stride : r*stride+kH, c*stride : c*stride+kW].
          const Tensor windows =
              padded.unfold(0, kh, stride).unfold(1, kw, stride).reshape({positions, kh, kw}).contiguous();
          const Tensor products = windows * kernel;
          const Tensor values = products.flatten(1).sum(-1);
          const Tensor feature_map = values.reshape({h_out, w_out});
          StepRecorder rec(ctx);
          if (rec.on()) {
            rec.record(
                "kernel",
                "Kernel actually used (" + kernel_source + ")." + (reduced_note.empty() ? "" : " " + reduced_note),
                {{"kernel", kernel}},
                {{"preset", preset},
                 {"kernel_source", kernel_source},
                 {"kH", static_cast<double>(kh)},
                 {"kW", static_cast<double>(kw)},
                 {"stride", static_cast<double>(stride)},
                 {"padding", static_cast<double>(padding)}});
            std::set<int64_t> sampled;
            std::string note;
            if (positions <= kMaxPositionSteps) {
              for (int64_t p = 0; p < positions; ++p) sampled.insert(p);
            } else {
              for (int64_t i = 0; i < kMaxPositionSteps; ++i)
                sampled.insert(i * (positions - 1) / (kMaxPositionSteps - 1));
              note = " (showing " + num(kMaxPositionSteps) + " of " + num(positions) + " positions, sampled evenly)";
            }
            for (int64_t p : sampled) {
              const int64_t out_r = p / w_out, out_c = p % w_out, r0 = out_r * stride, c0 = out_c * stride;
              const Tensor value = values[p];
              rec.record("pos_r" + num(out_r) + "_c" + num(out_c),
                         "Window at output (" + num(out_r) + ", " + num(out_c) + ") = padded image rows " + num(r0) +
                             ":" + num(r0 + kh) + ", cols " + num(c0) + ":" + num(c0 + kw) +
                             ". value = sum(receptive_field * kernel)." + note,
                         {{"receptive_field", windows[p]}, {"product", products[p]}, {"value", value}},
                         {{"out_r", static_cast<double>(out_r)},
                          {"out_c", static_cast<double>(out_c)},
                          {"value", static_cast<double>(value.item<float>())}});
            }
            rec.record("feature_map",
                       "Assembled feature map [" + num(h_out) + " x " + num(w_out) + "] from every window sum.",
                       {{"feature_map", feature_map}},
                       {{"Hout", static_cast<double>(h_out)}, {"Wout", static_cast<double>(w_out)}});
          }
          ValueMap out{{"feature_map", feature_map}, {"kernel", kernel}, {"windows", windows}};
          return rec.add_to(out);
        });
}

// ---------------------------------------------------------------------------- Edu-TokenEmbedding

/// 32-bit FNV-1a of the UTF-8 bytes, mod `mod`: a hash that is the same in every process.
int64_t fnv1a(const std::string& s, int64_t mod) {
  return static_cast<int64_t>(util::fnv1a32(s) % static_cast<uint64_t>(mod));
}

/// Python's str() of one list item.
std::string item_text(const json& x) {
  if (x.is_string()) return x.get<std::string>();
  if (x.is_boolean()) return x.get<bool>() ? "True" : "False";
  if (x.is_number()) return python_number(x);
  if (x.is_null()) return "None";
  return x.dump();
}

/// The items of LIST input `port`: a list, or a 1-D tensor's values.
std::vector<json> list_items(const NodeContext& ctx, const std::string& port) {
  const Value& v = ctx.input(port);
  if (const auto* t = std::get_if<Tensor>(&v)) {
    if (t->dim() > 1) bad_input(port, "must be a list or a 1-D tensor; got shape " + shape_of(*t));
    const json values = list_value(ctx, port);
    return {values.begin(), values.end()};
  }
  const auto* j = std::get_if<json>(&v);
  if (!j || !j->is_array()) bad_input(port, std::string("must be a list; got ") + value_kind(v));
  return {j->begin(), j->end()};
}

/// Python's int() of a token id.
int64_t item_id(const std::string& port, const json& x) {
  if (x.is_number_integer()) return x.get<int64_t>();
  if (x.is_number()) return static_cast<int64_t>(std::trunc(x.get<double>()));
  if (x.is_boolean()) return x.get<bool>() ? 1 : 0;
  if (x.is_string()) {
    const std::string s = x.get<std::string>();
    size_t used = 0;
    try {
      const int64_t id = std::stoll(s, &used);
      while (used < s.size() && std::isspace(static_cast<unsigned char>(s[used]))) ++used;
      if (used == s.size()) return id;
    } catch (const std::exception&) {
    }
  }
  bad_input(port, "token ids must be whole numbers; got " + x.dump());
}

void register_token_embedding(NodeRegistry& r) {
  r.add(
      {"foundations:Edu-TokenEmbedding",
       "LLM",
       "Tokens to vectors from a seeded lookup table",
       {def::in("tokens", DataType::kList, "List of token strings. Optional if `token_ids` is connected.", true),
        def::in("token_ids", DataType::kList,
                "List of integer token IDs (e.g. from Tokenizer). Optional if `tokens` is connected.", true)},
       {def::out("embeddings", DataType::kTensor, "Float32 tensor of shape [seq, embed_dim]."),
        def::out("vocab", DataType::kList,
                 "Unique tokens used in this run, in row-id order (ordinal mode) or as observed (hash mode).")},
       {def::integer("embed_dim", 8, "Dimension of each embedding vector. Keep small (≤16) for inline visualisation.",
                     1),
        def::integer("vocab_size", 32, "Size of the embedding table. `hash` mode wraps any token id mod this size.", 1),
        def::integer("seed", 42, "Seed for the embedding-table initialisation. Same seed → same vectors."),
        def::select("mode", "hash", {"hash", "ordinal"},
                    "hash: stable hash(token) mod vocab_size. ordinal: assign row IDs by first-appearance order in "
                    "this run.")}},
      [](NodeContext& ctx) {
        const bool has_tokens = ctx.has_input("tokens"), has_ids = ctx.has_input("token_ids");
        if (!has_tokens && !has_ids) bad_input("tokens", "connect either `tokens` or `token_ids`");
        const int64_t embed_dim = std::max<int64_t>(1, ctx.param_int("embed_dim"));
        const int64_t vocab_size = std::max<int64_t>(1, ctx.param_int("vocab_size"));
        if (static_cast<double>(embed_dim) * static_cast<double>(vocab_size) > static_cast<double>(kMaxElements))
          bad_param("vocab_size", "vocab_size x embed_dim is too large a table for a toy embedding (at most 2^28)");
        const std::string mode = ctx.param_string("mode");
        if (mode != "hash" && mode != "ordinal") bad_param("mode", "unknown mode '" + mode + "'");
        // (label, id or none) per position: labels from `tokens`, ids from `token_ids`.
        std::vector<std::pair<std::string, std::optional<int64_t>>> seq;
        if (has_tokens && has_ids) {
          const auto t = list_items(ctx, "tokens"), i = list_items(ctx, "token_ids");
          for (size_t k = 0; k < std::min(t.size(), i.size()); ++k)
            seq.emplace_back(item_text(t[k]), item_id("token_ids", i[k]));
        } else if (has_tokens) {
          for (const auto& t : list_items(ctx, "tokens")) seq.emplace_back(item_text(t), std::nullopt);
        } else {
          for (const auto& i : list_items(ctx, "token_ids")) {
            const int64_t id = item_id("token_ids", i);
            seq.emplace_back("<id:" + num(id) + ">", id);
          }
        }
        if (static_cast<double>(seq.size()) * static_cast<double>(embed_dim) > static_cast<double>(kMaxElements))
          bad_input(has_tokens ? "tokens" : "token_ids", num(static_cast<int64_t>(seq.size())) +
                                                             " tokens x embed_dim " + num(embed_dim) +
                                                             " are too many embedding values (at most 2^28)");
        at::Generator gen = at::detail::createCPUGenerator(static_cast<uint64_t>(ctx.param_int("seed")));
        const Tensor table = torch::randn({vocab_size, embed_dim}, gen, torch::kFloat32) *
                             (1.0 / std::sqrt(static_cast<double>(embed_dim)));
        std::vector<int64_t> ids;
        std::vector<std::string> vocab;
        std::map<std::string, int64_t> ordinal;
        for (const auto& [label, raw] : seq) {
          if (mode == "hash") {
            // Python's % is never negative for a positive modulus.
            ids.push_back(raw ? ((*raw % vocab_size) + vocab_size) % vocab_size : fnv1a(label, vocab_size));
            if (std::find(vocab.begin(), vocab.end(), label) == vocab.end()) vocab.push_back(label);
          } else {
            auto it = ordinal.find(label);
            if (it == ordinal.end()) {
              it = ordinal.emplace(label, static_cast<int64_t>(ordinal.size()) % vocab_size).first;
              vocab.push_back(label);
            }
            ids.push_back(it->second);
          }
        }
        const Tensor embeddings =
            ids.empty() ? torch::zeros({0, embed_dim}) : table.index_select(0, torch::tensor(ids, torch::kInt64));
        StepRecorder rec(ctx);
        rec.record("input_tokens",
                   "Resolve " + num(static_cast<int64_t>(ids.size())) + " input position(s) using mode='" + mode + "'.",
                   {},
                   {{"seq_len", static_cast<double>(ids.size())},
                    {"embed_dim", static_cast<double>(embed_dim)},
                    {"vocab_size", static_cast<double>(vocab_size)}});
        rec.record("embedding_table", "Seeded random table of shape (" + num(vocab_size) + ", " + num(embed_dim) + ").",
                   {{"table", table}});
        rec.record("lookup", "Gather rows: embeddings[i] = table[row_id(token_i)].", {{"embeddings", embeddings}});
        ValueMap out{{"embeddings", embeddings}, {"vocab", to_list(vocab)}};
        return rec.add_to(out);
      });
}

// ---------------------------------------------------------------------------- Edu-VectorSimilarity

void register_vector_similarity(NodeRegistry& r) {
  r.add(
      {"foundations:Edu-VectorSimilarity",
       "Data",
       "Pairwise query/key similarity exposed as: raw dot products q·k → L2 norms ||q|| and ||k|| → cosine = dot / "
       "(||q||·||k||) (or raw dot). Outputs the [N, M] similarity matrix for direct heatmap visualisation, and "
       "records each intermediate in verbose mode.",
       {def::in("query", DataType::kTensor, "Query vector(s), shape [D] or [N, D]. A 1-D query becomes N=1."),
        def::in("keys", DataType::kTensor, "Key vectors, shape [M, D]. Each row is one key to score against.")},
       {def::out("similarity", DataType::kTensor,
                 "Pairwise similarity, shape [N, M] (a 1-D query yields [1, M]). Ready for a heatmap."),
        def::out("query_norms", DataType::kTensor, "L2 norm of each query row, shape [N]. Returned for both metrics."),
        def::out("key_norms", DataType::kTensor, "L2 norm of each key row, shape [M]. Returned for both metrics.")},
       {def::select("metric", "cosine", {"cosine", "dot"},
                    "'cosine' divides the dot product by the product of the two vectors' lengths (scale-invariant, "
                    "in [-1, 1]); 'dot' returns the raw inner product (grows with vector magnitude).")}},
      [](NodeContext& ctx) {
        Tensor query = edu_tensor(ctx, "query");
        const Tensor keys = edu_tensor(ctx, "keys");
        need_rank("keys", keys, 2, "[M, D]");
        if (query.dim() == 1)
          query = query.unsqueeze(0);
        else if (query.dim() != 2)
          bad_input("query", "must have shape [D] or [N, D]; got " + shape_of(query));
        const int64_t n = query.size(0), d = query.size(1), m = keys.size(0);
        if (keys.size(1) != d)
          bad_input("keys", "feature dim D=" + num(keys.size(1)) + " (shape " + shape_of(keys) +
                                ") does not match the query's D=" + num(d) + " (shape " + shape_of(query) + ")");
        if (static_cast<double>(n) * static_cast<double>(m) > static_cast<double>(kMaxElements))
          bad_input("keys", "[" + num(n) + " x " + num(m) + "] similarities are too many (at most 2^28)");
        const std::string metric = ctx.param_string("metric");
        if (metric != "cosine" && metric != "dot")
          bad_param("metric", "unknown metric '" + metric + "'; expected 'cosine' or 'dot'");
        StepRecorder rec(ctx);
        const Tensor raw_dot = query.matmul(keys.transpose(0, 1));
        const json sizes{{"N", static_cast<double>(n)}, {"M", static_cast<double>(m)}, {"D", static_cast<double>(d)}};
        rec.record("dot_products", "raw_dot[i, j] = q_i · k_j (every query against every key).",
                   {{"query", query}, {"keys", keys}, {"raw_dot", raw_dot}}, sizes);
        const Tensor query_norms = row_norms(query);
        const Tensor key_norms = row_norms(keys);
        rec.record("norms", "L2 norms: query_norms[i] = ||q_i||, key_norms[j] = ||k_j||.",
                   {{"query_norms", query_norms}, {"key_norms", key_norms}}, sizes);
        const Tensor similarity =
            metric == "cosine" ? raw_dot / (query_norms.unsqueeze(1) * key_norms.unsqueeze(0) + 1e-12) : raw_dot;
        rec.record("similarity",
                   metric == "cosine" ? "cosine = raw_dot / (||q_i|| · ||k_j||)"
                                      : "dot = raw_dot (unnormalised inner product)",
                   {{"similarity", similarity}}, {{"metric", metric == "cosine" ? 1.0 : 0.0}});
        ValueMap out{{"similarity", similarity}, {"query_norms", query_norms}, {"key_norms", key_norms}};
        return rec.add_to(out);
      });
}

}  // namespace

void register_neural_nodes(NodeRegistry& r) {
  register_ffn(r);
  register_sliding_window(r);
  register_token_embedding(r);
  register_vector_similarity(r);
}

}  // namespace edu_foundations
}  // namespace codefy::nodes
