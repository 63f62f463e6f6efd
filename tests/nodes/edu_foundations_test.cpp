// The teaching nodes of CodefyUI's foundations and rl plugin packs
// (src/nodes/edu_foundations_nodes.cpp) against PyTorch 1.13's numbers
// (tests/golden/edu_foundations.json, from
// scripts/golden/make_edu_foundations_golden.py): their outputs, the steps
// a verbose run records, their definitions, the errors a user can hit, and
// the example graphs that use them.
#include "../common/golden_support.h"
#include "../common/test_support.h"

#include <torch/torch.h>

#include <algorithm>
#include <set>

namespace codefy {
namespace {

using codefy::testing::expect_golden_outputs;
using codefy::testing::expect_tensor;
using codefy::testing::golden_inputs;
using codefy::testing::read_json;
using codefy::testing::run_json;
using codefy::testing::run_node;
using codefy::testing::source_dir;
using nlohmann::json;

const json& golden() {
  static const json g = read_json(source_dir() / "tests/golden/edu_foundations.json");
  return g;
}

const json& golden_case(const std::string& name) { return codefy::testing::golden_case_in(golden(), name); }

std::vector<std::string> node_case_names() {
  std::vector<std::string> names;
  for (const auto& c : golden()["cases"])
    if (c["node"] != "example") names.push_back(c["name"]);
  return names;
}

std::string case_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

bool is_edu_type(const std::string& type) { return type.rfind("foundations:", 0) == 0 || type.rfind("rl:", 0) == 0; }

// ----------------------------------------------------------------------------- golden values, case by case

class EduFoundationsGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(EduFoundationsGolden, OutputsAndStepsMatchPyTorch) {
  const json& c = golden_case(GetParam());
  const bool verbose = c.value("verbose", false);
  const ValueMap out = run_node(c["node"], c["params"], golden_inputs(c), 0, verbose);
  expect_golden_outputs(out, c);
  for (const auto& [port, v] : out) {
    if (port.rfind("__step__", 0) == 0) {
      EXPECT_TRUE(verbose) << "a run that is not verbose records no steps: " << port;
      continue;
    }
    EXPECT_TRUE(c["outputs"].contains(port)) << "unexpected output " << port;
  }
  if (!verbose) return;
  // The steps CodefyUI's node records, in its order, with its tensor names.
  const json& steps = c["steps"];
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto meta = out.find("__step__" + std::to_string(i) + "__meta");
    ASSERT_NE(meta, out.end()) << "no step " << i;
    const json& m = std::get<json>(meta->second);
    EXPECT_EQ(m["name"], steps[i]["name"]) << "step " << i;
    EXPECT_EQ(m["tensors"], steps[i]["tensors"]) << "step " << i;
    EXPECT_EQ(m["index"], i);
    EXPECT_TRUE(m["description"].is_string() && !m["description"].get<std::string>().empty());
    EXPECT_TRUE(m["scalars"].is_object());
  }
  EXPECT_EQ(out.count("__step__" + std::to_string(steps.size()) + "__meta"), 0u) << "more steps than CodefyUI's";
}

INSTANTIATE_TEST_SUITE_P(EduFoundations, EduFoundationsGolden, ::testing::ValuesIn(node_case_names()), case_name);

// ----------------------------------------------------------------------------- definitions

/// CodefyUI's contract for one node: its category and the names of its
/// inputs, outputs and params, in order.
struct Contract {
  const char* type;
  const char* category;
  std::vector<std::string> inputs, outputs, params;
};

const std::vector<Contract>& contracts() {
  static const std::vector<Contract> c{
      {"foundations:Edu-ColumnStats",
       "Classical",
       {"table"},
       {"means", "stds", "mins", "maxs", "counts"},
       {"unbiased"}},
      {"foundations:Edu-DecisionTree",
       "Classical",
       {"x_train", "y_train", "x_query"},
       {"predictions", "tree", "node_count"},
       {"max_depth", "min_samples_split", "criterion"}},
      {"foundations:Edu-FFN",
       "LLM",
       {"tensor"},
       {"tensor", "activations"},
       {"embed_dim", "hidden_dim", "activation", "seed"}},
      {"foundations:Edu-KNN",
       "Classical",
       {"x_train", "y_train", "x_query"},
       {"predictions", "distances", "neighbor_indices", "train_coords", "query_coords", "train_labels"},
       {"k", "metric"}},
      {"foundations:Edu-LinearRegression",
       "Classical",
       {"x_train", "y_train", "x_query"},
       {"predictions", "weights", "bias"},
       {"method", "lr", "epochs", "regularization"}},
      {"foundations:Edu-LogisticRegression",
       "Classical",
       {"x_train", "y_train", "x_query"},
       {"predictions", "probabilities", "weights", "bias", "classes"},
       {"lr", "epochs", "regularization"}},
      {"foundations:Edu-SlidingWindow",
       "Vision",
       {"image", "kernel"},
       {"feature_map", "kernel", "windows"},
       {"kernel_preset", "stride", "padding"}},
      {"foundations:Edu-SVM",
       "Classical",
       {"x_train", "y_train", "x_query"},
       {"predictions", "weights", "bias", "support_vectors", "decision_values"},
       {"C", "lr", "epochs"}},
      {"foundations:Edu-TokenEmbedding",
       "LLM",
       {"tokens", "token_ids"},
       {"embeddings", "vocab"},
       {"embed_dim", "vocab_size", "seed", "mode"}},
      {"foundations:Edu-VectorSimilarity",
       "Data",
       {"query", "keys"},
       {"similarity", "query_norms", "key_norms"},
       {"metric"}},
      {"rl:Edu-PolicyGradient",
       "RL",
       {"logits", "actions", "rewards"},
       {"log_probs", "advantages", "loss", "probs"},
       {"baseline", "temperature"}},
      {"rl:Edu-GRPO",
       "RL",
       {"logits", "actions", "rewards"},
       {"loss", "advantages", "log_probs", "group_mean", "group_std"},
       {"temperature", "std_eps"}},
      {"rl:Edu-PPOClip",
       "RL",
       {"logits_new", "logits_old", "actions", "advantages"},
       {"loss", "ratio", "clipped_ratio", "objective"},
       {"clip_epsilon", "temperature"}},
      {"rl:Edu-PreferenceLoss",
       "RL",
       {"reward_chosen", "reward_rejected"},
       {"loss", "prob_preferred", "margin", "accuracy"},
       {"beta"}},
  };
  return c;
}

TEST(EduFoundationsNodes, DefinitionsFollowCodefyUI) {
  for (const Contract& want : contracts()) {
    const NodeType* t = nodes::builtin().get(want.type);
    ASSERT_NE(t, nullptr) << want.type;
    EXPECT_EQ(t->def.category, want.category) << want.type;
    EXPECT_FALSE(t->def.description.empty()) << want.type;
    std::vector<std::string> inputs, outputs, params;
    for (const auto& p : t->def.inputs) inputs.push_back(p.name);
    for (const auto& p : t->def.outputs) outputs.push_back(p.name);
    for (const auto& p : t->def.params) params.push_back(p.name);
    EXPECT_EQ(inputs, want.inputs) << want.type;
    EXPECT_EQ(outputs, want.outputs) << want.type;
    EXPECT_EQ(params, want.params) << want.type;
  }
  const auto& sw = nodes::builtin().get("foundations:Edu-SlidingWindow")->def;
  EXPECT_TRUE(sw.input("kernel")->optional);
  EXPECT_FALSE(sw.input("image")->optional);
  const auto& te = nodes::builtin().get("foundations:Edu-TokenEmbedding")->def;
  EXPECT_TRUE(te.input("tokens")->optional && te.input("token_ids")->optional);
  EXPECT_EQ(nodes::builtin().get("foundations:Edu-KNN")->def.input("y_train")->type, graph::DataType::kList);
  EXPECT_EQ(nodes::builtin().get("foundations:Edu-DecisionTree")->def.output("tree")->type, graph::DataType::kAny);
}

TEST(EduFoundationsNodes, GoldenFileCoversEveryNode) {
  std::set<std::string> covered, verbose;
  for (const auto& c : golden()["cases"]) {
    covered.insert(c["node"].get<std::string>());
    if (c.value("verbose", false)) verbose.insert(c["node"].get<std::string>());
  }
  size_t registered = 0;
  for (const NodeType* t : nodes::builtin().list()) {
    if (!is_edu_type(t->def.name)) continue;
    ++registered;
    EXPECT_TRUE(covered.count(t->def.name)) << t->def.name;
    EXPECT_TRUE(verbose.count(t->def.name)) << t->def.name << " has no verbose case";
  }
  EXPECT_EQ(registered, contracts().size());
  EXPECT_EQ(golden()["torch_version"].get<std::string>().rfind("1.13", 0), 0u);
}

// ----------------------------------------------------------------------------- errors

/// The failure of one run as `field: message`, or "ran".
std::string run_error(const std::string& type, const json& params, const ValueMap& inputs) {
  try {
    run_node(type, params, inputs);
  } catch (const NodeFailure& e) {
    return e.field() + ": " + e.what();
  }
  return "ran";
}

void expect_mentions(const std::string& message, const std::vector<std::string>& parts) {
  for (const auto& p : parts) EXPECT_NE(message.find(p), std::string::npos) << "'" << p << "' not in: " << message;
}

torch::Tensor zeros(std::vector<int64_t> shape) { return torch::zeros(shape); }

TEST(EduFoundationsNodes, ClassicalErrorsNameThePortAndShapes) {
  const std::string ct = "foundations:Edu-ColumnStats";
  expect_mentions(run_error(ct, {}, {{"table", zeros({3})}}), {"input \"table\"", "[3]"});
  expect_mentions(run_error(ct, {}, {{"table", zeros({0, 2})}}), {"input \"table\"", "zero rows"});

  const std::string tree = "foundations:Edu-DecisionTree";
  const ValueMap good_tree{{"x_train", zeros({5, 2})},
                           {"y_train", torch::tensor({0, 1, 0, 1, 1}, torch::kInt64)},
                           {"x_query", zeros({2, 2})}};
  ValueMap in = good_tree;
  in["y_train"] = torch::tensor({0, 1, 0, 1}, torch::kInt64);
  expect_mentions(run_error(tree, {}, in), {"input \"y_train\"", "5 rows", "4 labels"});
  in = good_tree;
  in["x_query"] = zeros({2, 3});
  expect_mentions(run_error(tree, {}, in), {"input \"x_query\"", "[2, 3]", "[5, 2]"});
  in = good_tree;
  in["y_train"] = torch::tensor({0, -1, 0, 1, 1}, torch::kInt64);
  expect_mentions(run_error(tree, {}, in), {"input \"y_train\"", "non-negative"});
  expect_mentions(run_error(tree, {{"max_depth", 0}}, good_tree), {"param \"max_depth\"", ">= 1"});
  expect_mentions(run_error(tree, {{"criterion", "chaos"}}, good_tree), {"param \"criterion\"", "chaos"});

  const std::string knn = "foundations:Edu-KNN";
  expect_mentions(
      run_error(knn, {}, {{"x_train", zeros({4, 2})}, {"y_train", json{"a", "b"}}, {"x_query", zeros({1, 2})}}),
      {"input \"y_train\"", "4 rows", "2 labels"});
  expect_mentions(run_error(knn, {}, {{"x_train", zeros({4})}, {"y_train", json{"a"}}, {"x_query", zeros({1, 2})}}),
                  {"input \"x_train\"", "[4]"});
  // The pairwise differences would be 200 x 20000 x 100 floats: refused before they are allocated.
  expect_mentions(run_error(knn, {},
                            {{"x_train", zeros({20000, 100})},
                             {"y_train", json(std::vector<int>(20000, 1))},
                             {"x_query", zeros({200, 100})}}),
                  {"input \"x_query\"", "too many"});

  const std::string lin = "foundations:Edu-LinearRegression";
  expect_mentions(
      run_error(lin, {}, {{"x_train", zeros({4, 2})}, {"y_train", zeros({4, 2})}, {"x_query", zeros({1, 2})}}),
      {"input \"y_train\"", "[4, 2]"});
  expect_mentions(run_error(lin, {}, {{"x_train", zeros({4, 2})}, {"y_train", zeros({3})}, {"x_query", zeros({1, 2})}}),
                  {"input \"y_train\"", "4 rows", "3 targets"});
  expect_mentions(run_error(lin, {{"method", "magic"}},
                            {{"x_train", zeros({4, 2})}, {"y_train", zeros({4})}, {"x_query", zeros({1, 2})}}),
                  {"param \"method\"", "magic"});

  const std::string logreg = "foundations:Edu-LogisticRegression";
  expect_mentions(
      run_error(logreg, {}, {{"x_train", zeros({3, 2})}, {"y_train", json{"a", "a", "a"}}, {"x_query", zeros({1, 2})}}),
      {"input \"y_train\"", "at least 2 classes", "['a']"});

  const std::string svm = "foundations:Edu-SVM";
  const ValueMap three{
      {"x_train", zeros({3, 2})}, {"y_train", torch::tensor({0, 1, 2}, torch::kInt64)}, {"x_query", zeros({1, 2})}};
  expect_mentions(run_error(svm, {}, three), {"input \"y_train\"", "exactly 2 distinct classes", "3 ([0, 1, 2])"});
  ValueMap two = three;
  two["y_train"] = torch::tensor({0, 1, 1}, torch::kInt64);
  expect_mentions(run_error(svm, {{"C", -1.0}}, two), {"param \"C\"", ">= 0"});
  expect_mentions(run_error(svm, {{"epochs", 0}}, two), {"param \"epochs\"", ">= 1"});
}

TEST(EduFoundationsNodes, VisionAndEmbeddingErrorsNameThePortAndShapes) {
  const std::string sw = "foundations:Edu-SlidingWindow";
  expect_mentions(run_error(sw, {}, {{"image", zeros({1, 1, 4, 4})}}), {"input \"image\"", "[1, 1, 4, 4]"});
  expect_mentions(run_error(sw, {}, {{"image", zeros({4, 4})}, {"kernel", zeros({5, 2})}}),
                  {"input \"kernel\"", "5x2", "4x4"});
  expect_mentions(run_error(sw, {}, {{"image", zeros({4, 4})}, {"kernel", zeros({3})}}), {"input \"kernel\"", "[3]"});
  expect_mentions(run_error(sw, {}, {{"image", zeros({2, 2})}}), {"input \"image\"", "3x3", "2x2"});
  expect_mentions(run_error(sw, {{"stride", 0}}, {{"image", zeros({4, 4})}}), {"param \"stride\"", ">= 1"});
  expect_mentions(run_error(sw, {{"padding", 100000}}, {{"image", zeros({4, 4})}}), {"param \"padding\"", "too large"});

  const std::string ffn = "foundations:Edu-FFN";
  expect_mentions(run_error(ffn, {}, {{"tensor", zeros({2, 5})}}), {"input \"tensor\"", "[2, 5]", "embed_dim=8"});
  expect_mentions(run_error(ffn, {{"activation", "tanh"}}, {{"tensor", zeros({2, 8})}}),
                  {"param \"activation\"", "tanh"});
  expect_mentions(run_error(ffn, {{"hidden_dim", int64_t{1} << 40}}, {{"tensor", zeros({2, 8})}}),
                  {"param \"hidden_dim\"", "2^28"});

  expect_mentions(run_error(ffn, {{"hidden_dim", int64_t{1} << 19}}, {{"tensor", zeros({1024, 8})}}),
                  {"param \"hidden_dim\"", "1024 positions", "too many"});

  const std::string te = "foundations:Edu-TokenEmbedding";
  expect_mentions(run_error(te, {{"embed_dim", 8192}}, {{"tokens", json(std::vector<std::string>(40000, "a"))}}),
                  {"input \"tokens\"", "40000 tokens", "too many"});
  expect_mentions(run_error(te, {}, {}), {"input \"tokens\"", "token_ids"});
  expect_mentions(run_error(te, {}, {{"token_ids", json{1, "abc"}}}), {"input \"token_ids\"", "\"abc\""});
  expect_mentions(run_error(te, {{"vocab_size", int64_t{1} << 40}}, {{"tokens", json{"a"}}}),
                  {"param \"vocab_size\"", "2^28"});

  const std::string vs = "foundations:Edu-VectorSimilarity";
  expect_mentions(run_error(vs, {}, {{"query", zeros({2, 4})}, {"keys", zeros({5, 3})}}),
                  {"input \"keys\"", "[5, 3]", "[2, 4]"});
  expect_mentions(run_error(vs, {}, {{"query", zeros({1, 2, 3})}, {"keys", zeros({5, 3})}}),
                  {"input \"query\"", "[1, 2, 3]"});
}

TEST(EduFoundationsNodes, RlErrorsNameThePortAndShapes) {
  const ValueMap batch{{"logits", zeros({6, 4})},
                       {"actions", torch::tensor({0, 1, 2, 3, 0, 1}, torch::kInt64)},
                       {"rewards", zeros({6})}};
  ValueMap in = batch;
  in["actions"] = torch::tensor({0, 1, 2, 4, 0, 1}, torch::kInt64);
  expect_mentions(run_error("rl:Edu-PolicyGradient", {}, in), {"input \"actions\"", "out of range", "[0, 4)", "max=4"});
  in = batch;
  in["rewards"] = zeros({5});
  expect_mentions(run_error("rl:Edu-PolicyGradient", {}, in), {"input \"rewards\"", "[6]", "[5]"});
  expect_mentions(run_error("rl:Edu-PolicyGradient", {{"temperature", 0.0}}, batch),
                  {"param \"temperature\"", "positive"});
  in = batch;
  in["logits"] = zeros({6});
  expect_mentions(run_error("rl:Edu-GRPO", {}, in), {"input \"logits\"", "[B, A]", "[6]"});
  expect_mentions(
      run_error("rl:Edu-GRPO", {},
                {{"logits", zeros({1, 4})}, {"actions", torch::tensor({0}, torch::kInt64)}, {"rewards", zeros({1})}}),
      {"input \"logits\"", "at least two", "G=1"});

  const ValueMap ppo{{"logits_new", zeros({6, 4})},
                     {"logits_old", zeros({6, 3})},
                     {"actions", torch::tensor({0, 1, 2, 3, 0, 1}, torch::kInt64)},
                     {"advantages", zeros({6})}};
  expect_mentions(run_error("rl:Edu-PPOClip", {}, ppo), {"input \"logits_old\"", "[6, 4]", "[6, 3]"});
  in = ppo;
  in["logits_old"] = zeros({6, 4});
  expect_mentions(run_error("rl:Edu-PPOClip", {{"clip_epsilon", -0.1}}, in), {"param \"clip_epsilon\"", ">= 0"});

  const std::string pref = "rl:Edu-PreferenceLoss";
  expect_mentions(run_error(pref, {}, {{"reward_chosen", zeros({5})}, {"reward_rejected", zeros({4})}}),
                  {"input \"reward_rejected\"", "[5]", "[4]"});
  expect_mentions(run_error(pref, {}, {{"reward_chosen", zeros({5, 1})}, {"reward_rejected", zeros({5})}}),
                  {"input \"reward_chosen\"", "[5, 1]"});
  expect_mentions(run_error(pref, {{"beta", -1.0}}, {{"reward_chosen", zeros({5})}, {"reward_rejected", zeros({5})}}),
                  {"param \"beta\"", ">= 0"});
}

// ----------------------------------------------------------------------------- behaviour beyond the numbers

TEST(EduFoundationsNodes, PpoClipGradientReachesTheNewPolicyOnly) {
  const json& c = golden_case("ppo_clip_lesson");
  ValueMap in = golden_inputs(c);
  const torch::Tensor new_logits = std::get<torch::Tensor>(in["logits_new"]).clone().requires_grad_(true);
  const torch::Tensor old_logits = std::get<torch::Tensor>(in["logits_old"]).clone().requires_grad_(true);
  in["logits_new"] = new_logits;
  in["logits_old"] = old_logits;
  const ValueMap out = run_node("rl:Edu-PPOClip", {}, in);
  std::get<torch::Tensor>(out.at("loss")).backward();
  ASSERT_TRUE(new_logits.grad().defined());
  EXPECT_FALSE(old_logits.grad().defined()) << "the behaviour policy is a constant";
  // The first sample's ratio is clipped, so only the second one moves the policy.
  EXPECT_EQ(new_logits.grad()[0].abs().sum().item<float>(), 0.0f);
  EXPECT_GT(new_logits.grad()[1].abs().sum().item<float>(), 0.0f);
}

TEST(EduFoundationsNodes, ListInputsMayBeTensorsAndNumbersMayBeLists) {
  // CodefyUI's nodes take torch.as_tensor of what arrives: a nested list
  // works where a tensor is expected, and a label tensor where a list is.
  const json& c = golden_case("knn_k_clamped_numeric_labels");
  ValueMap in = golden_inputs(c);
  const json labels = std::get<json>(in["y_train"]);
  in["y_train"] = torch::tensor(labels.get<std::vector<int64_t>>(), torch::kInt64);
  const ValueMap out = run_node("foundations:Edu-KNN", c["params"], in);
  EXPECT_EQ(std::get<json>(out.at("predictions")), c["outputs"]["predictions"]);
  EXPECT_EQ(std::get<json>(out.at("train_labels")), labels);

  const json& p = golden_case("preference_loss_default");
  ValueMap lists;
  for (const char* port : {"reward_chosen", "reward_rejected"}) lists[port] = p["inputs"][port]["values"];
  const ValueMap pref = run_node("rl:Edu-PreferenceLoss", {}, lists);
  expect_tensor(std::get<torch::Tensor>(pref.at("loss")), p["outputs"]["loss"], "loss");
}

TEST(EduFoundationsNodes, LinearRegressionFallsBackToLeastSquaresWhenSingular) {
  // A column of zeros makes XᵀX exactly singular: solve refuses it and, as in
  // CodefyUI, least squares answers instead. (Which least-squares solution
  // LAPACK's rank-revealing driver returns for a float32 normal equation is
  // not stable enough to compare with PyTorch's digit for digit.)
  const json& c = golden_case("linreg_closed_form");
  ValueMap in = golden_inputs(c);
  const torch::Tensor x = std::get<torch::Tensor>(in["x_train"]);
  in["x_train"] = torch::cat({x.slice(1, 0, 2), torch::zeros({x.size(0), 1})}, 1);
  const ValueMap out = run_node("foundations:Edu-LinearRegression", {}, in);
  const torch::Tensor w = std::get<torch::Tensor>(out.at("weights"));
  ASSERT_EQ(w.sizes(), torch::IntArrayRef({3}));
  EXPECT_TRUE(torch::isfinite(w).all().item<bool>()) << w;
  EXPECT_EQ(w[2].item<float>(), 0.0f);
  EXPECT_TRUE(torch::isfinite(std::get<torch::Tensor>(out.at("predictions"))).all().item<bool>());
}

TEST(EduFoundationsNodes, DecisionTreeRecordsEverySplitInBuildOrder) {
  const json& c = golden_case("decision_tree_gini_depth3");
  const ValueMap out = run_node(c["node"], c["params"], golden_inputs(c), 0, true);
  // One split_d{depth} step per internal node (node_count = 2 x splits + 1), then the summary.
  const int64_t nodes = std::get<torch::Tensor>(out.at("node_count")).item<int64_t>();
  const int64_t splits = (nodes - 1) / 2;
  for (int64_t i = 0; i < splits; ++i) {
    const json& m = std::get<json>(out.at("__step__" + std::to_string(i) + "__meta"));
    EXPECT_EQ(m["name"].get<std::string>().rfind("split_d", 0), 0u);
    for (const char* s : {"feature", "threshold", "impurity_before", "impurity_after", "gain", "n_samples"})
      EXPECT_TRUE(m["scalars"].contains(s)) << s;
    EXPECT_NEAR(m["scalars"]["impurity_before"].get<double>() - m["scalars"]["impurity_after"].get<double>(),
                m["scalars"]["gain"].get<double>(), 1e-12);
  }
  const json& last = std::get<json>(out.at("__step__" + std::to_string(splits) + "__meta"));
  EXPECT_EQ(last["name"], "tree");
  EXPECT_EQ(last["scalars"]["node_count"].get<double>(), static_cast<double>(nodes));
}

// ----------------------------------------------------------------------------- example graphs

TEST(EduFoundationsExamples, PpoClipLessonRunsAndMatchesPyTorch) {
  const json& c = golden_case("example_edu_rl_ppo_clip");
  const auto dir = source_dir() / "examples" / c["params"]["path"].get<std::string>();
  codefy::testing::Recorder rec;
  const RunResult r = run_json(read_json(dir / "graph.json"), 0, &rec, dir);
  for (auto it = c["outputs"].begin(); it != c["outputs"].end(); ++it) {
    const std::string key = it.key();
    const auto dot = key.find('.');
    expect_tensor(std::get<torch::Tensor>(r.outputs.at(key.substr(0, dot)).at(key.substr(dot + 1))), it.value(), key);
  }
  EXPECT_EQ(rec.prints.size(), 1u);

  // Verbose: the node's steps travel with its outputs.
  RunSettings s;
  s.base_dir = dir;
  s.verbose = true;
  const RunResult v = run_json(read_json(dir / "graph.json"), s);
  const auto& ppo = v.outputs.at("ppo");
  ASSERT_TRUE(ppo.count("__step__1__meta"));
  EXPECT_EQ(std::get<json>(ppo.at("__step__1__meta"))["name"], "ratio");
  expect_tensor(std::get<torch::Tensor>(ppo.at("__step__1__ratio")), c["outputs"]["ppo.ratio"], "ratio");
}

TEST(EduFoundationsExamples, KnnMoonsLessonAgreesWithTheLibraryKnn) {
  const auto dir = source_dir() / "examples" / "edu-foundations-knn-moons";
  codefy::testing::Recorder rec;
  const RunResult r = run_json(read_json(dir / "graph.json"), 0, &rec, dir);
  // The hand-written vote and the scikit-learn-equivalent KNN node agree
  // label for label (two classes and k = 5 leave no tied votes).
  const json& edu = std::get<json>(r.outputs.at("edu_knn").at("predictions"));
  const json& lib = std::get<json>(r.outputs.at("knn").at("predictions"));
  EXPECT_EQ(edu.size(), 50u);
  EXPECT_EQ(edu, lib);
  EXPECT_EQ(std::get<double>(r.outputs.at("edu_knn_acc").at("accuracy")),
            std::get<double>(r.outputs.at("knn_acc").at("accuracy")));
  const auto& neighbours = std::get<json>(r.outputs.at("edu_knn").at("neighbor_indices"));
  ASSERT_EQ(neighbours.size(), 50u);
  EXPECT_EQ(neighbours[0].size(), 5u);
  const double logreg = std::get<double>(r.outputs.at("edu_logreg_acc").at("accuracy"));
  EXPECT_GE(logreg, 0.0);
  EXPECT_LE(logreg, 1.0);
  EXPECT_EQ(rec.prints.size(), 3u);
}

TEST(EduFoundationsExamples, CodefyRunsTheExamplesFromTheCommandLine) {
  for (const auto& [name, label] : std::vector<std::pair<std::string, std::string>>{
           {"edu-rl-ppo-clip", "PPO clipped loss"}, {"edu-foundations-knn-moons", "Edu-KNN test accuracy"}}) {
    const auto r = codefy::testing::run_codefy("run " + (source_dir() / "examples" / name / "graph.json").string());
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.output;
    EXPECT_NE(r.output.find(label), std::string::npos) << name << ": " << r.output;
  }
}

}  // namespace
}  // namespace codefy
