// Helpers shared by the engine and integration tests.
#pragma once

#include "device/runtime.h"
#include "engine/executor.h"
#include "graph/graph.h"
#include "nodes/library.h"
#include "test_util.h"
#include "train/serialize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace codefy::testing {

/// As the CLI does at start-up (see device::tune_allocator), so tests train at the same speed.
inline const bool kAllocatorTuned = device::tune_allocator();

inline std::filesystem::path source_dir() { return CODEFY_SOURCE_DIR; }

inline nlohmann::json read_json(const std::filesystem::path& p) { return read_json_file(p); }

/// A fresh temporary folder, removed when the test program exits.
inline std::filesystem::path temp_dir(const std::string& name) {
  static std::vector<std::unique_ptr<TempDir>> dirs;
  dirs.push_back(std::make_unique<TempDir>(name));
  return dirs.back()->path();
}

/// Sets `params[key] = value` on node `id` of a graph JSON.
inline void set_param(nlohmann::json& g, const std::string& id, const std::string& key, const nlohmann::json& value) {
  for (auto& n : g["nodes"])
    if (n["id"] == id) {
      n["data"]["params"][key] = value;
      return;
    }
  ADD_FAILURE() << "no node " << id;
}

/// Records every event of a run.
class Recorder : public Observer {
 public:
  void on_node_entry(const NodeRef& n) override { statuses.push_back(n.id + ":running"); }
  void on_node_exit(const NodeRef& n, NodeStatus s, const nlohmann::json&) override {
    statuses.push_back(n.id + ":" + to_string(s));
  }
  void on_progress(const NodeRef&, const nlohmann::json& e) override { progress.push_back(e); }
  void on_warning(const NodeRef&, const std::string& m) override { warnings.push_back(m); }
  void on_print(const NodeRef&, const std::string& t) override { prints.push_back(t); }
  std::vector<std::string> statuses, warnings, prints;
  std::vector<nlohmann::json> progress;
};

/// Runs a graph JSON in-process; base_dir is where its relative paths resolve.
/// Runs a graph JSON in-process with the given settings (base_dir: where its relative paths resolve).
inline RunResult run_json(const nlohmann::json& g, const RunSettings& s) {
  graph::Graph graph = graph::graph_from_json(g, "test");
  graph.base_dir = s.base_dir;
  PreparedGraph p = prepare(graph, nodes::builtin());
  return Executor(nodes::builtin()).run(p, s);
}

inline RunResult run_json(const nlohmann::json& g, uint64_t seed = 0, Observer* observer = nullptr,
                          const std::filesystem::path& base_dir = {}, CancellationToken cancel = {}) {
  RunSettings s;
  s.seed = seed;
  s.base_dir = base_dir;
  s.observer = observer;
  s.cancel = cancel;
  return run_json(g, s);
}

/// Result of running the codefy binary.
struct Command {
  int exit_code = -1;
  std::string output;  ///< stdout and stderr together
};

/// Runs the binary with `args`; `env` ("NAME=value ...") is set for that command only.
inline Command run_codefy(const std::string& args, const std::string& env = "") {
  Command c;
  const std::string cmd = (env.empty() ? "" : "env " + env + " ") + std::string(CODEFY_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return c;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) c.output.append(buf, n);
  int status = pclose(pipe);
  c.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return c;
}

/// Largest |a - b| over max|b| across the tensors of two weight files (their
/// names checked in order): how far one run's weights are from another's.
inline double weight_difference(const std::filesystem::path& a, const std::filesystem::path& b) {
  const auto wa = train::load_weights(a), wb = train::load_weights(b);
  EXPECT_EQ(wa.size(), wb.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(wa.size(), wb.size()); ++i) {
    EXPECT_EQ(wa[i].first, wb[i].first);
    const double scale = std::max(wb[i].second.abs().max().item<double>(), 1e-6);
    worst = std::max(worst, (wa[i].second - wb[i].second).abs().max().item<double>() / scale);
  }
  return worst;
}

}  // namespace codefy::testing
