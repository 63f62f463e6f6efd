// Graph runs on the per-device queues. start_run is the one way a run
// starts: the headless HTTP route (POST /api/graph/run/{name}) and the
// WebSocket's execute both come through it, so the run's settings, its
// outcome's shape and the queue's record of how it ended are the same for
// both. Also the /api/runs routes.
#pragma once

#include "engine/events.h"
#include "engine/executor.h"
#include "engine/node.h"
#include "engine/run_error.h"
#include "server/routes.h"
#include "server/run_queue.h"
#include "store/run_store.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace codefy {
class NodeRegistry;
}

namespace codefy::server {

class Inspector;

/// What to run and how: everything start_run needs besides its listener.
struct RunRequest {
  std::shared_ptr<const PreparedGraph> graph;
  /// The device whose queue the run waits in, resolved ("cpu", "cuda:0").
  std::string device;
  /// Every node runs on `device` (headless runs); false: on its own `device`
  /// param (the editor's runs).
  bool pin_nodes_to_device = false;
  uint64_t seed = 0;
  /// Teaching nodes record their intermediate steps (CodefyUI's `verbose`).
  bool verbose = false;
  /// Relative file paths in params resolve against this folder.
  std::filesystem::path base_dir;
  /// The editor connection's execution cache; null: none.
  ExecutionCache* cache = nullptr;
  /// Nodes that run even when their key is cached (the editor's changed_nodes).
  std::set<std::string> force_rerun;
  /// Keep persistent_state nodes' modules in the node state store, under `state_scope`.
  bool keep_state = false;
  std::string state_scope;
  /// Keep the run's outputs for the inspector, under `outputs_id` ("": the run's id).
  bool record_outputs = false;
  std::string outputs_id;
  /// Who asked, for the run history: "editor", "codefyui" or "api".
  std::string source = "editor";
};

/// How a run ended; the same shape whoever started it.
struct RunOutcome {
  /// Why the run did not end well; empty when it did.
  std::optional<RunError> error;
  /// What the run produced when it ended well (null otherwise); valid during on_run_end only.
  const RunResult* result = nullptr;
  /// "ok", "stopped" or "error" (the status of CodefyUI's run envelope).
  std::string status() const {
    if (!error) return "ok";
    return error->kind == RunErrorKind::kStopped ? "stopped" : "error";
  }
};

/// Follows one run of start_run on the run's worker thread: its events (the
/// Observer calls) between on_run_start and on_run_end.
class RunListener : public Observer {
 public:
  /// The run left its queue and begins.
  virtual void on_run_start(const std::string& run_id) { (void)run_id; }
  /// The run ended; called once (again, with an error, only when the first
  /// call throws), before the run queue records how it ended.
  virtual void on_run_end(const std::string& run_id, const RunOutcome& outcome) = 0;
};

/// The folders runs' nodes may use: `access` (null: any); a run of a graph
/// under `examples_dir` (read-only) writes its relative outputs under
/// `outputs_dir`/<the example's folder> instead.
struct RunFiles {
  std::shared_ptr<const util::FileAccess> access;
  /// The run history every run is recorded in (null: none).
  std::shared_ptr<store::RunStore> history;
  std::filesystem::path examples_dir;
  std::filesystem::path outputs_dir;
};

/// The run queues and what the server keeps of the headless runs it started.
class Runs {
 public:
  /// `max_queued`: runs that may wait in each worker's queue (0: no limit).
  Runs(const std::vector<WorkerSpec>& workers, const NodeRegistry& registry, Inspector& inspector,
       std::filesystem::path graphs_dir, size_t max_queued = RunQueues::kDefaultWaitingMax, RunFiles files = {},
       RunnerSettings runner = {});
  /// shutdown(), if not done yet.
  ~Runs();
  Runs(const Runs&) = delete;
  Runs& operator=(const Runs&) = delete;

  /// Queues a run; returns its id. A graph whose TrainingLoop has strategy
  /// ddp, queued to a worker with several ranks (cards, or `cpu*N`), runs as
  /// rank 0 here with the other ranks as child processes. On its worker the run gets its settings
  /// from `request` and the listener as its observer, keeps its outputs when
  /// asked, tells the listener how it ended, and rethrows a failure so the
  /// queue records it. A run dropped from its queue before it starts (a stop,
  /// its client gone, shutdown) tells the listener too: on_run_end with
  /// status "stopped", without on_run_start. Throws std::invalid_argument when
  /// no worker owns `request.device`, QueueFull when its queue is full.
  std::string start_run(RunRequest request, std::shared_ptr<RunListener> listener);
  /// Stops every run (queued ones never start, running ones end between
  /// batches) and joins the workers.
  void shutdown();
  RunQueues& queues() { return queues_; }
  const RunQueues& queues() const { return queues_; }
  /// Adds POST /api/graph/run/{name}, POST /api/graph/plan (a memory plan,
  /// made on the device's queue like a run: one at a time, stoppable as a
  /// run), GET /api/graph/contract/{name}, GET /api/runs, GET
  /// /api/runs/{run_id} and POST /api/runs/{run_id}/stop; with a run history
  /// also GET /api/runs/compare, GET /api/runs/{run_id}/series and DELETE
  /// /api/runs/{run_id}.
  void add_routes(RouteTable& table);

 private:
  struct Record;
  class HeadlessRun;
  void run_graph(const std::string& name, const Request& r, const Respond& respond);
  void plan(const Request& r, const Respond& respond);
  Response runs_list(const Request& r) const;
  Response run_series(const std::string& run_id, const Request& r) const;
  Response run_delete(const std::string& run_id);
  /// GET /api/runs/compare?ids=a,b: store::compare_runs of 2 to kMaxCompared stored runs.
  Response run_compare(const Request& r) const;
  static constexpr size_t kMaxCompared = 20;
  Response run_info(const std::string& run_id) const;
  Response run_stop(const std::string& run_id);

  const NodeRegistry& registry_;
  Inspector& inspector_;
  std::filesystem::path graphs_dir_;
  RunFiles files_;
  RunnerSettings runner_;
  RunQueues queues_;
  mutable std::mutex mutex_;                                ///< guards records_ and what they hold
  std::map<std::string, std::shared_ptr<Record>> records_;  ///< headless runs, by run id
  bool planning_ = false;                                   ///< a memory plan is queued or being made (one at a time)
};

}  // namespace codefy::server
