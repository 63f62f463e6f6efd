// The run's failure as one typed value: classified once from the exception in
// flight, written and read back as JSON, mapped to exit codes and to
// CodefyUI's envelope without reading message text.
#include "engine/run_error.h"

#include "engine/errors.h"
#include "graph/graph.h"
#include "graph/validate.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace codefy {
namespace {

template <class E>
RunError classify(const E& e) {
  try {
    throw e;
  } catch (...) {
    return RunError::from_current_exception();
  }
}

TEST(RunError, ClassifiesTheExceptionInFlightByType) {
  const RunError oom = classify(NodeOOMError("g", "n7", "TrainingLoop", "cuda:0", "the whole report", "original"));
  EXPECT_EQ(oom.kind, RunErrorKind::kOutOfMemory);
  EXPECT_EQ(oom.message, "the whole report");
  EXPECT_EQ(oom.node_id, "n7");
  EXPECT_EQ(oom.node_type, "TrainingLoop");
  EXPECT_EQ(oom.device, "cuda:0");
  EXPECT_EQ(oom.exit_code(), kExitOutOfMemory);

  const RunError node = classify(NodeError("g", "n1", "Reshape", "param \"shape\"", "cannot reshape"));
  EXPECT_EQ(node.kind, RunErrorKind::kNodeError);
  EXPECT_EQ(node.field, "param \"shape\"");
  EXPECT_EQ(node.exit_code(), kExitRuntimeError);

  EXPECT_EQ(classify(Cancelled()).kind, RunErrorKind::kStopped);
  EXPECT_EQ(classify(Cancelled()).exit_code(), kExitStopped);
  EXPECT_EQ(classify(graph::GraphFormatError("bad")).kind, RunErrorKind::kInvalidGraph);
  EXPECT_EQ(classify(graph::GraphFormatError("bad")).exit_code(), kExitInvalidGraph);
  // A message that mentions memory is not out of memory: only the type says so.
  const RunError text = classify(std::runtime_error("CUDA out of memory. Tried to allocate 2 GiB"));
  EXPECT_EQ(text.kind, RunErrorKind::kInternal);
  EXPECT_EQ(text.exit_code(), kExitRuntimeError);
}

TEST(RunError, JsonRoundTripsAndRefusesWhatIsNotOne) {
  RunError e;
  e.kind = RunErrorKind::kOutOfMemory;
  e.message = "Node TrainingLoop (t) ran out of memory on cpu.";
  e.node_id = "t";
  e.node_type = "TrainingLoop";
  e.device = "cpu";
  e.rank = 1;
  const nlohmann::json j = e.to_json();
  EXPECT_EQ(j["kind"], "out_of_memory");
  EXPECT_FALSE(j.contains("field")) << "empty fields are left out: " << j;
  const RunError back = RunError::from_json(j);
  EXPECT_EQ(back.to_json(), j);
  EXPECT_EQ(back.rank, 1);
  for (const char* bad : {R"("out_of_memory")", R"({"kind":"explosion","message":"x"})", R"({"kind":5})",
                          R"({"kind":"stopped","rank":"one"})", R"({"kind":"stopped","node_id":7})"})
    EXPECT_THROW(RunError::from_json(nlohmann::json::parse(bad)), std::invalid_argument) << bad;
  for (RunErrorKind k :
       {RunErrorKind::kInvalidGraph, RunErrorKind::kUsage, RunErrorKind::kNodeError, RunErrorKind::kOutOfMemory,
        RunErrorKind::kStopped, RunErrorKind::kDistributed, RunErrorKind::kInternal})
    EXPECT_EQ(run_error_kind(to_string(k)), k) << to_string(k);
}

TEST(RunError, EnvelopeHasCodefyUIsCodes) {
  RunError e;
  e.kind = RunErrorKind::kStopped;
  EXPECT_EQ(e.envelope()["code"], "stopped");
  e.kind = RunErrorKind::kOutOfMemory;
  e.node_id = "t";
  EXPECT_EQ(e.envelope()["code"], "out_of_memory");
  EXPECT_EQ(e.envelope()["node_id"], "t");
  e.kind = RunErrorKind::kNodeError;
  e.node_id.clear();
  EXPECT_EQ(e.envelope()["code"], "execution_error");
  EXPECT_TRUE(e.envelope()["node_id"].is_null());
}

}  // namespace
}  // namespace codefy
