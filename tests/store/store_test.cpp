// The bounded stores (R-MEM-1..3): LRU eviction by bytes and by count, 0
// turning the byte cap off, sizing by tensor storage with views and shared
// tensors counted once, and the settings from the environment.
#include "engine/value.h"
#include "store/lru.h"
#include "store/sizing.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>

namespace codefy::store {
namespace {

TEST(LruStore, ByteCapEvictsTheLeastRecentlyUsed) {
  LruStore<int> s({100, 0});
  s.put("a", 1, 40);
  s.put("b", 2, 40);
  EXPECT_EQ(s.get("a"), 1);  // a is now more recent than b
  s.put("c", 3, 40);         // 120 > 100: b goes, not a
  EXPECT_EQ(s.keys(), (std::vector<std::string>{"c", "a"}));
  EXPECT_FALSE(s.get("b").has_value());
  EXPECT_EQ(s.stats().bytes, 80);
  EXPECT_EQ(s.stats().evictions, 1);
  s.put("d", 4, 100);  // exactly the cap: everything else goes
  EXPECT_EQ(s.keys(), (std::vector<std::string>{"d"}));
  EXPECT_FALSE(s.put("huge", 5, 101));  // larger than the cap alone: not stored, nothing evicted
  EXPECT_EQ(s.keys(), (std::vector<std::string>{"d"}));
}

TEST(LruStore, CountCapEvictsTheLeastRecentlyUsed) {
  LruStore<std::string> s({0, 2});
  s.put("x", "1", 1);
  s.put("y", "2", 1);
  s.get("x");
  s.put("z", "3", 1);
  EXPECT_EQ(s.keys(), (std::vector<std::string>{"z", "x"}));
  EXPECT_EQ(s.stats().entries, 2u);
}

TEST(LruStore, ZeroTurnsTheByteCapOffButTheCountCapRemains) {
  LruStore<int> s({0, 3});
  for (int i = 0; i < 5; ++i) s.put("k" + std::to_string(i), i, int64_t{1} << 40);
  EXPECT_EQ(s.stats().entries, 3u);
  EXPECT_EQ(s.stats().bytes, int64_t{3} << 40);
  EXPECT_EQ(s.keys(), (std::vector<std::string>{"k4", "k3", "k2"}));
}

TEST(LruStore, ReplacingAKeyRecountsItsBytesAndEraseIfRemovesMatches) {
  LruStore<int> s({1000, 0});
  s.put("conn1/a", 1, 100);
  s.put("conn1/a", 2, 300);
  s.put("conn2/a", 3, 50);
  EXPECT_EQ(s.stats().bytes, 350);
  EXPECT_EQ(s.get("conn1/a"), 2);
  EXPECT_EQ(s.erase_if([](const std::string& k) { return k.rfind("conn1/", 0) == 0; }), 1u);
  EXPECT_EQ(s.stats().bytes, 50);
  EXPECT_TRUE(s.erase("conn2/a"));
  EXPECT_FALSE(s.erase("conn2/a"));
  EXPECT_EQ(s.stats().bytes, 0);
}

TEST(Sizing, ATensorAndItsViewsCountOnce) {
  const auto t = torch::zeros({256, 256});  // 256 KiB
  StorageCounter c;
  c.add(t);
  c.add(t.narrow(0, 0, 10));
  c.add(t.t());
  c.add(t.view({-1}));
  EXPECT_EQ(c.total(), 256 * 256 * 4);
  c.add(t.clone());  // a copy is new storage
  EXPECT_EQ(c.total(), 2 * 256 * 256 * 4);
  EXPECT_EQ(c.cpu_bytes(), c.total());
}

struct LinearModel : train::Model {
  LinearModel() : lin(register_module("lin", torch::nn::Linear(100, 50))) {}
  torch::Tensor forward(const torch::Tensor& x) override { return lin->forward(x); }
  torch::nn::Linear lin;
};

TEST(Sizing, ValuesThatShareTensorsCountThemOnce) {
  auto model = std::make_shared<LinearModel>();
  auto& lin = model->lin;  // 5050 floats
  const int64_t params = (100 * 50 + 50) * 4;
  train::OptimizerOptions oo;
  oo.type = "Adam";
  auto opt = std::make_shared<train::OptimizerHandle>(
      train::OptimizerHandle{"Adam", oo, std::make_unique<torch::optim::Adam>(model->parameters()), model});
  ValueMap outputs{{"model", train::ModelPtr(model)}, {"optimizer", opt}};
  EXPECT_EQ(value_bytes(outputs), params);  // no state yet; parameters once though both hold them
  lin->forward(torch::ones({2, 100})).sum().backward();
  opt->optimizer->step();  // Adam now keeps exp_avg and exp_avg_sq per parameter
  EXPECT_EQ(value_bytes(outputs), 3 * params);
  EXPECT_EQ(value_bytes({{"model", train::ModelPtr(model)}}), params);  // gradients are not the model's size (R-MEM-3)

  auto ds = std::make_shared<train::Dataset>();
  ds->inputs = torch::zeros({10, 4});
  ds->targets = torch::zeros({10}, torch::kLong);
  train::DataLoaderOptions lo;
  auto loader = std::make_shared<const train::DataLoader>(ds, lo);
  EXPECT_EQ(value_bytes({{"dataset", train::DatasetPtr(ds)}, {"loader", train::DataLoaderPtr(loader)}}),
            10 * 4 * 4 + 10 * 8);
  EXPECT_EQ(value_bytes({{"text", std::string("hello")}, {"none", std::monostate{}}}), 5);
}

TEST(StoreSettings, DefaultsEnvironmentAndZero) {
  for (const char* v :
       {"CODEFYUI_EXECUTION_CACHE_MAX_MB", "CODEFYUI_RUN_OUTPUT_STORE_MAX_MB", "CODEFYUI_NODE_STATE_STORE_MAX_MB"})
    unsetenv(v);
  StoreSettings d = StoreSettings::from_env();
  EXPECT_EQ(d.execution_cache.max_bytes, int64_t{1} << 30);
  EXPECT_EQ(d.run_output_store.max_bytes, int64_t{2} << 30);
  EXPECT_EQ(d.run_output_store.max_entries, 20u);
  EXPECT_EQ(d.node_state_store.max_bytes, int64_t{1} << 30);
  EXPECT_EQ(d.node_state_store.max_entries, 200u);
  setenv("CODEFYUI_EXECUTION_CACHE_MAX_MB", "64", 1);
  setenv("CODEFYUI_NODE_STATE_STORE_MAX_MB", "0", 1);
  StoreSettings e = StoreSettings::from_env();
  EXPECT_EQ(e.execution_cache.max_bytes, int64_t{64} << 20);
  EXPECT_EQ(e.node_state_store.max_bytes, 0);
  EXPECT_EQ(e.node_state_store.max_entries, 200u);  // the count cap remains
  setenv("CODEFYUI_RUN_OUTPUT_STORE_MAX_MB", "2GB", 1);
  try {
    StoreSettings::from_env();
    FAIL() << "accepted 2GB";
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what()).find("CODEFYUI_RUN_OUTPUT_STORE_MAX_MB must be a whole number of MB"),
              std::string::npos);
  }
  for (const char* v :
       {"CODEFYUI_EXECUTION_CACHE_MAX_MB", "CODEFYUI_RUN_OUTPUT_STORE_MAX_MB", "CODEFYUI_NODE_STATE_STORE_MAX_MB"})
    unsetenv(v);
}

}  // namespace
}  // namespace codefy::store
