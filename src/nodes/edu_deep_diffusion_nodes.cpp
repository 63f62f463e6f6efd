// The `deep` pack's diffusion nodes (Edu-DenoiseStep, Edu-Resample,
// Edu-ResBlock); see edu_deep_nodes.cpp for what the pack is.
#include "nodes/edu_deep_support.h"
#include "nodes/layer_node_support.h"
#include "nodes/step_trace.h"

#include <limits>

namespace codefy::nodes::edu_deep {

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

void register_diffusion_nodes(NodeRegistry& r) {
  register_denoise_step(r);
  register_resample(r);
  register_resblock(r);
}

}  // namespace codefy::nodes::edu_deep
