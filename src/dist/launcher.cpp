#include "dist/launcher.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
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

namespace codefy::dist {

namespace {

/// A socket bound to address:port; throws naming the address when it cannot be.
int bind_socket(const std::string& address, uint16_t port) {
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
  throw std::runtime_error("the master port " + std::to_string(port) + " on " + address +
                           " cannot be used: " + error +
                           (port != 0 ? " (another run may hold it; --master-port 0 picks a free one)" : ""));
}

std::string describe_status(int rank, pid_t pid, int status) {
  const std::string who = "rank " + std::to_string(rank) + " (pid " + std::to_string(pid) + ")";
  if (WIFSIGNALED(status))
    return who + " was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) +
           ")";
  return who + " exited with code " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

uint16_t find_free_port(const std::string& address) {
  const int fd = bind_socket(address, 0);
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                          : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

LaunchResult launch_ranks(const LaunchOptions& o) {
  auto report = [&o](const std::string& line) {
    if (o.report) o.report(line);
  };
  if (o.nproc_per_node < 1 || o.nnodes < 1 || o.node_rank < 0 || o.node_rank >= o.nnodes)
    throw std::invalid_argument("--nproc-per-node and --nnodes must be >= 1 and --node-rank in [0, --nnodes)");
  int port = o.master_port;
  if (port == 0) {
    if (o.nnodes > 1) throw std::invalid_argument("several machines need an agreed --master-port (not 0)");
    port = find_free_port(o.master_addr);
  } else if (o.node_rank == 0) {
    close(bind_socket(o.master_addr, static_cast<uint16_t>(port)));  // taken: say so before any rank starts
  }
  const int world = o.nproc_per_node * o.nnodes;

  // Everything a child needs is built before fork: after it, only
  // async-signal-safe calls.
  std::vector<std::string> base_env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (key == "RANK" || key == "LOCAL_RANK" || key == "WORLD_SIZE" || key == "MASTER_ADDR" ||
        key == "MASTER_PORT" || key == "CODEFY_DIST_TIMEOUT_S" || key == "LOCAL_WORLD_SIZE")
      continue;
    base_env.push_back(kv);
  }
  std::vector<char*> argv;
  for (const auto& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  std::map<pid_t, int> running;  // pid -> global rank
  LaunchResult result;
  for (int local = 0; local < o.nproc_per_node; ++local) {
    const int rank = o.node_rank * o.nproc_per_node + local;
    std::vector<std::string> env = base_env;
    env.push_back("RANK=" + std::to_string(rank));
    env.push_back("LOCAL_RANK=" + std::to_string(local));
    env.push_back("WORLD_SIZE=" + std::to_string(world));
    env.push_back("LOCAL_WORLD_SIZE=" + std::to_string(o.nproc_per_node));
    env.push_back("MASTER_ADDR=" + o.master_addr);
    env.push_back("MASTER_PORT=" + std::to_string(port));
    env.push_back("CODEFY_DIST_TIMEOUT_S=" + std::to_string(o.timeout.count()));
    std::vector<char*> envp;
    for (auto& kv : env) envp.push_back(kv.data());
    envp.push_back(nullptr);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
      for (const auto& [p, r] : running) kill(p, SIGKILL);
      for (const auto& [p, r] : running) waitpid(p, nullptr, 0);
      throw std::runtime_error(std::string("cannot start rank ") + std::to_string(rank) + ": " + std::strerror(errno));
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
      execve("/proc/self/exe", argv.data(), envp.data());
      _exit(127);
    }
    running[pid] = rank;
  }

  std::string started;
  for (const auto& [p, r] : running)
    started += (started.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) + " (pid " + std::to_string(p) + ")";
  report("started " + started + "; rendezvous on " + o.master_addr + ":" + std::to_string(port));

  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> failed_at;
  bool forwarded_stop = false, terminated = false, killed = false;
  const auto grace = std::min<std::chrono::seconds>(o.timeout, std::chrono::seconds(10));
  while (!running.empty()) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      auto it = running.find(pid);
      if (it == running.end()) continue;
      const int rank = it->second;
      running.erase(it);
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (!ok && result.failed_rank < 0 && !terminated) {
        result.failed_rank = rank;
        result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        result.failure = describe_status(rank, pid, status);
        // After a Stop the ranks end with the stopped code: nothing to report.
        if (!forwarded_stop) report(result.failure);
        failed_at = Clock::now();
      }
      continue;
    }
    if (!forwarded_stop && o.stop_requested && o.stop_requested()) {
      forwarded_stop = true;
      for (const auto& [p, r] : running) kill(p, SIGINT);
    }
    if (failed_at && !terminated && Clock::now() - *failed_at > grace) {
      terminated = true;
      for (const auto& [p, r] : running) {
        report("stopping rank " + std::to_string(r) + " (pid " + std::to_string(p) + ")");
        kill(p, SIGTERM);
        kill(p, SIGTERM);  // the second one makes codefy quit without waiting for a batch
      }
    }
    if (terminated && !killed && Clock::now() - *failed_at > grace + std::chrono::seconds(3)) {
      killed = true;
      for (const auto& [p, r] : running) kill(p, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return result;
}

}  // namespace codefy::dist
