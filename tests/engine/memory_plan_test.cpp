// `codefy plan` (issue #29): the peak it predicts from two measured
// micro-batches against real runs at 2x, 3x and 4x the larger one; the
// largest micro-batch it names trains under that budget and 1.25x it runs out
// of memory with the report; options reach the effective batch exactly; a
// budget too small even for a micro-batch of 1 exits as an out-of-memory run.
#include "device/memory.h"
#include "engine/memory_plan.h"
#include "../common/test_support.h"
#include "../model/spec_builder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

namespace codefy::testing {
namespace {

nlohmann::json toy_graph(const nlohmann::json& layers, int64_t features, int64_t batch, const std::string& precision) {
  nlohmann::json g = mlp_training_graph("plan", 1, 1, 1, {{"n_samples", 512}, {"n_features", features}, {"n_classes", 10}},
                                        {{"batch_size", batch}, {"shuffle", true}}, {{"type", "Adam"}, {"lr", 1e-3}},
                                        {{"epochs", 1}, {"device", "cpu"}, {"precision", precision}});
  set_param(g, "mlp", "layers", layers.dump());
  return g;
}

nlohmann::json mlp_layers() {
  return model::Spec()
      .layer("l1", "Linear", {{"in_features", 64}, {"out_features", 256}})
      .layer("a1", "ReLU")
      .layer("l2", "Linear", {{"in_features", 256}, {"out_features", 256}})
      .layer("a2", "ReLU")
      .layer("l3", "Linear", {{"in_features", 256}, {"out_features", 10}})
      .chain({"l1", "a1", "l2", "a2", "l3"})
      .build();
}

nlohmann::json cnn_layers() {
  return model::Spec()
      .layer("r", "Reshape", {{"shape", "3,32,32"}})
      .layer("c1", "Conv2d", {{"in_channels", 3}, {"out_channels", 16}, {"kernel_size", 3}, {"padding", 1}})
      .layer("a1", "ReLU")
      .layer("c2", "Conv2d", {{"in_channels", 16}, {"out_channels", 16}, {"kernel_size", 3}, {"padding", 1}})
      .layer("a2", "ReLU")
      .layer("p", "AdaptiveAvgPool2d", {{"output_size", 1}})
      .layer("f", "Flatten")
      .layer("fc", "Linear", {{"in_features", 16}, {"out_features", 10}})
      .chain({"r", "c1", "a1", "c2", "a2", "p", "f", "fc"})
      .build();
}

/// The forecast example with its series shortened (same model, loop and validation).
nlohmann::json forecast_graph() {
  nlohmann::json g = read_json(source_dir() / "examples/forecast-tcn-transformer/graph.json");
  set_param(g, "series", "steps", 1024);
  return g;
}

int64_t trainer_peak(const RunResult& r) {
  const auto& m = std::get<nlohmann::json>(r.outputs.at("train").at("metrics"));
  return m["peak_memory_bytes"]["cpu"].get<int64_t>();
}

/// Plans `g` in-process, then runs it for real at 2x, 3x and 4x the larger
/// measured micro-batch (two updates, its validation pass as wired) and
/// compares the peaks.
MemoryPlan expect_predictions_hold(const nlohmann::json& g, const std::string& loader, PlanOptions options = {}) {
  EXPECT_TRUE(device::install_counting_allocator());
  RunSettings s;
  s.threads_forced = true;
  s.base_dir = source_dir() / "examples/forecast-tcn-transformer";
  graph::Graph graph = graph::graph_from_json(g, "test");
  graph.base_dir = s.base_dir;
  const MemoryPlan plan = plan_memory(graph, nodes::builtin(), s, options);
  EXPECT_EQ(plan.plans.size(), 1u);
  if (plan.plans.size() != 1) return plan;
  const TrainingPlan& p = plan.plans[0];
  EXPECT_EQ(p.node_id, "train");
  EXPECT_EQ(p.batch_node_id, loader);
  EXPECT_EQ(p.batch_param, "batch_size");
  EXPECT_EQ(p.model.measured.size(), 2u);
  if (p.model.measured.size() != 2) return plan;
  EXPECT_GT(p.model.per_sample_bytes, 0);
  const int64_t m = p.model.measured[1].micro_batch;
  for (const int64_t k : {2 * m, 3 * m, 4 * m}) {
    nlohmann::json real = g;
    set_param(real, loader, "batch_size", k);
    set_param(real, "train", "max_steps", 2);
    set_param(real, "train", "epochs", 1);
    const double measured = static_cast<double>(trainer_peak(run_json(real, s)));
    const double predicted = static_cast<double>(p.model.predict(k));
    std::cout << "micro-batch " << k << ": predicted " << predicted / (1 << 20) << " MiB, measured "
              << measured / (1 << 20) << " MiB\n";
    EXPECT_NEAR(predicted / measured, 1.0, 0.10) << "micro-batch " << k;
  }
  return plan;
}

TEST(MemoryPlan, Issue29_PredictsTheRealPeakOfAnMlpWithin10Percent) {
  expect_predictions_hold(toy_graph(mlp_layers(), 64, 64, "fp32"), "loader");
}

TEST(MemoryPlan, Issue29_PredictsTheRealPeakOfACnnWithin10Percent) {
  expect_predictions_hold(toy_graph(cnn_layers(), 3 * 32 * 32, 64, "bf16"), "loader");
}

TEST(MemoryPlan, Issue29_PredictsTheRealPeakOfTheForecastTcnTransformerWithin10Percent) {
  expect_predictions_hold(forecast_graph(), "loader");
}

TEST(MemoryPlan, Issue29_OptionsReachTheTargetEffectiveBatchExactlyAndSayWhetherTheyFit) {
  PlanOptions o;
  o.budget_bytes = 24 << 20;
  o.target_effective_batch = 96;
  const MemoryPlan plan = expect_predictions_hold(toy_graph(cnn_layers(), 3 * 32 * 32, 64, "fp32"), "loader", o);
  ASSERT_EQ(plan.plans.size(), 1u);
  const TrainingPlan& p = plan.plans[0];
  EXPECT_EQ(p.available_bytes, 24 << 20);
  EXPECT_EQ(p.available_source, "--budget-mb");
  bool bf16 = false;
  for (const PlanOption& opt : p.options) {
    EXPECT_EQ(opt.micro_batch * opt.accumulate_steps, 96);
    EXPECT_EQ(opt.effective_batch, 96);
    EXPECT_EQ(opt.fits, opt.predicted_peak_bytes * 1.1 <= p.available_bytes) << opt.micro_batch;
    bf16 = bf16 || opt.precision == "bf16";
  }
  EXPECT_TRUE(bf16) << "the CPU's bf16 is offered beside the graph's fp32";
  // The largest micro-batch that fits is the last whose prediction fits.
  EXPECT_LE(p.model.predict(p.max_micro_batch) * 1.1, p.available_bytes);
  EXPECT_GT(p.model.predict(p.max_micro_batch + 1) * 1.1, p.available_bytes);
}

/// The graph as a file, for the CLI.
std::filesystem::path write_graph(const nlohmann::json& g, const std::string& name) {
  const auto path = temp_dir("memory-plan") / (name + ".json");
  std::ofstream(path) << g.dump();
  return path;
}

TEST(MemoryPlan, Issue29_TheLargestMicroBatchItNamesTrainsUnderTheBudgetAnd125xItRunsOutOfMemory) {
  const int64_t budget_mb = 48;
  const auto plan_file = write_graph(toy_graph(cnn_layers(), 3 * 32 * 32, 64, "fp32"), "cnn");
  const Command c = run_codefy("plan " + plan_file.string() + " --json --budget-mb " + std::to_string(budget_mb));
  ASSERT_EQ(c.exit_code, 0) << c.output;
  const nlohmann::json plan = nlohmann::json::parse(c.output);
  const int64_t max_micro = plan["plans"][0]["max_micro_batch"].get<int64_t>();
  ASSERT_GT(max_micro, 8) << c.output;
  ASSERT_LT(max_micro * 5 / 4, 512) << "the data set holds 512 samples";

  auto run_at = [&](int64_t batch) {
    nlohmann::json g = toy_graph(cnn_layers(), 3 * 32 * 32, batch, "fp32");
    set_param(g, "train", "max_steps", 2);
    return run_codefy("run " + write_graph(g, "cnn-" + std::to_string(batch)).string() + " --memory-budget-mb " +
                      std::to_string(budget_mb));
  };
  const Command fits = run_at(max_micro);
  EXPECT_EQ(fits.exit_code, 0) << fits.output;
  const Command too_large = run_at((max_micro * 5 + 3) / 4);
  EXPECT_EQ(too_large.exit_code, kExitOutOfMemory) << too_large.output;
  EXPECT_NE(too_large.output.find("ran out of memory on cpu"), std::string::npos) << too_large.output;
}

TEST(MemoryPlan, Issue29_ABudgetBelowOneSampleExitsAsOutOfMemoryAndMeasuresWithinIt) {
  const auto file = write_graph(toy_graph(cnn_layers(), 3 * 32 * 32, 64, "fp32"), "tiny-budget");
  const Command c = run_codefy("plan " + file.string() + " --json --budget-mb 1");
  EXPECT_EQ(c.exit_code, kExitOutOfMemory) << c.output;
  const nlohmann::json plan = nlohmann::json::parse(c.output, nullptr, false);
  ASSERT_TRUE(plan.is_object()) << c.output;
  EXPECT_EQ(plan["fits"], false);
  EXPECT_EQ(plan["plans"][0]["fits"], false);
  EXPECT_EQ(plan["plans"][0]["max_micro_batch"], 0);
  EXPECT_NE(plan["plans"][0]["notes"].dump().find("Even a micro-batch of 1 does not fit"), std::string::npos);

  const Command text = run_codefy("plan " + file.string());  // no budget: the machine's RAM, and it fits
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("available RAM now"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("largest micro-batch that fits"), std::string::npos) << text.output;
}

TEST(MemoryPlan, Issue29_AGraphWithoutATrainingLoopIsAnInputErrorNamingIt) {
  const nlohmann::json g = {{"name", "nothing to train"},
                            {"nodes", {{{"id", "start"}, {"type", "Start"}, {"data", {{"params", nlohmann::json::object()}}}}}},
                            {"edges", nlohmann::json::array()}};
  const Command c = run_codefy("plan " + write_graph(g, "none").string());
  EXPECT_NE(c.exit_code, 0);
  EXPECT_NE(c.output.find("\"nothing to train\" has no training node"), std::string::npos) << c.output;
}

}  // namespace
}  // namespace codefy::testing
