// What the editor's inspector reads between runs: the run output store
// (captured outputs, CodefyUI's /api/execution/outputs) and the node state
// store (modules kept per graph, /api/execution/state), with their routes.
#pragma once

#include "engine/executor.h"
#include "engine/node.h"
#include "server/outputs.h"
#include "server/routes.h"
#include "store/lru.h"

#include <nlohmann/json.hpp>

#include <string>

namespace codefy::server {

/// The two stores that outlive a run, bounded by their caps.
class Inspector {
 public:
  /// Caps from `stores.run_output_store` and `stores.node_state_store`.
  explicit Inspector(const store::StoreSettings& stores);
  /// Keeps a run's outputs under `run_id`; past the caps the least recently used run goes.
  void record_outputs(const std::string& run_id, const RunResult& result);
  /// Where persistent_state nodes keep their modules between runs.
  NodeStateStore& node_state() { return node_state_; }
  /// Adds GET and DELETE /api/execution/outputs/{run_id}, GET
  /// /api/execution/outputs/{run_id}/{node_id}/{port}, POST
  /// /api/execution/state/reset and GET /api/execution/state/list.
  void add_routes(RouteTable& table);
  /// The stores against their caps, as /api/health shows them:
  /// {"run_output_store": {...}, "node_state_store": {...}}.
  nlohmann::json health() const;

 private:
  Response outputs_list(const std::string& run_id);
  Response outputs_delete(const std::string& run_id);
  Response output_port(const Request& r, const PathParams& p);
  Response state_reset(const Request& r);
  Response state_list(const Request& r) const;

  store::StoreSettings limits_;
  store::LruStore<RunCapture> run_outputs_;
  NodeStateStore node_state_;
};

}  // namespace codefy::server
