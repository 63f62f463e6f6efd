#include "distributed/launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace codefy::distributed {

namespace {

/// The highest descriptor number this process may have, plus one.
rlim_t max_open_files() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 1 << 20;
  return limit.rlim_cur;
}

/// Closes every descriptor from `first` on, in a child between fork and
/// exec (async-signal-safe: close_range, else close one by one).
void close_from(int first, rlim_t max_fd) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, static_cast<unsigned>(first), ~0U, 0) == 0) return;
#endif
  for (rlim_t fd = static_cast<rlim_t>(first); fd < max_fd; ++fd) close(static_cast<int>(fd));
}

std::string describe_status(int rank, pid_t pid, int status) {
  const std::string who = "rank " + std::to_string(rank) + " (pid " + std::to_string(pid) + ")";
  if (WIFSIGNALED(status))
    return who + " was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return who + " exited with code " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

int bind_tcp_socket(const std::string& address, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
    throw std::runtime_error("cannot resolve the master address \"" + address + "\": " + gai_strerror(rc));
  std::string error = "no address";
  for (addrinfo* a = found; a; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // as the TCPStore binds
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0) {
      freeaddrinfo(found);
      return fd;
    }
    error = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(found);
  throw std::runtime_error("the master port " + std::to_string(port) + " on " + address + " cannot be used: " + error +
                           (port != 0 ? " (another run may hold it; choose another --master-port)" : ""));
}

uint16_t find_free_port(const std::string& address) {
  const int fd = bind_tcp_socket(address, 0);
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                          : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

namespace {

constexpr const char* kWorldDirPrefix = "codefy-ddp-";

}  // namespace

WorldDir::WorldDir() {
  const std::filesystem::path temp = std::filesystem::temp_directory_path();
  std::string pattern = (temp / (kWorldDirPrefix + std::to_string(getpid()) + "-XXXXXX")).string();
  if (!mkdtemp(pattern.data()))  // mode 0700
    throw std::runtime_error("cannot make a folder for the data-parallel ranks in " + temp.string() + ": " +
                             std::strerror(errno));
  path_ = pattern;
}

WorldDir::~WorldDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

size_t remove_stale_world_dirs(const std::filesystem::path& temp_dir) {
  size_t removed = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(temp_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(kWorldDirPrefix, 0) != 0) continue;
    // codefy-ddp-<pid>-XXXXXX: its maker's pid; older folders (no pid) are left alone.
    const std::string rest = name.substr(std::strlen(kWorldDirPrefix));
    const size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string::npos || rest.find_first_not_of("0123456789") != dash) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(rest.substr(0, dash)));
    if (pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to ask)
    std::error_code rm;
    if (!std::filesystem::is_directory(std::filesystem::symlink_status(it->path(), rm))) continue;
    if (std::filesystem::remove_all(it->path(), rm) > 0 && !rm) ++removed;
  }
  return removed;
}

namespace {

/// This process's environment without the variables a world sets.
std::vector<std::string> environment_without_world() {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (key == "RANK" || key == "LOCAL_RANK" || key == "WORLD_SIZE" || key == "MASTER_ADDR" || key == "MASTER_PORT" ||
        key == "CODEFY_DIST_TIMEOUT_S" || key == "LOCAL_WORLD_SIZE" || key == "CODEFY_RENDEZVOUS_FILE" ||
        key == "CODEFY_RANK_REPORT")
      continue;
    env.push_back(kv);
  }
  return env;
}

}  // namespace

RankProcesses::RankProcesses(const WorldEnv& world, const std::vector<RankCommand>& commands) {
  const std::vector<std::string> base_env = environment_without_world();
  for (const RankCommand& c : commands) {
    // Everything a child needs is built before fork: after it, only
    // async-signal-safe calls.
    std::vector<std::string> env = base_env;
    env.push_back("RANK=" + std::to_string(c.rank));
    env.push_back("LOCAL_RANK=" + std::to_string(c.local_rank));
    env.push_back("WORLD_SIZE=" + std::to_string(world.world_size));
    env.push_back("LOCAL_WORLD_SIZE=" + std::to_string(world.local_world_size));
    env.push_back("MASTER_ADDR=" + world.master_addr);
    if (world.master_port > 0) env.push_back("MASTER_PORT=" + std::to_string(world.master_port));
    if (!world.store_file.empty()) env.push_back("CODEFY_RENDEZVOUS_FILE=" + world.store_file);
    if (!c.report_path.empty()) env.push_back("CODEFY_RANK_REPORT=" + c.report_path);
    env.push_back("CODEFY_DIST_TIMEOUT_S=" + std::to_string(world.timeout.count()));
    std::vector<char*> envp;
    envp.reserve(env.size() + 1);
    for (auto& kv : env) envp.push_back(kv.data());
    envp.push_back(nullptr);
    std::vector<char*> argv;
    for (const auto& a : c.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const char* program = c.program.empty() ? "/proc/self/exe" : c.program.c_str();
    int log_fd = -1;
    if (!c.log_path.empty()) {
      log_fd = open(c.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (log_fd < 0) {
        const std::string why = std::strerror(errno);
        signal_all(SIGKILL);
        end_within(std::chrono::milliseconds(0));
        throw std::runtime_error("cannot start rank " + std::to_string(c.rank) + ": cannot write its log " +
                                 c.log_path + ": " + why);
      }
    }
    const pid_t parent = getpid();
    const rlim_t max_fd = max_open_files();
    const pid_t pid = fork();
    if (pid < 0) {
      const std::string why = std::strerror(errno);
      if (log_fd >= 0) close(log_fd);
      signal_all(SIGKILL);
      end_within(std::chrono::milliseconds(0));
      throw std::runtime_error("cannot start rank " + std::to_string(c.rank) + ": " + why);
    }
    if (pid == 0) {
      // Its own process group, so a terminal's Ctrl-C reaches the launcher
      // alone, which forwards it once; and it dies with the launcher.
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      if (log_fd >= 0) {
        dup2(log_fd, STDOUT_FILENO);
        dup2(log_fd, STDERR_FILENO);
      }
      // Only stdin, stdout and stderr go on: not a server's listening socket,
      // its clients' connections or files opened without close-on-exec.
      close_from(3, max_fd);
      execve(program, argv.data(), envp.data());
      _exit(127);
    }
    if (log_fd >= 0) close(log_fd);
    running_[pid] = c.rank;
  }
}

RankProcesses::~RankProcesses() {
  signal_all(SIGKILL);
  for (const auto& [pid, rank] : running_) waitpid(pid, nullptr, 0);
}

std::vector<RankExit> RankProcesses::reap() {
  std::vector<RankExit> ended;
  for (auto it = running_.begin(); it != running_.end();) {
    int status = 0;
    const pid_t pid = waitpid(it->first, &status, WNOHANG);
    if (pid != it->first) {
      ++it;
      continue;
    }
    RankExit e;
    e.rank = it->second;
    e.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    e.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    e.description = describe_status(e.rank, pid, status);
    ended.push_back(std::move(e));
    it = running_.erase(it);
  }
  return ended;
}

void RankProcesses::signal_all(int signal) {
  for (const auto& [pid, rank] : running_) kill(pid, signal);
}

std::vector<RankExit> RankProcesses::end_within(std::chrono::milliseconds grace) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::vector<RankExit> ended;
  bool terminated = false, killed = false;
  for (;;) {
    for (auto& e : reap()) ended.push_back(std::move(e));
    if (running_.empty()) return ended;
    const auto waited = Clock::now() - start;
    if (!terminated && waited >= grace) {
      terminated = true;
      signal_all(SIGTERM);
      signal_all(SIGTERM);  // the second one makes codefy quit without waiting for a batch
    }
    if (!killed && waited >= grace + std::chrono::seconds(3)) {
      killed = true;
      signal_all(SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string RankProcesses::describe() const {
  std::string text;
  for (const auto& [pid, rank] : running_)
    text +=
        (text.empty() ? "" : ", ") + std::string("rank ") + std::to_string(rank) + " (pid " + std::to_string(pid) + ")";
  return text;
}

LaunchResult launch_ranks(const LaunchOptions& o) {
  auto report = [&o](const std::string& line) {
    if (o.report) o.report(line);
  };
  if (o.nproc_per_node < 1 || o.nnodes < 1 || o.node_rank < 0 || o.node_rank >= o.nnodes)
    throw std::invalid_argument("--nproc-per-node and --nnodes must be >= 1 and --node-rank in [0, --nnodes)");
  WorldEnv world;
  world.world_size = o.nproc_per_node * o.nnodes;
  world.local_world_size = o.nproc_per_node;
  world.master_addr = o.master_addr;
  world.timeout = o.timeout;
  // One machine: the ranks meet through a file in a folder of this user's
  // (no port listens at all). Several: through rank 0's TCPStore.
  std::optional<WorldDir> dir;
  std::string where;
  if (o.nnodes == 1) {
    dir.emplace();
    world.store_file = dir->store_file().string();
    where = "rendezvous in " + world.store_file + " (one machine: no port)";
  } else {
    if (o.master_port == 0) throw std::invalid_argument("several machines need an agreed --master-port (not 0)");
    if (o.node_rank == 0)  // taken: say so before any rank starts
      close(bind_tcp_socket(o.master_addr, static_cast<uint16_t>(o.master_port)));
    world.master_port = o.master_port;
    where = "rendezvous on " + o.master_addr + ":" + std::to_string(o.master_port);
  }
  std::vector<RankCommand> commands;
  commands.reserve(static_cast<size_t>(o.nproc_per_node));  // >= 1, checked above
  for (int local = 0; local < o.nproc_per_node; ++local)
    commands.push_back({o.node_rank * o.nproc_per_node + local, local, o.argv, "", "", ""});
  RankProcesses ranks(world, commands);
  report("started " + ranks.describe() + "; " + where);

  using Clock = std::chrono::steady_clock;
  LaunchResult result;
  bool forwarded_stop = false;
  const auto grace = std::min<std::chrono::milliseconds>(o.timeout, std::chrono::seconds(10));
  while (ranks.running()) {
    for (const RankExit& e : ranks.reap()) {
      if (e.ok || result.failed_rank >= 0) continue;
      result.failed_rank = e.rank;
      result.exit_code = e.exit_code;
      result.failure = e.description;
      // After a Stop the ranks end with the stopped code: nothing to report.
      if (!forwarded_stop) report(result.failure);
    }
    if (result.failed_rank >= 0 && ranks.running()) {
      // The others get `grace` to report the failure themselves, then are ended.
      const auto failed_at = Clock::now();
      while (ranks.running() && Clock::now() - failed_at < grace) {
        ranks.reap();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (ranks.running()) report("stopping " + ranks.describe());
      ranks.end_within(std::chrono::milliseconds(0));
      break;
    }
    if (!forwarded_stop && o.stop_requested && o.stop_requested()) {
      forwarded_stop = true;
      ranks.signal_all(SIGINT);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return result;
}

}  // namespace codefy::distributed
