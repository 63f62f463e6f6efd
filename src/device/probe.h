// What devices this process can use, behind an interface so the catalogue and
// the device-string parser can be tested with fake machines (0..N cards,
// unreadable memory) on a CPU-only build.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace codefy::device {

/// One CUDA card as LibTorch numbers it.
struct CudaCard {
  int index = 0;
  std::string name;                    ///< empty when unknown
  std::optional<uint64_t> free_bytes;  ///< read now; empty when unreadable
  std::optional<uint64_t> total_bytes;
  int capability_major = 0;  ///< compute capability; 0 = unknown
  int capability_minor = 0;
};

/// Host RAM from /proc/meminfo.
struct HostMemory {
  std::optional<uint64_t> available_bytes;
  std::optional<uint64_t> total_bytes;
};

class DeviceProbe {
 public:
  virtual ~DeviceProbe() = default;
  /// Whether the linked LibTorch was built with CUDA at all (for messages).
  virtual bool cuda_built() const = 0;
  /// CUDA cards LibTorch can use (0 on a CPU build or a machine without cards).
  virtual int cuda_count() const = 0;
  /// The current CUDA device's index (what plain "cuda" means).
  virtual int cuda_current() const = 0;
  /// Name, capability and memory of card `index` (< cuda_count()), memory read now.
  virtual CudaCard cuda_card(int index) const = 0;
  virtual bool mps_available() const = 0;
  virtual HostMemory host_memory() const = 0;
};

/// This machine, as the linked LibTorch sees it; CUDA memory from NVML
/// (libnvidia-ml.so.1, loaded at run time if present). Stateless: every call
/// reads afresh.
///
/// For tests only: when the environment variable CODEFY_FAKE_CUDA_CARDS is
/// set (`NAME:TOTAL_MIB:FREE_MIB;...`), the cards are those, not the
/// machine's, so an editor's device menus can be checked on a CPU-only
/// machine. Nothing can run on them.
const DeviceProbe& system_probe();

/// Parses CODEFY_FAKE_CUDA_CARDS; throws std::invalid_argument naming a bad entry.
std::vector<CudaCard> parse_fake_cards(const std::string& text);

/// Parses /proc/meminfo text (MemTotal, MemAvailable; kB) — exposed for tests.
HostMemory parse_meminfo(const std::string& text);

}  // namespace codefy::device
