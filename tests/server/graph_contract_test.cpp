// A saved graph called as a function over HTTP (CodefyUI's graph-as-a-function
// contract): POST /api/graph/run/{name} puts the caller's `inputs` into the
// GraphInput nodes and answers with the GraphOutput values by name;
// GET /api/graph/contract/{name} shows what the graph declares.
#include "fixture.h"

namespace codefy::server {
namespace {

nlohmann::json contract_node(const std::string& id, const std::string& type,
                             nlohmann::json params = nlohmann::json::object()) {
  return {{"id", id}, {"type", type}, {"position", {{"x", 0}, {"y", 0}}}, {"data", {{"params", std::move(params)}}}};
}

nlohmann::json contract_edge(const std::string& source, const std::string& out, const std::string& target,
                             const std::string& in) {
  return {{"id", source + "-" + target + "-" + in},
          {"source", source},
          {"target", target},
          {"sourceHandle", out},
          {"targetHandle", in}};
}

nlohmann::json trigger(const std::string& target) {
  return {
      {"id", "t-" + target}, {"source", "start"}, {"target", target}, {"sourceHandle", "trigger"}, {"type", "trigger"}};
}

/// accuracy(pred, truth) and an optional integer k passed back, plus a tensor output.
nlohmann::json accuracy_function(const std::string& second_output_name = "correct") {
  return {
      {"name", "acc"},
      {"nodes",
       {contract_node("start", "Start"),
        contract_node("pred", "GraphInput", {{"name", "pred"}, {"type", "json"}, {"default", "[]"}}),
        contract_node("truth", "GraphInput", {{"name", "truth"}, {"type", "json"}, {"default", "[]"}}),
        contract_node("k", "GraphInput", {{"name", "k"}, {"type", "integer"}, {"required", false}, {"default", " 3 "}}),
        contract_node("acc", "Accuracy"), contract_node("ones", "TensorCreate", {{"shape", "2,3"}, {"fill", "ones"}}),
        contract_node("out_acc", "GraphOutput", {{"name", "accuracy"}}),
        contract_node("out_correct", "GraphOutput", {{"name", second_output_name}}),
        contract_node("out_k", "GraphOutput", {{"name", "k_back"}}),
        contract_node("out_ones", "GraphOutput", {{"name", "ones"}})}},
      {"edges",
       {trigger("pred"), trigger("truth"), trigger("k"), trigger("ones"),
        contract_edge("pred", "value", "acc", "predictions"), contract_edge("truth", "value", "acc", "labels"),
        contract_edge("acc", "accuracy", "out_acc", "value"), contract_edge("acc", "correct", "out_correct", "value"),
        contract_edge("k", "value", "out_k", "value"), contract_edge("ones", "tensor", "out_ones", "value")}}};
}

TEST_F(ServerFixture, AGraphRunsAsAFunctionOfItsDeclaredInputs) {
  ASSERT_EQ(post("/api/graph/save", accuracy_function()).status, 200);
  const Reply run =
      post("/api/graph/run/acc",
           {{"device", "cpu"},
            {"inputs", {{"pred", {"cat", "dog", "cat", "bird"}}, {"truth", {"cat", "dog", "dog", "bird"}}}}});
  ASSERT_EQ(run.status, 200) << run.body;
  EXPECT_EQ(run.json["status"], "ok");
  const nlohmann::json& out = run.json["outputs"];
  EXPECT_DOUBLE_EQ(out["accuracy"].get<double>(), 0.75) << out;
  EXPECT_EQ(out["correct"], 3) << out;
  EXPECT_EQ(out["k_back"], 3) << "an optional input left out takes its default";
  EXPECT_EQ(out["ones"], nlohmann::json::parse("[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]")) << "tensors as nested lists";
  EXPECT_EQ(out.size(), 4u) << "only the declared outputs, by name: " << out;

  const Reply again = post("/api/graph/run/acc", {{"inputs", {{"pred", {1, 2}}, {"truth", {1, 1}}, {"k", 7.0}}}});
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_DOUBLE_EQ(again.json["outputs"]["accuracy"].get<double>(), 0.5);
  EXPECT_EQ(again.json["outputs"]["k_back"], 7) << "an integer may be written 7.0";
}

TEST_F(ServerFixture, AFunctionRefusesInputsThatDoNotFitItsContract) {
  ASSERT_EQ(post("/api/graph/save", accuracy_function()).status, 200);
  const auto fields = [](const Reply& r) {
    std::vector<std::string> f;
    for (const auto& d : r.json["error"]["details"]) f.push_back(d["field"]);
    return f;
  };
  const Reply missing = post("/api/graph/run/acc", {{"inputs", {{"pred", {1}}}}});
  EXPECT_EQ(missing.status, 422) << missing.body;
  EXPECT_EQ(missing.json["error"]["code"], "invalid_input");
  EXPECT_EQ(fields(missing), std::vector<std::string>{"inputs.truth"}) << missing.body;

  const Reply wrong = post("/api/graph/run/acc", {{"inputs", {{"pred", {1}}, {"truth", {1}}, {"k", 2.5}, {"kk", 1}}}});
  EXPECT_EQ(wrong.status, 422) << wrong.body;
  EXPECT_EQ(fields(wrong), (std::vector<std::string>{"inputs.kk", "inputs.k"})) << wrong.body;
  EXPECT_NE(wrong.body.find("non-integral"), std::string::npos) << wrong.body;

  const Reply text_for_number = post("/api/graph/run/acc", {{"inputs", {{"pred", {1}}, {"truth", {1}}, {"k", "3"}}}});
  EXPECT_EQ(text_for_number.status, 422) << "no text for numbers from an API caller: " << text_for_number.body;

  const Reply not_an_object = post("/api/graph/run/acc", {{"inputs", {1, 2}}});
  EXPECT_EQ(not_an_object.status, 422) << not_an_object.body;

  // Two outputs of one name: the graph cannot be called until it is mended.
  nlohmann::json twice = accuracy_function("accuracy");
  ASSERT_EQ(post("/api/graph/save", twice).status, 200);
  const Reply dup = post("/api/graph/run/acc", {{"inputs", {{"pred", {1}}, {"truth", {1}}}}});
  EXPECT_EQ(dup.status, 409) << dup.body;
  EXPECT_EQ(dup.json["error"]["code"], "invalid_contract");
  EXPECT_NE(dup.body.find("duplicate output name 'accuracy'"), std::string::npos) << dup.body;
  EXPECT_EQ(get("/api/health").status, 200) << "the server keeps serving";
}

TEST_F(ServerFixture, TheContractListsWhatTheGraphDeclares) {
  ASSERT_EQ(post("/api/graph/save", accuracy_function()).status, 200);
  const Reply c = get("/api/graph/contract/acc");
  ASSERT_EQ(c.status, 200) << c.body;
  std::vector<std::string> inputs, outputs;
  for (const auto& i : c.json["inputs"]) inputs.push_back(i["name"]);
  for (const auto& o : c.json["outputs"]) outputs.push_back(o["name"]);
  EXPECT_EQ(inputs, (std::vector<std::string>{"pred", "truth", "k"}));
  EXPECT_EQ(outputs, (std::vector<std::string>{"accuracy", "correct", "k_back", "ones"}));
  EXPECT_EQ(c.json["inputs"][2]["required"], false);
  EXPECT_TRUE(c.json["problems"].empty()) << c.body;
  EXPECT_EQ(get("/api/graph/contract/nope").status, 404);
}

TEST_F(ServerFixture, AGraphWithoutAContractRefusesInputsAndAnswersPerNode) {
  ASSERT_EQ(post("/api/graph/save", toy_graph(1, 40)).status, 200);
  const Reply refused = post("/api/graph/run/toy", {{"inputs", {{"x", 1}}}});
  EXPECT_EQ(refused.status, 422) << refused.body;
  const Reply run = post("/api/graph/run/toy", {{"device", "cpu"}});
  ASSERT_EQ(run.status, 200) << run.body;
  EXPECT_EQ(run.json["outputs"]["train"]["metrics"]["total_epochs_run"], 1);
}

}  // namespace
}  // namespace codefy::server
