// The machine as LibTorch sees it: threads, BLAS, devices.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace codefy::device {

/// Tunes glibc malloc so LibTorch's per-batch buffers (activations, gradients,
/// up to 32 MiB each) are reused instead of mmap'd and unmapped every batch:
/// measured 3-4x faster CPU training here, where each fresh page costs a fault.
/// Call once at start-up, before the first tensor. CODEFY_MALLOC_TUNING=0 skips it
/// (for the side-by-side benchmark). Returns whether it was applied.
bool tune_allocator();

/// CPUs this process may run on (sched_getaffinity), at least 1.
int usable_cpus();

/// Sets LibTorch's intra-op thread count: `requested` if > 0, else the
/// CODEFY_NUM_THREADS environment variable, else usable_cpus(). Returns it.
int configure_threads(int requested = 0);

/// Below this many multiply-adds per forward batch one intra-op thread
/// trains at least as fast as two: measured on this project's 2-vCPU machine
/// with MLPs of 700 to 670k weights (bench/RESULTS.md, "Threads"); a second
/// thread paid at 8.6e7 in every run and never clearly at 1.7e7 or below.
inline constexpr double kOneThreadBelowMultiplyAdds = 5e7;

/// The intra-op threads for a training run whose forward batch costs
/// `multiply_adds`: one below kOneThreadBelowMultiplyAdds, else `usable`.
inline int threads_for_work(double multiply_adds, int usable) {
  return multiply_adds < kOneThreadBelowMultiplyAdds ? 1 : usable;
}

/// How a run's compute threads are scheduled beside a server's I/O threads.
struct ComputePriority {
  enum class Kind {
    /// kIdle for a run on the CPU, whose threads are the machine's compute;
    /// kNice 10 for a run on a card, whose threads feed it (launches, data):
    /// idle, they would leave the card waiting whenever another program is busy.
    kAuto,
    /// SCHED_IDLE: the run computes on the CPU time nothing else asks for,
    /// and any waking thread of normal priority (an I/O thread, the browser)
    /// preempts it at once.
    kIdle,
    /// SCHED_BATCH at `niceness` (1-19); 0 leaves the threads at the
    /// server's own priority.
    kNice,
  };
  Kind kind = Kind::kAuto;
  int niceness = 0;

  /// "auto", "idle" or a nice value 0-19; nullopt for anything else.
  static std::optional<ComputePriority> parse(std::string_view text);
  /// The priority a run on the CPU (`on_cpu`) or on a card computes at: kAuto resolved.
  ComputePriority for_run(bool on_cpu) const;
};

/// Lowers the scheduling priority of the calling thread and of LibTorch's
/// intra-op threads to `priority`, so a server's I/O threads answer quickly
/// while a run computes (they win the CPU when they need it; the run gets it
/// back at once). Per thread: the rest of the process keeps its priority, and
/// threads and processes the run starts inherit it. Returns whether every
/// thread reached was lowered. kAuto counts as a run on the CPU.
bool lower_compute_priority(const ComputePriority& priority);

/// Which BLAS library serves matrix products.
struct BlasInfo {
  std::string path;    ///< resolved file of libblas.so.3 / libopenblas as loaded
  std::string name;    ///< "OpenBLAS", "reference BLAS", "BLIS", "MKL", "unknown"
  std::string config;  ///< OpenBLAS's own config string when available
  bool is_reference = false;
};
BlasInfo blas_info();

/// A report of the runtime for `codefy devices`/`doctor`: LibTorch version,
/// threads, BLAS, devices, warnings.
nlohmann::json runtime_report();

}  // namespace codefy::device
