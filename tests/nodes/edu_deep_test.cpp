// CodefyUI's `deep` plugin pack (src/nodes/edu_deep_nodes.cpp) against
// PyTorch 1.13's numbers (tests/golden/edu_deep.json, from
// scripts/golden/make_edu_deep_golden.py): outputs, verbose steps, seeded
// weights, the node state store, the errors a person can hit, and the
// lesson graphs in examples/edu-deep-*.
#include "../common/golden_support.h"
#include "../common/test_support.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

namespace codefy {
namespace edu_deep_test {

using codefy::testing::expect_golden_outputs;
using codefy::testing::expect_tensor;
using codefy::testing::golden_inputs;
using codefy::testing::read_json;
using codefy::testing::run_json;
using codefy::testing::run_node;
using codefy::testing::source_dir;
using nlohmann::json;

const json& golden() {
  static const json g = read_json(source_dir() / "tests/golden/edu_deep.json");
  return g;
}

const json& golden_case(const std::string& name) { return codefy::testing::golden_case_in(golden(), name); }

std::vector<std::string> case_names(bool examples) {
  std::vector<std::string> names;
  for (const auto& c : golden()["cases"])
    if ((c["node"] == "example") == examples) names.push_back(c["name"]);
  return names;
}

std::string case_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

const std::vector<std::string> kTypes = {
    "deep:Edu-Conv2d",         "deep:Edu-MaxPool2d",   "deep:Edu-SelfAttention", "deep:Edu-MultiHeadAttention",
    "deep:Edu-CrossAttention", "deep:Edu-LayerNorm",   "deep:Edu-Patchify",      "deep:Edu-RNNCell",
    "deep:Edu-LSTMCell",       "deep:Edu-DenoiseStep", "deep:Edu-Resample",      "deep:Edu-ResBlock"};

/// Runs `type` and returns the NodeFailure's field and message ("" when it ran).
std::string failure(const std::string& type, const json& params, ValueMap inputs) {
  try {
    run_node(type, params, std::move(inputs));
  } catch (const NodeFailure& e) {
    return std::string(e.field()) + " " + e.what();
  }
  return "";
}

void expect_mentions(const std::string& text, const std::vector<std::string>& parts) {
  for (const auto& p : parts) EXPECT_NE(text.find(p), std::string::npos) << "\"" << p << "\" not in: " << text;
}

/// A golden tensor with infinities (masked attention scores): JSON has none,
/// so the script writes them as "-inf"/"inf"; the same positions must be
/// infinite and the rest equal.
void expect_tensor_with_infinities(const torch::Tensor& actual, const json& expected, const std::string& what) {
  const auto& values = expected["values"];
  std::vector<double> finite;
  std::vector<double> inf;  // -1, 1 or 0 per element
  for (const auto& v : values) {
    const bool text = v.is_string();
    inf.push_back(text ? (v == "-inf" ? -1.0 : 1.0) : 0.0);
    finite.push_back(text ? 0.0 : v.get<double>());
  }
  const auto shape = expected["shape"].get<std::vector<int64_t>>();
  ASSERT_EQ(actual.sizes().vec(), shape) << what;
  const torch::Tensor a = actual.to(torch::kFloat64).reshape({-1});
  const torch::Tensor want_inf = torch::tensor(inf, torch::kFloat64);
  const torch::Tensor got_inf = torch::where(torch::isinf(a), torch::sign(a), torch::zeros_like(a));
  EXPECT_TRUE(torch::equal(got_inf, want_inf)) << what << ": infinities differ";
  const torch::Tensor finite_a = torch::where(torch::isinf(a), torch::zeros_like(a), a);
  EXPECT_TRUE(torch::allclose(finite_a, torch::tensor(finite, torch::kFloat64), 1e-4, 1e-5)) << what;
}

/// Every golden output: tensors with infinities compared here, the rest by expect_golden_outputs.
void expect_outputs(const ValueMap& out, const json& c) {
  json plain = c;
  for (auto it = c["outputs"].begin(); it != c["outputs"].end(); ++it) {
    const json& v = it.value();
    if (!v.is_object() || !v.contains("values")) continue;
    const auto& values = v["values"];
    if (std::none_of(values.begin(), values.end(), [](const json& x) { return x.is_string(); })) continue;
    ASSERT_TRUE(out.count(it.key())) << "no output " << it.key();
    expect_tensor_with_infinities(std::get<torch::Tensor>(out.at(it.key())), v, it.key());
    plain["outputs"].erase(it.key());
  }
  expect_golden_outputs(out, plain);
}

// ----------------------------------------------------------------------------- golden values, case by case

class EduDeepGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(EduDeepGolden, OutputsMatchPyTorch) {
  const json& c = golden_case(GetParam());
  const bool verbose = c.value("verbose", false);
  const ValueMap out = run_node(c["node"], c["params"], golden_inputs(c), 0, verbose);
  expect_outputs(out, c);
  if (!verbose) {
    for (const auto& [port, v] : out) EXPECT_TRUE(c["outputs"].contains(port)) << "unexpected output " << port;
    return;
  }
  // Verbose: CodefyUI's step names, tensor names and scalars, in its order.
  const json& steps = c["steps"];
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string key = "__step__" + std::to_string(i) + "__meta";
    ASSERT_TRUE(out.count(key)) << "no " << key;
    const json& meta = std::get<json>(out.at(key));
    EXPECT_EQ(meta["index"], static_cast<int>(i));
    EXPECT_EQ(meta["name"], steps[i]["name"]) << key;
    EXPECT_EQ(meta["tensors"], steps[i]["tensors"]) << key;
    EXPECT_FALSE(meta["description"].get<std::string>().empty()) << key;
    ASSERT_EQ(meta["scalars"].size(), steps[i]["scalars"].size()) << key << ": " << meta["scalars"].dump();
    for (auto it = steps[i]["scalars"].begin(); it != steps[i]["scalars"].end(); ++it) {
      ASSERT_TRUE(meta["scalars"].contains(it.key())) << key << " lacks scalar " << it.key();
      EXPECT_TRUE(meta["scalars"][it.key()].is_number_float()) << key << " " << it.key() << " is not a float";
      EXPECT_NEAR(meta["scalars"][it.key()].get<double>(), it.value().get<double>(),
                  1e-6 * std::max(1.0, std::abs(it.value().get<double>())))
          << key << " " << it.key();
    }
  }
  EXPECT_FALSE(out.count("__step__" + std::to_string(steps.size()) + "__meta")) << "more steps than CodefyUI's";
}

INSTANTIATE_TEST_SUITE_P(EduDeepCases, EduDeepGolden, ::testing::ValuesIn(case_names(false)), case_name);

TEST(EduDeepGoldenFile, EveryNodeHasCasesAndAVerboseOne) {
  for (const auto& type : kTypes) {
    int cases = 0, verbose = 0;
    for (const auto& c : golden()["cases"])
      if (c["node"] == type) ++cases, verbose += c.value("verbose", false) ? 1 : 0;
    EXPECT_GE(cases, 2) << type;
    if (type != "deep:Edu-ResBlock") {  // CodefyUI's ResBlock records no steps
      EXPECT_GE(verbose, 1) << type;
    }
  }
}

// ----------------------------------------------------------------------------- definitions

TEST(EduDeepNodes, RegisteredWithCodefyUINamesCategoriesAndPorts) {
  const std::map<std::string, std::string> categories = {{"deep:Edu-Conv2d", "CNN"},
                                                         {"deep:Edu-MaxPool2d", "CNN"},
                                                         {"deep:Edu-SelfAttention", "LLM"},
                                                         {"deep:Edu-MultiHeadAttention", "LLM"},
                                                         {"deep:Edu-CrossAttention", "Diffusion"},
                                                         {"deep:Edu-LayerNorm", "Transformer"},
                                                         {"deep:Edu-Patchify", "Transformer"},
                                                         {"deep:Edu-RNNCell", "RNN"},
                                                         {"deep:Edu-LSTMCell", "RNN"},
                                                         {"deep:Edu-DenoiseStep", "Diffusion"},
                                                         {"deep:Edu-Resample", "Diffusion"},
                                                         {"deep:Edu-ResBlock", "Diffusion"}};
  for (const auto& [type, category] : categories) {
    const NodeType* t = nodes::builtin().get(type);
    ASSERT_NE(t, nullptr) << type;
    EXPECT_EQ(t->def.category, category) << type;
    EXPECT_FALSE(t->def.description.empty()) << type;
  }
  const auto& conv = nodes::builtin().get("deep:Edu-Conv2d")->def;
  EXPECT_TRUE(conv.input("weight")->optional);
  EXPECT_TRUE(conv.input("bias")->optional);
  EXPECT_FALSE(conv.input("x")->optional);
  EXPECT_EQ(conv.param("seed")->default_value, 0);
  EXPECT_EQ(conv.param("padding")->min_value, 0.0);
  const auto& attn = nodes::builtin().get("deep:Edu-SelfAttention")->def;
  EXPECT_EQ(attn.input("labels")->type, graph::DataType::kList);
  EXPECT_EQ(attn.output("labels")->type, graph::DataType::kList);
  EXPECT_EQ(attn.param("temperature")->min_value, 0.01);
  EXPECT_EQ(attn.param("seed")->default_value, 42);
  const auto& rnn = nodes::builtin().get("deep:Edu-RNNCell")->def;
  EXPECT_EQ(rnn.param("activation")->options, (std::vector<std::string>{"tanh", "relu"}));
  const auto& resample = nodes::builtin().get("deep:Edu-Resample")->def;
  EXPECT_EQ(resample.param("mode")->options, (std::vector<std::string>{"nearest", "bilinear", "avgpool"}));
  EXPECT_EQ(resample.param("factor")->min_value, 2.0);
  const auto& denoise = nodes::builtin().get("deep:Edu-DenoiseStep")->def;
  EXPECT_EQ(denoise.param("t")->default_value, 50);
  EXPECT_EQ(denoise.param("num_steps")->min_value, 2.0);
  const auto& lstm = nodes::builtin().get("deep:Edu-LSTMCell")->def;
  EXPECT_EQ(lstm.outputs.size(), 7u);
}

// ----------------------------------------------------------------------------- seeded weights and the state store

TEST(EduDeepNodes, SameSeedSameWeightsAnotherSeedOthers) {
  const ValueMap in{{"x", torch::ones({1, 2, 5, 5})}};
  const auto weight = [&](int seed) {
    return std::get<torch::Tensor>(
        run_node("deep:Edu-Conv2d", {{"seed", seed}}, in, /*run seed*/ seed * 7).at("weight"));
  };
  EXPECT_TRUE(torch::equal(weight(3), weight(3)));
  EXPECT_FALSE(torch::equal(weight(3), weight(4)));
  // The run's seed does not matter, only the node's `seed` param, as in CodefyUI.
  const ValueMap x{{"tensor", torch::ones({3, 8})}};
  const auto out = [&](uint64_t run_seed) {
    return std::get<torch::Tensor>(run_node("deep:Edu-SelfAttention", json::object(), x, run_seed).at("output"));
  };
  EXPECT_TRUE(torch::equal(out(1), out(99)));
}

json example(const std::string& name) { return read_json(source_dir() / "examples" / name / "graph.json"); }

TEST(EduDeepNodes, AttentionAndResBlockModulesAreKeptInTheNodeStateStore) {
  NodeStateStore store(store::StoreLimits{int64_t{1} << 30, 200});
  RunSettings s;
  s.state_store = &store;
  s.state_scope = "graph-1";
  const auto kept = [&](const std::string& id) -> train::ModelPtr {
    auto state = store.get(node_state_key("graph-1", id));
    if (!state || !state->outputs.count("module")) return nullptr;
    return std::get<train::ModelPtr>(state->outputs.at("module"));
  };
  const RunResult first = run_json(example("edu-deep-self-attention"), s);
  const train::ModelPtr attn = kept("attn"), heads = kept("heads");
  ASSERT_NE(attn, nullptr);
  ASSERT_NE(heads, nullptr);
  const RunResult second = run_json(example("edu-deep-self-attention"), s);
  EXPECT_EQ(kept("attn"), attn) << "a second run reuses the projections the first built";
  EXPECT_TRUE(torch::equal(std::get<torch::Tensor>(first.outputs.at("attn").at("output")),
                           std::get<torch::Tensor>(second.outputs.at("attn").at("output"))));
  json edited = example("edu-deep-self-attention");
  codefy::testing::set_param(edited, "attn", "seed", 7);
  const RunResult third = run_json(edited, s);
  EXPECT_NE(kept("attn"), attn) << "an edited seed builds new projections";
  EXPECT_FALSE(torch::equal(std::get<torch::Tensor>(first.outputs.at("attn").at("output")),
                            std::get<torch::Tensor>(third.outputs.at("attn").at("output"))));

  run_json(example("edu-deep-unet-step"), s);
  const train::ModelPtr block = kept("block");
  ASSERT_NE(block, nullptr);
  run_json(example("edu-deep-unet-step"), s);
  EXPECT_EQ(kept("block"), block);
  // The nodes CodefyUI draws afresh on every run keep nothing.
  run_json(example("edu-deep-conv-pool"), s);
  EXPECT_EQ(kept("conv"), nullptr);
}

// ----------------------------------------------------------------------------- verbose

TEST(EduDeepNodes, QuietRunsRecordNoSteps) {
  for (const auto& c : golden()["cases"]) {
    if (c["node"] == "example" || !c.value("verbose", false)) continue;
    const ValueMap out = run_node(c["node"], c["params"], golden_inputs(c), 0, false);
    for (const auto& [port, v] : out) EXPECT_NE(port.rfind("__step__", 0), 0u) << c["name"] << " " << port;
  }
}

TEST(EduDeepNodes, SelfAttentionRecordsTheMaskStepOnlyWhenMasking) {
  const ValueMap x{{"tensor", torch::randn({4, 8})}};
  const ValueMap plain = run_node("deep:Edu-SelfAttention", json::object(), x, 0, true);
  std::vector<std::string> names;
  for (int i = 0; plain.count("__step__" + std::to_string(i) + "__meta"); ++i)
    names.push_back(std::get<json>(plain.at("__step__" + std::to_string(i) + "__meta"))["name"]);
  EXPECT_EQ(names,
            (std::vector<std::string>{"input", "compute_qkv", "scaled_scores", "softmax_weights", "weighted_sum"}));
  ValueMap masked = x;
  masked["mask"] = torch::eye(4).to(torch::kBool);
  const ValueMap m = run_node("deep:Edu-SelfAttention", json::object(), masked, 0, true);
  const json meta = std::get<json>(m.at("__step__3__meta"));
  EXPECT_EQ(meta["name"], "mask");
  EXPECT_EQ(meta["description"], "Apply mask (causal=False, explicit_mask=True).");
  EXPECT_EQ(std::get<json>(m.at("__step__4__meta"))["description"],
            "Normalise with softmax / temperature (1.0). Each row sums to 1.");
}

TEST(EduDeepNodes, AVerboseGraphRunCarriesTheStepsAsExtraOutputs) {
  RunSettings s;
  s.verbose = true;
  const RunResult r = run_json(example("edu-deep-conv-pool"), s);
  const ValueMap& conv = r.outputs.at("conv");
  ASSERT_TRUE(conv.count("__step__0__meta"));
  EXPECT_EQ(std::get<json>(conv.at("__step__0__meta"))["name"], "im2col");
  EXPECT_EQ(std::get<torch::Tensor>(conv.at("__step__0__cols")).sizes(), (std::vector<int64_t>{1, 9, 36}));
  EXPECT_EQ(std::get<json>(r.outputs.at("pool").at("__step__6__meta"))["name"], "downsample");
  const RunResult quiet = run_json(example("edu-deep-conv-pool"));
  EXPECT_FALSE(quiet.outputs.at("conv").count("__step__0__meta"));
}

// ----------------------------------------------------------------------------- errors

TEST(EduDeepNodes, ShapeErrorsNameThePortAndTheShapes) {
  // Conv: a weight whose Cin differs from the input's.
  expect_mentions(failure("deep:Edu-Conv2d", json::object(),
                          {{"x", torch::ones({1, 3, 5, 5})}, {"weight", torch::ones({2, 2, 3, 3})}}),
                  {"weight", "Cin=2", "[2, 2, 3, 3]", "[1, 3, 5, 5]"});
  expect_mentions(failure("deep:Edu-Conv2d", json::object(), {{"x", torch::ones({5, 5})}}), {"x", "[5, 5]"});
  expect_mentions(failure("deep:Edu-Conv2d", {{"kernel_size", 7}}, {{"x", torch::ones({1, 1, 5, 5})}}),
                  {"x", "Hout=-1", "kernel 7x7"});
  expect_mentions(
      failure("deep:Edu-Conv2d", json::object(), {{"x", torch::ones({1, 1, 5, 5})}, {"bias", torch::ones({3})}}),
      {"bias", "[Cout=2]", "[3]"});
  // MaxPool: padding over half the window; a window larger than the map.
  expect_mentions(
      failure("deep:Edu-MaxPool2d", {{"kernel_size", 2}, {"padding", 2}}, {{"x", torch::ones({1, 1, 4, 4})}}),
      {"padding", "kernel_size//2=1"});
  expect_mentions(failure("deep:Edu-MaxPool2d", {{"kernel_size", 5}}, {{"x", torch::ones({1, 1, 4, 4})}}),
                  {"x", "[1, 1, 4, 4]", "Hout=0"});
  // Attention: embed_dim against the input, heads against embed_dim, masks, ranks.
  expect_mentions(failure("deep:Edu-SelfAttention", json::object(), {{"tensor", torch::ones({3, 6})}}),
                  {"tensor", "[3, 6]", "embed_dim=8"});
  expect_mentions(failure("deep:Edu-SelfAttention", json::object(), {{"tensor", torch::ones({1, 2, 3, 8})}}),
                  {"tensor", "[1, 2, 3, 8]"});
  expect_mentions(failure("deep:Edu-SelfAttention", json::object(),
                          {{"tensor", torch::ones({3, 8})}, {"mask", torch::ones({3, 4})}}),
                  {"mask", "[3, 4]", "seq_len=3"});
  expect_mentions(failure("deep:Edu-MultiHeadAttention", {{"num_heads", 3}}, {{"tensor", torch::ones({3, 8})}}),
                  {"num_heads", "embed_dim=8", "num_heads=3"});
  expect_mentions(failure("deep:Edu-CrossAttention", json::object(),
                          {{"query", torch::ones({3, 8})}, {"context", torch::ones({4, 1, 8})}}),
                  {"context", "(3, 8)", "(4, 1, 8)"});
  expect_mentions(failure("deep:Edu-CrossAttention", json::object(),
                          {{"query", torch::ones({3, 8})}, {"context", torch::ones({4, 6})}}),
                  {"context", "[4, 6]", "embed_dim=8"});
  expect_mentions(
      failure("deep:Edu-CrossAttention", json::object(),
              {{"query", torch::ones({3, 8})}, {"context", torch::ones({4, 8})}, {"mask", torch::ones({4, 3})}}),
      {"mask", "[4, 3]", "Q_seq=3, K_seq=4"});
  // LayerNorm, Patchify.
  expect_mentions(failure("deep:Edu-LayerNorm", {{"normalized_dim", 4}}, {{"x", torch::ones({2, 5})}}),
                  {"normalized_dim", "[2, 5]", "last dim 5"});
  expect_mentions(
      failure("deep:Edu-LayerNorm", json::object(), {{"x", torch::ones({2, 5})}, {"gamma", torch::ones({4})}}),
      {"gamma", "[5]", "[4]"});
  expect_mentions(failure("deep:Edu-Patchify", {{"patch_size", 3}}, {{"image", torch::ones({1, 1, 6, 4})}}),
                  {"image", "[1, 1, 6, 4]", "patch_size=3"});
  // RNN, LSTM.
  expect_mentions(failure("deep:Edu-RNNCell", json::object(), {{"x_seq", torch::ones({5, 3})}}),
                  {"x_seq", "[5, 3]", "input_size=4"});
  expect_mentions(
      failure("deep:Edu-RNNCell", json::object(), {{"x_seq", torch::ones({2, 5, 4})}, {"h0", torch::ones({3, 8})}}),
      {"h0", "[3, 8]", "[2, 8]"});
  expect_mentions(failure("deep:Edu-LSTMCell", json::object(), {{"x_seq", torch::ones({0, 4})}}),
                  {"x_seq", "zero timesteps"});
  expect_mentions(
      failure("deep:Edu-LSTMCell", json::object(), {{"x_seq", torch::ones({5, 4})}, {"c0", torch::ones({7})}}),
      {"c0", "[7]", "[8]"});
  // Diffusion.
  expect_mentions(failure("deep:Edu-DenoiseStep", json::object(),
                          {{"x_t", torch::ones({1, 2, 3})}, {"noise_pred", torch::ones({1, 3, 2})}}),
                  {"noise_pred", "(1, 3, 2)", "(1, 2, 3)"});
  expect_mentions(
      failure("deep:Edu-DenoiseStep", {{"t", 100}}, {{"x_t", torch::ones({2})}, {"noise_pred", torch::ones({2})}}),
      {"t", "1 ≤ t < num_steps (100)", "t=100"});
  expect_mentions(failure("deep:Edu-Resample", {{"direction", "up"}},
                          {{"x", torch::ones({1, 2, 3, 3})}, {"skip", torch::ones({1, 2, 5, 6})}}),
                  {"skip", "[1, 2, 5, 6]", "(6, 6)"});
  expect_mentions(failure("deep:Edu-Resample", {{"factor", 4}}, {{"x", torch::ones({1, 2, 3, 3})}}),
                  {"x", "[1, 2, 3, 3]", "factor=4"});
  expect_mentions(failure("deep:Edu-ResBlock", json::object(), {{"tensor", torch::ones({1, 4, 3, 3})}}),
                  {"tensor", "4 channels", "[1, 4, 3, 3]", "in_channels=8"});
  expect_mentions(failure("deep:Edu-ResBlock", {{"groups", 3}}, {{"tensor", torch::ones({1, 8, 3, 3})}}),
                  {"groups", "groups=3"});
  expect_mentions(failure("deep:Edu-ResBlock", json::object(),
                          {{"tensor", torch::ones({1, 8, 3, 3})}, {"time_emb", torch::ones({1, 16})}}),
                  {"time_emb", "[1, 16]", "time_emb_dim=32"});
}

TEST(EduDeepNodes, HugeSizesAreRefusedBeforeAllocating) {
  expect_mentions(failure("deep:Edu-Conv2d", {{"out_channels", 1 << 20}, {"kernel_size", 1 << 10}},
                          {{"x", torch::ones({1, 1, 4, 4})}}),
                  {"kernel_size", "2^28"});
  expect_mentions(failure("deep:Edu-SelfAttention", {{"embed_dim", 1 << 16}}, {{"tensor", torch::ones({2, 1 << 16})}}),
                  {"embed_dim", "2^28"});
  expect_mentions(failure("deep:Edu-DenoiseStep", {{"num_steps", int64_t{1} << 40}, {"t", 5}},
                          {{"x_t", torch::ones({2})}, {"noise_pred", torch::ones({2})}}),
                  {"num_steps", "at most"});
  expect_mentions(
      failure("deep:Edu-Resample", {{"direction", "up"}, {"factor", 1 << 20}}, {{"x", torch::ones({1, 1, 2, 2})}}),
      {"x", "2^28"});
}

// ----------------------------------------------------------------------------- the lesson graphs

class EduDeepExamples : public ::testing::TestWithParam<std::string> {};

TEST_P(EduDeepExamples, RunAndMatchPyTorch) {
  const json& c = golden_case(GetParam());
  const auto dir = source_dir() / "examples" / c["params"]["path"].get<std::string>();
  const json g = read_json(dir / "graph.json");
  // CodefyUI's graph format: every lesson starts from a Start node's trigger.
  for (const auto& n : g["nodes"]) {
    if (n["type"] == "Start") {
      EXPECT_EQ(n["id"], "start");
    }
  }
  codefy::testing::Recorder rec;
  const RunResult r = run_json(g, 0, &rec, dir);
  for (auto it = c["outputs"].begin(); it != c["outputs"].end(); ++it) {
    const std::string key = it.key();
    const auto dot = key.find('.');
    const auto& out = r.outputs.at(key.substr(0, dot)).at(key.substr(dot + 1));
    expect_tensor(std::get<torch::Tensor>(out), it.value(), key, 1e-4);
  }
  EXPECT_EQ(rec.prints.size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(EduDeepLessons, EduDeepExamples, ::testing::ValuesIn(case_names(true)), case_name);

TEST(EduDeepExampleCli, ValidateAndRunFromTheCommandLine) {
  const auto out = codefy::testing::temp_dir("edu-deep-examples");
  for (const std::string name : {"edu-deep-conv-pool", "edu-deep-self-attention", "edu-deep-unet-step"}) {
    const auto path = (source_dir() / "examples" / name / "graph.json").string();
    const auto v = codefy::testing::run_codefy("validate " + path);
    EXPECT_EQ(v.exit_code, 0) << name << ": " << v.output;
    const auto run = codefy::testing::run_codefy("run " + path + " --out " + out.string());
    EXPECT_EQ(run.exit_code, 0) << name << ": " << run.output;
  }
}

}  // namespace edu_deep_test
}  // namespace codefy
