// The headless HTTP run and the editor's WebSocket run start through one
// start_run: the same graph ends the same way on both (warnings, the error
// and the node to blame, the queue's record), and both keep outputs for the
// inspector alike.
#include "fixture.h"

#include <chrono>
#include <thread>

namespace codefy::server {
namespace {

/// A graph that warns, then fails: TrainingLoop warns that ddp runs in one
/// process, then its model (3 inputs) meets the data (2 features).
nlohmann::json warns_then_fails() {
  return testing::mlp_training_graph("toy", 3, 8, 2, {{"n_samples", 16}}, {{"batch_size", 4}},
                                     {{"type", "SGD"}, {"lr", 0.05}},
                                     {{"epochs", 1}, {"strategy", "ddp"}, {"device", "cpu"}});
}

TEST_F(ServerFixture, HttpAndWebSocketRunsFailAlike) {
  const nlohmann::json g = warns_then_fails();
  ASSERT_EQ(post("/api/graph/save", g).status, 200);
  const Reply http_run = post("/api/graph/run/toy", {{"device", "cpu"}});
  ASSERT_EQ(http_run.status, 500) << http_run.body;
  EXPECT_EQ(http_run.json["status"], "error");
  EXPECT_EQ(http_run.json["error"]["code"], "execution_error");
  EXPECT_EQ(http_run.json["error"]["node_id"], "train");
  ASSERT_TRUE(http_run.json["error"]["message"].is_string());
  ASSERT_FALSE(http_run.json["warnings"].empty()) << http_run.body;

  auto ws = open_ws();
  nlohmann::json msg = g;
  msg["action"] = "execute";
  msg["device"] = "cpu";
  ws->send(msg);
  const auto messages = ws->until("execution_error");
  std::vector<std::string> ws_warnings;  // as the headless run lists them: "node_id: message"
  for (const auto& m : messages)
    if (m["type"] == "warning")
      ws_warnings.push_back(m["node_id"].get<std::string>() + ": " + m["message"].get<std::string>());
  EXPECT_EQ(nlohmann::json(ws_warnings), http_run.json["warnings"]);
  EXPECT_EQ(messages.back()["error"], http_run.json["error"]["message"]);
  EXPECT_EQ(statuses(messages).at("train").back(), "error");

  // The queue records both as failed, with the same error.
  const std::string http_id = http_run.json["run_id"];
  const std::string ws_id = messages.front()["run_id"];
  const auto status_of = [&](const std::string& id) {  // once the queue has it (it may lag the answer a moment)
    std::string status;
    for (int i = 0; i < 1000 && status != "failed"; ++i) {
      const Reply runs = get("/api/runs");
      for (const auto& r : runs.json["runs"])
        if (r["run_id"] == id) status = r["status"].get<std::string>();
      if (status != "failed") std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return status;
  };
  EXPECT_EQ(status_of(http_id), "failed");
  EXPECT_EQ(status_of(ws_id), "failed");
  EXPECT_EQ(get("/api/runs/" + http_id).json["error"], http_run.json["error"]);
}

TEST_F(ServerFixture, HttpAndWebSocketRunsRecordOutputsAlike) {
  ASSERT_EQ(post("/api/graph/save", toy_graph(1, 20)).status, 200);
  const Reply http_run = post("/api/graph/run/toy", {{"device", "cpu"}, {"record_outputs", true}});
  ASSERT_EQ(http_run.status, 200) << http_run.body;
  const Reply http_rows = get("/api/execution/outputs/" + http_run.json["run_id"].get<std::string>());
  ASSERT_EQ(http_rows.status, 200) << http_rows.body;

  auto ws = open_ws();
  nlohmann::json msg = toy_graph(1, 20);
  msg["action"] = "execute";
  msg["record_outputs"] = true;
  msg["run_id"] = "editor-1";
  ws->send(msg);
  ws->until("execution_complete");
  const Reply ws_rows = get("/api/execution/outputs/editor-1");
  ASSERT_EQ(ws_rows.status, 200) << ws_rows.body;
  EXPECT_EQ(ws_rows.json, http_rows.json);  // the same ports, types and shapes
  EXPECT_EQ(get("/api/health").json["caches"]["run_output_store"]["runs"], 2);
}

}  // namespace
}  // namespace codefy::server
