// The WebSocket execution protocol: actions in, a run's events out as
// CodefyUI's messages, exactly one final message per run.
#include "server/ws_execution.h"

#include "device/catalogue.h"
#include "engine/executor.h"
#include "graph/graph.h"
#include "server/graph_routes.h"
#include "server/runs.h"
#include "util/json_input.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace codefy::server {

namespace {

std::string ws_text(const nlohmann::json& m) {
  return m.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// An editor's run: its events as CodefyUI's messages, and its final message
/// decided under the connection's lock (see WsExecution::stop_current).
class EditorRun : public RunListener {
 public:
  EditorRun(std::shared_ptr<Connection> c, std::string client_run_id, std::vector<std::string> device_warnings)
      : c_(std::move(c)), client_run_id_(std::move(client_run_id)), device_warnings_(std::move(device_warnings)) {}

  void on_run_start(const std::string& run_id) override {
    // server_run_id (Codefy's addition) names the run in /api/runs, so an
    // editor whose connection dropped can ask how the run ended.
    emit({{"type", "execution_start"},
          {"run_id", client_run_id_.empty() ? run_id : client_run_id_},
          {"server_run_id", run_id}});
    for (const auto& w : device_warnings_) emit({{"type", "warning"}, {"node_id", nullptr}, {"message", w}});
  }
  void on_node_entry(const NodeRef& n) override {
    emit({{"type", "node_status"}, {"node_id", n.id}, {"status", "running"}});
  }
  void on_node_exit(const NodeRef& n, NodeStatus s, const nlohmann::json& detail) override {
    nlohmann::json m = {{"type", "node_status"}, {"node_id", n.id}, {"status", to_string(s)}};
    if (s == NodeStatus::kError && detail.value("stopped", false)) {
      // Stop interrupted it: not a failure of the node. CodefyUI's status for
      // it is "interrupted"; stopped is Codefy's own mark.
      m["status"] = "interrupted";
      m["stopped"] = true;
    } else if (s == NodeStatus::kError) {
      m["error"] = detail.value("error", "");
      for (const char* key : {"field", "out_of_memory"})  // Codefy's additions, for the editor to mark
        if (detail.contains(key)) m[key] = detail[key];
    } else if (s == NodeStatus::kCompleted || s == NodeStatus::kCached) {
      m["output_summary"] = detail;
      // CodefyUI's client shows a top-level image (a bare base64 PNG) in its log.
      if (image_node_ == n.id) m["image"] = std::move(image_);
    }
    // What the node printed rides on its closing message, as CodefyUI's `log`.
    if (auto it = logs_.find(n.id); it != logs_.end()) {
      m["log"] = std::move(it->second);
      logs_.erase(it);
    }
    image_node_.clear();
    image_.clear();
    emit(m);
  }
  void on_progress(const NodeRef& n, const nlohmann::json& e) override {
    // Per-batch progress goes under a message type of its own: CodefyUI's
    // client ignores types it does not know, while a node_status "progress"
    // frame would replace the epoch bar its node card shows. Config and epoch
    // frames keep CodefyUI's shape.
    if (e.value("event", "") == "batch")
      emit({{"type", "node_progress"}, {"node_id", n.id}, {"progress", e}});
    else
      emit({{"type", "node_status"}, {"node_id", n.id}, {"status", "progress"}, {"progress", e}});
  }
  void on_warning(const NodeRef& n, const std::string& message) override {
    emit({{"type", "warning"}, {"node_id", n.id}, {"message", message}});
  }
  void on_print(const NodeRef& n, const std::string& text) override {
    std::string& log = logs_[n.id];
    log += (log.empty() ? "" : "\n") + text;
  }
  void on_image(const NodeRef& n, const std::string& base64_png) override {
    image_node_ = n.id;
    image_ = base64_png;
  }
  void on_run_end(const std::string& run_id, const RunOutcome& outcome) override {
    std::lock_guard<std::mutex> lock(c_->mutex);
    if (c_->run_id != run_id || !c_->active) return;  // already answered (a stop of it while queued)
    if (c_->stop_requested || outcome.status == "stopped")
      emit({{"type", "execution_stopped"}});
    else if (outcome.status == "ok")
      emit({{"type", "execution_complete"}});
    else
      emit({{"type", "execution_error"}, {"error", outcome.error.value("message", std::string())}});
    c_->active = false;
  }

 private:
  void emit(const nlohmann::json& m) { c_->send(ws_text(m)); }

  std::shared_ptr<Connection> c_;
  std::string client_run_id_;
  std::vector<std::string> device_warnings_;
  // Filled and read on the run's thread only.
  std::map<std::string, std::string> logs_;  ///< node id -> text printed since it started
  std::string image_node_, image_;           ///< the image of the node about to exit
};

}  // namespace

WsExecution::WsExecution(Runs& runs, const NodeRegistry& registry, store::StoreLimits cache_limits,
                         std::filesystem::path base_dir, std::filesystem::path examples_dir)
    : runs_(runs),
      registry_(registry),
      cache_limits_(cache_limits),
      base_dir_(std::move(base_dir)),
      examples_dir_(std::move(examples_dir)) {}

std::shared_ptr<Connection> WsExecution::open(std::function<void(std::string)> send) {
  auto c = std::make_shared<Connection>();
  c->send = std::move(send);
  c->cache = std::make_shared<ExecutionCache>(cache_limits_);
  std::lock_guard<std::mutex> lock(mutex_);
  connections_.erase(std::remove_if(connections_.begin(), connections_.end(),
                                    [](const std::weak_ptr<Connection>& w) { return w.expired(); }),
                     connections_.end());
  connections_.push_back(c);
  return c;
}

void WsExecution::close(const std::shared_ptr<Connection>& c) {
  std::string run;
  {
    std::lock_guard<std::mutex> lock(c->mutex);
    run = c->run_id;
  }
  if (!run.empty()) runs_.queues().stop(run);  // a closed editor stops its run
  c->cache->clear();
  std::lock_guard<std::mutex> lock(mutex_);
  connections_.erase(std::remove_if(connections_.begin(), connections_.end(),
                                    [&](const std::weak_ptr<Connection>& w) {
                                      auto s = w.lock();
                                      return !s || s == c;
                                    }),
                     connections_.end());
}

nlohmann::json WsExecution::cache_health() const {
  size_t instances = 0, entries = 0;
  int64_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& w : connections_)
      if (auto c = w.lock()) {
        const auto st = c->cache->stats();
        ++instances, entries += st.entries, bytes += st.bytes;
      }
  }
  return {
      {"instances", instances}, {"entries", entries}, {"bytes", bytes}, {"max_bytes_each", cache_limits_.max_bytes}};
}

void WsExecution::receive(const std::shared_ptr<Connection>& c, const std::string& text) {
  const auto send = [&c](const nlohmann::json& m) { c->send(ws_text(m)); };
  nlohmann::json msg;
  try {
    msg = util::parse_json(text);
  } catch (const util::JsonInputError& e) {
    return send({{"type", "error"}, {"error", std::string("malformed JSON: ") + e.what()}});
  }
  const std::string action = msg.is_object() ? msg.value("action", std::string()) : std::string();
  if (action == "clear_cache") {
    c->cache->clear();
    return send({{"type", "cache_cleared"}});
  }
  if (action == "stop") {
    if (!stop_current(c)) send({{"type", "execution_stopped"}});  // nothing running: answered at once
    return;
  }
  if (action != "execute") return send({{"type", "error"}, {"error", "Unknown action: " + action}});
  stop_current(c);  // a new execute replaces the running one, as in CodefyUI
  execute(c, msg);
}

bool WsExecution::stop_current(const std::shared_ptr<Connection>& c) {
  // Exactly one final message per run. A run that already sent its own is
  // left alone; a queued one is dropped and answered here; a running one
  // answers execution_stopped when it unwinds, between batches.
  std::lock_guard<std::mutex> lock(c->mutex);
  if (!c->active) return false;
  c->stop_requested = true;
  const auto info = runs_.queues().info(c->run_id);
  runs_.queues().stop(c->run_id);
  if (info && info->state == RunState::kQueued) {
    c->active = false;
    c->send(ws_text({{"type", "execution_stopped"}}));
  }
  return true;
}

void WsExecution::execute(const std::shared_ptr<Connection>& c, const nlohmann::json& msg) {
  RunRequest run;
  try {
    nlohmann::json g = msg;
    if (!g.contains("name")) g["name"] = msg.value("graph_id", std::string("editor"));
    run.graph = std::make_shared<PreparedGraph>(prepare(graph::graph_from_json(g, "editor"), registry_));
  } catch (const std::exception& e) {
    return c->send(ws_text({{"type", "execution_error"}, {"error", e.what()}}));
  }
  if (msg.contains("changed_nodes") && msg["changed_nodes"].is_array())
    for (const auto& n : msg["changed_nodes"])
      if (n.is_string()) run.force_rerun.insert(n.get<std::string>());
  const device::DeviceChoice choice = device::resolve_device(msg.value("device", std::string("auto")),
                                                             device::DeviceSource{"editor", "", "", "device"});
  run.device = choice.device.str();
  run.base_dir = base_dir_;
  if (const auto example = msg.find("example"); example != msg.end() && example->is_string()) {
    std::optional<std::filesystem::path> folder;
    try {
      folder = example_folder(examples_dir_, example->get<std::string>());
    } catch (const std::invalid_argument&) {
    }
    if (!folder)
      return c->send(
          ws_text({{"type", "execution_error"}, {"error", "Example not found: " + example->get<std::string>()}}));
    run.base_dir = *folder;
  }
  run.cache = c->cache.get();
  run.keep_state = msg.value("weights_persistent", true);  // CodefyUI's default: modules carry over between runs
  run.state_scope = msg.value("graph_id", std::string());
  if (run.state_scope.empty()) run.state_scope = run.graph->graph.name;
  run.record_outputs = msg.value("record_outputs", false);
  run.outputs_id = msg.value("run_id", std::string());
  auto listener = std::make_shared<EditorRun>(c, run.outputs_id, choice.warnings);
  std::lock_guard<std::mutex> lock(c->mutex);  // before the run's end can look at run_id
  c->run_id = runs_.start_run(std::move(run), std::move(listener));
  c->active = true;
  c->stop_requested = false;
}

}  // namespace codefy::server
