// Issue #31: a model leaves Codefy as plain PyTorch source (model.py) and as
// TorchScript. Each spec's Codefy model, with random weights and running
// statistics, is exported both ways; the TorchScript file is loaded back in
// C++ here, and Debian's python3-torch imports model.py, loads Codefy's .pt
// into it and loads the TorchScript file (tests/model/export_check.py). All
// of them must give Codefy's outputs at batch 1 and 7 in eval mode.
#include "model/export_source.h"
#include "model/export_torchscript.h"
#include "model/sequential_model.h"
#include "spec_builder.h"
#include "train/serialize.h"
#include "train/state_dict.h"

#include "../common/test_util.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <set>
#include <string>
#include <vector>

namespace codefy::model {
namespace {

using nlohmann::json;
using torch::Tensor;
namespace fs = std::filesystem;

/// The issue's bound for fp32. Measured here: both forms give Codefy's outputs
/// bit for bit, except after a Conv2d, which Codefy computes channels-last on
/// the CPU and the exports in the usual layout (up to 1.5e-7 on the CNNs
/// below; batch statistics taken over such a channels-last activation, a
/// BatchNorm2d without running statistics, came to 7.7e-7).
constexpr double kExportTolerance = 1e-6;

/// One model to export: its spec and its fixed inputs at a batch size.
struct ExportCase {
  std::string name;
  json spec;
  std::function<Tensor(int64_t batch)> input;
};

/// The SequentialModel spec of an example graph shipped in examples/.
json example_layer_spec(const std::string& example) {
  const json graph = codefy::testing::read_json_file(fs::path(CODEFY_SOURCE_DIR) / "examples" / example / "graph.json");
  for (const auto& node : graph.at("nodes"))
    if (node.at("type") == "SequentialModel") {
      const json& layers = node.at("data").at("params").at("layers");
      return layers.is_string() ? json::parse(layers.get<std::string>()) : layers;
    }
  throw std::runtime_error("no SequentialModel in examples/" + example);
}

std::function<Tensor(int64_t)> export_randn(std::vector<int64_t> sizes_after_batch) {
  return [sizes_after_batch](int64_t batch) {
    torch::manual_seed(1000 + batch);
    std::vector<int64_t> sizes{batch};
    sizes.insert(sizes.end(), sizes_after_batch.begin(), sizes_after_batch.end());
    return torch::randn(sizes);
  };
}

ExportCase mlp_case() {
  // Every activation, LayerNorm, Dropout and BatchNorm1d (eval: running statistics).
  const std::vector<std::pair<std::string, json>> layers = {
      {"Linear", {{"in_features", 16}, {"out_features", 32}}},
      {"GELU", {{"approximate", "tanh"}}},
      {"Linear", {{"in_features", 32}, {"out_features", 32}, {"bias", false}}},
      {"LeakyReLU", {{"negative_slope", 0.2}}},
      {"LayerNorm", {{"normalized_shape", 32}}},
      {"ELU", {{"alpha", 0.5}}},
      {"ReLU", json::object()},
      {"SiLU", json::object()},
      {"Mish", json::object()},
      {"SELU", json::object()},
      {"PReLU", {{"num_parameters", 32}}},
      {"Hardswish", json::object()},
      {"Dropout", {{"p", 0.3}}},
      {"BatchNorm1d", {{"num_features", 32}}},
      {"GELU", json::object()},
      {"Sigmoid", json::object()},
      {"Tanh", json::object()},
      {"Linear", {{"in_features", 32}, {"out_features", 5}}},
      {"Softmax", {{"dim", -1}}},
  };
  Spec spec;
  std::vector<std::string> ids;
  for (size_t i = 0; i < layers.size(); ++i) {
    ids.push_back("l" + std::to_string(i));
    spec.layer(ids.back(), layers[i].first, layers[i].second);
  }
  return {"mlp", spec.chain(ids).build(), export_randn({16})};
}

ExportCase fashion_mnist_case() {
  return {"fashion_mnist_cnn", example_layer_spec("fashion-mnist-925"), export_randn({1, 28, 28})};
}

ExportCase merges_case() {
  // Every merge, the shape layers, the other convolutions, pools and norms,
  // and ids that are not Python identifiers.
  const json spec =
      Spec()
          .layer("conv-a", "Conv2d",
                 {{"in_channels", 3}, {"out_channels", 4}, {"kernel_size", 3}, {"padding", "same"}, {"dilation", 2}})
          .layer("1x1", "Conv2d", {{"in_channels", 3}, {"out_channels", 4}, {"kernel_size", 1}})
          .layer("class", "Add")
          .layer("refl", "Conv2d",
                 {{"in_channels", 4},
                  {"out_channels", 4},
                  {"kernel_size", 3},
                  {"padding", 1},
                  {"padding_mode", "reflect"}})
          .layer("cat", "Concat", {{"dim", 1}})
          .layer("gn", "GroupNorm", {{"num_groups", 2}, {"num_channels", 8}})
          .layer("inorm", "InstanceNorm2d", {{"num_features", 8}, {"affine", true}})
          .layer("up", "ConvTranspose2d", {{"in_channels", 8}, {"out_channels", 4}, {"kernel_size", 2}, {"stride", 2}})
          .layer("mp", "MaxPool2d", {{"kernel_size", 2}})
          .layer("avg", "AvgPool2d", {{"kernel_size", 3}, {"stride", 1}, {"padding", 1}, {"count_include_pad", false}})
          .layer("mul", "Multiply")
          .layer("sub", "Subtract")
          .layer("mean", "Mean")
          .layer("stack", "Stack", {{"dim", 1}})
          .layer("rs", "Reshape", {{"shape", "8,8,8"}})
          .layer("pool", "AdaptiveAvgPool2d", {{"output_size", json::array({2, nullptr})}})
          .layer("perm", "Permute", {{"dims", "0,2,3,1"}})
          .layer("sel", "SelectIndex", {{"dim", 1}, {"index", -1}})
          .layer("flat", "Flatten")
          .layer("head", "Linear", {{"in_features", 64}, {"out_features", 3}})
          .edge("in", "conv-a")
          .edge("in", "1x1")
          .edge("conv-a", "class")
          .edge("1x1", "class")
          .edge("class", "refl")
          .edge("class", "cat")
          .edge("refl", "cat")
          .edge("cat", "gn")
          .edge("gn", "inorm")
          .edge("inorm", "up")
          .edge("up", "mp")
          .edge("mp", "avg")
          .edge("avg", "mul")
          .edge("class", "mul")
          .edge("mul", "sub")
          .edge("avg", "sub")
          .edge("sub", "mean")
          .edge("class", "mean")
          .edge("mean", "stack")
          .edge("avg", "stack")
          .edge("stack", "rs")
          .edge("rs", "pool")
          .edge("pool", "perm")
          .edge("perm", "sel")
          .edge("sel", "flat")
          .edge("flat", "head")
          .edge("head", "out")
          .build();
  return {"merges", spec, export_randn({3, 8, 8})};
}

ExportCase layer_options_case() {
  // Options off their defaults: padding modes, groups, no bias, overlapping
  // padded pooling (not Codefy's window loops), running statistics in
  // InstanceNorm, a divisor, a 1-D "same", batch statistics in eval.
  const json spec =
      Spec()
          .layer("c1", "Conv2d",
                 {{"in_channels", 2},
                  {"out_channels", 4},
                  {"kernel_size", 3},
                  {"padding", 1},
                  {"padding_mode", "circular"},
                  {"bias", false}})
          .layer("c2", "Conv2d",
                 {{"in_channels", 4},
                  {"out_channels", 4},
                  {"kernel_size", 3},
                  {"padding", "valid"},
                  {"padding_mode", "replicate"},
                  {"groups", 2}})
          .layer("mp", "MaxPool2d", {{"kernel_size", 3}, {"stride", 2}, {"padding", 1}, {"ceil_mode", true}})
          .layer("inorm", "InstanceNorm2d", {{"num_features", 4}, {"track_running_stats", true}})
          .layer("ap", "AvgPool2d", {{"kernel_size", 2}, {"stride", 1}, {"divisor_override", 3}})
          .layer("ln", "LayerNorm", {{"normalized_shape", json::array({4, 3, 3})}, {"elementwise_affine", false}})
          .layer("rows", "Flatten", {{"start_dim", 2}})
          .layer("c3", "Conv1d",
                 {{"in_channels", 4},
                  {"out_channels", 3},
                  {"kernel_size", 3},
                  {"padding", "same"},
                  {"padding_mode", "reflect"}})
          .layer("bn", "BatchNorm1d", {{"num_features", 3}, {"affine", false}, {"track_running_stats", false}})
          .layer("flat", "Flatten")
          .layer("head", "Linear", {{"in_features", 27}, {"out_features", 2}, {"bias", false}})
          .chain({"c1", "c2", "mp", "inorm", "ap", "ln", "rows", "c3", "bn", "flat", "head"})
          .build();
  return {"layer_options", spec, export_randn({2, 9, 9})};
}

ExportCase recurrent_case() {
  const json spec = Spec()
                        .layer("lstm", "LSTM",
                               {{"input_size", 6},
                                {"hidden_size", 8},
                                {"num_layers", 2},
                                {"batch_first", true},
                                {"bidirectional", true},
                                {"proj_size", 4}})
                        .layer("gru", "GRU", {{"input_size", 8}, {"hidden_size", 6}, {"batch_first", true}})
                        .layer("seq_first", "LSTM", {{"input_size", 6}, {"hidden_size", 5}})
                        .layer("last", "SelectIndex", {{"dim", 1}, {"index", -1}})
                        .layer("head", "Linear", {{"in_features", 5}, {"out_features", 2}})
                        .chain({"lstm", "gru", "seq_first", "last", "head"})
                        .build();
  return {"recurrent", spec, export_randn({5, 6})};
}

ExportCase tcn_transformer_case() {
  return {"tcn_transformer", example_layer_spec("forecast-tcn-transformer"), export_randn({12, 32})};
}

ExportCase attention_case() {
  // head_dim 8: the attention's scaling 1/sqrt(8) is not a power of two.
  const json spec =
      Spec()
          .layer("dec", "TransformerDecoder",
                 {{"d_model", 24}, {"nhead", 3}, {"num_layers", 2}, {"dim_feedforward", 40}, {"activation", "gelu"}})
          .layer("mha", "MultiHeadAttention", {{"embed_dim", 24}, {"num_heads", 3}})
          .layer("enc", "TransformerEncoder",
                 {{"d_model", 24}, {"nhead", 2}, {"num_layers", 1}, {"dim_feedforward", 32}, {"activation", "gelu"}})
          .layer("skip", "Add")
          .edge("in", "dec")
          .edge("dec", "mha")
          .edge("mha", "enc")
          .edge("enc", "skip")
          .edge("in", "skip")
          .edge("skip", "out")
          .build();
  return {"attention", spec, export_randn({6, 24})};
}

ExportCase embedding_case() {
  const json spec = Spec()
                        .layer("emb", "Embedding", {{"num_embeddings", 20}, {"embedding_dim", 8}, {"padding_idx", 0}})
                        .layer("gru", "GRU", {{"input_size", 8}, {"hidden_size", 8}, {"batch_first", true}})
                        .layer("last", "SelectIndex", {{"dim", 1}, {"index", -1}})
                        .layer("head", "Linear", {{"in_features", 8}, {"out_features", 3}})
                        .chain({"emb", "gru", "last", "head"})
                        .build();
  return {"embedding", spec, [](int64_t batch) {
            torch::manual_seed(2000 + batch);
            return torch::randint(0, 20, {batch, 7}, torch::kLong);
          }};
}

std::vector<ExportCase> export_cases() {
  return {mlp_case(),       fashion_mnist_case(), merges_case(),    layer_options_case(),
          recurrent_case(), attention_case(),     embedding_case(), tcn_transformer_case()};
}

/// Codefy's model of a case in eval mode, its weights drawn from a fixed seed
/// and every 1-D parameter and the running statistics moved off their
/// initial values, so that BatchNorm in eval mode and the norms' affine
/// parameters count.
train::ModelPtr export_model(const ExportCase& c) {
  torch::manual_seed(31);
  train::ModelPtr model = build_sequential_model(c.spec);
  torch::NoGradGuard no_grad;
  for (auto& p : model->named_parameters())
    if (p.value().dim() == 1) p.value().add_(torch::rand(p.value().sizes()) * 0.4 - 0.2);
  for (auto& b : model->named_buffers()) {
    const std::string& name = b.key();
    if (name.size() >= 12 && name.compare(name.size() - 12, 12, "running_mean") == 0)
      b.value().copy_(torch::rand(b.value().sizes()) - 0.5);
    else if (name.size() >= 11 && name.compare(name.size() - 11, 11, "running_var") == 0)
      b.value().copy_(torch::rand(b.value().sizes()) + 0.5);
  }
  model->eval();
  return model;
}

Tensor codefy_forward(train::Model& model, const Tensor& x) {
  torch::NoGradGuard no_grad;
  return model.forward(x);
}

double max_difference(const Tensor& a, const Tensor& b) {
  return a.numel() == 0 ? 0.0 : (a - b).abs().max().item<double>();
}

void expect_torchscript_matches_codefy(const ExportCase& c) {
  SCOPED_TRACE(c.name);
  const train::ModelPtr model = export_model(c);
  codefy::testing::TempDir dir("export");
  const fs::path file = dir.path() / "torchscript.pt";
  save_torchscript(c.spec, *model, file);
  torch::jit::ExtraFilesMap extra{{"codefy_layer_spec.json", ""}};
  torch::jit::Module loaded = torch::jit::load(file.string(), c10::nullopt, extra);
  EXPECT_EQ(json::parse(extra.at("codefy_layer_spec.json")), c.spec) << "the spec travels in the archive";
  loaded.eval();
  for (int64_t batch : {1, 7}) {
    const Tensor x = c.input(batch);
    const Tensor want = codefy_forward(*model, x);
    torch::NoGradGuard no_grad;
    const Tensor got = loaded.forward({x}).toTensor();
    ASSERT_EQ(got.sizes(), want.sizes()) << "batch " << batch;
    EXPECT_LE(max_difference(got, want), kExportTolerance) << "batch " << batch;
  }
}

const ExportCase& export_case_named(const std::string& name) {
  static const std::vector<ExportCase> cases = export_cases();
  for (const auto& c : cases)
    if (c.name == name) return c;
  throw std::runtime_error("no export case " + name);
}

TEST(ExportSource, Issue31_TorchScriptOfAnMlpWithEveryActivationMatchesCodefy) {
  expect_torchscript_matches_codefy(export_case_named("mlp"));
}

TEST(ExportSource, Issue31_TorchScriptOfTheFashionMnistCnnWithBatchNormInEvalMatchesCodefy) {
  expect_torchscript_matches_codefy(export_case_named("fashion_mnist_cnn"));
}

TEST(ExportSource, Issue31_TorchScriptOfMergesShapeLayersPoolsAndNormsMatchesCodefy) {
  expect_torchscript_matches_codefy(export_case_named("merges"));
}

TEST(ExportSource, Issue31_TorchScriptOfLayersWithTheirOptionsOffTheDefaultsMatchesCodefy) {
  expect_torchscript_matches_codefy(export_case_named("layer_options"));
}

TEST(ExportSource, Issue31_TorchScriptOfLstmAndGruMatchesCodefy) {
  expect_torchscript_matches_codefy(export_case_named("recurrent"));
}

TEST(ExportSource, Issue31_TorchScriptOfTheTcnTransformerExampleMatchesCodefy) {
  expect_torchscript_matches_codefy(export_case_named("tcn_transformer"));
}

TEST(ExportSource, Issue31_TorchScriptOfDecoderAttentionAndEncoderMatchesCodefy) {
  expect_torchscript_matches_codefy(export_case_named("attention"));
}

TEST(ExportSource, Issue31_TorchScriptOfAnEmbeddingModelMatchesCodefy) {
  expect_torchscript_matches_codefy(export_case_named("embedding"));
}

TEST(ExportSource, Issue31_TorchScriptStateDictHasCodefysNames) {
  const train::ModelPtr model = export_model(export_case_named("tcn_transformer"));
  const torch::jit::Module module = torchscript_module(export_case_named("tcn_transformer").spec, *model);
  std::vector<std::string> names;
  for (const auto& p : module.named_parameters()) names.push_back(p.name);
  for (const auto& b : module.named_buffers()) names.push_back(b.name);
  std::vector<std::string> codefy;
  for (const auto& item : train::state_dict(*model)) codefy.push_back(item.first);
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), std::set<std::string>(codefy.begin(), codefy.end()));
  EXPECT_EQ(names.size(), codefy.size());
}

std::string run_command(const std::string& command, int* exit_code) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot run " + command);
  std::string output;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  const int status = ::pclose(pipe);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return output;
}

TEST(ExportSource, Issue31_PlainPyTorchRunsModelPyWithCodefysWeightsAndLoadsTheTorchScript) {
  // Debian's python3-torch is /usr/bin/python3's (README, Dependencies); the
  // test fails without it: scripts/setup.sh installs it.
  const fs::path python = "/usr/bin/python3";
  ASSERT_TRUE(fs::exists(python)) << python << " is missing: run scripts/setup.sh (python3-torch)";
  codefy::testing::TempDir root("export-python");
  std::string folders;
  for (const ExportCase& c : export_cases()) {
    const train::ModelPtr model = export_model(c);
    const fs::path dir = root.path() / c.name;
    fs::create_directories(dir);
    std::ofstream(dir / "model.py") << pytorch_source(c.spec);
    train::save_weights(dir / "weights.pt", train::state_dict(*model));
    save_torchscript(c.spec, *model, dir / "torchscript.pt");
    train::StateDict cases;
    for (int64_t batch : {1, 7}) {
      const Tensor x = c.input(batch);
      cases.emplace_back("input_" + std::to_string(batch), x);
      cases.emplace_back("output_" + std::to_string(batch), codefy_forward(*model, x));
    }
    train::save_weights(dir / "cases.pt", cases);
    folders += " " + dir.string();
  }
  int exit_code = 0;
  const std::string output = run_command(python.string() + " " + CODEFY_SOURCE_DIR + "/tests/model/export_check.py " +
                                             std::to_string(kExportTolerance) + folders,
                                         &exit_code);
  EXPECT_EQ(exit_code, 0) << output;
  std::cout << output;
  EXPECT_NE(output.find("torch "), std::string::npos) << output;  // it ran Python's torch
}

TEST(ExportSource, Issue31_SourceIsStandalonePlainPyTorch) {
  const std::string source = pytorch_source(export_case_named("tcn_transformer").spec, "Forecaster");
  EXPECT_NE(source.find("\nimport torch\nfrom torch import nn\n"), std::string::npos) << source;
  EXPECT_NE(source.find("class Forecaster(nn.Module):"), std::string::npos) << source;
  EXPECT_NE(source.find("class TransformerEncoderBlock(nn.Module):"), std::string::npos) << source;
  EXPECT_EQ(source.find("LSTMBlock"), std::string::npos) << "only the wrappers it uses";
  EXPECT_EQ(source.find("import codefy"), std::string::npos);
  EXPECT_NE(source.find("b1_add = b1_relu2 + b1_skip"), std::string::npos) << source;
  expect_spec_error([] { pytorch_source(single_layer("ReLU", json::object()), "2fast"); }, "", "", "class name");
  EXPECT_THROW(pytorch_source(single_layer("ReLU", json::object()), "TransformerEncoderBlock"), ExportError);
}

TEST(ExportSource, Issue31_PyTorchSourceLeavesTheGlobalGeneratorAsItWas) {
  torch::manual_seed(5);
  const Tensor before = torch::rand({4});
  torch::manual_seed(5);
  (void)pytorch_source(example_layer_spec("fashion-mnist-925"));
  EXPECT_TRUE(torch::equal(torch::rand({4}), before));
}

TEST(ExportSource, Issue31_EmbeddingWithMaxNormHasNoTorchScriptAndTheErrorNamesTheLayer) {
  const json spec = Spec()
                        .layer("words", "Embedding", {{"num_embeddings", 10}, {"embedding_dim", 4}, {"max_norm", 1.0}})
                        .chain({"words"})
                        .build();
  const train::ModelPtr model = build_sequential_model(spec);
  try {
    torchscript_module(spec, *model);
    ADD_FAILURE() << "expected an ExportError";
  } catch (const ExportError& e) {
    EXPECT_EQ(e.layer_id(), "words");
    EXPECT_EQ(e.layer_type(), "Embedding");
    EXPECT_NE(std::string(e.what()).find("max_norm"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("layer \"words\" (Embedding)"), std::string::npos) << e.what();
  }
  // model.py keeps it: PyTorch's own Embedding renormalises.
  EXPECT_NE(pytorch_source(spec).find("max_norm=1.0"), std::string::npos);
}

TEST(ExportSource, Issue31_PyTorchSourceRefusesASameConvolutionLibTorchPadsTheOtherWay) {
  // LibTorch 1.13 lists a non-zeros "same" padding in dimension order; F.pad
  // reads the last dimension first. Codefy's model (and so its TorchScript)
  // pads height by the width's amounts; PyTorch's nn.Conv2d would not.
  const json spec = single_layer("Conv2d", {{"in_channels", 1},
                                            {"out_channels", 2},
                                            {"kernel_size", json::array({3, 1})},
                                            {"padding", "same"},
                                            {"padding_mode", "circular"}});
  expect_spec_error([&] { pytorch_source(spec); }, "l", "padding", "TorchScript export keeps Codefy's");
  expect_torchscript_matches_codefy({"same_circular", spec, export_randn({1, 5, 4})});
  const json square = single_layer(
      "Conv2d",
      {{"in_channels", 1}, {"out_channels", 2}, {"kernel_size", 3}, {"padding", "same"}, {"padding_mode", "circular"}});
  EXPECT_NE(pytorch_source(square).find("padding=\"same\""), std::string::npos);
}

TEST(ExportSource, Issue31_AMissingOrEmptySpecOrAnUnknownLayerIsAnError) {
  const train::ModelPtr model = build_sequential_model(single_layer("ReLU", json::object()));
  for (const json& spec : {json(), json::object(), json(""), json::parse(R"({"version":2,"nodes":[]})")}) {
    EXPECT_THROW(pytorch_source(spec), LayerSpecError) << spec.dump();
    EXPECT_THROW(torchscript_source(spec, *model), LayerSpecError) << spec.dump();
  }
  const json unknown = single_layer("Teleport", json::object());
  expect_spec_error([&] { pytorch_source(unknown); }, "l", "", "unknown layer type");
  expect_spec_error([&] { torchscript_source(unknown, *model); }, "l", "", "unknown layer type");
}

TEST(ExportSource, Issue31_AModelNotBuiltFromTheSpecIsRefusedNamingTheLayer) {
  const train::ModelPtr relu = build_sequential_model(single_layer("ReLU", json::object()));
  const json linear = single_layer("Linear", {{"in_features", 3}, {"out_features", 2}});
  expect_spec_error([&] { torchscript_source(linear, *relu); }, "l", "", "not built from this spec");
  const json other_id = Spec().layer("m", "ReLU").chain({"m"}).build();
  expect_spec_error([&] { torchscript_source(other_id, *relu); }, "m", "", "not built from this spec");
}

TEST(ExportSource, Issue31_InputStraightToOutputExportsAsIdentity) {
  const json spec = Spec().edge("in", "out").build();
  const train::ModelPtr model = build_sequential_model(spec);
  EXPECT_NE(pytorch_source(spec).find("        return x\n"), std::string::npos);
  const torch::jit::Module module = torchscript_module(spec, *model);
  const Tensor x = torch::randn({2, 3});
  EXPECT_TRUE(torch::equal(torch::jit::Module(module).forward({x}).toTensor(), x));
}

}  // namespace
}  // namespace codefy::model
