// Mixed precision: what a device can do, and autocast as an RAII guard.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <string>

namespace codefy::train {

/// TrainingLoop's `precision`.
enum class Precision { kFp32, kBf16, kFp16 };

const char* to_string(Precision p);
/// "fp32", "bf16", "fp16"; throws std::invalid_argument otherwise.
Precision parse_precision(const std::string& s);

/// The precision a run will use for a request on a device.
struct PrecisionChoice {
  Precision requested = Precision::kFp32;
  Precision used = Precision::kFp32;
  /// Why `used` differs from `requested`; empty when they agree.
  std::string warning;
};

/// Checks a request against the device and the linked LibTorch before the
/// first batch: CUDA needs compute capability 8.0 for bf16; MPS
/// runs fp32 only; CPU runs what LibTorch's CPU autocast supports (1.13:
/// bf16 only). Anything else falls back to fp32 with a warning — never fails.
PrecisionChoice check_precision(Precision requested, c10::Device device);

/// Autocast on the current thread for the lifetime of the guard (forward and
/// loss only; backward runs outside it). Restores the previous state and
/// clears the autocast cache on exit. A no-op for fp32.
class AutocastGuard {
 public:
  AutocastGuard(Precision precision, c10::Device device);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool active_ = false;
  bool cuda_ = false;
  bool was_enabled_ = false;
  c10::ScalarType old_dtype_ = c10::ScalarType::Undefined;
};

/// Keeps autocast's cache of cast weights for the lifetime of the guard,
/// where each AutocastGuard alone clears it on exit. The trainer holds one
/// across an accumulation window: the weights change only at the update, so
/// each is cast to 16 bits once per update instead of once per micro-batch.
/// Autocast caches the weights an op takes as they are (convolutions, and
/// Linear in LibTorch 2); LibTorch 1.13's CPU Linear casts a transposed view
/// of its weight, which is never cached. The cast copies keep their link to
/// the weights, so every micro-batch's backward still reaches the fp32
/// gradients. A no-op for fp32.
class AutocastCacheScope {
 public:
  explicit AutocastCacheScope(Precision precision);
  ~AutocastCacheScope();
  AutocastCacheScope(const AutocastCacheScope&) = delete;
  AutocastCacheScope& operator=(const AutocastCacheScope&) = delete;

 private:
  bool active_ = false;
};

/// Whether CPU autocast is on in bf16 on this thread.
bool cpu_autocast_bf16();

/// CPU autocast off on this thread for the guard's lifetime, for an op that
/// runs faster in fp32 (its inputs must then be fp32); restored on exit.
class CpuAutocastOff {
 public:
  CpuAutocastOff();
  ~CpuAutocastOff();
  CpuAutocastOff(const CpuAutocastOff&) = delete;
  CpuAutocastOff& operator=(const CpuAutocastOff&) = delete;

 private:
  bool was_enabled_;
};

}  // namespace codefy::train
