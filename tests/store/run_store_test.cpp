// The run history's store (issue #30): schema migration from the previous
// version, retention by age and count, series thinning, a dead writer's run
// marked interrupted and a live one's left alone.
#include "store/run_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

namespace codefy::store {
namespace {

namespace fs = std::filesystem;

fs::path fresh(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("codefy-runs-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir / "runs.db";
}

double now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

RunRecord run(const std::string& id, double started_at) {
  RunRecord r;
  r.id = id;
  r.graph_name = "g";
  r.graph_hash = "0";
  r.graph = {{"name", "g"}};
  r.source = "cli";
  r.started_at = started_at;
  return r;
}

void finish(RunStore& s, RunRecord r) {
  r.status = "completed";
  r.ended_at = r.started_at + 1;
  s.finish_run(r);
}

void sql(const fs::path& db, const std::string& text) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(h, text.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(h);
}

TEST(RunStore, Issue30_AFileOfThePreviousSchemaOpensMigratedWithItsRunsAndANewerOneIsRefused) {
  const fs::path db = fresh("migrate");
  // Schema 1 as the first release wrote it, with one finished run and its series.
  sql(db, R"sql(
CREATE TABLE runs (
  id TEXT PRIMARY KEY, graph_name TEXT NOT NULL, graph_hash TEXT NOT NULL, graph TEXT NOT NULL,
  seed INTEGER NOT NULL, source TEXT NOT NULL, devices TEXT NOT NULL,
  precision_requested TEXT NOT NULL, precision_used TEXT NOT NULL,
  micro_batch INTEGER NOT NULL, accumulate_steps INTEGER NOT NULL, effective_batch INTEGER NOT NULL,
  world_size INTEGER NOT NULL, threads INTEGER NOT NULL, status TEXT NOT NULL, error TEXT,
  started_at REAL NOT NULL, ended_at REAL NOT NULL, duration_s REAL NOT NULL,
  node_timings TEXT, final_metrics TEXT, peak_memory TEXT, artifacts TEXT, config TEXT);
CREATE INDEX runs_by_start ON runs(started_at DESC);
CREATE TABLE series (
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, name TEXT NOT NULL,
  step INTEGER NOT NULL, value REAL NOT NULL, t REAL NOT NULL);
CREATE INDEX series_by_run ON series(run_id, name, step);
INSERT INTO runs VALUES ('old-1', 'lenet', 'abc', '{"name":"lenet"}', 7, 'cli', '["cpu"]', 'bf16', 'bf16', 64, 2, 128,
  1, 2, 'completed', NULL, 1000.0, 1060.0, 60.0, '{}', '{"train":{"final_train_loss":0.25}}', '{"cpu":1048576}',
  '[]', '{}');
INSERT INTO series VALUES ('old-1', 'epoch_loss', 1, 0.5, 1030.0), ('old-1', 'epoch_loss', 2, 0.25, 1060.0);
PRAGMA user_version = 1;
)sql");
  {
    RunStore s(db);
    const auto r = s.get("old-1");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, "completed");  // not mistaken for a dead writer's run
    EXPECT_EQ(r->precision_used, "bf16");
    EXPECT_EQ(r->effective_batch, 128);
    EXPECT_EQ(r->final_metrics["train"]["final_train_loss"], 0.25);
    EXPECT_EQ(r->pid, 0);
    EXPECT_EQ(s.series("old-1").size(), 2u);
    s.begin_run(run("new-1", now()));  // the new columns are written
    EXPECT_EQ(s.get("new-1")->pid, ::getpid());
  }
  sql(db, "PRAGMA user_version = 99");
  try {
    RunStore s(db);
    FAIL() << "a newer schema opened";
  } catch (const RunStoreError& e) {
    EXPECT_NE(std::string(e.what()).find("schema 99, newer than this build's 2"), std::string::npos) << e.what();
  }
}

TEST(RunStore, Issue30_RetentionDropsOldAndSurplusFinishedRunsButNeverARunningOne) {
  const fs::path db = fresh("retention");
  {
    RunStore s(db);
    const double t = now();
    for (int i = 0; i < 5; ++i) {
      s.begin_run(run("r" + std::to_string(i), t - i * 3600));
      finish(s, run("r" + std::to_string(i), t - i * 3600));
    }
    s.begin_run(run("ancient", t - 40 * 86400));
    finish(s, run("ancient", t - 40 * 86400));
    s.begin_run(run("ancient-running", t - 41 * 86400));  // this process is alive: it stays running
    s.append_series("ancient", {{"loss", 1, 0.5, t}});
  }
  {
    RunStore s(db, Retention{30, 0});
    EXPECT_FALSE(s.get("ancient"));
    EXPECT_TRUE(s.series("ancient").empty());  // its series went with it
    EXPECT_TRUE(s.get("ancient-running"));
    EXPECT_EQ(s.list().size(), 6u);
  }
  RunStore s(db, Retention{0, 2});
  std::vector<std::string> ids;
  for (const auto& r : s.list()) ids.push_back(r.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"r0", "r1", "ancient-running"}));
}

TEST(RunStore, Issue30_SeriesAreThinnedToEvenlySpacedPointsKeepingFirstAndLast) {
  RunStore s(fresh("series"));
  s.begin_run(run("a", now()));
  std::vector<SeriesPoint> points;
  for (int i = 0; i < 101; ++i) points.push_back({"loss", i, 1.0 / (i + 1), now()});
  for (int i = 1; i <= 3; ++i) points.push_back({"val_accuracy", i, 0.5 + 0.1 * i, now()});
  s.append_series("a", points);
  const auto thin = s.series("a", {"loss"}, 11);
  ASSERT_EQ(thin.size(), 11u);
  for (size_t i = 0; i < thin.size(); ++i) EXPECT_EQ(thin[i].step, static_cast<int64_t>(i * 10));
  EXPECT_EQ(s.series("a", {"val_accuracy"}, 11).size(), 3u);
  EXPECT_EQ(s.series("a").size(), 104u);
  EXPECT_TRUE(s.remove("a"));
  EXPECT_FALSE(s.remove("a"));
  EXPECT_TRUE(s.series("a").empty());
}

TEST(RunStore, Issue30_ARunWhoseWriterDiedIsInterruptedWithItsSeriesAndALiveWritersIsNot) {
  const fs::path db = fresh("interrupted");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // a writer that dies without finishing
    RunStore s(db);
    s.begin_run(run("dead", now()));
    s.append_series("dead", {{"epoch_loss", 1, 0.75, now()}});
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  RunStore s(db);
  s.begin_run(run("alive", now()));
  EXPECT_EQ(s.mark_interrupted(), 0);  // already marked at open; this process is alive
  const auto dead = s.get("dead");
  ASSERT_TRUE(dead);
  EXPECT_EQ(dead->status, "interrupted");
  EXPECT_EQ(dead->error["kind"], "interrupted");
  EXPECT_GT(dead->ended_at, 0);
  EXPECT_EQ(s.series("dead").size(), 1u);
  EXPECT_EQ(s.get("alive")->status, "running");
}

}  // namespace
}  // namespace codefy::store
