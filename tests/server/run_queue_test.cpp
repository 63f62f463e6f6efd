// Per-device run queues: a long run on one device does not delay a
// run on another; runs on one device go in order; stop drops a queued run and
// cancels a running one; positions and the queue summary are right.
#include "server/run_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

namespace codefy::server {
namespace {

/// Polls until `done` or 10 s pass.
template <typename F>
bool eventually(F done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

RunState state(const RunQueues& q, const std::string& id) { return q.info(id).value().state; }

TEST(RunQueues, ARunOnAnotherDeviceIsNotDelayed) {
  RunQueues q({"cpu", "cuda:0", "cuda:1"});
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  const std::string long_run =
      q.submit("cuda:0", [released](const CancellationToken&, const std::string&) { released.wait(); });
  ASSERT_TRUE(eventually([&] { return state(q, long_run) == RunState::kRunning; }));
  const std::string short_cuda1 = q.submit("cuda:1", [](const CancellationToken&, const std::string&) {});
  const std::string short_cpu = q.submit("cpu", [](const CancellationToken&, const std::string&) {});
  EXPECT_TRUE(eventually(
      [&] { return state(q, short_cuda1) == RunState::kCompleted && state(q, short_cpu) == RunState::kCompleted; }));
  EXPECT_EQ(state(q, long_run), RunState::kRunning);  // still going: the short ones did not wait for it
  const auto summary = q.queues_json();
  EXPECT_EQ(summary["cuda:0"]["running"], long_run);
  EXPECT_TRUE(summary["cpu"]["running"].is_null());
  release.set_value();
  EXPECT_TRUE(eventually([&] { return state(q, long_run) == RunState::kCompleted; }));
}

TEST(RunQueues, RunsOnOneDeviceGoInOrderAndReportTheirPosition) {
  RunQueues q({"cuda:0"});
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::mutex m;
  std::vector<int> order;
  auto job = [&](int n, bool block) {
    return [&, n, block, released](const CancellationToken&, const std::string&) {
      if (block) released.wait();
      std::lock_guard<std::mutex> lock(m);
      order.push_back(n);
    };
  };
  const std::string a = q.submit("cuda:0", job(1, true));
  ASSERT_TRUE(eventually([&] { return state(q, a) == RunState::kRunning; }));
  const std::string b = q.submit("cuda:0", job(2, false));
  const std::string c = q.submit("cuda:0", job(3, false));
  EXPECT_EQ(q.info(a)->position, 0u);
  EXPECT_EQ(q.info(b)->position, 1u);  // behind the running one
  EXPECT_EQ(q.info(c)->position, 2u);
  EXPECT_EQ(q.queues_json()["cuda:0"]["queued"], 2);
  release.set_value();
  ASSERT_TRUE(eventually([&] { return state(q, c) == RunState::kCompleted; }));
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_GE(q.info(a)->seconds, 0.0);
  EXPECT_EQ(q.runs().size(), 3u);
}

TEST(RunQueues, StopDropsAQueuedRunAndCancelsARunningOne) {
  RunQueues q({"cpu"});
  std::atomic<bool> second_ran{false};
  const std::string running = q.submit("cpu", [](const CancellationToken& t, const std::string&) {
    while (true) {  // a training loop checking between batches
      t.throw_if_cancelled();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  ASSERT_TRUE(eventually([&] { return state(q, running) == RunState::kRunning; }));
  const std::string queued = q.submit("cpu", [&](const CancellationToken&, const std::string&) { second_ran = true; });
  EXPECT_TRUE(q.stop(queued));
  EXPECT_EQ(state(q, queued), RunState::kStopped);
  EXPECT_TRUE(q.stop(running));
  EXPECT_TRUE(eventually([&] { return state(q, running) == RunState::kStopped; }));
  EXPECT_FALSE(q.stop(running));  // finished: nothing to stop
  EXPECT_FALSE(q.stop("run-999"));
  const std::string after = q.submit("cpu", [](const CancellationToken&, const std::string&) {});
  EXPECT_TRUE(eventually([&] { return state(q, after) == RunState::kCompleted; }));
  EXPECT_FALSE(second_ran);
}

TEST(RunQueues, DroppedRunsAreToldAndAFullQueueRefuses) {
  std::mutex m;
  std::vector<std::string> told;
  const auto tell = [&](const std::string& id) {
    std::lock_guard<std::mutex> lock(m);
    told.push_back(id);
  };
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::string running, a, b;
  {
    RunQueues q({"cpu"}, 2);
    EXPECT_EQ(q.waiting_max(), 2u);
    running = q.submit(
        "cpu", [released](const CancellationToken&, const std::string&) { released.wait(); }, tell);
    ASSERT_TRUE(eventually([&] { return state(q, running) == RunState::kRunning; }));
    a = q.submit(
        "cpu", [](const CancellationToken&, const std::string&) {}, tell);
    b = q.submit(
        "cpu", [](const CancellationToken&, const std::string&) {}, tell);
    try {
      q.submit("cpu", [](const CancellationToken&, const std::string&) {});
      ADD_FAILURE() << "a third waiting run was queued";
    } catch (const QueueFull& e) {
      EXPECT_EQ(e.queue(), "cpu");
      EXPECT_EQ(e.waiting(), 2u);
      EXPECT_EQ(e.limit(), 2u);
      EXPECT_NE(std::string(e.what()).find("2 runs are waiting"), std::string::npos) << e.what();
    }
    EXPECT_EQ(q.queues_json()["cpu"]["max_queued"], 2);
    EXPECT_FALSE(q.drop_queued(running));  // running: it goes on
    EXPECT_TRUE(q.drop_queued(a));
    EXPECT_FALSE(q.drop_queued(a));  // once
    EXPECT_EQ(state(q, a), RunState::kStopped);
    EXPECT_EQ(told, std::vector<std::string>{a});
    // close drops b at once, then waits for the running one, released meanwhile.
    std::thread releaser([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      release.set_value();
    });
    q.close();  // b never ran: it is told too (the running one, which ended its own way, is not)
    releaser.join();
  }
  EXPECT_EQ(told, (std::vector<std::string>{a, b}));
}

TEST(RunQueues, FailuresAreRecordedAndUnknownDevicesRefused) {
  RunQueues q({"cpu"});
  const std::string bad =
      q.submit("cpu", [](const CancellationToken&, const std::string&) { throw std::runtime_error("boom"); });
  ASSERT_TRUE(eventually([&] { return state(q, bad) == RunState::kFailed; }));
  EXPECT_EQ(q.info(bad)->error, "boom");
  EXPECT_THROW(q.submit("cuda:7", [](const CancellationToken&, const std::string&) {}), std::invalid_argument);
  EXPECT_FALSE(q.info("nope").has_value());
}

TEST(RunQueues, ShutdownStopsTheRunningJobAndNeverStartsQueuedOnes) {
  std::atomic<bool> queued_ran{false}, saw_cancel{false};
  {
    RunQueues q({"cpu"});
    const std::string r = q.submit("cpu", [&](const CancellationToken& t, const std::string&) {
      while (!t.cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      saw_cancel = true;
      throw Cancelled();
    });
    ASSERT_TRUE(eventually([&] { return state(q, r) == RunState::kRunning; }));
    q.submit("cpu", [&](const CancellationToken&, const std::string&) { queued_ran = true; });
  }  // destructor: stop, join
  EXPECT_TRUE(saw_cancel);
  EXPECT_FALSE(queued_ran);
}

TEST(Workers, SpecsGroupDevicesAndTheRestGetOneEach) {
  const std::vector<std::string> available = {"cpu", "cuda:0", "cuda:1", "cuda:2"};
  const auto w = make_workers({"pair=cuda:0,cuda:1"}, available);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].name, "pair");
  EXPECT_EQ(w[0].devices, (std::vector<std::string>{"cuda:0", "cuda:1"}));
  EXPECT_EQ(w[1].name, "cpu");
  EXPECT_EQ(w[2].devices, (std::vector<std::string>{"cuda:2"}));
  EXPECT_EQ(make_workers({}, available).size(), 4u);
  for (const char* bad : {"nodevices", "=cuda:0", "x=", "x=cuda:7", "x=cuda:0,cuda:0"}) {
    try {
      make_workers({bad}, available);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();  // the message names the spec
    }
  }
  EXPECT_THROW(make_workers({"a=cuda:0", "b=cuda:0"}, available), std::invalid_argument);
  EXPECT_THROW(make_workers({"a=cuda:0", "a=cuda:1"}, available), std::invalid_argument);
  EXPECT_THROW(make_workers({"cpu=cuda:0"}, available), std::invalid_argument);  // cpu's own worker is named cpu
}

TEST(Workers, AWorkerRunsOneRunAtATimeOnItsWholeDeviceSet) {
  RunQueues q(make_workers({"pair=cuda:0,cuda:1"}, {"cpu", "cuda:0", "cuda:1"}));
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  const std::string first =
      q.submit("cuda:0", [released](const CancellationToken&, const std::string&) { released.wait(); });
  ASSERT_TRUE(eventually([&] { return state(q, first) == RunState::kRunning; }));
  const std::string second = q.submit("cuda:1", [](const CancellationToken&, const std::string&) {});
  const std::string cpu = q.submit("cpu", [](const CancellationToken&, const std::string&) {});
  EXPECT_TRUE(eventually([&] { return state(q, cpu) == RunState::kCompleted; }));  // another worker: not delayed
  EXPECT_EQ(state(q, second), RunState::kQueued);                                  // same worker: waits
  EXPECT_EQ(q.info(second)->position, 1u);
  EXPECT_EQ(q.info(second)->queue, "pair");
  EXPECT_EQ(q.info(second)->device, "cuda:1");
  const auto summary = q.queues_json();
  EXPECT_EQ(summary["pair"]["devices"], (std::vector<std::string>{"cuda:0", "cuda:1"}));
  EXPECT_EQ(summary["pair"]["queued"], 1);
  release.set_value();
  EXPECT_TRUE(eventually([&] { return state(q, second) == RunState::kCompleted; }));
  EXPECT_THROW(q.submit("cuda:5", [](const CancellationToken&, const std::string&) {}), std::invalid_argument);
}

}  // namespace
}  // namespace codefy::server
