// Built with -O3 -fno-math-errno (CMakeLists.txt) so the loops vectorize, and
// cloned per instruction set (AVX-512, AVX2, baseline) with the best picked
// when the program loads. Without FMA contraction (ISO C++ mode) every clone
// rounds alike, so results do not depend on the CPU.
#include "train/fused_kernels.h"

#include <cmath>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CODEFY_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CODEFY_CLONES
#endif

namespace codefy::train::fused {
namespace {

template <bool kL2, bool kDecay>
__attribute__((always_inline)) inline void adam_loop(float* __restrict param, const float* __restrict grad,
                                                     float* __restrict exp_avg, float* __restrict exp_avg_sq,
                                                     std::int64_t n, AdamScalars s) {
  for (std::int64_t i = 0; i < n; ++i) {
    float p = param[i];
    float g = grad[i];
    if constexpr (kL2) g = g + s.l2 * p;
    if constexpr (kDecay) p = p * s.decay;
    const float m = exp_avg[i] * s.beta1 + s.one_minus_beta1 * g;
    const float v = exp_avg_sq[i] * s.beta2 + s.one_minus_beta2 * g * g;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    const float denom = std::sqrt(v) / s.sqrt_bias_correction2 + s.eps;
    param[i] = p + s.neg_step_size * (m / denom);
  }
}

CODEFY_CLONES void adam_plain(float* param, const float* grad, float* m, float* v, std::int64_t n, AdamScalars s) {
  adam_loop<false, false>(param, grad, m, v, n, s);
}
CODEFY_CLONES void adam_l2(float* param, const float* grad, float* m, float* v, std::int64_t n, AdamScalars s) {
  adam_loop<true, false>(param, grad, m, v, n, s);
}
CODEFY_CLONES void adam_decay(float* param, const float* grad, float* m, float* v, std::int64_t n, AdamScalars s) {
  adam_loop<false, true>(param, grad, m, v, n, s);
}

template <bool kDecay, bool kNesterov>
__attribute__((always_inline)) inline void sgd_loop(float* __restrict param, const float* __restrict grad,
                                                    float* __restrict buf, std::int64_t n, SgdScalars s) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float p = param[i];
    float d = grad[i];
    if constexpr (kDecay) d = d + s.weight_decay * p;
    const float b = s.first ? d : buf[i] * s.momentum + s.one_minus_dampening * d;
    buf[i] = b;
    if constexpr (kNesterov)
      d = d + s.momentum * b;
    else
      d = b;
    param[i] = p + s.neg_lr * d;
  }
}

CODEFY_CLONES void sgd_plain(float* param, const float* grad, float* buf, std::int64_t n, SgdScalars s) {
  sgd_loop<false, false>(param, grad, buf, n, s);
}
CODEFY_CLONES void sgd_decay(float* param, const float* grad, float* buf, std::int64_t n, SgdScalars s) {
  sgd_loop<true, false>(param, grad, buf, n, s);
}
CODEFY_CLONES void sgd_nesterov(float* param, const float* grad, float* buf, std::int64_t n, SgdScalars s) {
  sgd_loop<false, true>(param, grad, buf, n, s);
}
CODEFY_CLONES void sgd_decay_nesterov(float* param, const float* grad, float* buf, std::int64_t n, SgdScalars s) {
  sgd_loop<true, true>(param, grad, buf, n, s);
}

CODEFY_CLONES void to_bf16_loop(const float* __restrict src, std::uint16_t* __restrict dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &src[i], sizeof bits);
    const std::uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
    dst[i] = static_cast<std::uint16_t>(nan ? 0x7fc0u : rounded);
  }
}

CODEFY_CLONES void add_bf16_loop(float* __restrict acc, const std::uint16_t* __restrict src, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t bits = static_cast<std::uint32_t>(src[i]) << 16;
    float v;
    std::memcpy(&v, &bits, sizeof v);
    acc[i] += v;
  }
}

}  // namespace

void to_bf16(const float* src, std::uint16_t* dst, std::int64_t n) { to_bf16_loop(src, dst, n); }

void add_bf16(float* acc, const std::uint16_t* src, std::int64_t n) { add_bf16_loop(acc, src, n); }

void adam(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, std::int64_t n, const AdamScalars& s) {
  // AdamW with weight_decay 0 has decay 1 and Adam without has l2 0: both
  // take the plain loop, as LibTorch skips those terms.
  if (s.l2 != 0.0f)
    adam_l2(param, grad, exp_avg, exp_avg_sq, n, s);
  else if (s.decay != 1.0f)
    adam_decay(param, grad, exp_avg, exp_avg_sq, n, s);
  else
    adam_plain(param, grad, exp_avg, exp_avg_sq, n, s);
}

void sgd_momentum(float* param, const float* grad, float* buf, std::int64_t n, const SgdScalars& s) {
  const bool decay = s.weight_decay != 0.0f;
  if (decay && s.nesterov)
    sgd_decay_nesterov(param, grad, buf, n, s);
  else if (decay)
    sgd_decay(param, grad, buf, n, s);
  else if (s.nesterov)
    sgd_nesterov(param, grad, buf, n, s);
  else
    sgd_plain(param, grad, buf, n, s);
}

}  // namespace codefy::train::fused
