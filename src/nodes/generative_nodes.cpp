// RL and diffusion helpers that need no environment or download:
// KLDivergence, RewardModel, DiffusionUNet and DDPMSampler (CodefyUI's
// names, ports and params). The two with weights keep them in the node state
// store between editor runs, as SequentialModel does, and draw them from
// their `seed` param, so the same seed gives CodefyUI's (PyTorch's) numbers.
#include "model/generative.h"
#include "nodes/library.h"
#include "nodes/tensor_checks.h"
#include "train/progress.h"

namespace codefy {

using graph::DataType;

namespace {

void register_kl_divergence(NodeRegistry& r) {
  r.add({"KLDivergence",
         "RL",
         "KL(p || q) from probabilities or logits",
         {def::in("p", DataType::kTensor, "Policy distribution: [..., V] probs or logits."),
          def::in("q", DataType::kTensor, "Reference distribution: [..., V] probs or logits.")},
         {def::out("kl", DataType::kTensor, "KL divergence — scalar or per-sample, depending on reduction.")},
         {def::select("input_kind", "probs", {"probs", "logits"},
                      "Whether p and q are already probabilities or pre-softmax logits."),
          def::select("reduction", "batchmean", {"batchmean", "sum", "mean", "none"},
                      "How to aggregate per-sample KL. batchmean = sum / batch_size (the RLHF default).")}},
        [](NodeContext& ctx) {
          const torch::Tensor p = nodes::tensor_input(ctx, "p").to(torch::kFloat32);
          const torch::Tensor q = nodes::tensor_input(ctx, "q").to(torch::kFloat32);
          nodes::check_same_shape("p", p, "q", q);
          if (p.dim() == 0) NodeContext::fail_input("p", "expects distributions of shape [..., V], got a 0-d tensor");
          torch::Tensor log_q, target;
          if (ctx.param_string("input_kind") == "logits") {
            log_q = torch::log_softmax(q, -1);
            target = torch::softmax(p, -1);
          } else {
            log_q = torch::log(q.clamp_min(1e-12));
            target = p;
          }
          // KL(p || q) = sum p (log p - log q): kl_div(input = log q, target = p).
          namespace F = torch::nn::functional;
          const std::string reduction = ctx.param_string("reduction");
          torch::Tensor kl;
          if (reduction == "none") {
            kl = F::kl_div(log_q, target, F::KLDivFuncOptions().reduction(torch::kNone)).sum(-1);
            if (kl.dim() > 1) kl = kl.reshape(-1);
          } else if (reduction == "sum") {
            kl = F::kl_div(log_q, target, F::KLDivFuncOptions().reduction(torch::kSum));
          } else if (reduction == "mean") {
            kl = F::kl_div(log_q, target, F::KLDivFuncOptions().reduction(torch::kMean));
          } else {
            kl = F::kl_div(log_q, target, F::KLDivFuncOptions().reduction(torch::kBatchMean));
          }
          return ValueMap{{"kl", kl}};
        });
}

void register_reward_model(NodeRegistry& r) {
  graph::NodeDef d{
      "RewardModel",
      "RL",
      "MLP head scoring a hidden state, one scalar per item",
      {def::in("hidden_states", DataType::kTensor, "Hidden states from the policy model: [B, H] or [B, T, H].", true)},
      {def::out("model", DataType::kModel, "The reward MLP head (nn.Module)."),
       def::out("rewards", DataType::kTensor, "Scalar reward per item, shape [B].")},
      {def::integer("input_dim", 128, "Hidden-state dimension H.", 1),
       def::integer("hidden_dim", 64, "MLP bottleneck width.", 1),
       def::integer("seed", 42, "Init seed for reproducibility.")}};
  d.cacheable = false;        // hands out a module that training mutates...
  d.persistent_state = true;  // ...kept between editor runs, as SequentialModel's
  r.add(std::move(d), [](NodeContext& ctx) {
    const int64_t input_dim = ctx.param_int("input_dim"), hidden_dim = ctx.param_int("hidden_dim");
    if (static_cast<double>(input_dim) * static_cast<double>(hidden_dim) > static_cast<double>(int64_t{1} << 28))
      NodeContext::fail_param("hidden_dim",
                              "input_dim x hidden_dim is more weights than a reward head needs (at most "
                              "2^28)");
    torch::Tensor h;
    if (ctx.has_input("hidden_states")) {  // checked before the head is built
      h = nodes::tensor_input(ctx, "hidden_states").to(torch::kFloat32);
      nodes::check_rank("hidden_states", h, {2, 3}, "[B, H] or [B, T, H]");
      if (h.size(-1) != input_dim)
        NodeContext::fail_input("hidden_states", "hidden size " + std::to_string(h.size(-1)) + " of shape " +
                                                     nodes::shape_text(h.sizes()) + " does not match input_dim " +
                                                     std::to_string(input_dim));
    }
    auto head = std::make_shared<model::RewardHead>(input_dim, hidden_dim, ctx.param_int("seed"));
    torch::Tensor rewards = torch::zeros({0});
    if (h.defined()) {
      torch::NoGradGuard no_grad;
      rewards = head->forward(h);
    }
    return ValueMap{{"model", train::ModelPtr(head)}, {"rewards", rewards}};
  });
}

/// The largest channel count a DiffusionUNet level may have: far past a toy
/// U-Net, well below what would allocate gigabytes of weights.
constexpr int64_t kUNetChannelsMax = 2048;

void register_diffusion_unet(NodeRegistry& r) {
  graph::NodeDef d{
      "DiffusionUNet",
      "Diffusion",
      "A complete toy diffusion U-Net packaged as a single node. Outputs an nn.Module that maps `(x, t) → "
      "predicted_noise` of the same shape as x. Compose with `DDPMSampler` to run reverse diffusion. For students "
      "who want to see the architecture wired up explicitly, see the `Mini-UNet-Expanded` preset.",
      {},
      {def::out("model", DataType::kModel, "Callable nn.Module taking (x, t) → predicted noise.")},
      {def::integer("in_channels", 3, "Channels of the noisy input (3 for RGB, 4 for typical SD latents).", 1),
       def::integer("base_channels", 16,
                    "Channel count after the stem. Each level multiplies this by the matching `channel_mult` entry.",
                    1),
       def::text("channel_mult", "1,2,4",
                 "Comma-separated channel multipliers per level. Length determines depth (down-blocks + bottleneck)."),
       def::integer("time_emb_dim", 32, "Width of the timestep embedding (must be even).", 2),
       def::integer("num_groups", 4, "GroupNorm groups inside every ResBlock. Must divide all level channel counts.",
                    1),
       def::integer("seed", 42, "Seed for all weight initialisation.")}};
  d.cacheable = false;
  d.persistent_state = true;
  r.add(std::move(d), [](NodeContext& ctx) {
    model::UNetOptions o;
    o.in_channels = ctx.param_int("in_channels");
    o.base_channels = ctx.param_int("base_channels");
    try {
      o.channel_mult = model::parse_channel_mult(ctx.param_string("channel_mult"));
    } catch (const std::invalid_argument& e) {
      NodeContext::fail_param("channel_mult", e.what());
    }
    o.time_emb_dim = ctx.param_int("time_emb_dim");
    o.num_groups = ctx.param_int("num_groups");
    o.seed = ctx.param_int("seed");
    if (const auto [param, problem] = model::check_unet_options(o); !param.empty())
      NodeContext::fail_param(param, problem);
    for (int64_t m : o.channel_mult)
      if (o.base_channels * m > kUNetChannelsMax)
        NodeContext::fail_param("base_channels",
                                "base_channels x channel_mult = " + std::to_string(o.base_channels * m) +
                                    " channels, more than " + std::to_string(kUNetChannelsMax));
    if (o.time_emb_dim > 4 * kUNetChannelsMax || o.in_channels > kUNetChannelsMax)
      NodeContext::fail_param(o.in_channels > kUNetChannelsMax ? "in_channels" : "time_emb_dim",
                              "is larger than a toy U-Net can take");
    return ValueMap{{"model", train::ModelPtr(std::make_shared<model::DiffusionUNet>(o))}};
  });
}

void register_ddpm_sampler(NodeRegistry& r) {
  graph::NodeDef d{
      "DDPMSampler",
      "Diffusion",
      "Run the reverse DDPM loop: noise tensor to image",
      {def::in("model", DataType::kModel, "A noise-predicting U-Net (e.g. from `DiffusionUNet`)."),
       def::in("noise", DataType::kTensor, "Starting noise $x_T$, shape [N, C, H, W]."),
       def::in("condition", DataType::kTensor,
               "Optional conditioning tensor for cross-attention. Currently unused — reserved for the next PR's "
               "text-conditioning support.",
               true)},
      {def::out("image", DataType::kTensor, "Denoised image $x_0$, same shape as the input noise.")},
      {def::integer("num_steps", 20, "Number of reverse-diffusion steps. More steps = smoother trajectory but slower.",
                    1),
       def::select("schedule", "linear", {"linear", "cosine"},
                   "Noise schedule. `linear` is the original DDPM; `cosine` (Nichol & Dhariwal 2021) noises more "
                   "slowly near the data."),
       def::number("beta_start", 0.0001, "Starting variance for the linear schedule. Ignored for cosine.", 0.0),
       def::number("beta_end", 0.02, "Ending variance for the linear schedule. Ignored for cosine.", 0.0),
       def::integer("seed", 42, "Seed for the per-step Gaussian noise z added during sampling.")}};
  d.cacheable = false;  // sets the model to eval mode; conservative, as CodefyUI
  r.add(std::move(d), [](NodeContext& ctx) {
    const auto& m = ctx.input_as<train::ModelPtr>("model");
    auto unet = std::dynamic_pointer_cast<model::DiffusionUNet>(m);
    if (!unet)
      NodeContext::fail_input("model", "is " + m->describe() +
                                           ", which takes one tensor; DDPMSampler needs a noise-predicting model "
                                           "taking (x, t), such as DiffusionUNet's");
    const torch::Tensor noise = nodes::tensor_input(ctx, "noise");
    nodes::check_rank("noise", noise, {4}, "[N, C, H, W]");
    const int64_t div = unet->spatial_divisor();
    if (noise.size(1) != unet->options().in_channels)
      NodeContext::fail_input("noise", "has " + std::to_string(noise.size(1)) + " channels (shape " +
                                           nodes::shape_text(noise.sizes()) + ") but the U-Net's in_channels is " +
                                           std::to_string(unet->options().in_channels));
    if (noise.size(2) % div || noise.size(3) % div || noise.size(2) == 0 || noise.size(3) == 0)
      NodeContext::fail_input("noise", "height and width of shape " + nodes::shape_text(noise.sizes()) +
                                           " must be positive multiples of " + std::to_string(div) +
                                           " (2 per U-Net level below the top)");
    model::DdpmOptions o;
    o.num_steps = ctx.param_int("num_steps");
    o.schedule = ctx.param_string("schedule");
    o.beta_start = ctx.param_float("beta_start");
    o.beta_end = ctx.param_float("beta_end");
    o.seed = ctx.param_int("seed");
    if (o.schedule == "linear" && (o.beta_start >= 1 || o.beta_end >= 1))
      NodeContext::fail_param(o.beta_start >= 1 ? "beta_start" : "beta_end", "must be below 1 (a variance per step)");
    const torch::Tensor image = model::ddpm_sample(*unet, noise, o, [&](int64_t done) {
      train::BatchProgress step;
      step.batch = done;
      step.total_batches = o.num_steps;
      step.timestep = o.num_steps - done;
      ctx.progress(step.to_json());
      ctx.cancel().throw_if_cancelled();
    });
    return ValueMap{{"image", image}};
  });
}

}  // namespace

void nodes::register_generative_nodes(NodeRegistry& r) {
  register_kl_divergence(r);
  register_reward_model(r);
  register_diffusion_unet(r);
  register_ddpm_sampler(r);
}

}  // namespace codefy
