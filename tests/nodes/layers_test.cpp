// Tests for the SequentialModel v2 layer-spec builder.
#include "nodes/layers.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

namespace codefy::layers {
namespace {

using nlohmann::json;
using torch::Tensor;

/// CodefyUI's default `layers` value (the MNIST CNN), verbatim.
const char* const kDefaultLayers =
    R"({"version":2,"nodes":[{"id":"in","type":"Input","ports":[{"id":"p_x","name":"x"}]},)"
    R"({"id":"c1","type":"Conv2d","params":{"in_channels":1,"out_channels":32,"kernel_size":3,"padding":1}},)"
    R"({"id":"r1","type":"ReLU"},{"id":"p1","type":"MaxPool2d","params":{"kernel_size":2,"stride":2}},)"
    R"({"id":"c2","type":"Conv2d","params":{"in_channels":32,"out_channels":64,"kernel_size":3,"padding":1}},)"
    R"({"id":"r2","type":"ReLU"},{"id":"p2","type":"MaxPool2d","params":{"kernel_size":2,"stride":2}},)"
    R"({"id":"f","type":"Flatten"},{"id":"l1","type":"Linear","params":{"in_features":3136,"out_features":128}},)"
    R"({"id":"r3","type":"ReLU"},{"id":"l2","type":"Linear","params":{"in_features":128,"out_features":10}},)"
    R"({"id":"out","type":"Output","ports":[{"id":"p_y","name":"y"}]}],)"
    R"("edges":[{"id":"e1","source":"in","sourceHandle":"p_x","target":"c1"},{"id":"e2","source":"c1","target":"r1"},)"
    R"({"id":"e3","source":"r1","target":"p1"},{"id":"e4","source":"p1","target":"c2"},)"
    R"({"id":"e5","source":"c2","target":"r2"},{"id":"e6","source":"r2","target":"p2"},)"
    R"({"id":"e7","source":"p2","target":"f"},{"id":"e8","source":"f","target":"l1"},)"
    R"({"id":"e9","source":"l1","target":"r3"},{"id":"e10","source":"r3","target":"l2"},)"
    R"({"id":"e11","source":"l2","target":"out","targetHandle":"p_y"}]})";

/// Builds v2 specs: an Input "in" (port p_x) first, the Output "out" (port p_y) last.
class Spec {
 public:
  Spec() { nodes_.push_back({{"id", "in"}, {"type", "Input"}, {"ports", {{{"id", "p_x"}, {"name", "x"}}}}}); }

  Spec& layer(const std::string& id, const std::string& type, const json& params = json::object()) {
    nodes_.push_back({{"id", id}, {"type", type}, {"params", params}});
    return *this;
  }

  /// Edges from "in" and into "out" get the port handles, as the editor writes them.
  Spec& edge(const std::string& from, const std::string& to) {
    json e = {{"id", "e" + std::to_string(edges_.size() + 1)},
              {"source", from},
              {"target", to},
              {"sourceHandle", nullptr},
              {"targetHandle", nullptr}};
    if (from == "in") e["sourceHandle"] = "p_x";
    if (to == "out") e["targetHandle"] = "p_y";
    edges_.push_back(e);
    return *this;
  }

  /// A straight line in -> ids... -> out.
  Spec& chain(const std::vector<std::string>& ids) {
    std::string prev = "in";
    for (const auto& id : ids) edge(prev, id), prev = id;
    return edge(prev, "out");
  }

  json build(bool with_output = true) const {
    json nodes = nodes_;
    if (with_output) nodes.push_back({{"id", "out"}, {"type", "Output"}, {"ports", {{{"id", "p_y"}, {"name", "y"}}}}});
    return {{"version", 2}, {"nodes", nodes}, {"edges", edges_}};
  }

 private:
  json nodes_ = json::array(), edges_ = json::array();
};

json single_layer(const std::string& type, const json& params) {
  return Spec().layer("l", type, params).chain({"l"}).build();
}

/// Runs `fn`, expecting a LayerSpecError with these fields and a message containing `fragment`.
void expect_spec_error(const std::function<void()>& fn, const std::string& layer_id, const std::string& param,
                       const std::string& fragment) {
  try {
    fn();
    ADD_FAILURE() << "expected a LayerSpecError containing: " << fragment;
  } catch (const LayerSpecError& e) {
    EXPECT_EQ(e.layer_id(), layer_id) << e.what();
    EXPECT_EQ(e.param(), param) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

void expect_build_error(const json& spec, const std::string& layer_id, const std::string& param,
                        const std::string& fragment) {
  expect_spec_error([&] { build_sequential_model(spec); }, layer_id, param, fragment);
}

std::vector<std::string> parameter_names(const torch::nn::Module& m) {
  std::vector<std::string> names;
  for (const auto& p : m.named_parameters()) names.push_back(p.key());
  return names;
}

// ---------------------------------------------------------------------------
// Every layer type: Input -> layer -> Output maps a sample to PyTorch's shape.

using Check = std::function<void(const Tensor& in, const Tensor& out)>;

struct LayerCase {
  std::string name;  // Test name; also distinguishes several cases of one type.
  std::string type;
  json params;
  std::vector<int64_t> input;
  std::vector<int64_t> expected;
  bool integer_input = false;  // Embedding takes indices.
  Check check = nullptr;       // Extra value check, run in eval mode.
};

Check same_as(std::function<Tensor(const Tensor&)> reference) {
  return [reference](const Tensor& in, const Tensor& out) {
    EXPECT_TRUE(torch::allclose(out, reference(in), 1e-5, 1e-6));
  };
}

// Expected shapes follow PyTorch's formulas, e.g. conv: floor((L + 2p - d(k-1) - 1) / s) + 1.
const std::vector<LayerCase>& layer_cases() {
  static const std::vector<LayerCase> cases = {
      {"Linear", "Linear", {{"in_features", 4}, {"out_features", 3}}, {2, 4}, {2, 3}},
      {"LinearNoBias", "Linear", {{"in_features", 4}, {"out_features", 3}, {"bias", false}}, {5, 7, 4}, {5, 7, 3}},
      // (10 + 2 - 2 - 1) / 2 + 1 = 5
      {"Conv1d",
       "Conv1d",
       {{"in_channels", 3}, {"out_channels", 8}, {"kernel_size", 3}, {"stride", 2}, {"padding", 1}},
       {2, 3, 10},
       {2, 8, 5}},
      // H: (8 + 2 - 2 - 1) / 1 + 1 = 8; W: (9 + 4 - 4 - 1) / 2 + 1 = 5
      {"Conv2d",
       "Conv2d",
       {{"in_channels", 1}, {"out_channels", 4}, {"kernel_size", {3, 5}}, {"stride", {1, 2}}, {"padding", {1, 2}}},
       {2, 1, 8, 9},
       {2, 4, 8, 5}},
      // (10 - 2 * 2 - 1) / 1 + 1 = 6
      {"Conv2dDilatedGrouped",
       "Conv2d",
       {{"in_channels", 4}, {"out_channels", 8}, {"kernel_size", 3}, {"dilation", 2}, {"groups", 2}, {"bias", false}},
       {1, 4, 10, 10},
       {1, 8, 6, 6}},
      {"Conv2dSame",
       "Conv2d",
       {{"in_channels", 2}, {"out_channels", 3}, {"kernel_size", 3}, {"padding", "same"}},
       {1, 2, 7, 7},
       {1, 3, 7, 7}},
      // (5 - 1) * 2 - 2 * 1 + (3 - 1) + 1 + 1 = 10
      {"ConvTranspose2d",
       "ConvTranspose2d",
       {{"in_channels", 4},
        {"out_channels", 2},
        {"kernel_size", 3},
        {"stride", 2},
        {"padding", 1},
        {"output_padding", 1}},
       {1, 4, 5, 5},
       {1, 2, 10, 10}},
      {"MaxPool2d",
       "MaxPool2d",
       {{"kernel_size", 2}, {"stride", 2}},
       {2, 3, 8, 7},
       {2, 3, 4, 3},
       false,
       same_as([](const Tensor& x) { return torch::max_pool2d(x, 2, 2); })},
      // stride defaults to kernel_size, as in PyTorch.
      {"MaxPool2dDefaultStride", "MaxPool2d", {{"kernel_size", 3}}, {1, 1, 9, 9}, {1, 1, 3, 3}},
      // (7 + 2 - 3) / 2 + 1 = 4
      {"AvgPool2d", "AvgPool2d", {{"kernel_size", 3}, {"stride", 2}, {"padding", 1}}, {1, 2, 7, 7}, {1, 2, 4, 4}},
      {"AdaptiveAvgPool2d",
       "AdaptiveAvgPool2d",
       {{"output_size", 1}},
       {2, 5, 7, 9},
       {2, 5, 1, 1},
       false,
       same_as([](const Tensor& x) {
         return x.mean({2, 3}, true);
       })},
      {"AdaptiveAvgPool2dKeepWidth", "AdaptiveAvgPool2d", {{"output_size", {2, nullptr}}}, {2, 5, 7, 9}, {2, 5, 2, 9}},
      {"BatchNorm1d", "BatchNorm1d", {{"num_features", 6}}, {4, 6}, {4, 6}},
      {"BatchNorm2d", "BatchNorm2d", {{"num_features", 3}, {"momentum", nullptr}}, {2, 3, 4, 4}, {2, 3, 4, 4}},
      {"LayerNorm", "LayerNorm", {{"normalized_shape", 8}}, {2, 5, 8}, {2, 5, 8}},
      {"LayerNormList", "LayerNorm", {{"normalized_shape", {5, 8}}, {"eps", 1e-6}}, {2, 5, 8}, {2, 5, 8}},
      {"GroupNorm", "GroupNorm", {{"num_groups", 2}, {"num_channels", 4}}, {2, 4, 3, 3}, {2, 4, 3, 3}},
      {"InstanceNorm2d", "InstanceNorm2d", {{"num_features", 3}}, {2, 3, 5, 5}, {2, 3, 5, 5}},
      {"Dropout", "Dropout", {{"p", 0.3}}, {4, 10}, {4, 10}, false, same_as([](const Tensor& x) {
         return x;
       })},  // Identity in eval mode.
      {"Flatten", "Flatten", json::object(), {2, 3, 4, 5}, {2, 60}},
      {"FlattenFrom2", "Flatten", {{"start_dim", 2}}, {2, 3, 4, 5}, {2, 3, 20}},
      {"Reshape", "Reshape", {{"shape", "4,5"}}, {2, 20}, {2, 4, 5}, false, same_as([](const Tensor& x) {
         return x.view({2, 4, 5});
       })},
      {"ReshapeInferred", "Reshape", {{"shape", "-1, 2"}}, {2, 3, 4}, {2, 6, 2}},
      {"SelectIndex", "SelectIndex", json::object(), {2, 5, 7}, {2, 7}, false, same_as([](const Tensor& x) {
         return x.select(1, 0);
       })},
      {"SelectIndexLast",
       "SelectIndex",
       {{"dim", 1}, {"index", -1}},
       {2, 5, 7},
       {2, 7},
       false,
       same_as([](const Tensor& x) { return x.select(1, -1); })},
      {"Embedding",
       "Embedding",
       {{"num_embeddings", 10}, {"embedding_dim", 4}, {"padding_idx", 0}},
       {2, 5},
       {2, 5, 4},
       true},
      {"LSTM", "LSTM", {{"input_size", 6}, {"hidden_size", 8}, {"batch_first", true}}, {2, 5, 6}, {2, 5, 8}},
      {"LSTMBidirectionalSeqFirst",
       "LSTM",
       {{"input_size", 6}, {"hidden_size", 8}, {"num_layers", 2}, {"bidirectional", true}, {"dropout", 0.1}},
       {5, 2, 6},
       {5, 2, 16}},
      {"LSTMProjected",
       "LSTM",
       {{"input_size", 6}, {"hidden_size", 8}, {"proj_size", 3}, {"batch_first", true}},
       {2, 5, 6},
       {2, 5, 3}},
      {"GRU", "GRU", {{"input_size", 6}, {"hidden_size", 8}, {"batch_first", true}}, {2, 5, 6}, {2, 5, 8}},
      {"TransformerEncoder",
       "TransformerEncoder",
       {{"d_model", 16}, {"nhead", 4}, {"num_layers", 2}, {"dim_feedforward", 32}},
       {2, 5, 16},
       {2, 5, 16}},
      {"TransformerDecoder",
       "TransformerDecoder",
       {{"d_model", 16}, {"nhead", 2}, {"dim_feedforward", 8}},
       {3, 4, 16},
       {3, 4, 16}},
      {"MultiHeadAttention", "MultiHeadAttention", {{"embed_dim", 16}, {"num_heads", 4}}, {2, 5, 16}, {2, 5, 16}},
      {"ReLU", "ReLU", json::object(), {2, 3, 4}, {2, 3, 4}, false, same_as([](const Tensor& x) {
         return torch::relu(x);
       })},
      {"ReLUInplaceParam",
       "ReLU",
       {{"inplace", true}},
       {2, 3, 4},
       {2, 3, 4},
       false,
       [](const Tensor& in, const Tensor& out) {
         EXPECT_TRUE(torch::equal(out, torch::relu(in)));
         EXPECT_TRUE((in < 0).any().item<bool>()) << "the input must not be changed in place";
       }},
      {"GELU", "GELU", {{"approximate", "tanh"}}, {2, 3, 4}, {2, 3, 4}, false, same_as([](const Tensor& x) {
         return torch::gelu(x, "tanh");
       })},
      {"Sigmoid", "Sigmoid", json::object(), {2, 3, 4}, {2, 3, 4}, false, same_as([](const Tensor& x) {
         return torch::sigmoid(x);
       })},
      {"Tanh", "Tanh", json::object(), {2, 3, 4}, {2, 3, 4}, false, same_as([](const Tensor& x) {
         return torch::tanh(x);
       })},
      {"LeakyReLU", "LeakyReLU", {{"negative_slope", 0.2}}, {2, 3, 4}, {2, 3, 4}, false, same_as([](const Tensor& x) {
         return torch::leaky_relu(x, 0.2);
       })},
      {"ELU", "ELU", {{"alpha", 0.5}}, {2, 3, 4}, {2, 3, 4}, false, same_as([](const Tensor& x) {
         return torch::elu(x, 0.5);
       })},
      {"SiLU", "SiLU", json::object(), {2, 3, 4}, {2, 3, 4}, false, same_as([](const Tensor& x) {
         return x * torch::sigmoid(x);
       })},
      {"Mish", "Mish", json::object(), {2, 3, 4}, {2, 3, 4}, false, same_as([](const Tensor& x) {
         return x * torch::tanh(torch::softplus(x));
       })},
      {"SELU", "SELU", json::object(), {2, 3, 4}, {2, 3, 4}, false, same_as([](const Tensor& x) {
         return torch::selu(x);
       })},
      {"PReLU",
       "PReLU",
       {{"num_parameters", 3}, {"init", 0.1}},
       {2, 3, 4},
       {2, 3, 4},
       false,
       same_as([](const Tensor& x) { return torch::where(x >= 0, x, 0.1 * x); })},
      {"Hardswish", "Hardswish", json::object(), {2, 3, 4}, {2, 3, 4}, false, same_as([](const Tensor& x) {
         return x * torch::clamp(x + 3, 0, 6) / 6;
       })},
      {"Softmax", "Softmax", json::object(), {2, 3, 4}, {2, 3, 4}, false, same_as([](const Tensor& x) {
         return torch::softmax(x, -1);
       })},
      {"SoftmaxDim1", "Softmax", {{"dim", 1}}, {2, 3, 4}, {2, 3, 4}, false, same_as([](const Tensor& x) {
         return torch::softmax(x, 1);
       })},
  };
  return cases;
}

void PrintTo(const LayerCase& c, std::ostream* os) { *os << c.name; }

class EveryLayer : public ::testing::TestWithParam<LayerCase> {};

TEST_P(EveryLayer, MapsSampleToPyTorchShape) {
  const LayerCase& c = GetParam();
  torch::manual_seed(0);
  auto model = build_sequential_model(single_layer(c.type, c.params));
  const Tensor x = c.integer_input ? torch::randint(0, 10, c.input, torch::kLong) : torch::randn(c.input);
  const Tensor y = model->forward(x);
  EXPECT_EQ(y.sizes().vec(), c.expected);
  EXPECT_FALSE(model->describe().empty());
  EXPECT_EQ(model->describe().rfind("l: ", 0), 0u) << model->describe();
  if (c.check) {
    model->eval();
    torch::NoGradGuard no_grad;
    c.check(x, model->forward(x));
  }
}

INSTANTIATE_TEST_SUITE_P(Layers, EveryLayer, ::testing::ValuesIn(layer_cases()),
                         [](const ::testing::TestParamInfo<LayerCase>& info) { return info.param.name; });

// ---------------------------------------------------------------------------
// Merges: in -> a (ReLU), in -> b (Tanh); a, b -> m -> out, inputs in edge order.

struct MergeCase {
  std::string type;
  json params;
  std::vector<int64_t> expected;
  std::function<Tensor(const Tensor& a, const Tensor& b)> reference;
};

void PrintTo(const MergeCase& c, std::ostream* os) { *os << c.type << c.params.dump(); }

class EveryMerge : public ::testing::TestWithParam<MergeCase> {};

TEST_P(EveryMerge, CombinesInputsInEdgeOrder) {
  const MergeCase& c = GetParam();
  const json spec = Spec()
                        .layer("a", "ReLU")
                        .layer("b", "Tanh")
                        .layer("m", c.type, c.params)
                        .edge("in", "a")
                        .edge("in", "b")
                        .edge("a", "m")
                        .edge("b", "m")
                        .edge("m", "out")
                        .build();
  auto model = build_sequential_model(spec);
  const Tensor x = torch::randn({2, 3, 4});
  const Tensor y = model->forward(x);
  EXPECT_EQ(y.sizes().vec(), c.expected);
  EXPECT_TRUE(torch::allclose(y, c.reference(torch::relu(x), torch::tanh(x))));
  EXPECT_TRUE(parameter_names(*model).empty());
}

INSTANTIATE_TEST_SUITE_P(
    Merges, EveryMerge,
    ::testing::Values(
        MergeCase{"Add", json::object(), {2, 3, 4}, [](const Tensor& a, const Tensor& b) { return a + b; }},
        MergeCase{"Concat",
                  json::object(),
                  {2, 6, 4},
                  [](const Tensor& a, const Tensor& b) {
                    return torch::cat({a, b}, 1);
                  }},
        MergeCase{"Concat",
                  {{"dim", -1}},
                  {2, 3, 8},
                  [](const Tensor& a, const Tensor& b) {
                    return torch::cat({a, b}, -1);
                  }},
        MergeCase{"Multiply", json::object(), {2, 3, 4}, [](const Tensor& a, const Tensor& b) { return a * b; }},
        MergeCase{"Subtract", json::object(), {2, 3, 4}, [](const Tensor& a, const Tensor& b) { return a - b; }},
        MergeCase{"Mean", json::object(), {2, 3, 4}, [](const Tensor& a, const Tensor& b) { return (a + b) / 2; }},
        MergeCase{"Stack",
                  json::object(),
                  {2, 2, 3, 4},
                  [](const Tensor& a, const Tensor& b) {
                    return torch::stack({a, b}, 1);
                  }},
        MergeCase{"Stack",
                  {{"dim", 0}},
                  {2, 2, 3, 4},
                  [](const Tensor& a, const Tensor& b) {
                    return torch::stack({a, b}, 0);
                  }}),
    [](const ::testing::TestParamInfo<MergeCase>& info) {
      return info.param.type + (info.param.params.empty() ? "" : "Dim" + std::to_string(info.index));
    });

TEST(Layers, EveryTypeIsCovered) {
  std::set<std::string> tested{"Input", "Output"};
  for (const auto& c : layer_cases()) tested.insert(c.type);
  for (const auto& t : {"Add", "Concat", "Multiply", "Subtract", "Mean", "Stack"}) tested.insert(t);
  for (const auto& t : layer_types()) EXPECT_TRUE(tested.count(t)) << t << " has no test case";
  // The types CodefyUI's editor and backend know are all here.
  const std::set<std::string> known(layer_types().begin(), layer_types().end());
  for (const auto& t : {"Conv2d",
                        "Conv1d",
                        "ConvTranspose2d",
                        "BatchNorm2d",
                        "BatchNorm1d",
                        "LayerNorm",
                        "GroupNorm",
                        "InstanceNorm2d",
                        "MaxPool2d",
                        "AvgPool2d",
                        "AdaptiveAvgPool2d",
                        "Dropout",
                        "Linear",
                        "Embedding",
                        "Flatten",
                        "Reshape",
                        "SelectIndex",
                        "TransformerEncoder",
                        "TransformerDecoder",
                        "LSTM",
                        "GRU",
                        "MultiHeadAttention",
                        "ReLU",
                        "GELU",
                        "Sigmoid",
                        "Tanh",
                        "LeakyReLU",
                        "ELU",
                        "SiLU",
                        "Mish",
                        "SELU",
                        "PReLU",
                        "Hardswish",
                        "Softmax"})
    EXPECT_TRUE(known.count(t)) << t;
}

TEST(Layers, SubtractFollowsEdgeListOrderNotNodeOrder) {
  const json spec = Spec()
                        .layer("a", "ReLU")
                        .layer("b", "Tanh")
                        .layer("m", "Subtract")
                        .edge("in", "a")
                        .edge("in", "b")
                        .edge("b", "m")  // b's edge comes first, so m = b - a.
                        .edge("a", "m")
                        .edge("m", "out")
                        .build();
  const Tensor x = torch::randn({3, 5});
  EXPECT_TRUE(torch::allclose(build_sequential_model(spec)->forward(x), torch::tanh(x) - torch::relu(x)));
}

TEST(Layers, AddTakesThreeInputsAndTheInputItself) {
  const json spec = Spec()
                        .layer("a", "ReLU")
                        .layer("b", "Tanh")
                        .layer("m", "Add")
                        .edge("in", "a")
                        .edge("in", "b")
                        .edge("a", "m")
                        .edge("b", "m")
                        .edge("in", "m")
                        .edge("m", "out")
                        .build();
  const Tensor x = torch::randn({3, 5});
  EXPECT_TRUE(torch::allclose(build_sequential_model(spec)->forward(x), torch::relu(x) + torch::tanh(x) + x));
}

// ---------------------------------------------------------------------------
// Whole models.

void expect_default_mnist_cnn(const train::ModelPtr& model) {
  EXPECT_EQ(model->forward(torch::randn({2, 1, 28, 28})).sizes().vec(), (std::vector<int64_t>{2, 10}));
  EXPECT_EQ(parameter_names(*model),
            (std::vector<std::string>{"layers.c1.weight", "layers.c1.bias", "layers.c2.weight", "layers.c2.bias",
                                      "layers.l1.weight", "layers.l1.bias", "layers.l2.weight", "layers.l2.bias"}));
  // 32*1*9+32 + 64*32*9+64 + 3136*128+128 + 128*10+10, as PyTorch counts it.
  EXPECT_EQ(train::count_parameters(*model), 421642);
  const std::string text = model->describe();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 9) << text;  // 10 layers, one per line.
  EXPECT_EQ(text.rfind("c1: Conv2d(1, 32, kernel_size=[3, 3]", 0), 0u) << text;
  EXPECT_NE(text.find("\nl2: Linear(in_features=128, out_features=10"), std::string::npos) << text;
}

TEST(Layers, DefaultMnistCnnFromString) { expect_default_mnist_cnn(build_sequential_model(json(kDefaultLayers))); }

TEST(Layers, DefaultMnistCnnFromObject) {
  expect_default_mnist_cnn(build_sequential_model(json::parse(kDefaultLayers)));
}

TEST(Layers, LenetExampleGraphLayers) {
  std::ifstream file(CODEFY_SHARED_DIR "/codefyui/examples/lenet-mnist-training.json");
  if (!file) GTEST_SKIP() << "example graph not found";
  const json graph = json::parse(file);
  std::string layers;
  for (const auto& node : graph["nodes"])
    if (node["type"] == "SequentialModel") layers = node["data"]["params"]["layers"].get<std::string>();
  ASSERT_FALSE(layers.empty());
  expect_default_mnist_cnn(build_sequential_model(json(layers)));
}

TEST(Layers, ResidualAdd) {
  const json spec =
      Spec()
          .layer("c1", "Conv2d", {{"in_channels", 3}, {"out_channels", 3}, {"kernel_size", 3}, {"padding", 1}})
          .layer("r1", "ReLU")
          .layer("add", "Add")
          .edge("in", "c1")
          .edge("c1", "r1")
          .edge("r1", "add")
          .edge("in", "add")
          .edge("add", "out")
          .build();
  auto model = build_sequential_model(spec);
  const Tensor x = torch::randn({2, 3, 6, 6});
  const Tensor y = model->forward(x);
  auto params = model->named_parameters();
  const Tensor expected = torch::relu(torch::conv2d(x, params["layers.c1.weight"], params["layers.c1.bias"], 1, 1)) + x;
  EXPECT_TRUE(torch::allclose(y, expected, 1e-5, 1e-6));
  EXPECT_EQ(model->describe(),
            "c1: Conv2d(3, 3, kernel_size=[3, 3], stride=[1, 1], padding=[1, 1])\nr1: ReLU()\nadd: Add(r1, in)");
}

TEST(Layers, ConcatBranches) {
  const json spec = Spec()
                        .layer("a", "Linear", {{"in_features", 4}, {"out_features", 3}})
                        .layer("b", "Linear", {{"in_features", 4}, {"out_features", 5}})
                        .layer("cat", "Concat", {{"dim", 1}})
                        .layer("head", "Linear", {{"in_features", 8}, {"out_features", 2}})
                        .edge("in", "a")
                        .edge("in", "b")
                        .edge("a", "cat")
                        .edge("b", "cat")
                        .edge("cat", "head")
                        .edge("head", "out")
                        .build();
  auto model = build_sequential_model(spec);
  EXPECT_EQ(model->forward(torch::randn({6, 4})).sizes().vec(), (std::vector<int64_t>{6, 2}));
  EXPECT_EQ(train::count_parameters(*model), (4 * 3 + 3) + (4 * 5 + 5) + (8 * 2 + 2));
  EXPECT_NE(model->describe().find("cat: Concat(a, b, dim=1)"), std::string::npos) << model->describe();
}

TEST(Layers, NodesRunInTopologicalOrderWhateverTheListOrder) {
  // The head is listed before the layer that feeds it.
  const json spec = Spec()
                        .layer("head", "Linear", {{"in_features", 3}, {"out_features", 2}})
                        .layer("body", "Linear", {{"in_features", 4}, {"out_features", 3}})
                        .edge("body", "head")
                        .edge("in", "body")
                        .edge("head", "out")
                        .build();
  auto model = build_sequential_model(spec);
  EXPECT_EQ(model->forward(torch::randn({1, 4})).sizes().vec(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(model->describe().rfind("body: ", 0), 0u);
  // Registration keeps the node-list order, like CodefyUI's ModuleDict.
  EXPECT_EQ(parameter_names(*model)[0], "layers.head.weight");
}

TEST(Layers, InputStraightToOutputIsIdentity) {
  auto model = build_sequential_model(Spec().edge("in", "out").build());
  const Tensor x = torch::randn({2, 3});
  EXPECT_TRUE(torch::equal(model->forward(x), x));
}

TEST(Layers, StateDictNamesFollowPyTorch) {
  auto names_of = [](const std::string& type, const json& params) {
    auto model = build_sequential_model(single_layer(type, params));
    std::set<std::string> names;
    for (const auto& p : model->named_parameters()) names.insert(p.key());
    for (const auto& b : model->named_buffers()) names.insert(b.key());
    return names;
  };
  const auto lstm = names_of("LSTM", {{"input_size", 3}, {"hidden_size", 4}});
  EXPECT_TRUE(lstm.count("layers.l.lstm.weight_ih_l0"));
  EXPECT_TRUE(lstm.count("layers.l.lstm.bias_hh_l0"));
  EXPECT_TRUE(names_of("GRU", {{"input_size", 3}, {"hidden_size", 4}}).count("layers.l.gru.weight_hh_l0"));
  const auto encoder = names_of("TransformerEncoder", {{"d_model", 8}, {"nhead", 2}, {"num_layers", 2}});
  EXPECT_TRUE(encoder.count("layers.l.encoder.layers.1.self_attn.in_proj_weight"));
  EXPECT_TRUE(encoder.count("layers.l.encoder.layers.0.linear1.weight"));
  EXPECT_TRUE(encoder.count("layers.l.encoder.layers.0.norm2.bias"));
  const auto attention = names_of("MultiHeadAttention", {{"embed_dim", 8}, {"num_heads", 2}});
  EXPECT_EQ(attention, (std::set<std::string>{"layers.l.attn.in_proj_weight", "layers.l.attn.in_proj_bias",
                                              "layers.l.attn.out_proj.weight", "layers.l.attn.out_proj.bias"}));
  EXPECT_EQ(names_of("BatchNorm2d", {{"num_features", 3}}),
            (std::set<std::string>{"layers.l.weight", "layers.l.bias", "layers.l.running_mean", "layers.l.running_var",
                                   "layers.l.num_batches_tracked"}));
  EXPECT_EQ(names_of("PReLU", json::object()), (std::set<std::string>{"layers.l.weight"}));
  EXPECT_TRUE(names_of("ReLU", json::object()).empty());
}

TEST(Layers, DescribeShowsEachLayersOptions) {
  auto line = [](const std::string& type, const json& params) {
    return build_sequential_model(single_layer(type, params))->describe();
  };
  EXPECT_EQ(line("LSTM", {{"input_size", 3}, {"hidden_size", 4}, {"batch_first", true}})
                .rfind("l: LSTM(input_size=3, hidden_size=4, num_layers=1, bias=true, batch_first=true", 0),
            0u);
  EXPECT_EQ(line("TransformerEncoder", {{"d_model", 8}, {"nhead", 2}}),
            "l: TransformerEncoder(d_model=8, nhead=2, num_layers=1, dim_feedforward=2048, dropout=0.1, "
            "activation=relu, batch_first=true)");
  EXPECT_EQ(line("MultiHeadAttention", {{"embed_dim", 8}, {"num_heads", 2}}),
            "l: MultiHeadAttention(embed_dim=8, num_heads=2, dropout=0, batch_first=true)");
  EXPECT_EQ(line("Reshape", {{"shape", "64,7,7"}}), "l: Reshape(shape=[64, 7, 7])");
  EXPECT_EQ(line("SelectIndex", {{"index", -1}}), "l: SelectIndex(dim=1, index=-1)");
  EXPECT_EQ(line("Hardswish", json::object()), "l: Hardswish()");
  EXPECT_EQ(line("AdaptiveAvgPool2d", {{"output_size", {2, nullptr}}}), "l: AdaptiveAvgPool2d(output_size=[2, None])");
}

TEST(Layers, TrainAndEvalReachTheLayers) {
  auto model = build_sequential_model(single_layer("Dropout", {{"p", 0.9}}));
  const Tensor x = torch::ones({1000});
  EXPECT_FALSE(torch::equal(model->forward(x), x));
  model->eval();
  EXPECT_TRUE(torch::equal(model->forward(x), x));
}

TEST(Layers, SameSeedSameWeights) {
  auto weights = [](uint64_t seed) {
    torch::manual_seed(seed);
    auto model = build_sequential_model(json(kDefaultLayers));
    std::vector<Tensor> out;
    for (const auto& p : model->parameters()) out.push_back(p.detach().clone());
    return out;
  };
  const auto a = weights(42), b = weights(42), c = weights(43);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << i;
  EXPECT_FALSE(torch::equal(a[0], c[0]));
}

TEST(Layers, LayerTypesListsBoundariesLayersAndMerges) {
  const auto& types = layer_types();
  EXPECT_EQ(types[0], "Input");
  EXPECT_EQ(types[1], "Output");
  EXPECT_EQ(std::set<std::string>(types.begin(), types.end()).size(), types.size());
  for (const auto& t : {"Linear", "Conv2d", "Hardswish", "Add", "Stack"})
    EXPECT_NE(std::find(types.begin(), types.end(), t), types.end()) << t;
}

// ---------------------------------------------------------------------------
// Errors name the layer and the parameter, with a message a student can act on.

TEST(LayerErrors, UnknownType) {
  expect_build_error(single_layer("Conv3d", json::object()), "l", "", "unknown layer type");
  try {
    build_sequential_model(single_layer("Conv3d", json::object()));
  } catch (const LayerSpecError& e) {
    EXPECT_EQ(e.layer_type(), "Conv3d");
    EXPECT_EQ(std::string(e.what()), "layer \"l\" (Conv3d): unknown layer type");
  }
}

TEST(LayerErrors, MissingRequiredParam) {
  expect_build_error(single_layer("Linear", {{"out_features", 3}}), "l", "in_features",
                     "required parameter is missing");
  expect_build_error(single_layer("AdaptiveAvgPool2d", json::object()), "l", "output_size", "missing");
  expect_build_error(single_layer("Reshape", json::object()), "l", "shape", "missing");
  // No palette default is invented for a parameter PyTorch requires.
  expect_build_error(single_layer("Conv2d", {{"out_channels", 3}, {"kernel_size", 3}}), "l", "in_channels", "missing");
}

TEST(LayerErrors, WrongParamType) {
  expect_build_error(single_layer("Conv2d", {{"in_channels", 1}, {"out_channels", 3}, {"kernel_size", "3"}}), "l",
                     "kernel_size", "got the text \"3\"");
  expect_build_error(single_layer("Linear", {{"in_features", 4.5}, {"out_features", 3}}), "l", "in_features",
                     "expected a whole number");
  expect_build_error(single_layer("Linear", {{"in_features", 4}, {"out_features", 3}, {"bias", "yes"}}), "l", "bias",
                     "expected true or false");
  expect_build_error(single_layer("Dropout", {{"p", "0.5"}}), "l", "p", "expected a number");
  expect_build_error(single_layer("Conv2d", {{"in_channels", 1}, {"out_channels", 3}, {"kernel_size", {3, 3, 3}}}), "l",
                     "kernel_size", "a list of 2");
  expect_build_error(single_layer("GELU", {{"approximate", "fast"}}), "l", "approximate", "\"none\", \"tanh\"");
  expect_build_error(single_layer("Linear", json::array({4, 3})), "l", "", "\"params\" must be an object");
}

TEST(LayerErrors, ParamOutOfRange) {
  expect_build_error(single_layer("Dropout", {{"p", 1.5}}), "l", "p", "at most 1");
  expect_build_error(single_layer("Linear", {{"in_features", 0}, {"out_features", 3}}), "l", "in_features",
                     "at least 1");
  expect_build_error(
      single_layer("Conv2d", {{"in_channels", 3}, {"out_channels", 4}, {"kernel_size", 3}, {"groups", 2}}), "l",
      "groups", "divisible by groups");
  expect_build_error(single_layer("GroupNorm", {{"num_groups", 3}, {"num_channels", 4}}), "l", "num_groups",
                     "divisible");
  expect_build_error(single_layer("TransformerEncoder", {{"d_model", 10}, {"nhead", 4}}), "l", "nhead", "divisible");
  expect_build_error(single_layer("Embedding", {{"num_embeddings", 5}, {"embedding_dim", 2}, {"padding_idx", 5}}), "l",
                     "padding_idx", "within num_embeddings");
  expect_build_error(single_layer("Reshape", {{"shape", "64,x,7"}}), "l", "shape", "\"x\"");
}

TEST(LayerErrors, UnknownParamSuggestsTheRightOne) {
  expect_build_error(single_layer("Linear", {{"in_feature", 4}, {"out_features", 3}}), "l", "in_feature",
                     "did you mean \"in_features\"?");
  expect_build_error(single_layer("Sigmoid", {{"dim", 1}}), "l", "dim", "takes no parameters");
  expect_build_error(single_layer("Add", {{"dim", 1}}), "l", "dim", "takes no parameters");
}

TEST(LayerErrors, Cycle) {
  const json spec = Spec()
                        .layer("a", "ReLU")
                        .layer("b", "Tanh")
                        .layer("m", "Add")
                        .edge("in", "m")
                        .edge("b", "m")
                        .edge("m", "a")
                        .edge("a", "b")
                        .edge("b", "out")
                        .build();
  expect_build_error(spec, "a", "", "Graph contains a cycle (a -> b -> m -> a)");
}

TEST(LayerErrors, MissingOutput) {
  const json spec = Spec().layer("l", "ReLU").edge("in", "l").build(/*with_output=*/false);
  expect_build_error(spec, "", "", "no Output node");
}

TEST(LayerErrors, PlainLayerWithTwoInputs) {
  const json spec = Spec()
                        .layer("a", "ReLU")
                        .layer("b", "Tanh")
                        .layer("c", "Linear", {{"in_features", 4}, {"out_features", 2}})
                        .edge("in", "a")
                        .edge("in", "b")
                        .edge("a", "c")
                        .edge("b", "c")
                        .edge("c", "out")
                        .build();
  expect_build_error(spec, "c", "", "has 2 inputs (from \"a\", \"b\") but takes exactly one");
}

TEST(LayerErrors, LayerWithoutInput) {
  const json spec = Spec().layer("a", "ReLU").layer("b", "ReLU").chain({"a"}).edge("b", "a").build();
  expect_build_error(spec, "a", "", "has 2 inputs");
  const json lonely = Spec().layer("a", "ReLU").layer("b", "ReLU").chain({"a"}).build();
  expect_build_error(lonely, "b", "", "has no input");
}

TEST(LayerErrors, MergeInputCounts) {
  const json one = Spec().layer("m", "Add").chain({"m"}).build();
  expect_build_error(one, "m", "", "needs at least 2");
  const json three =
      Spec().layer("m", "Subtract").edge("in", "m").edge("in", "m").edge("in", "m").edge("m", "out").build();
  expect_build_error(three, "m", "", "needs exactly 2");
}

TEST(LayerErrors, UnsupportedVersion) {
  json spec = single_layer("ReLU", json::object());
  spec["version"] = 1;
  expect_build_error(spec, "", "version", "Unsupported graph spec version: 1");
  spec.erase("version");
  expect_build_error(spec, "", "version", "Unsupported graph spec version");
  expect_build_error(json("{}"), "", "version", "Unsupported graph spec version");
}

TEST(LayerErrors, MalformedJsonString) {
  expect_build_error(json(R"({"version": 2, "nodes": [)"), "", "", "not valid JSON");
  expect_build_error(json(R"([1, 2])"), "", "", "must be a JSON object");
}

TEST(LayerErrors, DotInNodeId) {
  const json spec = Spec().layer("conv.1", "ReLU").chain({"conv.1"}).build();
  expect_build_error(spec, "conv.1", "", "rename it, e.g. to \"conv_1\"");
}

TEST(LayerErrors, DuplicateNodeId) {
  const json spec = Spec().layer("a", "ReLU").layer("a", "Tanh").chain({"a"}).build();
  expect_build_error(spec, "a", "", "ids must be unique");
}

TEST(LayerErrors, PortsAndHandles) {
  json two_ports = single_layer("ReLU", json::object());
  two_ports["nodes"][0]["ports"].push_back({{"id", "p_z"}, {"name", "z"}});
  expect_build_error(two_ports, "in", "ports", "exactly one port");

  json no_handle = single_layer("ReLU", json::object());
  no_handle["edges"][0]["sourceHandle"] = nullptr;
  expect_build_error(no_handle, "in", "sourceHandle", "the Input port id \"p_x\"");

  json wrong_target = single_layer("ReLU", json::object());
  wrong_target["edges"][1]["targetHandle"] = "p_q";
  expect_build_error(wrong_target, "out", "targetHandle", "got \"p_q\"");

  const json unused = Spec().layer("a", "ReLU").edge("a", "out").build();
  expect_build_error(unused, "in", "", "Input port 'x' is unused");

  const json dangling = Spec().layer("a", "ReLU").chain({"a"}).edge("a", "ghost").build();
  expect_build_error(dangling, "", "", "goes to \"ghost\", which is not a node");

  const json no_output_edge = Spec().layer("a", "ReLU").edge("in", "a").build();
  expect_build_error(no_output_edge, "out", "", "has no incoming edge");

  const json two_output_edges = Spec().layer("a", "ReLU").chain({"a"}).edge("in", "out").build();
  expect_build_error(two_output_edges, "out", "", "more than one incoming edge");
}

TEST(LayerErrors, ForwardFailureNamesTheLayer) {
  auto model = build_sequential_model(json(kDefaultLayers));
  const auto run = [&] { model->forward(torch::randn({2, 1, 32, 32})); };
  expect_spec_error(run, "l1", "", "failed on input of shape [2, 4096]");
}

TEST(LayerErrors, ForwardFailureOfAMergeShowsEveryInputShape) {
  const json spec = Spec()
                        .layer("a", "Linear", {{"in_features", 4}, {"out_features", 3}})
                        .layer("b", "Linear", {{"in_features", 4}, {"out_features", 5}})
                        .layer("s", "Stack")
                        .edge("in", "a")
                        .edge("in", "b")
                        .edge("a", "s")
                        .edge("b", "s")
                        .edge("s", "out")
                        .build();
  auto model = build_sequential_model(spec);
  const auto run = [&] { model->forward(torch::randn({2, 4})); };
  expect_spec_error(run, "s", "",
                    "failed on inputs of shapes [2, 3], [2, 5]: stack expects each tensor to be equal size");
}

}  // namespace
}  // namespace codefy::layers
