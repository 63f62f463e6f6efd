// A training run's progress events as types (issue #28): each to_json reads
// back by from_json as it was, writes only fields progress_schema() names,
// and an event of another shape is not taken for one of them.
#include "train/progress.h"

#include <gtest/gtest.h>

namespace codefy::train {
namespace {

using nlohmann::json;

/// Every field of `j` is named by `schema`, each of the schema's required fields is there.
void expect_fits(const json& schema, const json& j) {
  for (const auto& [k, v] : j.items()) EXPECT_TRUE(schema["properties"].contains(k)) << k << " in " << j.dump();
  for (const auto& r : schema["required"]) EXPECT_TRUE(j.contains(r.get<std::string>())) << r << " in " << j.dump();
}

TEST(ProgressEvents, Issue28_EachEventReadsBackAsItWasAndFitsItsSchema) {
  const json schema = progress_schema();

  BatchProgress b;
  b.epoch = 2, b.total_epochs = 3, b.batch = 5, b.total_batches = 9, b.step = 14;
  b.loss = 0.25, b.lr = 1e-3, b.samples_per_s = 1234.5, b.grad_norm = 0.75;
  const json bj = b.to_json();
  expect_fits(schema["batch"], bj);
  const auto b2 = BatchProgress::from_json(bj);
  ASSERT_TRUE(b2);
  EXPECT_EQ(b2->to_json(), bj);
  EXPECT_EQ(b2->step, 14);
  EXPECT_EQ(b2->loss, 0.25);
  EXPECT_EQ(progress_kind(bj), ProgressKind::kBatch);

  // A sampler's batch progress: the counts and its timestep, nothing of training.
  BatchProgress sampler;
  sampler.batch = 3, sampler.total_batches = 50, sampler.timestep = 47;
  const json sj = sampler.to_json();
  expect_fits(schema["batch"], sj);
  EXPECT_FALSE(sj.contains("loss"));
  EXPECT_EQ(BatchProgress::from_json(sj)->timestep, 47);

  EpochProgress e;
  e.epoch = 3, e.total_epochs = 3, e.step = 27, e.loss = 0.5, e.lr = 0.01, e.seconds = 1.5;
  e.val_loss = 0.6, e.val_accuracy = 0.9, e.patience_counter = 1, e.best_epoch = 2;
  e.losses = std::vector<double>{0.9, 0.7, 0.5};
  e.val_losses = std::vector<double>{1.0, 0.8, 0.6};
  e.val_accuracies = std::vector<double>{0.5, 0.8, 0.9};
  e.peak_memory_bytes = {{"cpu", 1024}};
  const json ej = e.to_json();
  expect_fits(schema["epoch"], ej);
  const auto e2 = EpochProgress::from_json(ej);
  ASSERT_TRUE(e2);
  EXPECT_EQ(e2->to_json(), ej);
  EXPECT_EQ(*e2->losses, *e.losses);

  ConfigProgress c{{{"epochs", 3}, {"device", "cpu"}}};
  const json cj = c.to_json();
  expect_fits(schema["config"], cj);
  EXPECT_EQ(ConfigProgress::from_json(cj)->config, c.config);
}

TEST(ProgressEvents, Issue28_AnEventOfAnotherShapeIsNotTakenForOne) {
  EXPECT_FALSE(BatchProgress::from_json({{"event", "epoch"}, {"batch", 1}, {"total_batches", 2}}));
  EXPECT_FALSE(BatchProgress::from_json({{"event", "batch"}, {"batch", "1"}, {"total_batches", 2}}));
  EXPECT_FALSE(BatchProgress::from_json({{"event", "batch"}, {"total_batches", 2}}));
  EXPECT_FALSE(EpochProgress::from_json({{"event", "epoch"}, {"epoch", 1}}));  // no loss, lr, ...
  EXPECT_FALSE(ConfigProgress::from_json({{"event", "config"}, {"config", 5}}));
  EXPECT_EQ(progress_kind({{"event", "step"}}), ProgressKind::kOther);
  EXPECT_EQ(progress_kind({{"event", 5}}), ProgressKind::kOther);
  EXPECT_EQ(progress_kind(json::array()), ProgressKind::kOther);
}

}  // namespace
}  // namespace codefy::train
