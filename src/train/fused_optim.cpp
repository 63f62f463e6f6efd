#include "train/fused_optim.h"

#include "train/fused_kernels.h"

#include <ATen/Parallel.h>
#include <c10/util/string_utils.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace codefy::train {
namespace {

// Below this many elements a parameter is updated on the calling thread: the
// pass is memory-bound and waking a second thread costs more than it saves
// (a 200k-element weight took 63 µs on one thread, over 200 µs split in two).
constexpr int64_t kElementsPerThread = int64_t{1} << 20;

bool fusable(const torch::Tensor& t, const torch::Tensor& like) {
  return t.defined() && t.layout() == c10::kStrided && t.device().is_cpu() && t.scalar_type() == c10::kFloat &&
         t.is_contiguous() && t.numel() == like.numel();
}

// Whether every parameter with a gradient, and the state it already has,
// can take the single pass.
template <typename State>
bool all_fusable(const std::vector<torch::optim::OptimizerParamGroup>& groups,
                 const ska::flat_hash_map<std::string, std::unique_ptr<torch::optim::OptimizerParamState>>& states,
                 bool (*state_ok)(const State&, const torch::Tensor&)) {
  for (const auto& group : groups)
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      if (!fusable(p, p) || !fusable(p.grad(), p)) return false;
      const auto it = states.find(c10::guts::to_string(p.unsafeGetTensorImpl()));
      if (it != states.end() && !state_ok(static_cast<const State&>(*it->second), p)) return false;
    }
  return true;
}

// Elements per block of an update that also writes the bf16 copy: the
// block's new values are still in the L1 cache when they are rounded.
constexpr int64_t kMirrorBlock = 2048;

// Runs `body(begin, end)` over [0, n), split across threads only for large
// tensors; with a bf16 copy `mirror`, block by block, each followed by
// writing its values' copy from `param`.
template <typename Body>
void for_chunks(int64_t n, const Body& body, const float* param = nullptr, uint16_t* mirror = nullptr) {
  const auto run = [&](int64_t begin, int64_t end) {
    if (mirror == nullptr) return body(begin, end);
    for (int64_t b = begin; b < end; b += kMirrorBlock) {
      const int64_t e = std::min(end, b + kMirrorBlock);
      body(b, e);
      fused::to_bf16(param + b, mirror + b, e - b);
    }
  };
  if (n < 2 * kElementsPerThread)
    run(int64_t{0}, n);
  else
    at::parallel_for(0, n, kElementsPerThread, run);
}

// In-place writes through raw pointers skip the version counters that
// autograd reads; bump them as an in-place tensor operation would.
void mark_written(const torch::Tensor& t) { t.unsafeGetTensorImpl()->bump_version(); }

torch::Tensor evaluate(const torch::optim::Optimizer::LossClosure& closure) {
  if (closure == nullptr) return {};
  at::AutoGradMode enable_grad(true);
  return closure();
}

bool adam_state_ok(const torch::optim::AdamParamState& s, const torch::Tensor& p) {
  return fusable(s.exp_avg(), p) && fusable(s.exp_avg_sq(), p);
}
bool sgd_state_ok(const torch::optim::SGDParamState& s, const torch::Tensor& p) {
  return fusable(s.momentum_buffer(), p);
}

// One Adam/AdamW update of every parameter with a gradient; `decoupled` is
// AdamW's weight decay, else Adam's L2 term. State is created as LibTorch
// creates it, under the same key.
template <typename Options>
void adam_step(std::vector<torch::optim::OptimizerParamGroup>& groups,
               ska::flat_hash_map<std::string, std::unique_ptr<torch::optim::OptimizerParamState>>& states,
               bool decoupled, Bf16Mirrors* mirrors) {
  for (auto& group : groups) {
    const auto& o = static_cast<const Options&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& slot = states[c10::guts::to_string(p.unsafeGetTensorImpl())];
      if (!slot) {
        auto fresh = std::make_unique<torch::optim::AdamParamState>();
        fresh->step(0);
        fresh->exp_avg(torch::zeros_like(p, c10::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, c10::MemoryFormat::Preserve));
        slot = std::move(fresh);
      }
      auto& state = static_cast<torch::optim::AdamParamState&>(*slot);
      state.step(state.step() + 1);
      const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
      const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(state.step()));
      const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(state.step()));
      fused::AdamScalars s;
      s.beta1 = static_cast<float>(beta1);
      s.one_minus_beta1 = static_cast<float>(1 - beta1);
      s.beta2 = static_cast<float>(beta2);
      s.one_minus_beta2 = static_cast<float>(1 - beta2);
      s.sqrt_bias_correction2 = static_cast<float>(std::sqrt(bias_correction2));
      s.eps = static_cast<float>(o.eps());
      s.neg_step_size = static_cast<float>(-(o.lr() / bias_correction1));
      if (o.weight_decay() != 0) {
        if (decoupled)
          s.decay = static_cast<float>(1 - o.lr() * o.weight_decay());
        else
          s.l2 = static_cast<float>(o.weight_decay());
      }
      float* param = p.data_ptr<float>();
      const float* grad = p.grad().data_ptr<float>();
      float* exp_avg = state.exp_avg().data_ptr<float>();
      float* exp_avg_sq = state.exp_avg_sq().data_ptr<float>();
      uint16_t* mirror = mirrors ? mirrors->target(p) : nullptr;
      for_chunks(
          p.numel(),
          [&](int64_t begin, int64_t end) {
            fused::adam(param + begin, grad + begin, exp_avg + begin, exp_avg_sq + begin, end - begin, s);
          },
          param, mirror);
      mark_written(p);
      mark_written(state.exp_avg());
      mark_written(state.exp_avg_sq());
      if (mirror) mirrors->written(p);
    }
  }
}

template <typename Options>
bool any_amsgrad(const std::vector<torch::optim::OptimizerParamGroup>& groups) {
  for (const auto& group : groups)
    if (static_cast<const Options&>(group.options()).amsgrad()) return true;
  return false;
}

}  // namespace

torch::Tensor FusedAdam::step(LossClosure closure) {
  last_step_fused_ = !any_amsgrad<torch::optim::AdamOptions>(param_groups_) &&
                     all_fusable<torch::optim::AdamParamState>(param_groups_, state_, &adam_state_ok);
  if (!last_step_fused_) return torch::optim::Adam::step(std::move(closure));
  torch::NoGradGuard no_grad;
  torch::Tensor loss = evaluate(closure);
  adam_step<torch::optim::AdamOptions>(param_groups_, state_, /*decoupled=*/false, mirrors_);
  return loss;
}

torch::Tensor FusedAdamW::step(LossClosure closure) {
  last_step_fused_ = !any_amsgrad<torch::optim::AdamWOptions>(param_groups_) &&
                     all_fusable<torch::optim::AdamParamState>(param_groups_, state_, &adam_state_ok);
  if (!last_step_fused_) return torch::optim::AdamW::step(std::move(closure));
  torch::NoGradGuard no_grad;
  torch::Tensor loss = evaluate(closure);
  adam_step<torch::optim::AdamWOptions>(param_groups_, state_, /*decoupled=*/true, mirrors_);
  return loss;
}

torch::Tensor FusedSGD::step(LossClosure closure) {
  bool momentum = true;
  for (const auto& group : param_groups_)
    momentum = momentum && static_cast<const torch::optim::SGDOptions&>(group.options()).momentum() != 0;
  last_step_fused_ = momentum && all_fusable<torch::optim::SGDParamState>(param_groups_, state_, &sgd_state_ok);
  if (!last_step_fused_) return torch::optim::SGD::step(std::move(closure));
  torch::NoGradGuard no_grad;
  torch::Tensor loss = evaluate(closure);
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const torch::optim::SGDOptions&>(group.options());
    fused::SgdScalars s;
    s.momentum = static_cast<float>(o.momentum());
    s.one_minus_dampening = static_cast<float>(1 - o.dampening());
    s.weight_decay = static_cast<float>(o.weight_decay());
    s.neg_lr = static_cast<float>(-1 * o.lr());
    s.nesterov = o.nesterov();
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& slot = state_[c10::guts::to_string(p.unsafeGetTensorImpl())];
      s.first = !slot;
      if (!slot) {
        auto fresh = std::make_unique<torch::optim::SGDParamState>();
        fresh->momentum_buffer(torch::empty_like(p, c10::MemoryFormat::Preserve));
        slot = std::move(fresh);
      }
      const torch::Tensor& buf = static_cast<torch::optim::SGDParamState&>(*slot).momentum_buffer();
      float* param = p.data_ptr<float>();
      const float* grad = p.grad().data_ptr<float>();
      float* b = buf.data_ptr<float>();
      uint16_t* mirror = mirrors_ ? mirrors_->target(p) : nullptr;
      for_chunks(
          p.numel(),
          [&](int64_t begin, int64_t end) {
            fused::sgd_momentum(param + begin, grad + begin, b + begin, end - begin, s);
          },
          param, mirror);
      mark_written(p);
      mark_written(buf);
      if (mirror) mirrors_->written(p);
    }
  }
  return loss;
}

}  // namespace codefy::train
