// The c10d process group with real processes: a forked child is rank 1.
#include "distributed/process_group.h"
#include "../common/test_util.h"
#include "distributed/launcher.h"
#include "train/grad_buffer.h"

#include <torch/torch.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

namespace codefy::distributed {
namespace {

using Clock = std::chrono::steady_clock;

WorldInfo two_ranks(int rank, uint16_t port) {
  WorldInfo w;
  w.rank = rank;
  w.world_size = 2;
  w.master_port = port;
  w.timeout = std::chrono::seconds(20);
  return w;
}

/// What each rank checks; returns the failures ("" when none).
std::string rank_main(int rank, uint16_t port) {
  std::string failures;
  try {
    ProcessGroup group(two_ranks(rank, port));
    if (group.rank() != rank || group.world_size() != 2 || group.backend() != "gloo") failures += "identity; ";
    // Sum: 1 + 2 on every element.
    const torch::Tensor t = torch::full({5}, static_cast<float>(rank + 1));
    group.all_reduce_sum({t});
    if (!t.eq(3.0f).all().item<bool>()) failures += "all_reduce_sum; ";
    // Broadcast of two dtypes from rank 0.
    const torch::Tensor f = torch::full({3}, rank == 0 ? 7.0f : -1.0f);
    const torch::Tensor l = torch::full({2}, rank == 0 ? int64_t{9} : int64_t{0});
    group.broadcast({f, l}, 0);
    if (!f.eq(7.0f).all().item<bool>() || !l.eq(9).all().item<bool>()) failures += "broadcast; ";
    // The gradient reducer averages a flat gradient buffer.
    const torch::Tensor p = torch::zeros({3}, torch::requires_grad());
    p.mutable_grad() = torch::full({3}, static_cast<float>(rank == 0 ? 2.0 : 4.0));
    train::GradBuffer grads({p});
    grads.sync();
    auto reducer = group.make_gradient_reducer();
    reducer->reduce(grads);
    if (!p.grad().eq(3.0f).all().item<bool>()) failures += "gradient mean; ";
    const auto counters = group.counters();
    if (counters["gradient_reductions"] != 1 || counters["bucket_all_reduces"] != 1) failures += "counters; ";
    group.barrier();
  } catch (const std::exception& e) {
    failures += std::string("threw: ") + e.what();
  }
  return failures;
}

TEST(ProcessGroup, TwoProcessesAllReduceBroadcastAndAverageGradients) {
  const uint16_t port = find_free_port("127.0.0.1");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    torch::set_num_threads(1);
    const std::string failures = rank_main(1, port);
    if (!failures.empty()) std::fprintf(stderr, "rank 1: %s\n", failures.c_str());
    _exit(failures.empty() ? 0 : 1);
  }
  EXPECT_EQ(rank_main(0, port), "");
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "rank 1 failed (its message is above)";
}

TEST(ProcessGroup, ARankAloneFailsWithinTheTimeout) {
  WorldInfo w = two_ranks(0, find_free_port("127.0.0.1"));
  w.timeout = std::chrono::seconds(2);
  const auto start = Clock::now();
  try {
    ProcessGroup group(w);
    FAIL() << "joined a world of 2 alone";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 15.0);
}

TEST(ProcessGroup, ATakenPortIsAClearError) {
  // Hold a listening socket on a port, then ask rank 0 to host the store there.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const uint16_t port = ntohs(addr.sin_port);
  WorldInfo w = two_ranks(0, port);
  w.timeout = std::chrono::seconds(2);
  try {
    ProcessGroup group(w);
    ADD_FAILURE() << "hosted a store on a taken port";
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cannot host the rendezvous store on 127.0.0.1:" + std::to_string(port)), std::string::npos) << m;
    EXPECT_NE(m.find("choose another --master-port"), std::string::npos) << m;
  }
  LaunchOptions o;  // node 0 of two machines: the port is checked before a rank starts
  o.nnodes = 2;
  o.master_port = port;
  o.argv = {"/bin/true"};
  try {
    launch_ranks(o);
    ADD_FAILURE() << "launched on a taken port";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("master port " + std::to_string(port)), std::string::npos) << e.what();
  }
  close(fd);
}

TEST(ProcessGroup, WorldFromTorchrunVariables) {
  setenv("WORLD_SIZE", "4", 1);
  setenv("RANK", "3", 1);
  setenv("LOCAL_RANK", "1", 1);
  setenv("MASTER_ADDR", "10.0.0.2", 1);
  setenv("MASTER_PORT", "29511", 1);
  setenv("CODEFY_DIST_TIMEOUT_S", "7", 1);
  const auto w = WorldInfo::from_env();
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->world_size, 4);
  EXPECT_EQ(w->rank, 3);
  EXPECT_EQ(w->local_rank, 1);
  EXPECT_EQ(w->master_addr, "10.0.0.2");
  EXPECT_EQ(w->master_port, 29511);
  EXPECT_EQ(w->timeout, std::chrono::seconds(7));
  setenv("RANK", "4", 1);
  EXPECT_THROW(WorldInfo::from_env(), std::invalid_argument);
  for (const char* v : {"WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "CODEFY_DIST_TIMEOUT_S"})
    unsetenv(v);
  EXPECT_FALSE(WorldInfo::from_env().has_value());
}

TEST(ProcessGroup, BackendFollowsTheLinkedLibTorch) {
  EXPECT_EQ(default_backend("cpu"), "gloo");
  EXPECT_EQ(default_backend("cuda"), has_nccl() ? "nccl" : "gloo");
  if (!has_nccl()) {
    WorldInfo w;
    ProcessGroupOptions o;
    o.backend = "nccl";
    EXPECT_THROW((ProcessGroup{w, o}), std::runtime_error);
  }
}

// Issue #34 item 2: on one machine the ranks meet through a FileStore in a
// folder of this user's, so the store (which has no authentication) listens
// on no port at all; the world says where it met.
TEST(ProcessGroup, OneMachineMeetsThroughAFileAndListensOnNoPort) {
  WorldDir dir;
  const auto world = [&dir](int rank) {
    WorldInfo w = two_ranks(rank, 0);
    w.store_file = dir.store_file().string();
    return w;
  };
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    torch::set_num_threads(1);
    int code = 1;
    try {
      ProcessGroup group(world(1));
      const torch::Tensor t = torch::full({4}, 2.0f);
      group.all_reduce_sum({t});
      code = t.eq(3.0f).all().item<bool>() ? 0 : 2;
      group.barrier();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank 1: %s\n", e.what());
    }
    _exit(code);
  }
  {
    ProcessGroup group(world(0));
    const torch::Tensor t = torch::full({4}, 1.0f);
    group.all_reduce_sum({t});
    EXPECT_TRUE(t.eq(3.0f).all().item<bool>());
    const nlohmann::json r = group.rendezvous();
    EXPECT_EQ(r["store"], "file") << r;
    EXPECT_EQ(r["path"], dir.store_file().string()) << r;
    EXPECT_FALSE(r.contains("address")) << r;
    group.barrier();
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "rank 1 failed";
  struct stat st {};
  ASSERT_EQ(stat(dir.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u) << "the rendezvous folder is readable by others";
}

TEST(ProcessGroup, ATcpStoreSaysWhereItListens) {
  const uint16_t port = find_free_port("127.0.0.1");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      ProcessGroup group(two_ranks(1, port));
      group.barrier();
    } catch (const std::exception&) {
      _exit(1);
    }
    _exit(0);
  }
  ProcessGroup group(two_ranks(0, port));
  const nlohmann::json r = group.rendezvous();
  EXPECT_EQ(r["store"], "tcp") << r;
  EXPECT_EQ(r["address"], "127.0.0.1:" + std::to_string(port)) << r;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 8)
  EXPECT_EQ(r["listens_on"], "127.0.0.1") << r;
#else
  EXPECT_EQ(r["listens_on"], "every interface") << r;
  EXPECT_NE(r.value("warning", "").find("firewall port " + std::to_string(port)), std::string::npos) << r;
#endif
  group.barrier();
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// Item 6: a rank started by a server must not hold the server's listening
// socket or its clients' connections: only stdin, stdout and stderr go on.
TEST(RankProcesses, ARankInheritsNoDescriptorButTheStandardThree) {
  const int leaked = socket(AF_INET, SOCK_STREAM, 0);  // no SOCK_CLOEXEC, as Asio's sockets
  ASSERT_GE(leaked, 0);
  const int high = dup2(leaked, 77);
  ASSERT_EQ(high, 77);
  ASSERT_EQ(fcntl(high, F_GETFD) & FD_CLOEXEC, 0);
  testing::TempDir dir("rank_fds");
  const std::string log = (dir.path() / "fds.log").string();
  WorldEnv env;
  {
    RankProcesses ranks(env, {{0, 0, {"sh", "-c", "ls /proc/$$/fd"}, "/bin/sh", log, ""}});
    while (ranks.running()) {
      ranks.reap();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  std::ifstream in(log);
  std::vector<std::string> fds;
  for (std::string fd; in >> fd;) fds.push_back(fd);
  EXPECT_EQ(fds, (std::vector<std::string>{"0", "1", "2"})) << "the shell held more than the standard three";
  close(high);
  close(leaked);
}

TEST(WorldDir, FoldersOfProcessesThatAreGoneAreRemovedOthersStay) {
  testing::TempDir temp_dir("world_dirs");
  const auto& temp = temp_dir.path();
  // A process that has ended: its pid is free.
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  const auto dead = temp / ("codefy-ddp-" + std::to_string(child) + "-abc123");
  const auto alive = temp / ("codefy-ddp-" + std::to_string(getppid()) + "-def456");
  const auto mine = temp / ("codefy-ddp-" + std::to_string(getpid()) + "-ghi789");
  const auto other = temp / "codefy-ddp-notapid";
  for (const auto& d : {dead, alive, mine, other}) {
    std::filesystem::create_directories(d);
    std::ofstream(d / "rank-1.log") << "x";
  }
  EXPECT_EQ(remove_stale_world_dirs(temp), 1u);
  EXPECT_FALSE(std::filesystem::exists(dead));
  for (const auto& d : {alive, mine, other}) EXPECT_TRUE(std::filesystem::exists(d)) << d;
  // A WorldDir is made with this process's pid in its name and goes with it.
  std::filesystem::path made;
  {
    WorldDir w;
    made = w.path();
    EXPECT_EQ(made.filename().string().rfind("codefy-ddp-" + std::to_string(getpid()) + "-", 0), 0u) << made;
    EXPECT_TRUE(std::filesystem::is_directory(made));
  }
  EXPECT_FALSE(std::filesystem::exists(made));
}

}  // namespace
}  // namespace codefy::distributed
