// The rank launcher: `codefy run --nproc-per-node N` starts N processes of
// the codefy program itself with torchrun's environment, and reaps them.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace codefy::dist {

/// How to start this machine's ranks.
struct LaunchOptions {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  /// 0: a free port, found here (one machine only).
  int master_port = 0;
  /// Passed to the ranks (CODEFY_DIST_TIMEOUT_S), and how long the others
  /// get to report after one rank failed before they are killed.
  std::chrono::seconds timeout{60};
  /// The program and its arguments for every rank (argv[0] first).
  std::vector<std::string> argv;
  /// Polled; true forwards one SIGINT to every rank (they stop together).
  std::function<bool()> stop_requested;
  /// Lines for the person running it (which rank failed, how).
  std::function<void(const std::string&)> report;
};

/// How the ranks ended.
struct LaunchResult {
  /// 0 when every rank exited 0; else the first failed rank's exit code
  /// (-1 when it died by a signal).
  int exit_code = 0;
  /// The first rank that failed, -1 when none did.
  int failed_rank = -1;
  /// "rank 1 (pid 123) was killed by signal 9 (Killed)".
  std::string failure;
};

/// A free TCP port on `address` (the kernel picks it; a tiny window remains
/// in which another program could take it before rank 0 does).
uint16_t find_free_port(const std::string& address);

/// Starts the ranks of this node and waits for all of them. When one fails
/// the others get `timeout` (at most 10 s) to report, then SIGTERM, then
/// SIGKILL; every child is reaped before it returns. Throws
/// std::runtime_error when the master port is taken or a rank cannot start.
LaunchResult launch_ranks(const LaunchOptions& options);

}  // namespace codefy::dist
