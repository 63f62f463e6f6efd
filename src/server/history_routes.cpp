#include "server/history_routes.h"

#include "server/runs.h"
#include "store/run_views.h"
#include "util/json_input.h"
#include "util/list.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

namespace codefy::server {

nlohmann::json history_json(const store::RunRecord& r, bool whole) {
  nlohmann::json j = store::run_json(r, whole);
  j["run_id"] = r.id;
  j["device"] = r.devices.empty() ? nlohmann::json() : r.devices[0];
  j["seconds"] = r.duration_s;
  j["from_history"] = true;
  if (whole) {
    j["metrics"] = r.final_metrics;
    j["run_error"] = r.error;
    j["error"] = r.error.is_object() ? r.error.value("message", "") : "";
  }
  return j;
}

namespace {

/// A query parameter as a whole number within [lo, hi]; `fallback` when absent.
int64_t query_int(const Request& r, const std::string& key, int64_t fallback, int64_t lo, int64_t hi) {
  const auto it = r.query.find(key);
  if (it == r.query.end() || it->second.empty()) return fallback;
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (*end != '\0' || v < lo || v > hi)
    throw util::JsonFieldError(key, "\"" + key + "\" must be a whole number from " + std::to_string(lo) + " to " +
                                        std::to_string(hi) + ", got \"" + it->second + "\"");
  return v;
}

std::string query_text(const Request& r, const std::string& key) {
  const auto it = r.query.find(key);
  return it == r.query.end() ? std::string() : it->second;
}

}  // namespace

Response Runs::runs_list(const Request& r) const {
  // The queue's runs (queued, running, and those it still remembers); with
  // history=1 each with what the history knows of it, then the history's
  // other runs, newest first, filtered by graph, status and source and
  // paged by a cursor (the Server panel asks for the queue alone).
  const bool with_history = files_.history && query_text(r, "history") == "1";
  store::RunFilter f;
  if (with_history) try {
      f.limit = static_cast<size_t>(query_int(r, "limit", 50, 1, 1000));
      const std::string cursor = query_text(r, "cursor");
      if (!cursor.empty()) {
        char* end = nullptr;
        f.before = std::strtod(cursor.c_str(), &end);
        if (*end != '\0' || !std::isfinite(f.before) || f.before <= 0)
          throw util::JsonFieldError("cursor", "\"cursor\" is not one this server gave");
      }
      f.graph = query_text(r, "graph");
      f.status = query_text(r, "status");
      f.source = query_text(r, "source");
    } catch (const util::JsonFieldError& e) {
      return Response::error(422, e.what());
    }
  const auto matches = [&f](const nlohmann::json& run) {
    const auto is = [&run](const char* key, const std::string& want) {
      return want.empty() || (run.contains(key) && run[key] == want);
    };
    return is("graph", f.graph) && is("status", f.status) && is("source", f.source);
  };

  nlohmann::json answer = {{"runs", nlohmann::json::array()}, {"next_cursor", nullptr}};
  std::set<std::string> listed;
  if (f.before == 0)  // the first page
    for (const auto& i : queues_.runs()) {
      nlohmann::json run = nlohmann::json::object();
      if (with_history) try {
          if (const auto h = files_.history->get(i.id)) run = history_json(*h, false);
        } catch (const std::exception&) {
        }
      run.update({{"run_id", i.id},
                  {"device", i.device},
                  {"worker", i.queue},
                  {"status", to_string(i.state)},
                  {"position", i.position}});
      if (with_history && !matches(run)) continue;
      answer["runs"].push_back(std::move(run));
      listed.insert(i.id);
    }
  if (!with_history) return Response::json(200, answer);
  try {
    const auto history = files_.history->list(f);
    for (const auto& h : history)
      if (!listed.count(h.id)) answer["runs"].push_back(history_json(h, false));
    if (history.size() == f.limit) {
      char cursor[64];
      std::snprintf(cursor, sizeof cursor, "%.6f", history.back().started_at);
      answer["next_cursor"] = cursor;
    }
  } catch (const std::exception& e) {
    answer["history_error"] = e.what();
  }
  return Response::json(200, answer);
}

Response Runs::run_series(const std::string& run_id, const Request& r) const {
  if (!files_.history) return Response::error(404, "no run history on this server");
  size_t points = 0;
  try {
    points = static_cast<size_t>(query_int(r, "points", 0, 0, 100000));
  } catch (const util::JsonFieldError& e) {
    return Response::error(422, e.what());
  }
  const std::vector<std::string> names = util::split_list(query_text(r, "names"));
  if (!files_.history->get(run_id)) return Response::error(404, "Run '" + run_id + "' not found");
  nlohmann::json series = nlohmann::json::object();
  for (const auto& p : files_.history->series(run_id, names, points)) series[p.name].push_back({p.step, p.value});
  return Response::json(200, {{"run_id", run_id}, {"series", series}});
}

Response Runs::run_delete(const std::string& run_id) {
  if (const auto info = queues_.info(run_id);
      info && (info->state == RunState::kQueued || info->state == RunState::kRunning))
    return Response::error(409, "Run '" + run_id + "' is " + to_string(info->state) + ": stop it first");
  if (!files_.history || !files_.history->remove(run_id)) return Response::error(404, "Run '" + run_id + "' not found");
  return Response::json(200, {{"deleted", run_id}});
}


Response Runs::run_compare(const Request& r) const {
  if (!files_.history) return Response::error(404, "no run history on this server");
  const std::vector<std::string> ids = util::split_list(query_text(r, "ids"));
  if (ids.size() < 2 || ids.size() > kMaxCompared)
    return Response::error(422, "\"ids\" must name 2 to " + std::to_string(kMaxCompared) +
                                    " runs, separated by commas; got " + std::to_string(ids.size()));
  std::vector<store::RunRecord> runs;
  try {
    for (const auto& id : ids) {
      auto run = files_.history->get(id);
      if (!run) return Response::error(404, "Run '" + id + "' not found");
      runs.push_back(std::move(*run));
    }
  } catch (const std::exception& e) {
    return Response::error(500, std::string("the run history cannot be read: ") + e.what());
  }
  nlohmann::json answer = store::compare_runs(runs);
  for (size_t i = 0; i < runs.size(); ++i) answer["runs"][i] = history_json(runs[i], false);
  return Response::json(200, answer);
}

}  // namespace codefy::server
