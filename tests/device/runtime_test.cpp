// The run's compute priority: the thread that runs a graph and LibTorch's
// intra-op threads it uses drop to SCHED_IDLE, or to SCHED_BATCH at the nice
// value asked, while the rest of the process keeps its own.
#include "device/runtime.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace codefy::device {
namespace {

/// The nice value and scheduling policy of each of this process's threads, read from /proc (by tid).
struct ThreadPriority {
  int nice = 0;
  int policy = -1;
};
std::map<pid_t, ThreadPriority> thread_priorities() {
  std::map<pid_t, ThreadPriority> threads;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream in(e.path() / "stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    // After "pid (comm)": state is field 3, nice field 19, policy field 41.
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string field;
    ThreadPriority p;
    for (int i = 3; i <= 41 && rest >> field; ++i) {
      if (i == 19) p.nice = std::stoi(field);
      if (i == 41) p.policy = std::stoi(field);
    }
    threads[static_cast<pid_t>(std::stol(e.path().filename().string()))] = p;
  }
  return threads;
}

using Kind = ComputePriority::Kind;

TEST(ComputePriority, ReadsAutoIdleOrANiceValue) {
  EXPECT_EQ(ComputePriority::parse("auto")->kind, Kind::kAuto);
  EXPECT_EQ(ComputePriority::parse("idle")->kind, Kind::kIdle);
  EXPECT_EQ(ComputePriority::parse("7")->kind, Kind::kNice);
  EXPECT_EQ(ComputePriority::parse("7")->niceness, 7);
  EXPECT_EQ(ComputePriority::parse("0")->niceness, 0);
  EXPECT_EQ(ComputePriority{}.kind, Kind::kAuto);
  for (const char* bad : {"", "20", "-1", "low", "idle ", "1.5", "Auto"})
    EXPECT_FALSE(ComputePriority::parse(bad)) << bad;
}

TEST(ComputePriority, AutoIsIdleOnTheCpuAndNiceTenOnACardAndAnAskedOneIsKept) {
  EXPECT_EQ(ComputePriority{}.for_run(/*on_cpu=*/true).kind, Kind::kIdle);
  const ComputePriority card = ComputePriority{}.for_run(/*on_cpu=*/false);
  EXPECT_EQ(card.kind, Kind::kNice);
  EXPECT_EQ(card.niceness, 10);
  for (bool on_cpu : {true, false}) {
    EXPECT_EQ(ComputePriority{Kind::kIdle}.for_run(on_cpu).kind, Kind::kIdle);
    const ComputePriority asked = ComputePriority{Kind::kNice, 3}.for_run(on_cpu);
    EXPECT_EQ(asked.kind, Kind::kNice);
    EXPECT_EQ(asked.niceness, 3);
  }
}

TEST(ComputePriority, TheRunThreadAndItsIntraOpThreadsAreLoweredAndNoOther) {
  at::set_num_threads(2);
  const pid_t main_tid = static_cast<pid_t>(syscall(SYS_gettid));
  int policy = -1;
  bool lowered = false;
  std::map<pid_t, ThreadPriority> threads;  // read while the run thread and its pool live
  std::thread run([&] {
    lowered = lower_compute_priority(ComputePriority{Kind::kNice, 7});
    policy = sched_getscheduler(0);
    threads = thread_priorities();
  });
  run.join();
  EXPECT_TRUE(lowered);
  EXPECT_EQ(policy, SCHED_BATCH);
  // The run thread and the pool's other thread (2 intra-op threads: the
  // caller and one more) are lowered; the main thread is untouched.
  EXPECT_EQ(threads.at(main_tid).nice, getpriority(PRIO_PROCESS, 0));
  EXPECT_EQ(threads.at(main_tid).policy, SCHED_OTHER);
  int lowered_threads = 0;
  for (const auto& [tid, p] : threads)
    if (p.nice == 7 && p.policy == SCHED_BATCH) ++lowered_threads;
  EXPECT_GE(lowered_threads, 2) << "the intra-op thread was not lowered";
}

/// Lowers a run thread to idle and exits: 0 when it and the pool's other
/// intra-op thread are SCHED_IDLE and the main thread is not.
[[noreturn]] void lower_to_idle_and_exit() {
  at::set_num_threads(2);
  const pid_t main_tid = static_cast<pid_t>(syscall(SYS_gettid));
  bool lowered = false;
  std::map<pid_t, ThreadPriority> threads;
  std::thread run([&] {
    lowered = lower_compute_priority(ComputePriority{Kind::kIdle});
    threads = thread_priorities();
  });
  run.join();
  int idle_threads = 0;
  for (const auto& [tid, p] : threads)
    if (p.policy == SCHED_IDLE) ++idle_threads;
  std::exit(lowered && idle_threads >= 2 && threads.at(main_tid).policy == SCHED_OTHER ? 0 : 1);
}

// In a process of its own: a thread cannot leave SCHED_IDLE without
// privilege, and the intra-op pool is the process's.
TEST(ComputePriorityDeathTest, IdleLowersTheRunThreadAndItsIntraOpThreadsAndNoOther) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(lower_to_idle_and_exit(), testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace codefy::device
