#include "engine/oom.h"

namespace codefy {

namespace {

template <typename T>
T param_or(const nlohmann::json& params, const std::string& name, T fallback) {
  auto it = params.find(name);
  if (it == params.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    return fallback;
  }
}

}  // namespace

BatchSource batch_source(const graph::NodeCatalog& catalog, const graph::Graph& g, const graph::NodeSpec& node,
                         const std::string& input) {
  if (input.empty()) return {};
  for (const auto& e : g.edges) {
    if (e.target != node.id || e.kind != graph::EdgeKind::kData || e.target_handle != input) continue;
    const graph::NodeSpec* src = g.node(e.source);
    const graph::NodeDef* def = src ? catalog.find(src->type) : nullptr;
    if (def && !def->memory_hints.batch_param.empty()) return {src, def->memory_hints.batch_param};
  }
  return {};
}


std::vector<std::string> oom_advice(const graph::NodeCatalog& catalog, const graph::Graph& g,
                                    const std::string& node_id, const nlohmann::json& params, c10::Device device) {
  std::vector<std::string> advice;
  const graph::NodeSpec* node = g.node(node_id);
  const graph::NodeDef* def = node ? catalog.find(node->type) : nullptr;
  const graph::NodeDef::MemoryHints hints = def ? def->memory_hints : graph::NodeDef::MemoryHints{};
  const BatchSource source = node ? batch_source(catalog, g, *node, hints.batch_input) : BatchSource{};
  std::string batch_param = hints.batch_param;
  int64_t batch = 0;
  if (source.node) {  // the batch comes from another node (TrainingLoop's DataLoader)
    batch_param = source.param;
    batch = param_or<int64_t>(source.node->params, source.param, 32);
    if (batch > 1)
      advice.push_back("reduce " + batch_param + " on the " + source.node->type + " node " + source.node->id +
                       " (now " + std::to_string(batch) + ")");
  } else if (!hints.batch_param.empty()) {  // it batches by itself (EvaluateModel)
    batch = param_or<int64_t>(params, hints.batch_param, 0);
    if (batch > 1)
      advice.push_back("reduce " + batch_param + " on this " + node->type + " node (now " + std::to_string(batch) + ")");
  } else if (!hints.batch_input.empty()) {
    advice.push_back("reduce the batch size of what feeds " + node->type + "'s " + hints.batch_input);
  }

  if (!hints.precision_param.empty()) {
    const std::string precision = param_or<std::string>(params, hints.precision_param, "fp32");
    if (precision == "fp32")
      advice.push_back("set " + node->type + "'s " + hints.precision_param +
                       " to bf16 (roughly halves activation memory" +
                       (device.is_cuda() ? " on Ampere and newer)" : ")"));
  }
  if (!hints.accumulate_param.empty() && (!source.node || batch > 1)) {
    const int64_t accumulate = param_or<int64_t>(params, hints.accumulate_param, 1);
    const std::string batch_name = batch_param.empty() ? std::string("the batch size") : batch_param;
    std::string a = "raise " + node->type + "'s " + hints.accumulate_param + " and lower " + batch_name +
                    " by the same factor, which keeps the effective batch identical";
    if (source.node && batch % 2 == 0)
      a += " (e.g. " + hints.accumulate_param + " " + std::to_string(accumulate * 2) + " with " + batch_param + " " +
           std::to_string(batch / 2) + ")";
    advice.push_back(a);
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
