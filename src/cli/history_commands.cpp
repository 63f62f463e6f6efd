// `codefy runs`: the run history from the terminal (list, show, compare,
// export, delete), reading the same runs.db as `codefy serve`.
#include "cli/commands.h"

#include "device/memory.h"
#include "store/run_store.h"
#include "store/run_views.h"
#include "util/atomic_file.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace codefy::cli {

namespace {

/// The first training node's metric `key` of a run, if it has one.
std::optional<double> final_metric(const store::RunRecord& r, const char* key) {
  if (!r.final_metrics.is_object()) return std::nullopt;
  for (const auto& [id, m] : r.final_metrics.items())
    if (m.is_object() && m.contains(key) && m[key].is_number()) return m[key].get<double>();
  return std::nullopt;
}

std::string number(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.4g", v);
  return s;
}

std::string when(double unix_s) {
  const auto t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  localtime_r(&t, &tm);
  char s[32];
  std::strftime(s, sizeof s, "%Y-%m-%d %H:%M", &tm);
  return s;
}

/// A value in a comparison's cell: numbers short, text as it is, "-" for none; at most `width` characters.
std::string cell(const nlohmann::json& v, size_t width) {
  std::string s;
  if (v.is_null())
    s = "-";
  else if (v.is_number_float())
    s = number(v.get<double>());
  else if (v.is_string())
    s = v.get<std::string>();
  else
    s = v.dump();
  if (s.size() > width) s = s.substr(0, width - 3) + "...";
  return s;
}

/// compare_runs' answer as two tables: what differs, then the metrics.
void print_comparison(const nlohmann::json& c) {
  constexpr size_t kColumn = 22;
  size_t label_width = 12;
  for (const char* table : {"differences", "metrics"})
    for (const auto& row : c[table]) label_width = std::max(label_width, row["label"].get<std::string>().size());
  label_width = std::min<size_t>(label_width, 48);

  const auto print_row = [&](const std::string& label, const nlohmann::json& values) {
    std::printf("  %-*s", static_cast<int>(label_width), cell(label, label_width).c_str());
    for (const auto& v : values) std::printf("  %-*s", static_cast<int>(kColumn), cell(v, kColumn).c_str());
    std::printf("\n");
  };
  nlohmann::json ids = nlohmann::json::array();
  for (const auto& r : c["runs"]) ids.push_back(r["id"]);
  print_row("run", ids);

  std::printf("What differs\n");
  if (c["differences"].empty()) std::printf("  (nothing: the same graph and settings)\n");
  for (const auto& row : c["differences"]) print_row(row["label"], row["values"]);
  std::printf("Metrics\n");
  for (const auto& row : c["metrics"]) print_row(row["label"], row["values"]);
}

void print_list(const std::vector<store::RunRecord>& list, const std::filesystem::path& db) {
  std::printf("%-22s %-16s %-24s %-11s %-9s %9s %10s %8s %9s %10s\n", "id", "when", "graph", "status", "precision",
              "eff.batch", "final loss", "accuracy", "duration", "peak mem");
  for (const auto& r : list) {
    const auto loss = final_metric(r, "final_train_loss");
    const auto acc = final_metric(r, "final_val_accuracy");
    int64_t peak = 0;
    if (r.peak_memory.is_object())
      for (const auto& [d, b] : r.peak_memory.items())
        if (b.is_number_integer()) peak = std::max(peak, b.get<int64_t>());
    std::printf("%-22s %-16s %-24.24s %-11s %-9s %9lld %10s %8s %8.1fs %10s\n", r.id.c_str(),
                when(r.started_at).c_str(), r.graph_name.c_str(), r.status.c_str(), r.precision_used.c_str(),
                static_cast<long long>(r.effective_batch), loss ? number(*loss).c_str() : "-",
                acc ? number(*acc).c_str() : "-", r.duration_s, peak ? device::format_bytes(peak).c_str() : "-");
  }
  if (list.empty()) std::printf("(no runs recorded in %s)\n", db.c_str());
}

/// The run `id`, or an error on stderr naming the database.
std::optional<store::RunRecord> find_run(const store::RunStore& runs, const std::string& id) {
  auto r = runs.get(id);
  if (!r) std::fprintf(stderr, "error: no run %s in %s\n", id.c_str(), runs.path().c_str());
  return r;
}

int export_run(const store::RunStore& runs, const RunsCommand& cmd) {
  const auto r = find_run(runs, cmd.id);
  if (!r) return kExitUsage;
  if (cmd.csv_path.empty()) {
    std::fprintf(stderr, "error: runs export needs --csv FILE\n");
    return kExitUsage;
  }
  const auto points = runs.series(r->id);
  nlohmann::json written = nlohmann::json::object();
  if (!cmd.csv_path.empty()) {
    util::write_file_atomic(cmd.csv_path, store::series_csv(points));
    written["csv"] = cmd.csv_path;
  }
  if (cmd.json)
    std::printf("%s\n", nlohmann::json{{"run", r->id}, {"points", points.size()}, {"written", written}}.dump().c_str());
  else
    for (const auto& [kind, path] : written.items())
      std::printf("wrote %zu points of run %s to %s\n", points.size(), r->id.c_str(), path.get<std::string>().c_str());
  return kExitOk;
}

}  // namespace

int runs_command(const RunsCommand& cmd) {
  try {
    store::RunStore runs(std::filesystem::path(cmd.data_dir) / "runs.db", store::Retention::from_env());
    if (cmd.action == "delete") {
      if (!runs.remove(cmd.id)) {
        std::fprintf(stderr, "error: no run %s in %s\n", cmd.id.c_str(), runs.path().c_str());
        return kExitUsage;
      }
      if (!cmd.json) std::printf("deleted run %s\n", cmd.id.c_str());
      return kExitOk;
    }
    if (cmd.action == "show") {
      const auto r = find_run(runs, cmd.id);
      if (!r) return kExitUsage;
      nlohmann::json j = store::run_json(*r, true);
      nlohmann::json series = nlohmann::json::object();
      for (const auto& p : runs.series(r->id)) series[p.name].push_back({p.step, p.value});
      j["series"] = series;
      std::printf("%s\n", j.dump(cmd.json ? -1 : 2).c_str());
      return kExitOk;
    }
    if (cmd.action == "compare") {
      std::vector<store::RunRecord> compared;
      for (const auto& id : cmd.ids) {
        auto r = find_run(runs, id);
        if (!r) return kExitUsage;
        compared.push_back(std::move(*r));
      }
      const nlohmann::json c = store::compare_runs(compared);
      if (cmd.json)
        std::printf("%s\n", c.dump().c_str());
      else
        print_comparison(c);
      return kExitOk;
    }
    if (cmd.action == "export") return export_run(runs, cmd);

    store::RunFilter f;
    f.graph = cmd.graph;
    f.status = cmd.status;
    f.source = cmd.source;
    f.limit = cmd.limit;
    const auto list = runs.list(f);
    if (cmd.json) {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& r : list) a.push_back(store::run_json(r, false));
      std::printf("%s\n", nlohmann::json{{"runs", a}}.dump().c_str());
    } else {
      print_list(list, runs.path());
    }
    return kExitOk;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return kExitUsage;
  }
}

}  // namespace codefy::cli
