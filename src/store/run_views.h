// What readers see of stored runs, the same for `codefy runs` and the
// server's /api/runs routes: a run as JSON, runs compared side by side
// (only what differs, then every final metric), and a run's series as CSV.
#pragma once

#include "store/run_store.h"

#include <nlohmann/json.hpp>

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

}  // namespace codefy::store
