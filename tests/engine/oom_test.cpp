// Out of memory (R-OOM): on this CPU-only machine the counting allocator's
// budget plays the full GPU. The report has R-OOM-1's layout with advice
// tailored to the graph, memory goes back to where it was, nothing is
// retried, and a smaller batch then runs in the same process.
#include "engine/oom.h"
#include "../common/test_support.h"
#include "device/memory.h"

#include <gtest/gtest.h>

#include <regex>

namespace codefy::testing {
namespace {

/// ToyDataset(512 x 256) → DataLoader → 256-8192-10 MLP → Adam → TrainingLoop:
/// activations grow with the batch (8192 floats per sample and layer).
nlohmann::json wide_mlp_graph(int64_t batch, const nlohmann::json& loop_params = nlohmann::json::object()) {
  nlohmann::json loop = {{"epochs", 1}, {"max_steps", 2}, {"log_grad_norm", false}};
  loop.update(loop_params);
  return mlp_training_graph("wide", 256, 8192, 10, {{"n_samples", 512}, {"n_features", 256}, {"n_classes", 10}},
                            {{"batch_size", batch}}, {{"type", "Adam"}}, loop);
}

struct BudgetReset {
  ~BudgetReset() { device::set_cpu_budget(0); }
};

TEST(OutOfMemory, ADatasetPastTheBudgetIsReportedAsOutOfMemoryNotAsItsFolder) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    FAIL() << "Debian's dataset-fashion-mnist is missing (scripts/setup.sh installs it)";
  ASSERT_TRUE(device::install_counting_allocator());
  BudgetReset reset;
  device::set_cpu_budget(device::cpu_memory().live_bytes + (32 << 20));  // 60000 images take 188 MiB as floats
  const nlohmann::json g = {{"name", "big-data"},
                            {"nodes",
                             {{{"id", "start"}, {"type", "Start"}},
                              {{"id", "images"},
                               {"type", "Dataset"},
                               {"data", {{"params", {{"name", "FashionMNIST"}, {"data_dir", "missing"}}}}}}}},
                            {"edges", {{{"source", "start"}, {"target", "images"}, {"type", "trigger"}}}}};
  try {
    run_json(g);
    FAIL() << "60000 images fitted a 32 MiB budget";
  } catch (const NodeOOMError& e) {
    EXPECT_EQ(e.node_id(), "images");
    EXPECT_NE(std::string(e.what()).find("ran out of memory on cpu"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("data_dir"), std::string::npos) << e.what();
  }
}

TEST(OutOfMemory, CpuBudgetGivesTheReportThenASmallerBatchRuns) {
  ASSERT_TRUE(device::install_counting_allocator());
  BudgetReset reset;
  const int64_t baseline = device::cpu_memory().live_bytes;
  device::set_cpu_budget(baseline + (64 << 20));
  std::string report;
  try {
    run_json(wide_mlp_graph(512));
    FAIL() << "batch 512 fitted a 64 MiB budget";
  } catch (const NodeOOMError& e) {
    report = e.what();
    EXPECT_EQ(e.node_id(), "train");
    EXPECT_EQ(e.node_type(), "TrainingLoop");
    EXPECT_EQ(e.device(), "cpu");
  }
  const std::regex layout(
      "Node TrainingLoop \\(train\\) ran out of memory on cpu\\.\n"
      "\n"
      "What to try, cheapest first:\n"
      "  - reduce batch_size on the DataLoader node loader \\(now 512\\)\n"
      "  - set TrainingLoop's precision to bf16 \\(roughly halves activation memory\\)\n"
      "  - raise TrainingLoop's accumulate_steps and lower batch_size by the same factor, which keeps the effective "
      "batch identical \\(e\\.g\\. accumulate_steps 2 with batch_size 256\\)\n"
      "  - make the model smaller, or shorten the sequence / shrink the image\n"
      "\n"
      "CPU memory: [0-9.]+ MiB held by live tensors when it failed, [0-9.]+ MiB peak this node, budget [0-9.]+ MiB\\.\n"
      "\n"
      "Original error: CPU memory budget exceeded: tried to allocate [0-9.]+ [KM]iB with [0-9.]+ MiB live of a "
      "[0-9.]+ MiB budget");
  EXPECT_TRUE(std::regex_match(report, layout)) << report;

  // Everything the failed run held is gone: no retry, nothing cached (R-OOM-2, R-OOM-3).
  EXPECT_LE(device::cpu_memory().live_bytes, baseline + (256 << 10));

  // Same process, same budget, a smaller batch: it trains.
  RunResult ok = run_json(wide_mlp_graph(16));
  const auto& metrics = std::get<nlohmann::json>(ok.outputs.at("train").at("metrics"));
  EXPECT_EQ(metrics["total_steps"], 2);
  EXPECT_LE(metrics["peak_memory_bytes"]["cpu"].get<int64_t>(), baseline + (64 << 20));
  EXPECT_GT(ok.peak_cpu_bytes.at("train"), 0);
}

TEST(OutOfMemory, AdviceLeavesOutWhatIsAlreadyDone) {
  auto advice_for = [](const nlohmann::json& g, c10::Device d = c10::Device(c10::kCPU)) {
    const graph::Graph graph = graph::graph_from_json(g, "t");
    nlohmann::json params = {{"precision", "fp32"}, {"accumulate_steps", 1}};  // TrainingLoop's defaults
    params.update(graph.node("train")->params);
    return oom_advice(nodes::builtin(), graph, "train", params, d);
  };
  // bf16 already: no precision advice; batch 1: nothing to lower, so no batch or accumulation advice.
  EXPECT_EQ(advice_for(wide_mlp_graph(1, {{"precision", "bf16"}})),
            (std::vector<std::string>{"make the model smaller, or shorten the sequence / shrink the image"}));
  // An odd batch: accumulation advice without a worked example; CUDA wording for bf16.
  const auto cuda = advice_for(wide_mlp_graph(5, {{"accumulate_steps", 3}}), c10::Device(c10::kCUDA, 0));
  ASSERT_EQ(cuda.size(), 4u);
  EXPECT_EQ(cuda[0], "reduce batch_size on the DataLoader node loader (now 5)");
  EXPECT_EQ(cuda[1], "set TrainingLoop's precision to bf16 (roughly halves activation memory on Ampere and newer)");
  EXPECT_EQ(cuda[2],
            "raise TrainingLoop's accumulate_steps and lower batch_size by the same factor, which keeps the "
            "effective batch identical");
  // The worked example starts from the current accumulate_steps.
  EXPECT_NE(advice_for(wide_mlp_graph(64, {{"accumulate_steps", 4}}))[2].find("accumulate_steps 8 with batch_size 32"),
            std::string::npos);
  // A node that batches by itself (EvaluateModel) is told about its own batch_size, not a training loader.
  nlohmann::json g = wide_mlp_graph(64);
  g["nodes"].push_back({{"id", "eval"}, {"type", "EvaluateModel"}, {"data", {{"params", nlohmann::json::object()}}}});
  g["edges"].push_back({{"source", "train"}, {"sourceHandle", "model"}, {"target", "eval"}, {"targetHandle", "model"}});
  EXPECT_EQ(oom_advice(nodes::builtin(), graph::graph_from_json(g, "t"), "eval", {{"batch_size", 256}},
                       c10::Device(c10::kCPU)),
            (std::vector<std::string>{"reduce batch_size on this EvaluateModel node (now 256)",
                                      "make the model smaller, or shorten the sequence / shrink the image"}));
}

// #28: the advice comes from what node definitions declare, not from node
// type names: a trainer and a batcher of another name get the same advice.
TEST(OutOfMemory, AdviceFollowsTheDeclaredMemoryHintsOfAnyNodeType) {
  NodeRegistry catalog;
  graph::NodeDef batcher{
      "Batcher", "Test", "", {}, {def::out("batches", graph::DataType::kAny, "")}, {def::integer("chunk", 8, "")}};
  batcher.memory_hints.batch_param = "chunk";
  graph::NodeDef trainer{
      "Fitter", "Test",
      "",       {def::in("feed", graph::DataType::kAny, "")},
      {},       {def::text("dtype", "fp32", ""), def::integer("merge", 1, ""), def::text("mode", "solo", "")}};
  trainer.memory_hints = {"", "feed", "dtype", "merge"};
  trainer.ranks_when = {"mode", "team"};
  catalog.add(batcher, [](NodeContext&) { return ValueMap{}; });
  catalog.add(trainer, [](NodeContext&) { return ValueMap{}; });
  const nlohmann::json g = {
      {"name", "t"},
      {"nodes",
       {{{"id", "b"}, {"type", "Batcher"}, {"data", {{"params", {{"chunk", 12}}}}}},
        {{"id", "f"}, {"type", "Fitter"}, {"data", {{"params", nlohmann::json::object()}}}}}},
      {"edges", {{{"source", "b"}, {"sourceHandle", "batches"}, {"target", "f"}, {"targetHandle", "feed"}}}}};
  EXPECT_EQ(oom_advice(catalog, graph::graph_from_json(g, "t"), "f", {{"dtype", "fp32"}, {"merge", 1}},
                       c10::Device(c10::kCPU)),
            (std::vector<std::string>{
                "reduce chunk on the Batcher node b (now 12)",
                "set Fitter's dtype to bf16 (roughly halves activation memory)",
                "raise Fitter's merge and lower chunk by the same factor, which keeps the effective batch identical "
                "(e.g. merge 2 with chunk 6)",
                "make the model smaller, or shorten the sequence / shrink the image"}));
  EXPECT_TRUE(catalog.find("Fitter")->wants_ranks({{"mode", "team"}}));
  EXPECT_FALSE(catalog.find("Fitter")->wants_ranks({{"mode", "solo"}}));
  EXPECT_FALSE(catalog.find("Batcher")->wants_ranks({{"mode", "team"}}));
}

TEST(OutOfMemory, CudaMemoryLineAsTheSpecShowsIt) {
  device::MemoryReading m;
  m.device = c10::Device(c10::kCUDA, 0);
  m.counted = true;
  const double GiB = 1LL << 30;
  m.live_bytes = static_cast<int64_t>(14.82 * GiB);
  m.reserved_bytes = static_cast<int64_t>(15.44 * GiB);
  m.peak_bytes = static_cast<int64_t>(15.61 * GiB);
  m.total_bytes = static_cast<int64_t>(15.99 * GiB);
  EXPECT_EQ(oom_memory_line(m, m.live_bytes),
            "CUDA memory on cuda:0: 14.82 GiB held by live tensors, 15.44 GiB reserved by the caching allocator, "
            "15.61 GiB peak this process, 15.99 GiB on the card.");
  device::MemoryReading uncounted;
  EXPECT_EQ(oom_memory_line(uncounted, 0), "");
  EXPECT_EQ(
      oom_report("Inference", "n3", c10::Device(c10::kCPU), {"a"}, "", "boom"),
      "Node Inference (n3) ran out of memory on cpu.\n\nWhat to try, cheapest first:\n  - a\n\nOriginal error: boom");
}

TEST(OutOfMemory, TheCliExitsWithItsOwnCodeAndTheReport) {
  const auto dir = temp_dir("oom-cli");
  write_json_file(dir / "wide.json", wide_mlp_graph(512));
  for (const std::string& how : {std::string("--memory-budget-mb 48"), std::string("")}) {
    const Command c = run_codefy("run " + (dir / "wide.json").string() + " " + how,
                                 how.empty() ? "CODEFYUI_CPU_MEMORY_BUDGET_MB=48" : "");
    EXPECT_EQ(c.exit_code, 4) << c.output;
    EXPECT_NE(c.output.find("Node TrainingLoop (train) ran out of memory on cpu."), std::string::npos) << c.output;
    EXPECT_NE(c.output.find("reduce batch_size on the DataLoader node loader (now 512)"), std::string::npos);
    EXPECT_NE(c.output.find("budget 48.0 MiB."), std::string::npos) << c.output;
    EXPECT_NE(c.output.find("Original error: CPU memory budget exceeded"), std::string::npos);
  }
  const Command bad = run_codefy("run " + (dir / "wide.json").string(), "CODEFYUI_CPU_MEMORY_BUDGET_MB=lots");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("CODEFYUI_CPU_MEMORY_BUDGET_MB must be a whole number of MB"), std::string::npos);
}

}  // namespace
}  // namespace codefy::testing
