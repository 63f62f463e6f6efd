#include "engine/executor.h"

#include "device/memory.h"
#include "engine/oom.h"
#include "util/random.h"
#include "util/text.h"

#include "graph/presets.h"
#include "graph/validate.h"

#include <c10/util/Exception.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace codefy {

namespace {

nlohmann::json fill_defaults(const graph::NodeDef& def, const nlohmann::json& given) {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& p : def.params) params[p.name] = p.default_value;
  for (auto it = given.begin(); it != given.end(); ++it)
    if (!it.value().is_null()) params[it.key()] = it.value();
  return params;
}

}  // namespace

namespace {

/// What determines a node's outputs: type, params, the device it was asked
/// for, the run seed and node id (its RNG seed), whether the run records
/// teaching nodes' steps, what it reads from files, and its inputs' keys. Starts with "<id>#" so a node's entries can
/// be found.
std::string cache_key(const graph::NodeSpec& spec, const nlohmann::json& params, const RunSettings& settings,
                      const std::vector<std::string>& upstream, const std::string& fingerprint) {
  const nlohmann::json what = {
      {"type", spec.type},     {"id", spec.id},        {"params", params},     {"device", settings.device},
      {"seed", settings.seed}, {"upstream", upstream}, {"files", fingerprint}, {"verbose", settings.verbose}};
  const std::string text = what.dump();
  // FNV-1a from two bases: 128 bits, so two different nodes' keys never meet.
  const uint64_t h = util::fnv1a(text), h2 = util::fnv1a(text, 0x84222325cbf29ce4ULL);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h),
                static_cast<unsigned long long>(h2));
  return spec.id + "#" + buf;
}

/// What flows into node `id` along its data edges from the nodes that ran.
struct NodeInputs {
  ValueMap values;
  std::map<std::string, InputSource> sources;
  std::vector<std::string> upstream;  ///< "port<-source_port@source_key", for its cache key
  bool upstream_cacheable = true;     ///< every source has a cache key
};

NodeInputs gather_inputs(const graph::Graph& g, const std::string& id, const std::map<std::string, ValueMap>& outputs,
                         std::map<std::string, std::string>& keys) {
  NodeInputs in;
  for (const auto& e : g.edges) {
    if (e.target != id || e.kind != graph::EdgeKind::kData) continue;
    auto src = outputs.find(e.source);
    if (src == outputs.end()) continue;
    auto v = src->second.find(e.source_handle);
    if (v != src->second.end()) {
      in.values[e.target_handle] = v->second;
      in.sources[e.target_handle] = InputSource{e.source, g.node(e.source)->type, e.source_handle};
    }
    const std::string& k = keys[e.source];
    in.upstream_cacheable = in.upstream_cacheable && !k.empty();
    in.upstream.push_back(e.target_handle + "<-" + e.source_handle + "@" + k);
  }
  return in;
}

/// The node's cache key, from its params, settings, inputs' keys and what it
/// reads from disk; "" when what it reads cannot be keyed (a missing file: it
/// runs, and says so).
std::string node_key(const graph::NodeSpec& spec, const NodeType& type, const nlohmann::json& params,
                     const RunSettings& settings, std::vector<std::string>& upstream) {
  std::sort(upstream.begin(), upstream.end());
  try {
    return cache_key(spec, params, settings, upstream,
                     type.fingerprint ? type.fingerprint(params, settings.base_dir) : std::string());
  } catch (const std::exception&) {
    return "";
  }
}

/// Outputs served from the cache, or a persistent module from an earlier run
/// with the same key; nullopt when the node must run.
std::optional<ValueMap> reused_outputs(const RunSettings& settings, const std::string& id, const std::string& key,
                                       bool cached) {
  if (key.empty() || settings.force_rerun.count(id)) return std::nullopt;
  if (cached) return settings.cache->get(key);
  if (auto state = settings.state_store->get(node_state_key(settings.state_scope, id)); state && state->key == key)
    return std::move(state->outputs);
  return std::nullopt;
}

}  // namespace

/// Out of memory: the report names node, device, advice and memory; the
/// node's kept outputs and the allocator's cached blocks go back so the next
/// run starts clean. The node is not retried: the advice says what to change.
NodeOOMError Executor::out_of_memory_error(const graph::Graph& g, const NodeRef& ref, const nlohmann::json& params,
                                           c10::Device dev, const RunSettings& settings,
                                           const std::string& original) const {
  const device::MemoryReading m = device::read_memory(dev);
  const std::string report = oom_report(
      ref.type, ref.id, dev, oom_advice(registry_, g, ref.id, params, dev),
      oom_memory_line(m, dev.is_cpu() ? device::cpu_memory().live_at_failure_bytes : m.live_bytes), original);
  const std::string prefix = ref.id + "#";
  if (settings.cache)
    settings.cache->erase_if([&](const std::string& k) { return k.compare(0, prefix.size(), prefix) == 0; });
  if (settings.state_store) settings.state_store->erase(node_state_key(settings.state_scope, ref.id));
  device::release_cached_memory(dev);
  if (settings.observer)
    settings.observer->on_node_exit(ref, NodeStatus::kError, {{"error", report}, {"out_of_memory", true}});
  return NodeOOMError(g.name, ref.id, ref.type, dev.str(), report, original);
}

PreparedGraph prepare(const graph::Graph& g, const NodeRegistry& registry, Checks checks) {
  PreparedGraph p;
  p.graph = graph::expand_presets(g);
  p.plan = graph::make_plan(p.graph);  // once: validation and the checks read the same plan
  auto issues = graph::validate(p.graph, registry, p.plan);
  for (auto& i : registry.check(p.graph, p.plan, checks == Checks::kValidate)) issues.push_back(std::move(i));
  if (!issues.empty()) throw graph::ValidationError(std::move(issues));
  return p;
}

RunResult Executor::run(const PreparedGraph& prepared, const RunSettings& settings) const {
  const auto t0 = std::chrono::steady_clock::now();
  const graph::Graph& g = prepared.graph;
  RunResult result;
  std::map<std::string, std::string> keys;  // cache key per node; "" = not cacheable (nor is what depends on it)
  const auto& order = prepared.plan.order;
  // The planned nodes after the one that failed (or was stopped) report kSkipped.
  size_t next = 0;
  bool next_reported = false;  // whether order[next] has told the observer it runs
  auto skip_rest = [&] {
    if (!settings.observer) return;
    for (size_t i = next; i < order.size(); ++i)
      settings.observer->on_node_exit(NodeRef{g.name, order[i], g.node(order[i])->type}, NodeStatus::kSkipped, {});
  };
  try {
    for (; next < order.size(); ++next) {
      const std::string& id = order[next];
      next_reported = false;
      settings.cancel.throw_if_cancelled();
      const graph::NodeSpec& spec = *g.node(id);
      const NodeType* type = registry_.get(spec.type);
      const NodeRef ref{g.name, spec.id, spec.type};

      NodeInputs in = gather_inputs(g, id, result.outputs, keys);
      ValueMap& inputs = in.values;
      std::map<std::string, InputSource>& sources = in.sources;
      std::vector<std::string>& upstream = in.upstream;
      const bool upstream_cacheable = in.upstream_cacheable;
      const nlohmann::json params = fill_defaults(type->def, spec.params);
      const bool cached = settings.cache && type->def.cacheable;
      const bool persistent = settings.state_store && type->def.persistent_state;
      const std::string key =
          (cached || persistent) && upstream_cacheable ? node_key(spec, *type, params, settings, upstream) : "";
      std::optional<ValueMap> reused = reused_outputs(settings, id, key, cached);
      keys[id] = cached ? key : std::string();  // a mutable module makes its dependants uncacheable
      if (reused) {
        if (settings.observer) {
          if (auto image = find_image(*reused)) settings.observer->on_image(ref, *image);
          settings.observer->on_node_exit(ref, NodeStatus::kCached, summarize(*reused));
        }
        result.outputs[id] = std::move(*reused);
        continue;
      }

      next_reported = true;
      if (settings.observer) settings.observer->on_node_entry(ref);
      torch::manual_seed(node_seed(settings.seed, id));
      device::reset_cpu_peak();
      auto fail = [&](const std::string& field, const std::string& message) -> NodeError {
        if (settings.observer) {
          nlohmann::json detail = {{"error", message}};
          if (!field.empty()) detail["field"] = field;
          settings.observer->on_node_exit(ref, NodeStatus::kError, detail);
        }
        return NodeError(g.name, id, spec.type, field, message);
      };
      std::optional<NodeContext> ctx;
      auto out_of_memory = [&](const std::string& original) -> NodeOOMError {
        const c10::Device dev = ctx && ctx->used_device() ? *ctx->used_device() : c10::Device(c10::kCPU);
        ctx.reset();  // the node's own tensors go before the memory is read back
        return out_of_memory_error(g, ref, params, dev, settings, original);
      };
      try {
        ctx.emplace(ref, type->def, params, std::move(inputs), settings, std::move(sources));
        ValueMap outputs = type->execute(*ctx);
        if (settings.observer) {
          if (auto image = find_image(outputs)) settings.observer->on_image(ref, *image);
          settings.observer->on_node_exit(ref, NodeStatus::kCompleted, summarize(outputs));
        }
        if (!key.empty() && cached) settings.cache->put(key, outputs, value_bytes(outputs));
        if (!key.empty() && persistent)  // measured now, as built
          settings.state_store->put(node_state_key(settings.state_scope, id), PersistedState{key, outputs},
                                    value_bytes(outputs));
        result.outputs[id] = std::move(outputs);
        const auto mem = device::cpu_memory();
        if (mem.installed) result.peak_cpu_bytes[id] = mem.peak_bytes;
      } catch (const Cancelled&) {
        if (settings.observer)
          settings.observer->on_node_exit(ref, NodeStatus::kError, {{"error", "stopped"}, {"stopped", true}});
        throw;
      } catch (const NodeFailure& e) {
        throw fail(e.field(), e.what());
      } catch (const std::exception& e) {
        // Classified once, here, by type (device::is_out_of_memory); LibTorch's
        // messages carry a C++ backtrace after the first line.
        const std::string message = NodeContext::describe(e);
        if (device::is_out_of_memory(e))
          throw out_of_memory(dynamic_cast<const std::bad_alloc*>(&e) ? "out of memory (std::bad_alloc)" : message);
        throw fail("", message);
      }
    }
  } catch (...) {
    if (next_reported) ++next;  // the failing node reported kError itself
    skip_rest();
    throw;
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace codefy
