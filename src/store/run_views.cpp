#include "store/run_views.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace codefy::store {

namespace {

/// Keys in the order first met, each with one value a run (null where absent).
class Table {
 public:
  explicit Table(size_t runs) : runs_(runs) {}

  void set(const std::string& key, size_t run, nlohmann::json value, nlohmann::json about = {}) {
    auto [it, added] = rows_.try_emplace(key);
    if (added) {
      order_.push_back(key);
      it->second.values = nlohmann::json::array();
      for (size_t i = 0; i < runs_; ++i) it->second.values.push_back(nullptr);
      it->second.about = std::move(about);
    }
    it->second.values[run] = std::move(value);
  }

  /// The rows as [{"key", ...about, "values"}], all or only those whose values differ.
  nlohmann::json rows(bool only_differing) const {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& key : order_) {
      const Row& row = rows_.at(key);
      const bool same = std::all_of(row.values.begin(), row.values.end(),
                                    [&](const nlohmann::json& v) { return v == row.values.front(); });
      if (only_differing && same) continue;
      nlohmann::json j = row.about.is_object() ? row.about : nlohmann::json::object();
      j["key"] = key;
      if (!j.contains("label")) j["label"] = key;
      j["values"] = row.values;
      out.push_back(std::move(j));
    }
    return out;
  }

 private:
  struct Row {
    nlohmann::json values, about;
  };
  size_t runs_;
  std::vector<std::string> order_;
  std::map<std::string, Row> rows_;
};

bool is_scalar_array(const nlohmann::json& v) {
  return v.is_array() && std::none_of(v.begin(), v.end(), [](const nlohmann::json& e) { return e.is_structured(); });
}

/// Calls `leaf(path, value)` for each value under `v`: objects by key, arrays
/// of objects or arrays by index; an array of plain values is one value.
template <typename Leaf>
void flatten(const nlohmann::json& v, const std::string& path, const Leaf& leaf) {
  if (v.is_object() && !v.empty()) {
    for (const auto& [k, e] : v.items()) flatten(e, path.empty() ? k : path + "." + k, leaf);
  } else if (v.is_array() && !v.empty() && !is_scalar_array(v)) {
    for (size_t i = 0; i < v.size(); ++i) flatten(v[i], path + "[" + std::to_string(i) + "]", leaf);
  } else {
    leaf(path, v);
  }
}

/// The graph snapshot's edges as sorted "source.handle -> target.handle" lines.
nlohmann::json edge_lines(const nlohmann::json& graph) {
  std::vector<std::string> lines;
  if (graph.contains("edges") && graph["edges"].is_array())
    for (const auto& e : graph["edges"]) {
      if (!e.is_object()) continue;
      const auto text = [&](const char* key) {
        const auto it = e.find(key);
        return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
      };
      lines.push_back(text("source") + "." + text("sourceHandle") + " -> " + text("target") + "." +
                      text("targetHandle"));
    }
  std::sort(lines.begin(), lines.end());
  return lines;
}

/// The JSON a text value holds when it is a JSON object or list, else null.
nlohmann::json json_in_text(const nlohmann::json& value) {
  if (!value.is_string()) return nullptr;
  const auto& text = value.get_ref<const std::string&>();
  if (text.empty() || (text[0] != '{' && text[0] != '[')) return nullptr;
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
  return parsed.is_discarded() ? nlohmann::json() : parsed;
}

/// Calls `setting(key, value, about)` for each node's type ("<id>.type") and
/// each of its parameters (under `data.params`, where graph.json keeps them),
/// flattened to "<id>.params.<path>".
template <typename Setting>
void for_each_node_setting(const nlohmann::json& graph, const Setting& setting) {
  if (!graph.is_object() || !graph.contains("nodes") || !graph["nodes"].is_array()) return;
  for (const auto& node : graph["nodes"]) {
    if (!node.is_object() || !node.contains("id") || !node["id"].is_string()) continue;
    const std::string id = node["id"];
    const std::string type = node.value("type", "");
    setting(id + ".type", type, nlohmann::json{{"label", id + " type"}, {"node", id}});
    const auto data = node.find("data");
    if (data == node.end() || !data->is_object() || !data->contains("params") || !(*data)["params"].is_object())
      continue;
    const auto add_param = [&](const std::string& param, const nlohmann::json& value) {
      if (param.empty()) return;
      setting(id + ".params." + param, value,
              nlohmann::json{
                  {"label", id + " (" + type + ") " + param}, {"node", id}, {"node_type", type}, {"param", param}});
    };
    for (const auto& [name, value] : (*data)["params"].items()) {
      // A parameter that holds JSON as text (a SequentialModel's layer spec)
      // is compared inside, so a diff names the layer setting that changed.
      const nlohmann::json inner = json_in_text(value);
      flatten(inner.is_structured() ? inner : value, name, add_param);
    }
  }
}

/// The run's own settings, in the order a reader looks for them.
std::vector<std::pair<const char*, nlohmann::json>> run_fields(const RunRecord& r) {
  return {{"graph", r.graph_name},
          {"source", r.source},
          {"status", r.status},
          {"seed", r.seed},
          {"devices", r.devices},
          {"precision_requested", r.precision_requested},
          {"precision", r.precision_used},
          {"micro_batch", r.micro_batch},
          {"accumulate_steps", r.accumulate_steps},
          {"effective_batch", r.effective_batch},
          {"world_size", r.world_size},
          {"threads", r.threads}};
}

/// A run's final metrics, numbers only, flattened ("train.final_train_loss"), then its duration.
std::vector<std::pair<std::string, double>> final_numbers(const RunRecord& r) {
  std::vector<std::pair<std::string, double>> out;
  flatten(r.final_metrics, "", [&](const std::string& key, const nlohmann::json& v) {
    if (!key.empty() && v.is_number()) out.emplace_back(key, v.get<double>());
  });
  out.emplace_back("duration_s", r.duration_s);
  return out;
}

}  // namespace

nlohmann::json run_json(const RunRecord& r, bool whole) {
  nlohmann::json j = nlohmann::json::object();
  for (auto& [key, value] : run_fields(r)) j[key] = std::move(value);
  j.update({{"id", r.id},
            {"graph_hash", r.graph_hash},
            {"started_at", r.started_at},
            {"ended_at", r.ended_at},
            {"duration_s", r.duration_s},
            {"error", r.error},
            {"peak_memory", r.peak_memory},
            {"final_metrics", r.final_metrics}});
  if (whole) {
    j["graph_snapshot"] = r.graph;
    j["config"] = r.config;
    j["node_timings"] = r.node_timings;
    j["artifacts"] = r.artifacts;
  }
  return j;
}

nlohmann::json compare_runs(const std::vector<RunRecord>& runs) {
  Table settings(runs.size()), metrics(runs.size());
  nlohmann::json listed = nlohmann::json::array();
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunRecord& r = runs[i];
    listed.push_back(run_json(r, false));
    for (auto& [key, value] : run_fields(r)) settings.set(key, i, std::move(value));
    for_each_node_setting(r.graph, [&](const std::string& key, const nlohmann::json& value, nlohmann::json about) {
      settings.set(key, i, value, std::move(about));
    });
    settings.set("edges", i, edge_lines(r.graph), {{"label", "connections"}});

    for (const auto& [key, value] : final_numbers(r))
      metrics.set(key, i, value, key == "duration_s" ? nlohmann::json{{"label", "duration (s)"}} : nlohmann::json());
    if (r.peak_memory.is_object())
      for (const auto& [device, bytes] : r.peak_memory.items())
        if (bytes.is_number()) metrics.set("peak_memory." + device, i, bytes, {{"label", "peak memory " + device}});
  }
  return {{"runs", listed}, {"differences", settings.rows(true)}, {"metrics", metrics.rows(false)}};
}

std::string series_csv(const std::vector<SeriesPoint>& points) {
  std::string out = "series,step,value,time\n";
  char line[160];
  for (const auto& p : points) {
    std::snprintf(line, sizeof line, ",%lld,%.9g,%.3f\n", static_cast<long long>(p.step), p.value, p.t);
    out += p.name;  // series names are plain identifiers: no quoting needed
    out += line;
  }
  return out;
}

std::string tensorboard_tag(const std::string& series_name) {
  static const std::map<std::string, std::string> epoch = {{"epoch_loss", "epoch/loss"},
                                                           {"val_loss", "epoch/val_loss"},
                                                           {"val_accuracy", "epoch/val_accuracy"},
                                                           {"epoch_seconds", "epoch/seconds"},
                                                           {"epoch_lr", "epoch/lr"}};
  const auto it = epoch.find(series_name);
  return it != epoch.end() ? it->second : "train/" + series_name;
}

nlohmann::json run_hparams(const RunRecord& run) {
  nlohmann::json h = nlohmann::json::object();
  const auto put = [&h](const std::string& key, const nlohmann::json& v) {
    if (v.is_null()) return;
    h[key] = v.is_structured() ? nlohmann::json(v.dump()) : v;
  };
  for (const auto& [key, value] : run_fields(run))
    if (std::string(key) != "status") put(key, value);
  for_each_node_setting(
      run.graph, [&](const std::string& key, const nlohmann::json& value, const nlohmann::json&) { put(key, value); });
  return h;
}

TensorBoardRun::TensorBoardRun(const std::filesystem::path& dir, const RunRecord& run)
    : writer_(dir, run.started_at > 0 ? std::optional<double>(run.started_at) : std::nullopt) {}

void TensorBoardRun::add(const std::vector<SeriesPoint>& points) {
  for (const auto& p : points) writer_.add_scalar(tensorboard_tag(p.name), p.value, p.step, p.t);
  writer_.flush();
}

void TensorBoardRun::finish(const RunRecord& run) {
  const double end = run.ended_at > 0 ? run.ended_at : run.started_at + run.duration_s;
  std::vector<std::string> tags;
  for (const auto& [key, value] : final_numbers(run)) {
    tags.push_back("final/" + key);
    writer_.add_scalar(tags.back(), value, 0, end);
  }
  writer_.add_hparams(run_hparams(run), tags, run.status, run.started_at, end);
  writer_.flush();
}

std::filesystem::path write_tensorboard(const RunRecord& run, const std::vector<SeriesPoint>& points,
                                        const std::filesystem::path& dir) {
  TensorBoardRun tb(dir / run.id, run);
  tb.add(points);
  tb.finish(run);
  return tb.path();
}

}  // namespace codefy::store
