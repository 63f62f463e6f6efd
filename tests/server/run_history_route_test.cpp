// The server records its runs in the run history (issue #30): a run started
// through the API is still there, with its metrics, after the server
// restarts on the same data folder, and its source says where it came from.
#include "fixture.h"
#include "store/run_store.h"

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
}

}  // namespace
}  // namespace codefy::server::run_history
