// Data-parallel runs in the server: a ddp graph queued to a worker with
// several CPU processes (`cpu2=cpu*2`) runs rank 0 in the server and rank 1
// as a child process of the codefy program, lands on the weights of one
// process with the combined batch, and ends every rank on a fault or a Stop.
#include "../common/test_support.h"
#include "device/memory.h"
#include "fixture.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <thread>

namespace codefy::server {
namespace {

using Clock = std::chrono::steady_clock;

/// The processes whose parent is this one (the server's ranks).
std::vector<pid_t> children() {
  std::vector<pid_t> pids;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // pid (comm) state ppid ...: comm may hold spaces, so read after the last ')'.
    std::istringstream rest(line.substr(line.rfind(')') + 1));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == getpid() && state != "Z") pids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return pids;
}

/// Waits up to `limit` for this process to have no children; whether it has none.
bool no_children_within(std::chrono::seconds limit) {
  const auto until = Clock::now() + limit;
  while (!children().empty() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return children().empty();
}

/// A ddp training graph saving its weights to `weights`: `hidden` units, SGD
/// with momentum, shuffled batches.
nlohmann::json ddp_graph(int64_t batch, int64_t epochs, int64_t samples, const fs::path& weights,
                         const std::string& strategy = "ddp", int64_t hidden = 16) {
  nlohmann::json g = testing::mlp_training_graph(
      "ddp", 2, hidden, 3, {{"n_samples", samples}, {"n_features", 2}, {"n_classes", 3}, {"seed", 5}},
      {{"batch_size", batch}, {"shuffle", true}}, {{"type", "SGD"}, {"lr", 0.1}, {"momentum", 0.9}},
      {{"epochs", epochs}, {"strategy", strategy}, {"device", "cpu"}});
  g["nodes"].push_back({{"id", "save"}, {"type", "ModelSaver"}, {"data", {{"params", {{"path", weights.string()}}}}}});
  g["edges"].push_back({{"source", "train"},
                        {"sourceHandle", "model"},
                        {"target", "save"},
                        {"targetHandle", "model"},
                        {"type", "data"}});
  return g;
}

class ServerDdp : public ServerFixture {
 protected:
  void SetUp() override {
    ASSERT_TRUE(device::install_counting_allocator());  // as codefy does at start-up: CPU bytes are counted
    configure_ = [](ApiOptions& o, ServerOptions&) {
      o.workers = {{"cpu2", {"cpu"}, 2}};
      o.runner.program = CODEFY_BINARY;  // this test program is not codefy
      o.runner.dist_timeout = std::chrono::seconds(15);
    };
    ServerFixture::SetUp();
  }

  /// Starts the saved graph "ddp" headless on another thread; its answer comes later.
  std::future<Reply> start_run() {
    return std::async(std::launch::async, [this] { return post("/api/graph/run/ddp", {{"device", "cpu"}}); });
  }

  /// The rank started for the running run (the one child), once it trains.
  pid_t running_rank() {
    const auto until = Clock::now() + std::chrono::seconds(30);
    while (Clock::now() < until) {
      const Reply runs = get("/api/runs");
      const auto kids = children();
      if (kids.size() == 1 && !runs.json["runs"].empty() && runs.json["runs"].back()["status"] == "running") {
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // past the rendezvous, into the epochs
        return kids.front();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "no rank process appeared";
    return -1;
  }
};

// R-DDP-1: the worker's two CPU processes train one model.
TEST_F(ServerDdp, TwoCpuProcessesLandOnTheWeightsOfOneProcessWithTheCombinedBatch) {
  const int64_t epochs = 3, samples = 96;
  ASSERT_EQ(post("/api/graph/save", ddp_graph(16, epochs, samples, dir_.path() / "two.pt")).status, 200);
  const Reply run = post("/api/graph/run/ddp", {{"device", "cpu"}});
  ASSERT_EQ(run.status, 200) << run.body;
  const nlohmann::json m = run.json["outputs"]["train"]["metrics"];
  EXPECT_EQ(m["strategy"], "ddp") << run.body;
  EXPECT_EQ(m["world_size"], 2);
  EXPECT_EQ(m["backend"], "gloo");
  // Issue #34 item 2: the hosted ranks meet through a file, not a port the
  // server would open on every interface; its folder goes with the run.
  EXPECT_EQ(m["rendezvous"]["store"], "file") << m["rendezvous"];
  EXPECT_FALSE(fs::exists(fs::path(m["rendezvous"].value("path", "/")).parent_path()));
  EXPECT_EQ(m["effective_batch_size"], 32);
  EXPECT_EQ(m["ddp"]["gradient_reductions"], epochs * samples / 32);  // one all-reduce per update
  // Peak memory: each rank's, and per device the largest of them.
  ASSERT_EQ(m["peak_memory_bytes_per_rank"].size(), 2u) << m.dump();
  const int64_t cpu0 = m["peak_memory_bytes_per_rank"][0]["cpu"], cpu1 = m["peak_memory_bytes_per_rank"][1]["cpu"];
  EXPECT_GT(cpu0, 0);
  EXPECT_GT(cpu1, 0);
  EXPECT_EQ(m["peak_memory_bytes"]["cpu"], std::max(cpu0, cpu1));
  EXPECT_TRUE(no_children_within(std::chrono::seconds(5))) << "a rank process was left running";

  // The reference: one process with the combined batch, run by the codefy program.
  testing::TempDir ref("codefy-ddp-ref");
  const fs::path graph = ref.path() / "one.json";
  std::ofstream(graph) << ddp_graph(32, epochs, samples, ref.path() / "one.pt", "single").dump();
  const auto one = testing::run_codefy("run " + graph.string() + " --threads 1");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_LE(testing::weight_difference(dir_.path() / "two.pt", ref.path() / "one.pt"), 1e-5);

  // The queue shows the worker's ranks.
  EXPECT_EQ(get("/api/health").json["queues"]["cpu2"]["ddp_ranks"], 2) << get("/api/health").body;
}

// R-DDP-5: a rank killed mid-run fails the run, naming it, within the timeout.
TEST_F(ServerDdp, ARankKilledMidRunFailsTheRunNamingIt) {
  ASSERT_EQ(post("/api/graph/save", ddp_graph(4, 200, 4000, dir_.path() / "w.pt")).status, 200);
  auto answer = start_run();
  const pid_t rank1 = running_rank();
  ASSERT_GT(rank1, 0);
  const auto killed_at = Clock::now();
  kill(rank1, SIGKILL);
  ASSERT_EQ(answer.wait_for(std::chrono::seconds(25)), std::future_status::ready) << "the run did not end";
  EXPECT_LT(Clock::now() - killed_at, std::chrono::seconds(20));
  const Reply run = answer.get();
  EXPECT_EQ(run.status, 500) << run.body;
  EXPECT_EQ(run.json["status"], "error");
  EXPECT_NE(run.json["error"]["message"].get<std::string>().find("rank 1"), std::string::npos) << run.body;
  EXPECT_TRUE(no_children_within(std::chrono::seconds(5)));
  EXPECT_FALSE(fs::exists(dir_.path() / "w.pt")) << "a failed run saved weights";
  expect_alive();
}

// R-DDP-5: the server's stop route stops every rank.
TEST_F(ServerDdp, StopEndsEveryRank) {
  ASSERT_EQ(post("/api/graph/save", ddp_graph(4, 200, 4000, dir_.path() / "w.pt")).status, 200);
  auto answer = start_run();
  ASSERT_GT(running_rank(), 0);
  const std::string id = get("/api/runs").json["runs"].back()["run_id"];
  ASSERT_EQ(post("/api/runs/" + id + "/stop", nlohmann::json::object()).status, 200);
  ASSERT_EQ(answer.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "the run did not stop";
  const Reply run = answer.get();
  EXPECT_EQ(run.json["status"], "stopped") << run.body;
  EXPECT_TRUE(no_children_within(std::chrono::seconds(5))) << "a rank outlived the Stop";
  expect_alive();
}

// R-DDP-5: an out-of-memory on rank 1 alone is reported as rank 1's, naming its node.
TEST_F(ServerDdp, OutOfMemoryOnOneRankIsThatRanksError) {
  // The ranks the server starts read the CPU budget from the environment; the
  // server's own rank 0 has none.
  ASSERT_EQ(setenv("CODEFYUI_CPU_MEMORY_BUDGET_MB", "1", 1), 0);
  ASSERT_EQ(post("/api/graph/save", ddp_graph(16, 2, 96, dir_.path() / "w.pt", "ddp", 1 << 17)).status, 200);
  const Reply run = post("/api/graph/run/ddp", {{"device", "cpu"}});
  unsetenv("CODEFYUI_CPU_MEMORY_BUDGET_MB");
  EXPECT_EQ(run.status, 500) << run.body;
  EXPECT_EQ(run.json["error"]["code"], "out_of_memory") << run.body;
  const std::string message = run.json["error"]["message"];
  EXPECT_EQ(message.rfind("rank 1: ", 0), 0u) << message;
  EXPECT_EQ(run.json["error"]["node_id"], "mlp") << run.body;  // where rank 1 ran out: building the model
  EXPECT_NE(message.find("memory budget exceeded"), std::string::npos) << message;
  EXPECT_TRUE(no_children_within(std::chrono::seconds(5)));
  expect_alive();
}

// R-DDP-6: a worker without a process count trains a ddp graph in one process
// and says how to give it several.
TEST_F(ServerFixture, DdpOnAWorkerOfOneProcessFallsBackWithAWarning) {
  ASSERT_EQ(post("/api/graph/save", ddp_graph(16, 1, 32, dir_.path() / "w.pt")).status, 200);
  const Reply run = post("/api/graph/run/ddp", {{"device", "cpu"}});
  ASSERT_EQ(run.status, 200) << run.body;
  EXPECT_EQ(run.json["outputs"]["train"]["metrics"]["strategy"], "single");
  EXPECT_NE(run.json["warnings"].dump().find("cpu2=cpu*2"), std::string::npos) << run.body;
  EXPECT_TRUE(children().empty());
}

TEST(Workers, TheCpuTakesAProcessCountForDdpRuns) {
  const auto w = make_workers({"cpu2=cpu*2"}, {"cpu", "cuda:0"});
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].name, "cpu2");
  EXPECT_EQ(w[0].rank_devices(), (std::vector<std::string>{"cpu", "cpu"}));
  EXPECT_EQ(w[1].rank_devices(), (std::vector<std::string>{"cuda:0"}));  // one card: ddp runs single
  const auto cards = make_workers({"gpus=cuda:0,cuda:1"}, {"cpu", "cuda:0", "cuda:1"});
  EXPECT_EQ(cards[0].rank_devices(), (std::vector<std::string>{"cuda:0", "cuda:1"}));
  for (const char* bad : {"x=cuda:0*2", "x=cpu*0", "x=cpu*", "x=cpu*two"}) {
    try {
      make_workers({bad}, {"cpu", "cuda:0"});
      ADD_FAILURE() << bad << " was taken";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace codefy::server
