// The teaching nodes of CodefyUI's `deep` plugin pack (deep:Edu-*):
// convolution, attention, recurrent cells and diffusion steps written out
// step by step, with their intermediate tensors in verbose runs. This file:
// the convolution and transformer nodes, and the pack's registration;
// edu_deep_sequence_nodes.cpp: attention and recurrent cells;
// edu_deep_diffusion_nodes.cpp: the diffusion steps.
//
// Names, ports, params and step names are CodefyUI's. Weights are drawn as
// CodefyUI draws them: a generator of their own seeded from the node's
// `seed` param, in CodefyUI's order and scale, so the same seed gives
// PyTorch's numbers. The nodes CodefyUI builds through its stateful-module
// mixin (the three attention nodes and Edu-ResBlock) keep their module in
// the node state store between editor runs, as the layer nodes do.
#include "nodes/edu_deep_support.h"
#include "nodes/layer_node_support.h"
#include "nodes/step_trace.h"

#include <limits>

namespace codefy::nodes {
namespace edu_deep {
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
      Tensor v = float_in(ctx, port).to(x.device());
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

}  // namespace edu_deep

void register_edu_deep_nodes(NodeRegistry& r) {
  edu_deep::register_conv2d(r);
  edu_deep::register_maxpool2d(r);
  edu_deep::register_attention_nodes(r);
  edu_deep::register_layer_norm(r);
  edu_deep::register_patchify(r);
  edu_deep::register_rnn_nodes(r);
  edu_deep::register_diffusion_nodes(r);
}

}  // namespace codefy::nodes
