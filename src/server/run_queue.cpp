// Per-device run queues: FIFOs, worker threads, stop and the queue summary.
#include "server/run_queue.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <stdexcept>

namespace codefy::server {

const char* to_string(RunState s) {
  switch (s) {
    case RunState::kQueued: return "queued";
    case RunState::kRunning: return "running";
    case RunState::kCompleted: return "completed";
    case RunState::kFailed: return "failed";
    case RunState::kStopped: return "stopped";
  }
  return "unknown";
}

QueueFull::QueueFull(const std::string& queue, size_t waiting, size_t limit)
    : std::runtime_error("the " + queue + " queue is full: " + std::to_string(waiting) + " runs are waiting (at most " +
                         std::to_string(limit) + "); try again when one has finished"),
      queue_(queue),
      waiting_(waiting),
      limit_(limit) {}

std::vector<std::string> WorkerSpec::rank_devices() const {
  std::vector<std::string> cards;
  for (const auto& d : devices)
    if (d != "cpu" && d != "mps") cards.push_back(d);
  if (cards.size() >= 2) return cards;
  if (std::find(devices.begin(), devices.end(), "cpu") != devices.end())
    return std::vector<std::string>(static_cast<size_t>(cpu_processes), "cpu");
  return cards;
}

std::vector<WorkerSpec> make_workers(const std::vector<std::string>& specs, const std::vector<std::string>& available) {
  std::vector<WorkerSpec> workers;
  std::map<std::string, std::string> owner;  // device → worker
  for (const auto& spec : specs) {
    const auto bad = [&](const std::string& why) {
      return std::invalid_argument("--worker \"" + spec + "\": " + why +
                                   " (expected NAME=DEVICE[,DEVICE...], e.g. "
                                   "gpus=cuda:0,cuda:1)");
    };
    const size_t eq = spec.find('=');
    if (eq == std::string::npos) throw bad("no '='");
    WorkerSpec w{spec.substr(0, eq), {}};
    if (w.name.empty()) throw bad("no worker name");
    for (const auto& other : workers)
      if (other.name == w.name) throw bad("the name " + w.name + " is used twice");
    size_t start = eq + 1;
    while (start <= spec.size()) {
      size_t end = spec.find(',', start);
      if (end == std::string::npos) end = spec.size();
      std::string d = spec.substr(start, end - start);
      start = end + 1;
      if (d.empty()) continue;
      if (const size_t star = d.find('*'); star != std::string::npos) {
        const std::string count = d.substr(star + 1);
        d = d.substr(0, star);
        if (d != "cpu") throw bad(d + "*" + count + ": only the CPU takes a process count (cards run one rank each)");
        if (count.empty() || count.size() > 4 || count.find_first_not_of("0123456789") != std::string::npos ||
            std::stoi(count) < 1)
          throw bad("cpu*" + count + ": the process count must be a whole number from 1 to 9999");
        w.cpu_processes = std::stoi(count);
      }
      if (std::find(available.begin(), available.end(), d) == available.end()) {
        std::string list;
        for (const auto& a : available) list += (list.empty() ? "" : ", ") + a;
        throw bad("no device " + d + " on this machine (it has " + list + ")");
      }
      if (owner.count(d)) throw bad(d + " already belongs to worker " + owner[d]);
      owner[d] = w.name;
      w.devices.push_back(d);
    }
    if (w.devices.empty()) throw bad("no devices");
    workers.push_back(std::move(w));
  }
  for (const auto& d : available)
    if (!owner.count(d)) {
      for (const auto& w : workers)
        if (w.name == d)
          throw std::invalid_argument("--worker \"" + d + "=...\": the name " + d +
                                      " is a device's own worker name; choose another");
      workers.push_back({d, {d}});
    }
  return workers;
}

namespace {
std::vector<WorkerSpec> one_worker_each(const std::vector<std::string>& devices) {
  std::vector<WorkerSpec> w;
  w.reserve(devices.size());
  for (const auto& d : devices) w.push_back({d, {d}});
  return w;
}
}  // namespace

RunQueues::RunQueues(const std::vector<std::string>& devices, size_t waiting_max)
    : RunQueues(one_worker_each(devices), waiting_max) {}

RunQueues::RunQueues(const std::vector<WorkerSpec>& workers, size_t waiting_max) : waiting_max_(waiting_max) {
  std::random_device rd;
  char tag[16];
  std::snprintf(tag, sizeof tag, "run-%06x-", rd() & 0xffffff);
  id_prefix_ = tag;
  for (const auto& w : workers) {
    queues_[w.name].spec = w;
    for (const auto& d : w.devices) worker_of_[d] = w.name;
  }
  for (auto& [name, q] : queues_) q.worker = std::thread([this, n = name] { work(n); });
}

RunQueues::~RunQueues() { close(); }

void RunQueues::close() {
  std::vector<std::pair<std::string, Dropped>> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closing_) return;
    closing_ = true;
    for (auto& [name, q] : queues_) {
      (void)name;
      for (auto& r : q.waiting) {
        r->info.state = RunState::kStopped;
        r->job = nullptr;
        dropped.emplace_back(r->info.id, std::move(r->dropped));
      }
      q.waiting.clear();
      if (q.running) q.running->token.cancel();
    }
  }
  wake_.notify_all();
  for (auto& [id, d] : dropped)  // their clients hear "stopped" while the server can still answer
    if (d) d(id);
  for (auto& [name, q] : queues_) {
    (void)name;
    if (q.worker.joinable()) q.worker.join();
  }
}

std::string RunQueues::submit(const std::string& device, Job job, Dropped dropped) {
  std::string id;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto w = worker_of_.find(device);
    if (w == worker_of_.end()) throw std::invalid_argument("no worker owns device \"" + device + "\"");
    auto q = queues_.find(w->second);
    if (closing_) throw std::runtime_error("the server is shutting down");
    if (waiting_max_ > 0 && q->second.waiting.size() >= waiting_max_)
      throw QueueFull(w->second, q->second.waiting.size(), waiting_max_);
    id = id_prefix_ + std::to_string(next_id_++);
    auto run = std::make_shared<Run>();
    run->info.id = id;
    run->info.queue = w->second;
    run->info.device = device;
    run->job = std::move(job);
    run->dropped = std::move(dropped);
    q->second.waiting.push_back(run);
    runs_[id] = run;
    order_.push_back(id);
    forget_old_locked();
  }
  wake_.notify_all();
  return id;
}

size_t RunQueues::position_locked(const Run& run) const {
  if (run.info.state != RunState::kQueued) return 0;
  const Queue& q = queues_.at(run.info.queue);
  size_t ahead = q.running ? 1 : 0;
  for (const auto& r : q.waiting) {
    if (r.get() == &run) break;
    ++ahead;
  }
  return ahead;
}

std::optional<RunInfo> RunQueues::info(const std::string& run_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return std::nullopt;
  RunInfo i = it->second->info;
  i.position = position_locked(*it->second);
  return i;
}

std::vector<RunInfo> RunQueues::runs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<RunInfo> v;
  for (const auto& id : order_) {
    RunInfo i = runs_.at(id)->info;
    i.position = position_locked(*runs_.at(id));
    v.push_back(std::move(i));
  }
  return v;
}

RunQueues::Dropped RunQueues::drop_locked(Run& run) {
  auto& waiting = queues_.at(run.info.queue).waiting;
  for (auto w = waiting.begin(); w != waiting.end(); ++w)
    if (w->get() == &run) {
      waiting.erase(w);
      break;
    }
  run.info.state = RunState::kStopped;
  run.job = nullptr;
  return std::move(run.dropped);
}

bool RunQueues::stop(const std::string& run_id) {
  Dropped dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = runs_.find(run_id);
    if (it == runs_.end()) return false;
    Run& run = *it->second;
    if (run.info.state == RunState::kRunning) {
      run.token.cancel();
      return true;
    }
    if (run.info.state != RunState::kQueued) return false;
    dropped = drop_locked(run);
  }
  if (dropped) dropped(run_id);  // unlocked: it may answer a client, or ask the queues
  return true;
}

bool RunQueues::drop_queued(const std::string& run_id) {
  Dropped dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = runs_.find(run_id);
    if (it == runs_.end() || it->second->info.state != RunState::kQueued) return false;
    dropped = drop_locked(*it->second);
  }
  if (dropped) dropped(run_id);
  return true;
}

std::optional<WorkerSpec> RunQueues::worker_for(const std::string& device) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto w = worker_of_.find(device);
  if (w == worker_of_.end()) return std::nullopt;
  return queues_.at(w->second).spec;
}

nlohmann::json RunQueues::queues_json() const {
  std::lock_guard<std::mutex> lock(mutex_);
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, q] : queues_)
    j[name] = {{"devices", q.spec.devices},
               {"ddp_ranks", q.spec.rank_devices().size()},
               {"running", q.running ? nlohmann::json(q.running->info.id) : nlohmann::json()},
               {"queued", q.waiting.size()},
               {"max_queued", waiting_max_}};
  return j;
}

void RunQueues::forget_old_locked() {
  // Keep every unfinished run; drop the oldest finished ones past the limit.
  size_t finished = 0;
  for (const auto& id : order_) {
    const RunState s = runs_.at(id)->info.state;
    if (s != RunState::kQueued && s != RunState::kRunning) ++finished;
  }
  for (auto it = order_.begin(); finished > kKeepFinished && it != order_.end();) {
    const RunState s = runs_.at(*it)->info.state;
    if (s != RunState::kQueued && s != RunState::kRunning) {
      runs_.erase(*it);
      it = order_.erase(it);
      --finished;
    } else {
      ++it;
    }
  }
}

void RunQueues::work(const std::string& name) {
  Queue& q = queues_.at(name);  // the map is not modified after construction
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return closing_ || !q.waiting.empty(); });
    if (closing_) return;
    std::shared_ptr<Run> run = q.waiting.front();
    q.waiting.pop_front();
    q.running = run;
    run->info.state = RunState::kRunning;
    Job job = std::move(run->job);
    run->dropped = nullptr;  // it started: it answers through its job
    const CancellationToken token = run->token;
    lock.unlock();

    const auto t0 = std::chrono::steady_clock::now();
    RunState end = RunState::kCompleted;
    std::string error;
    try {
      if (token.cancelled()) throw Cancelled();
      job(token, run->info.id);
    } catch (const Cancelled&) {
      end = RunState::kStopped;
    } catch (const std::exception& e) {
      end = RunState::kFailed;
      error = e.what();
    } catch (...) {
      end = RunState::kFailed;
      error = "unknown error";
    }
    job = nullptr;  // release what the run held before the next one starts

    lock.lock();
    run->info.state = end;
    run->info.error = std::move(error);
    run->info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    q.running.reset();
    forget_old_locked();
  }
}

}  // namespace codefy::server
