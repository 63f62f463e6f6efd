#include "device/catalogue.h"

#include <torch/version.h>

#include <cstdio>

namespace codefy::device {

namespace {

std::vector<std::string> cpu_precisions() {
#if TORCH_VERSION_MAJOR >= 2
  return {"fp32", "bf16", "fp16"};
#else
  return {"fp32", "bf16"};  // LibTorch 1.13's CPU autocast knows bfloat16 only
#endif
}

std::vector<std::string> cuda_precisions(const CudaCard& c) {
  // bf16 needs compute capability 8.0 (Ampere); unknown capability: offer it, the run checks.
  if (c.capability_major > 0 && c.capability_major < 8) return {"fp32", "fp16"};
  return {"fp32", "bf16", "fp16"};
}

std::string cards_phrase(int count) {
  std::string s = "this machine has " + std::to_string(count) + (count == 1 ? " CUDA card (cuda:0)" : " CUDA cards (");
  if (count == 2)
    s += "cuda:0, cuda:1)";
  else if (count > 2)
    s += "cuda:0 to cuda:" + std::to_string(count - 1) + ")";
  return s;
}

/// Exactly "cuda:" followed by decimal digits; the index, or -1.
long long cuda_index(const std::string& s) {
  if (s.rfind("cuda:", 0) != 0 || s.size() == 5 || s.size() > 5 + 9) return -1;
  long long v = 0;
  for (size_t i = 5; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

}  // namespace

std::string free_total_gib(uint64_t free_bytes, uint64_t total_bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f/%.1f GiB", static_cast<double>(free_bytes) / (1ULL << 30),
                static_cast<double>(total_bytes) / (1ULL << 30));
  return buf;
}

std::vector<DeviceEntry> device_catalogue(const DeviceProbe& probe) {
  std::vector<DeviceEntry> out;
  const HostMemory host = probe.host_memory();
  out.push_back({"cpu", "CPU", "", host.available_bytes, host.total_bytes, cpu_precisions()});

  auto memory_suffix = [](const CudaCard& c) {
    return c.free_bytes && c.total_bytes ? " · " + free_total_gib(*c.free_bytes, *c.total_bytes) : std::string();
  };
  const int count = probe.cuda_count();
  if (count > 0) {
    const int current = probe.cuda_current() >= 0 && probe.cuda_current() < count ? probe.cuda_current() : 0;
    std::vector<CudaCard> cards;
    cards.reserve(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) cards.push_back(probe.cuda_card(i));
    const CudaCard& cur = cards[static_cast<size_t>(current)];
    out.push_back(
        {"cuda", "NVIDIA CUDA" + memory_suffix(cur), cur.name, cur.free_bytes, cur.total_bytes, cuda_precisions(cur)});
    if (count >= 2) {
      for (const auto& c : cards) {
        const std::string id = "cuda:" + std::to_string(c.index);
        out.push_back({id,
                       "NVIDIA CUDA #" + std::to_string(c.index) + " · " + id + (c.name.empty() ? "" : " · " + c.name) +
                           memory_suffix(c),
                       c.name, c.free_bytes, c.total_bytes, cuda_precisions(c)});
      }
    }
  }
  if (probe.mps_available()) out.push_back({"mps", "Apple MPS", "", {}, {}, {"fp32"}});
  return out;
}

nlohmann::json to_json(const std::vector<DeviceEntry>& entries) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& e : entries) {
    nlohmann::json j = {{"device", e.device}, {"label", e.label}, {"precisions", e.precisions}};
    if (!e.name.empty()) j["name"] = e.name;
    j["free_bytes"] = e.free_bytes ? nlohmann::json(*e.free_bytes) : nlohmann::json();
    j["total_bytes"] = e.total_bytes ? nlohmann::json(*e.total_bytes) : nlohmann::json();
    a.push_back(std::move(j));
  }
  return a;
}

std::string DeviceSource::describe() const {
  std::string s;
  if (!graph.empty()) s += "graph \"" + graph + "\", ";
  if (!node_id.empty()) s += "node " + node_id + (node_type.empty() ? "" : " (" + node_type + ")") + ", ";
  if (!param.empty()) s += (param.rfind("--", 0) == 0 ? "option " : "parameter ") + param;
  if (s.size() >= 2 && s.compare(s.size() - 2, 2, ", ") == 0) s.resize(s.size() - 2);
  return s;
}

DeviceChoice resolve_device(const std::string& request, const DeviceProbe& probe, const DeviceSource& source) {
  DeviceChoice c;
  const int count = probe.cuda_count();
  const int current = count > 0 && probe.cuda_current() >= 0 && probe.cuda_current() < count ? probe.cuda_current() : 0;
  const c10::Device current_cuda(c10::kCUDA, static_cast<c10::DeviceIndex>(current));
  const std::string where = source.describe();
  const std::string quoted = "device \"" + request + "\"" + (where.empty() ? "" : " (" + where + ")");
  auto no_cuda = [&]() {
    return std::string(probe.cuda_built() ? "no CUDA card is visible to this process"
                                          : "this LibTorch (" TORCH_VERSION ") is built without CUDA");
  };

  if (request.empty() || request == "auto") {
    if (count > 0)
      c.device = current_cuda;
    else if (probe.mps_available())
      c.device = c10::Device(c10::kMPS);
    return c;
  }
  if (request == "cpu") return c;
  if (request == "mps") {
    if (probe.mps_available())
      c.device = c10::Device(c10::kMPS);
    else if (count > 0) {
      c.device = current_cuda;
      c.warnings.push_back(quoted + ": MPS is not available here; using " + current_cuda.str() +
                           ", the current CUDA device");
    } else {
      c.warnings.push_back(quoted + ": MPS is not available here and there is no GPU; running on CPU");
    }
    return c;
  }
  const long long index = cuda_index(request);
  if (request == "cuda" || index >= 0) {
    if (count == 0) {
      c.warnings.push_back(quoted + " asks for CUDA, but " + no_cuda() + "; running on CPU");
      return c;
    }
    if (request == "cuda") {
      c.device = current_cuda;
    } else if (index < count) {
      c.device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
    } else {
      c.device = current_cuda;
      c.warnings.push_back(quoted + ": " + cards_phrase(count) + "; using " + current_cuda.str() +
                           ", the current CUDA device");
    }
    return c;
  }
  // Not a device string at all: never handed to LibTorch.
  const std::string what = quoted +
                           " is not a device string (expected auto, cpu, cuda, cuda:N or mps, lowercase, "
                           "without spaces)";
  if (count > 0) {
    c.device = current_cuda;
    c.warnings.push_back(what + "; using " + current_cuda.str() + ", the current CUDA device (" + cards_phrase(count) +
                         "); write \"cpu\" to train on the CPU");
  } else {
    c.warnings.push_back(what + "; " + no_cuda() + ", so running on CPU");
  }
  return c;
}

DeviceChoice resolve_device(const std::string& request, const DeviceSource& source) {
  return resolve_device(request, system_probe(), source);
}

}  // namespace codefy::device
