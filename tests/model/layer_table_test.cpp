// The layer table: every layer and merge type builds, maps a sample to the
// shape PyTorch gives, and names its parameters as PyTorch does.
#include "model/layer_table.h"
#include "spec_builder.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace codefy::model {
namespace {

using nlohmann::json;
using torch::Tensor;

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
      {"Permute", "Permute", {{"dims", "0, 2, 1"}}, {2, 5, 7}, {2, 7, 5}, false, same_as([](const Tensor& x) {
         return x.transpose(1, 2);
       })},
      {"PermuteList", "Permute", {{"dims", {0, 3, 1, 2}}}, {2, 4, 5, 3}, {2, 3, 4, 5}},
      {"Chomp1d", "Chomp1d", {{"chomp_size", 2}}, {2, 3, 7}, {2, 3, 5}, false, same_as([](const Tensor& x) {
         return x.narrow(2, 0, 5);
       })},
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

TEST(LayerTable, EveryTypeIsCovered) {
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

TEST(LayerTable, StateDictNamesFollowPyTorch) {
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

TEST(LayerTable, DescribeShowsEachLayersOptions) {
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

TEST(LayerTable, LayerTypesListsBoundariesLayersAndMerges) {
  const auto& types = layer_types();
  EXPECT_EQ(types[0], "Input");
  EXPECT_EQ(types[1], "Output");
  EXPECT_EQ(std::set<std::string>(types.begin(), types.end()).size(), types.size());
  for (const auto& t : {"Linear", "Conv2d", "Hardswish", "Add", "Stack"})
    EXPECT_NE(std::find(types.begin(), types.end(), t), types.end()) << t;
}

}  // namespace
}  // namespace codefy::model
