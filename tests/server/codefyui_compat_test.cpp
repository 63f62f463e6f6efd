// CodefyUI's own editor against `codefy serve` (issue #12, items 3-8 and the
// validation found beside them): each test replays what that client sends
// and checks the fields its source reads (frontend/src/api/rest.ts,
// hooks/useGraphExecution.ts, components/Canvas/EdgeDataTooltip.tsx,
// components/Nodes/BaseNode.tsx).
#include "fixture.h"

namespace codefy::server {

namespace {

nlohmann::json node(const std::string& id, const std::string& type, const nlohmann::json& params = {}) {
  return {{"id", id}, {"type", type}, {"data", {{"params", params.is_null() ? nlohmann::json::object() : params}}}};
}

nlohmann::json data_edge(const std::string& s, const std::string& sh, const std::string& t, const std::string& th) {
  return {{"source", s}, {"sourceHandle", sh}, {"target", t}, {"targetHandle", th}, {"type", "data"}};
}

nlohmann::json trigger_edge(const std::string& t) {
  return {{"source", "start"}, {"sourceHandle", "trigger"}, {"target", t}, {"type", "trigger"}};
}

/// The node_status message of `id` with `status` (the last one), or null.
nlohmann::json status_message(const std::vector<nlohmann::json>& messages, const std::string& id,
                              const std::string& status) {
  nlohmann::json found;
  for (const auto& m : messages)
    if (m["type"] == "node_status" && m["node_id"] == id && m["status"] == status) found = m;
  return found;
}

/// Runs `g` from the editor's socket as CodefyUI's client sends it; every message up to the run's end.
template <typename Socket>
std::vector<nlohmann::json> run_over_ws(Socket& ws, nlohmann::json g) {
  g["action"] = "execute";
  g["run_id"] = "client-run";
  ws.send(g);
  return ws.until("execution_complete");
}

}  // namespace

// Item 3: the editor loads /api/nodes and /api/presets together; a preset
// card shows its inner nodes and its ports take the inner ports' types.
TEST_F(ServerFixture, Item3PresetsAnswerInCodefyUIsShape) {
  const Reply list = get("/api/presets");
  ASSERT_EQ(list.status, 200) << list.body;
  ASSERT_TRUE(list.json.is_array());
  std::set<std::string> names;
  const Reply nodes = get("/api/nodes");
  std::set<std::string> known;
  for (const auto& n : nodes.json) known.insert(n["node_name"].get<std::string>());
  for (const auto& p : list.json) {
    names.insert(p["preset_name"].get<std::string>());
    for (const char* key : {"category", "description"}) EXPECT_TRUE(p[key].is_string()) << key;
    EXPECT_TRUE(p["tags"].is_array());
    ASSERT_FALSE(p["nodes"].empty());
    for (const auto& n : p["nodes"]) {
      EXPECT_TRUE(n["id"].is_string());
      EXPECT_TRUE(n["params"].is_object());
      EXPECT_TRUE(known.count(n["type"].get<std::string>())) << n["type"] << " is not in /api/nodes";
    }
    for (const auto& e : p["edges"])
      for (const char* key : {"source", "sourceHandle", "target", "targetHandle"}) EXPECT_TRUE(e[key].is_string());
    for (const char* side : {"exposed_inputs", "exposed_outputs"})
      for (const auto& port : p[side]) {
        EXPECT_TRUE(port["name"].is_string());
        EXPECT_NE(port["data_type"], "ANY") << p["preset_name"] << " " << port["name"];
        EXPECT_TRUE(port["data_type"].is_string());
      }
    for (const auto& param : p["exposed_params"]) {
      EXPECT_TRUE(param["display_name"].is_string());
      ASSERT_TRUE(param["param_def"].is_object()) << p["preset_name"] << " " << param["param_name"];
      EXPECT_EQ(param["param_def"]["name"], param["param_name"]);
      EXPECT_TRUE(param["param_def"]["param_type"].is_string());
    }
  }
  EXPECT_TRUE(names.count("Training Pipeline"));
  // Its inner nodes (Conv2d, Activation, MaxPool2d) are layer nodes too, so it is served.
  EXPECT_TRUE(names.count("Simple CNN Classifier"));
  EXPECT_EQ(get("/api/presets/Simple%20CNN%20Classifier").status, 200);

  const Reply one = get("/api/presets/Training%20Pipeline");
  ASSERT_EQ(one.status, 200);
  EXPECT_EQ(one.json["nodes"].size(), 5u);
  std::map<std::string, std::string> types;
  for (const char* side : {"exposed_inputs", "exposed_outputs"})
    for (const auto& port : one.json[side]) types[port["name"].get<std::string>()] = port["data_type"];
  EXPECT_EQ(types["model"], "MODEL");
  EXPECT_EQ(types["losses"], "TENSOR");
  EXPECT_EQ(get("/api/presets/No%20Such").status, 404);
}

// Item 4: the client logs a top-level `image` (a bare base64 PNG) of a node's completed message.
TEST_F(ServerFixture, Item4VisualizeImageIsOnTheCompletedMessage) {
  nlohmann::json g = toy_graph(2, 40);
  g["nodes"].push_back(node("plot", "Visualize", {{"title", "loss"}}));
  g["edges"].push_back(data_edge("train", "losses", "plot", "data"));
  auto ws = open_ws();
  const auto messages = run_over_ws(*ws, g);
  const nlohmann::json done = status_message(messages, "plot", "completed");
  ASSERT_FALSE(done.is_null());
  ASSERT_TRUE(done["image"].is_string());
  const std::string png = util::base64_decode(done["image"].get<std::string>());
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(done["output_summary"]["image"]["type"], "string");
  // Only the node that made the picture carries one.
  EXPECT_FALSE(status_message(messages, "train", "completed").contains("image"));

  // Served from the cache the next time (nothing changed): the picture comes again.
  const auto again = run_over_ws(*ws, g);
  const nlohmann::json cached = status_message(again, "plot", "cached");
  const nlohmann::json rerun = status_message(again, "plot", "completed");
  const nlohmann::json second = cached.is_null() ? rerun : cached;
  ASSERT_FALSE(second.is_null());
  EXPECT_TRUE(second["image"].is_string());
}

// Item 5: EdgeDataTooltip shows type, shape, dtype, min, max, mean, class, params, trainable, value.
TEST_F(ServerFixture, Item5OutputSummaryHasCodefyUIsShapes) {
  nlohmann::json g = toy_graph(2, 40);
  auto ws = open_ws();
  const auto messages = run_over_ws(*ws, g);
  const nlohmann::json model = status_message(messages, "mlp", "completed")["output_summary"]["model"];
  EXPECT_EQ(model["type"], "model");
  EXPECT_EQ(model["class"], "SequentialModel");
  EXPECT_EQ(model["params"], 2 * 16 + 16 + 16 * 2 + 2);
  EXPECT_EQ(model["trainable"], model["params"]);
  EXPECT_FALSE(model.contains("parameters"));

  const nlohmann::json train = status_message(messages, "train", "completed")["output_summary"];
  const nlohmann::json losses = train["losses"];
  EXPECT_EQ(losses["type"], "tensor");
  EXPECT_EQ(losses["shape"], nlohmann::json::array({2}));
  EXPECT_EQ(losses["dtype"], "torch.float32");
  ASSERT_TRUE(losses["min"].is_number() && losses["max"].is_number() && losses["mean"].is_number()) << losses;
  EXPECT_LE(losses["min"].get<double>(), losses["mean"].get<double>());
  EXPECT_LE(losses["mean"].get<double>(), losses["max"].get<double>());
  EXPECT_EQ(losses["values"].size(), 2u);
  EXPECT_EQ(train["model"]["type"], "model");
  EXPECT_EQ(train["metrics"]["type"], "dict");
  EXPECT_TRUE(train["metrics"]["repr"].is_string());  // the tooltip's Value row, not "[object Object]"

  const nlohmann::json data = status_message(messages, "data", "completed")["output_summary"]["dataset"];
  EXPECT_EQ(data["type"], "dataset");
  EXPECT_TRUE(data["repr"].is_string());
  for (const auto& [id, kind] : std::map<std::string, std::string>{{"loader", "dataloader"}, {"opt", "optimizer"}}) {
    const nlohmann::json done = status_message(messages, id, "completed");
    const nlohmann::json summary = done.is_null() ? status_message(messages, id, "cached") : done;
    ASSERT_FALSE(summary.is_null()) << id;
    EXPECT_EQ(summary["output_summary"].begin().value()["type"], kind) << id;
  }
}

// Item 6: Stop answers execution_stopped and the node it interrupted is not an error.
TEST_F(ServerFixture, Item6StopLeavesTheNodeInterruptedNotErrored) {
  auto ws = open_ws();
  nlohmann::json g = toy_graph(10000, 400);
  g["action"] = "execute";
  ws->send(g);
  nlohmann::json m;
  do m = ws->next();
  while (!(m["type"] == "node_progress" && m["node_id"] == "train"));
  ws->send({{"action", "stop"}});
  const auto rest = ws->until("execution_stopped");
  const nlohmann::json ended = status_message(rest, "train", "interrupted");
  ASSERT_FALSE(ended.is_null());
  EXPECT_FALSE(ended.contains("error"));
  for (const auto& x : rest) {
    EXPECT_NE(x["type"], "execution_error");
    EXPECT_FALSE(x["type"] == "node_status" && x["status"] == "error") << x;
  }
  EXPECT_EQ(rest.back(), (nlohmann::json{{"type", "execution_stopped"}}));
}

// Item 7: BaseNode draws the epoch bar from the latest node_status "progress";
// batch progress must not replace it, so it comes under a type the client ignores.
TEST_F(ServerFixture, Item7BatchProgressDoesNotReplaceTheEpochFrames) {
  nlohmann::json g = toy_graph(2, 40);
  auto ws = open_ws();
  const auto messages = run_over_ws(*ws, g);
  int epochs = 0, configs = 0, batches = 0;
  for (const auto& m : messages) {
    if (m["type"] == "node_status" && m["status"] == "progress") {
      const std::string event = m["progress"]["event"];
      EXPECT_NE(event, "batch") << "a batch frame as node_status would replace the epoch bar";
      epochs += event == "epoch";
      configs += event == "config";
      if (event == "epoch") {
        for (const char* key : {"epoch", "total_epochs", "loss", "losses", "lr"})
          EXPECT_TRUE(m["progress"].contains(key)) << key;
      }
    }
    if (m["type"] == "node_progress") {
      ++batches;
      EXPECT_EQ(m["node_id"], "train");
      EXPECT_EQ(m["progress"]["event"], "batch");
      EXPECT_FALSE(m.contains("status"));
      EXPECT_FALSE(m.contains("run_id"));  // CodefyUI's '*' handler would take it for its run
    }
  }
  EXPECT_EQ(configs, 1);
  EXPECT_EQ(epochs, 2);
  EXPECT_GE(batches, 1);  // the first batch always reports
}

// Item 8: the client logs a `log` on the node's message; a status "log"
// message of its own would become the card's status.
TEST_F(ServerFixture, Item8PrintTextRidesOnTheCompletedMessage) {
  nlohmann::json g = {{"name", "print"},
                      {"nodes",
                       {node("start", "Start"), node("data", "ToyDataset", {{"n_samples", 10}}),
                        node("show", "Print", {{"label", "data"}})}},
                      {"edges", {trigger_edge("show"), data_edge("data", "dataset", "show", "value")}}};
  auto ws = open_ws();
  const auto messages = run_over_ws(*ws, g);
  for (const auto& m : messages) EXPECT_NE(m.value("status", ""), "log") << m;
  const nlohmann::json done = status_message(messages, "show", "completed");
  ASSERT_TRUE(done["log"].is_string()) << done;
  EXPECT_EQ(done["log"].get<std::string>().rfind("[data] ", 0), 0u) << done["log"];
  EXPECT_FALSE(status_message(messages, "data", "completed").contains("log"));
}

// Also found (a): validation parses a SequentialModel's layers and checks
// them against the shape of the samples its TrainingLoop will give it.
TEST_F(ServerFixture, AlsoFoundValidateParsesLayersAndChecksShapes) {
  nlohmann::json bad_json = toy_graph(1);
  for (auto& n : bad_json["nodes"])
    if (n["id"] == "mlp") n["data"]["params"]["layers"] = "{not json";
  Reply r = post("/api/graph/validate", bad_json);
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.json["valid"], false);
  ASSERT_EQ(r.json["issues"].size(), 1u) << r.json;
  EXPECT_EQ(r.json["issues"][0]["node_id"], "mlp");
  EXPECT_EQ(r.json["issues"][0]["node_type"], "SequentialModel");
  EXPECT_EQ(r.json["issues"][0]["field"], "param \"layers\"");

  // Parses, but Linear wants 3 features and ToyDataset gives 2.
  nlohmann::json mismatch = testing::mlp_training_graph("mismatch", 3, 8, 2, {{"n_samples", 20}}, {{"batch_size", 4}},
                                                        {{"type", "SGD"}}, {{"epochs", 1}});
  r = post("/api/graph/validate", mismatch);
  EXPECT_EQ(r.json["valid"], false);
  ASSERT_EQ(r.json["issues"].size(), 1u) << r.json;
  const auto& issue = r.json["issues"][0];
  EXPECT_EQ(issue["graph"], "mismatch");
  EXPECT_EQ(issue["node_id"], "mlp");
  EXPECT_EQ(issue["field"], "param \"layers\"");
  const std::string message = issue["message"];
  EXPECT_NE(message.find("[2]"), std::string::npos) << message;       // the sample's shape
  EXPECT_NE(message.find("\"data\""), std::string::npos) << message;  // where it comes from
  EXPECT_NE(message.find("l1"), std::string::npos) << message;        // the layer that refused it

  // The same graph with ToyDataset giving 3 features is valid.
  for (auto& n : mismatch["nodes"])
    if (n["id"] == "data") n["data"]["params"]["n_features"] = 3;
  r = post("/api/graph/validate", mismatch);
  EXPECT_EQ(r.json["valid"], true) << r.json;

  // An editor's run is refused the same way, before anything runs.
  auto ws = open_ws();
  nlohmann::json run = bad_json;
  run["action"] = "execute";
  ws->send(run);
  const nlohmann::json answer = ws->next();
  EXPECT_EQ(answer["type"], "execution_error");
  EXPECT_NE(answer["error"].get<std::string>().find("layers"), std::string::npos) << answer;
}

}  // namespace codefy::server
