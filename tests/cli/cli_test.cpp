// The codefy binary end to end: bad graphs give specific messages and exit
// codes (never a crash); examples run; nodes/devices print.
#include "../common/test_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <regex>

namespace codefy {
namespace {

using codefy::testing::run_codefy;
using codefy::testing::temp_dir;
using codefy::testing::write_json_file;

std::string write_graph(const std::filesystem::path& dir, const std::string& name, const std::string& text) {
  auto p = dir / (name + ".json");
  std::ofstream(p) << text;
  return p.string();
}

struct BadGraph {
  const char* name;
  const char* text;     ///< the graph file's contents
  int exit_code;        ///< 2 invalid graph, 3 runtime error
  const char* expect1;  ///< fragments the message must contain (node id, parameter, problem)
  const char* expect2;
};

// A valid skeleton: Start → SequentialModel; data from a ToyDataset. Cases vary one thing.
#define HEAD R"({"name":"bad","nodes":[{"id":"s","type":"Start"},)"
#define MLP \
  R"({"id":"m","type":"SequentialModel","data":{"params":{"layers":"{\"version\":2,\"nodes\":[{\"id\":\"in\",\"type\":\"Input\",\"ports\":[{\"id\":\"p\",\"name\":\"x\"}]},{\"id\":\"l\",\"type\":\"Linear\",\"params\":{\"in_features\":2,\"out_features\":2}},{\"id\":\"out\",\"type\":\"Output\",\"ports\":[{\"id\":\"q\",\"name\":\"y\"}]}],\"edges\":[{\"source\":\"in\",\"sourceHandle\":\"p\",\"target\":\"l\"},{\"source\":\"l\",\"target\":\"out\",\"targetHandle\":\"q\"}]}"}}})"
#define TRIG_M R"({"source":"s","target":"m","type":"trigger"})"
#define TRAIN_NODES(loader_params, loop_params)                                \
  R"({"id":"d","type":"ToyDataset","data":{"params":{"n_samples":64}}},)"      \
  R"({"id":"dl","type":"DataLoader","data":{"params":)" loader_params R"(}},)" \
  R"({"id":"loss","type":"Loss"},{"id":"opt","type":"Optimizer"},)"            \
  R"({"id":"t","type":"TrainingLoop","data":{"params":)" loop_params R"(}})"
#define TRAIN_EDGES                                                                          \
  R"({"source":"d","sourceHandle":"dataset","target":"dl","targetHandle":"dataset"},)"       \
  R"({"source":"m","sourceHandle":"model","target":"opt","targetHandle":"model"},)"          \
  R"({"source":"m","sourceHandle":"model","target":"t","targetHandle":"model"},)"            \
  R"({"source":"dl","sourceHandle":"dataloader","target":"t","targetHandle":"dataloader"},)" \
  R"({"source":"opt","sourceHandle":"optimizer","target":"t","targetHandle":"optimizer"},)"  \
  R"({"source":"loss","sourceHandle":"loss_fn","target":"t","targetHandle":"loss_fn"})"
#define OK_GRAPH(loader_params, loop_params) \
  HEAD MLP "," TRAIN_NODES(loader_params, loop_params) R"(],"edges":[)" TRIG_M "," TRAIN_EDGES "]}"

const BadGraph kBadGraphs[] = {
    {"malformed_json", R"({"name":"bad","nodes":[)", 2, "not valid JSON", "bad_malformed_json.json"},
    {"not_an_object", "[1,2,3]", 2, "must be a JSON object", ""},
    {"nodes_not_array", R"({"name":"bad","nodes":{}})", 2, "\"nodes\" must be an array", ""},
    {"node_without_type", R"({"name":"bad","nodes":[{"id":"x"}]})", 2, "(id x) has no \"type\"", ""},
    {"duplicate_ids", R"({"name":"bad","nodes":[{"id":"x","type":"Start"},{"id":"x","type":"Start"}]})", 2,
     "two nodes have the id \"x\"", ""},
    {"no_start", R"({"name":"bad","nodes":[{"id":"d","type":"ToyDataset"}],"edges":[]})", 2, "no Start node", ""},
    {"unknown_node_type", HEAD R"({"id":"w","type":"Wizard"}],"edges":[{"source":"s","target":"w","type":"trigger"}]})",
     2, "node w (Wizard)", "unknown node type \"Wizard\""},
    {"edge_to_missing_node",
     HEAD MLP R"(],"edges":[)" TRIG_M
              R"(,{"id":"e7","source":"m","sourceHandle":"model","target":"ghost","targetHandle":"x"}]})",
     2, "edge e7", "target node \"ghost\" does not exist"},
    {"type_mismatch",
     HEAD MLP ","
              R"({"id":"dl","type":"DataLoader"}],"edges":[)" TRIG_M
              R"(,{"id":"e1","source":"m","sourceHandle":"model","target":"dl","targetHandle":"dataset"}]})",
     2, "node dl (DataLoader), input \"dataset\"", "type mismatch: DATASET expected"},
    {"missing_required_input",
     HEAD MLP ","
              R"({"id":"opt","type":"Optimizer"},{"id":"t","type":"TrainingLoop"}],"edges":[)" TRIG_M
              R"(,{"source":"m","sourceHandle":"model","target":"t","targetHandle":"model"}]})",
     2, "node t (TrainingLoop), input \"dataloader\"", "required input is not connected"},
    {"param_wrong_type", OK_GRAPH(R"({"batch_size":"big"})", "{}"), 2, "node dl (DataLoader), param \"batch_size\"",
     "expected an integer, got \"big\""},
    {"param_below_min", OK_GRAPH(R"({"batch_size":0})", "{}"), 2, "node dl (DataLoader), param \"batch_size\"",
     "below the minimum 1"},
    {"param_not_an_option", OK_GRAPH("{}", R"({"precision":"fp8"})"), 2, "node t (TrainingLoop), param \"precision\"",
     "\"fp8\" is not one of the options"},
    {"bool_param_as_string", OK_GRAPH(R"({"shuffle":"true"})", "{}"), 2, "node dl (DataLoader), param \"shuffle\"",
     "expected true or false"},
    {"float_param_as_string", OK_GRAPH("{}", R"({"grad_clip_norm":"1.0"})"), 2,
     "node t (TrainingLoop), param \"grad_clip_norm\"", "expected a number"},
    {"epochs_zero", OK_GRAPH("{}", R"({"epochs":0})"), 2, "node t (TrainingLoop), param \"epochs\"",
     "below the minimum 1"},
    {"cycle",
     HEAD
     R"({"id":"p1","type":"Print"},{"id":"p2","type":"Print"}],"edges":[{"source":"s","target":"p1","type":"trigger"},)"
     R"({"source":"p1","sourceHandle":"value","target":"p2","targetHandle":"value"},{"source":"p2","sourceHandle":"value","target":"p1","targetHandle":"value"}]})",
     2, "node p1 (Print)", "part of a cycle"},
    {"bad_layer_spec",
     HEAD
     R"({"id":"m","type":"SequentialModel","data":{"params":{"layers":"{\"version\":2,\"nodes\":[{\"id\":\"in\",\"type\":\"Input\",\"ports\":[{\"id\":\"p\",\"name\":\"x\"}]},{\"id\":\"l\",\"type\":\"Linear\",\"params\":{\"out_features\":2}},{\"id\":\"out\",\"type\":\"Output\",\"ports\":[{\"id\":\"q\",\"name\":\"y\"}]}],\"edges\":[{\"source\":\"in\",\"sourceHandle\":\"p\",\"target\":\"l\"},{\"source\":\"l\",\"target\":\"out\",\"targetHandle\":\"q\"}]}"}}}],"edges":[)" TRIG_M
     "]}",
     3, "node m (SequentialModel), param \"layers\"", "in_features"},
    {"unknown_layer_type",
     HEAD
     R"({"id":"m","type":"SequentialModel","data":{"params":{"layers":"{\"version\":2,\"nodes\":[{\"id\":\"in\",\"type\":\"Input\",\"ports\":[{\"id\":\"p\",\"name\":\"x\"}]},{\"id\":\"z\",\"type\":\"Teleport\"},{\"id\":\"out\",\"type\":\"Output\",\"ports\":[{\"id\":\"q\",\"name\":\"y\"}]}],\"edges\":[{\"source\":\"in\",\"sourceHandle\":\"p\",\"target\":\"z\"},{\"source\":\"z\",\"target\":\"out\",\"targetHandle\":\"q\"}]}"}}}],"edges":[)" TRIG_M
     "]}",
     2, "node m (SequentialModel), param \"layers\"", "Teleport"},  // validation parses the spec
    {"missing_csv_file",
     HEAD
     R"({"id":"c","type":"CSVDataset","data":{"params":{"path":"nowhere.csv"}}}],"edges":[{"source":"s","target":"c","type":"trigger"}]})",
     3, "node c (CSVDataset), param \"path\"", "nowhere.csv"},
    {"missing_mnist_files",
     HEAD
     R"({"id":"c","type":"Dataset","data":{"params":{"name":"MNIST","data_dir":"no-such-dir"}}}],"edges":[{"source":"s","target":"c","type":"trigger"}]})",
     3, "node c (Dataset), param \"data_dir\"", "no-such-dir"},
    {"missing_weights_file",
     HEAD MLP R"(,{"id":"ld","type":"ModelLoader","data":{"params":{"path":"none.pt"}}}],"edges":[)" TRIG_M
              R"(,{"source":"m","sourceHandle":"model","target":"ld","targetHandle":"model"}]})",
     3, "node ld (ModelLoader), param \"path\"", "none.pt"},
    // `run` meets it in training; `validate` finds it first (engine/codefyui_shapes_test.cpp).
    {"shape_mismatch_at_runtime",
     HEAD MLP
     ","
     R"({"id":"d","type":"ToyDataset","data":{"params":{"n_samples":64,"n_features":3}}},)"
     R"({"id":"dl","type":"DataLoader"},{"id":"loss","type":"Loss"},{"id":"opt","type":"Optimizer"},{"id":"t","type":"TrainingLoop"}],"edges":[)" TRIG_M
     "," TRAIN_EDGES "]}",
     3, "node t (TrainingLoop)", "mat1 and mat2 shapes cannot be multiplied"},
};

void PrintTo(const BadGraph& c, std::ostream* os) { *os << c.name; }

class BadGraphCli : public ::testing::TestWithParam<BadGraph> {};

TEST_P(BadGraphCli, SpecificMessageAndExitCode) {
  const BadGraph& c = GetParam();
  const auto dir = temp_dir("cli");
  const auto path = write_graph(dir, std::string("bad_") + c.name, c.text);
  const auto before = std::filesystem::last_write_time(path);
  auto r = run_codefy("run " + path + " --threads 1");
  EXPECT_EQ(r.exit_code, c.exit_code) << r.output;
  EXPECT_NE(r.output.find(c.expect1), std::string::npos) << "missing \"" << c.expect1 << "\" in:\n" << r.output;
  EXPECT_NE(r.output.find(c.expect2), std::string::npos) << "missing \"" << c.expect2 << "\" in:\n" << r.output;
  EXPECT_EQ(r.output.find("terminate called"), std::string::npos) << r.output;
  // The graph file is left as it was.
  EXPECT_EQ(std::filesystem::last_write_time(path), before);
  if (c.exit_code == 2) {
    auto v = run_codefy("validate " + path);
    EXPECT_EQ(v.exit_code, 2) << v.output;
    EXPECT_NE(v.output.find(c.expect2), std::string::npos) << v.output;
  }
}

INSTANTIATE_TEST_SUITE_P(All, BadGraphCli, ::testing::ValuesIn(kBadGraphs),
                         [](const ::testing::TestParamInfo<BadGraph>& info) { return std::string(info.param.name); });

TEST(Cli, MissingOutputPortIsNamed) {
  const auto dir = temp_dir("cli_port");
  const auto path = write_graph(
      dir, "g",
      HEAD MLP R"(,{"id":"p","type":"Print"}],"edges":[)" TRIG_M
               R"(,{"id":"e5","source":"m","sourceHandle":"weights","target":"p","targetHandle":"value"}]})");
  auto r = run_codefy("validate " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("node m (SequentialModel), output \"weights\""), std::string::npos) << r.output;
}

TEST(Cli, RunJsonPrintsOneEventPerLine) {
  const auto dir = temp_dir("cli_json");
  const auto path = write_graph(dir, "ok", OK_GRAPH("{}", R"({"epochs":2})"));
  auto r = run_codefy("run " + path + " --json --seed 3 --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream lines(r.output);
  std::string line, last_event;
  int n = 0, epochs = 0;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line);  // every line is JSON
    last_event = j["event"];
    if (j["event"] == "progress" && j["data"]["event"] == "epoch") ++epochs;
    ++n;
  }
  EXPECT_EQ(epochs, 2);
  EXPECT_EQ(last_event, "execution_complete");
}

/// The TrainingLoop's config event of a --json run's output.
nlohmann::json config_of(const std::string& output) {
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("event", "") == "progress" && j["data"].value("event", "") == "config")
      return j["data"]["config"];
  }
  return nullptr;
}

// A small model trains on one intra-op thread unless --threads says otherwise;
// a large one on every usable CPU; the config says which and why.
TEST(Cli, TheThreadCountFollowsTheModelsSizeUnlessForced) {
  const auto dir = temp_dir("cli_threads");
  const auto small = write_graph(dir, "small", OK_GRAPH("{}", R"({"epochs":1})"));
  auto r = run_codefy("run " + small + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json c = config_of(r.output);
  EXPECT_EQ(c["threads"], 1) << c.dump();
  EXPECT_NE(c.value("threads_reason", "").find("1 thread for"), std::string::npos) << c.dump();

  r = run_codefy("run " + small + " --json --threads 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  c = config_of(r.output);
  EXPECT_EQ(c["threads"], 2) << c.dump();
  EXPECT_FALSE(c.contains("threads_reason")) << "a forced count is not explained as chosen";

  // 784-2048-10 on batches of 64: 1.04e8 multiply-adds per forward batch.
  nlohmann::json g = testing::mlp_training_graph(
      "large", 784, 2048, 10, {{"n_samples", 64}, {"n_features", 784}, {"n_classes", 10}}, {{"batch_size", 64}},
      {{"type", "SGD"}, {"lr", 0.01}}, {{"epochs", 1}, {"device", "cpu"}});
  const auto large = write_graph(dir, "large", g.dump());
  r = run_codefy("run " + large + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  c = config_of(r.output);
  EXPECT_EQ(c["threads"], device::usable_cpus()) << c.dump();
  EXPECT_NE(c.value("threads_reason", "").find("1e+08 multiply-adds per forward batch"), std::string::npos) << c.dump();
}

/// Fashion-MNIST (512 samples) through a crop + flip + normalize chain into a
/// linear classifier; `workers` DataLoader threads; `augment` false: no chain.
nlohmann::json augmented_fashion_graph(int64_t workers, bool augment) {
  const nlohmann::json layers = {
      {"version", 2},
      {"nodes",
       {{{"id", "in"}, {"type", "Input"}, {"ports", {{{"id", "p"}, {"name", "x"}}}}},
        {{"id", "f"}, {"type", "Flatten"}},
        {{"id", "l"}, {"type", "Linear"}, {"params", {{"in_features", 784}, {"out_features", 10}}}},
        {{"id", "out"}, {"type", "Output"}, {"ports", {{{"id", "q"}, {"name", "y"}}}}}}},
      {"edges",
       {{{"id", "e1"}, {"source", "in"}, {"target", "f"}, {"sourceHandle", "p"}},
        {{"id", "e2"}, {"source", "f"}, {"target", "l"}},
        {{"id", "e3"}, {"source", "l"}, {"target", "out"}, {"targetHandle", "q"}}}}};
  auto node = [](const char* id, const char* type, const nlohmann::json& params) {
    return nlohmann::json{{"id", id}, {"type", type}, {"data", {{"params", params}}}};
  };
  auto edge = [](const char* s, const char* sh, const char* t, const char* th) {
    return nlohmann::json{{"source", s}, {"sourceHandle", sh}, {"target", t}, {"targetHandle", th}, {"type", "data"}};
  };
  nlohmann::json g = {
      {"name", "augmented"},
      {"nodes",
       {node("start", "Start", nlohmann::json::object()),
        node("data", "Dataset", {{"name", "FashionMNIST"}, {"split", "train"}, {"data_dir", ""}, {"max_samples", 512}}),
        node("loader", "DataLoader", {{"batch_size", 64}, {"shuffle", true}, {"num_workers", workers}}),
        node("model", "SequentialModel", {{"layers", layers.dump()}}),
        node("loss", "Loss", {{"type", "CrossEntropyLoss"}}), node("opt", "Optimizer", {{"type", "SGD"}, {"lr", 0.05}}),
        node("train", "TrainingLoop", {{"epochs", 3}, {"device", "cpu"}})}},
      {"edges",
       {{{"source", "start"}, {"sourceHandle", "trigger"}, {"target", "model"}, {"type", "trigger"}},
        edge("data", "dataset", "loader", "dataset"),
        edge("model", "model", "opt", "model"),
        edge("model", "model", "train", "model"),
        edge("loader", "dataloader", "train", "dataloader"),
        edge("opt", "optimizer", "train", "optimizer"),
        edge("loss", "loss_fn", "train", "loss_fn")}}};
  if (augment) {
    g["nodes"].push_back(node("crop", "RandomCrop", {{"size", 28}, {"padding", 2}}));
    g["nodes"].push_back(node("flip", "RandomHorizontalFlip", {{"p", 0.5}}));
    g["nodes"].push_back(node("norm", "NormalizeTransform", {{"preset", "FashionMNIST"}}));
    g["edges"].push_back(edge("crop", "transform", "flip", "transform"));
    g["edges"].push_back(edge("flip", "transform", "norm", "transform"));
    g["edges"].push_back(edge("norm", "transform", "data", "train_transform"));
  }
  return g;
}

// The same batches whether worker threads or the training thread cut them:
// 0 and 2 workers train to the same loss, bit for bit; the chain is applied.
TEST(Cli, NumWorkersPrepareTheSameAugmentedBatches) {
  const auto dir = temp_dir("cli_workers");
  double loss[3] = {0, 0, 0};
  int i = 0;
  for (const auto& [workers, augment] : {std::pair<int64_t, bool>{0, true}, {2, true}, {0, false}}) {
    const auto r = run_codefy(
        "run " + write_graph(dir, "g" + std::to_string(i), augmented_fashion_graph(workers, augment).dump()) +
        " --json --threads 1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const nlohmann::json c = config_of(r.output);
    EXPECT_EQ(c["num_workers"], workers) << c.dump();
    EXPECT_EQ(c["batch_workers"], workers) << c.dump();
    EXPECT_EQ(c["augmentation"].size(), augment ? 3u : 0u) << c.dump();
    std::istringstream lines(r.output);
    std::string line;
    while (std::getline(lines, line))
      if (line.find("\"execution_complete\"") != std::string::npos)
        loss[i] = nlohmann::json::parse(line)["results"]["train"]["final_train_loss"];
    ASSERT_GT(loss[i], 0) << r.output;
    ++i;
  }
  EXPECT_EQ(loss[0], loss[1]) << "2 workers cut other batches than the training thread";
  EXPECT_NE(loss[0], loss[2]) << "the chain changed nothing";
}

TEST(Cli, ToyExampleRunsAndPrintsMetrics) {
  auto r = run_codefy("run " + (codefy::testing::source_dir() / "examples/toy-mlp/graph.json").string() + " --out " +
                      temp_dir("cli_toy").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[validation accuracy]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("final_train_loss"), std::string::npos) << r.output;
  // The epoch line carries the validation accuracy of a classification loss.
  EXPECT_NE(r.output.find("  epoch 1/20  loss "), std::string::npos) << r.output;
  EXPECT_TRUE(
      std::regex_search(r.output, std::regex(R"(epoch 1/20  loss [0-9.]+  val_loss [0-9.]+  val_acc [0-9.]+%  lr )")))
      << r.output;
}

TEST(Cli, NodesJsonHasCodefyUIShape) {
  auto r = run_codefy("nodes --json");
  ASSERT_EQ(r.exit_code, 0);
  auto j = nlohmann::json::parse(r.output);
  bool found = false;
  for (const auto& n : j) {
    ASSERT_TRUE(n.contains("node_name") && n.contains("category") && n.contains("inputs") && n.contains("params"));
    if (n["node_name"] == "TrainingLoop") {
      found = true;
      EXPECT_EQ(n["inputs"][0]["name"], "model");
      EXPECT_EQ(n["inputs"][0]["data_type"], "MODEL");
    }
  }
  EXPECT_TRUE(found);
}

TEST(Cli, DevicesReportsBlasAndThreads) {
  auto r = run_codefy("devices --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  EXPECT_GE(j["threads"].get<int>(), 1);
  EXPECT_FALSE(j["blas"]["name"].get<std::string>().empty());
  EXPECT_EQ(j["devices"][0]["label"], "CPU");
  EXPECT_EQ(j["threads"], j["usable_cpus"]);  // default: every CPU this process may use
  // The override is honoured.
  auto one = nlohmann::json::parse(run_codefy("devices --json", "CODEFY_NUM_THREADS=1").output);
  EXPECT_EQ(one["threads"], 1);
}

}  // namespace
}  // namespace codefy

namespace codefy {
namespace {

TEST(Cli, SigintStopsTrainingBetweenBatches) {
  const auto dir = temp_dir("cli_sigint");
  auto g = codefy::testing::read_json(codefy::testing::source_dir() / "examples/toy-mlp/graph.json");
  codefy::testing::set_param(g, "train", "epochs", 100000);
  codefy::testing::set_param(g, "train", "early_stopping_patience", 0);
  const auto path = dir / "long.json";
  std::ofstream(path) << g.dump();

  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    execl(CODEFY_BINARY, CODEFY_BINARY, "run", path.c_str(), "--json", "--threads", "1", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  FILE* out = fdopen(fds[0], "r");
  char line[65536];
  std::string last;
  bool sent = false;
  int epochs_after_signal = 0;
  while (fgets(line, sizeof line, out)) {
    auto j = nlohmann::json::parse(line);
    last = j["event"];
    if (!sent && j["event"] == "progress" && j["data"]["event"] == "epoch") {
      kill(pid, SIGINT);  // once training is well under way
      sent = true;
    } else if (sent && j["event"] == "progress" && j["data"]["event"] == "epoch") {
      ++epochs_after_signal;
    }
  }
  fclose(out);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(sent);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 5);  // stopped
  EXPECT_EQ(last, "execution_stopped");
  // An epoch here is 63 batches; stopping between batches ends it well within one more epoch.
  EXPECT_LE(epochs_after_signal, 1);
}

TEST(Cli, ServeTakesWorkersAndBudgetsFromFlagsAndAConfigFile) {
  const auto dir = temp_dir("serve");
  write_json_file(dir / "config.json", {{"workers", {{"main", {"cpu"}}}}, {"memory_budget_mb", {{"cpu", 512}}}});
  const std::string data = " --port 0 --data-dir " + (dir / "data").string();
  // Serves until SIGTERM (from `timeout`, late enough for a loaded machine to have installed the handler;
  // --foreground: one signal, not a second to the group), then stops
  // cleanly; the banner lists the workers.
  const auto served =
      run_codefy("serve" + data + " --config " + (dir / "config.json").string() + " --device-budget-mb cpu=256",
                 "LC_ALL=C timeout --foreground --preserve-status -s TERM 6");
  EXPECT_EQ(served.exit_code, 0) << served.output;
  EXPECT_NE(served.output.find("worker main: cpu (budget 256 MB)"), std::string::npos) << served.output;
  // The session token for scripts: owner-only, 64 hex digits.
  const auto token = dir / "data/session.token";
  ASSERT_TRUE(std::filesystem::exists(token));
  EXPECT_EQ(std::filesystem::status(token).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_EQ(codefy::testing::read_file(token).size(), 64u);

  const auto bad_worker = run_codefy("serve" + data + " --worker gpus=cuda:9");
  EXPECT_NE(bad_worker.exit_code, 0);
  EXPECT_NE(bad_worker.output.find("--worker \"gpus=cuda:9\": no device cuda:9"), std::string::npos)
      << bad_worker.output;
  const auto bad_budget = run_codefy("serve" + data + " --device-budget-mb cpu=lots");
  EXPECT_NE(bad_budget.exit_code, 0);
  EXPECT_NE(bad_budget.output.find("--device-budget-mb \"cpu=lots\""), std::string::npos) << bad_budget.output;
}

}  // namespace
}  // namespace codefy
