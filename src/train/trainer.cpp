#include "train/trainer.h"

#include "engine/errors.h"
#include "train/accumulation.h"
#include "train/grad_buffer.h"
#include "train/serialize.h"

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

namespace codefy::train {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::vector<torch::Tensor> trainable(Model& model) {
  std::vector<torch::Tensor> v;
  for (auto& p : model.parameters())
    if (p.requires_grad()) v.push_back(p);
  return v;
}

}  // namespace

double evaluate_loss(Model& model, const DataLoader& data, const LossFunction& loss, c10::Device device,
                     Precision precision) {
  torch::NoGradGuard no_grad;
  model.eval();
  const torch::Tensor order = data.epoch_order(0);
  const int64_t n = data.num_batches();
  torch::Tensor sum = torch::zeros({}, torch::TensorOptions().device(device));
  for (int64_t b = 0; b < n; ++b) {
    Batch batch = data.batch(order, b);
    AutocastGuard autocast(precision, device);  // validation as training (R-PREC-5)
    auto out = model.forward(batch.inputs.to(device));
    sum += loss(out, batch.targets.to(device)).detach().to(torch::kFloat);
  }
  return n > 0 ? sum.item<double>() / static_cast<double>(n) : 0.0;
}

namespace {

uint64_t epoch_seed(uint64_t seed, int64_t epoch) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(epoch + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return (z ^ (z >> 31)) & 0x7fffffffffffffffULL;
}

bool has_batch_norm(const torch::nn::Module& model) {
  for (const auto& m : model.modules(/*include_self=*/false))
    if (m->name().find("BatchNorm") != std::string::npos) return true;
  return false;
}

}  // namespace

TrainResult train_model(Model& model, const DataLoader& train_data, const DataLoader* val_data,
                        OptimizerHandle& optimizer, const LossFunction& loss, Scheduler* scheduler,
                        const TrainOptions& options, const TrainHooks& hooks) {
  const c10::Device device = options.device;
  model.to(device);
  const auto params = trainable(model);
  GradBuffer grads(params);  // zero, norm and clip in one op each
  const int64_t batches = train_data.num_batches();
  if (batches == 0) throw std::invalid_argument("the training data loader yields no batches");
  const AccumulationWindow window(batches, options.accumulate_steps);
  const int64_t batch_size = train_data.options().batch_size;
  auto emit = [&](const nlohmann::json& e) {
    if (hooks.progress) hooks.progress(e);
  };
  auto warn = [&](const std::string& w) {
    if (hooks.warn) hooks.warn(w);
  };

  const PrecisionChoice precision = check_precision(options.precision, device);
  if (!precision.warning.empty()) warn(precision.warning);
  if (batch_size < 8 && has_batch_norm(model))
    warn("the model has BatchNorm and the micro-batch is " + std::to_string(batch_size) +
         " samples: BatchNorm statistics follow the micro-batch, not the effective batch of " +
         std::to_string(batch_size * window.accumulate_steps()) + "; consider GroupNorm or LayerNorm");

  if (scheduler) {
    if (scheduler->options().type == "OneCycleLR" && scheduler->options().total_steps <= 0)
      scheduler->set_total_steps(options.epochs * window.updates_per_epoch());
    if (options.scheduler_state.is_null()) scheduler->begin();
    else scheduler->load_state(options.scheduler_state);
  }

  std::optional<GradScaler> scaler;
  if (precision.used == Precision::kFp16 || options.force_grad_scaler) {
    scaler.emplace();
    if (!options.grad_scaler_state.is_null()) scaler->load_state_dict(options.grad_scaler_state);
  }
  auto precision_fields = [&](nlohmann::json& j) {
    j["precision"] = to_string(precision.used);
    if (precision.used != precision.requested) j["precision_requested"] = to_string(precision.requested);
  };
  nlohmann::json config = {
      {"model_class", model.name()},
      {"params", count_parameters(model)},
      {"trainable", count_parameters(model)},
      {"optimizer", optimizer.type},
      {"lr", get_lr(*optimizer.optimizer)},
      {"loss_fn", loss.type},
      {"epochs", options.epochs},
      {"device", device.str()},
      {"batch_size", batch_size},
      {"batches_per_epoch", batches},
      {"updates_per_epoch", window.updates_per_epoch()},
      {"samples", train_data.dataset().size()},
      {"early_stopping", options.early_stopping_patience > 0},
      {"patience", options.early_stopping_patience},
      {"grad_clip_norm", options.grad_clip_norm > 0 ? nlohmann::json(options.grad_clip_norm) : nlohmann::json("disabled")},
      {"has_validation", val_data != nullptr},
      {"has_lr_scheduler", scheduler != nullptr},
      {"accumulate_steps", window.accumulate_steps()},
      {"max_steps", options.max_steps},
      {"effective_batch_size", batch_size * window.accumulate_steps()},
      {"grad_scaler", scaler.has_value()},
  };
  precision_fields(config);
  emit({{"event", "config"}, {"config", config}});

  TrainResult result;
  std::vector<double> lr_history;
  double best = std::numeric_limits<double>::infinity();
  int64_t best_epoch = 0, patience_counter = 0, samples_seen = 0;
  int64_t total_steps = options.initial_steps, total_batches = options.initial_batches;
  int64_t skipped_steps = 0, consecutive_skips = 0;
  std::optional<double> last_grad_norm;
  StateDict best_state;
  bool stopped_early = false, stopped_at_max_steps = false;
  const auto t_start = Clock::now();
  auto last_progress = Clock::now() - std::chrono::hours(1);
  grads.zero();

  int64_t epoch = options.start_epoch;
  for (; epoch < options.epochs && !stopped_at_max_steps; ++epoch) {
    torch::manual_seed(epoch_seed(options.seed, epoch));
    model.train();
    const auto t_epoch = Clock::now();
    const torch::Tensor order = train_data.epoch_order(epoch);
    torch::Tensor loss_sum = torch::zeros({}, torch::TensorOptions().device(device));
    int64_t epoch_batches = 0;
    for (int64_t b = 0; b < batches; ++b) {
      if (hooks.should_stop && hooks.should_stop()) {
        grads.zero();  // Stop drops the pending window (R-ACC-6)
        throw Cancelled();
      }
      Batch batch = train_data.batch(order, b);
      torch::Tensor x = batch.inputs.to(device), y = batch.targets.to(device);
      torch::Tensor l;
      {
        AutocastGuard autocast(precision.used, device);
        l = loss(model.forward(x), y);
      }
      // Divide once, on the total loss (R-ACC-9); report it undivided (R-ACC-4).
      torch::Tensor to_backward = window.accumulate_steps() > 1 ? l * window.loss_scale() : l;
      (scaler ? scaler->scale(to_backward) : to_backward).backward();
      loss_sum += l.detach().to(torch::kFloat);
      ++total_batches;
      ++epoch_batches;
      samples_seen += x.size(0);
      if (!window.ends_update(b)) continue;

      // One update: unscale, clip the whole accumulated gradient, then step (R-ACC-2, R-PREC-7).
      grads.sync();
      if (scaler) scaler->unscale(params);
      torch::Tensor norm;
      if (options.grad_clip_norm > 0) norm = grads.clip(options.grad_clip_norm);
      else if (options.log_grad_norm) norm = grads.norm();
      bool finite = true;
      if (scaler) {
        finite = !scaler->found_inf();  // the one host read per update
        if (finite && norm.defined()) last_grad_norm = norm.item<double>();
      } else if (norm.defined()) {
        last_grad_norm = norm.item<double>();  // the one host read per update
        finite = std::isfinite(*last_grad_norm);
      }
      if (finite) {
        optimizer.optimizer->step();
        if (scheduler && scheduler->steps_per_update()) scheduler->step_update();
        ++total_steps;
        consecutive_skips = 0;
      } else if (scaler) {
        // Expected now and then with fp16: the scale backs off and the window's gradients are dropped.
        ++skipped_steps;
      } else {
        ++skipped_steps;
        warn("update skipped at epoch " + std::to_string(epoch + 1) + ", batch " + std::to_string(b + 1) +
             ": the gradient norm is not finite");
        if (++consecutive_skips >= options.max_consecutive_skips)
          throw std::runtime_error(std::to_string(consecutive_skips) +
                                   " updates in a row had non-finite gradients (NaN or inf); stopping instead of "
                                   "training on garbage: lower the learning rate, clip gradients, or check the data");
      }
      if (scaler) scaler->update();
      grads.zero();  // a skipped update's gradients go too (R-PREC-7)
      if (hooks.progress && seconds_since(last_progress) >= options.progress_interval_s) {
        last_progress = Clock::now();
        const double elapsed = seconds_since(t_epoch);
        nlohmann::json e = {{"event", "batch"},
                            {"epoch", epoch + 1},
                            {"total_epochs", options.epochs},
                            {"batch", b + 1},
                            {"total_batches", batches},
                            {"step", total_steps},
                            {"loss", l.item<double>()},  // at most one more read per update, a few per second
                            {"lr", get_lr(*optimizer.optimizer)},
                            {"samples_per_s", elapsed > 0 ? static_cast<double>((b + 1) * batch_size) / elapsed : 0.0}};
        if (last_grad_norm) e["grad_norm"] = *last_grad_norm;
        emit(e);
      }
      if (options.max_steps > 0 && total_steps >= options.max_steps) {
        stopped_at_max_steps = true;
        break;
      }
    }
    const double epoch_loss = loss_sum.item<double>() / static_cast<double>(epoch_batches);
    result.losses.push_back(epoch_loss);
    lr_history.push_back(get_lr(*optimizer.optimizer));

    // Evaluation and checkpoints only after a completed update (R-ACC-8): the epoch ends on one.
    std::optional<double> val_loss;
    if (val_data) {
      val_loss = evaluate_loss(model, *val_data, loss, device, precision.used);
      result.val_losses.push_back(*val_loss);
    }
    const double monitor = val_loss ? *val_loss : epoch_loss;
    if (scheduler && scheduler->steps_per_epoch()) scheduler->step_epoch(monitor);

    if (options.early_stopping_patience > 0) {
      if (monitor < best) {
        best = monitor;
        best_epoch = epoch + 1;
        patience_counter = 0;
        best_state.clear();
        for (auto& [k, v] : state_dict(model)) best_state.emplace_back(k, v.detach().clone());
      } else {
        ++patience_counter;
      }
    }

    nlohmann::json e = {{"event", "epoch"},   {"epoch", epoch + 1},           {"total_epochs", options.epochs},
                        {"loss", epoch_loss}, {"losses", result.losses},      {"lr", lr_history.back()},
                        {"step", total_steps}, {"seconds", seconds_since(t_epoch)}};
    if (last_grad_norm) e["grad_norm"] = *last_grad_norm;
    if (val_loss) {
      e["val_loss"] = *val_loss;
      e["val_losses"] = result.val_losses;
    }
    if (options.early_stopping_patience > 0) {
      e["patience_counter"] = patience_counter;
      e["best_epoch"] = best_epoch;
    }
    emit(e);
    if (options.early_stopping_patience > 0 && patience_counter >= options.early_stopping_patience) {
      stopped_early = true;
      ++epoch;
      break;
    }
  }
  if (!best_state.empty()) load_state_dict(model, best_state);

  const double seconds = seconds_since(t_start);
  result.metrics = {
      {"final_train_loss", result.losses.empty() ? 0.0 : result.losses.back()},
      {"final_val_loss", result.val_losses.empty() ? nlohmann::json() : nlohmann::json(result.val_losses.back())},
      {"best_epoch", options.early_stopping_patience > 0 ? best_epoch : static_cast<int64_t>(result.losses.size())},
      {"total_epochs_run", result.losses.size()},
      {"start_epoch", options.start_epoch},
      {"last_epoch", epoch},  // epochs completed overall: where a resumed run starts
      {"train_seed", options.seed},
      {"data_seed", train_data.options().seed},
      {"stopped_early", stopped_early},
      {"stopped_at_max_steps", stopped_at_max_steps},
      {"lr_history", lr_history},
      {"total_steps", total_steps},
      {"total_batches", total_batches},
      {"skipped_steps", skipped_steps},
      {"accumulate_steps", window.accumulate_steps()},
      {"effective_batch_size", batch_size * window.accumulate_steps()},
      {"grad_norm", last_grad_norm ? nlohmann::json(*last_grad_norm) : nlohmann::json()},
      {"device", device.str()},
      {"seconds", seconds},
      {"samples_per_second", seconds > 0 ? static_cast<double>(samples_seen) / seconds : 0.0},
  };
  precision_fields(result.metrics);
  if (scheduler) result.metrics["scheduler_state"] = scheduler->state();
  if (scaler) {
    result.grad_scaler_state = scaler->state_dict();
    result.metrics["grad_scale"] = scaler->get_scale();
  }
  return result;
}

}  // namespace codefy::train
