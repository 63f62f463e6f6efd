// Events of a run, delivered to an observer (CLI printer, server broadcast).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace codefy {

/// Where a node is in its life within one run.
enum class NodeStatus { kRunning, kCompleted, kCached, kError, kSkipped };
const char* to_string(NodeStatus s);

/// Identity of a node in events.
struct NodeRef {
  std::string graph;
  std::string id;
  std::string type;
};

/// Receives a run's events on the thread that runs the graph. Keep handlers
/// quick; a server forwards them to its I/O threads.
class Observer {
 public:
  virtual ~Observer() = default;
  /// A node starts (status kRunning).
  virtual void on_node_entry(const NodeRef&) {}
  /// A node ends: kCompleted (with a JSON summary of its outputs), kCached
  /// (the same summary), kError ({"error": message} with "field" when a
  /// param or port is to blame, "out_of_memory" or "stopped": true), or kSkipped (empty
  /// detail) for each planned node that did not run because an earlier one
  /// failed or the run was stopped.
  virtual void on_node_exit(const NodeRef&, NodeStatus, const nlohmann::json& /*detail*/) {}
  /// Training progress: {"event": "config" | "batch" | "epoch", ...} (see train/trainer.h).
  virtual void on_progress(const NodeRef&, const nlohmann::json& /*event*/) {}
  /// A warning that does not stop the run.
  virtual void on_warning(const NodeRef&, const std::string& /*message*/) {}
  /// Text a Print node shows.
  virtual void on_print(const NodeRef&, const std::string& /*text*/) {}
  /// An image a node gave (a base64 PNG, Visualize's output), just before its
  /// kCompleted or kCached exit.
  virtual void on_image(const NodeRef&, const std::string& /*base64_png*/) {}
};

}  // namespace codefy
