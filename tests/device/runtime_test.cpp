// The run's compute priority: the thread that runs a graph and LibTorch's
// intra-op threads it uses drop to SCHED_BATCH at the nice value asked,
// while the rest of the process keeps its own.
#include "device/runtime.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace codefy::device {
namespace {

/// The nice value of each of this process's threads, read from /proc (by tid).
std::map<pid_t, int> thread_nice_values() {
  std::map<pid_t, int> nice;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream in(e.path() / "stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    // After "pid (comm)": state is field 3, nice field 19.
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 19 && rest >> field; ++i)
      if (i == 19) nice[static_cast<pid_t>(std::stol(e.path().filename().string()))] = std::stoi(field);
  }
  return nice;
}

TEST(ComputePriority, TheRunThreadAndItsIntraOpThreadsAreLoweredAndNoOther) {
  at::set_num_threads(2);
  const pid_t main_tid = static_cast<pid_t>(syscall(SYS_gettid));
  int policy = -1;
  bool lowered = false;
  std::map<pid_t, int> nice;  // read while the run thread and its pool live
  std::thread run([&] {
    lowered = lower_compute_priority(7);
    policy = sched_getscheduler(0);
    nice = thread_nice_values();
  });
  run.join();
  EXPECT_TRUE(lowered);
  EXPECT_EQ(policy, SCHED_BATCH);
  // The run thread and the pool's other thread (2 intra-op threads: the
  // caller and one more) are lowered; the main thread is untouched.
  EXPECT_EQ(nice.at(main_tid), getpriority(PRIO_PROCESS, 0));
  int lowered_threads = 0;
  for (const auto& [tid, n] : nice)
    if (n == 7) ++lowered_threads;
  EXPECT_GE(lowered_threads, 2) << "the intra-op thread was not lowered";
}

}  // namespace
}  // namespace codefy::device
