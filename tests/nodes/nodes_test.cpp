// Node library end to end through the executor: real data, presets, weight
// files, pictures.
#include "../common/golden_support.h"
#include "../common/test_support.h"
#include "engine/executor.h"
#include "plot/plot.h"
#include "train/serialize.h"
#include "util/text.h"

#include <torch/torch.h>

namespace codefy {
namespace {

using codefy::testing::read_json;
using codefy::testing::run_json;
using codefy::testing::set_param;
using codefy::testing::source_dir;
using codefy::testing::temp_dir;

bool have_fashion_mnist() {
  return std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz");
}

TEST(Nodes, FashionMnistCnnLearnsOnASubset) {
  if (!have_fashion_mnist()) FAIL() << "Debian's dataset-fashion-mnist is missing (scripts/setup.sh installs it)";
  auto g = read_json(source_dir() / "examples/fashion-mnist/graph.json");
  set_param(g, "train_data", "max_samples", 3000);
  set_param(g, "test_data", "max_samples", 1000);
  set_param(g, "train", "epochs", 1);
  codefy::testing::Recorder rec;
  auto r = run_json(g, 0, &rec);
  const double acc = std::get<double>(r.outputs["evaluate"]["accuracy"]);
  EXPECT_GT(acc, 0.6) << "1 epoch on 3000 images should already be far above chance (0.1)";
  EXPECT_EQ(std::get<double>(r.outputs["evaluate"]["total"]), 1000.0);
  const auto& ds = std::get<train::DatasetPtr>(r.outputs["train_data"]["dataset"]);
  EXPECT_EQ(ds->inputs.sizes(), (std::vector<int64_t>{3000, 1, 28, 28}));
  EXPECT_GE(ds->inputs.min().item<float>(), -1.0f);
  EXPECT_LE(ds->inputs.max().item<float>(), 1.0f);
  // Visualize returns a base64 PNG, as CodefyUI does.
  const auto& image = std::get<Image>(r.outputs["plot"]["image"]).base64_png;
  EXPECT_EQ(image.rfind("iVBORw0KGgo", 0), 0u);  // base64 of the PNG signature
}

TEST(Nodes, CodefyUIPipelineExampleRuns) {
  if (!have_fashion_mnist()) FAIL() << "Debian's dataset-fashion-mnist is missing (scripts/setup.sh installs it)";
  const auto dir = source_dir() / "examples/codefyui-pipeline";
  auto g = read_json(dir / "graph.json");
  for (auto& n : g["nodes"])
    if (n["type"] == "preset:Training Pipeline") n["data"]["internalParams"]["dataset"]["max_samples"] = 512;
  codefy::testing::Recorder rec;
  auto r = run_json(g, 0, &rec, dir);
  // The preset's internal nodes ran under CodefyUI's ids.
  ASSERT_TRUE(r.outputs.count("pipeline__train_loop"));
  const auto& losses = std::get<torch::Tensor>(r.outputs["pipeline__train_loop"]["losses"]);
  EXPECT_EQ(losses.numel(), 1);
  ASSERT_EQ(rec.prints.size(), 1u);
  EXPECT_EQ(rec.prints[0].rfind("[Trained LeNet] ", 0), 0u);
  EXPECT_TRUE(r.outputs.count("viz"));
}

class WeightFiles : public ::testing::TestWithParam<std::string> {};

TEST_P(WeightFiles, SaveThenLoadIntoAFreshModelGivesTheSameWeights) {
  const auto dir = temp_dir("weights_" + GetParam());
  auto g = read_json(source_dir() / "examples/toy-mlp/graph.json");
  set_param(g, "train", "epochs", 2);
  g["nodes"].push_back({{"id", "save"},
                        {"type", "ModelSaver"},
                        {"data", {{"params", {{"path", "out/mlp.pt"}, {"format", GetParam()}}}}}});
  g["edges"].push_back({{"source", "train"}, {"sourceHandle", "model"}, {"target", "save"}, {"targetHandle", "model"}});
  auto trained = run_json(g, 1, nullptr, dir);
  const std::string path = std::get<std::string>(trained.outputs["save"]["path"]);
  EXPECT_EQ(path, (dir / (GetParam() == "safetensors" ? "out/mlp.safetensors" : "out/mlp.pt")).string());

  // A second graph: the same architecture, freshly initialised from another seed, loads the file.
  nlohmann::json load = {{"name", "load"}, {"nodes", nlohmann::json::array()}, {"edges", nlohmann::json::array()}};
  for (const auto& n : g["nodes"])
    if (n["id"] == "start" || n["id"] == "mlp") load["nodes"].push_back(n);
  load["nodes"].push_back({{"id", "ld"}, {"type", "ModelLoader"}, {"data", {{"params", {{"path", path}}}}}});
  load["edges"].push_back({{"source", "start"}, {"target", "mlp"}, {"type", "trigger"}});
  load["edges"].push_back({{"source", "mlp"}, {"sourceHandle", "model"}, {"target", "ld"}, {"targetHandle", "model"}});
  auto loaded = run_json(load, 99, nullptr, dir);
  auto a = train::state_dict(*std::get<train::ModelPtr>(trained.outputs["train"]["model"]));
  auto b = train::state_dict(*std::get<train::ModelPtr>(loaded.outputs["ld"]["model"]));
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_TRUE(torch::equal(a[i].second, b[i].second)) << a[i].first;
  }
  EXPECT_EQ(a[0].first, "layers.l1.weight");  // CodefyUI's state_dict names
}

INSTANTIATE_TEST_SUITE_P(Formats, WeightFiles, ::testing::Values("pytorch", "safetensors"));

TEST(Nodes, VisualizeFromTheCliWritesAPng) {
  if (!have_fashion_mnist()) FAIL() << "Debian's dataset-fashion-mnist is missing (scripts/setup.sh installs it)";
  const auto dir = temp_dir("cli_png");
  auto g = read_json(source_dir() / "examples/fashion-mnist/graph.json");
  set_param(g, "train_data", "max_samples", 256);
  set_param(g, "test_data", "max_samples", 256);
  set_param(g, "train", "epochs", 2);
  std::ofstream(dir / "g.json") << g.dump();
  auto r = codefy::testing::run_codefy("run " + (dir / "g.json").string() + " --out " + (dir / "out").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream png(dir / "out/plot.png", std::ios::binary);
  std::string head(8, '\0');
  png.read(head.data(), 8);
  EXPECT_EQ(head, std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_NE(r.output.find("test accuracy"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace codefy

namespace codefy {
namespace {

train::StateDict final_weights(const RunResult& r) {
  return train::state_dict(*std::get<train::ModelPtr>(r.outputs.at("train").at("model")));
}

TEST(Resume, TwoPartsLandOnTheWeightsOfOneUninterruptedRun) {
  // Adam + StepLR + shuffled data + dropout: every piece of state must carry over.
  const auto dir = temp_dir("resume");
  const auto src = source_dir() / "examples/resume";
  auto full = run_json(read_json(src / "full.json"), 4, nullptr, dir);
  auto part1 = run_json(read_json(src / "part1.json"), 4, nullptr, dir);
  ASSERT_TRUE(std::filesystem::exists(dir / "checkpoint.ckpt"));
  codefy::testing::Recorder rec;
  auto part2 = run_json(read_json(src / "part2.json"), 4, &rec, dir);
  auto a = final_weights(full), b = final_weights(part2);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i].second, b[i].second)) << a[i].first;
  const auto& m = std::get<nlohmann::json>(part2.outputs["train"]["metrics"]);
  const auto& mf = std::get<nlohmann::json>(full.outputs["train"]["metrics"]);
  EXPECT_EQ(m["start_epoch"], 2);
  EXPECT_EQ(m["total_steps"], mf["total_steps"]);
  EXPECT_EQ(m["lr_history"].back(), mf["lr_history"].back());
  EXPECT_EQ(std::get<double>(part2.outputs["load"]["epoch"]), 2.0);
  EXPECT_EQ(std::get<torch::Tensor>(part2.outputs["load"]["losses"]).numel(), 2);
  // part1 saves TrainingLoop's optimizer output: the trained Adam, its moments included.
  const auto& trained = std::get<train::OptimizerPtr>(part1.outputs["train"]["optimizer"]);
  EXPECT_EQ(trained, std::get<train::OptimizerPtr>(part1.outputs["optimizer"]["optimizer"]));
  EXPECT_FALSE(trained->optimizer->state().empty());
  // And a resumed run differs from a fresh 2-epoch one: the checkpoint did something.
  auto fresh = run_json(read_json(src / "part1.json"), 4, nullptr, temp_dir("resume_fresh"));
  EXPECT_FALSE(torch::equal(final_weights(fresh)[0].second, b[0].second));
}

TEST(Resume, DamagedOrForeignCheckpointsGiveClearErrors) {
  const auto dir = temp_dir("resume_bad");
  const auto src = source_dir() / "examples/resume";
  run_json(read_json(src / "part1.json"), 1, nullptr, dir);
  std::string bytes;
  {
    std::ifstream in(dir / "checkpoint.ckpt", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    bytes = ss.str();
  }
  const auto part2 = read_json(src / "part2.json");
  auto expect_error = [&](const std::string& content, const std::string& fragment) {
    std::ofstream(dir / "checkpoint.ckpt", std::ios::binary | std::ios::trunc) << content;
    try {
      run_json(part2, 1, nullptr, dir);
      ADD_FAILURE() << "expected an error for: " << fragment;
    } catch (const NodeError& e) {
      EXPECT_EQ(e.node_id(), "load");
      EXPECT_EQ(e.field(), "param \"path\"");
      EXPECT_NE(e.detail().find((dir / "checkpoint.ckpt").string()), std::string::npos) << e.what();
      EXPECT_NE(e.detail().find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error(bytes.substr(0, bytes.size() / 2), "truncated");
  expect_error(bytes.substr(0, 25), "truncated");
  expect_error("PK\x03\x04 a zip, not ours", "not a Codefy checkpoint");
  expect_error("", "not a Codefy checkpoint");
  std::filesystem::remove(dir / "checkpoint.ckpt");
  try {
    run_json(part2, 1, nullptr, dir);
    ADD_FAILURE() << "expected an error for a missing file";
  } catch (const NodeError& e) {
    EXPECT_NE(e.detail().find("not found"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace codefy

namespace codefy {
namespace {

/// What a run of Start -> SequentialModel(layers) fails with, whole.
std::string sequential_model_error_text(const nlohmann::json& layers) {
  const nlohmann::json g = {
      {"name", "seq"},
      {"nodes",
       {{{"id", "start"}, {"type", "Start"}, {"data", {{"params", nlohmann::json::object()}}}},
        {{"id", "m"}, {"type", "SequentialModel"}, {"data", {{"params", {{"layers", layers.dump()}}}}}}}},
      {"edges", {{{"source", "start"}, {"target", "m"}, {"type", "trigger"}}}}};
  try {
    codefy::testing::run_json(g);
  } catch (const graph::ValidationError& e) {  // validation parses the spec before anything runs
    EXPECT_EQ(e.issues().size(), 1u);
    EXPECT_EQ(e.issues().at(0).field, "param \"layers\"");
    return e.issues().at(0).to_string();
  } catch (const NodeError& e) {
    EXPECT_EQ(e.field(), "param \"layers\"");
    return e.what();
  }
  ADD_FAILURE() << "expected a ValidationError or a NodeError";
  return "";
}

TEST(Nodes, SequentialModelSpecErrorsSayTheLayerOnce) {
  const nlohmann::json bad_param = {
      {"version", 2},
      {"nodes",
       {{{"id", "in"}, {"type", "Input"}, {"ports", {{{"id", "p_x"}, {"name", "x"}}}}},
        {{"id", "l1"}, {"type", "Linear"}, {"params", {{"in_features", 4.5}, {"out_features", 3}}}},
        {{"id", "out"}, {"type", "Output"}, {"ports", {{{"id", "p_y"}, {"name", "y"}}}}}}},
      {"edges",
       {{{"id", "e1"}, {"source", "in"}, {"sourceHandle", "p_x"}, {"target", "l1"}},
        {{"id", "e2"}, {"source", "l1"}, {"target", "out"}, {"targetHandle", "p_y"}}}}};
  EXPECT_EQ(sequential_model_error_text(bad_param),
            "graph \"seq\": node m (SequentialModel), param \"layers\": layer \"l1\" (Linear), parameter "
            "\"in_features\": expected a whole number >= 1, got the decimal number 4.5");

  // A problem with no layer to blame reads without an empty "layer :" prefix.
  nlohmann::json no_output = bad_param;
  no_output["nodes"].erase(2);
  EXPECT_EQ(sequential_model_error_text(no_output),
            "graph \"seq\": node m (SequentialModel), param \"layers\": the graph has no Output node; it needs "
            "exactly one, connected from the last layer");
}

TEST(Nodes, VisualizeDrawsValidationLossBesideTrainingLoss) {
  auto g = codefy::testing::read_json(codefy::testing::source_dir() / "examples/toy-mlp/graph.json");
  codefy::testing::set_param(g, "train", "epochs", 6);
  g["nodes"].push_back(
      {{"id", "plot"}, {"type", "Visualize"}, {"data", {{"params", {{"title", "toy-mlp loss per epoch"}}}}}});
  g["edges"].push_back({{"source", "train"}, {"sourceHandle", "losses"}, {"target", "plot"}, {"targetHandle", "data"}});
  auto with_val = g;
  with_val["edges"].push_back(
      {{"source", "train"}, {"sourceHandle", "val_losses"}, {"target", "plot"}, {"targetHandle", "val_losses"}});
  const auto both = std::get<Image>(codefy::testing::run_json(with_val, 3).outputs["plot"]["image"]).base64_png;
  const auto alone = std::get<Image>(codefy::testing::run_json(g, 3).outputs["plot"]["image"]).base64_png;
  EXPECT_EQ(both.rfind("iVBORw0KGgo", 0), 0u);  // base64 of the PNG signature
  EXPECT_NE(both, alone);
  // For a person to look at: two lines over epochs 1..6, with a legend.
  std::ofstream(codefy::testing::temp_dir("visualize") / "train_val_loss.png", std::ios::binary)
      << util::base64_decode(both);
}

TEST(Nodes, VisualizeDrawsTrainingLoopLossesOverEpochsWhenWiredAlone) {
  // The usual CodefyUI wiring: only TrainingLoop.losses into Visualize.data.
  auto g = codefy::testing::read_json(codefy::testing::source_dir() / "examples/toy-mlp/graph.json");
  codefy::testing::set_param(g, "train", "epochs", 3);
  g["nodes"].push_back({{"id", "plot"}, {"type", "Visualize"}, {"data", {{"params", {{"title", "loss"}}}}}});
  g["edges"].push_back({{"source", "train"}, {"sourceHandle", "losses"}, {"target", "plot"}, {"targetHandle", "data"}});
  auto image_with = [&](const std::string& x_axis) {
    auto h = g;
    codefy::testing::set_param(h, "plot", "x_axis", x_axis);
    return std::get<Image>(codefy::testing::run_json(h, 3).outputs["plot"]["image"]).base64_png;
  };
  const std::string automatic = image_with("auto");
  EXPECT_EQ(automatic, image_with("epoch"));
  EXPECT_NE(automatic, image_with("index"));
}

TEST(Nodes, InputFailuresNameThePort) {
  // A model is no data to plot: the error blames Visualize's input "data".
  const nlohmann::json g = {
      {"name", "ports"},
      {"nodes",
       {{{"id", "start"}, {"type", "Start"}},
        {{"id", "m"}, {"type", "SequentialModel"}},
        {{"id", "viz"}, {"type", "Visualize"}}}},
      {"edges",
       {{{"source", "start"}, {"target", "viz"}, {"type", "trigger"}},
        {{"source", "m"}, {"sourceHandle", "model"}, {"target", "viz"}, {"targetHandle", "data"}}}}};
  try {
    codefy::testing::run_json(g);
    FAIL() << "plotting a model was accepted";
  } catch (const NodeError& e) {
    EXPECT_EQ(e.field(), "input \"data\"");
    EXPECT_EQ(std::string(e.what()),
              "graph \"ports\": node viz (Visualize), input \"data\": cannot plot a MODEL; give a tensor or a list of "
              "numbers");
  }
}

}  // namespace
}  // namespace codefy

namespace codefy {
namespace {

TEST(Nodes, PrintWritesSmallTensorsAsPyTorchDoes) {
  EXPECT_EQ(to_display_string(torch::tensor(0.397861f)), "tensor(0.3979)");
  EXPECT_EQ(to_display_string(torch::tensor({1.f, 2.f})), "tensor([1., 2.])");
  EXPECT_EQ(to_display_string(torch::tensor({1.5f, -2.f})), "tensor([1.5000, -2.0000])");
  EXPECT_EQ(to_display_string(torch::arange(1, 5, torch::kInt64).reshape({2, 2})), "tensor([[1, 2],\n        [3, 4]])");
  EXPECT_EQ(to_display_string(torch::tensor({true, false})), "tensor([True, False])");
  EXPECT_EQ(to_display_string(torch::tensor({0.5}, torch::kFloat64)), "tensor([0.5000], dtype=torch.float64)");
  EXPECT_EQ(to_display_string(torch::zeros({30})), "tensor of shape [30], Float");
}

}  // namespace
}  // namespace codefy

namespace codefy {
namespace {

TEST(Nodes, TheBetterFashionMnistExampleTrainsOnAugmentedImagesWithAOneCycleSchedule) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    FAIL() << "Debian's dataset-fashion-mnist is missing (scripts/setup.sh installs it)";
  auto g = testing::read_json(testing::source_dir() / "examples/fashion-mnist-925/graph.json");
  testing::set_param(g, "train_data", "max_samples", 2000);
  testing::set_param(g, "test_data", "max_samples", 500);
  testing::set_param(g, "train", "epochs", 1);
  auto r = testing::run_json(g, 0);
  EXPECT_GT(std::get<double>(r.outputs["evaluate"]["accuracy"]), 0.5) << "far above chance (0.1) after one short epoch";
  const auto& train = std::get<train::DatasetPtr>(r.outputs["train_data"]["dataset"]);
  ASSERT_NE(train->augment, nullptr) << "the training images are cropped and flipped at random";
  EXPECT_EQ(std::get<train::DatasetPtr>(r.outputs["test_data"]["dataset"])->augment, nullptr)
      << "the test images are only normalized, once";
  const auto m = std::get<nlohmann::json>(r.outputs["train"]["metrics"]);
  EXPECT_EQ(m["scheduler_state"]["type"], "OneCycleLR");
  EXPECT_EQ(m["scheduler_state"]["total_steps"], 16) << "one epoch of 2000 / 128 batches";
}

}  // namespace
}  // namespace codefy

namespace codefy {
namespace {

TEST(Nodes, DataLoaderTakesCodefyUIsLoaderParams) {
  train::SyntheticOptions so;
  so.num_samples = 20;
  auto data = std::make_shared<const train::Dataset>(train::make_synthetic(so));
  const ValueMap out = testing::run_node(
      "DataLoader", {{"num_workers", 2}, {"pin_memory", true}, {"prefetch_factor", 3}}, {{"dataset", data}});
  const auto& loader = std::get<train::DataLoaderPtr>(out.at("dataloader"));
  EXPECT_TRUE(loader->options().pin_memory);
  EXPECT_EQ(loader->options().prefetch_factor, 3);
  try {
    testing::run_node("DataLoader", {{"persistent_workers", true}}, {{"dataset", data}});
    FAIL() << "persistent_workers without workers was accepted";
  } catch (const NodeFailure& e) {
    EXPECT_EQ(e.field(), "param \"persistent_workers\"");
    EXPECT_NE(std::string(e.what()).find("num_workers > 0"), std::string::npos) << e.what();
  }
}

}  // namespace
// #28: an image is a value of its own type; text that happens to begin as a
// base64 PNG does is text, and a verbose node's steps are known by one helper.
TEST(Nodes, AnImageIsItsOwnTypeNotTextThatLooksLikeOne) {
  const ValueMap text_only = {{"caption", std::string("iVBORw0KGgoAAAANSUhEUg")}};
  EXPECT_FALSE(find_image(text_only).has_value());
  const ValueMap drawn = {{"caption", std::string("hello")}, {"image", Image{"AAAA"}}};
  EXPECT_EQ(find_image(drawn), std::optional<std::string>("AAAA"));
  EXPECT_EQ(summarize(Value(Image{"AAAA"})), summarize(Value(std::string("AAAA")))) << "the wire shape stays";
  EXPECT_EQ(std::string(value_kind(Value(Image{"AAAA"}))), "IMAGE");
  EXPECT_TRUE(is_step_port(step_port(2, "meta")));
  EXPECT_EQ(step_port(2, "meta"), "__step__2__meta");
  EXPECT_FALSE(is_step_port("__meta"));
  EXPECT_FALSE(summarize(ValueMap{{step_port(0, "x"), 1.0}, {"y", 2.0}}).contains(step_port(0, "x")));
}

}  // namespace codefy
