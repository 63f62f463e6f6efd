// The editor's WebSocket execution protocol (/ws/execution, CodefyUI's v1):
// actions execute, stop and clear_cache in; execution_start, node_status
// (with output_summary, log and image on a node's completed message, status
// "interrupted" for the node a Stop ended), node_progress (Codefy's per-batch
// progress, which CodefyUI's client ignores),
// warning, execution_complete|error|stopped and cache_cleared out. Each
// connection has its own execution cache and at most one run.
#pragma once

#include "engine/node.h"
#include "store/lru.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace codefy {
class NodeRegistry;
}

namespace codefy::server {

class Runs;

/// One editor connection: its execution cache and its run. `send` delivers
/// a JSON text frame (thread-safe; dropped once the socket is gone).
struct Connection {
  std::function<void(std::string)> send;
  std::shared_ptr<ExecutionCache> cache;
  std::mutex mutex;
  std::string run_id;           ///< the connection's latest run, "" before the first
  bool active = false;          ///< that run has not sent its final message yet
  bool stop_requested = false;  ///< a stop came for it: its final message is execution_stopped
};

/// The open editor connections and their protocol; runs go through Runs::start_run.
class WsExecution {
 public:
  /// `base_dir`: where relative paths in an editor's graph resolve (the
  /// graphs folder); a graph opened from an example (the execute message's
  /// `example`, a path under `examples_dir`) resolves them in its folder,
  /// as `codefy run` does.
  WsExecution(Runs& runs, const NodeRegistry& registry, store::StoreLimits cache_limits, std::filesystem::path base_dir,
              std::filesystem::path examples_dir = {});

  /// A new connection with an empty execution cache.
  std::shared_ptr<Connection> open(std::function<void(std::string)> send);
  /// One text frame from the client: an action, answered on `c`.
  void receive(const std::shared_ptr<Connection>& c, const std::string& text);
  /// The socket is gone: its run is stopped and its cache freed.
  void close(const std::shared_ptr<Connection>& c);
  /// The connections' execution caches, as /api/health shows them:
  /// {instances, entries, bytes, max_bytes_each}.
  nlohmann::json cache_health() const;

 private:
  void execute(const std::shared_ptr<Connection>& c, const nlohmann::json& msg);
  bool stop_current(const std::shared_ptr<Connection>& c);

  Runs& runs_;
  const NodeRegistry& registry_;
  store::StoreLimits cache_limits_;
  std::filesystem::path base_dir_;
  std::filesystem::path examples_dir_;
  mutable std::mutex mutex_;
  std::vector<std::weak_ptr<Connection>> connections_;  ///< for cache_health (guarded by mutex_)
};

}  // namespace codefy::server
