// Records a run into the run history while it runs: an Observer that passes
// every event on to the run's own observer (the CLI's printer, a server
// connection) and keeps the training node's config and series in the store,
// written in batches (one transaction at most every half second, and at each
// epoch's end) so recording never holds training up. A store that fails
// (read-only folder, full disk) is said once and the run goes on unrecorded.
// The same batches can go to a TensorBoard event file as well (or instead:
// the store may be null), which TensorBoard then shows while the run goes on.
#pragma once

#include "engine/events.h"
#include "engine/executor.h"
#include "engine/run_error.h"
#include "store/run_store.h"
#include "store/run_views.h"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace codefy {

class RunRecorder : public Observer {
 public:
  /// Starts recording `run` (its id, graph, seed, source, ... filled in) in
  /// `store` (null: none); events go on to `next` (may be null). `warn` hears
  /// the one message when recording stops working (default: stderr).
  RunRecorder(std::shared_ptr<store::RunStore> store, store::RunRecord run, Observer* next,
              std::function<void(const std::string&)> warn = {});
  ~RunRecorder() override;

  const std::string& run_id() const { return run_.id; }
  /// The run is being kept in the store.
  bool recording() const { return store_ != nullptr; }
  /// The run is being kept somewhere (the store or a TensorBoard file): the recorder should hear its events.
  bool active() const { return store_ != nullptr || tensorboard_ != nullptr; }

  /// Also writes the run as TensorBoard reads it, into `dir`/<run id>; a
  /// folder that cannot be written is said once and the run goes on.
  void write_tensorboard(const std::filesystem::path& dir);
  /// The TensorBoard event file being written; empty when none.
  std::filesystem::path tensorboard_file() const;
  /// Seconds the recorder itself took on the run's thread (reading events,
  /// writing the store and the event file), not counting the next observer's.
  double busy_seconds() const { return busy_.count(); }

  void on_node_entry(const NodeRef& n) override;
  void on_node_exit(const NodeRef& n, NodeStatus s, const nlohmann::json& detail) override;
  void on_progress(const NodeRef& n, const nlohmann::json& event) override;
  void on_warning(const NodeRef& n, const std::string& message) override;
  void on_print(const NodeRef& n, const std::string& text) override;
  void on_image(const NodeRef& n, const std::string& base64_png) override;

  /// The run ended: its status ("completed", "failed", "stopped"), error,
  /// results by node, peak memory by device and the files it wrote.
  void finish(const std::string& status, const std::optional<RunError>& error, const nlohmann::json& results,
              const nlohmann::json& peak_memory, const nlohmann::json& artifacts);

 private:
  void flush();
  /// Runs a store call; on failure says why once and stops recording.
  void guarded(const std::function<void()>& write);
  /// Runs a TensorBoard write; on failure says why once and stops writing there.
  void tensorboard_guarded(const std::function<void()>& write);

  std::shared_ptr<store::RunStore> store_;
  std::unique_ptr<store::TensorBoardRun> tensorboard_;
  store::RunRecord run_;
  Observer* next_;
  std::function<void(const std::string&)> warn_;
  std::vector<store::SeriesPoint> pending_;
  std::chrono::steady_clock::time_point last_flush_, started_;
  std::map<std::string, std::chrono::steady_clock::time_point> entered_;
  nlohmann::json timings_ = nlohmann::json::object();
  bool finished_ = false;
  std::chrono::duration<double> busy_{0};
};

/// The history's record of a run about to start: the graph snapshot, seed,
/// source ("cli", "editor", "codefyui", "api"), and from the training nodes
/// the precision asked for and the devices (`device_override` when the whole
/// run is pinned to one); a fresh id.
store::RunRecord run_record(const PreparedGraph& prepared, const graph::NodeCatalog& catalog,
                            const nlohmann::json& snapshot, const std::string& source, uint64_t seed,
                            const std::string& device_override, int world_size);

/// The numbers a reader wants at the end, from the nodes whose definitions
/// report results: a node's JSON metrics whole (training), else its scalar
/// outputs (evaluation).
nlohmann::json results_json(const PreparedGraph& prepared, const RunResult& result, const graph::NodeCatalog& catalog);

/// The highest peak per device: the counted CPU peak of any node, and each
/// training node's peak per device (from `results`).
nlohmann::json peak_memory_json(const RunResult& result, const nlohmann::json& results);

/// A graph's hash for the run history: fnv1a-64 of its compact JSON, 16 hex digits.
std::string graph_hash(const nlohmann::json& graph);

}  // namespace codefy
