// What readers see of stored runs (issue #30): a comparison lists only the
// settings that differ (run fields, node parameters, a layer spec's own
// settings, connections) with a value a run, and every metric side by side;
// the CSV export holds every point.
#include "store/run_views.h"

#include <gtest/gtest.h>

#include <sstream>

namespace codefy::store {
namespace {

nlohmann::json graph_node(const std::string& id, const std::string& type, const nlohmann::json& params) {
  return {{"id", id}, {"type", type}, {"position", {{"x", 0}, {"y", 0}}}, {"data", {{"params", params}}}};
}

RunRecord trained(const std::string& id, double lr, const nlohmann::json& extra_node = nullptr) {
  RunRecord r;
  r.id = id;
  r.graph_name = "g";
  r.graph_hash = "h";
  r.seed = 3;
  r.precision_used = "fp32";
  r.effective_batch = 32;
  const nlohmann::json layers = {{"version", 2},
                                 {"nodes", {{{"id", "l1"}, {"type", "Linear"}, {"params", {{"out_features", 8}}}}}}};
  r.graph = {{"name", "g"},
             {"nodes",
              {graph_node("opt", "Optimizer", {{"type", "Adam"}, {"lr", lr}}),
               graph_node("mlp", "SequentialModel", {{"layers", layers.dump()}})}},
             {"edges", {{{"source", "mlp"}, {"sourceHandle", "model"}, {"target", "opt"}, {"targetHandle", "model"}}}}};
  if (!extra_node.is_null()) r.graph["nodes"].push_back(extra_node);
  r.final_metrics = {{"train", {{"final_train_loss", lr * 100}, {"history", {1, 2}}, {"device", "cpu"}}}};
  r.peak_memory = {{"cpu", 1000}};
  r.duration_s = 2;
  return r;
}

const nlohmann::json* row(const nlohmann::json& rows, const std::string& key) {
  for (const auto& r : rows)
    if (r["key"] == key) return &r;
  return nullptr;
}

TEST(RunViews, Issue30_ACompareListsOnlyWhatDiffersWithAValueARun) {
  RunRecord a = trained("a", 1e-3), b = trained("b", 3e-3);
  b.seed = 4;
  const nlohmann::json c = compare_runs({a, b});

  ASSERT_EQ(c["runs"].size(), 2u);
  EXPECT_EQ(c["runs"][1]["id"], "b");
  const auto* lr = row(c["differences"], "opt.params.lr");
  ASSERT_TRUE(lr) << c["differences"].dump();
  EXPECT_EQ((*lr)["values"], nlohmann::json({1e-3, 3e-3}));
  EXPECT_EQ((*lr)["node"], "opt");
  EXPECT_EQ((*lr)["node_type"], "Optimizer");
  EXPECT_EQ((*lr)["param"], "lr");
  EXPECT_EQ((*lr)["label"], "opt (Optimizer) lr");
  const auto* seed = row(c["differences"], "seed");
  ASSERT_TRUE(seed);
  EXPECT_EQ((*seed)["values"], nlohmann::json({3, 4}));
  // Only those two: the optimizer type, the layers, precision and batch are the same.
  EXPECT_EQ(c["differences"].size(), 2u) << c["differences"].dump();

  // Every metric, the same or not; numbers only.
  const auto* loss = row(c["metrics"], "train.final_train_loss");
  ASSERT_TRUE(loss) << c["metrics"].dump();
  EXPECT_DOUBLE_EQ((*loss)["values"][0].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ((*loss)["values"][1].get<double>(), 0.3);
  ASSERT_TRUE(row(c["metrics"], "duration_s"));
  ASSERT_TRUE(row(c["metrics"], "peak_memory.cpu"));
  EXPECT_EQ((*row(c["metrics"], "peak_memory.cpu"))["values"], nlohmann::json({1000, 1000}));
  EXPECT_FALSE(row(c["metrics"], "train.device"));
  EXPECT_FALSE(row(c["metrics"], "train.history"));
}

TEST(RunViews, Issue30_ALayerSpecIsComparedInsideAndANodeOnlyOneRunHasIsNullInTheOther) {
  RunRecord a = trained("a", 1e-3), b = trained("b", 1e-3, graph_node("extra", "Print", {{"label", "x"}}));
  nlohmann::json spec = nlohmann::json::parse(b.graph["nodes"][1]["data"]["params"]["layers"].get<std::string>());
  spec["nodes"][0]["params"]["out_features"] = 16;
  b.graph["nodes"][1]["data"]["params"]["layers"] = spec.dump();
  b.graph["edges"].push_back({{"source", "mlp"}, {"sourceHandle", "model"}, {"target", "extra"}});
  const nlohmann::json c = compare_runs({a, b, a});

  const auto* width = row(c["differences"], "mlp.params.layers.nodes[0].params.out_features");
  ASSERT_TRUE(width) << c["differences"].dump();
  EXPECT_EQ((*width)["values"], nlohmann::json({8, 16, 8}));
  const auto* extra = row(c["differences"], "extra.type");
  ASSERT_TRUE(extra);
  EXPECT_EQ((*extra)["values"], nlohmann::json({nullptr, "Print", nullptr}));
  ASSERT_TRUE(row(c["differences"], "extra.params.label"));
  const auto* edges = row(c["differences"], "edges");
  ASSERT_TRUE(edges);
  EXPECT_EQ((*edges)["values"][0], nlohmann::json({"mlp.model -> opt.model"}));
  EXPECT_EQ((*edges)["values"][1].size(), 2u);
}

TEST(RunViews, Issue30_TheCsvExportHasAHeaderAndEveryPoint) {
  const std::vector<SeriesPoint> points = {
      {"loss", 1, 0.75, 1700000000.5}, {"loss", 2, 0.5, 1700000001.0}, {"val_accuracy", 1, 0.875, 1700000002.0}};
  std::istringstream in(series_csv(points));
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "series,step,value,time");
  EXPECT_EQ(lines[1], "loss,1,0.75,1700000000.500");
  EXPECT_EQ(lines[3], "val_accuracy,1,0.875,1700000002.000");
}

TEST(RunViews, Issue30_SeriesHaveStableTensorBoardTags) {
  EXPECT_EQ(tensorboard_tag("loss"), "train/loss");
  EXPECT_EQ(tensorboard_tag("samples_per_s"), "train/samples_per_s");
  EXPECT_EQ(tensorboard_tag("epoch_loss"), "epoch/loss");
  EXPECT_EQ(tensorboard_tag("val_accuracy"), "epoch/val_accuracy");
  EXPECT_EQ(tensorboard_tag("epoch_seconds"), "epoch/seconds");
}

}  // namespace
}  // namespace codefy::store
