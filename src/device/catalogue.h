// The device catalogue and the one parser for device
// strings, both pure functions of a DeviceProbe.
#pragma once

#include "device/probe.h"

#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace codefy::device {

/// One selectable device, in the order and with the labels the editor shows.
struct DeviceEntry {
  std::string device;  ///< what to put in a device param: "cpu", "cuda", "cuda:1", "mps"
  std::string label;   ///< "CPU", "NVIDIA CUDA · 70.2/79.6 GiB", "NVIDIA CUDA #1 · cuda:1 · <name> · ..."
  std::string name;    ///< the card's name, "" for CPU
  std::optional<uint64_t> free_bytes;  ///< CPU: available RAM
  std::optional<uint64_t> total_bytes;
  std::vector<std::string> precisions;  ///< "fp32", "bf16", "fp16" as this device and LibTorch support them
};

/// CPU; the current CUDA device as "cuda"; one entry per card only when there
/// are two or more; MPS when available. Memory is read now and omitted from
/// labels when unreadable.
std::vector<DeviceEntry> device_catalogue(const DeviceProbe& probe);
nlohmann::json to_json(const std::vector<DeviceEntry>& entries);

/// "70.2/79.6 GiB".
std::string free_total_gib(uint64_t free_bytes, uint64_t total_bytes);

/// Where a device string came from, for warnings: graph, node and parameter
/// ("device", or "--device" on the command line). Empty fields are left out.
struct DeviceSource {
  std::string graph;
  std::string node_id;
  std::string node_type;
  std::string param = "device";
  std::string describe() const;
};

/// A device request resolved to something LibTorch can use, with the
/// warnings that explain any fallback.
struct DeviceChoice {
  c10::Device device = c10::Device(c10::kCPU);
  std::vector<std::string> warnings;
};

/// The one parser for every device value. Accepts exactly `auto`, `cpu`,
/// `cuda`, `cuda:N`, `mps`. A missing index, or any string outside that
/// grammar (`cuda:`, `cuda:abc`, `${CUDA_INDEX}`, `cuda:0:1`, `cuda: 0`,
/// `CUDA:0`, ` cpu`), falls back to the current CUDA device with a warning;
/// to CPU only when this process has no CUDA device at all. Nothing unparsed
/// reaches LibTorch.
DeviceChoice resolve_device(const std::string& request, const DeviceProbe& probe, const DeviceSource& source = {});

/// The same against this machine.
DeviceChoice resolve_device(const std::string& request, const DeviceSource& source = {});

}  // namespace codefy::device
