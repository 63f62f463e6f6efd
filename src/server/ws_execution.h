// The editor's WebSocket execution protocol (/ws/execution, CodefyUI's v1):
// actions execute, stop and clear_cache in; execution_start, node_status
// (with output_summary, log and image on a node's completed message, status
// "interrupted" for the node a Stop ended), node_progress (Codefy's per-batch
// progress, which CodefyUI's client ignores),
// warning, execution_complete|error|stopped and cache_cleared out. Each
// connection has its own execution cache and at most one run; every run
// gets exactly one final message, in the order the runs were asked for (a
// new execute answers the run it replaces execution_stopped at once, and
// that run sends nothing more).
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

/// One run of an editor connection, as the connection sees it (guarded by
/// Connection::mutex). Every run gets exactly one final message
/// (execution_complete, execution_error or execution_stopped); once it has
/// gone, the run sends nothing more.
struct RunTicket {
  std::string run_id;           ///< the server's id of the run
  std::string client_run_id;    ///< the execute message's run_id ("" when it had none)
  bool answered = false;        ///< its final message went out
  bool stop_requested = false;  ///< a stop came while it ran: it ends with execution_stopped
};

/// One editor connection: its execution cache and its run. `send` delivers
/// a JSON text frame (thread-safe; dropped once the socket is gone).
struct Connection {
  std::function<void(std::string)> send;
  std::shared_ptr<ExecutionCache> cache;
  std::mutex mutex;
  std::shared_ptr<RunTicket> run;  ///< the connection's latest run, null before the first
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
  /// Ends the connection's unanswered run, if any: a queued one, or any one
  /// `replacing` (a new execute), is answered execution_stopped now and sends
  /// nothing more; a running one asked to stop answers when it unwinds, after
  /// its interrupted node. Returns whether there was such a run.
  bool stop_current(const std::shared_ptr<Connection>& c, bool replacing);

  Runs& runs_;
  const NodeRegistry& registry_;
  store::StoreLimits cache_limits_;
  std::filesystem::path base_dir_;
  std::filesystem::path examples_dir_;
  mutable std::mutex mutex_;
  std::vector<std::weak_ptr<Connection>> connections_;  ///< for cache_health (guarded by mutex_)
};

}  // namespace codefy::server
