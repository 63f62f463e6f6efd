// The layer editor's routes through the server: GET /api/layers and
// POST /api/layers/shapes, checked against the model SequentialModel builds.
#include "fixture.h"
#include "model/sequential_model.h"

#include <torch/torch.h>

namespace codefy::server {
namespace {

using nlohmann::json;

json fashion_spec_text() {
  std::ifstream in(fs::path(CODEFY_SOURCE_DIR) / "examples" / "fashion-mnist" / "graph.json");
  const json graph = json::parse(in);
  for (const auto& n : graph["nodes"])
    if (n["type"] == "SequentialModel") return n["data"]["params"]["layers"];  // the JSON text, as the editor sends it
  return json();
}

class LayerRoutesTest : public ServerFixture {};

TEST_F(LayerRoutesTest, ListsEveryLayerTypeWithItsParams) {
  const Reply r = get("/api/layers");
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(r.json.is_array());
  std::set<std::string> types;
  for (const auto& e : r.json) types.insert(e["type"].get<std::string>());
  for (const char* t : {"Linear", "Conv2d", "MaxPool2d", "BatchNorm2d", "Flatten", "ReLU", "Softmax", "Add", "Concat"})
    EXPECT_TRUE(types.count(t)) << t;
  const auto linear = std::find_if(r.json.begin(), r.json.end(), [](const json& e) { return e["type"] == "Linear"; });
  ASSERT_NE(linear, r.json.end());
  EXPECT_EQ((*linear)["params"][0]["name"], "in_features");
  EXPECT_EQ((*linear)["params"][0]["param_type"], "int");
  EXPECT_EQ((*linear)["params"][2]["name"], "bias");
  EXPECT_EQ((*linear)["params"][2]["default"], true);
}

TEST_F(LayerRoutesTest, ShapesOfTheFashionMnistCnnMatchTheBuiltModelRunForward) {
  const json spec_text = fashion_spec_text();
  ASSERT_TRUE(spec_text.is_string());
  const Reply r = post("/api/layers/shapes", {{"layers", spec_text}, {"input_shape", {1, 28, 28}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(r.json["error"].is_null()) << r.body;
  ASSERT_EQ(r.json["nodes"].size(), 12u);
  EXPECT_EQ(r.json["nodes"][0]["id"], "c1");
  EXPECT_EQ(r.json["nodes"][0]["type"], "Conv2d");
  EXPECT_EQ(r.json["nodes"][0]["output_shape"], json({1, 16, 28, 28}));
  EXPECT_EQ(r.json["nodes"][0]["params"], 16 * 9 + 16);
  EXPECT_EQ(r.json["nodes"][8]["id"], "f");
  EXPECT_EQ(r.json["nodes"][8]["output_shape"], json({1, 1568}));

  // The reference: the model a run builds, fed one sample.
  auto model = model::build_sequential_model(spec_text);
  model->eval();
  torch::NoGradGuard no_grad;
  const auto y = model->forward(torch::zeros({1, 1, 28, 28}));
  int64_t weights = 0;
  for (const auto& p : model->parameters()) weights += p.numel();
  EXPECT_EQ(r.json["output_shape"], json(y.sizes().vec()));
  EXPECT_EQ(r.json["total_params"], weights);
  EXPECT_EQ(r.json["nodes"].back()["output_shape"], json(y.sizes().vec()));
}

TEST_F(LayerRoutesTest, AMismatchAnswers200WithTheNodesBeforeAndAnErrorNamingTheNode) {
  json spec = json::parse(fashion_spec_text().get<std::string>());
  for (auto& n : spec["nodes"])
    if (n["id"] == "l1") n["params"]["in_features"] = 3136;  // the Flatten gives 1568
  const Reply r = post("/api/layers/shapes", {{"layers", spec}, {"input_shape", {1, 28, 28}}});
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(r.json["error"].is_object()) << r.body;
  EXPECT_EQ(r.json["error"]["node_id"], "l1");
  EXPECT_EQ(r.json["error"]["node_type"], "Linear");
  const std::string message = r.json["error"]["message"];
  EXPECT_NE(message.find("[1, 1568]"), std::string::npos) << message;
  EXPECT_EQ(r.json["nodes"].size(), 9u);  // c1 ... f
  EXPECT_EQ(r.json["nodes"].back()["id"], "f");
  EXPECT_TRUE(r.json["output_shape"].is_null());
}

TEST_F(LayerRoutesTest, BodiesThatAreNotASpecOrAShapeGet400) {
  const json spec = json::parse(fashion_spec_text().get<std::string>());
  const std::vector<json> bodies = {
      json::array(),                                                 // not an object
      {{"input_shape", {1, 28, 28}}},                                // no layers
      {{"layers", 5}, {"input_shape", {1, 28, 28}}},                 // not a spec
      {{"layers", "{not json"}, {"input_shape", {1, 28, 28}}},       // text that is not JSON
      {{"layers", {{"version", 2}}}, {"input_shape", {1, 28, 28}}},  // no nodes list
      {{"layers", spec}},                                            // no input shape
      {{"layers", spec}, {"input_shape", "1,28,28"}},                // not a list
      {{"layers", spec}, {"input_shape", {1, 28.5, 28}}},            // not whole numbers
      {{"layers", spec}, {"input_shape", {1, 0, 28}}},               // a size below 1
      {{"layers", spec}, {"input_shape", {1, 8192, 8192}}},          // past 16M elements
  };
  for (const auto& body : bodies) {
    const Reply r = post("/api/layers/shapes", body);
    EXPECT_EQ(r.status, 400) << body.dump() << " -> " << r.body;
    EXPECT_TRUE(r.json["detail"].is_string()) << r.body;
  }
  json many = spec;
  for (int i = 0; i < 300; ++i) many["nodes"].push_back({{"id", "x" + std::to_string(i)}, {"type", "ReLU"}});
  const Reply r = post("/api/layers/shapes", {{"layers", many}, {"input_shape", {1, 28, 28}}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("nodes"), std::string::npos) << r.body;
  const Reply malformed = request(http::verb::post, "/api/layers/shapes", "{oops");
  EXPECT_EQ(malformed.status, 400);
}

}  // namespace
}  // namespace codefy::server
