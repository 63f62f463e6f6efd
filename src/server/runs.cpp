// start_run, headless runs (CodefyUI's run envelope) and the /api/runs routes.
#include "server/runs.h"

#include "device/catalogue.h"
#include "device/runtime.h"
#include "distributed/hosted_world.h"
#include "engine/errors.h"
#include "engine/graph_contract.h"
#include "engine/run_recorder.h"
#include "engine/value.h"
#include "graph/graph.h"
#include "graph/validate.h"
#include "server/graph_routes.h"
#include "server/history_routes.h"
#include "server/inspector.h"
#include "util/file_access.h"
#include "util/list.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <iterator>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>

namespace codefy::server {

namespace fs = std::filesystem;

/// What the server keeps of a headless run (GET /api/runs/{id}).
struct Runs::Record {
  std::string graph;
  std::string device;
  nlohmann::json metrics = nlohmann::json::object();
  std::vector<std::string> warnings;
  nlohmann::json error;  ///< null, or {code, message, node_id, details}
  std::string status;    ///< final state once the run has answered ("" before)
  /// Set when the graph declares GraphInput / GraphOutput nodes: the run
  /// answers with the declared outputs by name instead of every node's.
  std::optional<Contract> contract;
};

namespace {

/// CodefyUI's run envelope, before the run has ended.
nlohmann::json run_envelope(const std::string& run_id, const std::string& graph, const std::string& device) {
  return {{"status", "error"},  {"run_id", run_id},   {"graph", graph},
          {"app", nullptr},     {"version", nullptr}, {"device", device},
          {"outputs", nullptr}, {"error", nullptr},   {"timing", {{"total_s", 0.0}}}};
}

/// A headless run refused before it was queued, in the envelope's shape.
Response envelope_error(int status, const std::string& graph, const std::string& code, const std::string& message,
                        nlohmann::json details = nullptr) {
  nlohmann::json e = run_envelope("", graph, "cpu");
  e["error"] = {{"code", code}, {"message", message}, {"node_id", nullptr}, {"details", std::move(details)}};
  return Response::json(status, e);
}

/// Each node's outputs, summarized; metrics dicts as they are.
nlohmann::json outputs_json(const RunResult& result) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [id, outputs] : result.outputs) {
    nlohmann::json node = nlohmann::json::object();
    for (const auto& [port, value] : outputs) {
      if (const auto* m = std::get_if<nlohmann::json>(&value))
        node[port] = *m;
      else
        node[port] = summarize(value);
    }
    j[id] = node;
  }
  return j;
}

}  // namespace

/// A headless run: collects its node warnings, then keeps how it ended in
/// its record and answers the request with the run envelope.
class Runs::HeadlessRun : public RunListener {
 public:
  HeadlessRun(Runs& runs, std::shared_ptr<Record> record, Respond respond)
      : runs_(runs), record_(std::move(record)), respond_(std::move(respond)) {}

  void on_warning(const NodeRef& n, const std::string& message) override {
    std::lock_guard<std::mutex> lock(mutex_);
    warnings_.push_back(n.id + ": " + message);
  }
  void on_run_start(const std::string&) override { t0_ = std::chrono::steady_clock::now(); }

  void on_run_end(const std::string& run_id, const RunOutcome& outcome) override {
    // What may throw first, so a throw leaves the record untouched.
    nlohmann::json metrics = nlohmann::json::object();
    nlohmann::json outputs = nullptr;
    if (outcome.result) {
      for (const auto& [id, values] : outcome.result->outputs)
        if (auto m = values.find("metrics"); m != values.end())
          if (const auto* j = std::get_if<nlohmann::json>(&m->second)) metrics[id] = *j;
      outputs =
          record_->contract ? collect_outputs(*record_->contract, *outcome.result) : outputs_json(*outcome.result);
    }
    nlohmann::json envelope = run_envelope(run_id, record_->graph, record_->device);
    std::vector<std::string> warnings;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      warnings = warnings_;
    }
    {
      std::lock_guard<std::mutex> lock(runs_.mutex_);  // GET /api/runs/{id} reads the record
      record_->warnings.insert(record_->warnings.end(), warnings.begin(), warnings.end());
      record_->error = outcome.error ? outcome.error->envelope() : nlohmann::json();
      record_->metrics = metrics;
      const std::string status = outcome.status();
      record_->status = status == "ok" ? "completed" : status == "error" ? "failed" : status;
      envelope["warnings"] = record_->warnings;
    }
    envelope["status"] = outcome.status();
    envelope["outputs"] = std::move(outputs);
    envelope["error"] = outcome.error ? outcome.error->envelope() : nlohmann::json();
    envelope["timing"] = {{"total_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count()}};
    respond_(Response::json(outcome.status() == "error" ? 500 : 200, envelope));
  }

 private:
  Runs& runs_;
  std::shared_ptr<Record> record_;
  Respond respond_;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
  std::vector<std::string> warnings_;  ///< "node_id: message", as they came
};

Runs::Runs(const std::vector<WorkerSpec>& workers, const NodeRegistry& registry, Inspector& inspector,
           fs::path graphs_dir, size_t max_queued, RunFiles files, RunnerSettings runner)
    : registry_(registry),
      inspector_(inspector),
      graphs_dir_(std::move(graphs_dir)),
      files_(std::move(files)),
      runner_(std::move(runner)),
      queues_(workers, max_queued) {}

Runs::~Runs() { shutdown(); }

void Runs::shutdown() { queues_.close(); }

namespace {

/// Whether a node of the graph runs on every rank of a data-parallel world
/// (its definition says when: TrainingLoop's strategy ddp).
bool wants_ranks(const NodeRegistry& registry, const graph::Graph& g) {
  return std::any_of(g.nodes.begin(), g.nodes.end(), [&registry](const graph::NodeSpec& n) {
    const graph::NodeDef* def = registry.find(n.type);
    return def && def->wants_ranks(n.params);
  });
}

/// The ranks of a ddp run on a worker with several: rank 0 is the run in
/// this process; the others run the same graph with `codefy run`.
struct HostedRanks {
  distributed::WorldDir scratch;
  std::unique_ptr<distributed::HostedWorld> world;

  /// Starts ranks 1.. on `devices[1..]` and joins as rank 0, setting up
  /// `settings` for it (its card, the world, no execution cache).
  HostedRanks(const RunnerSettings& runner, const PreparedGraph& graph, const std::vector<std::string>& devices,
              RunSettings& settings) {
    const fs::path graph_file = scratch.path() / "graph.json", files = scratch.path() / "files.json";
    graph::save_graph_file(graph.graph, graph_file);
    util::write_run_files(files, {settings.files, settings.output_dir});
    const bool cards = devices.front() != "cpu";
    const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
    const int threads = std::max(1, static_cast<int>(cpus / devices.size()));
    distributed::HostedWorldOptions o;
    o.program = runner.program;
    o.log_dir = scratch.path();
    o.timeout = runner.dist_timeout;
    o.group.backend = distributed::default_backend(cards ? "cuda" : "cpu");
    for (size_t r = 1; r < devices.size(); ++r) {
      std::vector<std::string> argv = {"codefy",
                                       "run",
                                       graph_file.string(),
                                       "--json",
                                       "--seed",
                                       std::to_string(settings.seed),
                                       "--threads",
                                       std::to_string(threads),
                                       "--base-dir",
                                       settings.base_dir.string(),
                                       "--run-files",
                                       files.string(),
                                       "--out",
                                       (scratch.path() / "out").string()};
      if (cards) argv.insert(argv.end(), {"--device", devices[r]});
      o.helper_argv.push_back(std::move(argv));
    }
    if (cards) settings.device = devices.front();
    world = std::make_unique<distributed::HostedWorld>(o);
    settings.data_parallel = world->group();
    // Every rank runs every node: a node rank 0 alone took from the cache
    // would leave the others waiting in its collectives.
    settings.cache = nullptr;
  }
};

/// How a run that was stopped ended, for its listener.
RunOutcome stopped_outcome() {
  RunError stopped;
  stopped.kind = RunErrorKind::kStopped;
  stopped.message = "the run was stopped";
  return RunOutcome{stopped, nullptr};
}
}  // namespace

std::string Runs::start_run(RunRequest request, std::shared_ptr<RunListener> listener) {
  const std::string device = request.device;
  // A ddp graph on a worker with several ranks runs them all.
  std::vector<std::string> rank_devices;
  if (const auto worker = queues_.worker_for(device); worker && wants_ranks(registry_, request.graph->graph))
    rank_devices = worker->rank_devices();
  if (rank_devices.size() < 2) rank_devices.clear();
  // Dropped while queued: the listener hears "stopped", so its client is answered.
  RunQueues::Dropped dropped = [listener](const std::string& run_id) {
    try {
      listener->on_run_end(run_id, stopped_outcome());
    } catch (const std::exception&) {  // a listener that cannot answer has no one left to tell
    }
  };
  auto job = [this, request = std::move(request), listener = std::move(listener),
              rank_devices = std::move(rank_devices)](const CancellationToken& token, const std::string& run_id) {
    listener->on_run_start(run_id);
    // The I/O threads answer first while this run computes.
    device::lower_compute_priority(runner_.run_priority.for_run(request.device == "cpu"));
    RunSettings settings;
    settings.seed = request.seed;
    settings.verbose = request.verbose;
    if (request.pin_nodes_to_device) settings.device = request.device;
    settings.base_dir = request.base_dir;
    settings.files = files_.access;
    if (!files_.examples_dir.empty() && !files_.outputs_dir.empty()) {
      const fs::path rel = fs::absolute(request.base_dir)
                               .lexically_normal()
                               .lexically_relative(fs::absolute(files_.examples_dir).lexically_normal());
      if (!rel.empty() && *rel.begin() != "..") settings.output_dir = (files_.outputs_dir / rel).lexically_normal();
    }
    settings.cancel = token;
    settings.observer = listener.get();
    // Recorded in the run history under the queue's run id, in front of the listener.
    std::unique_ptr<RunRecorder> recorder;
    if (files_.history) {
      store::RunRecord record = run_record(*request.graph, registry_, request.graph->graph.raw, request.source,
                                           request.seed, request.pin_nodes_to_device ? request.device : "",
                                           rank_devices.empty() ? 1 : static_cast<int>(rank_devices.size()));
      record.id = run_id;
      record.threads = at::get_num_threads();
      recorder = std::make_unique<RunRecorder>(
          files_.history, std::move(record), listener.get(),
          [](const std::string& m) { std::fprintf(stderr, "codefy serve: %s\n", m.c_str()); });
      if (recorder->recording()) settings.observer = recorder.get();
    }
    settings.cache = request.cache;
    settings.force_rerun = request.force_rerun;
    if (request.keep_state) {  // modules carry over between runs of this scope
      settings.state_store = &inspector_.node_state();
      settings.state_scope = request.state_scope;
    }
    RunOutcome outcome;
    std::optional<RunResult> result;
    std::exception_ptr failure;
    std::unique_ptr<HostedRanks> ranks;
    try {
      if (!rank_devices.empty()) ranks = std::make_unique<HostedRanks>(runner_, *request.graph, rank_devices, settings);
      result = Executor(registry_).run(*request.graph, settings);
      if (ranks) ranks->world->finish();
      if (request.record_outputs)
        inspector_.record_outputs(request.outputs_id.empty() ? run_id : request.outputs_id, *result);
      outcome = RunOutcome{std::nullopt, &*result};
    } catch (...) {
      outcome.error = RunError::from_current_exception();
      failure = std::current_exception();
      if (ranks && outcome.error->kind == RunErrorKind::kStopped) {
        ranks->world->end_after_failure();  // they stop at the same update
      } else if (ranks) {
        // A helper rank that failed on its own (out of memory, a node's
        // error) is the usual cause of rank 0's failure: the run reports
        // that rank's error, as the rank reported it.
        for (const distributed::HelperFailure& f : ranks->world->end_after_failure()) {
          std::optional<RunError> said;
          try {
            said = RunError::from_json(f.report);
          } catch (const std::invalid_argument&) {  // it wrote no report (killed): rank 0's error stands
          }
          if (!said || (said->kind != RunErrorKind::kOutOfMemory && said->kind != RunErrorKind::kNodeError)) continue;
          said->rank = f.rank;
          said->message = "rank " + std::to_string(f.rank) + ": " + said->message +
                          " (rank 0 then: " + outcome.error->message + ")";
          outcome.error = std::move(said);
          break;
        }
      }
    }
    ranks.reset();
    if (recorder) {
      const nlohmann::json results =
          result && !outcome.error ? results_json(*request.graph, *result, registry_) : nlohmann::json::object();
      const std::string status = outcome.status() == "ok"        ? "completed"
                                 : outcome.status() == "stopped" ? "stopped"
                                                                 : "failed";
      recorder->finish(status, outcome.error, results,
                       result ? peak_memory_json(*result, results) : nlohmann::json::object(), nlohmann::json::array());
    }
    try {
      listener->on_run_end(run_id, outcome);
    } catch (const std::exception&) {
      if (failure) throw;
      // The listener could not take the result (summarizing an output
      // failed): it hears of a failed run instead, so its client gets an answer.
      outcome.error = RunError::from_current_exception();
      outcome.result = nullptr;
      failure = std::current_exception();
      listener->on_run_end(run_id, outcome);
    }
    if (failure) std::rethrow_exception(failure);  // the queue records the run as stopped or failed
  };
  return queues_.submit(device, std::move(job), std::move(dropped));
}

void Runs::add_routes(RouteTable& table) {
  table.add("POST", "/api/graph/run/{name}", [this](const Request& r, const PathParams& p, const Respond& respond) {
    run_graph(p.at("name"), r, respond);
  });
  table.add("POST", "/api/graph/plan",
            [this](const Request& r, const PathParams&, const Respond& respond) { plan(r, respond); });
  table.add("GET", "/api/graph/contract/{name}", [this](const Request&, const PathParams& p) {
    const std::string& name = p.at("name");
    const fs::path file = graphs_dir_ / (sanitize_name(name) + ".json");
    if (sanitize_name(name) != name || !fs::exists(file)) return Response::error(404, "Graph '" + name + "' not found");
    try {
      nlohmann::json j = derive_contract(graph::load_graph_file(file)).to_json();
      j["graph"] = name;
      return Response::json(200, j);
    } catch (const graph::GraphFormatError& e) {
      return Response::error(500, e.what());
    }
  });
  table.add("GET", "/api/runs", [this](const Request& r, const PathParams&) { return runs_list(r); });
  // Before /api/runs/{run_id}, which would take "compare" for a run id.
  table.add("GET", "/api/runs/compare", [this](const Request& r, const PathParams&) { return run_compare(r); });
  table.add("GET", "/api/runs/{run_id}/series",
            [this](const Request& r, const PathParams& p) { return run_series(p.at("run_id"), r); });
  table.add("DELETE", "/api/runs/{run_id}",
            [this](const Request&, const PathParams& p) { return run_delete(p.at("run_id")); });
  table.add("GET", "/api/runs/{run_id}",
            [this](const Request&, const PathParams& p) { return run_info(p.at("run_id")); });
  table.add("POST", "/api/runs/{run_id}/stop",
            [this](const Request&, const PathParams& p) { return run_stop(p.at("run_id")); });
}

void Runs::run_graph(const std::string& name, const Request& r, const Respond& respond) {
  const nlohmann::json body = r.json_body();
  const fs::path file = graphs_dir_ / (sanitize_name(name) + ".json");
  if (sanitize_name(name) != name || !fs::exists(file))
    return respond(envelope_error(404, name, "graph_not_found", "Graph '" + name + "' not found"));
  if (!body.is_object())
    return respond(envelope_error(422, name, "invalid_input", "invalid request body",
                                  {{{"field", "body"}, {"reason", "body must be a JSON object"}}}));
  graph::Graph g;
  try {
    g = graph::load_graph_file(file);
  } catch (const graph::GraphFormatError& e) {
    return respond(envelope_error(500, name, "graph_unreadable", e.what()));
  }
  // A graph that declares inputs or outputs is called as a function: the
  // caller's inputs go into its GraphInput nodes, the answer carries its
  // GraphOutput values by name.
  std::optional<Contract> contract;
  if (std::any_of(g.nodes.begin(), g.nodes.end(),
                  [](const graph::NodeSpec& n) { return n.type == "GraphInput" || n.type == "GraphOutput"; })) {
    contract = derive_contract(g);
    if (!contract->problems.empty())
      return respond(envelope_error(409, name, "invalid_contract",
                                    "the graph's declared inputs and outputs are invalid", contract->problems));
    const nlohmann::json problems = inject_inputs(g, *contract, body.value("inputs", nlohmann::json()));
    if (!problems.empty()) return respond(envelope_error(422, name, "invalid_input", "invalid inputs", problems));
  } else if (body.contains("inputs") && !body["inputs"].empty()) {
    return respond(envelope_error(422, name, "invalid_input", "invalid inputs",
                                  {{{"field", "inputs"}, {"reason", "the graph declares no GraphInput nodes"}}}));
  }
  RunRequest run;
  try {
    run.graph = std::make_shared<PreparedGraph>(prepare(g, registry_));
  } catch (const graph::ValidationError& e) {
    return respond(
        envelope_error(409, name, "invalid_graph", "graph failed validation", graph::issues_json(e.issues())));
  }
  std::string device;
  try {
    device = util::string_field(body, "device").value_or("auto");
    run.seed = util::uint_field(body, "seed").value_or(0);
    run.record_outputs = util::bool_field(body, "record_outputs").value_or(false);
    run.verbose = util::bool_field(body, "verbose").value_or(false);
  } catch (const util::JsonFieldError& e) {
    return respond(envelope_error(422, name, "invalid_input", "invalid request body",
                                  {{{"field", e.field()}, {"reason", e.what()}}}));
  }
  const device::DeviceChoice choice = device::resolve_device(device, device::DeviceSource{name, "", "", "device"});
  run.device = choice.device.str();
  run.pin_nodes_to_device = true;
  run.base_dir = run.graph->graph.base_dir;
  run.source = "api";
  auto record = std::make_shared<Record>();
  record->graph = name;
  record->device = run.device;
  record->warnings = choice.warnings;
  record->contract = std::move(contract);
  auto listener = std::make_shared<HeadlessRun>(*this, record, respond);
  std::string run_id;
  {
    std::lock_guard<std::mutex> lock(mutex_);  // held so the record is in place before anyone can ask for it
    try {
      run_id = start_run(std::move(run), std::move(listener));
    } catch (const QueueFull& e) {
      return respond(envelope_error(503, name, "queue_full", e.what(),
                                    {{"queue", e.queue()}, {"queued", e.waiting()}, {"max_queued", e.limit()}}));
    }
    records_[run_id] = record;
    for (auto it = records_.begin(); it != records_.end();)  // the queues forget old finished runs; so do we
      it = queues_.info(it->first) ? std::next(it) : records_.erase(it);
  }
  // A client that leaves while its run waits takes the run with it; one that
  // leaves a running run lets it finish (its outcome stays in /api/runs/{id}).
  if (r.on_client_gone) r.on_client_gone([this, run_id] { queues_.drop_queued(run_id); });
}

Response Runs::run_info(const std::string& run_id) const {
  const auto info = queues_.info(run_id);
  if (!info) {  // one the queue forgot (an earlier server, or long ago): the run history's record
    std::optional<store::RunRecord> r;
    if (files_.history) try {
        r = files_.history->get(run_id);
      } catch (const std::exception&) {
      }
    if (!r) return Response::error(404, "Run '" + run_id + "' not found");
    return Response::json(200, history_json(*r, true));
  }
  nlohmann::json j = {{"run_id", info->id},
                      {"device", info->device},
                      {"worker", info->queue},
                      {"status", to_string(info->state)},
                      {"queue_position", info->position},
                      {"seconds", info->seconds}};
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto rec = records_.find(info->id); rec != records_.end()) {
    j["graph"] = rec->second->graph;
    j["metrics"] = rec->second->metrics;
    j["warnings"] = rec->second->warnings;
    j["error"] = rec->second->error;
    if (!rec->second->status.empty()) j["status"] = rec->second->status;  // answered; the queue may lag a moment
  }
  return Response::json(200, j);
}

Response Runs::run_stop(const std::string& run_id) {
  if (!queues_.info(run_id)) return Response::error(404, "Run '" + run_id + "' not found");
  const bool stopped = queues_.stop(run_id);
  return Response::json(200, {{"run_id", run_id}, {"stopping", stopped}});
}

}  // namespace codefy::server
