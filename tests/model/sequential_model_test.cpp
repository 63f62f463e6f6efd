// Whole models from v2 specs: wiring, merges in edge order, CodefyUI's
// default and example models, state and seeds, forward failures.
#include "model/sequential_model.h"
#include "model/conv_layout.h"
#include "spec_builder.h"
#include "train/model.h"
#include "train/precision.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace codefy::model {
namespace {

using nlohmann::json;
using torch::Tensor;

TEST(SequentialModel, SubtractFollowsEdgeListOrderNotNodeOrder) {
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

TEST(SequentialModel, AddTakesThreeInputsAndTheInputItself) {
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

TEST(SequentialModel, DefaultMnistCnnFromString) {
  expect_default_mnist_cnn(build_sequential_model(json(kDefaultLayerSpec)));
}

TEST(SequentialModel, DefaultMnistCnnFromObject) {
  expect_default_mnist_cnn(build_sequential_model(json::parse(kDefaultLayerSpec)));
}

TEST(SequentialModel, LenetExampleGraphLayers) {
  std::ifstream file(CODEFY_SOURCE_DIR "/tests/fixtures/codefyui/lenet-mnist-training.json");
  ASSERT_TRUE(file) << "tests/fixtures/codefyui/lenet-mnist-training.json is missing";
  const json graph = json::parse(file);
  std::string layers;
  for (const auto& node : graph["nodes"])
    if (node["type"] == "SequentialModel") layers = node["data"]["params"]["layers"].get<std::string>();
  ASSERT_FALSE(layers.empty());
  expect_default_mnist_cnn(build_sequential_model(json(layers)));
}

TEST(SequentialModel, ResidualAdd) {
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

TEST(SequentialModel, ConcatBranches) {
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

TEST(SequentialModel, NodesRunInTopologicalOrderWhateverTheListOrder) {
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

TEST(SequentialModel, InputStraightToOutputIsIdentity) {
  auto model = build_sequential_model(Spec().edge("in", "out").build());
  const Tensor x = torch::randn({2, 3});
  EXPECT_TRUE(torch::equal(model->forward(x), x));
}

TEST(SequentialModel, TrainAndEvalReachTheLayers) {
  auto model = build_sequential_model(single_layer("Dropout", {{"p", 0.9}}));
  const Tensor x = torch::ones({1000});
  EXPECT_FALSE(torch::equal(model->forward(x), x));
  model->eval();
  EXPECT_TRUE(torch::equal(model->forward(x), x));
}

TEST(SequentialModel, SameSeedSameWeights) {
  auto weights = [](uint64_t seed) {
    torch::manual_seed(seed);
    auto model = build_sequential_model(json(kDefaultLayerSpec));
    std::vector<Tensor> out;
    for (const auto& p : model->parameters()) out.push_back(p.detach().clone());
    return out;
  };
  const auto a = weights(42), b = weights(42), c = weights(43);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << i;
  EXPECT_FALSE(torch::equal(a[0], c[0]));
}

// Under CPU bf16 autocast a Linear too small for its batch to gain from bf16 runs in fp32 (the
// output layer of a 64-row batch), a large one in bf16; gradients reach both in fp32.
TEST(SequentialModel, SmallLinearRunsInFp32UnderCpuBf16Autocast) {
  torch::manual_seed(0);
  auto model = build_sequential_model(Spec()
                                          .layer("big", "Linear", {{"in_features", 256}, {"out_features", 256}})
                                          .layer("small", "Linear", {{"in_features", 256}, {"out_features", 10}})
                                          .chain({"big", "small"})
                                          .build());
  auto params = model->named_parameters();
  const Tensor w_small = params["layers.small.weight"], b_small = params["layers.small.bias"];
  const Tensor x = torch::randn({64, 256});
  Tensor out, hidden;
  {
    train::AutocastGuard autocast(train::Precision::kBf16, c10::Device(c10::kCPU));
    out = model->forward(x);
    hidden = torch::nn::functional::linear(x, params["layers.big.weight"], params["layers.big.bias"]);
  }
  EXPECT_EQ(hidden.scalar_type(), torch::kBFloat16);  // what the big layer gives under autocast
  ASSERT_EQ(out.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal(out, torch::nn::functional::linear(hidden.to(torch::kFloat), w_small, b_small)));
  out.sum().backward();
  for (const auto& p : model->parameters()) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_EQ(p.grad().scalar_type(), torch::kFloat);
    EXPECT_GT(p.grad().abs().sum().item<double>(), 0.0);
  }
  EXPECT_FALSE(train::cpu_autocast_bf16());  // the guard restored autocast's state

  // 4096 rows: the same layer is large enough to run in bf16.
  train::AutocastGuard autocast(train::Precision::kBf16, c10::Device(c10::kCPU));
  EXPECT_EQ(model->forward(torch::randn({4096, 256})).scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(train::cpu_autocast_bf16());
}

TEST(SequentialModel, ForwardFailureNamesTheLayer) {
  auto model = build_sequential_model(json(kDefaultLayerSpec));
  const auto run = [&] { model->forward(torch::randn({2, 1, 32, 32})); };
  expect_spec_error(run, "l1", "", "failed on input of shape [2, 4096]");
}

TEST(SequentialModel, ForwardFailureOfAMergeShowsEveryInputShape) {
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
}  // namespace codefy::model

namespace codefy::model {
namespace {

// Gradients of `weight` and `bias` for y = f(x) against a fixed random seed.
std::pair<torch::Tensor, torch::Tensor> conv_grads(torch::nn::Conv2d& conv, const torch::Tensor& y) {
  conv->zero_grad();
  torch::manual_seed(11);
  y.backward(torch::randn(y.sizes()).to(y.scalar_type()));
  return {conv->weight.grad().clone(), conv->bias.grad().clone()};
}

TEST(SequentialModel, ConvolutionsWithOneInputChannelPerGroupComputeChannelsLast) {
  namespace nn = torch::nn;
  struct Case {
    const char* name;
    nn::Conv2dOptions options;
    std::vector<int64_t> input;
  };
  const std::vector<Case> cases = {
      {"grey images", nn::Conv2dOptions(1, 8, 3).padding(1), {4, 1, 10, 12}},
      {"stride 2, padding valid", nn::Conv2dOptions(1, 6, 3).stride(2).padding(torch::kValid), {2, 1, 9, 9}},
      {"depthwise", nn::Conv2dOptions(4, 4, 3).padding(1).groups(4), {2, 4, 8, 8}},
      {"dilated, 'same'", nn::Conv2dOptions(1, 3, 3).padding(torch::kSame).dilation(2), {2, 1, 11, 7}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    torch::manual_seed(10);
    nn::Conv2d conv(c.options);
    const Tensor x = torch::randn(c.input).contiguous(c10::MemoryFormat::ChannelsLast);
    const Tensor fast = conv2d_channels_last(*conv, x);
    EXPECT_TRUE(fast.is_contiguous(c10::MemoryFormat::ChannelsLast));
    EXPECT_FALSE(fast.is_contiguous());  // LibTorch alone gives these NCHW
    const Tensor plain = conv->forward(x);
    EXPECT_TRUE(torch::allclose(fast, plain, 1e-5, 1e-5));
    const auto [gw_fast, gb_fast] = conv_grads(conv, conv2d_channels_last(*conv, x));
    const auto [gw_plain, gb_plain] = conv_grads(conv, conv->forward(x));
    EXPECT_TRUE(gw_fast.is_contiguous());  // the parameter's own layout
    EXPECT_TRUE(torch::allclose(gw_fast, gw_plain, 1e-4, 1e-5));
    EXPECT_TRUE(torch::allclose(gb_fast, gb_plain, 1e-4, 1e-5));
  }
  // Other padding modes and more input channels: LibTorch's own forward.
  nn::Conv2d reflect(nn::Conv2dOptions(1, 4, 3).padding(1).padding_mode(torch::kReflect));
  const Tensor grey = torch::randn({2, 1, 6, 6});
  EXPECT_TRUE(torch::equal(conv2d_channels_last(*reflect, grey), reflect->forward(grey)));
  nn::Conv2d rgb(nn::Conv2dOptions(3, 4, 3).padding(1));
  const Tensor colour = torch::randn({2, 3, 6, 6}).contiguous(c10::MemoryFormat::ChannelsLast);
  EXPECT_TRUE(torch::equal(conv2d_channels_last(*rgb, colour), rgb->forward(colour)));
}

}  // namespace
}  // namespace codefy::model
