// POST /api/graph/plan (issue #29) through the real server: the plan's JSON
// contract, typed options, and bad graphs refused with what is wrong.
#include "fixture.h"

namespace codefy::server::plan_route {
namespace {

using nlohmann::json;

class PlanRoute : public ServerFixture {
 protected:
  json toy() const { return testing::read_json_file(std::filesystem::path(CODEFY_SOURCE_DIR) / "examples/toy-mlp/graph.json"); }
};

TEST_F(PlanRoute, Issue29_APlanHasTheContractsFieldsAndReachesTheTargetBatch) {
  json body = toy();
  body["plan_options"] = {{"budget_mb", 64}, {"target_effective_batch", 64}, {"margin", 0.2}};
  const Reply r = post("/api/graph/plan", body);
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(r.json["plans"].size(), 1u) << r.body;
  const json& p = r.json["plans"][0];
  for (const char* key : {"node_id", "device", "available_bytes", "available_source", "precision", "micro_batch",
                          "accumulate_steps", "effective_batch", "world_size", "measured", "fixed_bytes",
                          "per_sample_bytes", "predicted_peak_bytes", "fits", "max_micro_batch", "options", "notes",
                          "breakdown", "batch_source"})
    EXPECT_TRUE(p.contains(key)) << key << " missing from " << p.dump();
  EXPECT_EQ(p["node_id"], "train");
  EXPECT_EQ(p["device"], "cpu");
  EXPECT_EQ(p["available_bytes"], 64 << 20);
  EXPECT_EQ(p["available_source"], "budget_mb");
  EXPECT_EQ(p["batch_source"]["node_id"], "loader");
  EXPECT_EQ(p["measured"].size(), 2u);
  EXPECT_EQ(r.json["fits"], p["fits"]);
  ASSERT_FALSE(p["options"].empty());
  for (const json& o : p["options"]) {
    EXPECT_EQ(o["micro_batch"].get<int64_t>() * o["accumulate_steps"].get<int64_t>(), 64) << o;
    EXPECT_EQ(o["fits"], o["predicted_peak_bytes"].get<double>() * 1.2 <= (64 << 20)) << o;
  }
  EXPECT_EQ(get("/api/health").status, 200);
}

TEST_F(PlanRoute, Issue29_WrongTypedOptionsAndBadGraphsAreRefusedNamingWhat) {
  json body = toy();
  body["plan_options"] = {{"margin", "wide"}};
  Reply r = post("/api/graph/plan", body);
  EXPECT_EQ(r.status, 422);
  EXPECT_NE(r.body.find("\\\"margin\\\" must be a number"), std::string::npos) << r.body;

  body["plan_options"] = 5;
  r = post("/api/graph/plan", body);
  EXPECT_EQ(r.status, 422);
  EXPECT_NE(r.body.find("plan_options"), std::string::npos) << r.body;

  body["plan_options"] = {{"budget_mb", -3}};
  EXPECT_EQ(post("/api/graph/plan", body).status, 422);

  json unknown = toy();
  for (json& n : unknown["nodes"])
    if (n["id"] == "loader") n["type"] = "NoSuchNode";
  unknown.erase("plan_options");
  r = post("/api/graph/plan", unknown);
  EXPECT_EQ(r.status, 422);
  EXPECT_NE(r.body.find("NoSuchNode"), std::string::npos) << r.body;

  const json nothing = {{"name", "empty"},
                        {"nodes", {{{"id", "start"}, {"type", "Start"}, {"data", {{"params", json::object()}}}}}},
                        {"edges", json::array()}};
  r = post("/api/graph/plan", nothing);
  EXPECT_EQ(r.status, 422);
  EXPECT_NE(r.body.find("no training node"), std::string::npos) << r.body;

  EXPECT_EQ(post("/api/graph/plan", json::array()).status, 400);
  EXPECT_EQ(get("/api/health").status, 200);
}

}  // namespace
}  // namespace codefy::server::plan_route
