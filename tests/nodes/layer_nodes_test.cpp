// The layer nodes (src/nodes/layer_nodes_vision.cpp, layer_nodes_sequence.cpp): outputs against PyTorch's
// (tests/golden/layers.json, written by scripts/golden/make_layer_golden.py),
// weights kept in the node state store, wrong inputs refused with both shapes,
// the palette, and the example graphs built from them.
#include "../common/test_support.h"
#include "engine/executor.h"

#include <torch/torch.h>

#include <set>

namespace codefy {
namespace {

using codefy::testing::read_golden;
using codefy::testing::read_json;
using codefy::testing::source_dir;
using json = nlohmann::json;

/// The golden file, read once.
const json& golden() {
  static const json doc = read_golden("layers.json");
  return doc;
}

const json& golden_case(const std::string& name) {
  for (const auto& c : golden()["cases"])
    if (c["name"] == name) return c;
  throw std::runtime_error("no golden case " + name);
}

torch::Tensor tensor_from(const json& j) {
  const auto values = j["values"].get<std::vector<double>>();
  const std::string dtype = j["dtype"];
  const auto type = dtype == "int64" ? torch::kLong : dtype == "float64" ? torch::kDouble : torch::kFloat32;
  return torch::tensor(values, torch::kDouble).to(type).reshape(j["shape"].get<std::vector<int64_t>>());
}

/// Whether `actual` is PyTorch's `expected`: same shape, integers equal,
/// floats within 1e-5 relative (1e-6 absolute near zero).
::testing::AssertionResult same_as_pytorch(const torch::Tensor& actual, const json& expected, const std::string& what) {
  const torch::Tensor e = tensor_from(expected);
  if (actual.sizes() != e.sizes())
    return ::testing::AssertionFailure() << what << ": shape " << actual.sizes() << ", PyTorch " << e.sizes();
  if (actual.is_floating_point() != e.is_floating_point())
    return ::testing::AssertionFailure() << what << ": dtype " << actual.dtype() << ", PyTorch " << e.dtype();
  const torch::Tensor a = actual.to(torch::kDouble), b = e.to(torch::kDouble);
  const torch::Tensor excess = (a - b).abs() - torch::clamp_min(1e-5 * b.abs(), 1e-6);
  if (excess.max().item<double>() > 0) {
    const int64_t i = excess.flatten().argmax().item<int64_t>();
    return ::testing::AssertionFailure() << what << ": element " << i << " is " << a.flatten()[i].item<double>()
                                         << ", PyTorch " << b.flatten()[i].item<double>();
  }
  return ::testing::AssertionSuccess();
}

/// The built-in nodes plus `Literal`, whose `tensor` output is `tensors[name]`:
/// how a test feeds a node the exact inputs PyTorch had.
NodeRegistry with_literals(std::shared_ptr<std::map<std::string, torch::Tensor>> tensors) {
  NodeRegistry r = nodes::builtin();
  graph::NodeDef d{"Literal",
                   "Test",
                   "A tensor given by the test",
                   {},
                   {def::out("tensor", graph::DataType::kTensor, "The tensor")},
                   {def::text("name", "", "Which tensor")}};
  d.cacheable = false;
  r.add(std::move(d), [tensors](NodeContext& ctx) {
    return ValueMap{{"tensor", tensors->at(ctx.param_string("name"))}};
  });
  return r;
}

/// A graph of one node of `type` (id `id`, `params`), each input port fed by a Literal named after it.
json one_node_graph(const std::string& type, const std::string& id, const json& params,
                    const std::vector<std::string>& ports) {
  json g = {
      {"name", "golden"},
      {"nodes", {{{"id", "start"}, {"type", "Start"}}, {{"id", id}, {"type", type}, {"data", {{"params", params}}}}}},
      {"edges", {{{"source", "start"}, {"sourceHandle", "trigger"}, {"target", id}, {"type", "trigger"}}}}};
  for (const auto& port : ports) {
    g["nodes"].push_back({{"id", "in_" + port}, {"type", "Literal"}, {"data", {{"params", {{"name", port}}}}}});
    g["edges"].push_back(
        {{"source", "in_" + port}, {"sourceHandle", "tensor"}, {"target", id}, {"targetHandle", port}});
  }
  return g;
}

/// Runs one golden case's node through the executor, with `store` as the node state store.
ValueMap run_case(const json& c, NodeStateStore* store) {
  auto tensors = std::make_shared<std::map<std::string, torch::Tensor>>();
  std::vector<std::string> ports;
  for (const auto& [port, t] : c["inputs"].items()) {
    (*tensors)[port] = tensor_from(t);
    ports.push_back(port);
  }
  const NodeRegistry registry = with_literals(tensors);
  graph::Graph g = graph::graph_from_json(one_node_graph(c["node"], c["node_id"], c["params"], ports), "golden");
  RunSettings s;
  s.seed = c["run_seed"];
  s.state_store = store;
  s.state_scope = "golden";
  auto result = Executor(registry).run(prepare(g, registry), s);
  return result.outputs.at(c["node_id"]);
}

/// The module a layer node keeps in `store`, or nullptr.
train::ModelPtr kept_module(NodeStateStore& store, const std::string& scope, const std::string& id) {
  const auto kept = store.get(node_state_key(scope, id));
  if (!kept) return nullptr;
  const auto it = kept->outputs.find("module");
  return it == kept->outputs.end() ? nullptr : std::get<train::ModelPtr>(it->second);
}

/// Copies PyTorch's state (by state_dict name) into `m`, whose names carry
/// one more prefix ("layer."); every name on each side must find its match.
void load_state(torch::nn::Module& m, const json& state) {
  std::set<std::string> unused;
  for (const auto& [name, _] : state.items()) unused.insert(name);
  torch::NoGradGuard no_grad;
  auto load = [&](const std::string& full, torch::Tensor& t) {
    if (!t.defined()) return;  // a slot LibTorch registers empty (MultiheadAttention's q_proj_weight)
    const std::string name = full.substr(full.find('.') + 1);
    ASSERT_TRUE(state.contains(name)) << "PyTorch's state has no " << name;
    const torch::Tensor value = tensor_from(state[name]);
    ASSERT_EQ(t.sizes(), value.sizes()) << name;
    t.copy_(value);
    unused.erase(name);
  };
  for (auto& p : m.named_parameters()) load(p.key(), p.value());
  for (auto& b : m.named_buffers()) load(b.key(), b.value());
  EXPECT_TRUE(unused.empty()) << "not in Codefy's module: " << *unused.begin();
}

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const auto& c : golden()["cases"]) names.push_back(c["name"]);
  return names;
}

class LayerGolden : public ::testing::TestWithParam<std::string> {};

// R-MEM-3: the weights a run builds are the ones the next run uses.
TEST_P(LayerGolden, OutputsMatchPyTorch) {
  const json& c = golden_case(GetParam());
  NodeStateStore store({0, 0});
  const ValueMap first = run_case(c, &store);
  for (const auto& [port, expected] : c["outputs"].items()) {
    ASSERT_TRUE(first.count(port)) << "no output " << port;
    if (c["seeded"] || c["state"].empty()) {  // same seed (or no weights): PyTorch's numbers straight away
      EXPECT_TRUE(same_as_pytorch(std::get<torch::Tensor>(first.at(port)), expected, port + " (first run)"));
    }
  }
  if (c["state"].empty()) return;
  const train::ModelPtr module = kept_module(store, "golden", c["node_id"]);
  ASSERT_TRUE(module) << "the node kept no module";
  load_state(*module, c["state"]);
  const ValueMap second = run_case(c, &store);
  EXPECT_EQ(kept_module(store, "golden", c["node_id"]), module) << "the second run built a new module";
  for (const auto& [port, expected] : c["outputs"].items())
    EXPECT_TRUE(same_as_pytorch(std::get<torch::Tensor>(second.at(port)), expected, port + " (PyTorch's weights)"));
}

INSTANTIATE_TEST_SUITE_P(Cases, LayerGolden, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

const std::vector<std::string> kLayerNodes = {"Linear",
                                              "Conv1d",
                                              "Conv2d",
                                              "ConvTranspose2d",
                                              "MaxPool2d",
                                              "AvgPool2d",
                                              "AdaptiveAvgPool2d",
                                              "Upsample",
                                              "Dropout",
                                              "Activation",
                                              "BatchNorm1d",
                                              "BatchNorm2d",
                                              "LayerNorm",
                                              "GroupNorm",
                                              "InstanceNorm2d",
                                              "Embedding",
                                              "PositionalEncoding",
                                              "MultiHeadAttention",
                                              "TransformerEncoder",
                                              "TransformerDecoder",
                                              "LSTM",
                                              "GRU",
                                              "RNNCell",
                                              "MoELayer",
                                              "TimestepEmbedding",
                                              "GaussianNoise"};

TEST(LayerNodes, EveryLayerNodeHasAGoldenCase) {
  std::set<std::string> covered;
  for (const auto& c : golden()["cases"]) covered.insert(c["node"]);
  for (const auto& type : kLayerNodes) EXPECT_TRUE(covered.count(type)) << type;
  std::set<std::string> functions;
  for (const auto& c : golden()["cases"])
    if (c["node"] == "Activation") functions.insert(c["params"]["function"]);
  EXPECT_EQ(functions.size(), nodes::builtin().find("Activation")->param("function")->options.size());
}

TEST(LayerNodes, DefinitionsFollowCodefyUI) {
  const auto& r = nodes::builtin();
  for (const auto& type : kLayerNodes) EXPECT_TRUE(r.find(type)) << type;
  const graph::NodeDef* conv = r.find("Conv2d");
  EXPECT_EQ(conv->category, "CNN");
  ASSERT_EQ(conv->params.size(), 5u);
  EXPECT_EQ(conv->params[1].name, "out_channels");
  EXPECT_EQ(conv->params[1].default_value, 32);
  EXPECT_EQ(r.find("Linear")->category, "Utility");
  EXPECT_EQ(r.find("LayerNorm")->params[0].default_value, "512");
  EXPECT_EQ(r.find("MultiHeadAttention")->outputs[1].name, "weights");
  EXPECT_TRUE(r.find("RNNCell")->input("hidden")->optional);
  EXPECT_EQ(r.find("MoELayer")->params[0].min_value, 1.0);
  EXPECT_EQ(r.find("Upsample")->params[0].options, (std::vector<std::string>{"nearest", "bilinear", "area"}));
  EXPECT_EQ(r.find("PositionalEncoding")->category, "LLM");
  EXPECT_EQ(r.find("GaussianNoise")->category, "Diffusion");
  EXPECT_EQ(r.find("LSTM")->params[3].default_value, true);
}

TEST(LayerNodes, CodefyNodesListsThem) {
  const auto c = codefy::testing::run_codefy("nodes --json");
  ASSERT_EQ(c.exit_code, 0) << c.output;
  const json listed = json::parse(c.output);
  std::set<std::string> names;
  for (const auto& n : listed) names.insert(n["node_name"]);
  for (const auto& type : kLayerNodes) EXPECT_TRUE(names.count(type)) << type;
}

// ---------------------------------------------------------------------------
// The node state store.

/// Start -> GaussianNoise (noise seed `noise_seed`) -> Linear(4 -> out).
json noise_into_linear(int noise_seed, int out_features) {
  return {
      {"name", "kept"},
      {"nodes",
       {{{"id", "start"}, {"type", "Start"}},
        {{"id", "noise"}, {"type", "GaussianNoise"}, {"data", {{"params", {{"shape", "2,4"}, {"seed", noise_seed}}}}}},
        {{"id", "fc"},
         {"type", "Linear"},
         {"data", {{"params", {{"in_features", 4}, {"out_features", out_features}}}}}}}},
      {"edges",
       {{{"source", "start"}, {"sourceHandle", "trigger"}, {"target", "noise"}, {"type", "trigger"}},
        {{"source", "noise"}, {"sourceHandle", "noise"}, {"target", "fc"}, {"targetHandle", "tensor"}}}}};
}

RunResult run_kept(const json& g, NodeStateStore* store, uint64_t seed = 3) {
  RunSettings s;
  s.seed = seed;
  s.state_store = store;
  s.state_scope = "tab1";
  return codefy::testing::run_json(g, s);
}

torch::Tensor out_of(const RunResult& r, const std::string& id, const std::string& port = "tensor") {
  return std::get<torch::Tensor>(r.outputs.at(id).at(port));
}

TEST(LayerNodes, SecondRunReusesTheWeightsAndAParamEditRebuildsThem) {
  NodeStateStore store({0, 0});
  const RunResult first = run_kept(noise_into_linear(1, 3), &store);
  const train::ModelPtr kept = kept_module(store, "tab1", "fc");
  ASSERT_TRUE(kept);
  // Another input, the same module: its weights, changed in place here, are the ones used.
  {
    torch::NoGradGuard no_grad;
    for (auto& p : kept->parameters()) p.fill_(0.5);
  }
  const RunResult second = run_kept(noise_into_linear(2, 3), &store);
  EXPECT_EQ(kept_module(store, "tab1", "fc"), kept);
  const torch::Tensor x = out_of(second, "noise", "noise");
  EXPECT_TRUE(torch::allclose(out_of(second, "fc"), x.sum(1, true) * 0.5 + 0.5));
  // An edited param builds a new module of the new shape.
  const RunResult third = run_kept(noise_into_linear(2, 5), &store);
  EXPECT_NE(kept_module(store, "tab1", "fc"), kept);
  EXPECT_EQ(out_of(third, "fc").sizes(), (std::vector<int64_t>{2, 5}));
}

TEST(LayerNodes, TheSameSeedGivesTheSameNumbersWithOrWithoutAStore) {
  NodeStateStore store({0, 0});
  const torch::Tensor kept = out_of(run_kept(noise_into_linear(1, 3), &store), "fc");
  const torch::Tensor fresh = out_of(run_kept(noise_into_linear(1, 3), nullptr), "fc");
  EXPECT_TRUE(torch::equal(kept, fresh));
  const torch::Tensor other = out_of(run_kept(noise_into_linear(1, 3), nullptr, /*seed=*/4), "fc");
  EXPECT_FALSE(torch::equal(kept, other)) << "another run seed should draw other weights";
  // A new run seed is a new module, not the kept one.
  const train::ModelPtr before = kept_module(store, "tab1", "fc");
  run_kept(noise_into_linear(1, 3), &store, 4);
  EXPECT_NE(kept_module(store, "tab1", "fc"), before);
}

// ---------------------------------------------------------------------------
// Wrong inputs: refused naming the node, the port and both shapes.

/// Start -> GaussianNoise (`shape`) -> node "layer" of `type` with `params`,
/// into port `port` (MultiHeadAttention: into query, key and value).
json noise_into(const std::string& shape, const std::string& type, const json& params,
                const std::string& port = "tensor") {
  json g = {{"name", "bad"},
            {"nodes",
             {{{"id", "start"}, {"type", "Start"}},
              {{"id", "noise"}, {"type", "GaussianNoise"}, {"data", {{"params", {{"shape", shape}}}}}},
              {{"id", "layer"}, {"type", type}, {"data", {{"params", params}}}}}},
            {"edges", {{{"source", "start"}, {"sourceHandle", "trigger"}, {"target", "noise"}, {"type", "trigger"}}}}};
  const std::vector<std::string> ports =
      type == "MultiHeadAttention" ? std::vector<std::string>{"query", "key", "value"} : std::vector<std::string>{port};
  for (const auto& p : ports)
    g["edges"].push_back({{"source", "noise"}, {"sourceHandle", "noise"}, {"target", "layer"}, {"targetHandle", p}});
  return g;
}

/// The error a graph's run fails with.
NodeError failure(const json& g) {
  try {
    codefy::testing::run_json(g);
  } catch (const NodeError& e) {
    return e;
  }
  ADD_FAILURE() << "the run did not fail";
  return NodeError("", "", "", "", "");
}

struct BadInput {
  std::string name, shape, type;
  json params;
  std::string port;
  std::vector<std::string> says;  ///< what the message must contain
};

void PrintTo(const BadInput& b, std::ostream* os) { *os << b.name; }

class WrongInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(WrongInput, FailsNamingNodePortAndBothShapes) {
  const BadInput& b = GetParam();
  const NodeError e = failure(noise_into(b.shape, b.type, b.params, b.port));
  EXPECT_EQ(e.node_id(), "layer");
  EXPECT_EQ(e.node_type(), b.type);
  EXPECT_EQ(e.field(), "input \"" + b.port + "\"");
  const std::string message = e.what();
  EXPECT_NE(message.find("graph \"bad\": node layer (" + b.type + "), input \"" + b.port + "\": expected"),
            std::string::npos)
      << message;
  for (const auto& s : b.says) EXPECT_NE(message.find(s), std::string::npos) << "no \"" << s << "\" in: " << message;
}

// Conv2d with 2^31 output channels would need 8 GiB of weights (and far
// more output): the shape is refused before any of it is allocated.
INSTANTIATE_TEST_SUITE_P(
    Layers, WrongInput,
    ::testing::Values(
        BadInput{"Conv2dGivenThreeDims",
                 "3,8,8",
                 "Conv2d",
                 {{"in_channels", 3}, {"out_channels", int64_t{1} << 31}},
                 "tensor",
                 {"4-D tensor (N, C, H, W)", "in_channels = 3", "[3, 8, 8]"}},
        BadInput{"Conv2dWrongChannels",
                 "1,2,8,8",
                 "Conv2d",
                 {{"in_channels", 3}},
                 "tensor",
                 {"C = in_channels = 3", "[1, 2, 8, 8]"}},
        BadInput{"Conv2dImageSmallerThanKernel",
                 "1,1,2,2",
                 "Conv2d",
                 {{"kernel_size", 5}, {"padding", 1}},
                 "tensor",
                 {"at least 3", "[1, 1, 2, 2]"}},
        BadInput{"LinearWrongFeatures", "2,5", "Linear", {{"in_features", 4}}, "tensor", {"in_features = 4", "[2, 5]"}},
        BadInput{"BatchNorm2dWrongChannels",
                 "2,3,4,4",
                 "BatchNorm2d",
                 {{"num_features", 8}},
                 "tensor",
                 {"C = num_features = 8", "[2, 3, 4, 4]"}},
        BadInput{"BatchNormOneValuePerChannel",
                 "1,4",
                 "BatchNorm1d",
                 {{"num_features", 4}},
                 "tensor",
                 {"more than one value per channel", "[1, 4]"}},
        BadInput{"LayerNormWrongShape",
                 "2,3,5",
                 "LayerNorm",
                 {{"normalized_shape", "3,6"}},
                 "tensor",
                 {"normalized_shape [3,6]", "[2, 3, 5]"}},
        BadInput{"AttentionWrongEmbedding",
                 "4,2,6",
                 "MultiHeadAttention",
                 {{"embed_dim", 8}, {"num_heads", 2}},
                 "query",
                 {"embed_dim = 8", "[4, 2, 6]"}},
        BadInput{"LstmWrongInputSize",
                 "2,5,4",
                 "LSTM",
                 {{"input_size", 3}},
                 "tensor",
                 {"2 or 3-D tensor (batch, seq_len, input_size) or unbatched (seq_len, input_size) with input_size = 3",
                  "[2, 5, 4]"}},
        BadInput{"EmbeddingFractions",
                 "2,3",
                 "Embedding",
                 {{"num_embeddings", 10}},
                 "tensor",
                 {"integer indices", "[2, 3]"}},
        BadInput{"MaxPoolGivenTwoDims", "8,8", "MaxPool2d", json::object(), "tensor", {"4-D", "[8, 8]"}},
        BadInput{
            "RnnCellWrongInputSize", "2,4", "RNNCell", {{"input_size", 3}}, "tensor", {"input_size = 3", "[2, 4]"}},
        BadInput{"MoEWrongHidden", "1,3,5", "MoELayer", {{"hidden_dim", 6}}, "x", {"hidden_dim = 6", "[1, 3, 5]"}}),
    [](const ::testing::TestParamInfo<BadInput>& info) { return info.param.name; });

TEST(LayerNodes, EmbeddingIndexOutOfRangeNamesTheRange) {
  auto tensors = std::make_shared<std::map<std::string, torch::Tensor>>();
  (*tensors)["tensor"] = torch::tensor({1, 12, 3});
  const NodeRegistry registry = with_literals(tensors);
  graph::Graph g = graph::graph_from_json(
      one_node_graph("Embedding", "emb", {{"num_embeddings", 10}, {"embedding_dim", 4}}, {"tensor"}), "bad");
  try {
    Executor(registry).run(prepare(g, registry), RunSettings{});
    FAIL() << "index 12 of 10 embeddings was accepted";
  } catch (const NodeError& e) {
    EXPECT_EQ(e.field(), "input \"tensor\"");
    EXPECT_NE(std::string(e.what()).find("from 0 to num_embeddings - 1 = 9, got values from 1 to 12"),
              std::string::npos)
        << e.what();
  }
}

TEST(LayerNodes, ABadParamIsBlamedOnTheParam) {
  const NodeError e = failure(noise_into("1,6,4,4", "GroupNorm", {{"num_groups", 4}, {"num_channels", 6}}));
  EXPECT_EQ(e.field(), "param \"num_groups\"");
  EXPECT_NE(std::string(e.what()).find("divisible by num_groups (4)"), std::string::npos) << e.what();
  const NodeError t = failure(noise_into("3,1,6", "TransformerEncoder", {{"d_model", 6}, {"nhead", 4}}));
  EXPECT_EQ(t.field(), "param \"nhead\"");
  const NodeError s = failure(noise_into("2,8", "LayerNorm", {{"normalized_shape", "8,x"}}));
  EXPECT_EQ(s.field(), "param \"normalized_shape\"");
}

TEST(LayerNodes, CodefyUIsSimpleCnnPresetRunsOnATensor) {
  const json g = {{"name", "preset"},
                  {"nodes",
                   {{{"id", "start"}, {"type", "Start"}},
                    {{"id", "noise"}, {"type", "GaussianNoise"}, {"data", {{"params", {{"shape", "2,1,28,28"}}}}}},
                    {{"id", "cnn"}, {"type", "preset:Simple CNN Classifier"}, {"data", {{"params", json::object()}}}}}},
                  {"edges",
                   {{{"source", "start"}, {"sourceHandle", "trigger"}, {"target", "noise"}, {"type", "trigger"}},
                    {{"source", "noise"}, {"sourceHandle", "noise"}, {"target", "cnn"}, {"targetHandle", "tensor"}}}}};
  const RunResult r = codefy::testing::run_json(g);
  // Two 3x3 convolutions (padding 1) and two 2x2 poolings: 28 -> 14 -> 7, 64 channels.
  EXPECT_EQ(out_of(r, "cnn__pool2").sizes(), (std::vector<int64_t>{2, 64, 7, 7}));
  EXPECT_GE(out_of(r, "cnn__pool2").min().item<float>(), 0.0f) << "max-pooled ReLU outputs";
}

// ---------------------------------------------------------------------------
// The example graphs (with TensorCreate and Add, the tensor nodes).

TEST(LayerExamples, ResNetBlockRuns) {
  const auto r = codefy::testing::run_json(read_json(source_dir() / "examples/resnet-block/graph.json"), 1);
  const torch::Tensor x = out_of(r, "input"), y = out_of(r, "relu_out");
  EXPECT_EQ(y.sizes(), x.sizes()) << "a residual block keeps its input's shape";
  EXPECT_GE(y.min().item<float>(), 0.0f) << "it ends in a ReLU";
  // The skip connection: out = relu(bn2 + x).
  EXPECT_TRUE(torch::allclose(y, torch::relu(out_of(r, "bn2") + x)));
  EXPECT_TRUE(torch::allclose(out_of(r, "skip"), out_of(r, "bn2") + x));
}

TEST(LayerExamples, TransformerEncoderBlockRuns) {
  const auto r =
      codefy::testing::run_json(read_json(source_dir() / "examples/transformer-encoder-block/graph.json"), 1);
  const torch::Tensor y = out_of(r, "norm2");
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{6, 16}));
  // A fresh LayerNorm (weight 1, bias 0): each token's features have mean 0 and variance 1.
  EXPECT_TRUE(torch::allclose(y.mean(-1), torch::zeros({6}), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(y.var(-1, /*unbiased=*/false), torch::ones({6}), 1e-3, 1e-3));
  EXPECT_EQ(out_of(r, "attention", "weights").sizes(), (std::vector<int64_t>{6, 6}));
}

}  // namespace
}  // namespace codefy
