// A data-parallel world whose rank 0 is this process and whose other ranks
// are child processes of the codefy program on this machine: how the server
// runs a graph with strategy ddp on a worker with several processes or cards,
// keeping rank 0's events, outputs and node state in the server.
#pragma once

#include "distributed/launcher.h"
#include "distributed/process_group.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace codefy::distributed {

struct HostedWorldOptions {
  /// The arguments of ranks 1, 2, ... (argv[0] first); the world has one rank more.
  std::vector<std::vector<std::string>> helper_argv;
  /// The program they run; empty: this one (/proc/self/exe).
  std::string program;
  /// Each helper's output goes to rank-<r>.log here (read back when it fails),
  /// and the rendezvous file; empty: a WorldDir of its own.
  std::filesystem::path log_dir;
  /// How long a rank waits for the others (rendezvous, a collective).
  std::chrono::seconds timeout{60};
  ProcessGroupOptions group;
};

/// How a helper rank failed: how it exited and the failure report it wrote
/// (a RunError's JSON, which the server reads; null when it wrote none).
struct HelperFailure {
  int rank = 0;
  int exit_code = 0;
  std::string exited;     ///< "rank 1 (pid 12) was killed by signal 9 (Killed)"
  nlohmann::json report;  ///< the rank's own RunError, as JSON
  /// "rank 1 (exit code 6): <what it reported, else how it exited>".
  std::string describe() const;
};

class HostedWorld {
 public:
  /// Starts ranks 1..N-1 and joins the world as rank 0; they meet through a
  /// FileStore in `log_dir` (or a folder of its own), so no port listens. Throws std::runtime_error, with
  /// what a helper that already failed said, when the world cannot form.
  explicit HostedWorld(const HostedWorldOptions& options);
  /// Ends and reaps every helper still running.
  ~HostedWorld();
  HostedWorld(const HostedWorld&) = delete;
  HostedWorld& operator=(const HostedWorld&) = delete;

  std::shared_ptr<ProcessGroup> group() const { return group_; }
  int world_size() const { return world_size_; }

  /// Rank 0's graph ended well: waits (up to the timeout) for the helpers to
  /// end theirs. Throws std::runtime_error naming a helper that failed.
  void finish();
  /// Rank 0 failed or was stopped: gives the helpers a moment to end by
  /// themselves (one that failed first is usually the cause) and ends the
  /// rest. Returns the helpers that failed on their own, first failed first.
  std::vector<HelperFailure> end_after_failure();

 private:
  HelperFailure failure_of(const RankExit& e) const;
  int world_size_;
  std::chrono::seconds timeout_;
  std::unique_ptr<WorldDir> own_dir_;  ///< when the options named no folder
  std::filesystem::path log_dir_;
  std::unique_ptr<RankProcesses> helpers_;
  std::shared_ptr<ProcessGroup> group_;
};

}  // namespace codefy::distributed
