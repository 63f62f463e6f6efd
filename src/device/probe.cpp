#include "device/probe.h"

#include "util/parse.h"

#include <ATen/Context.h>
#include <torch/cuda.h>

#include <dlfcn.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

#ifdef CODEFY_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace codefy::device {

HostMemory parse_meminfo(const std::string& text) {
  HostMemory m;
  std::istringstream in(text);
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb) {
    std::getline(in, unit);
    if (key == "MemTotal:")
      m.total_bytes = kb * 1024;
    else if (key == "MemAvailable:")
      m.available_bytes = kb * 1024;
  }
  return m;
}

namespace {

#ifdef CODEFY_WITH_CUDA
/// The few NVML calls needed for a card's free memory, resolved at run time
/// so there is no build dependency and machines without the driver just
/// get no memory reading.
class Nvml {
 public:
  static const Nvml& get() {
    static const Nvml nvml;  // loaded once, read-only afterwards
    return nvml;
  }
  std::optional<std::pair<uint64_t, uint64_t>> memory_by_pci(const std::string& bus_id) const {
    if (!ok_) return std::nullopt;
    void* dev = nullptr;
    if (by_pci_(bus_id.c_str(), &dev) != 0) return std::nullopt;
    Memory m{};
    if (memory_(dev, &m) != 0) return std::nullopt;
    return std::make_pair(m.free, m.total);
  }

 private:
  struct Memory {
    unsigned long long total, free, used;
  };
  Nvml() {
    lib_ = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!lib_) return;
    auto init = reinterpret_cast<int (*)()>(dlsym(lib_, "nvmlInit_v2"));
    by_pci_ = reinterpret_cast<int (*)(const char*, void**)>(dlsym(lib_, "nvmlDeviceGetHandleByPciBusId_v2"));
    memory_ = reinterpret_cast<int (*)(void*, Memory*)>(dlsym(lib_, "nvmlDeviceGetMemoryInfo"));
    ok_ = init && by_pci_ && memory_ && init() == 0;
  }
  void* lib_ = nullptr;
  int (*by_pci_)(const char*, void**) = nullptr;
  int (*memory_)(void*, Memory*) = nullptr;
  bool ok_ = false;
};
#endif

class SystemProbe final : public DeviceProbe {
 public:
  bool cuda_built() const override {
#ifdef CODEFY_WITH_CUDA
    return true;
#else
    return false;
#endif
  }
  int cuda_count() const override {
    return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
  }
  int cuda_current() const override {
#ifdef CODEFY_WITH_CUDA
    return cuda_count() > 0 ? static_cast<int>(c10::cuda::current_device()) : 0;
#else
    return 0;
#endif
  }
  CudaCard cuda_card(int index) const override {
    CudaCard c;
    c.index = index;
#ifdef CODEFY_WITH_CUDA
    const cudaDeviceProp* p = at::cuda::getDeviceProperties(index);
    c.name = p->name;
    c.capability_major = p->major;
    c.capability_minor = p->minor;
    c.total_bytes = static_cast<uint64_t>(p->totalGlobalMem);
    char bus[32];
    std::snprintf(bus, sizeof bus, "%08X:%02X:%02X.0", static_cast<unsigned>(p->pciDomainID),
                  static_cast<unsigned>(p->pciBusID), static_cast<unsigned>(p->pciDeviceID));
    if (auto m = Nvml::get().memory_by_pci(bus)) {
      c.free_bytes = m->first;
      c.total_bytes = m->second;
    }
#endif
    return c;
  }
  bool mps_available() const override { return at::hasMPS(); }
  HostMemory host_memory() const override {
    std::ifstream f("/proc/meminfo");
    std::stringstream s;
    s << f.rdbuf();
    return parse_meminfo(s.str());
  }
};

/// This machine's CPU and memory with CUDA cards that are not there: what
/// CODEFY_FAKE_CUDA_CARDS describes, for tests of what an editor shows.
class FakeCardsProbe final : public DeviceProbe {
 public:
  explicit FakeCardsProbe(std::vector<CudaCard> cards) : cards_(std::move(cards)) {}
  bool cuda_built() const override { return true; }
  int cuda_count() const override { return static_cast<int>(cards_.size()); }
  int cuda_current() const override { return 0; }
  CudaCard cuda_card(int index) const override { return cards_.at(static_cast<size_t>(index)); }
  bool mps_available() const override { return false; }
  HostMemory host_memory() const override { return system_.host_memory(); }

 private:
  SystemProbe system_;
  std::vector<CudaCard> cards_;
};

}  // namespace

std::vector<CudaCard> parse_fake_cards(const std::string& text) {
  std::vector<CudaCard> cards;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ';');) {
    if (item.empty()) continue;
    std::vector<std::string> parts;
    std::stringstream fields(item);
    for (std::string f; std::getline(fields, f, ':');) parts.push_back(f);
    const auto total = parts.size() == 3 ? util::parse_int(parts[1]) : std::nullopt;
    const auto free = parts.size() == 3 ? util::parse_int(parts[2]) : std::nullopt;
    if (!total || !free || *total < 0 || *free < 0 || *free > *total || parts[0].empty())
      throw std::invalid_argument("CODEFY_FAKE_CUDA_CARDS: \"" + item + "\" is not NAME:TOTAL_MIB:FREE_MIB");
    CudaCard c;
    c.index = static_cast<int>(cards.size());
    c.name = parts[0];
    c.total_bytes = static_cast<uint64_t>(*total) << 20;
    c.free_bytes = static_cast<uint64_t>(*free) << 20;
    c.capability_major = 8;  // bf16 and fp16, as on the cards people train on
    cards.push_back(std::move(c));
  }
  return cards;
}

const DeviceProbe& system_probe() {
  static const std::unique_ptr<DeviceProbe> probe = []() -> std::unique_ptr<DeviceProbe> {
    const char* fake = std::getenv("CODEFY_FAKE_CUDA_CARDS");
    if (fake && *fake) return std::make_unique<FakeCardsProbe>(parse_fake_cards(fake));
    return std::make_unique<SystemProbe>();  // stateless
  }();
  return *probe;
}

}  // namespace codefy::device
