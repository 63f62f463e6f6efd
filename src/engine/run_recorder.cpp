#include "engine/run_recorder.h"

#include "util/random.h"

#include <cstdio>

namespace codefy {

namespace {

using Clock = std::chrono::steady_clock;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// At most one transaction this often while training.
constexpr std::chrono::milliseconds kFlushEvery{500};

}  // namespace

std::string graph_hash(const nlohmann::json& graph) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(util::fnv1a(graph.dump())));
  return hex;
}

RunRecorder::RunRecorder(std::shared_ptr<store::RunStore> store, store::RunRecord run, Observer* next,
                         std::function<void(const std::string&)> warn)
    : store_(std::move(store)), run_(std::move(run)), next_(next), warn_(std::move(warn)) {
  if (!warn_) warn_ = [](const std::string& m) { std::fprintf(stderr, "warning: %s\n", m.c_str()); };
  started_ = last_flush_ = Clock::now();
  if (run_.graph_hash.empty()) run_.graph_hash = graph_hash(run_.graph);
  guarded([&] { store_->begin_run(run_); });
}

RunRecorder::~RunRecorder() {
  // Ended without finish(): an exception nobody reported. The series so far stay.
  if (!finished_) guarded([&] { flush(); });
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
  if (!store_ || pending_.empty()) return;
  store_->append_series(run_.id, pending_);
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
  if (!store_) return;
  const std::string kind = e.value("event", "");
  const double t = unix_now();
  auto add = [&](const char* name, const char* key, int64_t step) {
    if (auto it = e.find(key); it != e.end() && it->is_number())
      pending_.push_back({name, step, it->get<double>(), t});
  };
  if (kind == "config") {
    guarded([&] { store_->set_config(run_.id, e.value("config", nlohmann::json::object())); });
  } else if (kind == "batch") {  // sampled: the trainer sends one per progress interval
    const int64_t step = e.value("step", int64_t{0});
    add("loss", "loss", step);
    add("lr", "lr", step);
    add("grad_norm", "grad_norm", step);
    add("samples_per_s", "samples_per_s", step);
    if (Clock::now() - last_flush_ >= kFlushEvery) guarded([&] { flush(); });
  } else if (kind == "epoch") {
    const int64_t epoch = e.value("epoch", int64_t{0});
    add("epoch_loss", "loss", epoch);
    add("val_loss", "val_loss", epoch);
    add("val_accuracy", "val_accuracy", epoch);
    add("epoch_seconds", "seconds", epoch);
    add("epoch_lr", "lr", epoch);
    guarded([&] { flush(); });
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

void RunRecorder::finish(const std::string& status, const std::optional<RunError>& error,
                         const nlohmann::json& results, const nlohmann::json& peak_memory,
                         const nlohmann::json& artifacts) {
  finished_ = true;
  run_.status = status;
  run_.error = error ? error->to_json() : nlohmann::json();
  run_.final_metrics = results;
  run_.peak_memory = peak_memory;
  run_.artifacts = artifacts;
  run_.node_timings = timings_;
  run_.duration_s = std::chrono::duration<double>(Clock::now() - started_).count();
  guarded([&] {
    flush();
    store_->finish_run(run_);
  });
}

}  // namespace codefy
