// Per-device run queues: one FIFO and one worker thread per
// worker, a worker owning a set of devices (by default one device each), so
// two runs on cuda:0 run one after the other while a run on cuda:1 or the CPU
// is not delayed by them. A worker owning cuda:0 and cuda:1 runs one run at a
// time on that set (DDP will take the whole set). Runs never execute on the caller's thread (the
// server's I/O threads only submit and ask).
#pragma once

#include "device/runtime.h"
#include "util/cancel.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace codefy::server {

enum class RunState { kQueued, kRunning, kCompleted, kFailed, kStopped };
const char* to_string(RunState s);

/// A worker: its name and the devices it owns.
struct WorkerSpec {
  std::string name;
  std::vector<std::string> devices;
  /// Processes a data-parallel run on the CPU starts (`cpu*2`); 1: none.
  int cpu_processes = 1;

  /// The device of each rank of a data-parallel (ddp) run on this worker:
  /// one per card it owns, else `cpu_processes` on the CPU. Fewer than two:
  /// ddp runs train in a single process.
  std::vector<std::string> rank_devices() const;
};

/// How the server runs graphs beyond what a run's request says.
struct RunnerSettings {
  /// The codefy program a ddp run's other ranks run; empty: this one (/proc/self/exe).
  std::string program;
  /// How long a ddp run's rank waits for the others (rendezvous, a collective).
  std::chrono::seconds dist_timeout{60};
  /// The priority runs compute at (thread by thread) so the I/O threads
  /// answer first (auto: chosen per run by its device).
  device::ComputePriority run_priority;
};

/// Workers from `NAME=DEVICE[,DEVICE...]` specs (`--worker`), where the CPU
/// may be `cpu*N` (ddp runs start N processes); each device of `available`
/// no spec names gets a worker of its own, named after it. Throws
/// std::invalid_argument naming the spec: no '=', an empty name or device
/// list, a device not in `available`, a device in two workers, a name used
/// twice, a bad process count.
std::vector<WorkerSpec> make_workers(const std::vector<std::string>& specs, const std::vector<std::string>& available);

/// A submit refused because the worker's queue already holds its limit of
/// waiting runs.
class QueueFull : public std::runtime_error {
 public:
  QueueFull(const std::string& queue, size_t waiting, size_t limit);
  const std::string& queue() const { return queue_; }
  size_t waiting() const { return waiting_; }
  size_t limit() const { return limit_; }

 private:
  std::string queue_;
  size_t waiting_, limit_;
};

struct RunInfo {
  std::string id;
  std::string queue;   ///< the worker's name
  std::string device;  ///< the device it was submitted for
  RunState state = RunState::kQueued;
  /// Runs ahead of this one in its queue, the running one included (0 when running or finished).
  size_t position = 0;
  std::string error;   ///< what() of the exception that ended a failed run
  double seconds = 0;  ///< running time, once finished
};

class RunQueues {
 public:
  /// The job gets its run's token and id; it ends by returning (completed),
  /// throwing codefy::Cancelled (stopped) or any other exception (failed).
  using Job = std::function<void(const CancellationToken&, const std::string& run_id)>;
  /// Told that a queued run was dropped without starting (stop, close), so
  /// whoever waits for the run hears how it ended. Called once, on the
  /// dropping thread, with no lock of the queues held.
  using Dropped = std::function<void(const std::string& run_id)>;

  /// The default for `waiting_max`: runs waiting per queue (the running one not counted).
  static constexpr size_t kDefaultWaitingMax = 64;

  /// One queue and one worker thread per worker; each queue holds at most
  /// `waiting_max` waiting runs (0: no limit).
  explicit RunQueues(const std::vector<WorkerSpec>& workers, size_t waiting_max = kDefaultWaitingMax);
  /// One worker per device ("cpu", "cuda:0", ...), named after it.
  explicit RunQueues(const std::vector<std::string>& devices, size_t waiting_max = kDefaultWaitingMax);
  /// close(), if not done yet.
  ~RunQueues();
  /// Stops every run (queued ones never start, running ones are cancelled and
  /// end between batches) and joins the workers; later submits throw.
  void close();
  RunQueues(const RunQueues&) = delete;
  RunQueues& operator=(const RunQueues&) = delete;

  /// Queues a job on the worker owning `device`; returns its run id.
  /// `dropped` (may be empty) hears of it if it is dropped before it starts.
  /// Throws std::invalid_argument for a device no worker owns, QueueFull when
  /// that worker's queue already holds `waiting_max` waiting runs.
  std::string submit(const std::string& device, Job job, Dropped dropped = {});
  std::optional<RunInfo> info(const std::string& run_id) const;
  /// All runs known, oldest first (finished ones are kept, up to `kKeepFinished`).
  std::vector<RunInfo> runs() const;
  /// Stops a run: a queued one is dropped (its Dropped is told), a running
  /// one is cancelled and stops between batches. Returns false for an
  /// unknown or finished run.
  bool stop(const std::string& run_id);
  /// Drops the run only while it is still queued (its client went away);
  /// a running one goes on. Returns whether it was dropped.
  bool drop_queued(const std::string& run_id);
  size_t waiting_max() const { return waiting_max_; }
  /// The worker owning `device`; nullopt when none does.
  std::optional<WorkerSpec> worker_for(const std::string& device) const;
  /// Per worker: its devices, the ranks of its ddp runs, the running run's id (or null) and how many wait.
  nlohmann::json queues_json() const;

  static constexpr size_t kKeepFinished = 200;

 private:
  struct Run {
    RunInfo info;
    Job job;
    Dropped dropped;
    CancellationToken token;
  };
  struct Queue {
    WorkerSpec spec;
    std::deque<std::shared_ptr<Run>> waiting;
    std::shared_ptr<Run> running;
    std::thread worker;
  };
  void work(const std::string& name);
  size_t position_locked(const Run& run) const;
  void forget_old_locked();
  /// Takes a queued run out of its queue as stopped; returns its Dropped to call once unlocked.
  Dropped drop_locked(Run& run);

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool closing_ = false;
  size_t waiting_max_ = kDefaultWaitingMax;  ///< per queue; 0: no limit
  /// Run ids are "run-<this server's tag>-<n>": numbered as submitted, and
  /// unlike a plain "run-<n>" never the id of a run an earlier server
  /// recorded in the run history.
  std::string id_prefix_;
  uint64_t next_id_ = 1;
  std::map<std::string, Queue> queues_;               ///< by worker name
  std::map<std::string, std::string> worker_of_;      ///< device → worker name
  std::map<std::string, std::shared_ptr<Run>> runs_;  ///< by id
  std::deque<std::string> order_;                     ///< ids, oldest first
};

}  // namespace codefy::server
