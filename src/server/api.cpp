#include "server/api.h"

#include "device/catalogue.h"
#include "engine/errors.h"
#include "engine/executor.h"
#include "engine/value.h"
#include "graph/graph.h"
#include "graph/validate.h"
#include "util/atomic_file.h"
#include "util/parse.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <chrono>
#include <fstream>
#include <sstream>

namespace codefy::server {

namespace fs = std::filesystem;

std::string Request::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

Response Response::json(int status, const nlohmann::json& j) {
  Response r;
  r.status = status;
  r.body = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

Response Response::error(int status, const std::string& message) { return json(status, {{"detail", message}}); }

std::string sanitize_name(const std::string& name) {
  std::string out;
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    const bool keep = std::isalnum(u) || c == '-' || c == '_' || u >= 0x80;  // UTF-8 letters stay, as str.isalnum
    out += keep ? c : '_';
  }
  return out;
}

/// What the server keeps of a run it started (GET /api/runs/{id}).
struct Api::RunRecord {
  std::string graph;
  std::string device;
  nlohmann::json metrics = nlohmann::json::object();
  std::vector<std::string> warnings;
  nlohmann::json error;  ///< null, or {code, message, node_id}
  std::string status;    ///< final state once the run has answered ("" before)
};

namespace {

/// Collects warnings and TrainingLoop metrics of a headless run.
class RunObserver : public Observer {
 public:
  void on_warning(const NodeRef& n, const std::string& m) override {
    std::lock_guard<std::mutex> lock(mutex);
    warnings.push_back(n.id + ": " + m);
  }
  std::mutex mutex;
  std::vector<std::string> warnings;
};

nlohmann::json parse_body(const Request& r) {
  if (r.body.empty()) return nlohmann::json::object();
  return nlohmann::json::parse(r.body);  // throws nlohmann::json::parse_error
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream in(path);
  std::string p;
  while (std::getline(in, p, '/'))
    if (!p.empty()) parts.push_back(p);
  return parts;
}

/// The files, sorted, each with its parsed JSON; unreadable ones are skipped, as CodefyUI does.
std::vector<std::pair<fs::path, nlohmann::json>> read_json_files(std::vector<fs::path> files) {
  std::sort(files.begin(), files.end());
  std::vector<std::pair<fs::path, nlohmann::json>> out;
  for (auto& f : files) {
    std::ifstream in(f);
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_discarded()) out.emplace_back(std::move(f), std::move(j));
  }
  return out;
}

nlohmann::json outputs_json(const RunResult& result) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [id, outputs] : result.outputs) {
    nlohmann::json node = nlohmann::json::object();
    for (const auto& [port, value] : outputs) {
      if (const auto* m = std::get_if<nlohmann::json>(&value)) node[port] = *m;  // metrics dicts as they are
      else node[port] = summarize(value);
    }
    j[id] = node;
  }
  return j;
}

}  // namespace

Api::Api(ApiOptions options, const NodeRegistry& registry)
    : options_(std::move(options)),
      registry_(registry),
      queues_(std::make_unique<RunQueues>(options_.workers)),
      run_outputs_(options_.stores.run_output_store),
      node_state_(options_.stores.node_state_store) {
  fs::create_directories(graphs_dir());
  fs::create_directories(models_dir());
  std::random_device rd;
  char hex[33];
  for (int i = 0; i < 16; ++i) std::snprintf(hex + 2 * i, 3, "%02x", rd() & 0xff);
  boot_id_ = hex;
}

Api::~Api() { shutdown(); }

void Api::shutdown() { queues_->close(); }

fs::path Api::graphs_dir() const { return options_.data_dir / "graphs"; }
fs::path Api::models_dir() const { return options_.data_dir / "models"; }

void Api::listen_on(const std::string& host, uint16_t port) {
  const std::string p = ":" + std::to_string(port);
  std::vector<std::string> names = {"127.0.0.1", "localhost", "[::1]"};
  if (std::find(names.begin(), names.end(), host) == names.end() && host != "0.0.0.0" && host != "::")
    names.push_back(host.find(':') != std::string::npos ? "[" + host + "]" : host);
  for (const auto& n : names) {
    options_.allowed_hosts.push_back(n + p);
    options_.allowed_hosts.push_back(n);
    options_.allowed_origins.push_back("http://" + n + p);
  }
}

bool Api::host_allowed(const std::string& host) const {
  return std::find(options_.allowed_hosts.begin(), options_.allowed_hosts.end(), host) != options_.allowed_hosts.end();
}

bool Api::origin_allowed(const std::string& origin) const {
  return std::find(options_.allowed_origins.begin(), options_.allowed_origins.end(), origin) !=
         options_.allowed_origins.end();
}

std::optional<Response> Api::check_access(const Request& r) const {
  // CodefyUI's answers: 421 for a foreign Host (DNS rebinding), 403 for the token.
  if (!host_allowed(r.header("host"))) return Response::error(421, "Misdirected Request (Host not allowed)");
  const std::string origin = r.header("origin");
  if (!origin.empty() && !origin_allowed(origin)) return Response::error(403, "Origin not allowed");
  const bool mutating = r.method != "GET" && r.method != "HEAD" && r.method != "OPTIONS";
  if (mutating && r.header("x-codefyui-token") != options_.token)
    return Response::error(403, "Missing or invalid X-CodefyUI-Token header");
  return std::nullopt;
}

nlohmann::json Api::health() const {
  const auto runs = run_outputs_.stats();
  const auto modules = node_state_.stats();
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
  nlohmann::json j = {
      {"status", "ok"},
      {"version", CODEFY_VERSION},
      {"boot_id", boot_id_},
      {"nodes_loaded", registry_.list().size()},
      {"queues", queues_->queues_json()},
      {"caches",
       {{"execution_cache",
         {{"instances", instances},
          {"entries", entries},
          {"bytes", bytes},
          {"max_bytes_each", options_.stores.execution_cache.max_bytes}}},
        {"run_output_store",
         {{"runs", runs.entries},
          {"max_runs", options_.stores.run_output_store.max_entries},
          {"bytes", runs.bytes},
          {"max_bytes", options_.stores.run_output_store.max_bytes}}},
        {"node_state_store",
         {{"modules", modules.entries},
          {"max_modules", options_.stores.node_state_store.max_entries},
          {"bytes", modules.bytes},
          {"max_bytes", options_.stores.node_state_store.max_bytes}}}}}};
  return j;
}

void Api::handle(const Request& r, Respond respond) {
  try {
    if (auto denied = check_access(r)) return respond(*denied);
    const auto parts = split_path(r.path);
    const auto route = [&](const std::string& method, std::initializer_list<const char*> prefix, size_t extra) {
      if (r.method != method || parts.size() != prefix.size() + extra) return false;
      size_t i = 0;
      for (const char* p : prefix)
        if (parts[i++] != p) return false;
      return true;
    };

    if (route("GET", {"api", "health"}, 0)) return respond(Response::json(200, health()));
    if (route("GET", {"api", "auth", "bootstrap"}, 0)) {
      if (!r.from_loopback) return respond(Response::error(403, "the token is only given to loopback clients"));
      return respond(Response::json(200, {{"token", options_.token}}));
    }
    if (route("GET", {"api", "nodes"}, 0)) {
      nlohmann::json a = nlohmann::json::array();
      for (const auto* t : registry_.list()) a.push_back(graph::to_json(t->def));
      return respond(Response::json(200, a));
    }
    if (route("GET", {"api", "nodes"}, 1)) {
      const auto* t = registry_.get(parts[2]);
      if (!t) return respond(Response::error(404, "Node '" + parts[2] + "' not found"));
      return respond(Response::json(200, graph::to_json(t->def)));
    }
    if (route("GET", {"api", "system", "devices"}, 0)) {  // memory read now (R-DEV-2)
      nlohmann::json devices = device::to_json(device::device_catalogue(device::system_probe()));
      std::string fallback = "cpu";
      for (auto& d : devices) {  // CodefyUI's keys next to Codefy's
        d["value"] = d["device"];
        d["detail"] = d.value("name", "");
        d["available"] = true;
        if (d["device"] == "cuda" || (fallback == "cpu" && d["device"] == "mps")) fallback = d["device"];
      }
      return respond(Response::json(200, {{"default", fallback}, {"devices", devices}}));
    }
    if (route("POST", {"api", "graph", "validate"}, 0)) {
      try {
        prepare(graph::graph_from_json(parse_body(r), "request"), registry_);
        return respond(Response::json(
            200, {{"valid", true}, {"errors", nlohmann::json::array()}, {"issues", nlohmann::json::array()}}));
      } catch (const graph::ValidationError& e) {
        nlohmann::json errors = nlohmann::json::array();
        for (const auto& i : e.issues()) errors.push_back(i.message);
        return respond(
            Response::json(200, {{"valid", false}, {"errors", errors}, {"issues", graph::issues_json(e.issues())}}));
      }
    }
    if (parts.size() >= 3 && parts[0] == "api" && parts[1] == "graph" &&
        (parts[2] == "save" || parts[2] == "load" || parts[2] == "list"))
      return respond(graph_file_route(r, parts[2]));
    if (route("GET", {"api", "examples", "list"}, 0)) return respond(examples_list());
    if (route("GET", {"api", "examples", "load"}, 0)) {
      auto it = r.query.find("path");
      if (it == r.query.end()) return respond(Response::error(422, "the query parameter \"path\" is required"));
      return respond(example_load(it->second));
    }
    if (parts.size() >= 2 && parts[0] == "api" && parts[1] == "models") return respond(models_route(r, parts));
    if (parts.size() >= 3 && parts[0] == "api" && parts[1] == "execution" && parts[2] == "outputs")
      return respond(outputs_route(r, parts));
    if (parts.size() >= 3 && parts[0] == "api" && parts[1] == "execution" && parts[2] == "state")
      return respond(state_route(r, parts));
    if (route("POST", {"api", "graph", "run"}, 1)) return run_graph(parts[3], parse_body(r), std::move(respond));
    if (route("GET", {"api", "runs"}, 0)) {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& i : queues_->runs())
        a.push_back({{"run_id", i.id},
                     {"device", i.device},
                     {"worker", i.queue},
                     {"status", to_string(i.state)},
                     {"position", i.position}});
      return respond(Response::json(200, {{"runs", a}}));
    }
    if (route("GET", {"api", "runs"}, 1)) {
      const auto info = queues_->info(parts[2]);
      if (!info) return respond(Response::error(404, "Run '" + parts[2] + "' not found"));
      nlohmann::json j = {{"run_id", info->id},          {"device", info->device}, {"worker", info->queue},
                          {"status", to_string(info->state)}, {"queue_position", info->position},
                          {"seconds", info->seconds}};
      std::lock_guard<std::mutex> lock(mutex_);
      if (auto rec = records_.find(info->id); rec != records_.end()) {
        j["graph"] = rec->second->graph;
        j["metrics"] = rec->second->metrics;
        j["warnings"] = rec->second->warnings;
        j["error"] = rec->second->error;
        if (!rec->second->status.empty()) j["status"] = rec->second->status;  // answered, the queue may lag a moment
      }
      return respond(Response::json(200, j));
    }
    if (route("POST", {"api", "runs"}, 2) && parts[3] == "stop") {
      if (!queues_->info(parts[2])) return respond(Response::error(404, "Run '" + parts[2] + "' not found"));
      const bool stopped = queues_->stop(parts[2]);
      return respond(Response::json(200, {{"run_id", parts[2]}, {"stopping", stopped}}));
    }
    return respond(Response::error(404, "Not Found"));
  } catch (const HttpError& e) {
    return respond(Response::error(e.status(), e.what()));
  } catch (const nlohmann::json::parse_error& e) {
    return respond(Response::error(400, std::string("malformed JSON: ") + e.what()));
  } catch (const graph::GraphFormatError& e) {
    return respond(Response::error(400, e.what()));
  } catch (const std::invalid_argument& e) {
    return respond(Response::error(400, e.what()));
  } catch (const std::exception& e) {
    return respond(Response::error(500, e.what()));
  }
}

Response Api::examples_list() const {
  nlohmann::json list = nlohmann::json::array();
  if (options_.examples_dir.empty() || !fs::is_directory(options_.examples_dir)) return Response::json(200, list);
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(options_.examples_dir))
    if (e.is_regular_file() && e.path().filename() == "graph.json") files.push_back(e.path());
  for (const auto& [f, j] : read_json_files(std::move(files))) {
    const std::string rel = fs::relative(f.parent_path(), options_.examples_dir).generic_string();
    const size_t slash = rel.find('/');
    try {
      list.push_back({{"name", j.value("name", rel)},
                      {"description", j.value("description", "")},
                      {"category", slash == std::string::npos ? "Other" : rel.substr(0, slash)},
                      {"path", rel},
                      {"source", "builtin"},
                      {"node_count", j.contains("nodes") ? j["nodes"].size() : 0},
                      {"edge_count", j.contains("edges") ? j["edges"].size() : 0}});
    } catch (const nlohmann::json::exception&) {  // not a graph (an array, a number for a name): skipped
    }
  }
  return Response::json(200, list);
}

Response Api::example_load(const std::string& path) const {
  if (path.empty() || path.find("..") != std::string::npos || path.front() == '/' || path.front() == '\\')
    return Response::error(400, "Invalid path");
  const fs::path root = fs::weakly_canonical(options_.examples_dir);
  const fs::path file = fs::weakly_canonical(root / path / "graph.json");
  const std::string r = root.string(), f = file.string();
  if (f.compare(0, r.size(), r) != 0) return Response::error(400, "Invalid path");
  if (options_.examples_dir.empty() || !fs::is_regular_file(file))
    return Response::error(404, "Example not found: " + path);
  std::ifstream in(file);
  return Response::json(200, nlohmann::json::parse(in));
}

Response Api::graph_file_route(const Request& r, const std::string& action) {
  const auto parts = split_path(r.path);
  if (action == "list" && r.method == "GET" && parts.size() == 3) {
    nlohmann::json list = nlohmann::json::array();
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(graphs_dir()))
      if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
    for (const auto& [f, j] : read_json_files(std::move(files))) {
      std::error_code ec;
      const auto mtime = fs::last_write_time(f, ec).time_since_epoch();
      const auto name = j.is_object() ? j.find("name") : j.end();
      list.push_back({{"name", name != j.end() && name->is_string() ? name->get<std::string>() : f.stem().string()},
                      {"file", f.stem().string()},
                      {"modified", std::chrono::duration<double>(mtime).count()}});
    }
    return Response::json(200, list);
  }
  if (action == "load" && r.method == "GET" && parts.size() == 4) {
    const fs::path file = graphs_dir() / (sanitize_name(parts[3]) + ".json");
    if (parts[3].empty() || !fs::exists(file)) return Response::error(404, "Graph '" + parts[3] + "' not found");
    std::ifstream in(file);
    return Response::json(200, nlohmann::json::parse(in));
  }
  if (action == "save" && r.method == "POST" && parts.size() == 3) {
    nlohmann::json body = parse_body(r);
    if (!body.is_object()) return Response::error(400, "expected a graph JSON object");
    std::string target = body.value("file", std::string());
    const bool has_file = !target.empty();
    if (target.empty()) target = body.value("name", std::string());
    if (target.empty()) return Response::error(400, "the graph needs a \"name\" (or a \"file\") to be saved under");
    const std::string stem = sanitize_name(target);
    const fs::path path = graphs_dir() / (stem + ".json");
    const bool no_overwrite = body.contains("overwrite") && body["overwrite"] == false;
    if (no_overwrite && !has_file && fs::exists(path)) {
      std::string stored = stem;
      try {
        std::ifstream in(path);
        stored = nlohmann::json::parse(in).value("name", stem);
      } catch (const std::exception&) {
      }
      return Response::json(409, {{"detail", {{"error", "graph_exists"}, {"file", stem}, {"name", stored}}}});
    }
    body.erase("file");
    body.erase("overwrite");
    graph::graph_from_json(body, stem);  // a graph file at all (throws GraphFormatError → 400)
    util::write_file_atomic(path, body.dump(2) + "\n");
    return Response::json(200, {{"message", "Graph saved"}, {"path", fs::absolute(path).string()}, {"file", stem}});
  }
  return Response::error(404, "Not Found");
}

static nlohmann::json run_envelope(const std::string& run_id, const std::string& graph, const std::string& device) {
  return {{"status", "error"}, {"run_id", run_id}, {"graph", graph}, {"app", nullptr}, {"version", nullptr},
          {"device", device},  {"outputs", nullptr}, {"error", nullptr}, {"timing", {{"total_s", 0.0}}}};
}

static Response enveloped_error(int status, const std::string& graph, const std::string& code, const std::string& message,
                         nlohmann::json details = nullptr) {
  nlohmann::json e = run_envelope("", graph, "cpu");
  e["error"] = {{"code", code}, {"message", message}, {"node_id", nullptr}, {"details", std::move(details)}};
  return Response::json(status, e);
}

void Api::run_graph(const std::string& name, const nlohmann::json& body, Respond respond) {
  const fs::path file = graphs_dir() / (sanitize_name(name) + ".json");
  if (sanitize_name(name) != name || !fs::exists(file))
    return respond(enveloped_error(404, name, "graph_not_found", "Graph '" + name + "' not found"));
  if (!body.is_object())
    return respond(enveloped_error(422, name, "invalid_input", "invalid request body",
                                   {{{"field", "body"}, {"reason", "body must be a JSON object"}}}));
  graph::Graph g;
  try {
    g = graph::load_graph_file(file);
  } catch (const graph::GraphFormatError& e) {
    return respond(enveloped_error(500, name, "graph_unreadable", e.what()));
  }
  PreparedGraph prepared;
  try {
    prepared = prepare(g, registry_);
  } catch (const graph::ValidationError& e) {
    return respond(enveloped_error(409, name, "invalid_graph", "graph failed validation", graph::issues_json(e.issues())));
  }
  const std::string requested = body.value("device", std::string("auto"));
  const device::DeviceChoice choice = device::resolve_device(requested, device::DeviceSource{name, "", "", "device"});
  const std::string queue = choice.device.str();
  auto record = std::make_shared<RunRecord>();
  record->graph = name;
  record->device = queue;
  record->warnings = choice.warnings;
  const uint64_t seed = body.value("seed", uint64_t{0});
  auto shared_prepared = std::make_shared<PreparedGraph>(std::move(prepared));
  const bool record_outputs_requested = body.value("record_outputs", false);
  auto job = [this, record, shared_prepared, seed, queue, respond, name, record_outputs_requested](
                 const CancellationToken& token, const std::string& run_id) {
    RunObserver observer;
    RunSettings settings;
    settings.seed = seed;
    settings.device = queue;
    settings.base_dir = shared_prepared->graph.base_dir;
    settings.cancel = token;
    settings.observer = &observer;
    const auto t0 = std::chrono::steady_clock::now();
    nlohmann::json envelope = run_envelope(run_id, name, queue);
    int http_status = 200;
    nlohmann::json metrics = nlohmann::json::object();
    auto finish = [&](const std::string& status, nlohmann::json error, nlohmann::json outputs) {
      std::vector<std::string> warnings;
      {
        std::lock_guard<std::mutex> lock(observer.mutex);
        warnings = observer.warnings;
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);  // GET /api/runs/{id} reads the record
        record->warnings.insert(record->warnings.end(), warnings.begin(), warnings.end());
        record->error = error;
        record->metrics = metrics;
        record->status = status == "ok" ? "completed" : status == "error" ? "failed" : status;
        envelope["warnings"] = record->warnings;
      }
      envelope["status"] = status;
      envelope["outputs"] = std::move(outputs);
      envelope["error"] = std::move(error);
      envelope["timing"] = {
          {"total_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()}};
    };
    try {
      RunResult result = Executor(registry_).run(*shared_prepared, settings);
      if (record_outputs_requested) record_outputs(run_id, result);
      for (const auto& [id, outputs] : result.outputs)
        if (auto m = outputs.find("metrics"); m != outputs.end())
          if (const auto* j = std::get_if<nlohmann::json>(&m->second)) metrics[id] = *j;
      finish("ok", nullptr, outputs_json(result));
    } catch (const Cancelled&) {
      finish("stopped", {{"code", "stopped"}, {"message", "the run was stopped"}, {"node_id", nullptr}, {"details", nullptr}},
             nullptr);
    } catch (const NodeOOMError& e) {
      http_status = 500;
      finish("error",
             {{"code", "out_of_memory"}, {"message", e.what()}, {"node_id", e.node_id()}, {"details", nullptr}},
             nullptr);
    } catch (const NodeError& e) {
      http_status = 500;
      finish("error",
             {{"code", "execution_error"}, {"message", e.what()}, {"node_id", e.node_id()}, {"details", nullptr}},
             nullptr);
    } catch (const std::exception& e) {
      http_status = 500;
      finish("error", {{"code", "execution_error"}, {"message", e.what()}, {"node_id", nullptr}, {"details", nullptr}},
             nullptr);
    }
    const std::string status = envelope["status"];
    respond(Response::json(http_status, envelope));
    // The queue keeps the run's end state too (GET /api/runs/{id}).
    if (status == "stopped") throw Cancelled();
    if (status == "error") throw std::runtime_error(envelope["error"].value("message", std::string("error")));
  };
  std::lock_guard<std::mutex> lock(mutex_);  // held so the record is in place before the run can look
  records_[queues_->submit(queue, std::move(job))] = record;
  for (auto it = records_.begin(); it != records_.end();)  // the queues forget old finished runs; so do we
    it = queues_->info(it->first) ? std::next(it) : records_.erase(it);
}

namespace {

/// Sends a run's events as CodefyUI's node_status messages.
class SocketObserver : public Observer {
 public:
  explicit SocketObserver(std::function<void(std::string)> send) : send_(std::move(send)) {}
  void on_node_entry(const NodeRef& n) override {
    emit({{"type", "node_status"}, {"node_id", n.id}, {"status", "running"}});
  }
  void on_node_exit(const NodeRef& n, NodeStatus s, const nlohmann::json& detail) override {
    nlohmann::json m = {{"type", "node_status"}, {"node_id", n.id}, {"status", to_string(s)}};
    if (s == NodeStatus::kError) m["error"] = detail.value("error", "");
    else m["output_summary"] = detail;
    emit(m);
  }
  void on_progress(const NodeRef& n, const nlohmann::json& e) override {
    emit({{"type", "node_status"}, {"node_id", n.id}, {"status", "progress"}, {"progress", e}});
  }
  void on_warning(const NodeRef& n, const std::string& message) override {
    emit({{"type", "warning"}, {"node_id", n.id}, {"message", message}});
  }
  void on_print(const NodeRef& n, const std::string& text) override {
    emit({{"type", "node_status"}, {"node_id", n.id}, {"status", "log"}, {"log", text}});
  }
  void emit(const nlohmann::json& m) { send_(m.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)); }

 private:
  std::function<void(std::string)> send_;
};

}  // namespace

std::shared_ptr<Connection> Api::open_connection(std::function<void(std::string)> send) {
  auto c = std::make_shared<Connection>();
  c->send = std::move(send);
  c->cache = std::make_shared<ExecutionCache>(options_.stores.execution_cache);
  std::lock_guard<std::mutex> lock(mutex_);
  connections_.erase(std::remove_if(connections_.begin(), connections_.end(),
                                    [](const std::weak_ptr<Connection>& w) { return w.expired(); }),
                     connections_.end());
  connections_.push_back(c);
  return c;
}

void Api::close_connection(const std::shared_ptr<Connection>& c) {
  std::string run;
  {
    std::lock_guard<std::mutex> lock(c->mutex);
    run = c->run_id;
  }
  if (!run.empty()) queues_->stop(run);  // a closed editor stops its run
  c->cache->clear();
  std::lock_guard<std::mutex> lock(mutex_);
  connections_.erase(std::remove_if(connections_.begin(), connections_.end(),
                                    [&](const std::weak_ptr<Connection>& w) {
                                      auto s = w.lock();
                                      return !s || s == c;
                                    }),
                     connections_.end());
}

std::string Api::check_websocket(const Request& r, int& code) const {
  code = 4003;
  if (!host_allowed(r.header("host"))) return "Host not allowed";
  const std::string origin = r.header("origin");
  if (!origin.empty() && !origin_allowed(origin)) return "Origin not allowed";
  std::string token = r.header("x-codefyui-token");
  if (token.empty()) {
    auto it = r.query.find("token");
    if (it != r.query.end()) token = it->second;
  }
  code = 4401;
  if (token != options_.token) return "Missing or invalid session token";
  code = 0;
  return "";
}

void Api::connection_message(const std::shared_ptr<Connection>& c, const std::string& text) {
  auto send = [c](const nlohmann::json& m) { c->send(m.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)); };
  nlohmann::json msg;
  try {
    msg = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return send({{"type", "error"}, {"error", std::string("malformed JSON: ") + e.what()}});
  }
  const std::string action = msg.is_object() ? msg.value("action", std::string()) : std::string();

  if (action == "clear_cache") {
    c->cache->clear();
    return send({{"type", "cache_cleared"}});
  }
  // Stop, or a new execute replacing the run: exactly one final message per
  // run. A run that already sent its own is left alone; a queued one is
  // dropped and answered here; a running one answers execution_stopped when
  // it unwinds, between batches.
  auto stop_current = [&]() {
    std::lock_guard<std::mutex> lock(c->mutex);
    if (!c->active) return false;
    c->stop_requested = true;
    const auto info = queues_->info(c->run_id);
    queues_->stop(c->run_id);
    if (info && info->state == RunState::kQueued) {
      c->active = false;
      send({{"type", "execution_stopped"}});
    }
    return true;
  };
  if (action == "stop") {
    if (!stop_current()) send({{"type", "execution_stopped"}});
    return;
  }
  if (action != "execute") return send({{"type", "error"}, {"error", "Unknown action: " + action}});
  stop_current();  // a new execute replaces the running one, as in CodefyUI
  PreparedGraph prepared;
  try {
    nlohmann::json g = msg;
    if (!g.contains("name")) g["name"] = msg.value("graph_id", std::string("editor"));
    prepared = prepare(graph::graph_from_json(g, "editor"), registry_);
  } catch (const std::exception& e) {
    return send({{"type", "execution_error"}, {"error", e.what()}});
  }
  std::set<std::string> force;
  if (msg.contains("changed_nodes") && msg["changed_nodes"].is_array())
    for (const auto& n : msg["changed_nodes"])
      if (n.is_string()) force.insert(n.get<std::string>());
  const std::string requested = msg.value("device", std::string("auto"));
  const device::DeviceChoice choice = device::resolve_device(requested, device::DeviceSource{"editor", "", "", "device"});
  const std::string client_run_id = msg.value("run_id", std::string());
  const bool record = msg.value("record_outputs", false);
  auto shared = std::make_shared<PreparedGraph>(std::move(prepared));
  const bool persistent = msg.value("weights_persistent", true);
  std::string graph_id = msg.value("graph_id", std::string());
  if (graph_id.empty()) graph_id = shared->graph.name;
  auto job = [this, c, shared, force, client_run_id, record, persistent, graph_id, warnings = choice.warnings](
                 const CancellationToken& token, const std::string& run_id) {
    SocketObserver observer(c->send);
    nlohmann::json start = {{"type", "execution_start"}, {"run_id", client_run_id.empty() ? run_id : client_run_id}};
    observer.emit(start);
    for (const auto& w : warnings) observer.emit({{"type", "warning"}, {"node_id", nullptr}, {"message", w}});
    RunSettings settings;
    settings.base_dir = options_.data_dir / "graphs";
    settings.cancel = token;
    settings.observer = &observer;
    settings.cache = c->cache.get();
    settings.force_rerun = force;
    if (persistent) {  // CodefyUI's weights_persistent (default on): modules carry over between runs
      settings.state_store = &node_state_;
      settings.state_scope = graph_id;
    }
    // The final message, decided under the connection's lock (see stop_current).
    auto finish = [&](const nlohmann::json& m) {
      std::lock_guard<std::mutex> lock(c->mutex);
      if (c->run_id != run_id || !c->active) return;
      observer.emit(c->stop_requested ? nlohmann::json{{"type", "execution_stopped"}} : m);
      c->active = false;
    };
    try {
      RunResult result = Executor(registry_).run(*shared, settings);
      if (record) record_outputs(client_run_id.empty() ? run_id : client_run_id, result);
      finish({{"type", "execution_complete"}});
    } catch (const Cancelled&) {
      finish({{"type", "execution_stopped"}});
      throw;
    } catch (const std::exception& e) {
      finish({{"type", "execution_error"}, {"error", e.what()}});
      throw;
    }
  };
  std::lock_guard<std::mutex> lock(c->mutex);  // before the job can look at run_id
  c->run_id = queues_->submit(choice.device.str(), std::move(job));
  c->active = true;
  c->stop_requested = false;
}


// ---- Run output store (CodefyUI's /api/execution/outputs) ------------------

void Api::record_outputs(const std::string& run_id, const RunResult& result) {
  RunCapture capture;
  for (const auto& [id, outputs] : result.outputs) capture.nodes[id] = outputs;
  const int64_t bytes = capture_bytes(capture);
  run_outputs_.put(run_id, std::move(capture), bytes);
}

Response Api::outputs_route(const Request& r, const std::vector<std::string>& parts) {
  // api execution outputs {run_id} [{node_id} {port}]
  if (parts.size() != 4 && parts.size() != 6) return Response::error(404, "Not Found");
  const std::string& run_id = parts[3];
  if (parts.size() == 4 && r.method == "DELETE") {
    if (!run_outputs_.erase(run_id)) return Response::error(404, "run '" + run_id + "' not found");
    return Response::json(200, {{"run_id", run_id}, {"deleted", true}});
  }
  if (r.method != "GET") return Response::error(405, "Method Not Allowed");
  const auto capture = run_outputs_.get(run_id);
  if (!capture) return Response::error(404, "run '" + run_id + "' not found");
  if (parts.size() == 4) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& [id, ports] : capture->nodes)
      for (const auto& [port, value] : ports) rows.push_back(output_row(id, port, value));
    return Response::json(200, rows);
  }
  const std::string &node_id = parts[4], &port = parts[5];
  const auto node = capture->nodes.find(node_id);
  const ValueMap::const_iterator value =
      node == capture->nodes.end() ? ValueMap::const_iterator() : node->second.find(port);
  if (node == capture->nodes.end() || value == node->second.end())
    return Response::error(404, "output '" + node_id + "." + port + "' not found in run '" + run_id + "'");
  int64_t max_elements = 4096;
  if (auto m = r.query.find("max_elements"); m != r.query.end()) {
    const auto v = util::parse_int(m->second);
    if (!v || *v < 1 || *v > 1000000)
      return Response::error(422, "max_elements must be a whole number from 1 to 1000000");
    max_elements = *v;
  }
  const auto slice = r.query.find("slice");
  nlohmann::json j = output_values(value->second, slice == r.query.end() ? "" : slice->second, max_elements);
  j["run_id"] = run_id;
  j["node_id"] = node_id;
  j["port"] = port;
  return Response::json(200, j);
}

// ---- Node state store (CodefyUI's /api/execution/state) --------------------

Response Api::state_route(const Request& r, const std::vector<std::string>& parts) {
  if (parts.size() != 4) return Response::error(404, "Not Found");
  const auto in_graph = [](const std::string& graph_id) {
    return [prefix = node_state_key(graph_id, "")](const std::string& k) { return k.rfind(prefix, 0) == 0; };
  };
  if (parts[3] == "reset" && r.method == "POST") {
    const nlohmann::json body = parse_body(r);
    if (!body.is_object() || !body.contains("graph_id") || !body["graph_id"].is_string())
      return Response::error(422, "the body needs \"graph_id\" (a string)");
    const std::string graph_id = body["graph_id"];
    size_t evicted = 0;
    if (body.contains("node_ids") && body["node_ids"].is_array()) {
      for (const auto& id : body["node_ids"])
        if (id.is_string() && node_state_.erase(node_state_key(graph_id, id.get<std::string>()))) ++evicted;
      return Response::json(200, {{"graph_id", graph_id}, {"scope", "nodes"}, {"evicted", evicted}});
    }
    evicted = node_state_.erase_if(in_graph(graph_id));
    return Response::json(200, {{"graph_id", graph_id}, {"scope", "graph"}, {"evicted", evicted}});
  }
  if (parts[3] == "list" && r.method == "GET") {
    const auto graph = r.query.find("graph_id");
    if (graph == r.query.end()) return Response::json(200, {{"total", node_state_.stats().entries}});
    const auto match = in_graph(graph->second);
    const size_t prefix = node_state_key(graph->second, "").size();
    nlohmann::json ids = nlohmann::json::array();
    for (const auto& k : node_state_.keys())
      if (match(k)) ids.push_back(k.substr(prefix));
    return Response::json(200, {{"graph_id", graph->second}, {"count", ids.size()}, {"node_ids", ids}});
  }
  return Response::error(404, "Not Found");
}

// ---- Model files (CodefyUI's /api/models) ----------------------------------

namespace {

const std::vector<std::string> kModelExtensions = {".bin", ".ckpt", ".pt", ".pth", ".safetensors"};

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_model_file(const fs::path& p) {
  const std::string ext = lower(p.extension().string());
  return std::find(kModelExtensions.begin(), kModelExtensions.end(), ext) != kModelExtensions.end();
}

bool has_control_character(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

/// `rel` resolved under `base`; nullopt when it would leave it (or names it).
std::optional<fs::path> inside(const fs::path& base, const std::string& rel) {
  if (rel.empty() || has_control_character(rel)) return std::nullopt;
  const fs::path root = fs::weakly_canonical(base);
  const fs::path p = fs::weakly_canonical(root / rel);
  const auto [r, q] = std::mismatch(root.begin(), root.end(), p.begin(), p.end());
  if (r != root.end() || q == p.end()) return std::nullopt;
  return p;
}

/// Why an uploaded file's name cannot be stored ("" when it can): CodefyUI's rules.
std::string upload_name_problem(const std::string& name) {
  if (has_control_character(name)) return "the file name contains a control character";
  if (name.find_first_of("<>:\"\\|?*") != std::string::npos)
    return "the file name contains one of < > : \" \\ | ? * -- rename the file";
  if (name.size() > 255) return "the file name is longer than 255 bytes -- rename the file";
  if (name.find_first_not_of('.') == std::string::npos) return "the file name is only dots";
  static const std::vector<std::string> reserved = {"con", "prn", "aux", "nul"};
  const std::string stem = lower(name.substr(0, name.find('.')));
  const bool numbered = stem.size() == 4 && (stem.rfind("com", 0) == 0 || stem.rfind("lpt", 0) == 0) &&
                        stem[3] >= '1' && stem[3] <= '9';
  if (numbered || std::find(reserved.begin(), reserved.end(), stem) != reserved.end())
    return "the file name is a Windows device name (" + stem + ") -- rename the file";
  return "";
}

std::string param_value(const std::string& header, const std::string& key) {
  // `key="value"` or `key=value` among `;`-separated parameters.
  std::stringstream in(header);
  std::string item;
  while (std::getline(in, item, ';')) {
    const size_t a = item.find_first_not_of(" \t");
    if (a == std::string::npos) continue;
    item = item.substr(a);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || lower(item.substr(0, eq)) != key) continue;
    std::string v = item.substr(eq + 1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.pop_back();
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    return v;
  }
  return "";
}

}  // namespace

namespace {

/// Random access to a request body: in memory, or spooled to a file and read
/// in pieces (a 500 MB upload never sits in the server's memory).
class BodySource {
 public:
  virtual ~BodySource() = default;
  virtual size_t size() const = 0;
  /// Up to `n` bytes from `pos`.
  virtual std::string read(size_t pos, size_t n) const = 0;
  /// Where `needle` first starts at or after `from`; npos when nowhere.
  virtual size_t find(const std::string& needle, size_t from) const = 0;
  bool starts_with_at(size_t pos, const std::string& s) const { return read(pos, s.size()) == s; }
};

class MemorySource : public BodySource {
 public:
  explicit MemorySource(std::string_view body) : body_(body) {}
  size_t size() const override { return body_.size(); }
  std::string read(size_t pos, size_t n) const override {
    return pos >= body_.size() ? std::string() : std::string(body_.substr(pos, n));
  }
  size_t find(const std::string& needle, size_t from) const override { return body_.find(needle, from); }

 private:
  std::string_view body_;
};

class FileSource : public BodySource {
 public:
  FileSource(const fs::path& p, size_t chunk) : chunk_(std::max<size_t>(chunk, 1)) {
    fd_ = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd_ < 0 || ::fstat(fd_, &st) != 0) throw std::runtime_error("cannot read the uploaded body");
    size_ = static_cast<size_t>(st.st_size);
  }
  ~FileSource() override { ::close(fd_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;
  size_t size() const override { return size_; }
  std::string read(size_t pos, size_t n) const override {
    if (pos >= size_) return std::string();
    std::string out(std::min(n, size_ - pos), '\0');
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t got = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(pos + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) throw std::runtime_error("cannot read the uploaded body");
      done += static_cast<size_t>(got);
    }
    return out;
  }
  size_t find(const std::string& needle, size_t from) const override {
    // Windows of chunk + needle - 1 bytes, chunk apart: a match starting in a
    // window's first `chunk` bytes lies wholly inside it.
    for (size_t pos = from; pos < size_; pos += chunk_) {
      const std::string window = read(pos, chunk_ + needle.size() - 1);
      const size_t i = window.find(needle);
      if (i != std::string::npos) return pos + i;
    }
    return std::string::npos;
  }

 private:
  int fd_ = -1;
  size_t size_ = 0;
  size_t chunk_;
};

std::vector<FormPart> parse_form(const std::string& content_type, const BodySource& body) {
  if (lower(content_type).rfind("multipart/form-data", 0) != 0)
    throw std::invalid_argument("expected a multipart/form-data body with the file in a field named \"file\"");
  const std::string boundary = param_value(content_type, "boundary");
  if (boundary.empty()) throw std::invalid_argument("the multipart Content-Type has no boundary");
  const std::string delim = "--" + boundary;
  const std::string delim_line = "\r\n" + delim;
  const auto bad = [] { return std::invalid_argument("malformed multipart body"); };
  size_t pos = body.find(delim, 0);
  if (pos == std::string::npos) throw bad();
  pos += delim.size();
  std::vector<FormPart> parts;
  while (!body.starts_with_at(pos, "--")) {
    if (!body.starts_with_at(pos, "\r\n")) throw bad();
    const size_t header_end = body.find("\r\n\r\n", pos + 2);
    if (header_end == std::string::npos || header_end - pos > 64 * 1024) throw bad();
    // The part ends at CRLF--boundary followed by CRLF or "--" (a longer line
    // that merely starts with the boundary is data).
    size_t next = header_end + 4;
    while (true) {
      next = body.find(delim_line, next);
      if (next == std::string::npos) throw bad();
      const size_t after = next + delim_line.size();
      if (body.starts_with_at(after, "\r\n") || body.starts_with_at(after, "--")) break;
      ++next;
    }
    FormPart part;
    std::stringstream headers(body.read(pos + 2, header_end - pos - 2));
    std::string line;
    while (std::getline(headers, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const size_t colon = line.find(':');
      if (colon == std::string::npos || lower(line.substr(0, colon)) != "content-disposition") continue;
      part.name = param_value(line.substr(colon + 1), "name");
      part.filename = param_value(line.substr(colon + 1), "filename");
    }
    part.offset = header_end + 4;
    part.size = next - part.offset;
    parts.push_back(std::move(part));
    pos = next + delim_line.size();
  }
  return parts;
}

}  // namespace

std::vector<FormPart> parse_multipart(const std::string& content_type, std::string_view body) {
  return parse_form(content_type, MemorySource(body));
}

std::vector<FormPart> parse_multipart_file(const std::string& content_type, const fs::path& body, size_t chunk) {
  return parse_form(content_type, FileSource(body, chunk));
}

Response Api::models_route(const Request& r, const std::vector<std::string>& parts) {
  const fs::path dir = models_dir();
  std::string rest;  // what follows the action, '/'-joined (download allows folders)
  for (size_t i = 3; i < parts.size(); ++i) rest += (rest.empty() ? "" : "/") + parts[i];

  if (parts.size() == 2 && r.method == "GET") {
    std::vector<std::pair<std::string, uintmax_t>> files;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && is_model_file(e.path())) files.emplace_back(e.path().filename().string(), e.file_size());
    std::sort(files.begin(), files.end());
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [name, size] : files) list.push_back({{"filename", name}, {"size", size}});
    return Response::json(200, list);
  }
  if (parts.size() == 3 && parts[2] == "upload" && r.method == "POST") {
    const bool spooled = !r.body_file.empty();  // uploads come spooled to disk from the server
    const auto form = spooled ? parse_multipart_file(r.header("content-type"), r.body_file)
                              : parse_multipart(r.header("content-type"), r.body);
    const auto file = std::find_if(form.begin(), form.end(), [](const FormPart& p) { return p.name == "file"; });
    if (file == form.end()) return Response::error(422, "the form needs a field named \"file\"");
    const std::string name = file->filename.substr(file->filename.find_last_of('/') + 1);  // npos + 1 == 0
    if (name.empty()) return Response::error(400, "No filename provided");
    if (const std::string problem = upload_name_problem(name); !problem.empty())
      return Response::error(400, "Invalid filename: " + problem);
    if (!is_model_file(name)) {
      std::string allowed;
      for (const auto& e : kModelExtensions) allowed += (allowed.empty() ? "" : ", ") + e;
      return Response::error(400, "Unsupported file type: " + lower(fs::path(name).extension().string()) +
                                      ". Allowed: " + allowed);
    }
    if (static_cast<int64_t>(file->size) > options_.max_upload_bytes) return Response::error(413, "File too large");
    const auto target = inside(dir, name);
    if (!target) return Response::error(400, "Invalid filename");
    // Written whole or not at all: a half-written model never shows under its name.
    if (spooled) util::copy_file_range_atomic(*target, r.body_file, file->offset, file->size);
    else util::write_file_atomic(*target, std::string_view(r.body).substr(file->offset, file->size));
    return Response::json(200, {{"filename", name}, {"size", file->size}});
  }
  const bool download = parts.size() >= 4 && parts[2] == "download" && r.method == "GET";
  const bool remove = parts.size() == 3 && r.method == "DELETE";
  if (!download && !remove) return Response::error(404, "Not Found");
  const std::string name = download ? rest : parts[2];
  const auto path = inside(dir, name);
  if (!path) return Response::error(400, "Invalid filename");
  if (!fs::exists(*path)) return Response::error(404, "File not found: " + name);
  if (!fs::is_regular_file(*path)) return Response::error(400, "Not a file");
  if (!is_model_file(*path)) return Response::error(400, "Not a model file");
  if (remove) {
    fs::remove(*path);
    return Response::json(200, {{"message", "Deleted " + name}});
  }
  Response res;
  res.file = *path;
  res.content_type = "application/octet-stream";
  res.headers["Content-Disposition"] = "attachment; filename=\"" + path->filename().string() + "\"";
  return res;
}

}  // namespace codefy::server

