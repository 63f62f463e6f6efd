#include "train/precision.h"

#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/cuda.h>
#include <torch/library.h>
#include <torch/version.h>

#include <stdexcept>

#ifdef CODEFY_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

#if TORCH_VERSION_MAJOR < 2
namespace {

// LibTorch 1.13's CPU autocast leaves layer_norm and group_norm off its
// fp32 list: a bf16 activation meets the norm's fp32 weight and the op
// fails ("expected scalar type BFloat16 but found Float"; PyTorch 1.13 fails
// the same way), so no Transformer could train in bf16 on a CPU. These
// kernels compute the two in fp32 and hand a bf16 input's result back in
// bf16, as LibTorch 2's mixed-type CPU kernels do: an fp32 result would turn
// every tensor after it (a Transformer's residual stream) back to fp32 and
// keep twice the activation memory. The casts go through autograd, so
// gradients reach the bf16 activations.
void norm_in_fp32(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const size_t args = op.schema().arguments().size();
  const size_t first = stack->size() - args;
  const bool bf16_input = (*stack)[first].isTensor() && (*stack)[first].toTensor().scalar_type() == at::kBFloat16;
  for (size_t i = first; i < stack->size(); ++i) {
    c10::IValue& v = (*stack)[i];
    if (v.isTensor() && v.toTensor().scalar_type() == at::kBFloat16) v = v.toTensor().to(at::kFloat);
  }
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  const size_t before = stack->size() - args;
  op.callBoxed(stack);
  if (!bf16_input) return;
  for (size_t i = before; i < stack->size(); ++i) {
    c10::IValue& v = (*stack)[i];
    if (v.isTensor() && v.toTensor().scalar_type() == at::kFloat) v = v.toTensor().to(at::kBFloat16);
  }
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, AutocastCPU, m) {
  m.impl("layer_norm", torch::CppFunction::makeFromBoxedFunction<&norm_in_fp32>());
  m.impl("group_norm", torch::CppFunction::makeFromBoxedFunction<&norm_in_fp32>());
}
#endif

namespace codefy::train {

namespace {

c10::ScalarType dtype_of(Precision p) { return p == Precision::kBf16 ? c10::kBFloat16 : c10::kHalf; }

// LibTorch 2.x takes the device type; 1.13 has one function per backend.
bool autocast_enabled(bool cuda) {
#if TORCH_VERSION_MAJOR >= 2
  return at::autocast::is_autocast_enabled(cuda ? at::kCUDA : at::kCPU);
#else
  return cuda ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}
void set_autocast(bool cuda, bool enabled, c10::ScalarType dtype) {
#if TORCH_VERSION_MAJOR >= 2
  at::autocast::set_autocast_enabled(cuda ? at::kCUDA : at::kCPU, enabled);
  if (dtype != c10::ScalarType::Undefined) at::autocast::set_autocast_dtype(cuda ? at::kCUDA : at::kCPU, dtype);
#else
  if (cuda) {
    at::autocast::set_enabled(enabled);
    if (dtype != c10::ScalarType::Undefined) at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_cpu_enabled(enabled);
    if (dtype != c10::ScalarType::Undefined) at::autocast::set_autocast_cpu_dtype(dtype);
  }
#endif
}
c10::ScalarType autocast_dtype(bool cuda) {
#if TORCH_VERSION_MAJOR >= 2
  return at::autocast::get_autocast_dtype(cuda ? at::kCUDA : at::kCPU);
#else
  return cuda ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
#endif
}

}  // namespace

const char* to_string(Precision p) {
  switch (p) {
    case Precision::kFp32: return "fp32";
    case Precision::kBf16: return "bf16";
    case Precision::kFp16: return "fp16";
  }
  return "fp32";
}

Precision parse_precision(const std::string& s) {
  if (s == "fp32") return Precision::kFp32;
  if (s == "bf16") return Precision::kBf16;
  if (s == "fp16") return Precision::kFp16;
  throw std::invalid_argument("unknown precision \"" + s + "\" (fp32, bf16 or fp16)");
}

PrecisionChoice check_precision(Precision requested, c10::Device device) {
  PrecisionChoice c{requested, requested, ""};
  if (requested == Precision::kFp32) return c;
  auto fall_back = [&](const std::string& why) {
    c.used = Precision::kFp32;
    c.warning = std::string("precision ") + to_string(requested) + " is not available: " + why + "; training in fp32";
  };
  if (device.is_cpu()) {
#if TORCH_VERSION_MAJOR < 2
    if (requested == Precision::kFp16)
      fall_back("LibTorch " TORCH_VERSION " autocasts to float16 on CUDA only (its CPU autocast supports bfloat16)");
#endif
  } else if (device.is_cuda()) {
#ifdef CODEFY_WITH_CUDA
    if (requested == Precision::kBf16) {
      const auto* prop = at::cuda::getDeviceProperties(device.index() < 0 ? 0 : device.index());
      if (prop->major < 8)
        fall_back("this card (compute capability " + std::to_string(prop->major) + "." + std::to_string(prop->minor) +
                  ") has no bfloat16 support; try fp16");
    }
#endif
  } else if (device.is_mps()) {
    fall_back("MPS kernels are float32-native, so 16-bit modes only add conversions");
  } else {
    fall_back("unsupported device " + device.str());
  }
  return c;
}

AutocastGuard::AutocastGuard(Precision precision, c10::Device device) {
  if (precision == Precision::kFp32) return;
  cuda_ = device.is_cuda();
  was_enabled_ = autocast_enabled(cuda_);
  old_dtype_ = autocast_dtype(cuda_);
  set_autocast(cuda_, true, dtype_of(precision));
  at::autocast::increment_nesting();
  active_ = true;
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  // Leaving the outermost autocast region frees the cached casts of the weights.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast(cuda_, was_enabled_, old_dtype_);
}

AutocastCacheScope::AutocastCacheScope(Precision precision) : active_(precision != Precision::kFp32) {
  if (active_) at::autocast::increment_nesting();
}

AutocastCacheScope::~AutocastCacheScope() {
  if (active_ && at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
}

bool cpu_autocast_bf16() { return autocast_enabled(false) && autocast_dtype(false) == c10::kBFloat16; }

CpuAutocastOff::CpuAutocastOff() : was_enabled_(autocast_enabled(false)) {
  if (was_enabled_) set_autocast(false, false, c10::ScalarType::Undefined);
}

CpuAutocastOff::~CpuAutocastOff() {
  if (was_enabled_) set_autocast(false, true, c10::ScalarType::Undefined);
}

}  // namespace codefy::train
