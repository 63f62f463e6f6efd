#include "train/trainer.h"

#include "train/progress.h"

#include "train/accumulation.h"
#include "train/augment.h"
#include "train/bf16_mirrors.h"
#include "train/grad_buffer.h"
#include "train/micro_batch.h"
#include "train/prefetch.h"
#include "train/resume_state.h"
#include "train/serialize.h"
#include "train/update.h"
#include "util/errors.h"
#include "util/random.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
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

/// The seed of LibTorch's RNG for an epoch, from (seed, epoch). The top bit
/// stays cleared as it always was: CUDA's generator reads all 64 bits, so
/// changing it would change every earlier run's dropout draws there.
uint64_t epoch_seed(uint64_t seed, int64_t epoch) {
  return util::splitmix64(seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(epoch)) & 0x7fffffffffffffffULL;
}

bool has_batch_norm(const torch::nn::Module& model) {
  for (const auto& m : model.modules(/*include_self=*/false))
    if (m->name().find("BatchNorm") != std::string::npos) return true;
  return false;
}

}  // namespace

bool is_classification_loss(const LossFunction& loss) {
  return loss.type == "CrossEntropyLoss" || loss.type == "NLLLoss";
}

Evaluation evaluate(Model& model, const DataLoader& data, const LossFunction& loss, c10::Device device,
                    Precision precision) {
  torch::NoGradGuard no_grad;
  model.eval();
  const torch::Tensor order = data.epoch_order(0);
  const int64_t n = data.num_batches();
  const auto on_device = torch::TensorOptions().device(device);
  torch::Tensor sum = torch::zeros({}, on_device);
  // Correct and counted samples, kept on the device like the loss sum.
  torch::Tensor correct = torch::zeros({}, on_device.dtype(torch::kLong));
  torch::Tensor counted = torch::zeros({}, on_device.dtype(torch::kLong));
  bool classify = is_classification_loss(loss);
  for (int64_t b = 0; b < n; ++b) {
    Batch batch = data.batch(order, b);
    const torch::Tensor target = batch.targets.to(device);
    AutocastGuard autocast(precision, device);  // validate in the precision training uses
    auto out = model.forward(batch.inputs.to(device));
    sum += loss(out, target).detach().to(torch::kFloat);
    if (!classify) continue;
    // Class indices: [N] for an [N, C] output ([N, d...] for [N, C, d...]). A
    // class-probability target (floating, shaped like the output) names no
    // single right class: no accuracy then.
    if (out.dim() < 2 || target.dim() != out.dim() - 1 ||
        (target.is_floating_point() && target.sizes() == out.sizes())) {
      classify = false;
      continue;
    }
    const torch::Tensor t = target.to(torch::kLong);
    const torch::Tensor valid = t.ne(-100);  // PyTorch's default ignore_index
    correct += out.argmax(1).eq(t).logical_and(valid).sum();
    counted += valid.sum();
  }
  Evaluation result;
  if (n == 0) return result;
  // One read back for the loss and the counts together.
  const torch::Tensor host =
      torch::stack({sum.to(torch::kDouble), correct.to(torch::kDouble), counted.to(torch::kDouble)}).to(torch::kCPU);
  const double* v = host.data_ptr<double>();
  result.loss = v[0] / static_cast<double>(n);
  if (classify && v[2] > 0) result.accuracy = v[1] / v[2];
  return result;
}

namespace {

/// What one epoch's micro-batches add up to.
struct EpochTotals {
  torch::Tensor loss_sum;  ///< sum of the undivided losses, on the device
  int64_t batches = 0;
};

/// One call of train_model: the run's fixed parts, the counters that outlive
/// an epoch, and the epoch loop over micro_batch_step() and apply_update().
class TrainingRun {
 public:
  TrainingRun(Model& model, const DataLoader& train_data, const DataLoader* val_data, OptimizerHandle& optimizer,
              const LossFunction& loss, Scheduler* scheduler, const TrainOptions& options, const TrainHooks& hooks);
  TrainResult run();

 private:
  void emit(const nlohmann::json& e) const {
    if (hooks_.progress) hooks_.progress(e);
  }
  void warn(const std::string& w) const {
    if (hooks_.warn) hooks_.warn(w);
  }
  GradScaler* scaler() { return scaler_ ? &*scaler_ : nullptr; }
  /// The data-parallel world when it has two or more ranks, else null.
  DataParallel* parallel() const { return parallel_; }
  /// Ranks sharing each update: the world's size, 1 in a single process.
  int64_t world() const { return parallel_ ? parallel_->world_size() : 1; }
  /// Threads cutting batches ahead: num_workers when the data set has an
  /// augmentation to draw; none for batches cut from memory, which workers
  /// only slow down (bench/RESULTS.md, "num_workers").
  int64_t batch_workers() const { return train_data_.dataset().augment ? train_data_.options().num_workers : 0; }
  /// Whether any rank was asked to stop (one collective with data parallelism).
  bool stop_requested(int64_t epoch, int64_t batch);
  void add_precision_fields(nlohmann::json& j) const;
  /// Warnings, the scheduler's start, the scaler and the "config" event.
  void prepare();
  /// The micro-batches and updates of one epoch; stops early at max_steps.
  EpochTotals train_epoch(int64_t epoch, Clock::time_point t_epoch);
  /// Counts an update; a run of non-finite updates without a scaler fails.
  void count_update(const UpdateResult& update, int64_t epoch, int64_t batch);
  void emit_batch_progress(int64_t epoch, int64_t batch, const torch::Tensor& loss, Clock::time_point t_epoch);
  /// Validation, the per-epoch scheduler, early stopping and the "epoch"
  /// event; returns true when early stopping ends the run.
  bool finish_epoch(int64_t epoch, const EpochTotals& totals, Clock::time_point t_epoch);
  bool history_due(bool last_epoch);
  nlohmann::json final_metrics(int64_t epochs_done) const;

  Model& model_;
  const DataLoader& train_data_;
  const DataLoader* val_data_;
  OptimizerHandle& optimizer_;
  const LossFunction& loss_;
  Scheduler* scheduler_;
  const TrainOptions& options_;
  const TrainHooks& hooks_;

  const c10::Device device_;
  DataParallel* const parallel_;
  std::shared_ptr<GradientReducer> reducer_;
  const std::vector<torch::Tensor> params_;
  GradBuffer grads_;  // zero, norm and clip in one op each
  const int64_t batches_;
  const AccumulationWindow window_;
  const int64_t batch_size_;
  PrecisionChoice precision_;
  std::optional<GradScaler> scaler_;
  MicroBatchOptions micro_batch_options_;
  UpdateOptions update_options_;

  TrainResult result_;
  std::vector<double> lr_history_;
  double best_ = std::numeric_limits<double>::infinity();
  int64_t best_epoch_ = 0, patience_counter_ = 0, samples_seen_ = 0;
  int64_t total_steps_ = 0, total_batches_ = 0, skipped_steps_ = 0, consecutive_skips_ = 0;
  std::optional<double> last_grad_norm_;
  StateDict best_state_;
  bool stopped_early_ = false, stopped_at_max_steps_ = false;
  Clock::time_point t_start_, last_progress_;
  std::optional<Clock::time_point> last_history_;  ///< when an epoch event last carried the whole history
};

/// The model's trainable parameters, once it is on the device.
std::vector<torch::Tensor> trainable_on(Model& model, c10::Device device) {
  model.to(device);
  return trainable(model);
}

int64_t batches_of(const DataLoader& data) {
  const int64_t n = data.num_batches();
  if (n == 0) throw std::invalid_argument("the training data loader yields no batches");
  return n;
}

TrainingRun::TrainingRun(Model& model, const DataLoader& train_data, const DataLoader* val_data,
                         OptimizerHandle& optimizer, const LossFunction& loss, Scheduler* scheduler,
                         const TrainOptions& options, const TrainHooks& hooks)
    : model_(model),
      train_data_(train_data),
      val_data_(val_data),
      optimizer_(optimizer),
      loss_(loss),
      scheduler_(scheduler),
      options_(options),
      hooks_(hooks),
      device_(options.device),
      parallel_(options.data_parallel && options.data_parallel->world_size() > 1 ? options.data_parallel.get()
                                                                                 : nullptr),
      reducer_(options.gradient_reducer),
      params_(trainable_on(model, options.device)),
      grads_(params_),
      batches_(batches_of(train_data)),
      window_(batches_, options.accumulate_steps),
      batch_size_(train_data.options().batch_size),
      precision_(check_precision(options.precision, options.device)),
      total_steps_(options.initial_steps),
      total_batches_(options.initial_batches) {
  micro_batch_options_.device = device_;
  micro_batch_options_.precision = precision_.used;
  micro_batch_options_.accumulate_steps = window_.accumulate_steps();
  update_options_.grad_clip_norm = options.grad_clip_norm;
  update_options_.log_grad_norm = options.log_grad_norm;
  if (parallel_ && !reducer_) reducer_ = parallel_->make_gradient_reducer();
}

bool TrainingRun::stop_requested(int64_t epoch, int64_t batch) {
  const bool local = hooks_.should_stop && hooks_.should_stop();
  if (!parallel_) return local;
  // Ranks agree once per update window, at its start, so they all stop
  // before the same update instead of leaving the others in a collective.
  if (!window_.starts_update(batch)) return false;
  parallel_->set_activity("epoch " + std::to_string(epoch + 1) + ", batch " + std::to_string(batch + 1));
  const torch::Tensor flag = torch::full({1}, local ? 1.0f : 0.0f, torch::TensorOptions().device(device_));
  parallel_->all_reduce_sum({flag});
  return flag.item<float>() > 0;
}

void TrainingRun::add_precision_fields(nlohmann::json& j) const {
  j["precision"] = to_string(precision_.used);
  if (precision_.used != precision_.requested) {
    j["precision_requested"] = to_string(precision_.requested);
    j["precision_reason"] = precision_.warning;  // why it fell back, beside the two names
  }
}

void TrainingRun::prepare() {
  if (!precision_.warning.empty()) warn(precision_.warning);
  if (batch_size_ < 8 && has_batch_norm(model_))
    warn("the model has BatchNorm and the micro-batch is " + std::to_string(batch_size_) +
         " samples: BatchNorm statistics follow the micro-batch, not the effective batch of " +
         std::to_string(batch_size_ * window_.accumulate_steps()) + "; consider GroupNorm or LayerNorm");

  if (scheduler_) {
    if (scheduler_->options().type == "OneCycleLR" && scheduler_->options().total_steps <= 0)
      scheduler_->set_total_steps(options_.epochs * window_.updates_per_epoch());
    if (options_.scheduler_state.is_null())
      scheduler_->begin();
    else
      scheduler_->load_state(options_.scheduler_state);
  }

  if (precision_.used == Precision::kFp16 || options_.force_grad_scaler) {
    scaler_.emplace();
    if (!options_.grad_scaler_state.is_null()) scaler_->load_state_dict(options_.grad_scaler_state);
  }
  if (parallel_) {
    // Every rank starts from rank 0's weights and buffers (DDP's constructor).
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> state;
    for (const auto& p : model_.parameters()) state.push_back(p);
    for (const auto& b : model_.buffers()) state.push_back(b);
    parallel_->set_activity("broadcasting the initial weights");
    parallel_->broadcast(state, 0);
  }
  nlohmann::json config = {
      {"model_class", model_.name()},
      {"params", count_parameters(model_)},
      {"trainable", count_parameters(model_)},
      {"optimizer", optimizer_.type},
      {"lr", get_lr(*optimizer_.optimizer)},
      {"loss_fn", loss_.type},
      {"epochs", options_.epochs},
      {"device", device_.str()},
      {"batch_size", batch_size_},
      {"batches_per_epoch", batches_},
      {"updates_per_epoch", window_.updates_per_epoch()},
      {"samples", train_data_.dataset().size()},
      {"early_stopping", options_.early_stopping_patience > 0},
      {"patience", options_.early_stopping_patience},
      {"grad_clip_norm",
       options_.grad_clip_norm > 0 ? nlohmann::json(options_.grad_clip_norm) : nlohmann::json("disabled")},
      {"has_validation", val_data_ != nullptr},
      {"has_lr_scheduler", scheduler_ != nullptr},
      {"accumulate_steps", window_.accumulate_steps()},
      {"max_steps", options_.max_steps},
      {"effective_batch_size", batch_size_ * window_.accumulate_steps() * world()},
      {"grad_scaler", scaler_.has_value()},
      {"strategy", parallel_ ? "ddp" : "single"},
      {"world_size", world()},
  };
  if (parallel_) {
    config["backend"] = parallel_->backend();
    config["rendezvous"] = parallel_->rendezvous();
    config["samples_per_rank"] = train_data_.num_samples();
    config["evaluation"] = "every rank evaluates the whole validation set (identical weights, identical results)";
  }
  config["num_workers"] = train_data_.options().num_workers;
  config["batch_workers"] = batch_workers();
  config["pin_memory"] = train_data_.options().pin_memory && pinning_available();
  config["augmentation"] =
      train_data_.dataset().augment ? train_data_.dataset().augment->to_json()["steps"] : nlohmann::json();
  config["threads"] = at::get_num_threads();
  if (!options_.threads_reason.empty()) config["threads_reason"] = options_.threads_reason;
  add_precision_fields(config);
  emit(ConfigProgress{config}.to_json());
}

/// For the length of a run in CPU bf16, the optimizer writes the model's
/// bf16 weight copies in its update pass (else the model casts them again
/// at the next forward).
class MirrorsKept {
 public:
  MirrorsKept(Model& model, torch::optim::Optimizer& optimizer, bool cpu_bf16)
      : writer_(cpu_bf16 ? dynamic_cast<WritesBf16Mirrors*>(&optimizer) : nullptr) {
    if (writer_) writer_->write_bf16_mirrors(model.bf16_mirrors());
  }
  ~MirrorsKept() {
    if (writer_) writer_->write_bf16_mirrors(nullptr);
  }
  MirrorsKept(const MirrorsKept&) = delete;
  MirrorsKept& operator=(const MirrorsKept&) = delete;

 private:
  WritesBf16Mirrors* writer_;
};

TrainResult TrainingRun::run() {
  prepare();
  const MirrorsKept mirrors(model_, *optimizer_.optimizer, precision_.used == Precision::kBf16 && device_.is_cpu());
  t_start_ = Clock::now();
  last_progress_ = Clock::now() - std::chrono::hours(1);
  grads_.zero();

  int64_t epoch = options_.start_epoch;
  for (; epoch < options_.epochs && !stopped_at_max_steps_; ++epoch) {
    // Seeded per epoch, so dropout in epoch e draws the same numbers whether or not the run resumed.
    torch::manual_seed(epoch_seed(options_.seed, epoch));
    model_.train();
    const auto t_epoch = Clock::now();
    const EpochTotals totals = train_epoch(epoch, t_epoch);
    if (finish_epoch(epoch, totals, t_epoch)) {
      ++epoch;
      break;
    }
  }
  if (!best_state_.empty()) load_state_dict(model_, best_state_);
  result_.metrics = final_metrics(epoch);
  if (scaler_) result_.grad_scaler_state = scaler_->state_dict();
  return std::move(result_);
}

EpochTotals TrainingRun::train_epoch(int64_t epoch, Clock::time_point t_epoch) {
  const torch::Tensor order = train_data_.epoch_order(epoch);
  GradientReducer* reducer = reducer_.get();
  std::vector<torch::Tensor> buffers;  // broadcast from rank 0 before each forward, as DDP's broadcast_buffers
  if (parallel_)
    for (const auto& b : model_.buffers()) buffers.push_back(b);
  EpochTotals totals;
  totals.loss_sum = torch::zeros({}, torch::TensorOptions().device(device_));
  // num_workers: batches cut ahead on worker threads (stopped with the epoch).
  std::optional<BatchPrefetcher> prefetch;
  if (batch_workers() > 0) prefetch.emplace(train_data_, order, epoch, batch_workers());
  // With accumulation and 16-bit autocast: the window's cast weights, cast once.
  std::unique_ptr<AutocastCacheScope> window_casts;
  const bool cache_window_casts = micro_batch_options_.precision != Precision::kFp32 && window_.accumulate_steps() > 1;
  for (int64_t b = 0; b < batches_; ++b) {
    if (stop_requested(epoch, b)) {
      grads_.zero();  // Stop drops the window in progress: no partial gradients outlive the run
      throw Cancelled();
    }
    Batch batch = prefetch ? prefetch->next() : train_data_.batch(order, b, epoch);
    // Pinned batches (pin_memory) copy to a CUDA device without blocking the host.
    torch::Tensor x = batch.inputs.to(device_, batch.inputs.is_pinned()),
                  y = batch.targets.to(device_, batch.targets.is_pinned());
    const bool ends_window = window_.ends_update(b);
    if (reducer) reducer->begin_micro_batch(ends_window);
    if (!buffers.empty()) {
      torch::NoGradGuard no_grad;
      parallel_->broadcast(buffers, 0);
    }
    if (cache_window_casts && !window_casts)
      window_casts = std::make_unique<AutocastCacheScope>(micro_batch_options_.precision);
    const torch::Tensor loss = micro_batch_step(model_, loss_, x, y, micro_batch_options_, scaler());
    totals.loss_sum += loss.to(torch::kFloat);
    ++total_batches_;
    ++totals.batches;
    samples_seen_ += x.size(0);
    if (!ends_window) continue;
    window_casts.reset();  // before the update changes the weights

    if (parallel_)
      parallel_->set_activity("epoch " + std::to_string(epoch + 1) + ", update " + std::to_string(total_steps_ + 1) +
                              " (gradient all-reduce)");
    count_update(apply_update(grads_, *optimizer_.optimizer, update_options_, scaler(), scheduler_, reducer), epoch, b);
    if (hooks_.progress && seconds_since(last_progress_) >= options_.progress_interval_s)
      emit_batch_progress(epoch, b, loss, t_epoch);
    if (options_.max_steps > 0 && total_steps_ >= options_.max_steps) {
      stopped_at_max_steps_ = true;
      break;
    }
  }
  return totals;
}

void TrainingRun::count_update(const UpdateResult& update, int64_t epoch, int64_t batch) {
  if (update.grad_norm) last_grad_norm_ = update.grad_norm;
  if (update.stepped) {
    ++total_steps_;
    consecutive_skips_ = 0;
    return;
  }
  ++skipped_steps_;
  if (scaler_) return;  // expected now and then with fp16: the scale has backed off
  warn("update skipped at epoch " + std::to_string(epoch + 1) + ", batch " + std::to_string(batch + 1) +
       ": the gradient norm is not finite");
  if (++consecutive_skips_ >= options_.max_consecutive_skips)
    throw std::runtime_error(std::to_string(consecutive_skips_) +
                             " updates in a row had non-finite gradients (NaN or inf); stopping instead of "
                             "training on garbage: lower the learning rate, clip gradients, or check the data");
}

void TrainingRun::emit_batch_progress(int64_t epoch, int64_t batch, const torch::Tensor& loss,
                                      Clock::time_point t_epoch) {
  last_progress_ = Clock::now();
  const double elapsed = seconds_since(t_epoch);
  BatchProgress e;
  e.epoch = epoch + 1;
  e.total_epochs = options_.epochs;
  e.batch = batch + 1;
  e.total_batches = batches_;
  e.step = total_steps_;
  e.loss = loss.item<double>();  // the one extra host read, a few times a second at most
  e.lr = get_lr(*optimizer_.optimizer);
  e.samples_per_s = elapsed > 0 ? static_cast<double>((batch + 1) * batch_size_ * world()) / elapsed : 0.0;
  e.grad_norm = last_grad_norm_;
  emit(e.to_json());
}

/// Whether this epoch's event carries the whole history (losses, val_losses,
/// val_accuracies, as CodefyUI's clients chart it): the first and the last
/// epoch's do, others once per progress interval, stretched by the history's
/// length past 1000 epochs. Sent every epoch, the arrays made each message grow
/// with the run (70 KB per event at epoch 1500 of a run doing 40 epochs a
/// second) until the editor fell seconds behind its own stream; this way the
/// bytes per second stay bounded however long and fast the run is.
bool TrainingRun::history_due(bool last_epoch) {
  const double stretch = std::max(1.0, static_cast<double>(result_.losses.size()) / 1000.0);
  if (!last_epoch && last_history_ && seconds_since(*last_history_) < options_.progress_interval_s * stretch)
    return false;
  last_history_ = Clock::now();
  return true;
}

bool TrainingRun::finish_epoch(int64_t epoch, const EpochTotals& totals, Clock::time_point t_epoch) {
  torch::Tensor loss_sum = totals.loss_sum.reshape({1}).clone();
  if (parallel_) {
    // The epoch's loss is the mean over ranks (every shard has as many batches).
    parallel_->set_activity("epoch " + std::to_string(epoch + 1) + ", averaging the loss");
    parallel_->all_reduce_sum({loss_sum});
  }
  const double epoch_loss = loss_sum.item<double>() / static_cast<double>(totals.batches * world());
  result_.losses.push_back(epoch_loss);
  lr_history_.push_back(get_lr(*optimizer_.optimizer));

  // The epoch ended on a completed update (windows never cross epochs), so
  // validation and the best weights see no half-accumulated gradient.
  std::optional<double> val_loss, val_accuracy;
  if (val_data_) {
    const Evaluation val = evaluate(model_, *val_data_, loss_, device_, precision_.used);
    val_loss = val.loss;
    val_accuracy = val.accuracy;
    result_.val_losses.push_back(val.loss);
    if (val.accuracy) result_.val_accuracies.push_back(*val.accuracy);
  }
  const double monitor = val_loss ? *val_loss : epoch_loss;
  if (scheduler_ && scheduler_->steps_per_epoch()) scheduler_->step_epoch(monitor);

  if (options_.early_stopping_patience > 0) {
    if (monitor < best_) {
      best_ = monitor;
      best_epoch_ = epoch + 1;
      patience_counter_ = 0;
      best_state_.clear();
      for (auto& [k, v] : state_dict(model_)) best_state_.emplace_back(k, v.detach().clone());
    } else {
      ++patience_counter_;
    }
  }

  stopped_early_ = options_.early_stopping_patience > 0 && patience_counter_ >= options_.early_stopping_patience;
  EpochProgress e;
  e.epoch = epoch + 1;
  e.total_epochs = options_.epochs;
  e.loss = epoch_loss;
  e.lr = lr_history_.back();
  e.step = total_steps_;
  e.seconds = seconds_since(t_epoch);
  e.grad_norm = last_grad_norm_;
  e.val_loss = val_loss;
  e.val_accuracy = val_accuracy;
  if (options_.early_stopping_patience > 0) {
    e.patience_counter = patience_counter_;
    e.best_epoch = best_epoch_;
  }
  if (history_due(epoch + 1 >= options_.epochs || stopped_early_)) {
    e.losses = result_.losses;
    if (val_loss) e.val_losses = result_.val_losses;
    if (val_accuracy) e.val_accuracies = result_.val_accuracies;
  }
  emit(e.to_json());
  return stopped_early_;
}

nlohmann::json TrainingRun::final_metrics(int64_t epochs_done) const {
  const double seconds = seconds_since(t_start_);
  nlohmann::json m = {
      {"final_train_loss", result_.losses.empty() ? 0.0 : result_.losses.back()},
      {"final_val_loss", result_.val_losses.empty() ? nlohmann::json() : nlohmann::json(result_.val_losses.back())},
      {"val_accuracies", result_.val_accuracies},
      {"final_val_accuracy",
       result_.val_accuracies.empty() ? nlohmann::json() : nlohmann::json(result_.val_accuracies.back())},
      {"best_epoch", options_.early_stopping_patience > 0 ? best_epoch_ : static_cast<int64_t>(result_.losses.size())},
      {"total_epochs_run", result_.losses.size()},
      {"start_epoch", options_.start_epoch},
      {"stopped_early", stopped_early_},
      {"stopped_at_max_steps", stopped_at_max_steps_},
      {"lr_history", lr_history_},
      {"skipped_steps", skipped_steps_},
      {"accumulate_steps", window_.accumulate_steps()},
      {"train_samples", train_data_.dataset().size()},
      {"effective_batch_size", batch_size_ * window_.accumulate_steps() * world()},
      {"strategy", parallel_ ? "ddp" : "single"},
      {"world_size", world()},
      {"grad_norm", last_grad_norm_ ? nlohmann::json(*last_grad_norm_) : nlohmann::json()},
      {"device", device_.str()},
      {"seconds", seconds},
      {"samples_per_second", seconds > 0 ? static_cast<double>(samples_seen_ * world()) / seconds : 0.0},
  };
  if (parallel_) {
    m["backend"] = parallel_->backend();
    m["rendezvous"] = parallel_->rendezvous();
    m["ddp"] = parallel_->counters();
  }
  add_precision_fields(m);
  // What a checkpoint of this run resumes from (CheckpointSaver keeps it).
  ResumeState resume;
  resume.last_epoch = epochs_done;  // epochs completed overall
  resume.total_steps = total_steps_;
  resume.total_batches = total_batches_;
  resume.train_seed = options_.seed;
  resume.data_seed = train_data_.options().seed;
  if (scheduler_) resume.scheduler_state = scheduler_->state();
  resume.write_to(m);  // the scaler's state is an output port of its own
  if (scaler_) m["grad_scale"] = scaler_->get_scale();
  return m;
}

}  // namespace

TrainResult train_model(Model& model, const DataLoader& train_data, const DataLoader* val_data,
                        OptimizerHandle& optimizer, const LossFunction& loss, Scheduler* scheduler,
                        const TrainOptions& options, const TrainHooks& hooks) {
  return TrainingRun(model, train_data, val_data, optimizer, loss, scheduler, options, hooks).run();
}

}  // namespace codefy::train
