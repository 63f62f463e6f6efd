// The forecasting nodes (src/nodes/series_nodes.cpp) and the article's
// workload, examples/forecast-tcn-transformer, run shortened.
#include "../common/test_support.h"

#include <torch/torch.h>

#include <fstream>

namespace codefy {
namespace {

using codefy::testing::read_json;
using codefy::testing::run_json;
using codefy::testing::set_param;
using codefy::testing::source_dir;
using nlohmann::json;

/// The example's model and training recipe on a 400-step series and 48-step
/// windows, for one epoch cut after `updates` updates (of 8 micro-batches).
json short_forecast_example(int64_t updates) {
  json g = read_json(source_dir() / "examples/forecast-tcn-transformer/graph.json");
  set_param(g, "series", "steps", 400);
  set_param(g, "series", "window", 48);
  set_param(g, "train", "epochs", 1);
  set_param(g, "train", "max_steps", updates);
  return g;
}

TEST(Forecast, TheArticlesWorkloadTrainsInBf16WithAccumulationAndDrawsItsForecast) {
  json g = short_forecast_example(2);
  set_param(g, "train", "device", "cpu");
  const RunResult r = run_json(g, 5);
  const json m = std::get<json>(r.outputs.at("train").at("metrics"));
  EXPECT_EQ(m["precision"], "bf16");
  EXPECT_EQ(m["accumulate_steps"], 8);
  EXPECT_EQ(m["effective_batch_size"], 128);
  EXPECT_EQ(m["total_steps"], 2);
  EXPECT_TRUE(m["grad_norm"].is_number()) << m;
  EXPECT_TRUE(std::isfinite(m["final_train_loss"].get<double>())) << m;
  const double mse = std::get<double>(r.outputs.at("forecast").at("mse"));
  EXPECT_TRUE(std::isfinite(mse));
  EXPECT_EQ(std::get<torch::Tensor>(r.outputs.at("forecast").at("forecast")).numel(), 16);
  const torch::Tensor truth = std::get<torch::Tensor>(r.outputs.at("forecast").at("truth"));
  EXPECT_NEAR((std::get<torch::Tensor>(r.outputs.at("forecast").at("forecast")) - truth).pow(2).mean().item<double>(),
              mse, 1e-6);
  EXPECT_GT(std::get<Image>(r.outputs.at("forecast").at("image")).base64_png.size(), 1000u);
}

TEST(Forecast, TheCommandLineWritesTheForecastPlotBesideTheLossPlot) {
  json g = short_forecast_example(1);
  const auto dir = codefy::testing::temp_dir("forecast_cli");
  std::ofstream(dir / "graph.json") << g.dump();
  const auto c =
      codefy::testing::run_codefy("run " + (dir / "graph.json").string() + " --out " + (dir / "out").string());
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("forecast:\n  mse"), std::string::npos) << c.output;
  for (const char* png : {"forecast.png", "losses.png"}) {
    std::ifstream f(dir / "out" / png, std::ios::binary);
    std::string head(8, '\0');
    f.read(head.data(), 8);
    EXPECT_EQ(head, std::string("\x89PNG\r\n\x1a\n", 8)) << png;
  }
}

TEST(Forecast, TheLastValidationTruthIsTheSeriesEnd) {
  json g = short_forecast_example(1);
  const RunResult r = run_json(g, 5);
  const torch::Tensor series = std::get<torch::Tensor>(r.outputs.at("series").at("series"));
  const torch::Tensor truth = std::get<torch::Tensor>(r.outputs.at("forecast").at("truth"));
  // stride 2: the last window's horizon ends at or one step before the series' end.
  const int64_t steps = series.size(0), h = truth.numel();
  const bool at_end = torch::equal(truth, series.select(1, 0).narrow(0, steps - h, h));
  const bool one_before = torch::equal(truth, series.select(1, 0).narrow(0, steps - h - 1, h));
  EXPECT_TRUE(at_end || one_before);
}

TEST(Forecast, TimeSeriesDatasetReadsACsvsNumericColumns) {
  const auto dir = codefy::testing::temp_dir("series_csv");
  {
    std::ofstream f(dir / "s.csv");
    f << "day,load,temp\n";
    for (int i = 0; i < 60; ++i) f << "d" << i << "," << i << "," << (100 - i) << "\n";
  }
  json g = {
      {"name", "csv"},
      {"nodes",
       {{{"id", "start"}, {"type", "Start"}, {"data", {{"params", json::object()}}}},
        {{"id", "s"},
         {"type", "TimeSeriesDataset"},
         {"data",
          {{"params", {{"source", "csv"}, {"path", "s.csv"}, {"window", 5}, {"horizon", 2}, {"normalize", false}}}}}}}},
      {"edges", {{{"source", "start"}, {"sourceHandle", "trigger"}, {"target", "s"}, {"type", "trigger"}}}}};
  const RunResult r = run_json(g, 0, nullptr, dir);
  const torch::Tensor series = std::get<torch::Tensor>(r.outputs.at("s").at("series"));
  ASSERT_EQ(series.sizes(), (std::vector<int64_t>{60, 2})) << "the text column is left out";
  EXPECT_EQ(series[7][0].item<float>(), 7.f);
  EXPECT_EQ(series[7][1].item<float>(), 93.f);
  const auto& train = std::get<train::DatasetPtr>(r.outputs.at("s").at("train_dataset"));
  EXPECT_TRUE(torch::equal(train->targets[3], torch::tensor({8.f, 9.f})));

  set_param(g, "s", "window", 50);
  try {
    run_json(g, 0, nullptr, dir);
    FAIL() << "a window longer than the training part was accepted";
  } catch (const NodeError& e) {
    EXPECT_EQ(e.node_id(), "s");
    EXPECT_NE(std::string(e.what()).find("window"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace codefy
