// The run history's routes (GET /api/runs with history=1, a run's series,
// compare, delete): Runs' members defined beside the JSON they answer with.
#pragma once

#include "store/run_store.h"

#include <nlohmann/json.hpp>

namespace codefy::server {

/// A stored run as the /api/runs routes give it: the history's JSON
/// (store::run_json) with the fields a queue's run has (run_id, device,
/// seconds) and from_history. `whole` (GET /api/runs/{id}): also the
/// snapshot, config, timings and files; `metrics` as the queue's runs name
/// them, `error` its message and `run_error` the whole error.
nlohmann::json history_json(const store::RunRecord& run, bool whole);

}  // namespace codefy::server
