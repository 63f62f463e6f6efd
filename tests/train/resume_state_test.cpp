// ResumeState: the fields a continued run needs, written and read in one
// place, refusing what is not one (a checkpoint is untrusted input).
#include "train/resume_state.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace codefy::train {
namespace {

TEST(ResumeState, RoundTripsThroughARunsMetricsAndLeavesOtherKeysAlone) {
  ResumeState r;
  r.last_epoch = 3;
  r.total_steps = 120;
  r.total_batches = 480;
  r.train_seed = 7;
  r.data_seed = 11;
  r.scheduler_state = {{"updates", 120}};
  nlohmann::json metrics = {{"final_train_loss", 0.25}};
  r.write_to(metrics);
  EXPECT_EQ(metrics["final_train_loss"], 0.25);
  EXPECT_FALSE(metrics.contains("grad_scaler_state")) << "no scaler ran: nothing written";
  const ResumeState back = ResumeState::from_json(metrics);
  EXPECT_EQ(back.to_json(), r.to_json());
  EXPECT_EQ(back.train_seed, 7u);
}

TEST(ResumeState, FromACheckpointTakesItsEpochAndScalerState) {
  const nlohmann::json meta = {{"epoch", 4},
                               {"metrics", {{"last_epoch", 2}, {"total_steps", 10}, {"data_seed", 5}}},
                               {"grad_scaler_state", {{"scale", 1024.0}}}};
  const ResumeState r = ResumeState::from_checkpoint_meta(meta);
  EXPECT_EQ(r.last_epoch, 4) << "the checkpoint's own epoch wins";
  EXPECT_EQ(r.total_steps, 10);
  EXPECT_EQ(r.data_seed, 5u);
  EXPECT_FALSE(r.train_seed.has_value());
  EXPECT_EQ(r.grad_scaler_state["scale"], 1024.0);
}

TEST(ResumeState, RefusesWhatIsNotOne) {
  for (const char* bad : {R"([1])", R"({"total_steps": 3})", R"({"last_epoch": "3"})", R"({"last_epoch": -1})",
                          R"({"last_epoch": 1, "train_seed": -5})", R"({"last_epoch": 1, "total_batches": 2.5})"})
    EXPECT_THROW(ResumeState::from_json(nlohmann::json::parse(bad)), std::invalid_argument) << bad;
  EXPECT_THROW(ResumeState::from_checkpoint_meta(nlohmann::json::parse(R"({"epoch": "x"})")), std::invalid_argument);
  EXPECT_THROW(ResumeState::from_checkpoint_meta(nlohmann::json::parse("[]")), std::invalid_argument);
}

}  // namespace
}  // namespace codefy::train
