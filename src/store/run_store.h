// Run history: every run kept in an embedded SQLite database
// (`<data dir>/runs.db`, WAL), shared by `codefy serve` and `codefy run`.
// A run is written when it starts, its series in batches while it trains,
// and its outcome when it ends; a run whose writer died (kill -9, a crash)
// is found on the next open and marked interrupted, with its series up to
// the last flush. Two processes write at once through SQLite's locking
// (a busy timeout, not a protocol of our own).
#pragma once

#include "util/errors.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace codefy::store {

/// The database cannot be opened, read or written (read-only folder, full disk, a newer schema).
class RunStoreError : public Error {
 public:
  using Error::Error;
};

/// One run as stored. JSON fields hold what has no fixed shape (the graph,
/// the error, metrics by name, memory by device, files written).
struct RunRecord {
  std::string id;
  std::string graph_name;
  std::string graph_hash;  ///< fnv1a-64 of the graph snapshot's compact JSON, hex
  nlohmann::json graph;    ///< the whole graph as it ran
  uint64_t seed = 0;
  std::string source;  ///< "cli", "editor", "codefyui", "api"
  nlohmann::json devices = nlohmann::json::array();
  std::string precision_requested, precision_used;
  int64_t micro_batch = 0, accumulate_steps = 0, effective_batch = 0, world_size = 1, threads = 0;
  /// "queued", "running", "completed", "failed", "stopped", "interrupted".
  std::string status = "running";
  nlohmann::json error;   ///< the RunError's JSON (the out-of-memory report among them), null when none
  double started_at = 0;  ///< Unix seconds
  double ended_at = 0;    ///< 0 while it runs
  double duration_s = 0;
  nlohmann::json node_timings;   ///< {node id: seconds}
  nlohmann::json final_metrics;  ///< {node id: metrics}
  nlohmann::json peak_memory;    ///< {device: bytes}
  nlohmann::json artifacts;      ///< [{"node", "kind", "path"}]
  nlohmann::json config;         ///< the training node's config event
  int64_t pid = 0;               ///< the writing process (and its start time), to tell a dead writer
  int64_t pid_start = 0;
  std::string host;
};

/// One point of a series: per update ("loss", "lr", "grad_norm",
/// "samples_per_s") or per epoch ("epoch_loss", "val_loss", "val_accuracy", "epoch_seconds").
struct SeriesPoint {
  std::string name;
  int64_t step = 0;  ///< the optimizer update (per-update series) or the epoch (per-epoch series)
  double value = 0;
  double t = 0;  ///< Unix seconds
};

/// Which runs a list shows, newest first.
struct RunFilter {
  std::string graph, status, source;
  /// Only runs that started before this (the cursor of the previous page); 0: from the newest.
  double before = 0;
  size_t limit = 50;
};

/// What is kept: runs older than `max_age_days` (0: no limit) and beyond the
/// newest `max_runs` (0: no limit) are deleted with their series.
struct Retention {
  double max_age_days = 0;
  size_t max_runs = 10000;
  /// CODEFYUI_RUNS_RETENTION_DAYS (as CodefyUI names it) and CODEFY_RUNS_MAX;
  /// throws std::invalid_argument for a value that is not a number.
  static Retention from_env();
};

class RunStore {
 public:
  /// The schema this build writes. 1: runs and series; 2: the writer's pid,
  /// its start time and host, so a reader tells a dead writer's run from a
  /// live one in another process.
  static constexpr int kSchemaVersion = 2;

  /// Opens (creating the file and its folder) and migrates an older schema;
  /// marks the runs of dead writers on this host interrupted and applies
  /// `retention`. Throws RunStoreError (a newer schema, an unreadable file).
  explicit RunStore(const std::filesystem::path& path, Retention retention = {});
  ~RunStore();
  RunStore(const RunStore&) = delete;
  RunStore& operator=(const RunStore&) = delete;

  const std::filesystem::path& path() const { return path_; }

  /// A new run, written now (its id is given; pid and host are this process's).
  void begin_run(RunRecord run);
  /// Appends points in one transaction.
  void append_series(const std::string& run_id, const std::vector<SeriesPoint>& points);
  /// Stores the training node's config and what it says of the run (precision used, threads).
  void set_config(const std::string& run_id, const nlohmann::json& config);
  /// The run ended: its status, error (null when none), metrics, memory, timings and files.
  void finish_run(const RunRecord& run);

  std::vector<RunRecord> list(const RunFilter& filter = {}) const;
  std::optional<RunRecord> get(const std::string& run_id) const;
  /// The run's series named (all when empty), each thinned to at most `points` (0: all) by
  /// taking evenly spaced points, first and last kept.
  std::vector<SeriesPoint> series(const std::string& run_id, const std::vector<std::string>& names = {},
                                  size_t points = 0) const;
  /// Deletes a run and its series; false when there is none.
  bool remove(const std::string& run_id);
  /// Marks running and queued runs whose writer is gone interrupted; returns how many.
  int mark_interrupted();
  /// Applies the retention; returns how many runs went.
  int apply_retention();

 private:
  void exec(const std::string& sql) const;
  void migrate();

  std::filesystem::path path_;
  Retention retention_;
  sqlite3* db_ = nullptr;
  mutable std::mutex mutex_;
};

/// A new run id: time-ordered and unique across processes ("20261203-142501-3f9a1c").
std::string new_run_id();

/// This process's start time (clock ticks since boot, /proc/self/stat), to tell a reused pid.
int64_t process_start_time(int64_t pid);

}  // namespace codefy::store
