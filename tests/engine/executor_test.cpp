// Executor: determinism, cancellation, node identity in errors, events.
#include "engine/executor.h"
#include "../common/test_support.h"
#include "device/memory.h"
#include "train/serialize.h"

#include <torch/torch.h>

#include <set>
#include <thread>

namespace codefy {
namespace {

using codefy::testing::Recorder;
using codefy::testing::run_json;
using codefy::testing::set_param;

nlohmann::json toy_graph() {
  return codefy::testing::read_json(codefy::testing::source_dir() / "examples/toy-mlp/graph.json");
}

TEST(Executor, SameSeedSameNumbersBitForBit) {
  auto g = toy_graph();
  set_param(g, "train", "epochs", 3);
  auto a = run_json(g, 7);
  auto b = run_json(g, 7);
  auto c = run_json(g, 8);
  const auto& la = std::get<torch::Tensor>(a.outputs["train"]["losses"]);
  const auto& lb = std::get<torch::Tensor>(b.outputs["train"]["losses"]);
  const auto& lc = std::get<torch::Tensor>(c.outputs["train"]["losses"]);
  EXPECT_TRUE(torch::equal(la, lb));
  EXPECT_FALSE(torch::equal(la, lc));
  auto wa = train::state_dict(*std::get<train::ModelPtr>(a.outputs["train"]["model"]));
  auto wb = train::state_dict(*std::get<train::ModelPtr>(b.outputs["train"]["model"]));
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) EXPECT_TRUE(torch::equal(wa[i].second, wb[i].second)) << wa[i].first;
}

TEST(Executor, ToyExampleLearns) {
  Recorder rec;
  auto r = run_json(toy_graph(), 0, &rec);
  const double acc = std::get<double>(r.outputs["evaluate"]["accuracy"]);
  EXPECT_GT(acc, 0.85);
  const auto& metrics = std::get<nlohmann::json>(r.outputs["train"]["metrics"]);
  EXPECT_EQ(metrics["total_steps"].get<int64_t>(), metrics["total_batches"].get<int64_t>());
  EXPECT_EQ(metrics["total_batches"].get<int64_t>(), metrics["total_epochs_run"].get<int64_t>() * 63);  // 2000/32
  // CodefyUI's progress frames: one config, then one epoch frame per epoch.
  ASSERT_FALSE(rec.progress.empty());
  EXPECT_EQ(rec.progress.front()["event"], "config");
  int epochs = 0;
  for (const auto& e : rec.progress) epochs += e["event"] == "epoch";
  EXPECT_EQ(epochs, metrics["total_epochs_run"].get<int>());
  // StepLR(10, 0.5) stepped per epoch: epoch 11's lr is half of epoch 10's.
  const auto lrs = metrics["lr_history"].get<std::vector<double>>();
  if (lrs.size() > 10) {
    EXPECT_DOUBLE_EQ(lrs[10], lrs[9] * 0.5);
  }
  ASSERT_EQ(rec.prints.size(), 1u);
  EXPECT_EQ(rec.prints[0].rfind("[validation accuracy] ", 0), 0u);
}

/// Cancels the run at the first training progress event of kind "batch".
class StopAtFirstBatch : public Recorder {
 public:
  explicit StopAtFirstBatch(CancellationToken t) : token_(std::move(t)) {}
  void on_progress(const NodeRef& n, const nlohmann::json& e) override {
    Recorder::on_progress(n, e);
    if (e["event"] == "batch") token_.cancel();
  }

 private:
  CancellationToken token_;
};

TEST(Executor, StopEndsTrainingWithinOneBatch) {
  auto g = toy_graph();
  set_param(g, "train", "epochs", 50);
  CancellationToken token;
  StopAtFirstBatch rec(token);
  EXPECT_THROW(run_json(g, 0, &rec, {}, token), Cancelled);
  int batches = 0, epochs = 0;
  int64_t last_step = 0;
  for (const auto& e : rec.progress) {
    batches += e["event"] == "batch";
    epochs += e["event"] == "epoch";
    if (e.contains("step")) last_step = e["step"];
  }
  EXPECT_EQ(batches, 1);
  EXPECT_EQ(epochs, 0);
  EXPECT_EQ(last_step, 1);  // stopped before the second batch
  // Nodes after the training loop never started: they only report skipped.
  std::vector<std::string> evaluate;
  for (const auto& s : rec.statuses)
    if (s.find("evaluate") != std::string::npos) evaluate.push_back(s);
  EXPECT_EQ(evaluate, std::vector<std::string>{"evaluate:skipped"});
}

TEST(Executor, StopBeforeStartRunsNothing) {
  CancellationToken token;
  token.cancel();
  Recorder rec;
  EXPECT_THROW(run_json(toy_graph(), 0, &rec, {}, token), Cancelled);
  ASSERT_FALSE(rec.statuses.empty());
  for (const auto& st : rec.statuses) EXPECT_NE(st.find(":skipped"), std::string::npos) << st;
}

TEST(Executor, NodeErrorsCarryIdentityAndResolvedPath) {
  auto g = codefy::testing::read_json(codefy::testing::source_dir() / "examples/csv-mlp/graph.json");
  set_param(g, "data", "path", "missing.csv");
  const auto dir = codefy::testing::temp_dir("nodeerr");
  Recorder rec;
  try {
    run_json(g, 0, &rec, dir);
    FAIL() << "expected a NodeError";
  } catch (const NodeError& e) {
    EXPECT_EQ(e.node_id(), "data");
    EXPECT_EQ(e.node_type(), "CSVDataset");
    EXPECT_EQ(e.field(), "param \"path\"");
    EXPECT_NE(e.detail().find((dir / "missing.csv").string()), std::string::npos) << e.what();
  }
  EXPECT_NE(std::find(rec.statuses.begin(), rec.statuses.end(), "data:error"), rec.statuses.end());
}

TEST(Executor, NodesAfterAFailureReportSkippedAndDoNotRun) {
  auto g = codefy::testing::read_json(codefy::testing::source_dir() / "examples/csv-mlp/graph.json");
  set_param(g, "data", "path", "missing.csv");
  Recorder rec;
  EXPECT_THROW(run_json(g, 0, &rec, codefy::testing::temp_dir("skipped")), NodeError);
  // Everything after the failing node in plan order: skipped, once, never running.
  const auto failed = std::find(rec.statuses.begin(), rec.statuses.end(), "data:error");
  ASSERT_NE(failed, rec.statuses.end());
  ASSERT_NE(failed + 1, rec.statuses.end()) << "the CSV is not the last node of the plan";
  std::set<std::string> skipped;
  for (auto it = failed + 1; it != rec.statuses.end(); ++it) {
    EXPECT_NE(it->find(":skipped"), std::string::npos) << *it;
    EXPECT_TRUE(skipped.insert(*it).second) << *it << " reported twice";
  }
  EXPECT_TRUE(skipped.count("train:skipped"));
  EXPECT_FALSE(skipped.count("data:skipped"));
}

TEST(Executor, RelativePathsResolveAgainstTheGraphFolder) {
  // The CSV example names "flowers.csv" relative to its own folder.
  const auto dir = codefy::testing::source_dir() / "examples/csv-mlp";
  auto g = codefy::testing::read_json(dir / "graph.json");
  set_param(g, "train", "epochs", 2);
  auto r = run_json(g, 0, nullptr, dir);
  EXPECT_EQ(std::get<double>(r.outputs["evaluate"]["total"]), 150.0);
}

TEST(Executor, NodeSeedDependsOnSeedAndNode) {
  EXPECT_EQ(node_seed(1, "a"), node_seed(1, "a"));
  EXPECT_NE(node_seed(1, "a"), node_seed(2, "a"));
  EXPECT_NE(node_seed(1, "a"), node_seed(1, "b"));
}

}  // namespace
}  // namespace codefy

namespace codefy {
namespace {

TEST(Executor, AdvancedTrainingParamsAtTheirDefaultsChangeNothing) {
  // R-COMPAT: a graph saved before precision/accumulation existed trains the same.
  auto g = toy_graph();
  set_param(g, "train", "epochs", 3);
  auto plain = run_json(g, 5);
  set_param(g, "train", "precision", "fp32");
  set_param(g, "train", "accumulate_steps", 1);
  set_param(g, "train", "max_steps", 0);
  set_param(g, "train", "log_grad_norm", false);
  auto explicit_defaults = run_json(g, 5);
  EXPECT_TRUE(torch::equal(std::get<torch::Tensor>(plain.outputs["train"]["losses"]),
                           std::get<torch::Tensor>(explicit_defaults.outputs["train"]["losses"])));
}

TEST(Executor, TrainingLoopEpochEventsCarryValidationAccuracyAndPeakMemory) {
  // The editor draws accuracy and shows memory while the run goes on, so both
  // ride on every epoch event, not only in the final metrics.
  ASSERT_TRUE(device::install_counting_allocator());  // as the CLI does at start-up: CPU bytes are counted
  auto g = toy_graph();
  set_param(g, "train", "epochs", 3);
  set_param(g, "train", "early_stopping_patience", 0);  // the last epoch's weights are the ones evaluated
  Recorder rec;
  auto r = run_json(g, 0, &rec);
  std::vector<nlohmann::json> epochs;
  for (const auto& e : rec.progress)
    if (e["event"] == "epoch") epochs.push_back(e);
  ASSERT_EQ(epochs.size(), 3u);
  for (const auto& e : epochs) {
    ASSERT_TRUE(e.contains("peak_memory_bytes")) << e.dump();
    EXPECT_GT(e["peak_memory_bytes"].value("cpu", int64_t{0}), 0);
    ASSERT_TRUE(e.contains("val_accuracy"));
  }
  const auto& m = std::get<nlohmann::json>(r.outputs["train"]["metrics"]);
  EXPECT_EQ(m["val_accuracies"].size(), 3u);
  // EvaluateModel counts the same validation set with batches of 256 instead
  // of 250: the same argmax, up to a sample on a float boundary.
  const double evaluated = std::get<double>(r.outputs["evaluate"]["accuracy"]);
  EXPECT_NEAR(m["final_val_accuracy"].get<double>(), evaluated, 2.0 / 500.0);
  EXPECT_DOUBLE_EQ(epochs.back()["val_accuracy"].get<double>(), m["final_val_accuracy"].get<double>());
}

TEST(Executor, TrainingLoopReportsPrecisionAndAccumulation) {
  auto g = toy_graph();
  set_param(g, "train", "epochs", 2);
  set_param(g, "train", "precision", "bf16");
  set_param(g, "train", "accumulate_steps", 4);
  set_param(g, "train", "strategy", "ddp");
  Recorder rec;
  auto r = run_json(g, 0, &rec);
  const auto& m = std::get<nlohmann::json>(r.outputs["train"]["metrics"]);
  EXPECT_EQ(m["precision"], "bf16");
  EXPECT_EQ(m["accumulate_steps"], 4);
  EXPECT_EQ(m["effective_batch_size"], 128);
  EXPECT_EQ(m["total_batches"], 126);
  EXPECT_EQ(m["total_steps"], 32);  // 63 batches per epoch: 15 windows of 4 and one of 3
  EXPECT_TRUE(m["grad_norm"].is_number());
  ASSERT_EQ(rec.progress.front()["event"], "config");
  EXPECT_EQ(rec.progress.front()["config"]["effective_batch_size"], 128);
  bool ddp_warned = false;
  for (const auto& w : rec.warnings) ddp_warned |= w.find("strategy ddp") != std::string::npos;
  EXPECT_TRUE(ddp_warned);
}

}  // namespace
}  // namespace codefy
