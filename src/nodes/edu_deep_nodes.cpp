// The teaching nodes of CodefyUI's `deep` plugin pack (deep:Edu-*):
// convolution, attention, recurrent cells and diffusion steps written out
// step by step, with their intermediate tensors in verbose runs.
//
// Names, ports, params and step names are CodefyUI's. Weights are drawn as
// CodefyUI draws them: a generator of their own seeded from the node's
// `seed` param, in CodefyUI's order and scale, so the same seed gives
// PyTorch's numbers. The nodes CodefyUI builds through its stateful-module
// mixin (the three attention nodes and Edu-ResBlock) keep their module in
// the node state store between editor runs, as the layer nodes do.
#include "nodes/layer_node_support.h"
#include "nodes/library.h"
#include "nodes/step_trace.h"
#include "nodes/tensor_checks.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>

namespace codefy::nodes {

namespace edu_deep {

using graph::DataType;
using torch::Tensor;
namespace F = torch::nn::functional;

/// The most elements one tensor a teaching node makes may have (2^28 floats,
/// 1 GiB): far past a lesson, well below what would exhaust memory.
constexpr double kMaxElements = static_cast<double>(int64_t{1} << 28);

/// A count of elements as a whole number ("1099511627776").
std::string count_text(double count) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", count);
  return buf;
}

/// Refuses, blaming param `name`, when `count` elements are more than kMaxElements.
void limit_param(const std::string& name, double count, const std::string& what) {
  if (count > kMaxElements)
    NodeContext::fail_param(
        name, what + " would have " + count_text(count) + " elements, more than a teaching node allows (2^28)");
}
/// The same, blaming input `port` and naming its shape.
void limit_input(const std::string& port, const Tensor& t, double count, const std::string& what) {
  if (count > kMaxElements)
    NodeContext::fail_input(port, "shape " + shape_text(t.sizes()) + " would make " + what + " of " +
                                      count_text(count) + " elements, more than a teaching node allows (2^28)");
}

/// An input as float32, as CodefyUI's `.float()`.
Tensor float_in(const NodeContext& ctx, const std::string& port) { return tensor_input(ctx, port).to(torch::kFloat32); }

/// A generator of its own seeded `seed`, as `torch.Generator().manual_seed(seed)`.
at::Generator seeded(int64_t seed) { return at::detail::createCPUGenerator(static_cast<uint64_t>(seed)); }

/// Python's tuple of a shape: "(2, 3)", "(4,)", "()".
std::string tuple_text(c10::IntArrayRef sizes) {
  std::string s = "(";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + (sizes.size() == 1 ? ",)" : ")");
}

/// Python's repr of a float (shortest text that reads back the same).
std::string py_float(double v) {
  char buf[40];
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*g", p, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eni") == std::string::npos) s += ".0";
  return s;
}

/// A step scalar: CodefyUI records every scalar as a float.
double f64(int64_t v) { return static_cast<double>(v); }

/// Python's round() of a non-negative double: halves go to the even neighbour.
int64_t py_round(double v) { return static_cast<int64_t>(std::nearbyint(v)); }

/// Up to `cap` indices in [0, n), evenly spaced with the first and last, as
/// CodefyUI samples the timesteps and windows it records.
std::set<int64_t> sampled_indices(int64_t n, int64_t cap) {
  std::set<int64_t> out;
  if (n <= cap) {
    for (int64_t i = 0; i < n; ++i) out.insert(i);
    return out;
  }
  for (int64_t k = 0; k < cap; ++k)
    out.insert(py_round(static_cast<double>(k) * static_cast<double>(n - 1) / static_cast<double>(cap - 1)));
  return out;
}

/// A LIST input passed through (CodefyUI's `list(inputs.get(name) or [])`).
nlohmann::json list_through(const NodeContext& ctx, const std::string& port) {
  if (!ctx.has_input(port)) return nlohmann::json::array();
  const Value& v = ctx.input(port);
  if (const auto* j = std::get_if<nlohmann::json>(&v)) {
    if (j->is_array()) return *j;
    if (j->is_null()) return nlohmann::json::array();
  }
  if (const auto* t = std::get_if<Tensor>(&v)) {
    nlohmann::json out = nlohmann::json::array();
    const Tensor flat = t->detach().to(torch::kCPU).to(torch::kFloat64).reshape({-1});
    for (int64_t i = 0; i < flat.numel(); ++i) out.push_back(flat[i].item<double>());
    return out;
  }
  return ctx.input_as<nlohmann::json>(port);  // refuses other kinds, naming the port
}

/// A [seq, seq] (or [q, k]) boolean mask input; True blocks a position.
Tensor mask_input(const NodeContext& ctx, int64_t rows, int64_t cols, const std::string& node,
                  const std::string& expected) {
  const Tensor m = tensor_input(ctx, "mask").to(torch::kBool);
  if (m.dim() != 2 || m.size(0) != rows || m.size(1) != cols)
    NodeContext::fail_input("mask", node + ": mask shape " + shape_text(m.sizes()) + " doesn't match " + expected);
  return m;
}

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

/// CodefyUI's diffusion residual block (the `_ResBlockModule` its
/// Edu-ResBlock builds): SiLU(GroupNorm) -> Conv3x3 -> (+ time projection) ->
/// SiLU(GroupNorm) -> Conv3x3, plus the skip (1x1 conv when the channels
/// change). Conv and linear weights = randn * 1/sqrt(in_channels), drawn in
/// the order conv1, conv2, time_proj, skip; biases zero.
class EduResBlockImpl : public torch::nn::Module {
 public:
  EduResBlockImpl(int64_t in_channels, int64_t out_channels, int64_t groups, int64_t time_emb_dim, int64_t seed) {
    namespace nn = torch::nn;
    norm1 = register_module("norm1", nn::GroupNorm(groups, in_channels));
    conv1 = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(in_channels, out_channels, 3).padding(1)));
    if (time_emb_dim > 0) time_proj = register_module("time_proj", nn::Linear(time_emb_dim, out_channels));
    norm2 = register_module("norm2", nn::GroupNorm(groups, out_channels));
    conv2 = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(out_channels, out_channels, 3).padding(1)));
    if (in_channels != out_channels) skip = register_module("skip", nn::Conv2d(in_channels, out_channels, 1));
    at::Generator gen = seeded(seed);
    const double scale = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(in_channels, 1)));
    torch::NoGradGuard no_grad;
    const auto fill = [&](Tensor& w, Tensor& b) {
      w.copy_(torch::randn(w.sizes(), gen) * scale);
      b.zero_();
    };
    fill(conv1->weight, conv1->bias);
    fill(conv2->weight, conv2->bias);
    if (time_proj) fill(time_proj->weight, time_proj->bias);
    if (skip) fill(skip->weight, skip->bias);
  }
  Tensor forward(const Tensor& x, const Tensor& time_emb) {
    Tensor h = conv1->forward(F::silu(norm1->forward(x)));
    if (time_emb.defined() && time_proj) h = h + time_proj->forward(time_emb).unsqueeze(-1).unsqueeze(-1);
    h = conv2->forward(F::silu(norm2->forward(h)));
    return h + (skip ? skip->forward(x) : x);
  }
  torch::nn::GroupNorm norm1{nullptr}, norm2{nullptr};
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, skip{nullptr};
  torch::nn::Linear time_proj{nullptr};
};
TORCH_MODULE(EduResBlock);

/// A module as the node state store keeps it (see layer_node::kept_layer);
/// its one-tensor forward is never called by these nodes.
template <class Holder>
model::BuiltLayer as_built(Holder holder) {
  auto impl = holder.ptr();
  return {impl, [](const Tensor& x) { return x; }};
}

// ---------------------------------------------------------------------------
// CNN: Edu-Conv2d, Edu-MaxPool2d.

/// [C, H, W] gains a batch dimension; anything but 4-D then is refused.
Tensor image_4d(const NodeContext& ctx, const std::string& port, const std::string& node, const std::string& layout) {
  Tensor x = float_in(ctx, port);
  if (x.dim() == 3) x = x.unsqueeze(0);
  if (x.dim() != 4) NodeContext::fail_input(port, node + " expects " + layout + "; got shape " + shape_text(x.sizes()));
  return x;
}

void register_conv2d(NodeRegistry& r) {
  graph::NodeDef d{
      "deep:Edu-Conv2d",
      "CNN",
      "Multi-channel 2-D convolution unrolled as im2col → matmul → reshape. F.unfold lays every receptive field out "
      "as a column ([N, Cin·kH·kW, L]); the weight reshapes to a [Cout, Cin·kH·kW] matrix; one matmul (+bias) gives "
      "[N, Cout, L]; folding back yields the feature map [N, Cout, Hout, Wout]. Numerically identical to F.conv2d, "
      "but every intermediate is exposed in verbose mode.",
      {def::in("x", DataType::kTensor, "Input feature map [N, Cin, H, W] (or [Cin, H, W], a batch dim is added)."),
       def::in("weight", DataType::kTensor,
               "Conv weight [Cout, Cin, kH, kW]. Optional — if absent, random weights are drawn from the `seed` param.",
               true),
       def::in("bias", DataType::kTensor, "Optional per-output-channel bias [Cout].", true)},
      {def::out("y", DataType::kTensor, "Output feature map [N, Cout, Hout, Wout]."),
       def::out("cols", DataType::kTensor,
                "The im2col matrix [N, Cin·kH·kW, L] (display-only — the receptive fields laid out as columns)."),
       def::out("weight", DataType::kTensor,
                "The weight actually used [Cout, Cin, kH, kW] (the supplied one, or the freshly initialised random "
                "one).")},
      {def::integer("out_channels", 2,
                    "Number of output channels (Cout). Only used when no `weight` input is connected.", 1),
       def::integer("kernel_size", 3,
                    "Side length of the square kernel (kH = kW). Only used when no `weight` input is connected.", 1),
       def::integer("stride", 1, "Stride of the sliding window in both H and W.", 1),
       def::integer("padding", 0, "Zero-padding added to all four sides of the input before unfolding.", 0),
       def::integer("seed", 0, "Seed for the random weight initialisation when no `weight` is supplied.")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const Tensor x = image_4d(ctx, "x", "EduConv2d", "`x` of shape [N, Cin, H, W] (or [Cin, H, W])");
    const int64_t N = x.size(0), Cin = x.size(1), H = x.size(2), W = x.size(3);
    const int64_t stride = ctx.param_int("stride"), padding = ctx.param_int("padding");
    if (stride < 1) NodeContext::fail_param("stride", "EduConv2d: stride must be >= 1; got " + std::to_string(stride));
    if (padding < 0)
      NodeContext::fail_param("padding", "EduConv2d: padding must be >= 0; got " + std::to_string(padding));

    // The weight's shape first, so every size is checked before anything is drawn.
    Tensor weight;
    int64_t Cout, kH, kW;
    const bool given = ctx.has_input("weight");
    if (given) {
      weight = float_in(ctx, "weight");
      if (weight.dim() != 4)
        NodeContext::fail_input(
            "weight", "EduConv2d: `weight` must be 4-D [Cout, Cin, kH, kW]; got " + shape_text(weight.sizes()));
      Cout = weight.size(0), kH = weight.size(2), kW = weight.size(3);
      if (weight.size(1) != Cin)
        NodeContext::fail_input("weight", "EduConv2d: weight Cin=" + std::to_string(weight.size(1)) + " (shape " +
                                              shape_text(weight.sizes()) + ") doesn't match input Cin=" +
                                              std::to_string(Cin) + " (x shape " + shape_text(x.sizes()) + ")");
    } else {
      Cout = ctx.param_int("out_channels");
      kH = kW = ctx.param_int("kernel_size");
      if (Cout < 1)
        NodeContext::fail_param("out_channels", "EduConv2d: out_channels must be >= 1; got " + std::to_string(Cout));
      if (kH < 1)
        NodeContext::fail_param("kernel_size", "EduConv2d: kernel_size must be >= 1; got " + std::to_string(kH));
      limit_param("kernel_size", static_cast<double>(Cout) * Cin * kH * kW, "the weight [Cout, Cin, k, k]");
    }
    if (ctx.has_input("bias")) {
      const Tensor b = tensor_input(ctx, "bias");
      if (b.dim() != 1 || b.size(0) != Cout)
        NodeContext::fail_input("bias", "EduConv2d: `bias` must have shape [Cout=" + std::to_string(Cout) + "]; got " +
                                            shape_text(b.sizes()));
    }
    // Floor division as Python's //, which rounds towards minus infinity.
    const auto out_dim = [&](int64_t size, int64_t k) {
      return static_cast<int64_t>(std::floor(static_cast<double>(size + 2 * padding - k) / stride)) + 1;
    };
    const int64_t Hout = out_dim(H, kH), Wout = out_dim(W, kW);
    if (Hout < 1 || Wout < 1)
      NodeContext::fail_input("x", "EduConv2d: output dims must be >= 1, got Hout=" + std::to_string(Hout) +
                                       ", Wout=" + std::to_string(Wout) + " (input " + std::to_string(H) + "x" +
                                       std::to_string(W) + ", kernel " + std::to_string(kH) + "x" + std::to_string(kW) +
                                       ", stride " + std::to_string(stride) + ", padding " + std::to_string(padding) +
                                       "). Reduce the kernel/stride or add padding.");
    const int64_t L = Hout * Wout;
    limit_input("x", x, static_cast<double>(N) * Cin * kH * kW * L, "a column matrix [N, Cin·kH·kW, L]");
    limit_input("x", x, static_cast<double>(N) * Cout * L, "an output [N, Cout, Hout, Wout]");
    if (!given) {
      // Kaiming-style fan-in scaling, as CodefyUI: randn * 1/sqrt(Cin·k·k).
      at::Generator gen = seeded(ctx.param_int("seed"));
      const double std_dev = 1.0 / std::sqrt(static_cast<double>(Cin * kH * kW));
      weight = torch::randn({Cout, Cin, kH, kW}, gen) * std_dev;
    }
    weight = weight.to(x.device());
    const Tensor bias = ctx.has_input("bias") ? float_in(ctx, "bias").to(x.device()) : Tensor();

    StepRecorder rec(ctx);
    const Tensor cols = F::unfold(x, F::UnfoldFuncOptions({kH, kW}).stride(stride).padding(padding));
    rec.record(
        "im2col",
        "cols = unfold(x): each of the L output positions becomes a column holding its Cin·kH·kW "
        "receptive-field values.",
        {{"cols", cols}},
        {{"Cin", f64(Cin)}, {"kH", f64(kH)}, {"kW", f64(kW)}, {"L", f64(L)}, {"Hout", f64(Hout)}, {"Wout", f64(Wout)}});
    const Tensor weight_mat = weight.reshape({Cout, Cin * kH * kW});
    rec.record("weight_matrix",
               "weight_mat = weight.reshape(Cout, Cin·kH·kW): one row per output channel, matching the column "
               "layout of cols.",
               {{"weight_mat", weight_mat}}, {{"Cout", f64(Cout)}, {"Cin*kH*kW", f64(Cin * kH * kW)}});
    Tensor out_cols = torch::matmul(weight_mat, cols);
    if (bias.defined()) out_cols = out_cols + bias.view({1, Cout, 1});
    rec.record("matmul",
               "out_cols = weight_mat @ cols (+ bias): a single matrix multiply produces every output channel at "
               "every position → [N, Cout, L].",
               {{"out_cols", out_cols}}, {{"has_bias", bias.defined() ? 1.0 : 0.0}});
    const Tensor y = out_cols.reshape({N, Cout, Hout, Wout});
    rec.record("feature_map",
               "y = out_cols.reshape(N, Cout, Hout, Wout): the L columns fold back into the spatial grid — the "
               "finished feature map.",
               {{"y", y}}, {{"N", f64(N)}, {"Cout", f64(Cout)}, {"Hout", f64(Hout)}, {"Wout", f64(Wout)}});
    ValueMap out{{"y", y}, {"cols", cols}, {"weight", weight}};
    return rec.add_to(out);
  });
}

/// How many pooling windows a verbose Edu-MaxPool2d run records.
constexpr int64_t kMaxWindowSteps = 6;

void register_maxpool2d(NodeRegistry& r) {
  graph::NodeDef d{
      "deep:Edu-MaxPool2d",
      "CNN",
      "Max pooling: slide a kernel_size×kernel_size window across each channel and keep only the maximum activation "
      "inside it, shrinking [N, C, H, W] → [N, C, Hout, Wout]. Verbose mode samples a few windows (their values, the "
      "max kept, and the winning argmax) and shows the overall downsample.",
      {def::in("x", DataType::kTensor, "Feature map of shape [N, C, H, W] (a bare [C, H, W] gains a batch dim).")},
      {def::out("y", DataType::kTensor, "Pooled feature map, shape [N, C, Hout, Wout]."),
       def::out("argmax", DataType::kTensor,
                "Integer indices (into the flattened H×W plane) of the max in each window, shape [N, C, Hout, Wout]. "
                "Display-only — the input MaxUnpool2d would consume to invert the pooling.")},
      {def::integer("kernel_size", 2, "Side length of the square pooling window, in pixels.", 1),
       def::integer("stride", 0,
                    "Step between consecutive windows. 0 (the default) means '= kernel_size', i.e. non-overlapping "
                    "windows that tile the map.",
                    0),
       def::integer("padding", 0,
                    "Implicit −inf padding added to each spatial side before pooling. Must not exceed kernel_size / 2.",
                    0)}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const Tensor x = image_4d(ctx, "x", "EduMaxPool2d", "[N, C, H, W] (or [C, H, W])");
    const int64_t H = x.size(2), W = x.size(3);
    const int64_t k = ctx.param_int("kernel_size"), stride_param = ctx.param_int("stride"),
                  padding = ctx.param_int("padding");
    if (k < 1)
      NodeContext::fail_param("kernel_size", "EduMaxPool2d: kernel_size must be >= 1; got " + std::to_string(k));
    const int64_t stride = stride_param == 0 ? k : stride_param;
    if (stride < 1)
      NodeContext::fail_param("stride", "EduMaxPool2d: stride must be >= 1; got " + std::to_string(stride));
    if (padding < 0)
      NodeContext::fail_param("padding", "EduMaxPool2d: padding must be >= 0; got " + std::to_string(padding));
    if (padding > k / 2)
      NodeContext::fail_param("padding", "EduMaxPool2d: padding=" + std::to_string(padding) +
                                             " must not exceed kernel_size//2=" + std::to_string(k / 2) + ".");
    const auto out_dim = [&](int64_t size) {
      return static_cast<int64_t>(std::floor(static_cast<double>(size + 2 * padding - k) / stride)) + 1;
    };
    const int64_t h_out = out_dim(H), w_out = out_dim(W);
    if (h_out < 1 || w_out < 1)
      NodeContext::fail_input(
          "x",
          "EduMaxPool2d: window too large for input — output dims must be >= 1 but got Hout=" + std::to_string(h_out) +
              ", Wout=" + std::to_string(w_out) + " for input [H=" + std::to_string(H) + ", W=" + std::to_string(W) +
              "] (shape " + shape_text(x.sizes()) + "), kernel_size=" + std::to_string(k) +
              ", stride=" + std::to_string(stride) + ", padding=" + std::to_string(padding) + ".");
    auto [y, argmax] = F::max_pool2d_with_indices(x, F::MaxPool2dFuncOptions(k).stride(stride).padding(padding));

    StepRecorder rec(ctx);
    if (rec.on()) {
      // Windows of batch 0, channel 0, sampled evenly over the output grid;
      // -inf padding so a padded position never wins, as max_pool2d does.
      const Tensor xp = padding > 0 ? F::pad(x, F::PadFuncOptions({padding, padding, padding, padding})
                                                    .value(-std::numeric_limits<double>::infinity()))
                                    : x;
      const int64_t total = h_out * w_out;
      const int64_t n_steps = std::min(kMaxWindowSteps, total);
      std::vector<int64_t> flats;
      if (n_steps <= 1)
        flats.push_back(0);
      else
        for (int64_t i = 0; i < n_steps; ++i)
          flats.push_back(
              py_round(static_cast<double>(i) * static_cast<double>(total - 1) / static_cast<double>(n_steps - 1)));
      using torch::indexing::Slice;
      for (size_t s = 0; s < flats.size(); ++s) {
        const int64_t oh = flats[s] / w_out, ow = flats[s] % w_out;
        const int64_t top = oh * stride, left = ow * stride;
        const Tensor window = xp.index({0, 0, Slice(top, top + k), Slice(left, left + k)});
        const int64_t flat_in_input = argmax.index({0, 0, oh, ow}).item<int64_t>();
        const int64_t win_row = flat_in_input / W - top + padding, win_col = flat_in_input % W - left + padding;
        rec.record("window_" + std::to_string(s),
                   "Output cell (row=" + std::to_string(oh) + ", col=" + std::to_string(ow) +
                       "): take the max of its " + std::to_string(k) + "×" + std::to_string(k) + " window.",
                   {{"window", window}},
                   {{"out_row", f64(oh)},
                    {"out_col", f64(ow)},
                    {"max", y.index({0, 0, oh, ow}).item<double>()},
                    {"argmax_in_window", f64(win_row * k + win_col)}});
      }
      rec.record("downsample", "Keeping one max per window shrinks the spatial size: [H, W] → [Hout, Wout].",
                 {{"y", y}},
                 {{"kernel_size", f64(k)},
                  {"stride", f64(stride)},
                  {"padding", f64(padding)},
                  {"H", f64(H)},
                  {"W", f64(W)},
                  {"Hout", f64(h_out)},
                  {"Wout", f64(w_out)}});
    }
    ValueMap out{{"y", y}, {"argmax", argmax}};
    return rec.add_to(out);
  });
}

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
  const Tensor x = float_in(ctx, port);
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
// Transformer: Edu-LayerNorm, Edu-Patchify.

void register_layer_norm(NodeRegistry& r) {
  graph::NodeDef d{
      "deep:Edu-LayerNorm",
      "Transformer",
      "Layer normalization over the last dim D, stepped out: mean = x.mean(-1); var = x.var(-1) (biased); xhat = (x - "
      "mean) / sqrt(var + eps); y = gamma * xhat + beta. Exposes mean and var as display-only outputs so students see "
      "the statistics that standardise each row before the affine.",
      {def::in("x", DataType::kTensor, "Input tensor of shape [*, D]; normalized over the last dim D."),
       def::in("gamma", DataType::kTensor, "Optional affine scale of shape [D]. Defaults to ones.", true),
       def::in("beta", DataType::kTensor, "Optional affine shift of shape [D]. Defaults to zeros.", true)},
      {def::out("y", DataType::kTensor, "Normalized (and optionally affine-transformed) output, same shape as x."),
       def::out("mean", DataType::kTensor, "Per-row mean over the last dim, shape [*, 1]. Display-only."),
       def::out("var", DataType::kTensor, "Per-row biased variance over the last dim, shape [*, 1]. Display-only.")},
      {def::integer("normalized_dim", 0,
                    "Size D of the normalized last dimension. 0 means infer D from x's last dim; any other value is "
                    "checked against x and gamma/beta.",
                    0),
       def::number("eps", 1e-5, "Added to the variance before sqrt for numerical stability.", 0.0),
       def::boolean("elementwise_affine", true,
                    "If true apply y = gamma * xhat + beta; if false output xhat directly.")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const Tensor x = float_in(ctx, "x");
    if (x.dim() < 1)
      NodeContext::fail_input("x", "EduLayerNorm: x must be at least 1-D; got shape " + shape_text(x.sizes()) + ".");
    const int64_t D = x.size(-1);
    const int64_t normalized_dim = ctx.param_int("normalized_dim");
    if (normalized_dim != 0 && normalized_dim != D)
      NodeContext::fail_param("normalized_dim", "EduLayerNorm: normalized_dim=" + std::to_string(normalized_dim) +
                                                    " does not match x's last dim " + std::to_string(D) + " (shape " +
                                                    shape_text(x.sizes()) +
                                                    "). Set normalized_dim=0 to infer it from x.");
    const double eps = ctx.param_float("eps");
    const bool affine = ctx.param_bool("elementwise_affine");
    const auto affine_in = [&](const std::string& port, bool ones) {
      const auto on_x = torch::TensorOptions().dtype(torch::kFloat32).device(x.device());
      if (!ctx.has_input(port)) return ones ? torch::ones({D}, on_x) : torch::zeros({D}, on_x);
      const Tensor v = float_in(ctx, port).to(x.device());
      if (v.dim() != 1 || v.size(0) != D)
        NodeContext::fail_input(port, "EduLayerNorm: " + port + " must have shape [" + std::to_string(D) +
                                          "] to match x's last dim (x shape " + shape_text(x.sizes()) + "); got " +
                                          shape_text(v.sizes()) + ".");
      return v;
    };
    const Tensor gamma = affine_in("gamma", true), beta = affine_in("beta", false);

    StepRecorder rec(ctx);
    const Tensor mean = x.mean({-1}, true);
    rec.record("mean", "Per-row mean over the last dim: $\\mu = \\frac{1}{D}\\sum_i x_i$.", {{"mean", mean}},
               {{"D", static_cast<double>(D)}, {"eps", eps}});
    const Tensor var = x.var({-1}, false, true);
    rec.record("var", "Per-row biased variance over the last dim: $\\sigma^2 = \\frac{1}{D}\\sum_i (x_i - \\mu)^2$.",
               {{"var", var}});
    const Tensor xhat = (x - mean) / torch::sqrt(var + eps);
    rec.record("normalize", "Standardise each row: $\\hat{x} = (x - \\mu) / \\sqrt{\\sigma^2 + \\epsilon}$.",
               {{"xhat", xhat}});
    const Tensor y = affine ? gamma * xhat + beta : xhat;
    rec.record("affine",
               affine ? "Apply the learnable affine: $y = \\gamma \\hat{x} + \\beta$."
                      : "elementwise_affine is off, so $y = \\hat{x}$.",
               {{"y", y}});
    ValueMap out{{"y", y}, {"mean", mean}, {"var", var}};
    return rec.add_to(out);
  });
}

void register_patchify(NodeRegistry& r) {
  graph::NodeDef d{
      "deep:Edu-Patchify",
      "Transformer",
      "Split a [B, C, H, W] image into a sequence of P×P patches: [B, N_patches, C·P·P]. The unfold → permute → "
      "flatten chain that turns 'an image' into 'a sequence of tokens' is exposed step by step.",
      {def::in("image", DataType::kTensor,
               "Image batch of shape [B, C, H, W]. H and W must be divisible by patch_size.")},
      {def::out("tokens", DataType::kTensor,
                "Patch tokens, shape [B, N_patches, C·P·P] when flatten=True, else [B, N_patches, C, P, P]."),
       def::out("grid", DataType::kTensor, "Patch grid sizes as a 2-tensor [grid_h, grid_w].")},
      {def::integer("patch_size", 8, "Side length of one square patch in pixels.", 1),
       def::boolean("flatten", true,
                    "If true (the ViT default) each patch is flattened to a 1D vector. Set false to keep the [C, P, "
                    "P] structure for lessons that visualise individual patches.")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const Tensor x = image_4d(ctx, "image", "EduPatchify", "[B, C, H, W] (or [C, H, W])");
    const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
    const int64_t P = ctx.param_int("patch_size");
    const bool flatten = ctx.param_bool("flatten");
    if (P <= 0) NodeContext::fail_param("patch_size", "patch_size must be positive.");
    if (H % P != 0 || W % P != 0)
      NodeContext::fail_input("image", "EduPatchify: H=" + std::to_string(H) + ", W=" + std::to_string(W) + " (shape " +
                                           shape_text(x.sizes()) +
                                           ") must both be divisible by patch_size=" + std::to_string(P) + ".");
    const int64_t grid_h = H / P, grid_w = W / P, n_patches = grid_h * grid_w;

    StepRecorder rec(ctx);
    rec.record("input", "Start: an image batch.", {{"image", x}},
               {{"B", f64(B)},
                {"C", f64(C)},
                {"H", f64(H)},
                {"W", f64(W)},
                {"patch_size", f64(P)},
                {"grid_h", f64(grid_h)},
                {"grid_w", f64(grid_w)},
                {"n_patches", f64(n_patches)}});
    const Tensor unfolded = x.unfold(2, P, P).unfold(3, P, P);
    rec.record("unfold", "Slide a P×P window across H and W with stride P → shape [B, C, grid_h, grid_w, P, P].",
               {{"unfolded", unfolded}});
    const Tensor permuted = unfolded.permute({0, 2, 3, 1, 4, 5}).contiguous();
    rec.record("permute", "Move grid axes in front of channels — patches are now contiguous.",
               {{"permuted", permuted}});
    Tensor tokens;
    if (flatten) {
      tokens = permuted.view({B, n_patches, C * P * P});
      rec.record("flatten", "Flatten each patch (C·P·P numbers) into a single token vector.", {{"tokens", tokens}});
    } else {
      tokens = permuted.view({B, n_patches, C, P, P});
      rec.record("reshape", "Keep the [C, P, P] shape per patch (useful for visualization).", {{"tokens", tokens}});
    }
    ValueMap out{{"tokens", tokens}, {"grid", torch::tensor({grid_h, grid_w}, torch::kInt64)}};
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

// ---------------------------------------------------------------------------
// Diffusion: Edu-DenoiseStep, Edu-Resample, Edu-ResBlock.

/// The longest beta schedule Edu-DenoiseStep builds (far past any sampler).
constexpr int64_t kMaxScheduleSteps = int64_t{1} << 24;

void register_denoise_step(NodeRegistry& r) {
  graph::NodeDef d{
      "deep:Edu-DenoiseStep",
      "Diffusion",
      "One deterministic DDIM (eta=0) reverse diffusion step. From a noisy latent x_t and predicted noise eps it "
      "recovers pred_x0 = (x_t − sqrt(1−ᾱ_t)·eps) / sqrt(ᾱ_t), then re-noises to x_{t-1} = sqrt(ᾱ_{t-1})·pred_x0 + "
      "sqrt(1−ᾱ_{t-1})·eps. Verbose mode exposes the schedule coefficients (ᾱ_t, ᾱ_{t-1}) and the two posterior "
      "weights so students see exactly how a sampler walks back down the noise schedule.",
      {def::in("x_t", DataType::kTensor, "Noisy latent at timestep t, shape [N, C, H, W] (or any shape)."),
       def::in("noise_pred", DataType::kTensor, "Predicted noise epsilon, the SAME shape as x_t.")},
      {def::out("x_prev", DataType::kTensor, "Estimate of x_{t-1} (one step less noisy), same shape as x_t."),
       def::out("pred_x0", DataType::kTensor,
                "Predicted clean image x0 from this step. Display-only — not fed forward.")},
      {def::integer("t", 50, "Current timestep index. Must satisfy 1 ≤ t < num_steps.", 1),
       def::integer("num_steps", 100, "Length of the (linear) beta schedule, i.e. total diffusion steps.", 2),
       def::number("beta_start", 0.0001, "First beta in the linear schedule."),
       def::number("beta_end", 0.02, "Last beta in the linear schedule.")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const Tensor x_t = float_in(ctx, "x_t");
    const Tensor eps = float_in(ctx, "noise_pred");
    if (!eps.sizes().equals(x_t.sizes()))
      NodeContext::fail_input("noise_pred", "EduDenoiseStep: noise_pred shape " + tuple_text(eps.sizes()) +
                                                " must equal x_t shape " + tuple_text(x_t.sizes()) + ".");
    const int64_t t = ctx.param_int("t"), num_steps = ctx.param_int("num_steps");
    if (num_steps < 2)
      NodeContext::fail_param("num_steps",
                              "EduDenoiseStep: num_steps must be ≥ 2; got " + std::to_string(num_steps) + ".");
    if (num_steps > kMaxScheduleSteps)
      NodeContext::fail_param("num_steps", "EduDenoiseStep: num_steps must be at most " +
                                               std::to_string(kMaxScheduleSteps) + "; got " +
                                               std::to_string(num_steps) + ".");
    if (t < 1 || t >= num_steps)
      NodeContext::fail_param("t", "EduDenoiseStep: t must satisfy 1 ≤ t < num_steps (" + std::to_string(num_steps) +
                                       "); got t=" + std::to_string(t) + ".");
    // Linear beta schedule -> alphas -> cumulative product, all float32 as CodefyUI's.
    const Tensor betas =
        torch::linspace(ctx.param_float("beta_start"), ctx.param_float("beta_end"), num_steps, torch::kFloat32);
    const Tensor alphas_cumprod = torch::cumprod(1.0 - betas, 0);
    const Tensor abar_t = alphas_cumprod[t], abar_prev = alphas_cumprod[t - 1];
    const Tensor sqrt_abar_t = torch::sqrt(abar_t), sqrt_one_minus_abar_t = torch::sqrt(1.0 - abar_t);
    const Tensor sqrt_abar_prev = torch::sqrt(abar_prev), sqrt_one_minus_abar_prev = torch::sqrt(1.0 - abar_prev);
    const auto item = [](const Tensor& v) { return v.item<double>(); };

    StepRecorder rec(ctx);
    rec.record("schedule", "Linear beta schedule → ᾱ. Read off ᾱ_t and ᾱ_{t-1} for this step.", {},
               {{"t", static_cast<double>(t)},
                {"abar_t", item(abar_t)},
                {"abar_prev", item(abar_prev)},
                {"sqrt_abar_t", item(sqrt_abar_t)},
                {"sqrt_one_minus_abar_t", item(sqrt_one_minus_abar_t)}});
    const Tensor pred_x0 = (x_t - sqrt_one_minus_abar_t * eps) / sqrt_abar_t;
    rec.record("predict_x0",
               "pred_x0 = (x_t − sqrt(1−ᾱ_t)·eps) / sqrt(ᾱ_t): invert the forward noising to guess the clean image.",
               {{"pred_x0", pred_x0}});
    const Tensor x_prev = sqrt_abar_prev * pred_x0 + sqrt_one_minus_abar_prev * eps;
    rec.record(
        "x_prev",
        "x_{t-1} = sqrt(ᾱ_{t-1})·pred_x0 + sqrt(1−ᾱ_{t-1})·eps: re-noise to one step less noisy (DDIM, eta=0, "
        "deterministic).",
        {{"x_prev", x_prev}},
        {{"sqrt_abar_prev", item(sqrt_abar_prev)}, {"sqrt_one_minus_abar_prev", item(sqrt_one_minus_abar_prev)}});
    ValueMap out{{"x_prev", x_prev}, {"pred_x0", pred_x0}};
    return rec.add_to(out);
  });
}

void register_resample(NodeRegistry& r) {
  graph::NodeDef d{
      "deep:Edu-Resample",
      "Diffusion",
      "Down- or up-sample a feature map [N, C, H, W] by an integer factor — the core move of a U-Net. Down halves the "
      "resolution (avg-pool or strided interpolate); up doubles it (interpolate). Connect a same-resolution `skip` "
      "while direction=up to channel-concatenate it and demonstrate the skip connection. The spatial-shape change is "
      "exposed step by step in verbose mode.",
      {def::in("x", DataType::kTensor, "Feature map [N, C, H, W] (or [C, H, W], promoted to batch 1)."),
       def::in("skip", DataType::kTensor,
               "Optional encoder feature map [N, C, H, W]. When provided and direction=up, it is channel-concatenated "
               "onto the upsampled output (the U-Net skip connection). Spatial dims must match the upsampled result.",
               true)},
      {def::out("y", DataType::kTensor,
                "Resampled feature map. Shape is [N, C, H/factor, W/factor] for down and [N, C, H*factor, W*factor] "
                "for up; channels double when a skip is concatenated."),
       def::out("shape", DataType::kTensor, "Output dims as a 1-D long tensor [N, C, Hout, Wout] (display-only).")},
      {def::select("direction", "down", {"down", "up"},
                   "'down' shrinks the resolution by `factor` (encoder side); 'up' grows it by `factor` (decoder "
                   "side)."),
       def::integer("factor", 2, "Integer resampling factor. 2 = halve (down) / double (up) each spatial dim.", 2),
       def::select("mode", "nearest", {"nearest", "bilinear", "avgpool"},
                   "Resampling kernel. For up: 'nearest' (default) or 'bilinear' interpolation. For down: 'avgpool' "
                   "uses F.avg_pool2d(kernel=factor); 'nearest'/'bilinear' use a strided "
                   "F.interpolate(scale_factor=1/factor).")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const Tensor x = image_4d(ctx, "x", "EduResample", "x of shape [N, C, H, W] (or [C, H, W])");
    const std::string direction = ctx.param_string("direction"), mode = ctx.param_string("mode");
    if (direction != "down" && direction != "up")
      NodeContext::fail_param("direction", "EduResample: direction must be 'down' or 'up'; got '" + direction + "'.");
    const int64_t factor = ctx.param_int("factor");
    if (factor < 2)
      NodeContext::fail_param("factor", "EduResample: factor must be >= 2; got " + std::to_string(factor));
    if (mode != "nearest" && mode != "bilinear" && mode != "avgpool")
      NodeContext::fail_param("mode",
                              "EduResample: mode must be one of 'nearest', 'bilinear', 'avgpool'; got '" + mode + "'.");
    if (direction == "up" && mode == "avgpool")
      NodeContext::fail_param("mode",
                              "EduResample: mode 'avgpool' only downsamples; use 'nearest' or 'bilinear' "
                              "with direction=up.");
    const int64_t N = x.size(0), H = x.size(2), W = x.size(3);
    const bool up = direction == "up";
    if (!up && (H < factor || W < factor))
      NodeContext::fail_input("x", "EduResample: shape " + shape_text(x.sizes()) + " is smaller than factor=" +
                                       std::to_string(factor) + " in H or W; nothing would remain after downsampling.");
    if (up) limit_input("x", x, static_cast<double>(x.numel()) * factor * factor, "an upsampled output");
    Tensor skip;
    const bool with_skip = up && ctx.has_input("skip");
    if (with_skip) {  // checked before anything is computed
      skip = image_4d(ctx, "skip", "EduResample: skip", "[N, C, H, W] (or [C, H, W])");
      const int64_t Hout = H * factor, Wout = W * factor;
      if (skip.size(2) != Hout || skip.size(3) != Wout)
        NodeContext::fail_input("skip", "EduResample: skip spatial dims (" + std::to_string(skip.size(2)) + ", " +
                                            std::to_string(skip.size(3)) + ") of shape " + shape_text(skip.sizes()) +
                                            " must match the upsampled output (" + std::to_string(Hout) + ", " +
                                            std::to_string(Wout) +
                                            ") to concatenate. Check that the skip was taken at the matching "
                                            "encoder resolution.");
      if (skip.size(0) != N)
        NodeContext::fail_input("skip", "EduResample: skip batch " + std::to_string(skip.size(0)) + " (shape " +
                                            shape_text(skip.sizes()) + ") must match output batch " +
                                            std::to_string(N) + " to concatenate.");
    }

    Tensor y;
    if (!up && mode == "avgpool") {
      y = F::avg_pool2d(x, F::AvgPool2dFuncOptions(factor));
    } else {
      const double scale = up ? static_cast<double>(factor) : 1.0 / static_cast<double>(factor);
      // Output size floor(size * scale), the scale itself passed to the kernel: Python's default.
      auto options =
          F::InterpolateFuncOptions().scale_factor(std::vector<double>{scale, scale}).recompute_scale_factor(false);
      if (mode == "bilinear")
        options.mode(torch::kBilinear).align_corners(false);
      else
        options.mode(torch::kNearest);
      y = F::interpolate(x, options);
    }
    const int64_t Hout = y.size(2), Wout = y.size(3);
    StepRecorder rec(ctx);
    rec.record("resample",
               direction + "-sample by factor " + std::to_string(factor) + " using mode '" + mode +
                   "': [H=" + std::to_string(H) + ", W=" + std::to_string(W) + "] → [H=" + std::to_string(Hout) +
                   ", W=" + std::to_string(Wout) + "].",
               {{"x", x}, {"y", y}},
               {{"factor", static_cast<double>(factor)},
                {"H_before", static_cast<double>(H)},
                {"W_before", static_cast<double>(W)},
                {"H_after", static_cast<double>(Hout)},
                {"W_after", static_cast<double>(Wout)}});
    if (with_skip) {
      const int64_t c_before = y.size(1), c_skip = skip.size(1);
      y = torch::cat({y, skip}, 1);
      const int64_t c_after = y.size(1);
      rec.record("skip_concat",
                 "U-Net skip connection: concatenate the encoder feature map onto the upsampled output along the "
                 "channel axis: " +
                     std::to_string(c_before) + " + " + std::to_string(c_skip) + " = " + std::to_string(c_after) +
                     " channels.",
                 {{"y", y}},
                 {{"channels_before", static_cast<double>(c_before)},
                  {"channels_skip", static_cast<double>(c_skip)},
                  {"channels_after", static_cast<double>(c_after)}});
    }
    ValueMap out{{"y", y}, {"shape", torch::tensor(y.sizes().vec(), torch::kInt64)}};
    return rec.add_to(out);
  });
}

void register_resblock(NodeRegistry& r) {
  graph::NodeDef d{
      "deep:Edu-ResBlock",
      "Diffusion",
      "Residual block: GN→SiLU→Conv → (+time emb projection) → GN→SiLU→Conv → Add(skip). The building unit of a "
      "diffusion U-Net. Connect `time_emb` from a `TimestepEmbedding` node to make it time-conditioned; leave it "
      "unconnected for a plain ResNet block.",
      {def::in("tensor", DataType::kTensor, "Input feature map [N, in_channels, H, W]."),
       def::in("time_emb", DataType::kTensor, "Optional [N, time_emb_dim] timestep embedding for conditioning.", true)},
      {def::out("tensor", DataType::kTensor, "Output feature map [N, out_channels, H, W] (skip-connected).")},
      {def::integer("in_channels", 8, "Channels of the input feature map.", 1),
       def::integer("out_channels", 8,
                    "Channels of the output. When ≠ in_channels, a 1×1 conv is added on the skip path.", 1),
       def::integer("groups", 4, "GroupNorm groups. Must divide both in_channels and out_channels.", 1),
       def::integer("time_emb_dim", 32,
                    "Dimension of the optional `time_emb` input. Set 0 to disable the time-projection layer entirely.",
                    0),
       def::integer("seed", 42, "Seed for the conv/linear initialisation.")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    const std::string node = "EduResBlock";
    const Tensor x = float_in(ctx, "tensor");
    if (x.dim() != 4)
      NodeContext::fail_input("tensor", node + " expects [N, C, H, W] shape; got " + shape_text(x.sizes()) + ".");
    const int64_t in_ch = positive_param(ctx, "in_channels", node), out_ch = positive_param(ctx, "out_channels", node);
    const int64_t groups = positive_param(ctx, "groups", node);
    const int64_t time_dim = ctx.param_int("time_emb_dim");
    if (time_dim < 0)
      NodeContext::fail_param("time_emb_dim", node + ": time_emb_dim must be >= 0; got " + std::to_string(time_dim));
    if (x.size(1) != in_ch)
      NodeContext::fail_input("tensor", node + ": input has " + std::to_string(x.size(1)) + " channels (shape " +
                                            shape_text(x.sizes()) + ") but in_channels=" + std::to_string(in_ch) + ".");
    if (in_ch % groups != 0 || out_ch % groups != 0)
      NodeContext::fail_param("groups", node + ": groups=" + std::to_string(groups) +
                                            " must divide both in_channels=" + std::to_string(in_ch) +
                                            " and out_channels=" + std::to_string(out_ch) + ".");
    Tensor time_emb;
    if (ctx.has_input("time_emb")) {
      time_emb = float_in(ctx, "time_emb");
      if (time_emb.dim() == 1) time_emb = time_emb.unsqueeze(0);
      if (time_emb.dim() != 2 || time_emb.size(-1) != time_dim)
        NodeContext::fail_input("time_emb", node + ": time_emb of shape " + shape_text(time_emb.sizes()) +
                                                " doesn't match [N, time_emb_dim=" + std::to_string(time_dim) + "].");
      if (time_emb.size(0) != x.size(0) && time_emb.size(0) != 1 && x.size(0) != 1)
        NodeContext::fail_input("time_emb", node + ": time_emb batch " + std::to_string(time_emb.size(0)) + " (shape " +
                                                shape_text(time_emb.sizes()) + ") does not match the input batch " +
                                                std::to_string(x.size(0)) + " (shape " + shape_text(x.sizes()) + ").");
    }
    limit_param("out_channels",
                9.0 * static_cast<double>(out_ch) * static_cast<double>(in_ch + out_ch) +
                    static_cast<double>(out_ch) * (time_dim + in_ch),
                "the block's weights");
    limit_input("tensor", x, static_cast<double>(x.size(0)) * std::max(in_ch, out_ch) * x.size(2) * x.size(3),
                "a feature map");
    auto holder = layer_node::kept_layer(
        ctx, [&] { return as_built(EduResBlock(in_ch, out_ch, groups, time_dim, ctx.param_int("seed"))); });
    layer_node::ready(*holder, x, false);
    torch::NoGradGuard no_grad;
    return ValueMap{{"tensor", holder->as<EduResBlockImpl>().forward(x, time_emb)}};
  });
}

}  // namespace edu_deep

void register_edu_deep_nodes(NodeRegistry& r) {
  edu_deep::register_conv2d(r);
  edu_deep::register_maxpool2d(r);
  edu_deep::register_self_attention(r);
  edu_deep::register_multi_head_attention(r);
  edu_deep::register_cross_attention(r);
  edu_deep::register_layer_norm(r);
  edu_deep::register_patchify(r);
  edu_deep::register_rnn_cell(r);
  edu_deep::register_lstm_cell(r);
  edu_deep::register_denoise_step(r);
  edu_deep::register_resample(r);
  edu_deep::register_resblock(r);
}

}  // namespace codefy::nodes
