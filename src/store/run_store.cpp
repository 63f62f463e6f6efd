#include "store/run_store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace codefy::store {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// Schema 1: the runs and their series.
constexpr const char* kSchema1 = R"sql(
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
)sql";

/// Schema 2: who writes a run, so another process can tell a dead writer.
constexpr const char* kSchema2 = R"sql(
ALTER TABLE runs ADD COLUMN pid INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN pid_start INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN host TEXT NOT NULL DEFAULT '';
)sql";

double now_s() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

/// A prepared statement, finalized when it goes.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) != SQLITE_OK)
      throw RunStoreError(std::string("run history: ") + sqlite3_errmsg(db));
  }
  ~Statement() { sqlite3_finalize(s_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind(int i, const json& v) { return v.is_null() ? bind_null(i) : bind(i, v.dump()); }
  Statement& bind(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Statement& bind(int i, double v) {
    sqlite3_bind_double(s_, i, v);
    return *this;
  }
  Statement& bind_null(int i) {
    sqlite3_bind_null(s_, i);
    return *this;
  }
  /// Steps once: true while a row is there.
  bool step() {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw RunStoreError(std::string("run history: ") + sqlite3_errmsg(db_));
  }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  std::string text(int col) const {
    const auto* p = sqlite3_column_text(s_, col);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  json json_of(int col) const {
    const std::string t = text(col);
    return t.empty() ? json() : json::parse(t, nullptr, false);
  }
  int64_t integer(int col) const { return sqlite3_column_int64(s_, col); }
  double real(int col) const { return sqlite3_column_double(s_, col); }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

constexpr const char* kColumns =
    "id, graph_name, graph_hash, graph, seed, source, devices, precision_requested, precision_used, micro_batch, "
    "accumulate_steps, effective_batch, world_size, threads, status, error, started_at, ended_at, duration_s, "
    "node_timings, final_metrics, peak_memory, artifacts, config, pid, pid_start, host";

RunRecord read_run(const Statement& s) {
  RunRecord r;
  r.id = s.text(0);
  r.graph_name = s.text(1);
  r.graph_hash = s.text(2);
  r.graph = s.json_of(3);
  r.seed = static_cast<uint64_t>(s.integer(4));
  r.source = s.text(5);
  r.devices = s.json_of(6);
  r.precision_requested = s.text(7);
  r.precision_used = s.text(8);
  r.micro_batch = s.integer(9);
  r.accumulate_steps = s.integer(10);
  r.effective_batch = s.integer(11);
  r.world_size = s.integer(12);
  r.threads = s.integer(13);
  r.status = s.text(14);
  r.error = s.json_of(15);
  r.started_at = s.real(16);
  r.ended_at = s.real(17);
  r.duration_s = s.real(18);
  r.node_timings = s.json_of(19);
  r.final_metrics = s.json_of(20);
  r.peak_memory = s.json_of(21);
  r.artifacts = s.json_of(22);
  r.config = s.json_of(23);
  r.pid = s.integer(24);
  r.pid_start = s.integer(25);
  r.host = s.text(26);
  return r;
}

/// Whether process `pid` started at `start` is still alive on this host.
bool writer_alive(int64_t pid, int64_t start) {
  if (pid <= 0) return false;
  const int64_t now = process_start_time(pid);
  return now != 0 && (start == 0 || now == start);
}

}  // namespace

Retention Retention::from_env() {
  Retention r;
  if (const char* days = std::getenv("CODEFYUI_RUNS_RETENTION_DAYS"); days && *days) {
    char* end = nullptr;
    r.max_age_days = std::strtod(days, &end);
    if (*end != '\0' || r.max_age_days < 0)
      throw std::invalid_argument("CODEFYUI_RUNS_RETENTION_DAYS must be a number of days >= 0, got \"" +
                                  std::string(days) + "\"");
  }
  if (const char* max = std::getenv("CODEFY_RUNS_MAX"); max && *max) {
    char* end = nullptr;
    const long long n = std::strtoll(max, &end, 10);
    if (*end != '\0' || n < 0)
      throw std::invalid_argument("CODEFY_RUNS_MAX must be a whole number >= 0, got \"" + std::string(max) + "\"");
    r.max_runs = static_cast<size_t>(n);
  }
  return r;
}

int64_t process_start_time(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return 0;
  // Fields after the command name (which may hold spaces), from its closing parenthesis.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i)
    if (i == 22) return std::strtoll(field.c_str(), nullptr, 10);
  return 0;
}

std::string new_run_id() {
  const auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char when[32];
  std::strftime(when, sizeof when, "%Y%m%d-%H%M%S", &tm);
  std::random_device rd;
  char tail[8];
  std::snprintf(tail, sizeof tail, "%06x", rd() & 0xffffff);
  return std::string(when) + "-" + tail;
}

RunStore::RunStore(const fs::path& path, Retention retention) : path_(path), retention_(retention) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw RunStoreError("cannot open the run history " + path.string() + ": " + why);
  }
  try {
    // Another writer holds the lock for a transaction's length: wait for it.
    sqlite3_busy_timeout(db_, 5000);
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA synchronous=NORMAL");
    exec("PRAGMA foreign_keys=ON");
    migrate();
    mark_interrupted();
    apply_retention();
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

RunStore::~RunStore() { sqlite3_close(db_); }

void RunStore::exec(const std::string& sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string why = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    throw RunStoreError("run history " + path_.string() + ": " + why);
  }
}

void RunStore::migrate() {
  std::lock_guard<std::mutex> lock(mutex_);
  exec("BEGIN IMMEDIATE");  // one process migrates; another waits and then finds it done
  try {
    Statement v(db_, "PRAGMA user_version");
    v.step();
    const int version = static_cast<int>(v.integer(0));
    if (version > kSchemaVersion)
      throw RunStoreError("the run history " + path_.string() + " has schema " + std::to_string(version) +
                          ", newer than this build's " + std::to_string(kSchemaVersion) +
                          ": it was written by a newer Codefy");
    if (version < 1) exec(kSchema1);
    if (version < 2) exec(kSchema2);
    if (version < kSchemaVersion) exec("PRAGMA user_version=" + std::to_string(kSchemaVersion));
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void RunStore::begin_run(RunRecord r) {
  r.pid = ::getpid();
  r.pid_start = process_start_time(r.pid);
  r.host = this_host();
  if (r.started_at == 0) r.started_at = now_s();
  std::lock_guard<std::mutex> lock(mutex_);
  Statement s(db_, std::string("INSERT INTO runs (") + kColumns +
                       ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  s.bind(1, r.id).bind(2, r.graph_name).bind(3, r.graph_hash).bind(4, r.graph.dump());
  s.bind(5, static_cast<int64_t>(r.seed)).bind(6, r.source).bind(7, r.devices.dump());
  s.bind(8, r.precision_requested).bind(9, r.precision_used).bind(10, r.micro_batch).bind(11, r.accumulate_steps);
  s.bind(12, r.effective_batch).bind(13, r.world_size).bind(14, r.threads).bind(15, r.status).bind(16, r.error);
  s.bind(17, r.started_at).bind(18, r.ended_at).bind(19, r.duration_s).bind(20, r.node_timings);
  s.bind(21, r.final_metrics).bind(22, r.peak_memory).bind(23, r.artifacts).bind(24, r.config);
  s.bind(25, r.pid).bind(26, r.pid_start).bind(27, r.host);
  s.step();
}

void RunStore::append_series(const std::string& run_id, const std::vector<SeriesPoint>& points) {
  if (points.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  exec("BEGIN");
  try {
    Statement s(db_, "INSERT INTO series (run_id, name, step, value, t) VALUES (?,?,?,?,?)");
    for (const auto& p : points) {
      s.bind(1, run_id).bind(2, p.name).bind(3, p.step).bind(4, p.value).bind(5, p.t);
      s.step();
      s.reset();
    }
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void RunStore::set_config(const std::string& run_id, const json& config) {
  std::lock_guard<std::mutex> lock(mutex_);
  Statement s(db_,
              "UPDATE runs SET config = ?, precision_used = COALESCE(?, precision_used), "
              "threads = COALESCE(?, threads), world_size = COALESCE(?, world_size), "
              "micro_batch = COALESCE(?, micro_batch), accumulate_steps = COALESCE(?, accumulate_steps), "
              "effective_batch = COALESCE(?, effective_batch) WHERE id = ?");
  s.bind(1, config);
  auto text_or_null = [&](int i, const char* key) {
    if (config.contains(key) && config[key].is_string())
      s.bind(i, config[key].get<std::string>());
    else
      s.bind_null(i);
  };
  auto int_or_null = [&](int i, const char* key) {
    if (config.contains(key) && config[key].is_number_integer())
      s.bind(i, config[key].get<int64_t>());
    else
      s.bind_null(i);
  };
  text_or_null(2, "precision");
  int_or_null(3, "threads");
  int_or_null(4, "world_size");
  int_or_null(5, "batch_size");
  int_or_null(6, "accumulate_steps");
  int_or_null(7, "effective_batch_size");
  s.bind(8, run_id);
  s.step();
}

void RunStore::finish_run(const RunRecord& r) {
  std::lock_guard<std::mutex> lock(mutex_);
  Statement s(db_,
              "UPDATE runs SET status = ?, error = ?, ended_at = ?, duration_s = ?, node_timings = ?, "
              "final_metrics = ?, peak_memory = ?, artifacts = ? WHERE id = ?");
  const double ended = r.ended_at != 0 ? r.ended_at : now_s();
  s.bind(1, r.status).bind(2, r.error).bind(3, ended).bind(4, r.duration_s).bind(5, r.node_timings);
  s.bind(6, r.final_metrics).bind(7, r.peak_memory).bind(8, r.artifacts).bind(9, r.id);
  s.step();
}

std::vector<RunRecord> RunStore::list(const RunFilter& f) const {
  std::lock_guard<std::mutex> lock(mutex_);
  Statement s(db_, std::string("SELECT ") + kColumns +
                       " FROM runs WHERE (?1 = '' OR graph_name = ?1) AND (?2 = '' OR status = ?2) AND "
                       "(?3 = '' OR source = ?3) AND (?4 = 0 OR started_at < ?4) "
                       "ORDER BY started_at DESC, id DESC LIMIT ?5");
  s.bind(1, f.graph).bind(2, f.status).bind(3, f.source).bind(4, f.before);
  s.bind(5, static_cast<int64_t>(std::min<size_t>(f.limit, 1000)));
  std::vector<RunRecord> out;
  while (s.step()) out.push_back(read_run(s));
  return out;
}

std::optional<RunRecord> RunStore::get(const std::string& run_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  Statement s(db_, std::string("SELECT ") + kColumns + " FROM runs WHERE id = ?");
  s.bind(1, run_id);
  if (!s.step()) return std::nullopt;
  return read_run(s);
}

std::vector<SeriesPoint> RunStore::series(const std::string& run_id, const std::vector<std::string>& names,
                                          size_t points) const {
  std::lock_guard<std::mutex> lock(mutex_);
  Statement s(db_, "SELECT name, step, value, t FROM series WHERE run_id = ? ORDER BY name, step, t");
  s.bind(1, run_id);
  std::vector<std::vector<SeriesPoint>> by_name;
  while (s.step()) {
    SeriesPoint p{s.text(0), s.integer(1), s.real(2), s.real(3)};
    if (!names.empty() && std::find(names.begin(), names.end(), p.name) == names.end()) continue;
    if (by_name.empty() || by_name.back().front().name != p.name) by_name.emplace_back();
    by_name.back().push_back(std::move(p));
  }
  std::vector<SeriesPoint> out;
  for (auto& one : by_name) {
    if (points == 0 || one.size() <= points) {
      out.insert(out.end(), one.begin(), one.end());
      continue;
    }
    // Evenly spaced, first and last kept.
    for (size_t i = 0; i < points; ++i) {
      const size_t at = points == 1 ? one.size() - 1 : i * (one.size() - 1) / (points - 1);
      out.push_back(one[at]);
    }
  }
  return out;
}

bool RunStore::remove(const std::string& run_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  Statement s(db_, "DELETE FROM runs WHERE id = ?");
  s.bind(1, run_id);
  s.step();
  return sqlite3_changes(db_) > 0;
}

int RunStore::mark_interrupted() {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string host = this_host();
  std::vector<std::string> dead;
  {
    Statement s(db_, "SELECT id, pid, pid_start, host FROM runs WHERE status IN ('running', 'queued')");
    while (s.step())
      if (s.text(3) == host && !writer_alive(s.integer(1), s.integer(2))) dead.push_back(s.text(0));
  }
  for (const auto& id : dead) {
    Statement u(db_,
                "UPDATE runs SET status = 'interrupted', ended_at = COALESCE((SELECT MAX(t) FROM series WHERE "
                "run_id = ?1), started_at), error = ?2 WHERE id = ?1 AND status IN ('running', 'queued')");
    u.bind(1, id).bind(2, json{{"kind", "interrupted"},
                               {"message",
                                "the process writing this run ended without finishing it (killed or "
                                "crashed); its series stop at the last flush"}});
    u.step();
  }
  return static_cast<int>(dead.size());
}

int RunStore::apply_retention() {
  std::lock_guard<std::mutex> lock(mutex_);
  int gone = 0;
  if (retention_.max_age_days > 0) {
    Statement s(db_, "DELETE FROM runs WHERE ended_at > 0 AND started_at < ?");
    s.bind(1, now_s() - retention_.max_age_days * 86400.0);
    s.step();
    gone += sqlite3_changes(db_);
  }
  if (retention_.max_runs > 0) {
    Statement s(db_,
                "DELETE FROM runs WHERE ended_at > 0 AND id NOT IN "
                "(SELECT id FROM runs ORDER BY started_at DESC, id DESC LIMIT ?)");
    s.bind(1, static_cast<int64_t>(retention_.max_runs));
    s.step();
    gone += sqlite3_changes(db_);
  }
  return gone;
}

}  // namespace codefy::store
