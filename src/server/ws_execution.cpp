// The WebSocket execution protocol: actions in, a run's events out as
// CodefyUI's messages, exactly one final message per run.
#include "server/ws_execution.h"

#include "device/catalogue.h"
#include "engine/executor.h"
#include "graph/graph.h"
#include "server/graph_routes.h"
#include "server/runs.h"
#include "train/progress.h"
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

/// A run's final message, CodefyUI's shape. Its other keys ("error") sort
/// before "type", so the text ends with its type: the WebSocket session
/// never drops such a message for a slow client.
nlohmann::json final_message(const char* type) { return {{"type", type}}; }

/// An editor's run: its events as CodefyUI's messages, and its final message
/// decided under the connection's lock (see WsExecution::stop_current).
class EditorRun : public RunListener {
 public:
  EditorRun(std::shared_ptr<Connection> c, std::shared_ptr<RunTicket> ticket, std::vector<std::string> device_warnings)
      : c_(std::move(c)),
        ticket_(std::move(ticket)),
        client_run_id_(ticket_->client_run_id),
        device_warnings_(std::move(device_warnings)) {}

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
    if (train::progress_kind(e) == train::ProgressKind::kBatch)
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
    RunTicket& t = *ticket_;
    if (t.answered) return;  // already answered (stopped while queued, or replaced)
    if (t.run_id.empty()) t.run_id = run_id;
    nlohmann::json m;
    if (t.stop_requested || (outcome.error && outcome.error->kind == RunErrorKind::kStopped))
      m = final_message("execution_stopped");
    else if (!outcome.error)
      m = final_message("execution_complete");
    else
      (m = final_message("execution_error"))["error"] = outcome.error->message;
    t.answered = true;
    c_->send(ws_text(m));
  }

 private:
  /// Sends an event of the run, unless its final message has gone (then the
  /// client has moved on and the event would land on its next run).
  void emit(const nlohmann::json& m) {
    std::string text = ws_text(m);
    std::lock_guard<std::mutex> lock(c_->mutex);
    if (!ticket_->answered) c_->send(std::move(text));
  }

  std::shared_ptr<Connection> c_;
  std::shared_ptr<RunTicket> ticket_;
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
    if (c->run) run = c->run->run_id;
  }
  if (!run.empty()) runs_.queues().stop(run);  // a closed editor stops its run (unlocked: a queued one answers)
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
  if (!msg.is_object())
    return send(
        {{"type", "error"},
         {"error", "a message must be a JSON object such as {\"action\": \"stop\"}, got " + util::describe_json(msg)}});
  std::string action;
  try {
    action = util::string_field(msg, "action").value_or("");
  } catch (const util::JsonFieldError& e) {
    return send({{"type", "error"}, {"error", e.what()}});
  }
  if (action == "clear_cache") {
    c->cache->clear();
    return send({{"type", "cache_cleared"}});
  }
  if (action == "stop") {
    if (!stop_current(c, false)) send({{"type", "execution_stopped"}});  // nothing running: answered at once
    return;
  }
  if (action != "execute")
    return send({{"type", "error"}, {"error", "Unknown action: " + action}});  // CodefyUI's words
  stop_current(c, true);  // a new execute replaces the running one, as in CodefyUI
  execute(c, msg);
}

bool WsExecution::stop_current(const std::shared_ptr<Connection>& c, bool replacing) {
  // Exactly one final message per run, in order: the replaced run's goes out
  // here, before the new run can send anything. A run that already sent its
  // own is left alone.
  std::string run_id;
  {
    std::lock_guard<std::mutex> lock(c->mutex);
    if (!c->run || c->run->answered) return false;
    RunTicket& t = *c->run;
    run_id = t.run_id;
    const auto info = runs_.queues().info(run_id);
    if (replacing || !info || info->state == RunState::kQueued) {
      t.answered = true;
      c->send(ws_text(final_message("execution_stopped")));
    } else {
      t.stop_requested = true;  // answers when it unwinds, between batches
    }
  }
  runs_.queues().stop(run_id);  // unlocked: a dropped queued run tells its listener, which locks
  return true;
}

namespace {

/// The fields of an execute message besides the graph, each read with the
/// type CodefyUI's client sends; a wrong type is refused naming the field.
struct ExecuteFields {
  std::string client_run_id;  ///< "run_id": the client's name for the run (also the outputs' id)
  std::string graph_id;       ///< "graph_id": the graph's name and the scope its kept modules live in
  std::string device = "auto";
  std::optional<std::string> example;
  std::set<std::string> changed_nodes;
  bool weights_persistent = true;  // CodefyUI's default: modules carry over between runs
  bool record_outputs = false;
  bool verbose = false;
  /// "client": Codefy's editor says "codefy"; CodefyUI's own client sends none.
  std::string client;
};

ExecuteFields read_execute_fields(const nlohmann::json& msg) {
  ExecuteFields f;
  f.client_run_id = util::string_field(msg, "run_id").value_or("");
  f.graph_id = util::string_field(msg, "graph_id").value_or("");
  f.device = util::string_field(msg, "device").value_or("auto");
  f.example = util::string_field(msg, "example");
  f.weights_persistent = util::bool_field(msg, "weights_persistent").value_or(true);
  f.record_outputs = util::bool_field(msg, "record_outputs").value_or(false);
  f.verbose = util::bool_field(msg, "verbose").value_or(false);
  f.client = util::string_field(msg, "client").value_or("");
  if (const auto it = msg.find("changed_nodes"); it != msg.end() && !it->is_null()) {
    if (!it->is_array())
      throw util::JsonFieldError("changed_nodes",
                                 "\"changed_nodes\" must be a list of node ids, got " + util::describe_json(*it));
    for (const auto& n : *it) {
      if (!n.is_string())
        throw util::JsonFieldError("changed_nodes",
                                   "\"changed_nodes\" must list node ids as text, got " + util::describe_json(n));
      f.changed_nodes.insert(n.get<std::string>());
    }
  }
  return f;
}

}  // namespace

void WsExecution::execute(const std::shared_ptr<Connection>& c, const nlohmann::json& msg) {
  auto ticket = std::make_shared<RunTicket>();
  // A run refused before it is queued: its one final message says why.
  const auto refuse = [&](const std::string& why) {
    ticket->answered = true;
    nlohmann::json m = final_message("execution_error");
    m["error"] = why;
    c->send(ws_text(m));
  };
  ExecuteFields fields;
  try {
    fields = read_execute_fields(msg);
  } catch (const util::JsonFieldError& e) {
    return refuse(e.what());
  }
  ticket->client_run_id = fields.client_run_id;
  RunRequest run;
  try {
    nlohmann::json g = msg;
    if (!g.contains("name")) g["name"] = fields.graph_id.empty() ? std::string("editor") : fields.graph_id;
    run.graph = std::make_shared<PreparedGraph>(prepare(graph::graph_from_json(g, "editor"), registry_));
  } catch (const std::exception& e) {
    return refuse(e.what());
  }
  run.force_rerun = std::move(fields.changed_nodes);
  const device::DeviceChoice choice =
      device::resolve_device(fields.device, device::DeviceSource{"editor", "", "", "device"});
  run.device = choice.device.str();
  run.base_dir = base_dir_;
  if (fields.example) {
    std::optional<std::filesystem::path> folder;
    try {
      folder = example_folder(examples_dir_, *fields.example);
    } catch (const std::invalid_argument&) {
    }
    if (!folder) return refuse("Example not found: " + *fields.example);
    run.base_dir = *folder;
  }
  run.cache = c->cache.get();
  run.keep_state = fields.weights_persistent;
  run.state_scope = fields.graph_id.empty() ? run.graph->graph.name : fields.graph_id;
  run.record_outputs = fields.record_outputs;
  run.verbose = fields.verbose;
  run.outputs_id = fields.client_run_id;
  run.source = fields.client == "codefy" ? "editor" : "codefyui";  // for the run history
  auto listener = std::make_shared<EditorRun>(c, ticket, choice.warnings);
  std::string run_id;
  try {
    run_id = runs_.start_run(std::move(run), std::move(listener));
  } catch (const QueueFull& e) {
    return refuse(e.what());
  }
  std::lock_guard<std::mutex> lock(c->mutex);
  if (ticket->run_id.empty()) ticket->run_id = run_id;
  c->run = std::move(ticket);
}

}  // namespace codefy::server
