#include "cli/printer.h"

#include "train/progress.h"

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
  std::lock_guard<std::mutex> lock(mutex_);
  if (const auto config = train::ConfigProgress::from_json(e)) {
    const auto& c = config->config;
    std::fprintf(
        out_, "  training %s (%lld parameters) on %s: %lld epochs x %lld batches of %lld, %s, lr %g\n",
        c.value("model_class", "").c_str(), static_cast<long long>(c.value("params", 0)), c.value("device", "").c_str(),
        static_cast<long long>(c.value("epochs", 0)), static_cast<long long>(c.value("batches_per_epoch", 0)),
        static_cast<long long>(c.value("batch_size", 0)), c.value("optimizer", "").c_str(), c.value("lr", 0.0));
  } else if (const auto batch = train::BatchProgress::from_json(e); batch && mode_ == Mode::kTerminal) {
    const long long b = batch->batch, n = batch->total_batches;
    const int width = 24;
    const int filled = n > 0 ? static_cast<int>(width * b / n) : 0;
    std::string bar(filled, '#');
    bar.resize(width, '.');
    if (batch->epoch)
      std::fprintf(out_, "\r  epoch %lld/%lld", static_cast<long long>(*batch->epoch),
                   static_cast<long long>(batch->total_epochs.value_or(0)));
    else
      std::fprintf(out_, "\r ");
    std::fprintf(out_, " [%s] %lld/%lld", bar.c_str(), b, n);
    if (batch->step) std::fprintf(out_, "  step %lld", static_cast<long long>(*batch->step));
    if (batch->loss) std::fprintf(out_, "  loss %.4f", *batch->loss);
    if (batch->samples_per_s) std::fprintf(out_, "  %.0f samples/s", *batch->samples_per_s);
    std::fprintf(out_, "   ");
    bar_open_ = true;
  } else if (const auto epoch = train::EpochProgress::from_json(e)) {
    end_bar();
    std::fprintf(out_, "  epoch %lld/%lld  loss %.4f", static_cast<long long>(epoch->epoch),
                 static_cast<long long>(epoch->total_epochs), epoch->loss);
    if (epoch->val_loss) std::fprintf(out_, "  val_loss %.4f", *epoch->val_loss);
    if (epoch->val_accuracy) std::fprintf(out_, "  val_acc %.2f%%", 100.0 * *epoch->val_accuracy);
    std::fprintf(out_, "  lr %g  %.1f s\n", epoch->lr, epoch->seconds);
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
