// What readers see of stored runs, the same for `codefy runs` and the
// server's /api/runs routes: a run as JSON, runs compared side by side
// (only what differs, then every final metric), and a run's series as CSV.
#pragma once

#include "store/run_store.h"
#include "store/tensorboard.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace codefy::store {

/// A run's record as JSON: its settings, status, times, error, final
/// metrics and peak memory; with `whole`, also the graph snapshot, the
/// training node's config, per-node timings and the files it wrote.
nlohmann::json run_json(const RunRecord& run, bool whole);

/// Runs side by side. `differences`: each setting whose value is not the same
/// in every run (the run's own fields, then every node parameter of the graph
/// snapshots, flattened to keys such as "train.params.lr"), with one value a
/// run (null where a run lacks it). `metrics`: every final metric, the
/// duration and the peak memory per device, all listed, one value a run.
nlohmann::json compare_runs(const std::vector<RunRecord>& runs);

/// A run's series as CSV, one row a point: series,step,value,time (Unix seconds).
std::string series_csv(const std::vector<SeriesPoint>& points);

/// The TensorBoard tag a series is written under: per-update series under
/// "train/", per-epoch series under "epoch/" ("epoch_loss" -> "epoch/loss").
std::string tensorboard_tag(const std::string& series_name);

/// A run's settings as the hparams plugin takes them, one flat object: the
/// run's own (seed, precision, batch sizes, world size, devices) and every
/// node parameter of its graph under the keys compare_runs uses
/// ("opt.params.lr"); a list is kept as its JSON text.
nlohmann::json run_hparams(const RunRecord& run);

/// One run written as TensorBoard reads it, into an event file of its own
/// folder: its series as scalars under tensorboard_tag while it runs, then
/// at its end the hparams plugin's records and each final metric (numbers
/// only) as the scalar "final/<node>.<metric>", which the hparams table shows.
class TensorBoardRun {
 public:
  /// A new event file in `dir` (created). Throws TensorBoardError.
  TensorBoardRun(const std::filesystem::path& dir, const RunRecord& run);
  /// Writes the points and flushes, so TensorBoard sees them while the run goes on.
  void add(const std::vector<SeriesPoint>& points);
  /// The run ended (its status, metrics and end time filled in).
  void finish(const RunRecord& run);
  const std::filesystem::path& path() const { return writer_.path(); }

 private:
  EventFileWriter writer_;
};

/// A stored run and its series written as TensorBoardRun does, in `dir`/<run id>;
/// returns the event file's path. Throws TensorBoardError.
std::filesystem::path write_tensorboard(const RunRecord& run, const std::vector<SeriesPoint>& points,
                                        const std::filesystem::path& dir);

}  // namespace codefy::store
