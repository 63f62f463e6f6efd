// The server records its runs in the run history (issue #30): a run started
// through the API is still there, with its metrics, after the server
// restarts on the same data folder, and its source says where it came from.
#include "fixture.h"
#include "store/run_store.h"

#include "../common/tfevents_reader.h"

namespace codefy::server::run_history {
namespace {

using nlohmann::json;

class ServerRunHistory : public ServerFixture {};

TEST_F(ServerRunHistory, Issue30_ARunIsStillThereWithItsMetricsAfterARestart) {
  const json g = testing::mlp_training_graph("history", 3, 8, 2, {{"n_samples", 32}, {"n_features", 3}},
                                             {{"batch_size", 8}}, {{"type", "SGD"}}, {{"epochs", 3}});
  ASSERT_EQ(post("/api/graph/save", g).status, 200);
  const Reply run = post("/api/graph/run/history", {{"device", "cpu"}, {"seed", 4}});
  ASSERT_EQ(run.status, 200) << run.body;
  const std::string id = run.json["run_id"];

  stop();  // a new server on the same data folder knows nothing of it in memory
  start();
  const Reply info = get("/api/runs/" + id);
  ASSERT_EQ(info.status, 200) << info.body;
  EXPECT_EQ(info.json["from_history"], true);
  EXPECT_EQ(info.json["status"], "completed");
  EXPECT_EQ(info.json["graph"], "history");
  EXPECT_EQ(info.json["source"], "api");
  EXPECT_EQ(info.json["metrics"]["train"]["total_epochs_run"], 3);

  store::RunStore history(dir_.path() / "runs.db");
  const auto r = history.get(id);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->seed, 4u);
  EXPECT_EQ(history.series(id, {"epoch_loss"}).size(), 3u);
  EXPECT_EQ(get("/api/runs/no-such-run").status, 404);

  // Listed with the queue's runs, filtered, its series thinned, then deleted.
  const Reply list = get("/api/runs?history=1&graph=history&status=completed");
  ASSERT_EQ(list.status, 200) << list.body;
  ASSERT_EQ(list.json["runs"].size(), 1u) << list.body;
  EXPECT_EQ(list.json["runs"][0]["run_id"], id);
  EXPECT_EQ(list.json["runs"][0]["source"], "api");
  EXPECT_TRUE(get("/api/runs?history=1&graph=other").json["runs"].empty());
  EXPECT_EQ(get("/api/runs?history=1&limit=0").status, 422);
  const Reply series = get("/api/runs/" + id + "/series?names=epoch_loss,val_loss&points=2");
  ASSERT_EQ(series.status, 200) << series.body;
  ASSERT_EQ(series.json["series"]["epoch_loss"].size(), 2u) << series.body;  // epochs 1 and 3
  EXPECT_EQ(series.json["series"]["epoch_loss"][0][0], 1);
  EXPECT_EQ(series.json["series"]["epoch_loss"][1][0], 3);
  EXPECT_FALSE(series.json["series"].contains("lr"));
  EXPECT_EQ(request(http::verb::delete_, "/api/runs/" + id).status, 200);
  EXPECT_EQ(get("/api/runs/" + id).status, 404);
  EXPECT_EQ(request(http::verb::delete_, "/api/runs/" + id).status, 404);

  // The new server's first run is recorded too: its id is not the earlier server's first run's.
  const Reply again = post("/api/graph/run/history", {{"device", "cpu"}, {"seed", 4}});
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_NE(again.json["run_id"], id);
  EXPECT_TRUE(history.get(again.json["run_id"].get<std::string>())) << again.json["run_id"];
  EXPECT_EQ(history.get(again.json["run_id"].get<std::string>())->status, "completed");
}

TEST_F(ServerRunHistory, Issue30_PagesOfTheHistoryFollowTheCursorNewestFirst) {
  {
    store::RunStore history(dir_.path() / "runs.db");
    for (int i = 0; i < 5; ++i) {
      store::RunRecord r;
      r.id = "old-" + std::to_string(i);
      r.graph_name = "g";
      r.graph = {{"name", "g"}};
      r.source = "cli";
      r.started_at = 1000.0 + i;
      history.begin_run(r);
      r.status = "completed";
      r.ended_at = 2000;
      history.finish_run(r);
    }
  }
  std::vector<std::string> seen;
  std::string cursor;
  for (int page = 0; page < 5; ++page) {
    const Reply r = get("/api/runs?history=1&limit=2" + (cursor.empty() ? std::string() : "&cursor=" + cursor));
    ASSERT_EQ(r.status, 200) << r.body;
    for (const auto& run : r.json["runs"]) seen.push_back(run["run_id"]);
    if (r.json["next_cursor"].is_null()) break;
    cursor = r.json["next_cursor"];
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"old-4", "old-3", "old-2", "old-1", "old-0"}));
  EXPECT_TRUE(get("/api/runs").json["runs"].empty());  // the queue alone unless history=1
}

TEST_F(ServerRunHistory, Issue30_TwoRunsWithDifferentLearningRatesAreComparedSideBySide) {
  std::vector<std::string> ids;
  for (const double lr : {0.01, 0.03}) {
    const json g = testing::mlp_training_graph("cmp", 3, 8, 2, {{"n_samples", 32}, {"n_features", 3}},
                                               {{"batch_size", 8}}, {{"type", "SGD"}, {"lr", lr}}, {{"epochs", 2}});
    ASSERT_EQ(post("/api/graph/save", g).status, 200);
    const Reply run = post("/api/graph/run/cmp", {{"device", "cpu"}, {"seed", 4}});
    ASSERT_EQ(run.status, 200) << run.body;
    ids.push_back(run.json["run_id"]);
  }
  // Both are still in the queue's memory: listed once each, with what the history knows of them.
  const Reply list = get("/api/runs?history=1&graph=cmp");
  ASSERT_EQ(list.json["runs"].size(), 2u) << list.body;
  for (const auto& r : list.json["runs"]) {
    EXPECT_EQ(r["graph"], "cmp");
    EXPECT_TRUE(r.contains("worker")) << r.dump();  // the queue's fields too
    EXPECT_TRUE(r["final_metrics"]["train"].contains("final_train_loss")) << r.dump();
  }

  const Reply c = get("/api/runs/compare?ids=" + ids[0] + "," + ids[1]);
  ASSERT_EQ(c.status, 200) << c.body;
  ASSERT_EQ(c.json["runs"].size(), 2u);
  EXPECT_EQ(c.json["runs"][0]["run_id"], ids[0]);
  ASSERT_EQ(c.json["differences"].size(), 1u) << c.body;  // same graph, seed and settings but the rate
  EXPECT_EQ(c.json["differences"][0]["key"], "opt.params.lr");
  EXPECT_EQ(c.json["differences"][0]["values"], json({0.01, 0.03}));
  bool loss = false;
  for (const auto& m : c.json["metrics"])
    if (m["key"] == "train.final_train_loss") {
      loss = true;
      EXPECT_TRUE(m["values"][0].is_number() && m["values"][1].is_number()) << m.dump();
      EXPECT_NE(m["values"][0], m["values"][1]);  // a different rate trains differently
    }
  EXPECT_TRUE(loss) << c.body;

  EXPECT_EQ(get("/api/runs/compare?ids=" + ids[0]).status, 422);
  EXPECT_EQ(get("/api/runs/compare").status, 422);
  const Reply unknown = get("/api/runs/compare?ids=" + ids[0] + ",no-such-run");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_NE(unknown.body.find("no-such-run"), std::string::npos) << unknown.body;
}

TEST_F(ServerRunHistory, Issue30_ARunTheQueueStillHoldsIsAnsweredWithItsGraphSnapshotAndWrittenForTensorBoard) {
  const fs::path tensorboard = dir_.path() / "tb";
  configure_ = [tensorboard](ApiOptions& o, ServerOptions&) { o.tensorboard_dir = tensorboard; };
  stop();
  start();
  const json g = testing::mlp_training_graph("live", 3, 8, 2, {{"n_samples", 32}, {"n_features", 3}},
                                             {{"batch_size", 8}}, {{"type", "SGD"}}, {{"epochs", 2}});
  ASSERT_EQ(post("/api/graph/save", g).status, 200);
  const Reply run = post("/api/graph/run/live", {{"device", "cpu"}, {"seed", 4}});
  ASSERT_EQ(run.status, 200) << run.body;
  const std::string id = run.json["run_id"];

  const Reply info = get("/api/runs/" + id);
  ASSERT_EQ(info.status, 200) << info.body;
  EXPECT_TRUE(info.json.contains("worker")) << "answered by the queue: " << info.body;
  EXPECT_FALSE(info.json.contains("from_history"));
  EXPECT_EQ(info.json["graph_snapshot"]["name"], "live") << info.body;
  EXPECT_EQ(info.json["graph_snapshot"]["nodes"].size(), g["nodes"].size());
  EXPECT_EQ(info.json["effective_batch"], 8);

  // --tensorboard: the run's own folder holds one event file with its epochs.
  ASSERT_TRUE(fs::is_directory(tensorboard / id));
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(tensorboard / id)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  size_t epochs = 0;
  for (const auto& s : testing::tfevents::scalars(testing::tfevents::read_records(files[0])))
    if (s.tag == "epoch/loss") ++epochs;
  EXPECT_EQ(epochs, 2u);
}

TEST_F(ServerRunHistory, Issue30_ASocketRunIsRecordedAsTheEditorsOrCodefyUIsClientsByWhatItSays) {
  auto ws = open_ws();
  for (const char* client : {"codefy", ""}) {
    json g = testing::mlp_training_graph("socket", 3, 8, 2, {{"n_samples", 16}, {"n_features", 3}}, {{"batch_size", 8}},
                                         {{"type", "SGD"}}, {{"epochs", 1}});
    g["action"] = "execute";
    if (*client) g["client"] = client;  // Codefy's editor says so; CodefyUI's client sends no such field
    ws->send(g);
    ws->until("execution_complete");
  }
  const auto sources = [&](const std::string& source) {
    return get("/api/runs?history=1&graph=socket&source=" + source).json["runs"].size();
  };
  EXPECT_EQ(sources("editor"), 1u);
  EXPECT_EQ(sources("codefyui"), 1u);
}

}  // namespace
}  // namespace codefy::server::run_history
