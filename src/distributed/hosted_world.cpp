#include "distributed/hosted_world.h"

#include <nlohmann/json.hpp>

#include <csignal>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace codefy::distributed {

namespace {

std::string join(const std::vector<HelperFailure>& failures) {
  std::string text;
  for (const auto& f : failures) text += (text.empty() ? "" : "; ") + f.describe();
  return text;
}

}  // namespace

std::string HelperFailure::describe() const {
  std::string text = "rank " + std::to_string(rank);
  text += exit_code >= 0 ? " (exit code " + std::to_string(exit_code) + ")" : " (killed by a signal)";
  const auto said = report.is_object() ? report.find("message") : report.end();
  const std::string message = said != report.end() && said->is_string() ? said->get<std::string>() : exited;
  return message.empty() ? text : text + ": " + message;
}

namespace {

std::filesystem::path report_file(const std::filesystem::path& dir, int rank) {
  return dir / ("rank-" + std::to_string(rank) + ".error.json");
}

}  // namespace

HostedWorld::HostedWorld(const HostedWorldOptions& o)
    : world_size_(static_cast<int>(o.helper_argv.size()) + 1), timeout_(o.timeout), log_dir_(o.log_dir) {
  if (log_dir_.empty()) {
    own_dir_ = std::make_unique<WorldDir>();
    log_dir_ = own_dir_->path();
  }
  WorldEnv env;
  env.world_size = world_size_;
  env.local_world_size = world_size_;
  env.master_addr = "127.0.0.1";
  env.store_file = (log_dir_ / "rendezvous").string();  // one machine: no port listens
  env.timeout = o.timeout;
  std::vector<RankCommand> commands;
  for (int r = 1; r < world_size_; ++r)
    commands.push_back({r, r, o.helper_argv[r - 1], o.program,
                        (log_dir_ / ("rank-" + std::to_string(r) + ".log")).string(),
                        report_file(log_dir_, r).string()});
  helpers_ = std::make_unique<RankProcesses>(env, commands);
  WorldInfo me;
  me.rank = 0;
  me.world_size = world_size_;
  me.local_rank = 0;
  me.master_addr = env.master_addr;
  me.store_file = env.store_file;
  me.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(o.timeout);
  try {
    group_ = std::make_shared<ProcessGroup>(me, o.group);
  } catch (const std::exception& e) {
    const std::string said = join(end_after_failure());
    throw std::runtime_error(std::string(e.what()) + (said.empty() ? "" : "; " + said));
  }
}

HostedWorld::~HostedWorld() {
  group_.reset();
  if (helpers_) helpers_->end_within(std::chrono::milliseconds(0));
}

HelperFailure HostedWorld::failure_of(const RankExit& e) const {
  HelperFailure f;
  f.rank = e.rank;
  f.exit_code = e.exit_code;
  f.exited = e.description;
  std::ifstream in(report_file(log_dir_, e.rank));
  if (in) f.report = nlohmann::json::parse(in, nullptr, false);  // written whole (atomically) or not at all
  if (f.report.is_discarded()) f.report = nullptr;
  return f;
}

void HostedWorld::finish() {
  group_.reset();  // rank 0 leaves; the helpers end their graphs on their own
  std::vector<HelperFailure> failed;
  for (const RankExit& e : helpers_->end_within(timeout_))
    if (!e.ok) failed.push_back(failure_of(e));
  if (!failed.empty()) throw std::runtime_error("a data-parallel rank failed: " + join(failed));
}

std::vector<HelperFailure> HostedWorld::end_after_failure() {
  using Clock = std::chrono::steady_clock;
  std::vector<HelperFailure> failed;
  std::vector<RankExit> ended;
  // A helper that failed first is the usual cause of rank 0's failure; the
  // rest are still waiting in a collective (or stopping with rank 0).
  const auto until = Clock::now() + std::min<std::chrono::seconds>(timeout_, std::chrono::seconds(3));
  while (helpers_->running() && Clock::now() < until) {
    for (auto& e : helpers_->reap()) ended.push_back(std::move(e));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  group_.reset();
  for (auto& e : helpers_->end_within(std::chrono::milliseconds(0))) ended.push_back(std::move(e));
  for (const RankExit& e : ended)
    if (!e.ok && e.exit_code > 0) failed.push_back(failure_of(e));  // ended by us: not a failure of its own
  return failed;
}

}  // namespace codefy::distributed
