// Node file paths in graphs run through the real server (issue #13 item 6):
// reads and writes stay inside the allowed folders, an output never replaces
// a file Codefy did not write, and the server goes on answering.
#include "fixture.h"

#include "engine/executor.h"
#include "graph/graph.h"

#include <string>

namespace codefy::server {
namespace {

/// The toy MLP (built, not trained) and `extra` nodes fed by its model output.
nlohmann::json mlp_then(const std::string& name, const nlohmann::json& extra) {
  nlohmann::json g = toy_graph(1);
  nlohmann::json out = {{"name", name}, {"nodes", nlohmann::json::array()}, {"edges", nlohmann::json::array()}};
  for (const auto& n : g["nodes"])
    if (n["id"] == "start" || n["id"] == "mlp") out["nodes"].push_back(n);
  out["edges"].push_back({{"source", "start"}, {"sourceHandle", "trigger"}, {"target", "mlp"}, {"type", "trigger"}});
  for (const auto& n : extra) {
    out["nodes"].push_back(n);
    out["edges"].push_back({{"source", "mlp"},
                            {"sourceHandle", "model"},
                            {"target", n["id"]},
                            {"targetHandle", "model"},
                            {"type", "data"}});
  }
  return out;
}

nlohmann::json saver(const std::string& path) {
  return mlp_then("save", {{{"id", "sv"}, {"type", "ModelSaver"}, {"data", {{"params", {{"path", path}}}}}}});
}
nlohmann::json loader(const std::string& path) {
  return mlp_then("load", {{{"id", "ld"}, {"type", "ModelLoader"}, {"data", {{"params", {{"path", path}}}}}}});
}

/// Runs `g` in-process as `codefy run` does: no confinement, paths relative to `base_dir`.
void run_cli(const nlohmann::json& g, const fs::path& base_dir) {
  graph::Graph graph = graph::graph_from_json(g, "test");
  graph.base_dir = base_dir;
  RunSettings s;
  s.base_dir = base_dir;
  Executor(nodes::builtin()).run(prepare(graph, nodes::builtin()), s);
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class PathsFixture : public ServerFixture {
 protected:
  /// Runs `graph` over the WebSocket (as example `example` when given) and
  /// returns the final message.
  nlohmann::json run(nlohmann::json graph, const std::string& example = "") {
    auto ws = open_ws();
    graph["action"] = "execute";
    if (!example.empty()) graph["example"] = example;
    ws->send(graph);
    for (;;) {
      nlohmann::json m = ws->next();
      if (m["type"] == "execution_complete" || m["type"] == "execution_error") return m;
    }
  }
  /// The error of a run that must fail on node `id` of `type`, param "path".
  std::string refused(const nlohmann::json& graph, const std::string& id, const std::string& type) {
    const nlohmann::json m = run(graph);
    EXPECT_EQ(m["type"], "execution_error") << m.dump();
    const std::string error = m.value("error", std::string());
    EXPECT_NE(error.find("node " + id + " (" + type + ")"), std::string::npos) << error;
    EXPECT_NE(error.find("param \"path\""), std::string::npos) << error;
    return error;
  }
  testing::TempDir outside_{"codefy-outside"};
};

TEST_F(PathsFixture, HardeningAbsolutePathOutsideTheDataFolderIsRefusedNamingTheRoots) {
  const fs::path target = outside_.path() / "abs.pt";
  const std::string error = refused(saver(target.string()), "sv", "ModelSaver");
  EXPECT_NE(error.find("outside the folders this server writes"), std::string::npos) << error;
  EXPECT_NE(error.find("the data folder " + fs::weakly_canonical(dir_.path()).string()), std::string::npos) << error;
  EXPECT_NE(error.find("--allow-path"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(target));
  expect_alive();
}

TEST_F(PathsFixture, HardeningDotDotEscapeAndMissingFoldersAreRefused) {
  // The graph's folder is the data folder's graphs/; ../../ leaves the data folder.
  const std::string rel = "../../" + outside_.path().filename().string() + "/made/deeper/x.pt";
  refused(saver(rel), "sv", "ModelSaver");
  refused(saver("../../../../../../../../tmp/escape.pt"), "sv", "ModelSaver");
  EXPECT_FALSE(fs::exists(outside_.path() / "made"));
  EXPECT_FALSE(fs::exists("/tmp/escape.pt"));
  expect_alive();
}

TEST_F(PathsFixture, HardeningSymlinkOutOfTheDataFolderIsOutside) {
  const fs::path link = dir_.path() / "way-out";
  fs::create_directory_symlink(outside_.path(), link);
  const std::string error = refused(saver(link.string() + "/w.pt"), "sv", "ModelSaver");
  EXPECT_NE(error.find("outside the folders"), std::string::npos) << error;
  EXPECT_TRUE(fs::is_empty(outside_.path()));
  expect_alive();
}

TEST_F(PathsFixture, HardeningReadsOutsideTheAllowedFoldersAreRefused) {
  const std::string error = refused(loader("/etc/passwd"), "ld", "ModelLoader");
  EXPECT_NE(error.find("outside the folders this server reads"), std::string::npos) << error;
  EXPECT_EQ(error.find("root:"), std::string::npos) << "the file's contents were echoed: " << error;
  nlohmann::json csv = {{"name", "csv"},
                        {"nodes",
                         {{{"id", "start"}, {"type", "Start"}},
                          {{"id", "ds"}, {"type", "CSVDataset"}, {"data", {{"params", {{"path", "/etc/passwd"}}}}}}}},
                        {"edges", {{{"source", "start"}, {"target", "ds"}, {"type", "trigger"}}}}};
  refused(csv, "ds", "CSVDataset");
  expect_alive();
}

TEST_F(PathsFixture, HardeningAnUnrelatedFileIsNeverReplacedButOurOwnOutputIs) {
  const fs::path notes = dir_.path() / "notes.pt";
  testing::write_file(notes, "my notes, not weights");
  const std::string error = refused(saver(notes.string()), "sv", "ModelSaver");
  EXPECT_NE(error.find("is not a weights file written by Codefy"), std::string::npos) << error;
  EXPECT_EQ(read_text(notes), "my notes, not weights");
  const fs::path folder = dir_.path() / "a-folder.pt";
  fs::create_directory(folder);
  refused(saver(folder.string()), "sv", "ModelSaver");
  EXPECT_TRUE(fs::is_directory(folder));

  // Codefy's own weights file is replaced by the next save (write-then-rename).
  const fs::path weights = dir_.path() / "weights.pt";
  EXPECT_EQ(run(saver(weights.string()))["type"], "execution_complete");
  ASSERT_TRUE(fs::is_regular_file(weights));
  EXPECT_EQ(run(saver(weights.string()))["type"], "execution_complete");
  EXPECT_EQ(run(loader(weights.string()))["type"], "execution_complete");
  expect_alive();
}

TEST_F(PathsFixture, HardeningAllowPathAddsAWritableFolder) {
  const fs::path target = outside_.path() / "allowed.pt";
  configure_ = [this](ApiOptions& o, ServerOptions&) { o.allowed_paths = {outside_.path()}; };
  stop();
  start();
  EXPECT_EQ(run(saver(target.string()))["type"], "execution_complete");
  EXPECT_TRUE(fs::is_regular_file(target));
  EXPECT_EQ(run(loader(target.string()))["type"], "execution_complete");
  expect_alive();
}

// An example's folder is read-only: its relative outputs go to the data
// folder's outputs/<example>/, and a later run of the example reads them back.
TEST_F(PathsFixture, HardeningExampleRunsWriteIntoTheDataFolder) {
  testing::TempDir examples{"codefy-examples"};
  fs::create_directories(examples.path() / "saving");
  testing::write_file(examples.path() / "saving" / "graph.json", saver("weights.pt").dump());
  configure_ = [&examples](ApiOptions& o, ServerOptions&) { o.examples_dir = examples.path(); };
  stop();
  start();
  const nlohmann::json saved = run(saver("weights.pt"), "saving");
  EXPECT_EQ(saved["type"], "execution_complete") << saved.dump();
  EXPECT_FALSE(fs::exists(examples.path() / "saving" / "weights.pt"));
  EXPECT_TRUE(fs::is_regular_file(dir_.path() / "outputs" / "saving" / "weights.pt"));
  const nlohmann::json loaded = run(loader("weights.pt"), "saving");
  EXPECT_EQ(loaded["type"], "execution_complete") << loaded.dump();
  // An absolute path into the examples is refused: they are read-only.
  const std::string error = refused(saver((examples.path() / "saving" / "w2.pt").string()), "sv", "ModelSaver");
  EXPECT_NE(error.find("which this server only reads"), std::string::npos) << error;
  expect_alive();
}

// The command line keeps the user's own paths, but an output still never
// replaces a file that is not one Codefy wrote.
TEST(HardeningPaths, CommandLineRunsNeverReplaceAnUnrelatedFile) {
  testing::TempDir dir{"codefy-cli-paths"};
  const fs::path notes = dir.path() / "notes.pt";
  testing::write_file(notes, "precious");
  try {
    run_cli(saver(notes.string()), dir.path());
    ADD_FAILURE() << "the run replaced " << notes;
  } catch (const NodeError& e) {
    const std::string error = e.what();
    EXPECT_NE(error.find("node sv (ModelSaver), param \"path\""), std::string::npos) << error;
    EXPECT_NE(error.find("is not a weights file written by Codefy"), std::string::npos) << error;
  }
  EXPECT_EQ(read_text(notes), "precious");
  // A path outside any data folder is the user's to choose on the command line.
  const fs::path elsewhere = dir.path() / "sub" / "model.pt";
  run_cli(saver(elsewhere.string()), dir.path());
  EXPECT_TRUE(fs::is_regular_file(elsewhere));
}

}  // namespace
}  // namespace codefy::server
