#include "cli/printer.h"

#include <unistd.h>

#include <cmath>
#include <string>

namespace codefy::cli {

Printer::Mode Printer::detect(bool json) {
  if (json) return Mode::kJson;
  return isatty(fileno(stdout)) ? Mode::kTerminal : Mode::kPlain;
}

void Printer::emit_json(const nlohmann::json& event) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::fprintf(out_, "%s\n", event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  std::fflush(out_);
}

void Printer::end_bar() {
  if (bar_open_) std::fprintf(out_, "\n");
  bar_open_ = false;
}

void Printer::on_node_entry(const NodeRef& node) {
  if (mode_ == Mode::kJson)
    return emit_json({{"event", "node_status"}, {"node_id", node.id}, {"node_type", node.type}, {"status", "running"}});
  std::lock_guard<std::mutex> lock(mutex_);
  end_bar();
  std::fprintf(out_, "> %s (%s)\n", node.type.c_str(), node.id.c_str());
  std::fflush(out_);
}

void Printer::on_node_exit(const NodeRef& node, NodeStatus status, const nlohmann::json& detail) {
  if (mode_ == Mode::kJson)
    return emit_json({{"event", "node_status"},
                      {"node_id", node.id},
                      {"node_type", node.type},
                      {"status", to_string(status)},
                      {"output_summary", detail}});
  if (status == NodeStatus::kCompleted) return;
  std::lock_guard<std::mutex> lock(mutex_);
  end_bar();
  if (status == NodeStatus::kSkipped) {
    std::fprintf(out_, "  %s (%s) skipped: an earlier node did not finish\n", node.id.c_str(), node.type.c_str());
  } else {
    const std::string error = detail.value("error", "");  // the first line; the whole report ends the run
    std::fprintf(out_, "  %s %s: %s\n", node.id.c_str(), to_string(status), error.substr(0, error.find('\n')).c_str());
  }
  std::fflush(out_);
}

void Printer::on_progress(const NodeRef& node, const nlohmann::json& e) {
  if (mode_ == Mode::kJson)
    return emit_json({{"event", "progress"}, {"node_id", node.id}, {"node_type", node.type}, {"data", e}});
  const std::string kind = e.value("event", "");
  std::lock_guard<std::mutex> lock(mutex_);
  if (kind == "config") {
    const auto& c = e["config"];
    std::fprintf(
        out_, "  training %s (%lld parameters) on %s: %lld epochs x %lld batches of %lld, %s, lr %g\n",
        c.value("model_class", "").c_str(), static_cast<long long>(c.value("params", 0)), c.value("device", "").c_str(),
        static_cast<long long>(c.value("epochs", 0)), static_cast<long long>(c.value("batches_per_epoch", 0)),
        static_cast<long long>(c.value("batch_size", 0)), c.value("optimizer", "").c_str(), c.value("lr", 0.0));
  } else if (kind == "batch" && mode_ == Mode::kTerminal) {
    const long long b = e.value("batch", 0), n = e.value("total_batches", 1);
    const int width = 24;
    const int filled = n > 0 ? static_cast<int>(width * b / n) : 0;
    std::string bar(filled, '#');
    bar.resize(width, '.');
    std::fprintf(out_, "\r  epoch %lld/%lld [%s] %lld/%lld  step %lld  loss %.4f  %.0f samples/s   ",
                 static_cast<long long>(e.value("epoch", 0)), static_cast<long long>(e.value("total_epochs", 0)),
                 bar.c_str(), b, n, static_cast<long long>(e.value("step", 0)), e.value("loss", 0.0),
                 e.value("samples_per_s", 0.0));
    bar_open_ = true;
  } else if (kind == "epoch") {
    end_bar();
    std::fprintf(out_, "  epoch %lld/%lld  loss %.4f", static_cast<long long>(e.value("epoch", 0)),
                 static_cast<long long>(e.value("total_epochs", 0)), e.value("loss", 0.0));
    if (e.contains("val_loss")) std::fprintf(out_, "  val_loss %.4f", e.value("val_loss", 0.0));
    if (e.contains("val_accuracy")) std::fprintf(out_, "  val_acc %.2f%%", 100.0 * e.value("val_accuracy", 0.0));
    std::fprintf(out_, "  lr %g  %.1f s\n", e.value("lr", 0.0), e.value("seconds", 0.0));
  }
  std::fflush(out_);
}

void Printer::on_warning(const NodeRef& node, const std::string& message) {
  if (mode_ == Mode::kJson)
    return emit_json({{"event", "warning"}, {"node_id", node.id}, {"node_type", node.type}, {"message", message}});
  std::lock_guard<std::mutex> lock(mutex_);
  end_bar();
  std::fprintf(out_, "  warning: %s (%s): %s\n", node.id.c_str(), node.type.c_str(), message.c_str());
  std::fflush(out_);
}

void Printer::on_print(const NodeRef& node, const std::string& text) {
  if (mode_ == Mode::kJson)
    return emit_json({{"event", "print"}, {"node_id", node.id}, {"node_type", node.type}, {"text", text}});
  std::lock_guard<std::mutex> lock(mutex_);
  end_bar();
  std::fprintf(out_, "%s\n", text.c_str());
  std::fflush(out_);
}

}  // namespace codefy::cli
