// `codefy export` (issue #31): a trained SequentialModel of a graph out as
// TorchScript that LibTorch loads back and computes the same outputs with,
// and as model.py beside a weights.pt that holds the same tensors; wrong
// input is an error naming what is wrong.
#include "../common/test_support.h"
#include "model/sequential_model.h"
#include "train/serialize.h"
#include "train/state_dict.h"

#include <torch/script.h>

#include <fstream>
#include <iterator>

namespace codefy {
namespace {

namespace fs = std::filesystem;
using testing::run_codefy;

fs::path toy_graph() { return testing::source_dir() / "examples/toy-mlp/graph.json"; }

/// The toy example's model with fresh weights, saved to `weights`; returned to compare with.
train::ModelPtr toy_model(const fs::path& weights) {
  const nlohmann::json g = testing::read_json(toy_graph());
  nlohmann::json spec;
  for (const auto& n : g["nodes"])
    if (n["type"] == "SequentialModel") spec = n["data"]["params"]["layers"];
  torch::manual_seed(7);
  auto model = model::build_sequential_model(spec);
  train::save_weights(weights, train::state_dict(*model));
  model->eval();
  return model;
}

TEST(Export, Issue31_TheGraphsTrainedModelLeavesAsTorchScriptThatComputesTheSame) {
  const fs::path dir = testing::temp_dir("export-torchscript");
  auto model = toy_model(dir / "w.safetensors");
  const auto c = run_codefy("export --graph " + toy_graph().string() + " --weights " +
                            (dir / "w.safetensors").string() + " --format torchscript --out " + (dir / "out").string());
  ASSERT_EQ(c.exit_code, 0) << c.output;
  torch::jit::Module loaded = torch::jit::load((dir / "out" / "model.torchscript.pt").string());
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::randn({7, model->parameters().front().size(1)});
  const torch::Tensor want = model->forward(x);
  const torch::Tensor got = loaded.forward({x}).toTensor();
  EXPECT_TRUE(torch::allclose(got, want, 1e-6, 1e-6)) << (got - want).abs().max().item<double>();
}

TEST(Export, Issue31_PyTorchSourceIsWrittenBesideAWeightsFileWithTheSameTensors) {
  const fs::path dir = testing::temp_dir("export-pytorch");
  auto model = toy_model(dir / "w.pt");
  const auto c = run_codefy("export --graph " + toy_graph().string() + " --weights " + (dir / "w.pt").string() +
                            " --format pytorch --out " + (dir / "out").string() + " --json");
  ASSERT_EQ(c.exit_code, 0) << c.output;
  std::ifstream in(dir / "out" / "model.py");
  const std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(source.find("class Model(nn.Module)"), std::string::npos) << source.substr(0, 400);
  const train::StateDict saved = train::load_weights(dir / "out" / "weights.pt");
  const train::StateDict original = train::state_dict(*model);
  ASSERT_EQ(saved.size(), original.size());
  for (size_t i = 0; i < saved.size(); ++i) {
    EXPECT_EQ(saved[i].first, original[i].first);
    EXPECT_TRUE(torch::equal(saved[i].second, original[i].second)) << saved[i].first;
  }
}

TEST(Export, Issue31_WrongInputIsAnErrorNamingWhatIsWrong) {
  const fs::path dir = testing::temp_dir("export-errors");
  toy_model(dir / "w.pt");
  const std::string weights = " --weights " + (dir / "w.pt").string() + " --out " + (dir / "out").string();
  auto c = run_codefy("export --graph " + toy_graph().string() + weights + " --format onnx");
  EXPECT_NE(c.exit_code, 0);
  EXPECT_NE(c.output.find("expected pytorch or torchscript"), std::string::npos) << c.output;
  c = run_codefy("export --graph " + toy_graph().string() + weights + " --format pytorch --node nope");
  EXPECT_NE(c.exit_code, 0);
  EXPECT_NE(c.output.find("no SequentialModel node with id \"nope\""), std::string::npos) << c.output;
  c = run_codefy("export --graph " + toy_graph().string() + " --weights " + (dir / "missing.pt").string() + " --out " +
                 (dir / "out").string() + " --format pytorch");
  EXPECT_NE(c.exit_code, 0);
  EXPECT_NE(c.output.find("missing.pt"), std::string::npos) << c.output;
  // Weights of another model: the names or shapes do not fit the spec.
  train::save_weights(dir / "other.pt", {{"layers.x.weight", torch::zeros({2, 2})}});
  c = run_codefy("export --graph " + toy_graph().string() + " --weights " + (dir / "other.pt").string() + " --out " +
                 (dir / "out").string() + " --format torchscript");
  EXPECT_NE(c.exit_code, 0);
  EXPECT_NE(c.output.find("layers.x.weight"), std::string::npos) << c.output;
  EXPECT_FALSE(fs::exists(dir / "out" / "model.torchscript.pt"));
}

}  // namespace
}  // namespace codefy
