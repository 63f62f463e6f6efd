#include "engine/oom.h"

namespace codefy {

namespace {

/// The DataLoader feeding `node_id` directly (TrainingLoop's "dataloader"), or null.
const graph::NodeSpec* feeding_loader(const graph::Graph& g, const std::string& node_id) {
  for (const auto& e : g.edges) {
    if (e.target != node_id || e.kind != graph::EdgeKind::kData) continue;
    const graph::NodeSpec* src = g.node(e.source);
    if (src && src->type == "DataLoader" && e.target_handle == "dataloader") return src;
  }
  return nullptr;
}

template <typename T>
T param_or(const nlohmann::json& params, const char* name, T fallback) {
  auto it = params.find(name);
  if (it == params.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    return fallback;
  }
}

}  // namespace

std::vector<std::string> oom_advice(const graph::Graph& g, const std::string& node_id, const nlohmann::json& params,
                                    c10::Device device) {
  std::vector<std::string> advice;
  const graph::NodeSpec* node = g.node(node_id);
  const bool training = node && node->type == "TrainingLoop";
  const graph::NodeSpec* loader = feeding_loader(g, node_id);
  int64_t batch = 0;
  if (loader) {  // TrainingLoop: the batch comes from its DataLoader
    batch = param_or<int64_t>(loader->params, "batch_size", 32);
    if (batch > 1)
      advice.push_back("reduce batch_size on the DataLoader node " + loader->id + " (now " + std::to_string(batch) +
                       ")");
  } else if (params.contains("batch_size")) {  // EvaluateModel and others batch themselves
    batch = param_or<int64_t>(params, "batch_size", 0);
    if (batch > 1)
      advice.push_back("reduce batch_size on this " + node->type + " node (now " + std::to_string(batch) + ")");
  } else if (training) {
    advice.push_back("reduce batch_size on the DataLoader node");
  }

  if (training) {
    const std::string precision = param_or<std::string>(params, "precision", "fp32");
    if (precision == "fp32")
      advice.push_back(std::string("set TrainingLoop's precision to bf16 (roughly halves activation memory") +
                       (device.is_cuda() ? " on Ampere and newer)" : ")"));
    const int64_t accumulate = param_or<int64_t>(params, "accumulate_steps", 1);
    if (!loader || batch > 1) {
      std::string a =
          "raise TrainingLoop's accumulate_steps and lower batch_size by the same factor, which keeps "
          "the effective batch identical";
      if (loader && batch % 2 == 0)
        a += " (e.g. accumulate_steps " + std::to_string(accumulate * 2) + " with batch_size " +
             std::to_string(batch / 2) + ")";
      advice.push_back(a);
    }
  }
  advice.push_back("make the model smaller, or shorten the sequence / shrink the image");
  return advice;
}

std::string oom_memory_line(const device::MemoryReading& m, int64_t live_at_failure) {
  using device::format_bytes;
  if (!m.counted) return "";
  if (m.device.is_cuda()) {
    std::string s = "CUDA memory on " + m.device.str() + ": " + format_bytes(m.live_bytes) + " held by live tensors";
    if (m.reserved_bytes) s += ", " + format_bytes(*m.reserved_bytes) + " reserved by the caching allocator";
    s += ", " + format_bytes(m.peak_bytes) + " peak this process";
    if (m.total_bytes) s += ", " + format_bytes(*m.total_bytes) + " on the card";
    return s + ".";
  }
  std::string s = "CPU memory: " + format_bytes(live_at_failure) + " held by live tensors when it failed, " +
                  format_bytes(m.peak_bytes) + " peak this node";
  s += m.total_bytes ? ", budget " + format_bytes(*m.total_bytes) : std::string(", no budget set");
  return s + ".";
}

std::string oom_report(const std::string& node_type, const std::string& node_id, c10::Device device,
                       const std::vector<std::string>& advice, const std::string& memory_line,
                       const std::string& original_error) {
  std::string r = "Node " + node_type + " (" + node_id + ") ran out of memory on " + device.str() + ".\n\n";
  r += "What to try, cheapest first:\n";
  for (const auto& a : advice) r += "  - " + a + "\n";
  if (!memory_line.empty()) r += "\n" + memory_line + "\n";
  r += "\nOriginal error: " + original_error;
  return r;
}

}  // namespace codefy
