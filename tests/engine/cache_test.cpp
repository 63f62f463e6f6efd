// What the editor keeps between runs (R-MEM): file-reading nodes are served
// from the execution cache until their file changes; SequentialModel's module
// stays in the node state store so training continues where it stopped; an
// out-of-memory drops the failing node's entries (R-OOM-2).
#include "../common/test_support.h"
#include "device/memory.h"
#include "engine/oom.h"

#include <gtest/gtest.h>

#include <torch/torch.h>

#include <algorithm>
#include <fstream>

namespace codefy::testing {
namespace {

const nlohmann::json kStart = {{"id", "start"}, {"type", "Start"}, {"data", {{"params", nlohmann::json::object()}}}};

nlohmann::json node(const std::string& id, const std::string& type, const nlohmann::json& params) {
  return {{"id", id}, {"type", type}, {"data", {{"params", params}}}};
}

nlohmann::json trigger(const std::string& target) {
  return {{"source", "start"}, {"target", target}, {"type", "trigger"}};
}

/// How many cache entries belong to node `id` (keys start with "<id>#").
size_t entries_of(const ExecutionCache& cache, const std::string& id) {
  const auto keys = cache.keys();
  return std::count_if(keys.begin(), keys.end(), [&](const std::string& k) { return k.rfind(id + "#", 0) == 0; });
}

std::string status_of(const Recorder& r, const std::string& id) {
  std::string last;
  for (const auto& s : r.statuses)
    if (s.compare(0, id.size() + 1, id + ":") == 0) last = s.substr(id.size() + 1);
  return last;
}

void write_csv(const std::filesystem::path& p, int rows) {
  std::ofstream out(p);
  out << "a,b,label\n";
  for (int i = 0; i < rows; ++i) out << i << "," << i * 2 << "," << i % 2 << "\n";
}

/// Runs `g` (relative paths resolving in `dir`) with an execution cache.
RunResult run_cached(const nlohmann::json& g, const std::filesystem::path& dir, ExecutionCache& cache, Recorder& rec) {
  RunSettings s;
  s.base_dir = dir;
  s.cache = &cache;
  s.observer = &rec;
  return run_json(g, s);
}

TEST(ExecutionCache, CsvDatasetIsReadAgainOnlyWhenItsFileChanges) {
  const auto dir = temp_dir("csvcache");
  write_csv(dir / "d.csv", 10);
  const nlohmann::json g = {
      {"name", "csv"}, {"nodes", {kStart, node("c", "CSVDataset", {{"path", "d.csv"}})}}, {"edges", {trigger("c")}}};
  ExecutionCache cache({0, 100});
  auto run = [&](Recorder& rec) { return run_cached(g, dir, cache, rec); };
  Recorder first, second, third;
  run(first);
  EXPECT_EQ(status_of(first, "c"), "completed");
  auto r2 = run(second);
  EXPECT_EQ(status_of(second, "c"), "cached");
  EXPECT_EQ(std::get<train::DatasetPtr>(r2.outputs["c"]["dataset"])->size(), 10);

  write_csv(dir / "d.csv", 12);  // another size: another fingerprint
  auto r3 = run(third);
  EXPECT_EQ(status_of(third, "c"), "completed");
  EXPECT_EQ(std::get<train::DatasetPtr>(r3.outputs["c"]["dataset"])->size(), 12);
}

/// Writes an MNIST train split of `n` blank 28x28 images labelled 0..n-1 as
/// idx files straight into `dir` (one of the folders the loader searches).
void write_mnist_train(const std::filesystem::path& dir, uint32_t n) {
  auto idx = [](const std::filesystem::path& p, uint32_t magic, std::vector<uint32_t> dims, const std::string& data) {
    std::ofstream out(p, std::ios::binary);
    auto be32 = [&](uint32_t v) {
      const char b[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
      out.write(b, 4);
    };
    be32(magic);
    for (uint32_t d : dims) be32(d);
    out << data;
  };
  std::string labels;
  for (uint32_t i = 0; i < n; ++i) labels += static_cast<char>(i % 10);
  idx(dir / "train-images-idx3-ubyte", 0x803, {n, 28, 28}, std::string(n * 28 * 28, '\0'));
  idx(dir / "train-labels-idx1-ubyte", 0x801, {n}, labels);
}

TEST(ExecutionCache, DatasetIsReadAgainWhenAFileInDataDirItselfIsReplaced) {
  const auto dir = temp_dir("mnistcache");
  write_mnist_train(dir, 5);  // in <data_dir>/, not <data_dir>/MNIST/raw
  const nlohmann::json g = {{"name", "mnist"},
                            {"nodes", {kStart, node("d", "Dataset", {{"name", "MNIST"}, {"data_dir", "."}})}},
                            {"edges", {trigger("d")}}};
  ExecutionCache cache({0, 100});
  auto run = [&](Recorder& rec) { return run_cached(g, dir, cache, rec); };
  Recorder first, second, third;
  EXPECT_EQ(std::get<train::DatasetPtr>(run(first).outputs["d"]["dataset"])->size(), 5);
  EXPECT_EQ(status_of(first, "d"), "completed");
  run(second);
  EXPECT_EQ(status_of(second, "d"), "cached");

  write_mnist_train(dir, 7);
  auto r3 = run(third);
  EXPECT_EQ(status_of(third, "d"), "completed");
  EXPECT_EQ(std::get<train::DatasetPtr>(r3.outputs["d"]["dataset"])->size(), 7);
}

TEST(ExecutionCache, MissingFileIsNotCachedAndStillFailsNamingTheParam) {
  const auto dir = temp_dir("csvmissing");
  const nlohmann::json g = {
      {"name", "csv"}, {"nodes", {kStart, node("c", "CSVDataset", {{"path", "gone.csv"}})}}, {"edges", {trigger("c")}}};
  ExecutionCache cache({0, 100});
  RunSettings s;
  s.base_dir = dir;
  s.cache = &cache;
  EXPECT_THROW(run_json(g, s), NodeError);
  EXPECT_EQ(entries_of(cache, "c"), 0u);
  EXPECT_EQ(entries_of(cache, "start"), 1u);
}

nlohmann::json training_graph(int64_t hidden = 16) {
  return mlp_training_graph("persist", 2, hidden, 2, {{"n_samples", 64}, {"n_classes", 2}}, {{"batch_size", 16}},
                            {{"type", "SGD"}, {"lr", 0.1}}, {{"epochs", 1}, {"log_grad_norm", false}});
}

torch::Tensor first_weight(const RunResult& r, const std::string& node_id) {
  return std::get<train::ModelPtr>(r.outputs.at(node_id).at("model"))->parameters().front().detach().clone();
}

TEST(NodeStateStore, ModuleWeightsCarryOverBetweenRunsOfOneGraph) {
  NodeStateStore store({0, 200});
  auto run = [&](const nlohmann::json& g, const std::string& scope, Recorder& rec) {
    RunSettings s;
    s.state_store = &store;
    s.state_scope = scope;
    s.observer = &rec;
    return run_json(g, s);
  };
  // Reference computed without the store: a fresh module, trained once.
  const torch::Tensor trained_once = first_weight(run_json(training_graph()), "train");
  Recorder r1, r2, r3, r4;
  const RunResult a = run(training_graph(), "tab-1", r1);
  const torch::Tensor after_first = first_weight(a, "train");
  EXPECT_TRUE(torch::equal(after_first, trained_once)) << "the first run with the store trains as one without it";
  EXPECT_EQ(status_of(r1, "mlp"), "completed");
  EXPECT_EQ(store.stats().entries, 1u);
  EXPECT_GT(store.stats().bytes, 0);

  // Second run: the same module comes back (its weights are the trained
  // ones), and training moves them on from there.
  const RunResult b = run(training_graph(), "tab-1", r2);
  EXPECT_EQ(status_of(r2, "mlp"), "cached");
  EXPECT_EQ(std::get<train::ModelPtr>(b.outputs.at("mlp").at("model")),
            std::get<train::ModelPtr>(a.outputs.at("mlp").at("model")));
  EXPECT_FALSE(torch::equal(first_weight(b, "train"), after_first));

  // Another graph id does not see it; a changed layer spec builds afresh.
  run(training_graph(), "tab-2", r3);
  EXPECT_EQ(status_of(r3, "mlp"), "completed");
  run(training_graph(8), "tab-1", r4);
  EXPECT_EQ(status_of(r4, "mlp"), "completed");
  EXPECT_EQ(store.stats().entries, 2u);  // one per (graph, node): tab-1's entry was replaced
}

TEST(NodeStateStore, SizeIsMeasuredWhenTheModuleIsBuilt) {
  NodeStateStore store({0, 200});
  RunSettings s;
  s.state_store = &store;
  s.state_scope = "g";
  const RunResult r = run_json(training_graph(16), s);
  int64_t expected = 0;
  for (const auto& p : std::get<train::ModelPtr>(r.outputs.at("mlp").at("model"))->parameters())
    expected += p.numel() * static_cast<int64_t>(p.element_size());
  EXPECT_EQ(store.stats().bytes, expected);  // 2x16+16+16x2+2 floats; gradients grown later are not counted
}

TEST(ExecutionCache, OutOfMemoryDropsTheFailingNodesEntries) {
  ASSERT_TRUE(device::install_counting_allocator());
  struct BudgetReset {
    ~BudgetReset() { device::set_cpu_budget(0); }
  } reset;
  auto graph = [](int64_t samples) {
    return nlohmann::json{{"name", "oom"},
                          {"nodes",
                           {kStart, node("big", "ToyDataset", {{"n_samples", samples}, {"n_features", 64}}),
                            node("small", "ToyDataset", {{"n_samples", 10}})}},
                          {"edges", {trigger("big"), trigger("small")}}};
  };
  ExecutionCache cache({0, 100});
  RunSettings s;
  s.cache = &cache;
  run_json(graph(100), s);
  ASSERT_EQ(entries_of(cache, "big"), 1u);
  ASSERT_EQ(entries_of(cache, "small"), 1u);
  device::set_cpu_budget(device::cpu_memory().live_bytes + (16 << 20));
  EXPECT_THROW(run_json(graph(1000000), s), NodeOOMError);  // 256 MB of features
  EXPECT_EQ(entries_of(cache, "big"), 0u);                  // its entry from the first run went with the failure
  EXPECT_EQ(entries_of(cache, "small"), 1u);
  EXPECT_EQ(entries_of(cache, "start"), 1u);
}

}  // namespace
}  // namespace codefy::testing

namespace codefy {
namespace {

TEST(ExecutionCache, AVerboseRunDoesNotTakeAQuietRunsOutputsWithoutTheirSteps) {
  const nlohmann::json g = testing::read_json(testing::source_dir() / "examples/edu-rl-ppo-clip/graph.json");
  ExecutionCache cache({0, 100});
  auto run = [&](bool verbose) {
    RunSettings s;
    s.cache = &cache;
    s.verbose = verbose;
    return testing::run_json(g, s);
  };
  auto steps_of = [](const RunResult& r) {
    size_t n = 0;
    for (const auto& [id, outputs] : r.outputs)
      for (const auto& [port, v] : outputs) n += port.rfind("__step__", 0) == 0;
    return n;
  };
  EXPECT_EQ(steps_of(run(false)), 0u);
  EXPECT_GT(steps_of(run(true)), 0u) << "the verbose run was served the quiet run's outputs";
  EXPECT_GT(steps_of(run(true)), 0u) << "a verbose run from the cache keeps its steps";
}

}  // namespace
}  // namespace codefy
