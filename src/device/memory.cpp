#include "device/memory.h"

#include "util/parse.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#ifdef CODEFY_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace codefy::device {

namespace {

/// Wraps LibTorch's CPU allocator: every storage's bytes are added to `live`
/// when allocated and taken off when freed. Some kernels (oneDNN) use the raw
/// interface, which frees by pointer alone, so the size lives in a 64-byte
/// header in front of the data (64 keeps LibTorch's alignment).
class CountingAllocator final : public c10::Allocator {
 public:
  static constexpr size_t kHeader = 64;

  explicit CountingAllocator(c10::Allocator* base) : base_(base), base_deleter_(base->raw_deleter()) {}
  /// Wrapping needs a base that frees by pointer alone (LibTorch's default does).
  bool usable() const { return base_deleter_ != nullptr; }

  // LibTorch 2.3 made allocate() non-const and added copy_data(); declaring
  // both forms (without `override`) fits either interface. Clang would flag
  // the missing `override` beside raw_deleter()'s (clang-tidy reads this file
  // with clang; gcc has no such warning).
#ifdef __clang__
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Winconsistent-missing-override"
#endif
  c10::DataPtr allocate(size_t n) const { return allocate_counted(n); }
  c10::DataPtr allocate(size_t n) { return allocate_counted(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }
#ifdef __clang__
#pragma clang diagnostic pop
#endif
  c10::DeleterFnPtr raw_deleter() const override { return &release; }

  CpuMemoryStats stats() const {
    return {live_.load(std::memory_order_relaxed),         peak_.load(std::memory_order_relaxed),
            allocations_.load(std::memory_order_relaxed),  budget_.load(std::memory_order_relaxed),
            failure_live_.load(std::memory_order_relaxed), true};
  }
  void reset_peak() { peak_.store(live_.load(std::memory_order_relaxed), std::memory_order_relaxed); }
  void set_budget(int64_t bytes) { budget_.store(bytes, std::memory_order_relaxed); }

 private:
  static void release(void* data);

  c10::DataPtr allocate_counted(size_t n) const {
    const auto size = static_cast<int64_t>(n);
    const int64_t live = live_.fetch_add(size, std::memory_order_relaxed) + size;
    const int64_t budget = budget_.load(std::memory_order_relaxed);
    if (budget > 0 && live > budget) {
      live_.fetch_sub(size, std::memory_order_relaxed);
      failure_live_.store(live - size, std::memory_order_relaxed);
      TORCH_CHECK_WITH(OutOfMemoryError, false, "CPU memory budget exceeded: tried to allocate ", format_bytes(size),
                       " with ", format_bytes(live - size), " live of a ", format_bytes(budget), " budget");
    }
    int64_t peak = peak_.load(std::memory_order_relaxed);
    while (live > peak && !peak_.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
    }
    allocations_.fetch_add(1, std::memory_order_relaxed);
    void* raw = nullptr;
    try {
      raw = base_->allocate(n + kHeader).release_context();  // freed again through base_deleter_
    } catch (const c10::OutOfMemoryError&) {
      failure_live_.store(live_.fetch_sub(size, std::memory_order_relaxed) - size, std::memory_order_relaxed);
      throw;
    } catch (const c10::Error& e) {
      // LibTorch's CPU allocator says "can't allocate memory" as a plain
      // c10::Error; it leaves here typed, so nothing above reads its text.
      failure_live_.store(live_.fetch_sub(size, std::memory_order_relaxed) - size, std::memory_order_relaxed);
      TORCH_CHECK_WITH(OutOfMemoryError, false, e.msg());
    }
    *static_cast<int64_t*>(raw) = size;
    void* data = static_cast<char*>(raw) + kHeader;
    return {data, data, &release, c10::Device(c10::kCPU)};
  }

  c10::Allocator* base_;
  c10::DeleterFnPtr base_deleter_;
  mutable std::atomic<int64_t> live_{0}, peak_{0}, allocations_{0}, failure_live_{0};
  std::atomic<int64_t> budget_{0};
};

/// The one instance, created by install_counting_allocator() at start-up.
/// Never deleted: storages alive at exit still point at it.
CountingAllocator* counting() {
  static CountingAllocator* const instance = new CountingAllocator(c10::GetCPUAllocator());
  return instance;
}

void CountingAllocator::release(void* data) {
  void* raw = static_cast<char*>(data) - kHeader;
  CountingAllocator* self = counting();
  self->live_.fetch_sub(*static_cast<int64_t*>(raw), std::memory_order_relaxed);
  self->base_deleter_(raw);
}

}  // namespace

bool is_out_of_memory(const std::exception& e) {
  return dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr ||
         dynamic_cast<const std::bad_alloc*>(&e) != nullptr;
}

bool install_counting_allocator() {
  CountingAllocator* a = counting();
  if (!a->usable()) return false;
  if (c10::GetCPUAllocator() != a) c10::SetCPUAllocator(a, /*priority=*/1);
  return c10::GetCPUAllocator() == a;
}

CpuMemoryStats cpu_memory() {
  if (c10::GetCPUAllocator() != counting()) return {};
  return counting()->stats();
}

void reset_cpu_peak() { counting()->reset_peak(); }

void set_cpu_budget(int64_t bytes) { counting()->set_budget(bytes < 0 ? 0 : bytes); }

int64_t cpu_budget_from_env() {
  return util::env_count("CODEFYUI_CPU_MEMORY_BUDGET_MB", "a whole number of MB").value_or(0) << 20;
}

MemoryReading read_memory(c10::Device device) {
  MemoryReading r;
  r.device = device;
  if (device.is_cpu()) {
    const CpuMemoryStats s = cpu_memory();
    r.counted = s.installed;
    r.live_bytes = s.live_bytes;
    r.peak_bytes = s.peak_bytes;
    if (s.budget_bytes > 0) r.total_bytes = s.budget_bytes;
  }
#ifdef CODEFY_WITH_CUDA
  if (device.is_cuda()) {
    namespace cca = c10::cuda::CUDACachingAllocator;
    const int index = device.has_index() ? device.index() : 0;
    const auto stats = cca::getDeviceStats(index);
    // StatType::AGGREGATE, index 0; the enum moved namespaces in LibTorch 2.6.
    constexpr size_t agg = 0;
    r.counted = true;
    r.live_bytes = stats.allocated_bytes[agg].current;
    r.peak_bytes = stats.allocated_bytes[agg].peak;
    r.reserved_bytes = stats.reserved_bytes[agg].current;
    r.peak_reserved_bytes = stats.reserved_bytes[agg].peak;
    r.total_bytes = static_cast<int64_t>(at::cuda::getDeviceProperties(index)->totalGlobalMem);
  }
#endif
  return r;
}

void reset_peak(c10::Device device) {
  if (device.is_cpu()) reset_cpu_peak();
#ifdef CODEFY_WITH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.has_index() ? device.index() : 0);
#endif
}

void set_device_budget(c10::Device device, int64_t bytes) {
  if (bytes <= 0) throw std::invalid_argument("the memory budget for " + device.str() + " must be above 0 MB");
  if (device.is_cpu()) return set_cpu_budget(bytes);
#ifdef CODEFY_WITH_CUDA
  if (device.is_cuda()) {
    const int index = device.has_index() ? device.index() : 0;
    const double total = static_cast<double>(at::cuda::getDeviceProperties(index)->totalGlobalMem);
    c10::cuda::CUDACachingAllocator::setMemoryFraction(std::min(1.0, static_cast<double>(bytes) / total), index);
    return;
  }
#endif
  throw std::invalid_argument("cannot set a memory budget for " + device.str() + " in this build");
}

void release_cached_memory(c10::Device device) {
#ifdef CODEFY_WITH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::emptyCache();
#endif
  (void)device;
  malloc_trim(0);
}

std::string format_bytes(int64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (bytes >= (1LL << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1LL << 30));
  else if (bytes >= (1LL << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1LL << 20));
  else if (bytes >= (1LL << 10))
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / (1LL << 10));
  else
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  return buf;
}

}  // namespace codefy::device
