// The tensor, RL and diffusion nodes (src/nodes/tensor_nodes.cpp,
// src/nodes/generative_nodes.cpp) against PyTorch 1.13's numbers
// (tests/golden/tensors.json, from scripts/golden/make_tensor_golden.py),
// their shape errors, their weights in the node state store, and the two
// example graphs that use them.
#include "../common/golden_support.h"
#include "../common/test_support.h"
#include "model/generative.h"

#include <torch/torch.h>

#include <algorithm>
#include <set>

namespace codefy {
namespace {

using codefy::testing::expect_golden_outputs;
using codefy::testing::expect_tensor;
using codefy::testing::golden_inputs;
using codefy::testing::golden_tensor;
using codefy::testing::read_json;
using codefy::testing::run_json;
using codefy::testing::run_node;
using codefy::testing::source_dir;
using nlohmann::json;

const json& golden() {
  static const json g = read_json(source_dir() / "tests/golden/tensors.json");
  return g;
}

const json& golden_case(const std::string& name) { return codefy::testing::golden_case_in(golden(), name); }

std::vector<std::string> case_names(const std::vector<std::string>& nodes) {
  std::vector<std::string> names;
  for (const auto& c : golden()["cases"]) {
    const std::string node = c["node"];
    if (std::find(nodes.begin(), nodes.end(), node) != nodes.end()) names.push_back(c["name"]);
  }
  return names;
}

std::string case_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

// ----------------------------------------------------------------------------- golden values, node by node

class TensorNodeGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(TensorNodeGolden, OutputsMatchPyTorch) {
  const json& c = golden_case(GetParam());
  const ValueMap out = run_node(c["node"], c["params"], golden_inputs(c), c.value("seed", uint64_t{0}));
  expect_golden_outputs(out, c);
  // No outputs beyond the golden ones (Split makes fewer when the size does not divide), but a model.
  for (const auto& [port, v] : out)
    EXPECT_TRUE(c["outputs"].contains(port) || std::holds_alternative<train::ModelPtr>(v))
        << "unexpected output " << port;
}

INSTANTIATE_TEST_SUITE_P(Cases, TensorNodeGolden,
                         ::testing::ValuesIn(case_names(
                             {"TensorCreate", "TensorInput",  "Add",        "Multiply",  "ScalarMultiply",   "Lerp",
                              "MatMul",       "Mean",         "Argmax",     "Softmax",   "CosineSimilarity", "Permute",
                              "Reshape",      "Flatten",      "Squeeze",    "Unsqueeze", "Concat",           "Stack",
                              "Split",        "KLDivergence", "RewardModel"})),
                         case_name);

TEST(TensorNodes, GoldenFileCoversEveryNewNodeType) {
  std::set<std::string> covered;
  for (const auto& c : golden()["cases"]) covered.insert(c["node"].get<std::string>());
  for (const char* type :
       {"TensorCreate", "TensorInput",  "Add",     "Multiply", "ScalarMultiply",   "MatMul",       "Mean",
        "Argmax",       "Softmax",      "Permute", "Reshape",  "Flatten",          "Squeeze",      "Unsqueeze",
        "Concat",       "Stack",        "Split",   "Lerp",     "CosineSimilarity", "KLDivergence", "RewardModel",
        "DDPMSampler",  "DiffusionUNet"})
    EXPECT_TRUE(covered.count(type)) << type;
  EXPECT_EQ(golden()["torch_version"].get<std::string>().rfind("1.13", 0), 0u);
}

TEST(TensorNodes, TensorInputTakesItsGridAsAListOrAsTheTextOfOne) {
  const json params = {{"shape", "2,2"}, {"value_mode", "explicit"}, {"values", "[[1, 2.5], [-3, 4]]"}};
  const ValueMap out = run_node("TensorInput", params, {});
  expect_tensor(std::get<torch::Tensor>(out.at("tensor")), golden_case("tensor_input_explicit")["outputs"]["tensor"],
                "tensor");
  graph::ParamDef grid;
  grid.type = graph::ParamType::kTensorGrid;
  EXPECT_EQ(graph::check_param_value(grid, json::parse("[[1, 2], [3, 4]]")), "");
  EXPECT_EQ(graph::check_param_value(grid, "[[1, 2], [3, 4]]"), "");
  EXPECT_NE(graph::check_param_value(grid, "1, 2"), "");
  EXPECT_NE(graph::check_param_value(grid, 3), "");
}

TEST(TensorNodes, TextInputPassesItsTextThrough) {
  const ValueMap out = run_node("TextInput", {{"value", "king - man + woman"}}, {});
  EXPECT_EQ(std::get<std::string>(out.at("text")), "king - man + woman");
}

TEST(TensorNodes, TensorCreateRequiresGradMarksTheTensor) {
  const ValueMap out = run_node("TensorCreate", {{"shape", "2"}, {"fill", "ones"}, {"requires_grad", true}}, {});
  EXPECT_TRUE(std::get<torch::Tensor>(out.at("tensor")).requires_grad());
}

// ----------------------------------------------------------------------------- DiffusionUNet and DDPMSampler

ValueMap run_unet(const json& params) { return run_node("DiffusionUNet", params, {}); }

model::DiffusionUNet& unet_of(const ValueMap& out) {
  return dynamic_cast<model::DiffusionUNet&>(*std::get<train::ModelPtr>(out.at("model")));
}

class DiffusionGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(DiffusionGolden, UNetForwardMatchesPyTorch) {
  const json& c = golden_case(GetParam());
  const ValueMap built = run_unet(c["params"]);
  torch::NoGradGuard no_grad;
  const torch::Tensor eps = unet_of(built).forward(golden_tensor(c["inputs"]["x"]), golden_tensor(c["inputs"]["t"]));
  expect_tensor(eps, c["outputs"]["predicted_noise"], "predicted_noise", 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Cases, DiffusionGolden, ::testing::ValuesIn(case_names({"DiffusionUNet"})), case_name);

class SamplerGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(SamplerGolden, ReverseLoopMatchesPyTorch) {
  const json& c = golden_case(GetParam());
  json params = c["params"];
  const ValueMap built = run_unet(params["unet"]);
  params.erase("unet");
  ValueMap in = golden_inputs(c);
  in["model"] = built.at("model");
  expect_golden_outputs(run_node("DDPMSampler", params, in), c, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Cases, SamplerGolden, ::testing::ValuesIn(case_names({"DDPMSampler"})), case_name);

TEST(TensorNodes, DiffusionUNetKeepsCodefyUIStateDictNames) {
  const ValueMap built = run_unet({{"channel_mult", "1,2"}, {"base_channels", 4}, {"num_groups", 2}});
  std::set<std::string> names;
  for (const auto& p : unet_of(built).named_parameters()) names.insert(p.key());
  for (const char* name : {"time_mlp.fc1.weight", "stem.weight", "down_blocks.0.conv1.weight", "bottleneck.skip.weight",
                           "bottleneck.time_proj.weight", "up_blocks.0.norm1.weight", "head.bias"})
    EXPECT_TRUE(names.count(name)) << name;
}

TEST(TensorNodes, SameSeedSameWeightsOtherSeedOtherWeights) {
  const auto weights = [](int seed) {
    const ValueMap a = run_unet({{"seed", seed}, {"channel_mult", "1,2"}});
    return unet_of(a).named_parameters()["stem.weight"].clone();
  };
  EXPECT_TRUE(torch::equal(weights(7), weights(7)));
  EXPECT_FALSE(torch::equal(weights(7), weights(8)));
  // The run's seed does not move them: the seed param alone decides, as in CodefyUI.
  const ValueMap x = run_node("RewardModel", {{"input_dim", 3}, {"hidden_dim", 2}}, {}, 1);
  const ValueMap y = run_node("RewardModel", {{"input_dim", 3}, {"hidden_dim", 2}}, {}, 2);
  EXPECT_TRUE(torch::equal(std::get<train::ModelPtr>(x.at("model"))->parameters()[0],
                           std::get<train::ModelPtr>(y.at("model"))->parameters()[0]));
}

TEST(TensorNodes, UNetCalledWithoutATimestepSaysWhatItNeeds) {
  const ValueMap built = run_unet({{"channel_mult", "1,2"}});
  try {
    std::get<train::ModelPtr>(built.at("model"))->forward(torch::zeros({1, 3, 8, 8}));
    FAIL() << "a U-Net without a timestep ran";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("DDPMSampler"), std::string::npos) << e.what();
  }
}

// ----------------------------------------------------------------------------- bad input names node, port, shapes

/// A graph of two TensorInputs of the given shapes feeding `type`'s tensor_a and tensor_b.
json two_inputs(const std::string& type, const std::string& a, const std::string& b,
                const json& params = json::object()) {
  json g = {{"name", "bad"}, {"nodes", json::array()}, {"edges", json::array()}};
  g["nodes"].push_back({{"id", "start"}, {"type", "Start"}, {"data", {{"params", json::object()}}}});
  g["nodes"].push_back({{"id", "a"}, {"type", "TensorInput"}, {"data", {{"params", {{"shape", a}}}}}});
  g["nodes"].push_back({{"id", "b"}, {"type", "TensorInput"}, {"data", {{"params", {{"shape", b}}}}}});
  g["nodes"].push_back({{"id", "op"}, {"type", type}, {"data", {{"params", params}}}});
  g["edges"].push_back({{"source", "start"}, {"sourceHandle", "trigger"}, {"target", "op"}, {"type", "trigger"}});
  g["edges"].push_back({{"source", "a"}, {"sourceHandle", "tensor"}, {"target", "op"}, {"targetHandle", "tensor_a"}});
  g["edges"].push_back({{"source", "b"}, {"sourceHandle", "tensor"}, {"target", "op"}, {"targetHandle", "tensor_b"}});
  return g;
}

/// Runs `g` and returns the NodeError's message; fails the test when it runs.
std::string run_error(const json& g) {
  try {
    run_json(g);
  } catch (const NodeError& e) {
    EXPECT_EQ(e.node_id(), "op");
    return e.what();
  }
  ADD_FAILURE() << "the graph ran";
  return "";
}

void expect_mentions(const std::string& message, std::initializer_list<const char*> parts) {
  for (const char* p : parts) EXPECT_NE(message.find(p), std::string::npos) << "\"" << p << "\" not in: " << message;
}

TEST(TensorNodeErrors, AddOfMismatchedShapesNamesNodePortAndBothShapes) {
  expect_mentions(run_error(two_inputs("Add", "2,3", "4,5")),
                  {"graph \"bad\"", "node op (Add)", "input \"tensor_b\"", "[2, 3]", "[4, 5]", "do not broadcast"});
}

TEST(TensorNodeErrors, MatMulInnerDimensionsNamed) {
  expect_mentions(run_error(two_inputs("MatMul", "2,3", "4,5")),
                  {"node op (MatMul)", "input \"tensor_b\"", "[2, 3]", "[4, 5]", "(3)", "(4)"});
  expect_mentions(run_error(two_inputs("MatMul", "2,2,3", "3,3,4")), {"batch dimensions", "[2]", "[3]"});
}

TEST(TensorNodeErrors, MultiplyStackConcatLerpRefuseMismatches) {
  expect_mentions(run_error(two_inputs("Multiply", "2,3", "3,2")), {"node op (Multiply)", "[2, 3]", "[3, 2]"});
  expect_mentions(run_error(two_inputs("Stack", "2,3", "2,4")), {"node op (Stack)", "input \"tensor_b\"", "[2, 4]"});
  expect_mentions(run_error(two_inputs("Concat", "2,3", "3,3", {{"dim", 1}})),
                  {"node op (Concat)", "[2, 3]", "[3, 3]", "dimension 0"});
  expect_mentions(run_error(two_inputs("Lerp", "2,3", "2,4")), {"node op (Lerp)", "[2, 3]", "[2, 4]"});
}

TEST(TensorNodeErrors, ShapeParamsOutOfRangeNameTheParamAndShape) {
  const auto one = [](const std::string& type, const json& params) {
    try {
      run_node(type, params, {{"tensor", torch::zeros({2, 3})}});
    } catch (const NodeFailure& e) {
      return e.field() + ": " + e.what();
    }
    return std::string("ran");
  };
  expect_mentions(one("Reshape", {{"shape", "4,-1"}}), {"param \"shape\"", "[2, 3]", "[4, -1]"});
  expect_mentions(one("Permute", {{"dims", "0,0"}}), {"param \"dims\"", "appears twice"});
  expect_mentions(one("Permute", {{"dims", "0,1,2"}}), {"param \"dims\"", "[2, 3]"});
  expect_mentions(one("Softmax", {{"dim", 2}}), {"param \"dim\"", "[2, 3]", "-2 to 1"});
  expect_mentions(one("Mean", {{"dim", "0, x"}}), {"param \"dim\"", "whole numbers"});
  expect_mentions(one("Unsqueeze", {{"dim", 4}}), {"param \"dim\"", "-3 to 2"});
}

TEST(TensorNodeErrors, TensorSourcesRefuseBadShapesBeforeAllocating) {
  const auto message = [](const std::string& type, const json& params) {
    try {
      run_node(type, params, {});
    } catch (const NodeFailure& e) {
      return e.field() + ": " + e.what();
    }
    return std::string("ran");
  };
  expect_mentions(message("TensorCreate", {{"shape", "100000,100000,1000"}}), {"param \"shape\"", "too many"});
  expect_mentions(message("TensorCreate", {{"shape", "2,-3"}}), {"param \"shape\"", ">= 0"});
  expect_mentions(message("TensorInput", {{"shape", "2,2"}, {"value_mode", "explicit"}, {"values", {1, 2, 3}}}),
                  {"param \"values\"", "3 elements", "[2, 2]", "4"});
}

TEST(TensorNodeErrors, GenerativeNodesNameThePortAndShape) {
  try {
    run_node("RewardModel", {{"input_dim", 8}}, {{"hidden_states", torch::zeros({2, 5})}});
    ADD_FAILURE() << "ran";
  } catch (const NodeFailure& e) {
    expect_mentions(std::string(e.field()) + e.what(), {"hidden_states", "[2, 5]", "input_dim 8"});
  }
  const ValueMap unet = run_unet({{"channel_mult", "1,2,4"}});
  for (const auto& [shape, expected] : std::vector<std::pair<std::vector<int64_t>, const char*>>{
           {{1, 3, 6, 8}, "multiples of 4"}, {{1, 2, 8, 8}, "in_channels is 3"}, {{3, 8, 8}, "4-D"}}) {
    try {
      run_node("DDPMSampler", {{"num_steps", 1}}, {{"model", unet.at("model")}, {"noise", torch::zeros(shape)}});
      ADD_FAILURE() << "ran";
    } catch (const NodeFailure& e) {
      expect_mentions(std::string(e.field()) + e.what(), {"noise", expected});
    }
  }
  try {
    run_node("DiffusionUNet", {{"base_channels", 6}, {"num_groups", 4}}, {});
    ADD_FAILURE() << "ran";
  } catch (const NodeFailure& e) {
    expect_mentions(std::string(e.field()) + e.what(), {"num_groups", "must divide"});
  }
  try {
    run_node("KLDivergence", {}, {{"p", torch::ones({2, 3})}, {"q", torch::ones({2, 4})}});
    ADD_FAILURE() << "ran";
  } catch (const NodeFailure& e) {
    expect_mentions(std::string(e.field()) + e.what(), {"q", "[2, 3]", "[2, 4]"});
  }
}

TEST(TensorNodeErrors, NetworkOnlyCodefyUINodesAreReportedUnavailableWithTheReason) {
  json g = {{"name", "hf"}, {"nodes", json::array()}, {"edges", json::array()}};
  g["nodes"].push_back({{"id", "start"}, {"type", "Start"}, {"data", {{"params", json::object()}}}});
  g["nodes"].push_back({{"id", "hub"}, {"type", "HuggingFaceDataset"}, {"data", {{"params", json::object()}}}});
  g["nodes"].push_back({{"id", "what"}, {"type", "NoSuchNode"}, {"data", {{"params", json::object()}}}});
  g["edges"].push_back({{"source", "start"}, {"sourceHandle", "trigger"}, {"target", "hub"}, {"type", "trigger"}});
  g["edges"].push_back({{"source", "start"}, {"sourceHandle", "trigger"}, {"target", "what"}, {"type", "trigger"}});
  try {
    run_json(g);
    FAIL() << "ran";
  } catch (const graph::ValidationError& e) {
    const std::string m = e.what();
    expect_mentions(m, {"node hub (HuggingFaceDataset)", "unavailable in Codefy", "Hugging Face Hub",
                        "unknown node type \"NoSuchNode\""});
  }
  for (const auto& [type, reason] : graph::unavailable_node_types()) {
    EXPECT_EQ(nodes::builtin().get(type), nullptr) << type << " is both offered and listed unavailable";
    EXPECT_FALSE(reason.empty()) << type;
  }
}

// ----------------------------------------------------------------------------- the node state store (R-MEM-3)

json unet_graph(int base_channels) {
  json g = read_json(source_dir() / "examples/unet-forward/graph.json");
  codefy::testing::set_param(g, "unet", "base_channels", base_channels);
  codefy::testing::set_param(g, "sampler", "num_steps", 2);
  return g;
}

TEST(TensorNodes, R_MEM_3_DiffusionUNetWeightsPersistBetweenRunsAndRebuildOnEdit) {
  NodeStateStore store(store::StoreLimits{int64_t{1} << 30, 200});
  RunSettings s;
  s.state_store = &store;
  s.state_scope = "graph-1";
  const auto model_of = [](const RunResult& r) { return std::get<train::ModelPtr>(r.outputs.at("unet").at("model")); };
  const RunResult first = codefy::testing::run_json(unet_graph(16), s);
  const RunResult second = codefy::testing::run_json(unet_graph(16), s);
  EXPECT_EQ(model_of(first), model_of(second)) << "the second run reuses the module the first built";
  const RunResult edited = codefy::testing::run_json(unet_graph(8), s);
  EXPECT_NE(model_of(first), model_of(edited)) << "an edited param rebuilds it";
  EXPECT_EQ(unet_of(edited.outputs.at("unet")).options().base_channels, 8);
}

TEST(TensorNodes, R_MEM_3_RewardModelIsKeptInTheNodeStateStore) {
  const NodeType* t = nodes::builtin().get("RewardModel");
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->def.persistent_state);
  EXPECT_FALSE(t->def.cacheable);
  EXPECT_TRUE(nodes::builtin().get("DiffusionUNet")->def.persistent_state);
}

// ----------------------------------------------------------------------------- the example graphs

class ExampleGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ExampleGolden, RunsAndMatchesPyTorch) {
  const json& c = golden_case(GetParam());
  const auto dir = source_dir() / "examples" / c["params"]["path"].get<std::string>();
  codefy::testing::Recorder rec;
  const RunResult r = run_json(read_json(dir / "graph.json"), 0, &rec, dir);
  for (auto it = c["outputs"].begin(); it != c["outputs"].end(); ++it) {
    const std::string key = it.key();
    const auto dot = key.find('.');
    const auto& out = r.outputs.at(key.substr(0, dot)).at(key.substr(dot + 1));
    expect_tensor(std::get<torch::Tensor>(out), it.value(), key, 1e-4);
  }
  EXPECT_EQ(rec.prints.size(), 1u);
  EXPECT_LT(r.seconds, 30.0) << "a forward-only teaching graph takes well under a second on a free core";
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleGolden, ::testing::ValuesIn(case_names({"example"})), case_name);

TEST(TensorNodes, CodefyNodesListsTheNewTypesWithCodefyUICategories) {
  const auto r = codefy::testing::run_codefy("nodes --json");
  ASSERT_EQ(r.exit_code, 0) << "codefy nodes --json failed: " << r.output;
  for (const char* s : {"\"TensorCreate\"", "\"Tensor Operations\"", "\"DiffusionUNet\"", "\"Diffusion\"",
                        "\"KLDivergence\"", "\"CosineSimilarity\"", "\"tensor_grid\""})
    EXPECT_NE(r.output.find(s), std::string::npos) << s;
}

}  // namespace
}  // namespace codefy

namespace codefy {
namespace {

/// arange(6) split into `chunks`, chunk `port` wired on to a Print.
json split_graph(int chunks, const std::string& port) {
  json g = {{"name", "split"}, {"nodes", json::array()}, {"edges", json::array()}};
  g["nodes"].push_back({{"id", "start"}, {"type", "Start"}, {"data", {{"params", json::object()}}}});
  g["edges"].push_back({{"source", "start"}, {"sourceHandle", "trigger"}, {"target", "x"}, {"type", "trigger"}});
  g["nodes"].push_back(
      {{"id", "x"}, {"type", "TensorInput"}, {"data", {{"params", {{"shape", "6"}, {"value_mode", "arange"}}}}}});
  g["nodes"].push_back({{"id", "split"}, {"type", "Split"}, {"data", {{"params", {{"chunks", chunks}}}}}});
  g["nodes"].push_back({{"id", "show"}, {"type", "Print"}, {"data", {{"params", json::object()}}}});
  g["edges"].push_back({{"source", "x"}, {"sourceHandle", "tensor"}, {"target", "split"}, {"targetHandle", "tensor"}});
  g["edges"].push_back({{"source", "split"}, {"sourceHandle", port}, {"target", "show"}, {"targetHandle", "value"}});
  return g;
}

TEST(TensorNodes, SplitChunksPastTheSecondCanBeWiredUpToTheChunksParam) {
  const RunResult r = run_json(split_graph(3, "chunk_2"));
  EXPECT_TRUE(torch::equal(std::get<torch::Tensor>(r.outputs.at("show").at("value")),
                           torch::arange(6, torch::kFloat32).slice(0, 4, 6)));
  for (const std::string port : {"chunk_3", "chunk_02", "chunk_x"}) {
    try {
      run_json(split_graph(3, port));
      ADD_FAILURE() << port << " was accepted with chunks=3";
    } catch (const graph::ValidationError& e) {
      EXPECT_NE(std::string(e.what()).find("output \"" + port + "\""), std::string::npos) << e.what();
    }
  }
  // The palette lists the default's two; the editor grows the rest from output_family.
  const json def = graph::to_json(nodes::builtin().get("Split")->def);
  EXPECT_EQ(def["outputs"].size(), 2u);
  EXPECT_EQ(def["output_family"]["prefix"], "chunk_");
  EXPECT_EQ(def["output_family"]["count_param"], "chunks");
}

}  // namespace
}  // namespace codefy
