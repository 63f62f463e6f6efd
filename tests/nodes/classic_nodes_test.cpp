// The data and classical-ML nodes through the executor, against references
// computed another way (tests/golden/classic.json from
// scripts/golden/make_classic_golden.py: numpy's own RandomState running
// scikit-learn's generator and split algorithms, brute-force KNN, Newton's
// method for logistic regression, a plain Python CART), and by hand.
#include "../common/test_util.h"
#include "device/memory.h"
#include "engine/errors.h"
#include "engine/executor.h"
#include "graph/graph.h"
#include "nodes/library.h"
#include "train/classic.h"
#include "util/text.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <png.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace codefy {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const json& golden() {
  static const json g = codefy::testing::read_json_file(fs::path(CODEFY_SOURCE_DIR) / "tests/golden/classic.json");
  return g;
}

/// A graph built in a test: a Start that triggers every source node.
struct GraphBuilder {
  json g = {{"name", "classic"},
            {"nodes", json::array({{{"id", "start"}, {"type", "Start"}, {"data", {{"params", json::object()}}}}})},
            {"edges", json::array()}};
  GraphBuilder& source(const std::string& id, const std::string& type, const json& params = json::object()) {
    node(id, type, params);
    g["edges"].push_back({{"source", "start"}, {"target", id}, {"type", "trigger"}});
    return *this;
  }
  GraphBuilder& node(const std::string& id, const std::string& type, const json& params = json::object()) {
    g["nodes"].push_back({{"id", id}, {"type", type}, {"data", {{"params", params}}}});
    return *this;
  }
  GraphBuilder& wire(const std::string& from, const std::string& out, const std::string& to, const std::string& in) {
    g["edges"].push_back({{"source", from}, {"sourceHandle", out}, {"target", to}, {"targetHandle", in}});
    return *this;
  }
};

RunResult run_graph(const json& g, const fs::path& base_dir = {}) {
  graph::Graph graph = graph::graph_from_json(g, "classic");
  graph.base_dir = base_dir;
  PreparedGraph p = prepare(graph, nodes::builtin());
  RunSettings s;
  s.base_dir = base_dir;
  return Executor(nodes::builtin()).run(p, s);
}

/// The NodeError a graph fails with (the test fails when it runs).
NodeError run_error(const json& g, const fs::path& base_dir = {}) {
  try {
    run_graph(g, base_dir);
  } catch (const NodeError& e) {
    return e;
  }
  ADD_FAILURE() << "the graph ran";
  return NodeError("", "", "", "", "");
}

const torch::Tensor& tensor(RunResult& r, const std::string& node, const std::string& port) {
  return std::get<torch::Tensor>(r.outputs.at(node).at(port));
}
const json& list(RunResult& r, const std::string& node, const std::string& port) {
  return std::get<json>(r.outputs.at(node).at(port));
}

torch::Tensor golden_tensor(const json& rows) {
  std::vector<double> flat;
  int64_t cols = 0;
  for (const auto& row : rows) {
    cols = static_cast<int64_t>(row.size());
    for (const auto& v : row) flat.push_back(v.get<double>());
  }
  return torch::tensor(flat, torch::kFloat64).reshape({static_cast<int64_t>(rows.size()), cols});
}

std::vector<std::string> strings_of(const json& ints) {
  std::vector<std::string> out;
  for (const auto& v : ints) out.push_back(std::to_string(v.get<int64_t>()));
  return out;
}

/// A 2x1 RGBA PNG: a red pixel and a half-transparent blue one.
void write_png(const fs::path& path) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = 2;
  image.height = 1;
  image.format = PNG_FORMAT_RGBA;
  const uint8_t pixels[] = {255, 0, 0, 255, 0, 0, 255, 128};
  ASSERT_TRUE(png_image_write_to_file(&image, path.c_str(), 0, pixels, 0, nullptr));
}

// ---------------------------------------------------------------------------

TEST(ClassicNodes, NumpyRandomMatchesNumpysFirstDraws) {
  // numpy.random.RandomState(42): random_sample() and, on a fresh state, standard_normal(2).
  train::classic::NumpyRandom rng(42);
  EXPECT_DOUBLE_EQ(rng.random_sample(), 0.3745401188473625);
  EXPECT_DOUBLE_EQ(rng.random_sample(), 0.9507143064099162);
  train::classic::NumpyRandom g(42);
  EXPECT_NEAR(g.gauss(), 0.4967141530112327, 1e-15);
  EXPECT_NEAR(g.gauss(), -0.13826430117118466, 1e-15);
  // permutation(10) of RandomState(0).
  train::classic::NumpyRandom p(0);
  EXPECT_EQ(p.permutation(10), (std::vector<int64_t>{2, 8, 4, 9, 1, 6, 7, 3, 0, 5}));
}

TEST(ClassicNodes, SyntheticDatasetMatchesScikitLearnsGeneratorsPointForPoint) {
  for (const auto& [name, ds] : golden()["datasets"].items()) {
    SCOPED_TRACE(name);
    auto r = run_graph(GraphBuilder().source("data", "SyntheticDataset", ds["params"]).g);
    const torch::Tensor x = tensor(r, "data", "tensor");
    ASSERT_EQ(x.scalar_type(), torch::kFloat32);
    const torch::Tensor want = golden_tensor(ds["x"]).to(torch::kFloat32);
    ASSERT_EQ(x.sizes(), want.sizes());
    EXPECT_TRUE(torch::allclose(x, want, 1e-6, 1e-6)) << (x - want).abs().max().item<float>();
    EXPECT_EQ(list(r, "data", "labels"), json(strings_of(ds["y"])));
    EXPECT_EQ(list(r, "data", "columns"), json({"x0", "x1"}));
  }
}

TEST(ClassicNodes, TrainTestSplitMatchesScikitLearnsRows) {
  for (const auto& c : golden()["splits"]) {
    const int64_t n = c["n"];
    const auto s = train::classic::train_test_split(n, c["test_size"], c["seed"]);
    EXPECT_EQ(json(s.train), c["split"][0]);
    EXPECT_EQ(json(s.test), c["split"][1]);
  }
  // Through the node: rows and labels move together.
  const auto& ds = golden()["datasets"]["moons"];
  auto r = run_graph(GraphBuilder()
                         .source("data", "SyntheticDataset", ds["params"])
                         .node("split", "TrainTestSplit", {{"test_size", 0.2}, {"seed", 42}})
                         .wire("data", "tensor", "split", "features")
                         .wire("data", "labels", "split", "labels")
                         .g);
  const auto& idx = golden()["splits"][0]["split"];
  const torch::Tensor all = golden_tensor(ds["x"]).to(torch::kFloat32);
  const torch::Tensor x_test = tensor(r, "split", "x_test");
  ASSERT_EQ(x_test.size(0), 40);
  EXPECT_EQ(tensor(r, "split", "x_train").size(0), 160);
  for (int64_t i = 0; i < 40; ++i) {
    const int64_t row = idx[1][i];
    EXPECT_TRUE(torch::allclose(x_test[i], all[row], 1e-6, 1e-6));
    EXPECT_EQ(list(r, "split", "y_test")[i], std::to_string(ds["y"][row].get<int64_t>()));
  }
}

TEST(ClassicNodes, StratifiedSplitMatchesScikitLearnsRows) {
  for (const auto& c : golden()["stratified"]) {
    const auto labels = c["labels"].get<std::vector<std::string>>();
    const auto s = train::classic::stratified_split(labels, c["test_size"], c["seed"]);
    EXPECT_EQ(json(s.train), c["split"][0]);
    EXPECT_EQ(json(s.test), c["split"][1]);
  }
}

/// SyntheticDataset -> TrainTestSplit(0.2, 42) -> `type` with `params`; the classifier's id is "model".
GraphBuilder classifier_graph(const json& data_params, const std::string& type, const json& params) {
  GraphBuilder b;
  b.source("data", "SyntheticDataset", data_params)
      .node("split", "TrainTestSplit", {{"test_size", 0.2}, {"seed", 42}})
      .wire("data", "tensor", "split", "features")
      .wire("data", "labels", "split", "labels")
      .node("model", type, params)
      .wire("split", "x_train", "model", "x_train")
      .wire("split", "y_train", "model", "y_train")
      .wire("split", "x_test", "model", "x_query")
      .node("acc", "Accuracy")
      .wire("model", "predictions", "acc", "predictions")
      .wire("split", "y_test", "acc", "labels");
  return b;
}

TEST(ClassicNodes, KnnMatchesBruteForceVotes) {
  for (const auto& c : golden()["knn"]) {
    SCOPED_TRACE(c["dataset"].get<std::string>());
    auto r = run_graph(
        classifier_graph(golden()["datasets"][c["dataset"].get<std::string>()]["params"], "KNN",
                         {{"n_neighbors", c["n_neighbors"]}, {"weights", c["weights"]}, {"metric", c["metric"]}})
            .g);
    const torch::Tensor want = golden_tensor(c["probabilities"]).to(torch::kFloat32);
    EXPECT_TRUE(torch::allclose(tensor(r, "model", "probabilities"), want, 1e-6, 1e-6));
    EXPECT_EQ(list(r, "model", "predictions"), json(strings_of(c["predictions"])));
  }
}

TEST(ClassicNodes, KnnGivesTheSameVotesWhenItSplitsTheQueriesIntoChunks) {
  // 5000 x 5000 distances are more than one chunk of 2^24: the chunked votes
  // must equal one full distance matrix's top-k.
  auto gen = at::detail::createCPUGenerator(3);
  const torch::Tensor x = torch::rand({5000, 2}, gen, torch::kFloat64);
  const torch::Tensor y = (x.select(1, 0) + x.select(1, 1) > 1).to(torch::kInt64);
  const torch::Tensor q = torch::rand({5000, 2}, gen, torch::kFloat64);
  const auto p = train::classic::knn_predict(x, y, 2, q, {});
  const torch::Tensor nearest = std::get<1>(torch::cdist(q, x).topk(5, 1, false));
  const torch::Tensor votes = y.index_select(0, nearest.reshape(-1)).reshape({5000, 5}).sum(1);
  EXPECT_TRUE(torch::equal(p.classes, (votes >= 3).to(torch::kInt64)));
  EXPECT_TRUE(torch::allclose(p.probabilities.select(1, 1), votes.to(torch::kFloat64) / 5));
}

TEST(ClassicNodes, LogisticRegressionMatchesNewtonsOptimum) {
  for (const auto& c : golden()["logistic"]) {
    SCOPED_TRACE(c["dataset"].get<std::string>());
    auto r = run_graph(classifier_graph(golden()["datasets"][c["dataset"].get<std::string>()]["params"],
                                        "LogisticRegression", {{"C", c["C"]}})
                           .g);
    const torch::Tensor coef = tensor(r, "model", "coef").to(torch::kFloat64);
    const torch::Tensor want = golden_tensor(c["coef"]);
    // L-BFGS stops near the optimum Newton's method finds: 1e-4 of the coefficients' size.
    EXPECT_LT((coef - want).abs().max().item<double>(), 1e-4 * std::max(1.0, want.abs().max().item<double>()));
    const torch::Tensor p = tensor(r, "model", "probabilities").to(torch::kFloat64);
    EXPECT_LT((p - golden_tensor(c["probabilities"])).abs().max().item<double>(), 1e-4);
  }
}

TEST(ClassicNodes, LogisticL1SatisfiesItsOptimalityConditions) {
  // Two moons and a pure-noise third column; with an L1 penalty the optimum
  // has, per weight, gradient = -reg * sign(w) where w != 0 and
  // |gradient| <= reg where w == 0 (reg = 1 / (C n) on the mean loss).
  const auto p = train::classic::make_moons(200, 0.2, 3);
  train::classic::NumpyRandom rng(11);
  torch::Tensor noise = torch::empty({200, 1}, torch::kFloat64);
  for (int64_t i = 0; i < 200; ++i) noise[i][0] = rng.gauss();
  const torch::Tensor x = torch::cat({p.x, noise}, 1);
  const torch::Tensor y = torch::tensor(p.y, torch::kInt64);
  train::classic::LogisticOptions o;
  o.penalty = "l1";
  o.C = 0.05;
  o.max_iter = 5000;
  const auto m = train::classic::fit_logistic(x, y, 2, o);
  const torch::Tensor w = m.coef.clone().requires_grad_(true), b = m.intercept.clone().requires_grad_(true);
  torch::binary_cross_entropy_with_logits((x.matmul(w.t()) + b).squeeze(1), y.to(torch::kFloat64)).backward();
  const double reg = 1.0 / (o.C * 200);
  EXPECT_NEAR(b.grad().item<double>(), 0.0, 1e-5);
  for (int64_t j = 0; j < 3; ++j) {
    const double wj = m.coef[0][j].item<double>(), gj = w.grad()[0][j].item<double>();
    if (wj != 0.0)
      EXPECT_NEAR(gj + reg * (wj > 0 ? 1 : -1), 0.0, 1e-5) << "feature " << j;
    else
      EXPECT_LE(std::abs(gj), reg + 1e-9) << "feature " << j;
  }
  EXPECT_EQ(m.coef[0][2].item<double>(), 0.0) << "the noise column is worth less than its penalty";
}

TEST(ClassicNodes, DecisionTreeMatchesAPlainCart) {
  for (const auto& c : golden()["tree"]) {
    SCOPED_TRACE(c["dataset"].get<std::string>());
    auto r = run_graph(classifier_graph(golden()["datasets"][c["dataset"].get<std::string>()]["params"],
                                        "DecisionTreeClassifier", {{"max_depth", c["max_depth"]}})
                           .g);
    EXPECT_EQ(list(r, "model", "predictions"), json(strings_of(c["predictions"])));
    EXPECT_NEAR(tensor(r, "model", "feature_importances").sum().item<float>(), 1.0f, 1e-6);
  }
}

TEST(ClassicNodes, DecisionTreeOnAHandSetGivesItsOneRule) {
  // Six points: x0 <= 3 is class a, above is b; x1 carries nothing. One split
  // at x0 = 3.5 (halfway between 3 and 4), gini 0.5 -> 0, importance all on x0.
  const torch::Tensor x = torch::tensor({1.f, 5.f, 2.f, 1.f, 3.f, 5.f, 4.f, 1.f, 5.f, 5.f, 6.f, 1.f}).reshape({6, 2});
  const torch::Tensor y = torch::tensor({0, 0, 0, 1, 1, 1}, torch::kInt64);
  const auto t = train::classic::fit_tree(x, y, 2, {});
  ASSERT_EQ(t.nodes.size(), 3u);
  EXPECT_EQ(t.nodes[0].feature, 0);
  EXPECT_DOUBLE_EQ(t.nodes[0].threshold, 3.5);
  EXPECT_EQ(t.to_text({"a", "b"}),
            "|--- feature_0 <= 3.50\n|   |--- class: a\n|--- feature_0 >  3.50\n|   |--- class: b\n");
  EXPECT_TRUE(torch::equal(t.feature_importances, torch::tensor({1.0, 0.0}, torch::kFloat64)));
  EXPECT_TRUE(torch::equal(t.predict(torch::tensor({3.4f, 0.f, 3.6f, 0.f}).reshape({2, 2})),
                           torch::tensor({0, 1}, torch::kInt64)));
}

TEST(ClassicNodes, SvmOnAHandSetFindsTheMarginPoints) {
  // Points on a line: class 0 at -3, -2, -1; class 1 at 1, 2, 3. A linear SVM's
  // boundary is x = 0 and its support vectors are the two closest, -1 and 1.
  const torch::Tensor x =
      torch::tensor({-3.f, 0.f, -2.f, 0.f, -1.f, 0.f, 1.f, 0.f, 2.f, 0.f, 3.f, 0.f}).reshape({6, 2});
  const torch::Tensor y = torch::tensor({0, 0, 0, 1, 1, 1}, torch::kInt64);
  train::classic::SvmOptions o;
  o.kernel = "linear";
  o.C = 10;
  const auto r =
      train::classic::fit_predict_svm(x, y, torch::tensor({-0.1f, 5.f, 0.1f, -5.f, -4.f, 0.f}).reshape({3, 2}), o);
  EXPECT_TRUE(torch::equal(r.predictions, torch::tensor({0, 1, 0}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(r.support_vectors, torch::tensor({-1.f, 0.f, 1.f, 0.f}).reshape({2, 2})));
}

TEST(ClassicNodes, LinearModelsFailOnCirclesWhereKernelsAndMlpsSucceed) {
  const json circles = {{"kind", "circles"}, {"n_samples", 300}, {"noise", 0.05}, {"factor", 0.5}, {"seed", 0}};
  auto accuracy = [&](const std::string& type, const json& params) {
    auto r = run_graph(classifier_graph(circles, type, params).g);
    return std::get<double>(r.outputs.at("acc").at("accuracy"));
  };
  EXPECT_LT(accuracy("LogisticRegression", json::object()), 0.75) << "no line separates two rings";
  EXPECT_GT(accuracy("SVMClassifier", json::object()), 0.95);
  EXPECT_GT(accuracy("KNN", json::object()), 0.95);
  EXPECT_GT(accuracy("MLPClassifier", json::object()), 0.95);
}

TEST(ClassicNodes, MlpRepeatsForTheSameSeed) {
  const json moons = golden()["datasets"]["moons"]["params"];
  auto run = [&](int seed) {
    auto r = run_graph(classifier_graph(moons, "MLPClassifier", {{"seed", seed}, {"max_iter", 50}}).g);
    return std::make_pair(tensor(r, "model", "probabilities").clone(),
                          std::get<double>(r.outputs.at("model").at("train_loss")));
  };
  const auto a = run(1), b = run(1), c = run(2);
  EXPECT_TRUE(torch::equal(a.first, b.first));
  EXPECT_EQ(a.second, b.second);
  EXPECT_FALSE(torch::equal(a.first, c.first));
  EXPECT_TRUE(std::isfinite(a.second));
  EXPECT_LT(a.second, 0.69) << "below the loss of guessing";
}

TEST(ClassicNodes, AccuracyComparesLabelsAsText) {
  auto r = run_graph(GraphBuilder()
                         .source("data", "SyntheticDataset", {{"kind", "blobs"}, {"n_samples", 10}})
                         .node("acc", "Accuracy")
                         .wire("data", "labels", "acc", "predictions")
                         .wire("data", "labels", "acc", "labels")
                         .g);
  EXPECT_EQ(std::get<double>(r.outputs["acc"]["accuracy"]), 1.0);
  EXPECT_EQ(std::get<double>(r.outputs["acc"]["correct"]), 10.0);
  EXPECT_EQ(std::get<double>(r.outputs["acc"]["total"]), 10.0);
}

TEST(ClassicNodes, NormalizeFitsOnTrainAndAppliesTheStatsToTest) {
  // Column 0: 1, 3 (mean 2, std 1); column 1 constant (std 0 -> divided by 1).
  GraphBuilder b;
  b.source("data", "SyntheticDataset", {{"kind", "moons"}, {"n_samples", 10}})
      .node("pick", "ColumnSelector", {{"indices", "0,1"}})
      .wire("data", "tensor", "pick", "tensor")
      .node("fit", "Normalize")
      .wire("pick", "tensor", "fit", "tensor")
      .node("apply", "Normalize", {{"mode", "minmax"}})
      .wire("data", "tensor", "apply", "tensor")
      .wire("fit", "stats", "apply", "stats");
  auto r = run_graph(b.g);
  const torch::Tensor x = tensor(r, "data", "tensor");
  const torch::Tensor mean = x.mean(0), std = x.std(0, false);
  EXPECT_TRUE(torch::allclose(tensor(r, "fit", "tensor"), (x - mean) / std, 1e-5, 1e-5));
  // The second node follows the wired zscore stats, not its own minmax mode.
  EXPECT_TRUE(torch::allclose(tensor(r, "apply", "tensor"), tensor(r, "fit", "tensor"), 1e-6, 1e-6));
  const json stats = std::get<json>(r.outputs["fit"]["stats"]);
  EXPECT_NEAR(stats["mean"][0].get<double>(), mean[0].item<double>(), 1e-6);
  EXPECT_NEAR(stats["std"][1].get<double>(), std[1].item<double>(), 1e-6);
}

TEST(ClassicNodes, CsvReaderSplitsFeaturesFromLabels) {
  codefy::testing::TempDir dir("csv_reader");
  std::ofstream(dir.path() / "t.csv") << "a,name,b,kind\n1.5,x,2,cat\n-3,y,4e1,dog\n";
  auto r = run_graph(GraphBuilder().source("csv", "CSVReader", {{"path", "t.csv"}, {"target_column", "kind"}}).g,
                     dir.path());
  EXPECT_TRUE(torch::equal(tensor(r, "csv", "tensor"), torch::tensor({1.5f, 2.f, -3.f, 40.f}).reshape({2, 2})));
  EXPECT_EQ(list(r, "csv", "labels"), json({"cat", "dog"}));
  EXPECT_EQ(list(r, "csv", "columns"), json({"a", "b"}));
  // By name through ColumnSelector.
  auto s = run_graph(GraphBuilder()
                         .source("csv", "CSVReader", {{"path", "t.csv"}, {"target_column", "kind"}})
                         .node("pick", "ColumnSelector", {{"names", "b"}})
                         .wire("csv", "tensor", "pick", "tensor")
                         .wire("csv", "columns", "pick", "columns")
                         .g,
                     dir.path());
  EXPECT_TRUE(torch::equal(tensor(s, "pick", "tensor"), torch::tensor({2.f, 40.f}).reshape({2, 1})));
}

TEST(ClassicNodes, ImageReaderReadsPngAsChannelsFirst) {
  codefy::testing::TempDir dir("image_reader");
  write_png(dir.path() / "p.png");
  auto read = [&](const std::string& mode) {
    auto r = run_graph(GraphBuilder().source("img", "ImageReader", {{"path", "p.png"}, {"mode", mode}}).g, dir.path());
    return tensor(r, "img", "image");
  };
  EXPECT_TRUE(torch::equal(read("RGB"), torch::tensor({1.f, 0.f, 0.f, 0.f, 0.f, 1.f}).reshape({3, 1, 2})));
  EXPECT_TRUE(torch::allclose(read("RGBA")[3], torch::tensor({1.f, 128.f / 255.f}).reshape({1, 2})));
  // PIL's L: (19595 R + 38470 G + 7471 B + 2^15) >> 16 -> 76 for red, 29 for blue.
  EXPECT_TRUE(torch::allclose(read("L"), torch::tensor({76.f / 255.f, 29.f / 255.f}).reshape({1, 1, 2})));
}

// Issue #34 item 5: a PNG's header is held against the pixel cap before any
// pixel buffer exists (a 20000 x 20000 header is 1.6 GB once decoded), and
// the decode buffer is a tensor the CPU memory budget counts.
TEST(ClassicNodes, ImageReaderRefusesAHeaderPastThePixelCapBeforeDecoding) {
  codefy::testing::TempDir dir("image_bomb");
  // Signature, then IHDR (20000 x 20000, 8-bit RGBA) with its CRC, then IEND: no pixels at all.
  std::string ihdr = "IHDR";
  for (uint32_t v : {20000u, 20000u})
    for (int shift = 24; shift >= 0; shift -= 8) ihdr += static_cast<char>((v >> shift) & 0xff);
  ihdr += std::string("\x08\x06\x00\x00\x00", 5);
  const auto be32 = [](uint32_t v) {
    std::string b;
    for (int shift = 24; shift >= 0; shift -= 8) b += static_cast<char>((v >> shift) & 0xff);
    return b;
  };
  const auto chunk = [&be32](const std::string& type_and_data) {
    const auto crc = crc32(0, reinterpret_cast<const Bytef*>(type_and_data.data()), type_and_data.size());
    return be32(static_cast<uint32_t>(type_and_data.size() - 4)) + type_and_data + be32(static_cast<uint32_t>(crc));
  };
  // A few bytes of deflate data stand for the pixels (a real bomb's are 1 MB of them).
  std::string idat(64, '\0');
  uLongf idat_size = idat.size();
  const std::string row(16, '\0');
  ASSERT_EQ(compress(reinterpret_cast<Bytef*>(idat.data()), &idat_size, reinterpret_cast<const Bytef*>(row.data()),
                     row.size()),
            Z_OK);
  idat.resize(idat_size);
  codefy::testing::write_file(dir.path() / "bomb.png",
                              std::string("\x89PNG\r\n\x1a\n", 8) + chunk(ihdr) + chunk("IDAT" + idat) + chunk("IEND"));
  const NodeError e = run_error(GraphBuilder().source("img", "ImageReader", {{"path", "bomb.png"}}).g, dir.path());
  EXPECT_EQ(e.node_id(), "img");
  EXPECT_EQ(e.field(), "param \"path\"");
  EXPECT_NE(e.detail().find("20000 x 20000 = 400,000,000 pixels; at most 25,000,000 are decoded"), std::string::npos)
      << e.what();
}

TEST(ClassicNodes, ImageReadersDecodeBufferCountsAgainstTheCpuBudget) {
  ASSERT_TRUE(device::install_counting_allocator());
  codefy::testing::TempDir dir("image_budget");
  // 2000 x 2000 RGBA: a 16 MB decode buffer, 48 MB as float RGB.
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = 2000;
  image.height = 2000;
  image.format = PNG_FORMAT_RGBA;
  const std::vector<uint8_t> pixels(2000 * 2000 * 4, 200);
  ASSERT_TRUE(png_image_write_to_file(&image, (dir.path() / "big.png").c_str(), 0, pixels.data(), 0, nullptr));
  struct BudgetReset {
    ~BudgetReset() { device::set_cpu_budget(0); }
  } reset;
  device::set_cpu_budget(device::cpu_memory().live_bytes + (8 << 20));
  const auto g = GraphBuilder().source("img", "ImageReader", {{"path", "big.png"}}).g;
  try {
    run_graph(g, dir.path());
    ADD_FAILURE() << "a 16 MB decode fitted an 8 MB budget";
  } catch (const NodeOOMError& oom) {
    EXPECT_EQ(oom.node_id(), "img");
    EXPECT_NE(std::string(oom.what()).find("tried to allocate 15.3 MiB"), std::string::npos) << oom.what();
  }
  device::set_cpu_budget(0);
  auto r = run_graph(g, dir.path());
  EXPECT_EQ(tensor(r, "img", "image").sizes(), (std::vector<int64_t>{3, 2000, 2000}));
}

TEST(ClassicNodes, GraphInputParsesItsDefaultAndGraphOutputPassesItOn) {
  auto r = run_graph(GraphBuilder()
                         .source("in", "GraphInput", {{"type", "integer"}, {"default", " 7 "}})
                         .node("out", "GraphOutput", {{"name", "answer"}})
                         .wire("in", "value", "out", "value")
                         .g);
  EXPECT_EQ(std::get<double>(r.outputs["in"]["value"]), 7.0);
  EXPECT_EQ(std::get<double>(r.outputs["out"]["value"]), 7.0);
  const NodeError e = run_error(GraphBuilder().source("in", "GraphInput", {{"type", "number"}, {"default", "x"}}).g);
  EXPECT_EQ(e.field(), "param \"default\"");
  EXPECT_NE(e.detail().find("does not parse as number"), std::string::npos) << e.what();
}

TEST(ClassicNodes, GraphInputDecodesAnInjectedBase64Png) {
  codefy::testing::TempDir dir("graph_input_png");
  write_png(dir.path() / "p.png");
  std::ifstream in(dir.path() / "p.png", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto r = run_graph(GraphBuilder()
                         .source("in", "GraphInput",
                                 {{"type", "image"}, {"value", "data:image/png;base64," + util::base64_encode(bytes)}})
                         .g);
  EXPECT_TRUE(torch::equal(std::get<torch::Tensor>(r.outputs["in"]["value"]),
                           torch::tensor({1.f, 0.f, 0.f, 0.f, 0.f, 1.f}).reshape({3, 1, 2})));
}

TEST(ClassicNodes, BadInputNamesTheNodeThePortAndBothShapes) {
  // Labels of another length than the features.
  GraphBuilder b;
  b.source("data", "SyntheticDataset", {{"kind", "moons"}, {"n_samples", 20}})
      .source("other", "SyntheticDataset", {{"kind", "moons"}, {"n_samples", 30}})
      .node("knn", "KNN")
      .wire("data", "tensor", "knn", "x_train")
      .wire("other", "labels", "knn", "y_train")
      .wire("data", "tensor", "knn", "x_query");
  NodeError e = run_error(b.g);
  EXPECT_EQ(e.node_id(), "knn");
  EXPECT_EQ(e.node_type(), "KNN");
  EXPECT_EQ(e.field(), "input \"y_train\"");
  EXPECT_EQ(e.detail(), "has 30 labels but x_train has 20 rows (shape [20, 2])");

  // Queries with another number of features.
  GraphBuilder q;
  q.source("data", "SyntheticDataset", {{"kind", "moons"}, {"n_samples", 20}})
      .node("one", "ColumnSelector", {{"indices", "0"}})
      .wire("data", "tensor", "one", "tensor")
      .node("svm", "SVMClassifier")
      .wire("data", "tensor", "svm", "x_train")
      .wire("data", "labels", "svm", "y_train")
      .wire("one", "tensor", "svm", "x_query");
  e = run_error(q.g);
  EXPECT_EQ(e.field(), "input \"x_query\"");
  EXPECT_EQ(e.detail(), "has 1 features (shape [20, 1]) but x_train has 2 (shape [20, 2])");

  // A wrong rank: an image (C, H, W) as the queries.
  codefy::testing::TempDir dir("bad_rank");
  write_png(dir.path() / "p.png");
  GraphBuilder w;
  w.source("data", "SyntheticDataset", {{"kind", "moons"}, {"n_samples", 20}})
      .source("img", "ImageReader", {{"path", "p.png"}})
      .node("tree", "DecisionTreeClassifier")
      .wire("data", "tensor", "tree", "x_train")
      .wire("data", "labels", "tree", "y_train")
      .wire("img", "tensor", "tree", "x_query");
  try {
    run_graph(w.g, dir.path());
    ADD_FAILURE() << "the graph ran";
  } catch (const NodeError& err) {
    EXPECT_EQ(err.node_id(), "tree");
    EXPECT_EQ(err.field(), "input \"x_query\"");
    EXPECT_EQ(err.detail(), "expected a 2-D tensor [samples, features], got shape [3, 1, 2]");
  }

  // TrainTestSplit with mismatched lengths.
  GraphBuilder s;
  s.source("data", "SyntheticDataset", {{"kind", "moons"}, {"n_samples", 20}})
      .source("other", "SyntheticDataset", {{"kind", "moons"}, {"n_samples", 30}})
      .node("split", "TrainTestSplit")
      .wire("data", "tensor", "split", "features")
      .wire("other", "labels", "split", "labels");
  e = run_error(s.g);
  EXPECT_EQ(e.field(), "input \"labels\"");
  EXPECT_EQ(e.detail(), "has 30 labels but features has 20 rows (shape [20, 2])");
}

TEST(ClassicNodes, NumbersTypedAsTextAreReadOrRefusedByName) {
  // The SVM's gamma: "scale", "auto" or a positive number, spaces and other text refused.
  const torch::Tensor x = torch::tensor({-2.f, 0.f, -1.f, 0.f, 1.f, 0.f, 2.f, 0.f}).reshape({4, 2});
  const torch::Tensor y = torch::tensor({0, 0, 1, 1}, torch::kInt64);
  train::classic::SvmOptions o;
  o.gamma = "0.5";
  EXPECT_TRUE(torch::equal(train::classic::fit_predict_svm(x, y, x, o).predictions, y));
  for (const char* bad : {"0.5x", " 0.5", "-1", "0", "fast", ""}) {
    o.gamma = bad;
    EXPECT_THROW(train::classic::fit_predict_svm(x, y, x, o), std::invalid_argument) << bad;
  }
  // The Optimizer's betas: a comma-separated list, each item a number.
  const json layers = {{"version", 2},
                       {"nodes",
                        {{{"id", "in"}, {"type", "Input"}, {"ports", {{{"id", "p"}, {"name", "x"}}}}},
                         {{"id", "l"}, {"type", "Linear"}, {"params", {{"in_features", 2}, {"out_features", 2}}}},
                         {{"id", "out"}, {"type", "Output"}, {"ports", {{{"id", "q"}, {"name", "y"}}}}}}},
                       {"edges",
                        {{{"source", "in"}, {"sourceHandle", "p"}, {"target", "l"}},
                         {{"source", "l"}, {"target", "out"}, {"targetHandle", "q"}}}}};
  const NodeError e = run_error(GraphBuilder()
                                    .source("m", "SequentialModel", {{"layers", layers.dump()}})
                                    .node("opt", "Optimizer", {{"type", "Adam"}, {"betas", "0.9, 0.99x"}})
                                    .wire("m", "model", "opt", "model")
                                    .g);
  EXPECT_EQ(e.node_id(), "opt");
  EXPECT_EQ(e.field(), "param \"betas\"");
  EXPECT_NE(e.detail().find("\"0.99x\" is not a number"), std::string::npos) << e.what();
}

TEST(ClassicNodes, ExamplesRun) {
  const fs::path root = fs::path(CODEFY_SOURCE_DIR) / "examples";
  {
    auto r = run_graph(codefy::testing::read_json_file(root / "iris-classifier/graph.json"), root / "iris-classifier");
    EXPECT_GT(std::get<double>(r.outputs.at("accuracy").at("accuracy")), 0.85);
  }
  {
    auto r =
        run_graph(codefy::testing::read_json_file(root / "moons-vs-circles/graph.json"), root / "moons-vs-circles");
    EXPECT_LT(std::get<double>(r.outputs.at("circles_logistic_acc").at("accuracy")), 0.75);
    EXPECT_GT(std::get<double>(r.outputs.at("circles_svm_acc").at("accuracy")), 0.95);
    EXPECT_GT(std::get<double>(r.outputs.at("moons_logistic_acc").at("accuracy")), 0.8);
    EXPECT_GT(std::get<double>(r.outputs.at("moons_knn_acc").at("accuracy")), 0.95);
  }
}

}  // namespace
}  // namespace codefy
