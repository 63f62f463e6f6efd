// The rank launcher: `codefy run --nproc-per-node N` starts N processes of
// the codefy program itself with torchrun's environment, and reaps them.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace codefy::distributed {

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

/// A TCP socket (close-on-exec) bound to `address`:`port` only, not yet
/// listening; throws std::runtime_error naming the address when it cannot be.
int bind_tcp_socket(const std::string& address, uint16_t port);

/// A folder of its own for one data-parallel world on this machine (the
/// rendezvous file, a hosted run's graph and its ranks' logs): made under the
/// system's temporary folder as codefy-ddp-<pid>-XXXXXX, readable by this
/// user only, removed with everything in it when it goes.
class WorldDir {
 public:
  WorldDir();
  ~WorldDir();
  WorldDir(const WorldDir&) = delete;
  WorldDir& operator=(const WorldDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  /// Where the ranks meet: a c10d FileStore's file in this folder.
  std::filesystem::path store_file() const { return path_ / "rendezvous"; }

 private:
  std::filesystem::path path_;
};

/// Removes the world folders under `temp_dir` that a process which is gone
/// left behind (a server or launcher killed mid-run); returns how many went.
size_t remove_stale_world_dirs(const std::filesystem::path& temp_dir);

/// What every rank of a world is told (torchrun's variables).
struct WorldEnv {
  int world_size = 1;
  /// Ranks on this machine.
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  ///< 0: not told (a world that meets through `store_file`)
  /// One machine: the c10d FileStore the ranks meet through
  /// (CODEFY_RENDEZVOUS_FILE); empty: the TCPStore on master_addr:master_port.
  std::string store_file;
  std::chrono::seconds timeout{60};
};

/// One rank to start: who it is and its program's arguments (argv[0] first;
/// the program run is this one, /proc/self/exe, unless `program` names another).
struct RankCommand {
  int rank = 0;
  int local_rank = 0;
  std::vector<std::string> argv;
  std::string program;
  /// Its stdout and stderr go to this file ("" : this process's own).
  std::string log_path;
  /// Where it writes why it failed, as JSON (CODEFY_RANK_REPORT; "" : nowhere).
  std::string report_path;
};

/// A rank that ended.
struct RankExit {
  int rank = 0;
  bool ok = false;
  int exit_code = 0;  ///< -1 when a signal ended it
  /// "rank 1 (pid 123) was killed by signal 9 (Killed)".
  std::string description;
};

/// Child processes running ranks of a world, started in their own process
/// groups and killed if this process dies. Reaps only its own children, so
/// several sets may run in one program.
class RankProcesses {
 public:
  /// Starts every command. Throws std::runtime_error (after killing and
  /// reaping those already started) when one cannot be started.
  RankProcesses(const WorldEnv& world, const std::vector<RankCommand>& commands);
  /// Ends (SIGKILL) and reaps the ranks still running.
  ~RankProcesses();
  RankProcesses(const RankProcesses&) = delete;
  RankProcesses& operator=(const RankProcesses&) = delete;

  /// The ranks that ended since the last call, reaped.
  std::vector<RankExit> reap();
  /// Whether any rank still runs (as of the last reap).
  bool running() const { return !running_.empty(); }
  /// Sends `signal` to every rank still running.
  void signal_all(int signal);
  /// Waits up to `grace` for the ranks to end by themselves, then sends
  /// SIGTERM twice (codefy quits without waiting for a batch) and, 3 s
  /// later, SIGKILL; returns every rank that ended meanwhile.
  std::vector<RankExit> end_within(std::chrono::milliseconds grace);
  /// "rank 1 (pid 123), rank 2 (pid 124)".
  std::string describe() const;

 private:
  std::map<int, int> running_;  ///< pid -> rank
};

/// Starts the ranks of this node and waits for all of them. When one fails
/// the others get `timeout` (at most 10 s) to report, then SIGTERM, then
/// SIGKILL; every child is reaped before it returns. Throws
/// std::runtime_error when the master port is taken or a rank cannot start.
LaunchResult launch_ranks(const LaunchOptions& options);

}  // namespace codefy::distributed
