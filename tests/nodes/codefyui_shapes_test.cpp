// What CodefyUI's editor reads of a run (issue #12): output summaries in its
// shape, and the findings beside it (a Dataset's fallback folder is said,
// `codefy validate` checks a SequentialModel's layers against its data).
#include "../common/test_support.h"
#include "engine/value.h"

#include <torch/torch.h>

#include <fstream>

namespace codefy {
namespace {

using codefy::testing::run_codefy;
using codefy::testing::run_json;
using codefy::testing::temp_dir;

TEST(CodefyUIShapes, Item5SmallTensorHasStatisticsAndValues) {
  const auto s = summarize(Value(torch::tensor({{1.0f, -2.0f}, {3.5f, 0.25f}})));
  EXPECT_EQ(s["type"], "tensor");
  EXPECT_EQ(s["shape"], nlohmann::json::array({2, 2}));
  EXPECT_EQ(s["dtype"], "torch.float32");
  EXPECT_DOUBLE_EQ(s["min"].get<double>(), -2.0);
  EXPECT_DOUBLE_EQ(s["max"].get<double>(), 3.5);
  EXPECT_DOUBLE_EQ(s["mean"].get<double>(), 0.6875);
  EXPECT_EQ(s["values"], nlohmann::json::parse("[[1.0, -2.0], [3.5, 0.25]]"));
  EXPECT_FALSE(s.contains("stats_sampled"));

  const auto i = summarize(Value(torch::tensor({4, 9, -1}, torch::kLong)));
  EXPECT_EQ(i["dtype"], "torch.int64");
  EXPECT_EQ(i["min"], -1);
  EXPECT_EQ(i["max"], 9);
  EXPECT_FALSE(i.contains("mean"));  // as CodefyUI: a mean of labels means nothing
  EXPECT_EQ(i["values"], nlohmann::json::array({4, 9, -1}));
}

TEST(CodefyUIShapes, Item5LargeTensorStatisticsComeFromABoundedSample) {
  const int64_t n = 3 << 20;
  const auto s = summarize(Value(torch::arange(n, torch::kFloat)));
  EXPECT_EQ(s["stats_sampled"], true);
  EXPECT_EQ(s["min"], 0.0);
  EXPECT_GT(s["max"].get<double>(), 0.99 * static_cast<double>(n));  // an even stride reaches the end
  EXPECT_FALSE(s.contains("values"));
  // Not contiguous: a leading block, still bounded.
  const auto t = summarize(Value(torch::ones({2048, 2048}).t()));
  EXPECT_EQ(t["stats_sampled"], true);
  EXPECT_EQ(t["mean"], 1.0);
  EXPECT_EQ(t["shape"], nlohmann::json::array({2048, 2048}));
}

TEST(CodefyUIShapes, Item5OtherValues) {
  EXPECT_EQ(summarize(Value(0.5)), (nlohmann::json{{"type", "scalar"}, {"value", 0.5}}));
  EXPECT_EQ(summarize(Value(std::string(300, 'a')))["value"].get<std::string>().size(), 200u);
  const auto list = summarize(Value(nlohmann::json::array({1, 2, 3})));
  EXPECT_EQ(list["type"], "list");
  EXPECT_EQ(list["length"], 3);
  EXPECT_EQ(list["values"], nlohmann::json::array({1, 2, 3}));
  EXPECT_EQ(list["repr"], "[1,2,3]");
  const auto dict = summarize(Value(nlohmann::json{{"best_epoch", 2}}));
  EXPECT_EQ(dict["type"], "dict");
  EXPECT_EQ(dict["repr"], "{\"best_epoch\":2}");
}

TEST(CodefyUIShapes, AlsoFoundAMissingDataDirFallsBackWithAWarning) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    FAIL() << "Debian's dataset-fashion-mnist is missing (scripts/setup.sh installs it)";
  const nlohmann::json g = {
      {"name", "fallback"},
      {"nodes",
       {{{"id", "start"}, {"type", "Start"}, {"data", {{"params", nlohmann::json::object()}}}},
        {{"id", "images"},
         {"type", "Dataset"},
         {"data", {{"params", {{"name", "FashionMNIST"}, {"data_dir", "/no/such/folder"}, {"max_samples", 10}}}}}}}},
      {"edges", {{{"source", "start"}, {"sourceHandle", "trigger"}, {"target", "images"}, {"type", "trigger"}}}}};
  codefy::testing::Recorder rec;
  run_json(g, 0, &rec);
  ASSERT_EQ(rec.warnings.size(), 1u);
  const std::string& w = rec.warnings[0];
  EXPECT_NE(w.find("\"images\""), std::string::npos) << w;       // the node
  EXPECT_NE(w.find("/no/such/folder"), std::string::npos) << w;  // the folder asked for
  EXPECT_NE(w.find("does not exist"), std::string::npos) << w;
  EXPECT_NE(w.find("/usr/share/datasets/fashion-mnist"), std::string::npos) << w;  // the folder used
}

TEST(CodefyUIShapes, AlsoFoundCliValidateChecksTheLayersAgainstTheData) {
  const auto dir = temp_dir("validate_layers");
  // Linear wants 5 features; ToyDataset gives 2.
  const nlohmann::json g = codefy::testing::mlp_training_graph("shapes", 5, 8, 2, {{"n_samples", 20}},
                                                               {{"batch_size", 4}}, {{"type", "SGD"}}, {{"epochs", 1}});
  const auto path = (dir / "g.json").string();
  std::ofstream(path) << g.dump();
  auto r = run_codefy("validate " + path);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("graph \"shapes\": node mlp (SequentialModel), param \"layers\""), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("[2]"), std::string::npos) << r.output;

  nlohmann::json bad = g;
  for (auto& n : bad["nodes"])
    if (n["id"] == "mlp") n["data"]["params"]["layers"] = "[oops";
  std::ofstream(path) << bad.dump();
  r = run_codefy("validate " + path);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("node mlp (SequentialModel), param \"layers\""), std::string::npos) << r.output;
}

}  // namespace
}  // namespace codefy
