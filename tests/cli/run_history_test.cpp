// `codefy run` keeps every run in the run history (issue #30): what a
// finished run recorded, read back after the process is gone; kill -9 in the
// middle of a run leaves it interrupted with its series so far; two runs
// writing at once both land; an unwritable store is said once and the run
// goes on; --no-record keeps nothing; `codefy runs` lists, shows and deletes.
#include "../common/test_support.h"
#include "store/run_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <thread>

extern char** environ;

namespace codefy {
namespace {

namespace fs = std::filesystem;
using testing::Command;
using testing::run_codefy;

fs::path toy() { return testing::source_dir() / "examples/toy-mlp/graph.json"; }

/// A copy of the toy example whose TrainingLoop trains for `epochs` (no early stop).
fs::path toy_with_epochs(const fs::path& dir, int epochs) {
  nlohmann::json g = testing::read_json(toy());
  testing::set_param(g, "train", "epochs", epochs);
  testing::set_param(g, "train", "early_stopping_patience", 0);
  const fs::path p = dir / ("toy-" + std::to_string(epochs) + ".json");
  testing::write_json_file(p, g);
  return p;
}

pid_t spawn_codefy(const std::vector<std::string>& args) {
  std::vector<std::string> argv{CODEFY_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  EXPECT_EQ(posix_spawn(&pid, CODEFY_BINARY, &fa, nullptr, raw.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

int wait_for(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(RunHistory, Issue30_AFinishedRunIsReadBackWithItsGraphConfigSeriesMetricsAndMemory) {
  const fs::path dir = testing::temp_dir("history-finished");
  const Command c = run_codefy("run " + toy().string() + " --seed 5 --data-dir " + dir.string());
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("Recorded as run "), std::string::npos) << c.output;

  const Command list = run_codefy("runs --json --data-dir " + dir.string());
  ASSERT_EQ(list.exit_code, 0) << list.output;
  const nlohmann::json runs = nlohmann::json::parse(list.output)["runs"];
  ASSERT_EQ(runs.size(), 1u);
  const std::string id = runs[0]["id"];
  EXPECT_EQ(runs[0]["status"], "completed");
  EXPECT_EQ(runs[0]["source"], "cli");
  EXPECT_EQ(runs[0]["seed"], 5);
  EXPECT_EQ(runs[0]["graph"], "Toy MLP");

  const Command show = run_codefy("runs show " + id + " --json --data-dir " + dir.string());
  ASSERT_EQ(show.exit_code, 0) << show.output;
  const nlohmann::json r = nlohmann::json::parse(show.output);
  EXPECT_EQ(r["graph_snapshot"], testing::read_json(toy()));
  EXPECT_EQ(r["effective_batch"], 32);
  EXPECT_EQ(r["precision"], "fp32");
  EXPECT_EQ(r["config"]["batch_size"], 32);
  const auto& metrics = r["final_metrics"]["train"];
  const int64_t epochs = metrics["total_epochs_run"].get<int64_t>();
  ASSERT_EQ(r["series"]["epoch_loss"].size(), static_cast<size_t>(epochs));
  ASSERT_EQ(r["series"]["val_accuracy"].size(), static_cast<size_t>(epochs));
  // The recorded curve is the run's own: its last epoch loss is the metric it reported.
  EXPECT_DOUBLE_EQ(r["series"]["epoch_loss"].back()[1].get<double>(), metrics["final_train_loss"].get<double>());
  EXPECT_GT(r["peak_memory"]["cpu"].get<int64_t>(), 0);
  EXPECT_GT(r["node_timings"]["train"].get<double>(), 0);
  EXPECT_GT(r["duration_s"].get<double>(), 0);

  const Command del = run_codefy("runs delete " + id + " --data-dir " + dir.string());
  EXPECT_EQ(del.exit_code, 0) << del.output;
  EXPECT_NE(run_codefy("runs show " + id + " --data-dir " + dir.string()).exit_code, 0);
}

TEST(RunHistory, Issue30_Kill9InTheMiddleLeavesAnInterruptedRunWithItsSeriesToTheLastFlush) {
  const fs::path dir = testing::temp_dir("history-kill");
  const pid_t pid = spawn_codefy({"run", toy_with_epochs(dir, 100000).string(), "--data-dir", dir.string()});
  std::string id;
  size_t seen = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (seen < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (!fs::exists(dir / "runs.db")) continue;
    store::RunStore s(dir / "runs.db");
    const auto list = s.list();
    if (list.empty()) continue;
    id = list[0].id;
    EXPECT_EQ(list[0].status, "running");
    seen = s.series(id, {"epoch_loss"}).size();
  }
  ASSERT_GE(seen, 3u) << "the run recorded no epochs in 60 s";
  ::kill(pid, SIGKILL);
  wait_for(pid);
  store::RunStore s(dir / "runs.db");
  const auto r = s.get(id);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, "interrupted");
  EXPECT_GE(s.series(id, {"epoch_loss"}).size(), seen);
  EXPECT_GT(r->ended_at, r->started_at);
  const Command list = run_codefy("runs --data-dir " + dir.string());
  EXPECT_NE(list.output.find("interrupted"), std::string::npos) << list.output;
}

TEST(RunHistory, Issue30_TwoProcessesRecordingAtOnceBothLand) {
  const fs::path dir = testing::temp_dir("history-two");
  const fs::path g = toy_with_epochs(dir, 15);
  const pid_t a = spawn_codefy({"run", g.string(), "--seed", "1", "--data-dir", dir.string()});
  const pid_t b = spawn_codefy({"run", g.string(), "--seed", "2", "--data-dir", dir.string()});
  EXPECT_EQ(wait_for(a), 0);
  EXPECT_EQ(wait_for(b), 0);
  store::RunStore s(dir / "runs.db");
  const auto list = s.list();
  ASSERT_EQ(list.size(), 2u);
  for (const auto& r : list) {
    EXPECT_EQ(r.status, "completed") << r.id;
    EXPECT_EQ(s.series(r.id, {"epoch_loss"}).size(), 15u) << r.id;
  }
  EXPECT_NE(list[0].seed, list[1].seed);
}

TEST(RunHistory, Issue30_AnUnwritableStoreIsSaidOnceAndTheRunGoesOnAndNoRecordKeepsNothing) {
  const fs::path dir = testing::temp_dir("history-unwritable");
  const Command c = run_codefy("run " + toy().string() + " --data-dir /dev/null/codefy-data");
  EXPECT_EQ(c.exit_code, 0) << c.output;
  const std::string said = "this run is not being recorded in the run history";
  const size_t first = c.output.find(said);
  ASSERT_NE(first, std::string::npos) << c.output;
  EXPECT_EQ(c.output.find(said, first + 1), std::string::npos) << "said more than once:\n" << c.output;
  EXPECT_NE(c.output.find("Done in"), std::string::npos) << c.output;

  const Command quiet = run_codefy("run " + toy().string() + " --no-record --data-dir " + dir.string());
  EXPECT_EQ(quiet.exit_code, 0) << quiet.output;
  EXPECT_FALSE(fs::exists(dir / "runs.db"));
}

TEST(RunHistory, Issue30_RunsCompareSaysWhatDiffersAndExportWritesEveryPointAsCsv) {
  const fs::path dir = testing::temp_dir("history-compare");
  std::vector<std::string> ids;
  for (const int epochs : {2, 3}) {
    const Command c = run_codefy("run " + toy_with_epochs(dir, epochs).string() + " --data-dir " + dir.string());
    ASSERT_EQ(c.exit_code, 0) << c.output;
  }
  const nlohmann::json runs =
      nlohmann::json::parse(run_codefy("runs --json --data-dir " + dir.string()).output)["runs"];
  ASSERT_EQ(runs.size(), 2u);
  const std::string newer = runs[0]["id"], older = runs[1]["id"];

  const Command text = run_codefy("runs compare " + older + " " + newer + " --data-dir " + dir.string());
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("What differs"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("train (TrainingLoop) epochs"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("Metrics"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("train.total_epochs_run"), std::string::npos) << text.output;

  const Command json = run_codefy("runs compare " + older + " " + newer + " --json --data-dir " + dir.string());
  ASSERT_EQ(json.exit_code, 0) << json.output;
  const nlohmann::json c = nlohmann::json::parse(json.output);
  nlohmann::json epochs;
  for (const auto& d : c["differences"])
    if (d["key"] == "train.params.epochs") epochs = d["values"];
  EXPECT_EQ(epochs, nlohmann::json({2, 3})) << c["differences"].dump();
  EXPECT_NE(run_codefy("runs compare " + older + " nope --data-dir " + dir.string()).exit_code, 0);
  EXPECT_NE(run_codefy("runs compare " + older + " --data-dir " + dir.string()).exit_code, 0);  // one run

  // The CSV holds every point `runs show` has, one a line, under a header.
  const fs::path csv = dir / "series.csv";
  const Command exported =
      run_codefy("runs export " + newer + " --csv " + csv.string() + " --data-dir " + dir.string());
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  const nlohmann::json shown =
      nlohmann::json::parse(run_codefy("runs show " + newer + " --json --data-dir " + dir.string()).output);
  size_t points = 0;
  for (const auto& [name, values] : shown["series"].items()) points += values.size();
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "series,step,value,time");
  size_t lines = 0, epoch_lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    if (line.rfind("epoch_loss,", 0) == 0) ++epoch_lines;
  }
  EXPECT_EQ(lines, points);
  EXPECT_EQ(epoch_lines, 3u);
  EXPECT_NE(run_codefy("runs export " + newer + " --data-dir " + dir.string()).exit_code, 0);  // no --csv
}

}  // namespace
}  // namespace codefy
