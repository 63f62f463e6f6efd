// Shows a run's events: a progress bar on a terminal, plain lines in a log,
// or one JSON object per line with --json.
#pragma once

#include "engine/events.h"

#include <chrono>
#include <cstdio>
#include <mutex>

namespace codefy::cli {

class Printer : public Observer {
 public:
  enum class Mode { kTerminal, kPlain, kJson };
  explicit Printer(Mode mode, std::FILE* out = stdout) : mode_(mode), out_(out) {}
  /// kTerminal when stdout is a TTY, else kPlain (kJson when asked).
  static Mode detect(bool json);

  void on_node_entry(const NodeRef& node) override;
  void on_node_exit(const NodeRef& node, NodeStatus status, const nlohmann::json& detail) override;
  void on_progress(const NodeRef& node, const nlohmann::json& event) override;
  void on_warning(const NodeRef& node, const std::string& message) override;
  void on_print(const NodeRef& node, const std::string& text) override;
  /// Writes one JSON event line (kJson) — for run start/end records.
  void emit_json(const nlohmann::json& event);
  Mode mode() const { return mode_; }

 private:
  void end_bar();
  Mode mode_;
  std::FILE* out_;
  std::mutex mutex_;
  bool bar_open_ = false;
};

}  // namespace codefy::cli
