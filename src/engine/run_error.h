// How a run ended when it did not end well, as one typed value: what kind of
// failure, its message, and where (node, field, device, rank). The CLI's
// run_error line, a data-parallel rank's failure report, the server's run
// answers and the WebSocket's final message are serialisations of it; nothing
// decides a run's fate by reading message text.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace codefy {

/// `codefy run`'s exit codes, distinct per outcome so scripts can tell them apart.
enum ExitCode : int {
  kExitOk = 0,
  kExitUsage = 1,         ///< bad command line
  kExitInvalidGraph = 2,  ///< unreadable or invalid graph (nothing ran)
  kExitRuntimeError = 3,  ///< a node failed while running
  kExitOutOfMemory = 4,   ///< a node ran out of memory
  kExitStopped = 5,       ///< stopped by SIGINT/SIGTERM
};

/// What kind of failure ended a run.
enum class RunErrorKind {
  kInvalidGraph,  ///< unreadable or invalid graph: nothing ran
  kUsage,         ///< a bad command-line value or environment variable
  kNodeError,     ///< a node failed while running
  kOutOfMemory,   ///< a node ran out of memory (its message is the whole report)
  kStopped,       ///< Stop, Ctrl-C, or the client went away
  kDistributed,   ///< a data-parallel world could not form or lost a rank
  kInternal,      ///< anything else
};

/// The kind's wire name: "invalid_graph", "usage", "node_error",
/// "out_of_memory", "stopped", "distributed", "error".
const char* to_string(RunErrorKind kind);
/// The kind named `name`; nullopt for a name no kind has.
std::optional<RunErrorKind> run_error_kind(const std::string& name);

/// A run's failure.
struct RunError {
  RunErrorKind kind = RunErrorKind::kInternal;
  std::string message;
  std::string node_id, node_type;  ///< the node to blame; empty when none
  std::string field;               ///< `param "x"` or `input "y"` when one is to blame
  std::string device;              ///< where it ran out of memory ("cpu", "cuda:0")
  std::optional<int> rank;         ///< the data-parallel rank it happened on

  /// The failure in flight, classified once: call inside a catch block.
  /// Cancelled is kStopped, NodeOOMError kOutOfMemory (with node and
  /// device), NodeError kNodeError (with node and field), a graph that
  /// cannot be read or validated kInvalidGraph, anything else kInternal.
  static RunError from_current_exception();

  /// The `codefy run` exit code of this kind.
  ExitCode exit_code() const;

  /// {"kind", "message"} and, when set, "node_id", "node_type", "field", "device", "rank".
  nlohmann::json to_json() const;
  /// The inverse of to_json; throws std::invalid_argument for anything else.
  static RunError from_json(const nlohmann::json& j);

  /// CodefyUI's run envelope error: {code, message, node_id, details}, code
  /// "stopped", "out_of_memory" or "execution_error".
  nlohmann::json envelope() const;
};

}  // namespace codefy
