#include "model/generative.h"

#include "util/list.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace codefy::model {

namespace {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

at::Generator seeded_generator(int64_t seed) { return at::detail::createCPUGenerator(static_cast<uint64_t>(seed)); }

/// CodefyUI's seeded init of a conv or linear layer: weight = randn(shape) * scale
/// from `gen`, bias zero.
void fill_normal(nn::Module& layer, at::Generator& gen, double scale) {
  torch::NoGradGuard no_grad;
  torch::Tensor w = layer.named_parameters(false)["weight"];
  w.copy_(torch::randn(w.sizes(), gen) * scale);
  if (auto* b = layer.named_parameters(false).find("bias")) b->zero_();
}

/// nn.Linear.reset_parameters drawn from `gen`: weight, then bias, uniform in +-1/sqrt(fan_in).
void fill_linear_default(nn::Linear& layer, at::Generator& gen) {
  torch::NoGradGuard no_grad;
  const double bound = 1.0 / std::sqrt(static_cast<double>(layer->weight.size(1)));
  layer->weight.uniform_(-bound, bound, gen);
  layer->bias.uniform_(-bound, bound, gen);
}

}  // namespace

RewardHead::RewardHead(int64_t input_dim, int64_t hidden_dim, int64_t seed)
    : input_dim_(input_dim), hidden_dim_(hidden_dim) {
  nn::Linear fc1(input_dim, hidden_dim), fc2(hidden_dim, 1);
  at::Generator gen = seeded_generator(seed);
  fill_linear_default(fc1, gen);
  fill_linear_default(fc2, gen);
  net_ = register_module("net", nn::Sequential(fc1, nn::ReLU(), fc2));
}

torch::Tensor RewardHead::forward(const torch::Tensor& h) {
  const torch::Tensor last = h.dim() == 3 ? h.select(1, -1) : h;
  return net_->forward(last).squeeze(-1);
}

std::string RewardHead::describe() const {
  return "RewardHead: Linear(" + std::to_string(input_dim_) + ", " + std::to_string(hidden_dim_) +
         ") -> ReLU -> Linear(" + std::to_string(hidden_dim_) + ", 1)";
}

TimestepMlpImpl::TimestepMlpImpl(int64_t embed_dim, int64_t max_period, int64_t seed)
    : embed_dim_(embed_dim), max_period_(max_period) {
  fc1_ = register_module("fc1", nn::Linear(embed_dim, 4 * embed_dim));
  fc2_ = register_module("fc2", nn::Linear(4 * embed_dim, embed_dim));
  at::Generator gen = seeded_generator(seed);
  const double scale = 1.0 / std::sqrt(static_cast<double>(embed_dim));
  fill_normal(*fc1_, gen, scale);
  fill_normal(*fc2_, gen, scale);
}

torch::Tensor TimestepMlpImpl::forward(const torch::Tensor& timesteps) {
  const int64_t half = embed_dim_ / 2;
  const auto arange = torch::arange(half, torch::TensorOptions().dtype(torch::kFloat32).device(timesteps.device()));
  const torch::Tensor freqs = torch::exp(-std::log(static_cast<double>(max_period_)) * arange / half);
  const torch::Tensor args = timesteps.to(torch::kFloat32).unsqueeze(-1) * freqs.unsqueeze(0);
  const torch::Tensor emb = torch::cat({torch::sin(args), torch::cos(args)}, -1);
  return fc2_->forward(F::silu(fc1_->forward(emb)));
}

DiffusionResBlockImpl::DiffusionResBlockImpl(int64_t in_channels, int64_t out_channels, int64_t groups,
                                             int64_t time_emb_dim, int64_t seed) {
  norm1_ = register_module("norm1", nn::GroupNorm(groups, in_channels));
  conv1_ = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(in_channels, out_channels, 3).padding(1)));
  time_proj_ = register_module("time_proj", nn::Linear(time_emb_dim, out_channels));
  norm2_ = register_module("norm2", nn::GroupNorm(groups, out_channels));
  conv2_ = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(out_channels, out_channels, 3).padding(1)));
  if (in_channels != out_channels) skip_ = register_module("skip", nn::Conv2d(in_channels, out_channels, 1));
  // CodefyUI's order of draws: conv1, conv2, time_proj, skip.
  at::Generator gen = seeded_generator(seed);
  const double scale = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(in_channels, 1)));
  fill_normal(*conv1_, gen, scale);
  fill_normal(*conv2_, gen, scale);
  fill_normal(*time_proj_, gen, scale);
  if (skip_) fill_normal(*skip_, gen, scale);
}

torch::Tensor DiffusionResBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& time_emb) {
  torch::Tensor h = conv1_->forward(F::silu(norm1_->forward(x)));
  h = h + time_proj_->forward(time_emb).unsqueeze(-1).unsqueeze(-1);
  h = conv2_->forward(F::silu(norm2_->forward(h)));
  return h + (skip_ ? skip_->forward(x) : x);
}

std::vector<int64_t> parse_channel_mult(const std::string& text) {
  const auto mults = util::parse_int_list(text);
  if (!mults) throw std::invalid_argument("\"" + text + "\" is not a comma-separated list of whole numbers");
  if (mults->empty()) throw std::invalid_argument("channel_mult is empty");
  if (mults->size() > 8) throw std::invalid_argument("at most 8 levels, got " + std::to_string(mults->size()));
  for (int64_t m : *mults)
    if (m <= 0) throw std::invalid_argument("channel multipliers must be positive, got " + std::to_string(m));
  return *mults;
}

std::pair<std::string, std::string> check_unet_options(const UNetOptions& o) {
  if (o.in_channels < 1) return {"in_channels", "must be at least 1"};
  if (o.base_channels < 1) return {"base_channels", "must be at least 1"};
  if (o.time_emb_dim < 2 || o.time_emb_dim % 2) return {"time_emb_dim", "must be even and at least 2 (sin/cos halves)"};
  if (o.num_groups < 1) return {"num_groups", "must be at least 1"};
  for (int64_t m : o.channel_mult)
    if ((o.base_channels * m) % o.num_groups)
      return {"num_groups", "num_groups=" + std::to_string(o.num_groups) + " must divide every base_channels*mult (" +
                                std::to_string(o.base_channels) + "*" + std::to_string(m) + ")"};
  return {};
}

DiffusionUNet::DiffusionUNet(const UNetOptions& o) : options_(o) {
  // Registered in CodefyUI's attribute order, so parameters() and state_dict keys match.
  time_mlp_ = register_module("time_mlp", TimestepMlp(o.time_emb_dim, 10000, o.seed));
  stem_ = register_module("stem", nn::Conv2d(nn::Conv2dOptions(o.in_channels, o.base_channels, 3).padding(1)));
  down_blocks_ = register_module("down_blocks", nn::ModuleList());
  int64_t ch = o.base_channels;
  std::vector<int64_t> skips;
  for (size_t level = 0; level + 1 < o.channel_mult.size(); ++level) {
    const int64_t target = o.base_channels * o.channel_mult[level];
    down_blocks_->push_back(
        DiffusionResBlock(ch, target, o.num_groups, o.time_emb_dim, o.seed + 100 + static_cast<int64_t>(level)));
    ch = target;
    skips.push_back(ch);
  }
  const int64_t bottom = o.base_channels * o.channel_mult.back();
  bottleneck_ =
      register_module("bottleneck", DiffusionResBlock(ch, bottom, o.num_groups, o.time_emb_dim, o.seed + 200));
  ch = bottom;
  up_blocks_ = register_module("up_blocks", nn::ModuleList());
  for (size_t level = 0; level < skips.size(); ++level) {
    const int64_t skip = skips[skips.size() - 1 - level];
    up_blocks_->push_back(
        DiffusionResBlock(ch + skip, skip, o.num_groups, o.time_emb_dim, o.seed + 300 + static_cast<int64_t>(level)));
    ch = skip;
  }
  head_ = register_module("head", nn::Conv2d(ch, o.in_channels, 1));
  at::Generator gen = seeded_generator(o.seed + 999);
  fill_normal(*stem_, gen, 0.1);
  fill_normal(*head_, gen, 0.1);
}

torch::Tensor DiffusionUNet::forward(const torch::Tensor&) {
  throw std::invalid_argument(
      "DiffusionUNet predicts noise from (x, t): it needs a timestep as well as x; sample with DDPMSampler");
}

torch::Tensor DiffusionUNet::forward(const torch::Tensor& x, const torch::Tensor& t_in) {
  torch::Tensor t = t_in.dim() == 0 ? t_in.unsqueeze(0) : t_in;
  if (t.size(0) == 1 && x.size(0) > 1) t = t.expand({x.size(0)});
  const torch::Tensor time_emb = time_mlp_->forward(t);
  torch::Tensor h = stem_->forward(x);
  std::vector<torch::Tensor> skips;
  for (const auto& block : *down_blocks_) {
    h = block->as<DiffusionResBlock>()->forward(h, time_emb);
    skips.push_back(h);
    h = F::max_pool2d(h, F::MaxPool2dFuncOptions(2));
  }
  h = bottleneck_->forward(h, time_emb);
  size_t i = skips.size();
  for (const auto& block : *up_blocks_) {
    const torch::Tensor& skip = skips[--i];
    const std::vector<int64_t> doubled{h.size(-2) * 2, h.size(-1) * 2};
    h = at::upsample_nearest2d(h, c10::IntArrayRef(doubled));
    h = block->as<DiffusionResBlock>()->forward(torch::cat({h, skip}, 1), time_emb);
  }
  return head_->forward(h);
}

std::string DiffusionUNet::describe() const {
  std::string mult;
  for (int64_t m : options_.channel_mult) mult += (mult.empty() ? "" : ",") + std::to_string(m);
  return "DiffusionUNet(in_channels=" + std::to_string(options_.in_channels) +
         ", base_channels=" + std::to_string(options_.base_channels) + ", channel_mult=" + mult +
         ", time_emb_dim=" + std::to_string(options_.time_emb_dim) + ")";
}

torch::Tensor ddpm_betas(const DdpmOptions& o) {
  if (o.schedule == "cosine") {
    constexpr double s = 0.008;
    const torch::Tensor t =
        torch::linspace(0, static_cast<double>(o.num_steps), o.num_steps + 1, torch::kFloat32) / o.num_steps;
    torch::Tensor alpha_bar = torch::cos(((t + s) / (1 + s)) * M_PI / 2).pow(2);
    alpha_bar = alpha_bar / alpha_bar[0];
    const torch::Tensor betas = 1 - alpha_bar.slice(0, 1) / alpha_bar.slice(0, 0, o.num_steps);
    return torch::clamp(betas, 0.0001, 0.999);
  }
  return torch::linspace(o.beta_start, o.beta_end, o.num_steps, torch::kFloat32);
}

torch::Tensor ddpm_sample(DiffusionUNet& model, const torch::Tensor& noise, const DdpmOptions& o,
                          const std::function<void(int64_t)>& after_step) {
  torch::NoGradGuard no_grad;
  const torch::Tensor betas = ddpm_betas(o).to(noise.device());
  const torch::Tensor alphas = 1.0 - betas;
  const torch::Tensor alpha_bars = torch::cumprod(alphas, 0);
  at::Generator gen = seeded_generator(o.seed);
  torch::Tensor x = noise.to(torch::kFloat32).clone();
  model.eval();
  for (int64_t t = o.num_steps - 1, done = 0; t >= 0; --t) {
    const torch::Tensor steps =
        torch::full({x.size(0)}, t, torch::TensorOptions().dtype(torch::kLong).device(x.device()));
    const torch::Tensor eps = model.forward(x, steps);
    const torch::Tensor mean =
        (1.0 / torch::sqrt(alphas[t])) * (x - (betas[t] / torch::sqrt(1.0 - alpha_bars[t])) * eps);
    if (t > 0) {
      // Drawn on the CPU from the seeded generator, as CodefyUI does, then moved.
      const torch::Tensor z = torch::randn(x.sizes(), gen, torch::kFloat32).to(x.device());
      x = mean + torch::sqrt(betas[t]) * z;
    } else {
      x = mean;
    }
    if (after_step) after_step(++done);
  }
  return x;
}

}  // namespace codefy::model
