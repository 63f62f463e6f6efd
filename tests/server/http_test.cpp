// The HTTP API through a real socket: the server on a free loopback port,
// driven by a Boost.Beast client. Each route's success and error shapes,
// the token/Host/Origin checks, hostile input (oversized body, malformed
// JSON, path traversal, idle and many connections), headless runs with stop,
// and a restart that keeps saved graphs.
#include "fixture.h"

#include <chrono>
#include <future>
#include <thread>

namespace codefy::server {
namespace {

TEST_F(ServerFixture, HealthHasTheStoresQueuesAndVersion) {
  const Reply r = get("/api/health");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["status"], "ok");
  EXPECT_EQ(r.json["nodes_loaded"], nodes::builtin().list().size());
  EXPECT_FALSE(r.json["version"].get<std::string>().empty());
  for (const char* k : {"instances", "entries", "bytes", "max_bytes_each"})
    EXPECT_TRUE(r.json["caches"]["execution_cache"].contains(k)) << k;
  for (const char* k : {"runs", "max_runs", "bytes", "max_bytes"})
    EXPECT_TRUE(r.json["caches"]["run_output_store"].contains(k)) << k;
  for (const char* k : {"modules", "max_modules", "bytes", "max_bytes"})
    EXPECT_TRUE(r.json["caches"]["node_state_store"].contains(k)) << k;
  EXPECT_EQ(r.json["caches"]["run_output_store"]["max_runs"], 20);
  EXPECT_TRUE(r.json["queues"]["cpu"]["running"].is_null());
  EXPECT_EQ(r.json["queues"]["cuda:0"]["queued"], 0);
}

TEST_F(ServerFixture, NodesAndDevices) {
  const Reply all = get("/api/nodes");
  ASSERT_EQ(all.status, 200);
  ASSERT_TRUE(all.json.is_array());
  const Reply one = get("/api/nodes/TrainingLoop");
  EXPECT_EQ(one.status, 200);
  EXPECT_EQ(one.json["node_name"], "TrainingLoop");
  const Reply missing = get("/api/nodes/Wizard");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.json["detail"], "Node 'Wizard' not found");
  const Reply devices = get("/api/system/devices");
  ASSERT_EQ(devices.status, 200);
  EXPECT_EQ(devices.json["devices"][0]["value"], "cpu");
  EXPECT_EQ(devices.json["devices"][0]["label"], "CPU");
  EXPECT_TRUE(devices.json["devices"][0]["total_bytes"].is_number());
}

TEST_F(ServerFixture, TokenHostAndOriginAreChecked) {
  const Reply boot = get("/api/auth/bootstrap");  // the test client is on loopback
  EXPECT_EQ(boot.status, 200);
  EXPECT_EQ(boot.json["token"], "test-token");
  const Reply no_token =
      request(http::verb::post, "/api/graph/validate", toy_graph(1).dump(), {{"X-CodefyUI-Token", ""}});
  EXPECT_EQ(no_token.status, 403);
  EXPECT_EQ(no_token.json["detail"], "Missing or invalid X-CodefyUI-Token header");
  EXPECT_EQ(post("/api/graph/validate", toy_graph(1), {{"X-CodefyUI-Token", "guess"}}).status, 403);
  const Reply rebinding = get("/api/health", {{"Host", "evil.example:80"}});
  EXPECT_EQ(rebinding.status, 421);
  EXPECT_EQ(rebinding.json["detail"], "Misdirected Request (Host not allowed)");
  EXPECT_EQ(get("/api/health", {{"Host", "localhost:" + std::to_string(port_)}}).status, 200);
  EXPECT_EQ(get("/api/health", {{"Origin", "http://evil.example"}}).status, 403);
  EXPECT_EQ(get("/api/health", {{"Origin", "http://127.0.0.1:" + std::to_string(port_)}}).status, 200);
  expect_alive();
}

TEST_F(ServerFixture, ValidateSaveListLoad) {
  const Reply ok = post("/api/graph/validate", toy_graph(1));
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.json["valid"], true);
  nlohmann::json bad = toy_graph(1);
  bad["nodes"][6]["data"]["params"]["epochs"] = 0;
  const Reply invalid = post("/api/graph/validate", bad);
  EXPECT_EQ(invalid.json["valid"], false);
  EXPECT_EQ(invalid.json["issues"][0]["node_id"], "train");
  EXPECT_NE(invalid.json["errors"][0].get<std::string>().find("below the minimum"), std::string::npos);

  nlohmann::json g = toy_graph(1);
  g["name"] = "My toy v2";
  const Reply saved = post("/api/graph/save", g);
  ASSERT_EQ(saved.status, 200) << saved.body;
  EXPECT_EQ(saved.json["file"], "My_toy_v2");
  EXPECT_TRUE(fs::exists(dir_.path() / "graphs" / "My_toy_v2.json"));
  g["overwrite"] = false;
  const Reply exists = post("/api/graph/save", g);
  EXPECT_EQ(exists.status, 409);
  EXPECT_EQ(exists.json["detail"]["error"], "graph_exists");
  const Reply list = get("/api/graph/list");
  ASSERT_EQ(list.json.size(), 1u);
  EXPECT_EQ(list.json[0]["name"], "My toy v2");
  EXPECT_EQ(list.json[0]["file"], "My_toy_v2");
  const double now_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_NEAR(list.json[0]["modified"].get<double>(), now_s, 60.0);  // Unix seconds, as CodefyUI
  const Reply loaded = get("/api/graph/load/My_toy_v2");
  EXPECT_EQ(loaded.status, 200);
  EXPECT_EQ(loaded.json["nodes"].size(), 7u);
  EXPECT_FALSE(loaded.json.contains("overwrite"));
  EXPECT_EQ(get("/api/graph/load/nothing").json["detail"], "Graph 'nothing' not found");
}

TEST_F(ServerFixture, ExamplesAreListedAndLoadedButNothingOutsideThem) {
  const Reply list = get("/api/examples/list");
  ASSERT_EQ(list.status, 200);
  bool toy = false;
  for (const auto& e : list.json) toy = toy || e["path"] == "toy-mlp";
  EXPECT_TRUE(toy) << list.body;
  const Reply resume = get("/api/examples/load?path=resume");  // a folder without graph.json
  EXPECT_EQ(resume.status, 404);
  const Reply loaded = get("/api/examples/load?path=toy-mlp");
  ASSERT_EQ(loaded.status, 200);
  EXPECT_EQ(loaded.json["name"], "Toy MLP");
  for (const std::string bad : {"../src", "..%2Fsrc", "/etc", "toy-mlp/../../README.md"})
    EXPECT_EQ(get("/api/examples/load?path=" + bad).json["detail"], "Invalid path") << bad;
  EXPECT_EQ(get("/api/examples/load?path=nothing").json["detail"], "Example not found: nothing");
  EXPECT_EQ(get("/api/examples/load").status, 422);
}

TEST_F(ServerFixture, HostileInputGetsAnAnswerAndChangesNothing) {
  const Reply malformed = request(http::verb::post, "/api/graph/validate", "{\"nodes\": [");
  EXPECT_EQ(malformed.status, 400);
  EXPECT_NE(malformed.json["detail"].get<std::string>().find("malformed JSON"), std::string::npos);
  EXPECT_EQ(get("/api/nothing/here").status, 404);
  const Reply big = request(http::verb::post, "/api/graph/validate", std::string(2 << 20, 'x'));
  EXPECT_EQ(big.status, 413);
  // Path traversal in every file route: names are sanitized, nothing leaves the data dir.
  for (const std::string name : {"../escape", "..%2F..%2Fescape", "a/b", "/etc/passwd", "..", "%00"}) {
    nlohmann::json g = toy_graph(1);
    g["name"] = name;
    post("/api/graph/save", g);
    EXPECT_NE(get("/api/graph/load/" + name).status, 500) << name;
    EXPECT_NE(post("/api/graph/run/" + name, nlohmann::json::object()).status, 200) << name;
  }
  // Every file written is a graph in graphs/ (besides the run history the server keeps).
  for (const auto& e : fs::recursive_directory_iterator(dir_.path()))
    if (e.is_regular_file() && e.path().filename().string().rfind("runs.db", 0) != 0) {
      EXPECT_EQ(e.path().parent_path(), dir_.path() / "graphs") << e.path();
    }
  EXPECT_FALSE(fs::exists(dir_.path().parent_path() / "escape.json"));
  EXPECT_FALSE(fs::exists(dir_.path() / "escape.json"));
  expect_alive();
}

TEST_F(ServerFixture, IdleAndManyConnectionsDoNotStopIt) {
  net::io_context ioc;
  std::vector<tcp::socket> idle;
  for (int i = 0; i < 200; ++i) {  // 200 clients that connect and send nothing
    idle.emplace_back(ioc);
    idle.back().connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port_));
  }
  std::vector<std::future<int>> busy;
  for (int i = 0; i < 20; ++i)
    busy.push_back(std::async(std::launch::async, [&] { return get("/api/health").status; }));
  for (auto& f : busy) EXPECT_EQ(f.get(), 200);
  // The idle ones are dropped after the read timeout.
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  char c;
  beast::error_code ec;
  idle.front().read_some(net::buffer(&c, 1), ec);
  EXPECT_TRUE(ec) << "an idle connection was kept open past the timeout";
  expect_alive();
}

TEST_F(ServerFixture, HeadlessRunAnswersWithTheEnvelopeAndRunsAreListed) {
  nlohmann::json g = toy_graph(2);
  ASSERT_EQ(post("/api/graph/save", g).status, 200);
  const Reply run = post("/api/graph/run/toy", {{"device", "cpu"}});
  ASSERT_EQ(run.status, 200) << run.body;
  for (const char* k : {"status", "run_id", "graph", "app", "version", "device", "outputs", "error", "timing"})
    EXPECT_TRUE(run.json.contains(k)) << k;
  EXPECT_EQ(run.json["status"], "ok");
  EXPECT_EQ(run.json["device"], "cpu");
  EXPECT_EQ(run.json["outputs"]["train"]["metrics"]["total_epochs_run"], 2);
  const std::string id = run.json["run_id"];
  const Reply info = get("/api/runs/" + id);
  EXPECT_EQ(info.json["status"], "completed");
  EXPECT_EQ(info.json["metrics"]["train"]["total_epochs_run"], 2);
  EXPECT_EQ(get("/api/runs").json["runs"][0]["run_id"], id);
  EXPECT_EQ(get("/api/runs/nope").status, 404);
  const Reply missing = post("/api/graph/run/nope", nlohmann::json::object());
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.json["error"]["code"], "graph_not_found");
}

TEST_F(ServerFixture, StopEndsARunningRun) {
  ASSERT_EQ(post("/api/graph/save", toy_graph(10000, 400)).status, 200);  // minutes of batch-1 SGD
  auto long_run = std::async(std::launch::async, [&] { return post("/api/graph/run/toy", {{"device", "cpu"}}); });
  std::string id;
  for (int i = 0; i < 500 && id.empty(); ++i) {
    const Reply runs = get("/api/runs");
    for (const auto& r : runs.json["runs"])
      if (r["status"] == "running") id = r["run_id"];
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(id.empty()) << get("/api/runs").body;
  EXPECT_EQ(get("/api/health").json["queues"]["cpu"]["running"], id);  // health answers while it trains
  const Reply stop = post("/api/runs/" + id + "/stop", nlohmann::json::object());
  EXPECT_EQ(stop.json["stopping"], true);
  const Reply ended = long_run.get();
  EXPECT_EQ(ended.json["status"], "stopped");
  EXPECT_EQ(ended.json["error"]["code"], "stopped");
  EXPECT_EQ(get("/api/runs/" + id).json["status"], "stopped");
}

TEST_F(ServerFixture, ARestartKeepsSavedGraphsAndEmptiesTheStores) {
  ASSERT_EQ(post("/api/graph/save", toy_graph(1)).status, 200);
  stop();
  start();
  const Reply list = get("/api/graph/list");
  ASSERT_EQ(list.json.size(), 1u);
  EXPECT_EQ(list.json[0]["file"], "toy");
  const Reply health = get("/api/health");
  EXPECT_EQ(health.json["caches"]["run_output_store"]["runs"], 0);
  EXPECT_TRUE(get("/api/runs").json["runs"].empty());
}

TEST_F(ServerFixture, AnExampleRunFromTheEditorReadsFilesBesideIt) {
  // csv-mlp names "flowers.csv" relative to its own folder, as `codefy run` resolves it.
  const Reply example = get("/api/examples/load?path=csv-mlp");
  ASSERT_EQ(example.status, 200);
  auto ws = open_ws();
  nlohmann::json msg = example.json;
  msg["action"] = "execute";
  ws->send(msg);  // without saying which example: the graphs folder has no flowers.csv
  auto messages = ws->until("execution_error");
  EXPECT_NE(messages.back()["error"].get<std::string>().find("flowers.csv"), std::string::npos);
  const auto failed = std::find_if(messages.begin(), messages.end(), [](const nlohmann::json& m) {
    return m.value("node_id", nlohmann::json()) == "data" && m.value("status", "") == "error";
  });
  ASSERT_NE(failed, messages.end());
  EXPECT_EQ((*failed)["field"], "param \"path\"");  // the editor marks the param

  msg["example"] = "csv-mlp";
  ws->send(msg);
  messages = ws->until("execution_complete");
  EXPECT_EQ(statuses(messages).at("data").back(), "completed");

  msg["example"] = "../csv-mlp";
  ws->send(msg);
  EXPECT_EQ(ws->until("execution_error").back()["error"], "Example not found: ../csv-mlp");
}

TEST_F(ServerFixture, WebSocketRunsAGraphWithCodefyUIsMessages) {
  auto ws = open_ws();
  nlohmann::json msg = toy_graph(2);
  msg["action"] = "execute";
  ws->send(msg);
  const auto messages = ws->until("execution_complete");
  EXPECT_EQ(messages.front()["type"], "execution_start");
  const auto s = statuses(messages);
  EXPECT_EQ(s.at("train"), (std::vector<std::string>{"running", "completed"}));
  EXPECT_EQ(s.size(), 7u);
  int epochs = 0;
  for (const auto& m : messages)
    if (m.value("status", "") == "progress" && m["progress"].value("event", "") == "epoch") ++epochs;
  EXPECT_EQ(epochs, 2);
  for (const auto& m : messages)
    if (m.value("node_id", nlohmann::json()) == "train" && m.value("status", "") == "completed") {
      EXPECT_TRUE(m["output_summary"].contains("metrics"));
    }
  // Unknown actions and malformed frames get an answer; the connection stays.
  ws->send({{"action", "dance"}});
  EXPECT_EQ(ws->next()["error"], "Unknown action: dance");
  ws->ws.write(net::buffer(std::string("{not json")));
  EXPECT_EQ(ws->next()["type"], "error");
  ws->send({{"action", "stop"}});  // nothing running: answered at once
  EXPECT_EQ(ws->next()["type"], "execution_stopped");
  expect_alive();
}

TEST_F(ServerFixture, WebSocketReRunsOnlyWhatChanged) {
  auto ws = open_ws();
  nlohmann::json g = toy_graph(1);
  g["nodes"].push_back({{"id", "val"}, {"type", "ToyDataset"}, {"data", {{"params", {{"seed", 3}}}}}});
  g["nodes"].push_back({{"id", "show"}, {"type", "Print"}, {"data", {{"params", nlohmann::json::object()}}}});
  g["edges"].push_back({{"source", "val"},
                        {"sourceHandle", "dataset"},
                        {"target", "show"},
                        {"targetHandle", "value"},
                        {"type", "data"}});
  g["edges"].push_back({{"source", "start"}, {"sourceHandle", "trigger"}, {"target", "show"}, {"type", "trigger"}});
  g["action"] = "execute";
  ws->send(g);
  auto first = statuses(ws->until("execution_complete"));
  EXPECT_EQ(first.at("data").back(), "completed");
  EXPECT_EQ(first.at("val").back(), "completed");
  EXPECT_EQ(get("/api/health").json["caches"]["execution_cache"]["instances"], 1);
  EXPECT_GT(get("/api/health").json["caches"]["execution_cache"]["entries"].get<int>(), 0);

  ws->send(g);  // nothing changed: the pure nodes come from the cache
  auto second = statuses(ws->until("execution_complete"));
  EXPECT_EQ(second.at("data"), (std::vector<std::string>{"cached"}));
  EXPECT_EQ(second.at("val"), (std::vector<std::string>{"cached"}));
  EXPECT_EQ(second.at("loss"), (std::vector<std::string>{"cached"}));
  EXPECT_EQ(second.at("train"), (std::vector<std::string>{"running", "completed"}));  // training is never cached

  g["nodes"][1]["data"]["params"]["n_samples"] = 150;  // edit one node's param
  ws->send(g);
  auto third = statuses(ws->until("execution_complete"));
  EXPECT_EQ(third.at("data"), (std::vector<std::string>{"running", "completed"}));  // it re-runs
  EXPECT_EQ(third.at("val"), (std::vector<std::string>{"cached"}));                 // the rest does not
  EXPECT_EQ(third.at("loss"), (std::vector<std::string>{"cached"}));

  ws->send({{"action", "clear_cache"}});
  EXPECT_EQ(ws->next()["type"], "cache_cleared");
  EXPECT_EQ(get("/api/health").json["caches"]["execution_cache"]["entries"], 0);
  ws->send(g);
  EXPECT_EQ(statuses(ws->until("execution_complete")).at("val").back(), "completed");
}

TEST_F(ServerFixture, WebSocketStopEndsTrainingWithinABatch) {
  auto ws = open_ws();
  nlohmann::json g = toy_graph(10000, 400);
  g["action"] = "execute";
  ws->send(g);
  nlohmann::json m;
  do m = ws->next();
  while (!(m["type"] == "node_status" && m["node_id"] == "train" && m["status"] == "progress"));
  const auto t0 = std::chrono::steady_clock::now();
  ws->send({{"action", "stop"}});
  const auto rest = ws->until("execution_stopped");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  for (const auto& x : rest) EXPECT_NE(x["type"], "execution_complete");
  // The final message goes out from the run's thread just before the queue
  // records the end: the queue is free within moments, not necessarily at once.
  const auto answered = std::chrono::steady_clock::now();
  while (!get("/api/health").json["queues"]["cpu"]["running"].is_null() &&
         std::chrono::steady_clock::now() - answered < std::chrono::seconds(2))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(get("/api/health").json["queues"]["cpu"]["running"].is_null());
}

TEST_F(ServerFixture, AClientThatReadsSlowlyMissesProgressButNeverTheRunsEnd) {
  // A small queue, small socket buffers, and a client that takes one message every 20 ms for 3 s
  // while tiny epochs of 4 samples report hundreds to thousands of times a second.
  stop();
  configure_ = [](ApiOptions&, ServerOptions& so) {
    so.ws_max_queued = 64;
    so.ws_send_buffer = 4096;
  };
  start();
  auto ws = std::make_unique<Ws>();
  ws->ws.next_layer().open(tcp::v4());
  ws->ws.next_layer().set_option(net::socket_base::receive_buffer_size(4096));
  ws->ws.next_layer().connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port_));
  ws->ws.handshake(host(), "/ws/execution?token=test-token");
  nlohmann::json g = toy_graph(1000000, 4);
  g["action"] = "execute";
  ws->send(g);
  size_t epoch_frames = 0, other = 0;
  int64_t last_epoch = 0;
  nlohmann::json m;
  const auto read_one = [&] {
    m = ws->next();
    const bool is_progress = m["type"] == "node_progress" || m.value("status", std::string()) == "progress";
    if (!is_progress) ++other;
    if (is_progress && m["progress"].value("event", "") == "epoch") {
      ++epoch_frames;
      last_epoch = m["progress"]["epoch"];
    }
  };
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3)) {
    read_one();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ws->send({{"action", "stop"}});
  do read_one();
  while (m["type"] != "execution_stopped");
  // Epochs the client never heard of: frames dropped while its queue was full.
  EXPECT_LT(epoch_frames + 10, static_cast<size_t>(last_epoch)) << "no progress was dropped; the test proves nothing";
  EXPECT_GE(other, 3u);  // execution_start, the nodes' statuses, execution_stopped
  expect_alive();
}

TEST_F(ServerFixture, WebSocketHandshakeChecksTokenAndOrigin) {
  // Refused at the handshake with 403, as CodefyUI's server answers (no upgrade, so no close code).
  for (const auto& [query, origin] : std::vector<std::pair<std::string, std::string>>{
           {"", ""}, {"?token=wrong", ""}, {"?token=test-token", "http://evil.example"}}) {
    auto w = std::make_unique<Ws>();
    w->ws.next_layer().connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port_));
    w->ws.set_option(websocket::stream_base::decorator([origin = origin](websocket::request_type& req) {
      if (!origin.empty()) req.set(http::field::origin, origin);
    }));
    websocket::response_type res;
    beast::error_code ec;
    w->ws.handshake(res, host(), "/ws/execution" + query, ec);
    EXPECT_EQ(ec, websocket::error::upgrade_declined) << query << " " << origin;
    EXPECT_EQ(res.result_int(), 403) << query << " " << origin;
  }
  expect_alive();
}

// Hardening (#13): JSON nested 100k deep killed the server (recursive copy and
// destruction); 1e400 answered 500; a 10k-deep body saved as a 200 MB file.
TEST_F(ServerFixture, DeeplyNestedJsonIsRefusedOverHttpAndWebSocketAndTheServerStaysUp) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string body = "{\"name\":\"d\",\"nodes\":[],\"edges\":[],\"x\":" + deep + "}";
  for (const char* route : {"/api/graph/save", "/api/graph/validate"}) {
    const Reply r = request(http::verb::post, route, body);
    EXPECT_EQ(r.status, 400) << route;
    EXPECT_NE(r.json.value("detail", std::string()).find("nested too deeply"), std::string::npos) << r.body;
  }
  auto ws = open_ws();
  ws->ws.write(net::buffer("{\"action\":\"execute\",\"nodes\":[],\"edges\":[],\"x\":" + deep + "}"));
  const nlohmann::json answer = ws->next();
  EXPECT_EQ(answer.value("type", std::string()), "error");
  EXPECT_NE(answer.value("error", std::string()).find("nested too deeply"), std::string::npos) << answer.dump();
  expect_alive();
  EXPECT_FALSE(fs::exists(dir_.path() / "graphs" / "d.json"));
}

TEST_F(ServerFixture, NumberOverflowIsBadInputNotAServerError) {
  const Reply r = request(http::verb::post, "/api/graph/validate", "{\"nodes\":[],\"edges\":[],\"x\":1e400}");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.json.value("detail", std::string()).find("number overflow"), std::string::npos) << r.body;
  expect_alive();
}

TEST_F(ServerFixture, ASavedGraphIsASmallMultipleOfTheBodyThatMadeIt) {
  // 100 levels (within the limit) around 20k numbers: indented, every number would carry 200+ spaces.
  std::string inner;
  for (int i = 0; i < 20000; ++i) inner += (i ? ",1" : "1");
  const std::string body = "{\"name\":\"wide\",\"nodes\":[],\"edges\":[],\"x\":" + std::string(100, '[') + inner +
                           std::string(100, ']') + "}";
  const Reply r = request(http::verb::post, "/api/graph/save", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const auto size = fs::file_size(dir_.path() / "graphs" / "wide.json");
  EXPECT_LE(size, 4 * body.size() + 4096) << "saved " << size << " bytes from a " << body.size() << "-byte body";
  // An ordinary graph is still saved indented, for people to read.
  ASSERT_EQ(post("/api/graph/save", toy_graph(1)).status, 200);
  std::ifstream in(dir_.path() / "graphs" / (toy_graph(1).value("name", std::string()) + ".json"));
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_EQ(first, "{");
  EXPECT_EQ(second.rfind("  \"", 0), 0u) << second;
}

}  // namespace
}  // namespace codefy::server
