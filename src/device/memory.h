// Memory accounting: a counting CPU allocator (live, peak and allocation
// counts for the process, and an optional budget that refuses allocations
// past it, as a full GPU does), and CUDA's caching-allocator statistics.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <exception>
#include <optional>
#include <string>

namespace codefy::device {

struct CpuMemoryStats {
  int64_t live_bytes = 0;             ///< CPU tensor storage alive now
  int64_t peak_bytes = 0;             ///< highest live_bytes since the last reset_cpu_peak()
  int64_t allocations = 0;            ///< allocations since install
  int64_t budget_bytes = 0;           ///< 0 = no budget
  int64_t live_at_failure_bytes = 0;  ///< live bytes when the last allocation was refused or failed
  bool installed = false;             ///< false: nothing is counted
};

/// Makes the counting allocator LibTorch's CPU allocator (idempotent; call at
/// start-up). Tensors allocated before are freed by their own allocator and
/// never counted. Returns whether it is in place.
bool install_counting_allocator();
CpuMemoryStats cpu_memory();
/// Starts a new peak from the current live bytes (per node, per run).
void reset_cpu_peak();
/// Refuse CPU allocations that would take live bytes past `bytes` with
/// c10::OutOfMemoryError (0 removes the budget).
void set_cpu_budget(int64_t bytes);

/// Whether `e` says memory ran out: c10::OutOfMemoryError (a full card, the
/// CPU budget, and, once the counting allocator is installed, the CPU
/// allocator's own failure) or std::bad_alloc. The one place that decides it,
/// by type.
bool is_out_of_memory(const std::exception& e);
/// CODEFYUI_CPU_MEMORY_BUDGET_MB in bytes, 0 when unset; throws
/// std::invalid_argument when it is not a whole number of MB.
int64_t cpu_budget_from_env();

/// One device's memory at a moment, for reports and metrics.
struct MemoryReading {
  c10::Device device = c10::Device(c10::kCPU);
  int64_t live_bytes = 0;
  int64_t peak_bytes = 0;
  std::optional<int64_t> reserved_bytes;       ///< CUDA caching allocator
  std::optional<int64_t> peak_reserved_bytes;  ///< CUDA: highest reserved since the last reset_peak
  std::optional<int64_t> total_bytes;     ///< the card (CUDA), the budget (CPU, when set)
  bool counted = false;                   ///< false: no counter for this device
};
MemoryReading read_memory(c10::Device device);
/// Resets the peak of `device` (CPU: the counter; CUDA: the caching allocator's).
void reset_peak(c10::Device device);
/// After an out-of-memory: return cached free blocks (CUDA) and trimmed heap
/// (glibc) so the next run starts clean.
void release_cached_memory(c10::Device device);

/// "1.23 GiB", "512.0 MiB", "12.0 KiB", "100 B".
std::string format_bytes(int64_t bytes);

/// A memory budget for one device a server worker uses: the CPU budget
/// (set_cpu_budget) or, on CUDA, the caching allocator's per-process memory
/// fraction (budget / card memory, as set_per_process_memory_fraction).
/// Throws std::invalid_argument for a device this build cannot budget.
void set_device_budget(c10::Device device, int64_t bytes);

}  // namespace codefy::device
