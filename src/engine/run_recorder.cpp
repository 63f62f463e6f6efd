#include "engine/run_recorder.h"

#include "train/progress.h"

#include "util/random.h"

#include <cstdio>
#include <set>

namespace codefy {

namespace {

using Clock = std::chrono::steady_clock;

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

/// At most one transaction this often while training.
constexpr std::chrono::milliseconds kFlushEvery{500};

}  // namespace

std::string graph_hash(const nlohmann::json& graph) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(util::fnv1a(graph.dump())));
  return hex;
}

store::RunRecord run_record(const PreparedGraph& prepared, const graph::NodeCatalog& catalog,
                            const nlohmann::json& snapshot, const std::string& source, uint64_t seed,
                            const std::string& device_override, int world_size) {
  store::RunRecord r;
  r.id = store::new_run_id();
  r.graph_name = prepared.graph.name;
  r.graph = snapshot;
  r.seed = seed;
  r.source = source;
  r.world_size = world_size;
  std::set<std::string> devices;
  for (const auto& n : prepared.graph.nodes) {
    const graph::NodeDef* def = catalog.find(n.type);
    if (!def || def->memory_hints.precision_param.empty()) continue;
    const auto p = n.params.find(def->memory_hints.precision_param);
    r.precision_requested = p != n.params.end() && p->is_string() ? p->get<std::string>() : std::string("fp32");
    r.precision_used = r.precision_requested;
    const auto d = n.params.find("device");
    devices.insert(!device_override.empty()                ? device_override
                   : d != n.params.end() && d->is_string() ? d->get<std::string>()
                                                           : std::string("auto"));
  }
  r.devices = devices;
  return r;
}

nlohmann::json results_json(const PreparedGraph& prepared, const RunResult& result, const graph::NodeCatalog& catalog) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [id, outputs] : result.outputs) {
    const auto* spec = prepared.graph.node(id);
    const graph::NodeDef* def = spec ? catalog.find(spec->type) : nullptr;
    if (!def || !def->reports_results) continue;
    if (auto m = outputs.find("metrics"); m != outputs.end()) {
      if (const auto* metrics = std::get_if<nlohmann::json>(&m->second)) j[id] = *metrics;
      continue;
    }
    nlohmann::json e;
    for (const auto& [port, v] : outputs)
      if (const auto* d = std::get_if<double>(&v)) e[port] = *d;
    j[id] = e;
  }
  return j;
}

nlohmann::json peak_memory_json(const RunResult& result, const nlohmann::json& results) {
  nlohmann::json peak = nlohmann::json::object();
  auto raise = [&](const std::string& device, int64_t bytes) {
    if (!peak.contains(device) || peak[device].get<int64_t>() < bytes) peak[device] = bytes;
  };
  for (const auto& [id, bytes] : result.peak_cpu_bytes) raise("cpu", bytes);
  for (const auto& [id, metrics] : results.items())
    if (metrics.is_object() && metrics.contains("peak_memory_bytes") && metrics["peak_memory_bytes"].is_object())
      for (const auto& [device, bytes] : metrics["peak_memory_bytes"].items())
        if (bytes.is_number_integer()) raise(device, bytes.get<int64_t>());
  return peak;
}

RunRecorder::RunRecorder(std::shared_ptr<store::RunStore> store, store::RunRecord run, Observer* next,
                         std::function<void(const std::string&)> warn)
    : store_(std::move(store)), run_(std::move(run)), next_(next), warn_(std::move(warn)) {
  if (!warn_) warn_ = [](const std::string& m) { std::fprintf(stderr, "warning: %s\n", m.c_str()); };
  started_ = last_flush_ = Clock::now();
  if (run_.graph_hash.empty()) run_.graph_hash = graph_hash(run_.graph);
  if (run_.started_at == 0) run_.started_at = unix_now();
  guarded([&] { store_->begin_run(run_); });
}

RunRecorder::~RunRecorder() {
  // Ended without finish(): an exception nobody reported. The series so far stay.
  if (!finished_) flush();
}

void RunRecorder::write_tensorboard(const std::filesystem::path& dir) {
  try {
    tensorboard_ = std::make_unique<store::TensorBoardRun>(dir / run_.id, run_);
  } catch (const std::exception& e) {
    warn_(std::string("this run is not being written for TensorBoard: ") + e.what());
  }
}

std::filesystem::path RunRecorder::tensorboard_file() const {
  return tensorboard_ ? tensorboard_->path() : std::filesystem::path();
}

void RunRecorder::tensorboard_guarded(const std::function<void()>& write) {
  if (!tensorboard_) return;
  try {
    write();
  } catch (const std::exception& e) {
    tensorboard_.reset();
    warn_(std::string("this run is no longer being written for TensorBoard: ") + e.what());
  }
}

void RunRecorder::guarded(const std::function<void()>& write) {
  if (!store_) return;
  try {
    write();
  } catch (const std::exception& e) {
    store_.reset();
    pending_.clear();
    warn_(std::string("this run is not being recorded in the run history: ") + e.what());
  }
}

void RunRecorder::flush() {
  if (pending_.empty()) return;
  guarded([&] { store_->append_series(run_.id, pending_); });
  tensorboard_guarded([&] { tensorboard_->add(pending_); });
  pending_.clear();
  last_flush_ = Clock::now();
}

void RunRecorder::on_node_entry(const NodeRef& n) {
  entered_[n.id] = Clock::now();
  if (next_) next_->on_node_entry(n);
}

void RunRecorder::on_node_exit(const NodeRef& n, NodeStatus s, const nlohmann::json& detail) {
  if (auto it = entered_.find(n.id); it != entered_.end())
    timings_[n.id] = std::chrono::duration<double>(Clock::now() - it->second).count();
  if (next_) next_->on_node_exit(n, s, detail);
}

void RunRecorder::on_progress(const NodeRef& n, const nlohmann::json& e) {
  if (next_) next_->on_progress(n, e);
  if (!active()) return;
  const auto began = Clock::now();
  struct Busy {
    std::chrono::duration<double>& total;
    Clock::time_point began;
    ~Busy() { total += Clock::now() - began; }
  } busy{busy_, began};
  const double t = unix_now();
  auto add = [&](const char* name, const std::optional<double>& value, int64_t step) {
    if (value) pending_.push_back({name, step, *value, t});
  };
  if (const auto config = train::ConfigProgress::from_json(e)) {
    run_.config = config->config;
    guarded([&] { store_->set_config(run_.id, run_.config); });
  } else if (const auto batch = train::BatchProgress::from_json(e)) {  // sampled: a few a second
    const int64_t step = batch->step.value_or(0);
    add("loss", batch->loss, step);
    add("lr", batch->lr, step);
    add("grad_norm", batch->grad_norm, step);
    add("samples_per_s", batch->samples_per_s, step);
    if (Clock::now() - last_flush_ >= kFlushEvery) flush();
  } else if (const auto epoch = train::EpochProgress::from_json(e)) {
    add("epoch_loss", epoch->loss, epoch->epoch);
    add("val_loss", epoch->val_loss, epoch->epoch);
    add("val_accuracy", epoch->val_accuracy, epoch->epoch);
    add("epoch_seconds", epoch->seconds, epoch->epoch);
    add("epoch_lr", epoch->lr, epoch->epoch);
    flush();
  }
}

void RunRecorder::on_warning(const NodeRef& n, const std::string& m) {
  if (next_) next_->on_warning(n, m);
}
void RunRecorder::on_print(const NodeRef& n, const std::string& t) {
  if (next_) next_->on_print(n, t);
}
void RunRecorder::on_image(const NodeRef& n, const std::string& png) {
  if (next_) next_->on_image(n, png);
}

void RunRecorder::finish(const std::string& status, const std::optional<RunError>& error, const nlohmann::json& results,
                         const nlohmann::json& peak_memory, const nlohmann::json& artifacts) {
  finished_ = true;
  const auto began = Clock::now();
  run_.status = status;
  run_.error = error ? error->to_json() : nlohmann::json();
  run_.final_metrics = results;
  run_.peak_memory = peak_memory;
  run_.artifacts = artifacts;
  run_.node_timings = timings_;
  run_.duration_s = std::chrono::duration<double>(Clock::now() - started_).count();
  run_.ended_at = run_.started_at + run_.duration_s;
  flush();
  guarded([&] { store_->finish_run(run_); });
  tensorboard_guarded([&] { tensorboard_->finish(run_); });
  busy_ += Clock::now() - began;
}

}  // namespace codefy
