// What the sanitizer run and the fuzz targets found (#28 part 4), each input
// as the fuzzer gave it or reduced, through the entry point it came in by.
// Some of these fail only under the sanitizers (scripts/test.sh --sanitize,
// which CI runs): an undefined conversion, say, has no visible effect in the
// optimized build.
#include "fixture.h"

namespace codefy::server {
namespace {

// fuzz_graph: a ToyDataset whose n_features is a huge number. Validation
// reads it to know the sample shape of the SequentialModel it feeds, and
// converted 1e300 to int64_t (undefined; UBSan: "1e+300 is outside the range
// of representable values of type 'long'"). Now a number past int64's range
// counts as not given (ToyDataset's default, 2 features), as text that is
// not a number already did; validation reports the param itself.
TEST_F(ServerFixture, FuzzValidationOfAHugeFeatureCountConvertsNothingOutOfRange) {
  for (const double huge : {1e300, -1e300, 9.3e18}) {
    nlohmann::json g = testing::mlp_training_graph("huge", 2, 8, 2, {{"n_samples", 20}}, {{"batch_size", 4}},
                                                   {{"type", "SGD"}}, {{"epochs", 1}});
    for (auto& n : g["nodes"])
      if (n["id"] == "data") n["data"]["params"]["n_features"] = huge;
    const Reply r = post("/api/graph/validate", g);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json["valid"], false) << r.body;
    for (const auto& issue : r.json["issues"]) EXPECT_NE(issue["node_id"], "mlp") << r.body;  // traced with 2 features
  }
  // A whole number written as a decimal still gives the sample shape: the
  // model wants 2 features, the data gives 3.
  nlohmann::json g = testing::mlp_training_graph("decimal", 2, 8, 2, {{"n_samples", 20}}, {{"batch_size", 4}},
                                                 {{"type", "SGD"}}, {{"epochs", 1}});
  for (auto& n : g["nodes"])
    if (n["id"] == "data") n["data"]["params"]["n_features"] = 3.0;
  const Reply r = post("/api/graph/validate", g);
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(r.json["issues"].size(), 1u) << r.body;
  EXPECT_EQ(r.json["issues"][0]["node_id"], "mlp");
  const std::string message = r.json["issues"][0]["message"];
  EXPECT_NE(message.find("[3]"), std::string::npos) << message;
}

}  // namespace
}  // namespace codefy::server
