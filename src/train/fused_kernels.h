// Single-pass optimizer updates over float arrays: each element's parameter,
// gradient and state are read once and written once, where LibTorch's
// torch::optim runs one tensor operation (a full pass, often a temporary)
// per term of the update. No LibTorch here; train/fused_optim.h wraps them.
#pragma once

#include <cstdint>

namespace codefy::train::fused {

/// The scalars of one Adam/AdamW update, in float as LibTorch's float
/// kernels use them.
struct AdamScalars {
  float beta1 = 0.9f;
  float one_minus_beta1 = 0.1f;
  float beta2 = 0.999f;
  float one_minus_beta2 = 0.001f;
  float sqrt_bias_correction2 = 1.0f;
  float eps = 1e-8f;
  /// -lr / bias_correction1.
  float neg_step_size = 0.0f;
  /// Adam's L2 term, added to the gradient; 0 = none.
  float l2 = 0.0f;
  /// AdamW's decoupled decay, multiplied into the parameter first: 1 - lr * weight_decay; 1 = none.
  float decay = 1.0f;
};

/// For i in [0, n), exactly the sequence torch::optim::Adam/AdamW (LibTorch
/// 1.13) runs, without amsgrad:
///   g = grad + l2 * param                        (only when l2 != 0)
///   param *= decay                               (only when decay != 1)
///   exp_avg = exp_avg * beta1 + (1 - beta1) * g
///   exp_avg_sq = exp_avg_sq * beta2 + (1 - beta2) * g * g
///   param += neg_step_size * (exp_avg / (sqrt(exp_avg_sq) / sqrt_bias_correction2 + eps))
/// At most one of l2 and decay is set (Adam's or AdamW's). Arrays must not overlap.
void adam(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, std::int64_t n, const AdamScalars& s);

/// The scalars of one SGD-with-momentum update.
struct SgdScalars {
  float momentum = 0.0f;
  float one_minus_dampening = 1.0f;
  float weight_decay = 0.0f;
  float neg_lr = 0.0f;
  bool nesterov = false;
  /// The first update: the momentum buffer starts as the gradient itself.
  bool first = false;
};

/// For i in [0, n), what torch::optim::SGD (LibTorch 1.13) runs with momentum:
///   d = grad + weight_decay * param              (only when weight_decay != 0)
///   buf = first ? d : buf * momentum + (1 - dampening) * d
///   d = nesterov ? d + momentum * buf : buf
///   param += neg_lr * d
void sgd_momentum(float* param, const float* grad, float* buf, std::int64_t n, const SgdScalars& s);

/// dst[i] = src[i] rounded to bfloat16 (bit patterns), as LibTorch rounds:
/// to nearest, ties to even; a NaN becomes the quiet NaN 0x7fc0.
void to_bf16(const float* src, std::uint16_t* dst, std::int64_t n);

/// acc[i] += src[i], src in bfloat16 bit patterns: a bfloat16 gradient
/// added into a float one in one pass (the cast and the add, fused).
void add_bf16(float* acc, const std::uint16_t* src, std::int64_t n);

}  // namespace codefy::train::fused
