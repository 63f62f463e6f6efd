// Hardening (#13) of the run paths, each through the real server: items 10
// (exactly one final WebSocket message per run, in order), 11 (headless runs
// whose clients left are dropped from their queue; queues are bounded; a
// stopped queued run's POST is answered) and 12 (temporaries of interrupted
// writes are removed at start).
#include "fixture.h"
#include "server/runs.h"
#include "util/atomic_file.h"

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace codefy::server {
namespace {

/// Polls until `done` or `limit` passes.
template <typename F>
bool eventually(F done, std::chrono::milliseconds limit = std::chrono::milliseconds(10000)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

/// Shuts a socket down once `limit` passes (unless destroyed before), so a
/// blocking read of a message the server never sends fails the test instead
/// of hanging it (asio's blocking reads ignore SO_RCVTIMEO).
class Deadline {
 public:
  Deadline(int fd, std::chrono::seconds limit)
      : thread_([this, fd, limit] {
          std::unique_lock<std::mutex> lock(mutex_);
          if (!wake_.wait_for(lock, limit, [this] { return done_; })) ::shutdown(fd, SHUT_RDWR);
        }) {}
  ~Deadline() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

class RunHardening : public ServerFixture {
 protected:
  /// A POST on a connection of its own, its answer read later (or never: the client leaves).
  struct PendingPost {
    net::io_context ioc;
    beast::tcp_stream stream{ioc};
    std::unique_ptr<Deadline> deadline;
    Reply answer() {
      beast::flat_buffer buffer;
      http::response_parser<http::string_body> parser;
      beast::error_code ec;
      http::read(stream, buffer, parser, ec);
      Reply r;
      if (ec && !parser.is_header_done()) {
        r.status = -1;
        r.body = ec.message();
        return r;
      }
      r.status = parser.get().result_int();
      r.body = parser.get().body();
      r.json = nlohmann::json::parse(r.body, nullptr, false);
      return r;
    }
    void leave() {
      beast::error_code ec;
      stream.socket().close(ec);
    }
  };
  std::unique_ptr<PendingPost> post_pending(const std::string& target, const nlohmann::json& body) {
    auto p = std::make_unique<PendingPost>();
    p->stream.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port_));
    p->deadline = std::make_unique<Deadline>(p->stream.socket().native_handle(), std::chrono::seconds(60));
    http::request<http::string_body> req{http::verb::post, target, 11};
    req.set(http::field::host, host());
    req.set("X-CodefyUI-Token", "test-token");
    req.body() = body.dump();
    req.prepare_payload();
    http::write(p->stream, req);
    return p;
  }
  /// The ids of runs in `state` (queued, running, ...), oldest first.
  std::vector<std::string> runs_in(const std::string& state) {
    std::vector<std::string> ids;
    const Reply runs = get("/api/runs");  // kept: the loop reads into it
    for (const auto& r : runs.json["runs"])
      if (r["status"] == state) ids.push_back(r["run_id"]);
    return ids;
  }
  /// Saves a graph that trains for minutes (batch-1 SGD) and starts it; returns its pending POST once it runs.
  std::unique_ptr<PendingPost> start_long_run(std::string& id) {
    EXPECT_EQ(post("/api/graph/save", toy_graph(10000, 400)).status, 200);
    auto p = post_pending("/api/graph/run/toy", {{"device", "cpu"}});
    EXPECT_TRUE(eventually([&] { return runs_in("running").size() == 1; })) << get("/api/runs").body;
    const auto running = runs_in("running");
    id = running.empty() ? "" : running[0];
    return p;
  }
};

// Item 10: 1000 executes on one WebSocket got 965 final messages: a run
// replaced while running never answered. Now every execute gets exactly one
// final message, in order, and a replaced run sends nothing after it.
TEST_F(RunHardening, Item10EveryExecuteOnOneWebSocketGetsExactlyOneFinalMessageInOrder) {
  constexpr int kRuns = 1000;
  auto ws = open_ws();
  const Deadline deadline(ws->ws.next_layer().native_handle(), std::chrono::seconds(120));
  nlohmann::json g = toy_graph(1, 100);  // a few ms of training: many are replaced while running
  g["action"] = "execute";
  g["changed_nodes"] = {"data", "loader", "mlp", "loss", "opt", "train"};  // real work, never cached
  for (int i = 0; i < kRuns; ++i) {
    g["run_id"] = "r" + std::to_string(i);
    ws->send(g);
  }
  // Cut the stream at each final message: segment i holds run i's events
  // and ends with its final message.
  std::map<std::string, int> finals;
  int started = 0;
  for (int i = 0; i < kRuns; ++i) {
    bool saw_start = false;
    while (true) {
      nlohmann::json m;
      ASSERT_NO_THROW(m = ws->next()) << "no final message for run r" << i << " (" << i << " finals so far)";
      const std::string type = m.value("type", std::string());
      if (type == "execution_complete" || type == "execution_error" || type == "execution_stopped") {
        ++finals[type];
        break;
      }
      if (type == "execution_start") {
        EXPECT_EQ(m["run_id"], "r" + std::to_string(i)) << "an event of another run in run r" << i << "'s place";
        EXPECT_FALSE(saw_start);
        saw_start = true;
        ++started;
      } else if (type == "node_status" || type == "node_progress") {
        EXPECT_TRUE(saw_start) << "a node event outside a started run: " << m.dump();
      }
    }
  }
  // Nothing more for those runs: the next message answers the next action.
  ws->send({{"action", "clear_cache"}});
  EXPECT_EQ(ws->next()["type"], "cache_cleared");
  EXPECT_EQ(finals["execution_error"], 0);
  EXPECT_EQ(finals["execution_complete"] + finals["execution_stopped"], kRuns);
  EXPECT_GE(finals["execution_complete"], 1);  // the last one, at least, ran to its end
  std::printf("[item 10] %d runs: %d started, %d completed, %d stopped\n", kRuns, started, finals["execution_complete"],
              finals["execution_stopped"]);
  expect_alive();
}

// Item 10, the stop path kept: an explicit stop of a running run still
// answers after the interrupted node, once; a following execute runs.
TEST_F(RunHardening, Item10AStopThenAnExecuteAnswersEachRunOnce) {
  auto ws = open_ws();
  const Deadline deadline(ws->ws.next_layer().native_handle(), std::chrono::seconds(60));
  nlohmann::json g = toy_graph(10000, 400);
  g["action"] = "execute";
  ws->send(g);
  nlohmann::json m;
  do m = ws->next();
  while (m["type"] != "node_progress");
  ws->send({{"action", "stop"}});
  g = toy_graph(1, 20);
  g["action"] = "execute";
  ws->send(g);  // may replace the stopping run before it has unwound: it is answered once either way
  const auto first = ws->until("execution_stopped");
  for (const auto& x : first) EXPECT_NE(x["type"], "execution_complete");
  const auto second = ws->until("execution_complete");
  for (const auto& x : second) EXPECT_NE(x["type"], "execution_stopped") << "a second final message for run 1";
  ws->send({{"action", "clear_cache"}});
  EXPECT_EQ(ws->next()["type"], "cache_cleared");
}

// Item 11: 100 headless runs whose clients left after 3 s stayed queued and
// all ran. A queued run whose client closes is dropped (a running one goes
// on); stopping a queued run answers its POST with the envelope.
TEST_F(RunHardening, Item11QueuedHeadlessRunsWhoseClientsLeftNeverRun) {
  constexpr int kLeavers = 30;
  std::string long_id;
  auto long_run = start_long_run(long_id);
  auto stays = post_pending("/api/graph/run/toy", {{"device", "cpu"}});  // a client that waits
  ASSERT_TRUE(eventually([&] { return runs_in("queued").size() == 1; })) << get("/api/runs").body;
  const std::string stays_id = runs_in("queued").at(0);
  std::vector<std::unique_ptr<PendingPost>> leavers;
  for (int i = 0; i < kLeavers; ++i) leavers.push_back(post_pending("/api/graph/run/toy", {{"device", "cpu"}}));
  ASSERT_TRUE(eventually([&] { return runs_in("queued").size() == kLeavers + 1; })) << get("/api/runs").body;
  for (auto& p : leavers) p->leave();
  EXPECT_TRUE(eventually([&] { return runs_in("queued").size() == 1; }, std::chrono::milliseconds(3000)))
      << "runs of clients that left are still queued: " << get("/api/runs").body;
  EXPECT_EQ(runs_in("stopped").size(), size_t{kLeavers});
  EXPECT_EQ(get("/api/health").json["queues"]["cpu"]["queued"], 1);
  EXPECT_EQ(get("/api/health").json["queues"]["cpu"]["running"], long_id);  // the running one goes on
  expect_alive();

  // Stopping the queued run answers its POST (it was closed with no answer at all).
  const Reply stop = post("/api/runs/" + stays_id + "/stop", nlohmann::json::object());
  EXPECT_EQ(stop.json["stopping"], true);
  const Reply answered = stays->answer();
  ASSERT_EQ(answered.status, 200) << answered.body;
  EXPECT_EQ(answered.json["status"], "stopped");
  EXPECT_EQ(answered.json["run_id"], stays_id);
  EXPECT_EQ(answered.json["error"]["code"], "stopped");
  EXPECT_TRUE(answered.json.contains("timing"));
  EXPECT_EQ(get("/api/runs/" + stays_id).json["status"], "stopped");

  EXPECT_EQ(post("/api/runs/" + long_id + "/stop", nlohmann::json::object()).json["stopping"], true);
  EXPECT_EQ(long_run->answer().json["status"], "stopped");
  EXPECT_TRUE(runs_in("completed").empty()) << "a run of a client that left ran: " << get("/api/runs").body;
  expect_alive();
}

// Item 11: each queue is bounded: one run past the limit is refused with 503
// and the queue's length, and the server goes on.
TEST_F(RunHardening, Item11AFullQueueAnswers503WithItsLength) {
  stop();
  configure_ = [](ApiOptions& o, ServerOptions&) { o.max_queued_runs = 3; };
  start();
  EXPECT_EQ(get("/api/health").json["queues"]["cpu"]["max_queued"], 3);
  std::string long_id;
  auto long_run = start_long_run(long_id);
  std::vector<std::unique_ptr<PendingPost>> waiting;
  for (int i = 0; i < 3; ++i) waiting.push_back(post_pending("/api/graph/run/toy", {{"device", "cpu"}}));
  ASSERT_TRUE(eventually([&] { return runs_in("queued").size() == 3; }));
  const Reply full = post("/api/graph/run/toy", {{"device", "cpu"}});
  EXPECT_EQ(full.status, 503) << full.body;
  EXPECT_EQ(full.json["status"], "error");
  EXPECT_EQ(full.json["error"]["code"], "queue_full");
  EXPECT_EQ(full.json["error"]["details"]["queued"], 3);
  EXPECT_EQ(full.json["error"]["details"]["max_queued"], 3);
  EXPECT_NE(full.json["error"]["message"].get<std::string>().find("3 runs are waiting"), std::string::npos)
      << full.body;
  EXPECT_EQ(runs_in("queued").size(), 3u);  // the refused one was never queued
  // Another queue is not affected.
  EXPECT_EQ(get("/api/health").json["queues"]["cuda:0"]["queued"], 0);
  expect_alive();
  // Stopping the queued ones answers each POST "stopped".
  for (const auto& id : runs_in("queued")) post("/api/runs/" + id + "/stop", nlohmann::json::object());
  for (auto& p : waiting) EXPECT_EQ(p->answer().json["status"], "stopped");
  post("/api/runs/" + long_id + "/stop", nlohmann::json::object());
  EXPECT_EQ(long_run->answer().json["status"], "stopped");
  // Room again.
  ASSERT_EQ(post("/api/graph/save", toy_graph(1, 20)).status, 200);
  EXPECT_EQ(post("/api/graph/run/toy", {{"device", "cpu"}}).json["status"], "ok");
}

// Item 12: saves and uploads interrupted by a crash left `*.tmp.*` files for
// good (no list shows them). At start the server removes those whose writer
// is gone (or that are over a day old), wherever under the data folder.
TEST_F(RunHardening, Item12StaleTemporariesAreRemovedAtStart) {
  ASSERT_EQ(post("/api/graph/save", toy_graph(1, 20)).status, 200);
  stop();
  const fs::path data = dir_.path();
  const std::string mine = std::to_string(::getpid());
  const std::string dead = "999999999";  // above any pid_max: no such process
  const auto plant = [](const fs::path& p, size_t bytes) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << std::string(bytes, 'x');
  };
  const std::vector<fs::path> stale = {
      data / "graphs" / ("toy.json.tmp." + dead + ".0"),      // a save
      data / "models" / ("big.pt.tmp." + dead + ".3"),        // an upload
      data / ("session.token.tmp." + dead + ".1"),            // the token
      data / "runs" / "a" / ("model.pt.tmp." + dead + ".7"),  // a node's output, deeper down
      data / "graphs" / ("old.json.tmp." + mine + ".9"),      // a live pid, but two days old
  };
  for (const auto& p : stale) plant(p, 1 << 20);
  fs::last_write_time(stale.back(), fs::file_time_type::clock::now() - std::chrono::hours(48));
  const std::vector<fs::path> kept = {
      data / "graphs" / ("live.json.tmp." + mine + ".5"),  // a write in progress of a live process
      data / "graphs" / "notes.tmp.txt",                   // look-alikes that are not temporaries
      data / "graphs" / "x.tmp.12",
      data / "models" / ("model.tmp." + dead + ".pt"),
  };
  for (const auto& p : kept) plant(p, 10);
  start();
  for (const auto& p : stale) EXPECT_FALSE(fs::exists(p)) << p;
  for (const auto& p : kept) EXPECT_TRUE(fs::exists(p)) << p;
  EXPECT_EQ(api_->stale_temp_files_removed(), stale.size());
  EXPECT_TRUE(fs::exists(data / "graphs" / "toy.json"));  // the saved graph itself stays
  uintmax_t temp_bytes = 0;                               // what is left of temporaries: only the live write's
  for (const auto& e : fs::recursive_directory_iterator(data))
    if (e.is_regular_file() && util::is_atomic_temp_name(e.path().filename().string())) temp_bytes += e.file_size();
  EXPECT_EQ(temp_bytes, 10u);
  expect_alive();
  EXPECT_EQ(get("/api/graph/load/toy").status, 200);
}

}  // namespace
}  // namespace codefy::server
