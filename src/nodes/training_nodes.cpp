// Training: Loss, Optimizer, LRScheduler, TrainingLoop, EvaluateModel.
#include "nodes/library.h"

#include "device/memory.h"
#include "device/runtime.h"
#include "train/data_parallel.h"
#include "train/progress.h"
#include "train/resume_state.h"
#include "train/trainer.h"
#include "util/list.h"
#include "util/parse.h"

#include <torch/torch.h>

#include <iomanip>
#include <optional>
#include <sstream>

namespace codefy {

using graph::DataType;

namespace {

/// The peak bytes of a data-parallel run: per device the largest over the
/// ranks on it (a rank's card is known by its index; the CPU is every
/// rank's), and each rank's own, in rank order. One collective: every rank
/// calls it.
struct RankPeaks {
  nlohmann::json per_device = nlohmann::json::object();
  nlohmann::json per_rank = nlohmann::json::array();
};
/// Sets LibTorch's intra-op threads for one node and puts the previous
/// count back when it ends.
class ThreadsForNode {
 public:
  explicit ThreadsForNode(int threads) : previous_(at::get_num_threads()) { at::set_num_threads(threads); }
  ~ThreadsForNode() { at::set_num_threads(previous_); }
  ThreadsForNode(const ThreadsForNode&) = delete;
  ThreadsForNode& operator=(const ThreadsForNode&) = delete;

 private:
  int previous_;
};

RankPeaks peaks_over_ranks(train::DataParallel& world, c10::Device device) {
  const auto cpu = device::read_memory(c10::Device(c10::kCPU));
  const auto dev = device.is_cpu() ? device::MemoryReading{} : device::read_memory(device);
  auto t = torch::zeros({world.world_size(), 3}, torch::kFloat64);
  t[world.rank()][0] = cpu.counted ? static_cast<double>(cpu.peak_bytes) : -1.0;
  t[world.rank()][1] = dev.counted ? static_cast<double>(dev.peak_bytes) : -1.0;
  t[world.rank()][2] = device.is_cpu() ? -1.0 : static_cast<double>(device.index());
  world.all_reduce_sum({t});
  RankPeaks p;
  const auto put_max = [&p](const std::string& key, double bytes) {
    if (bytes < 0) return;
    const auto b = static_cast<int64_t>(bytes);
    if (!p.per_device.contains(key) || p.per_device[key].get<int64_t>() < b) p.per_device[key] = b;
  };
  for (int64_t r = 0; r < world.world_size(); ++r) {
    const auto row = t[r];
    nlohmann::json mine = nlohmann::json::object();
    const double cpu_bytes = row[0].item<double>(), dev_bytes = row[1].item<double>();
    const int64_t index = static_cast<int64_t>(row[2].item<double>());
    put_max("cpu", cpu_bytes);
    if (cpu_bytes >= 0) mine["cpu"] = static_cast<int64_t>(cpu_bytes);
    if (index >= 0 && dev_bytes >= 0) {
      const std::string key = c10::Device(device.type(), static_cast<c10::DeviceIndex>(index)).str();
      put_max(key, dev_bytes);
      mine[key] = static_cast<int64_t>(dev_bytes);
    }
    p.per_rank.push_back(mine);
  }
  return p;
}

/// "0.9, 0.999" → {0.9, 0.999}.
std::vector<double> parse_numbers(const std::string& s, const std::string& param) {
  std::vector<double> v;
  for (const auto& item : util::split_list(s)) {
    const auto x = util::parse_double(item);
    if (!x) NodeContext::fail_param(param, "\"" + item + "\" is not a number (expected a comma-separated list)");
    v.push_back(*x);
  }
  return v;
}

void register_loss(NodeRegistry& r) {
  r.add({"Loss",
         "Training",
         "Create a loss function (mean over the batch).",
         {},
         {def::out("loss_fn", DataType::kLossFn, "Loss function")},
         {def::select("type", "CrossEntropyLoss", train::loss_types(), "Loss function"),
          def::number("label_smoothing", 0.0, "CrossEntropyLoss label smoothing", 0.0, 1.0),
          def::advanced(def::number("beta", 1.0, "SmoothL1Loss beta", 0.0)),
          def::advanced(def::number("delta", 1.0, "HuberLoss delta", 0.0))}},
        [](NodeContext& ctx) {
          train::LossOptions o;
          o.label_smoothing = ctx.param_float("label_smoothing");
          o.beta = ctx.param_float("beta");
          o.delta = ctx.param_float("delta");
          const std::string type = ctx.param_string("type");
          if (o.label_smoothing != 0.0 && type != "CrossEntropyLoss")
            NodeContext::fail_param("label_smoothing", "only CrossEntropyLoss takes label smoothing, not " + type);
          return ValueMap{{"loss_fn", train::make_loss(type, o)}};
        });
}

void register_optimizer(NodeRegistry& r) {
  graph::NodeDef d{"Optimizer",
                   "Training",
                   "Create an optimizer for a model's parameters.",
                   {def::in("model", DataType::kModel, "Model whose parameters it updates")},
                   {def::out("optimizer", DataType::kOptimizer, "Optimizer (its state lives on through training)")},
                   {def::select("type", "Adam", train::optimizer_types(), "Algorithm"),
                    def::number("lr", 0.001, "Learning rate", 0.0),
                    def::number("weight_decay", 0.0, "Weight decay (L2; decoupled for AdamW)", 0.0),
                    def::number("momentum", 0.0, "Momentum (SGD, RMSprop)", 0.0),
                    def::advanced(def::text("betas", "0.9, 0.999", "Adam/AdamW betas")),
                    def::advanced(def::number("eps", 1e-8, "Term added for numerical stability", 0.0)),
                    def::advanced(def::boolean("amsgrad", false, "AMSGrad variant (Adam/AdamW)")),
                    def::advanced(def::boolean("nesterov", false, "Nesterov momentum (SGD)")),
                    def::advanced(def::number("dampening", 0.0, "Momentum dampening (SGD)", 0.0)),
                    def::advanced(def::number("alpha", 0.99, "Smoothing constant (RMSprop)", 0.0, 1.0)),
                    def::advanced(def::boolean("centered", false, "Centered RMSprop")),
                    def::advanced(def::number("lr_decay", 0.0, "Learning-rate decay (Adagrad)", 0.0))}};
  d.cacheable = false;
  r.add(std::move(d), [](NodeContext& ctx) {
    auto model = ctx.input_as<train::ModelPtr>("model");
    train::OptimizerOptions o;
    o.type = ctx.param_string("type");
    o.lr = ctx.param_float("lr");
    o.weight_decay = ctx.param_float("weight_decay");
    o.momentum = ctx.param_float("momentum");
    const auto betas = parse_numbers(ctx.param_string("betas"), "betas");
    if (betas.size() != 2) NodeContext::fail_param("betas", "expected two numbers, e.g. \"0.9, 0.999\"");
    o.beta1 = betas[0];
    o.beta2 = betas[1];
    o.eps = ctx.param_float("eps");
    if (o.type == "Adagrad" && !ctx.params().contains("eps")) o.eps = 1e-10;
    o.amsgrad = ctx.param_bool("amsgrad");
    o.nesterov = ctx.param_bool("nesterov");
    o.dampening = ctx.param_float("dampening");
    o.alpha = ctx.param_float("alpha");
    o.centered = ctx.param_bool("centered");
    o.lr_decay = ctx.param_float("lr_decay");
    auto handle = std::make_shared<train::OptimizerHandle>();
    handle->type = o.type;
    handle->options = o;
    handle->model = model;
    try {
      handle->optimizer = train::make_optimizer(model->parameters(), o);
    } catch (const std::invalid_argument& e) {
      NodeContext::fail_param("type", e);
    }
    return ValueMap{{"optimizer", train::OptimizerPtr(handle)}};
  });
}

void register_scheduler(NodeRegistry& r) {
  graph::NodeDef d{
      "LRScheduler",
      "Training",
      "Create a learning-rate schedule for an optimizer. OneCycleLR and warmup step per optimizer "
      "update, the others per epoch.",
      {def::in("optimizer", DataType::kOptimizer, "Optimizer whose learning rate it sets")},
      {def::out("scheduler", DataType::kAny, "Configured LR scheduler")},
      {def::select("type", "StepLR", train::scheduler_types(), "Schedule"),
       def::integer("step_size", 10, "StepLR: epochs between decays", 1),
       def::number("gamma", 0.1, "Decay factor (StepLR, MultiStepLR, ExponentialLR; ReduceLROnPlateau's factor)", 0.0),
       def::integer("T_max", 50, "CosineAnnealingLR: epochs of one half cosine", 1),
       def::number("max_lr", 0.01, "OneCycleLR: peak learning rate", 0.0),
       def::integer("total_steps", 0, "OneCycleLR: updates in the cycle (0 = epochs x batches)", 0),
       def::advanced(def::text("milestones", "", "MultiStepLR: comma-separated epochs (empty = step_size x 1..4)")),
       def::advanced(def::number("eta_min", 0.0, "CosineAnnealingLR: minimum learning rate", 0.0)),
       def::advanced(def::number("pct_start", 0.3, "OneCycleLR: fraction of the cycle spent rising", 0.0, 1.0)),
       def::advanced(def::integer("patience", 10, "ReduceLROnPlateau: epochs without improvement", 0)),
       def::advanced(def::number("min_lr", 0.0, "ReduceLROnPlateau: lower bound", 0.0)),
       def::advanced(def::integer("warmup_steps", 0, "Linear warmup over this many updates (any type)", 0)),
       def::advanced(def::number("warmup_start_factor", 0.0, "Warmup starts at lr x this factor", 0.0, 1.0))}};
  d.cacheable = false;
  r.add(std::move(d), [](NodeContext& ctx) {
    auto opt = ctx.input_as<train::OptimizerPtr>("optimizer");
    train::SchedulerOptions o;
    o.type = ctx.param_string("type");
    o.step_size = ctx.param_int("step_size");
    o.gamma = ctx.param_float("gamma");
    o.factor = o.gamma;
    o.t_max = ctx.param_int("T_max");
    o.max_lr = ctx.param_float("max_lr");
    o.total_steps = ctx.param_int("total_steps");
    for (double m : parse_numbers(ctx.param_string("milestones"), "milestones"))
      o.milestones.push_back(static_cast<int64_t>(m));
    if (o.milestones.empty())
      for (int64_t i = 1; i <= 4; ++i) o.milestones.push_back(o.step_size * i);
    o.eta_min = ctx.param_float("eta_min");
    o.pct_start = ctx.param_float("pct_start");
    o.patience = ctx.param_int("patience");
    o.min_lr = ctx.param_float("min_lr");
    o.warmup_steps = ctx.param_int("warmup_steps");
    o.warmup_start_factor = ctx.param_float("warmup_start_factor");
    if (o.type == "LinearWarmup" && o.warmup_steps == 0)
      NodeContext::fail_param("warmup_steps", "LinearWarmup needs warmup_steps > 0");
    return ValueMap{{"scheduler", std::make_shared<train::Scheduler>(*opt->optimizer, o)}};
  });
}

/// TrainingLoop's definition: ports, params and what it declares of itself.
graph::NodeDef training_loop_def() {
  graph::NodeDef d{
      "TrainingLoop",
      "Training",
      "Train a model: epochs of mini-batches with optional validation, early stopping, learning-rate schedule and "
      "gradient clipping. Stop ends it between batches; the optimizer's state carries on.",
      {def::in("model", DataType::kModel, "Model to train"),
       def::in("dataloader", DataType::kDataLoader, "Training batches"),
       def::in("optimizer", DataType::kOptimizer, "Optimizer (of this model's parameters)"),
       def::in("loss_fn", DataType::kLossFn, "Loss function"),
       def::in("val_dataloader", DataType::kDataLoader, "Validation batches", true),
       def::in("lr_scheduler", DataType::kAny, "Learning-rate scheduler", true),
       def::in("grad_scaler_state", DataType::kAny,
               "fp16 gradient scaler state to continue from (from CheckpointLoader); fp32/bf16 need none", true),
       def::in("resume_state", DataType::kAny,
               "From CheckpointLoader: continue at the saved epoch with the saved counters, seeds and schedule, "
               "landing on the same weights as one uninterrupted run",
               true)},
      {def::out("model", DataType::kModel, "Trained model (best if early stopping)"),
       def::out("losses", DataType::kTensor, "Training loss per epoch"),
       def::out("val_losses", DataType::kTensor, "Validation loss per epoch (empty without val_dataloader)"),
       def::out("metrics", DataType::kAny, "Training metrics (final losses, best epoch, lr history, counters)"),
       def::out("grad_scaler_state", DataType::kAny, "fp16 gradient scaler state (null unless fp16 ran)"),
       def::out("optimizer", DataType::kOptimizer,
                "The optimizer after training, its state (moments, step counts) included: wire it to a "
                "CheckpointSaver")},
      {def::integer("epochs", 5, "Passes over the training data", 1),
       def::device("Where to train ('auto' follows the run's device)"),
       def::integer("early_stopping_patience", 0, "Epochs without improvement before stopping (0 = off)", 0),
       def::number("grad_clip_norm", 0.0, "Clip the global gradient norm (0 = off)", 0.0),
       def::advanced(def::select("precision", "fp32", {"fp32", "bf16", "fp16"},
                                 "Mixed precision: bf16 autocast (no scaler), fp16 autocast; falls back to fp32 with a "
                                 "warning where the device cannot")),
       def::advanced(def::integer("accumulate_steps", 1,
                                  "Micro-batches per optimizer update: batch 8 x 4 equals batch 32 with a quarter of "
                                  "the activation memory",
                                  1)),
       def::advanced(def::integer("max_steps", 0, "Stop after this many optimizer updates (0 = no limit)", 0)),
       def::advanced(def::select("strategy", "single", {"single", "ddp"},
                                 "ddp: data-parallel over the ranks of `codefy run --nproc-per-node N` or of a server "
                                 "worker with several cards or CPU processes (one process per card or CPU share); "
                                 "batch_size is per rank. Without ranks: single, with a warning")),
       def::advanced(def::boolean("log_grad_norm", true,
                                  "Report the gradient L2 norm per update and skip updates where it is NaN/inf"))}};
  d.cacheable = false;
  d.memory_hints = {"", "dataloader", "precision", "accumulate_steps"};
  d.ranks_when = {"strategy", "ddp"};
  d.reports_results = true;
  return d;
}

/// strategy ddp: joins the run's data-parallel world (o.data_parallel) and
/// gives this rank's shard of `loader`, by DistributedSampler's rules; without
/// a world of two or more, says so and gives `loader` itself.
train::DataLoaderPtr shard_for_ranks(NodeContext& ctx, const train::DataLoaderPtr& loader, train::TrainOptions& o) {
  if (ctx.param_string("strategy") != "ddp") return loader;
  const auto& world = ctx.run().data_parallel;
  if (!world) {
    ctx.warn(
        "strategy ddp needs several processes and this run is one (start it with `codefy run "
        "--nproc-per-node N`, or queue it to a server worker with several: two or more cards, or "
        "`codefy serve --worker cpu2=cpu*2`); training in a single process");
    return loader;
  }
  if (world->world_size() < 2) {
    ctx.warn("strategy ddp with a world of 1 process: training in a single process");
    return loader;
  }
  o.data_parallel = world;
  auto shard = loader->options();
  shard.num_replicas = world->world_size();
  shard.rank = world->rank();
  return std::make_shared<const train::DataLoader>(loader->dataset_ptr(), shard);
}

/// A resume_state input: where the saved run was (epoch, counters, seeds,
/// schedule, scaler) goes into `o`, and the data order continues with the
/// saved run's seed (a new `train_loader` when it differs).
void apply_resume(NodeContext& ctx, const nlohmann::json& resume_json, const train::DataLoader& loader,
                  train::DataLoaderPtr& train_loader, train::TrainOptions& o) {
  train::ResumeState resume;
  try {
    resume = train::ResumeState::from_json(resume_json);
  } catch (const std::invalid_argument& e) {
    NodeContext::fail_input("resume_state",
                            std::string("expected the resume_state output of a CheckpointLoader: ") + e.what());
  }
  o.start_epoch = resume.last_epoch;
  o.initial_steps = resume.total_steps;
  o.initial_batches = resume.total_batches;
  o.seed = resume.train_seed.value_or(o.seed);
  o.scheduler_state = resume.scheduler_state;
  if (o.grad_scaler_state.is_null()) o.grad_scaler_state = resume.grad_scaler_state;
  const uint64_t data_seed = resume.data_seed.value_or(loader.options().seed);
  if (data_seed != train_loader->options().seed) {
    auto opts = train_loader->options();
    opts.seed = data_seed;
    train_loader = std::make_shared<const train::DataLoader>(train_loader->dataset_ptr(), opts);
  }
  if (o.start_epoch >= o.epochs)
    ctx.warn("the checkpoint is at epoch " + std::to_string(o.start_epoch) + " and epochs is " +
             std::to_string(o.epochs) + ": nothing left to train (epochs counts the total)");
}

void register_training_loop(NodeRegistry& r) {
  graph::NodeDef d = training_loop_def();
  r.add(std::move(d), [](NodeContext& ctx) {
    auto model = ctx.input_as<train::ModelPtr>("model");
    const auto& loader = ctx.input_as<train::DataLoaderPtr>("dataloader");
    const auto& opt = ctx.input_as<train::OptimizerPtr>("optimizer");
    const auto& loss = ctx.input_as<train::LossPtr>("loss_fn");
    const train::DataLoaderPtr* val = ctx.input_if<train::DataLoaderPtr>("val_dataloader");
    const train::SchedulerPtr* sched = ctx.input_if<train::SchedulerPtr>("lr_scheduler");
    if (opt->model != model)
      NodeContext::fail_input("optimizer",
                              "the optimizer was made for another model: connect the same model to the Optimizer's "
                              "\"model\" input and to this TrainingLoop's \"model\" input");
    train::TrainOptions o;
    o.epochs = ctx.param_int("epochs");
    o.early_stopping_patience = ctx.param_int("early_stopping_patience");
    o.grad_clip_norm = ctx.param_float("grad_clip_norm");
    o.device = ctx.device();
    device::reset_peak(o.device);  // the CPU's was reset when the node started; this adds CUDA's
    // Live (or peak) bytes per device with a counter: CPU and the training device.
    auto memory_by_device = [&o](bool peak) {
      nlohmann::json j = nlohmann::json::object();
      for (const c10::Device d : {c10::Device(c10::kCPU), o.device}) {
        const device::MemoryReading m = device::read_memory(d);
        if (m.counted) j[d.str()] = peak ? m.peak_bytes : m.live_bytes;
      }
      return j;
    };
    const nlohmann::json start_memory = memory_by_device(false);  // model, data, optimizer state so far
    o.precision = train::parse_precision(ctx.param_string("precision"));
    o.accumulate_steps = ctx.param_int("accumulate_steps");
    o.max_steps = ctx.param_int("max_steps");
    o.log_grad_norm = ctx.param_bool("log_grad_norm");
    train::DataLoaderPtr train_loader = shard_for_ranks(ctx, loader, o);
    // On the CPU, unless the person running it set the thread count: one
    // intra-op thread for a small model (a second one only costs there),
    // all usable CPUs for a larger one; the rule reads the model's
    // multiply-adds on the first batch, so the same graph always gets the
    // same count (thread counts change the order of sums).
    std::optional<ThreadsForNode> threads;
    if (!ctx.run().threads_forced && o.device.is_cpu() && train_loader->num_batches() > 0) {
      const torch::Tensor first = train_loader->batch(train_loader->epoch_order(0), 0).inputs;
      const double work = train::forward_multiply_adds(*model, first);
      const int chosen = device::threads_for_work(work, device::usable_cpus());
      threads.emplace(chosen);
      std::ostringstream why;
      why << chosen << (chosen == 1 ? " thread" : " threads") << " for " << std::setprecision(2) << work
          << " multiply-adds per forward batch (one thread below " << device::kOneThreadBelowMultiplyAdds
          << "; --threads N sets it)";
      o.threads_reason = why.str();
    }
    if (const auto* state = ctx.input_if<nlohmann::json>("grad_scaler_state")) o.grad_scaler_state = *state;
    o.seed = ctx.seed();
    if (const auto* resume = ctx.input_if<nlohmann::json>("resume_state"))
      apply_resume(ctx, *resume, *loader, train_loader, o);
    train::TrainHooks hooks;
    hooks.warn = [&ctx](const std::string& w) { ctx.warn(w); };
    // Each epoch event carries the peak bytes so far per device (host-side
    // counters, no device sync), so the editor shows memory during the run.
    hooks.progress = [&ctx, &memory_by_device](const nlohmann::json& e) {
      auto epoch = train::EpochProgress::from_json(e);
      if (!epoch) return ctx.progress(e);
      epoch->peak_memory_bytes = memory_by_device(true);
      ctx.progress(epoch->to_json());
    };
    hooks.should_stop = [&ctx] { return ctx.cancel().cancelled(); };
    train::TrainResult res = train::train_model(*model, *train_loader, val ? val->get() : nullptr, *opt, *loss,
                                                sched ? sched->get() : nullptr, o, hooks);
    res.metrics["peak_memory_bytes"] = memory_by_device(true);  // since the node started (reset per node)
    if (o.data_parallel) {
      RankPeaks peaks = peaks_over_ranks(*o.data_parallel, o.device);
      res.metrics["peak_memory_bytes"] = std::move(peaks.per_device);
      res.metrics["peak_memory_bytes_per_rank"] = std::move(peaks.per_rank);
    }
    res.metrics["start_memory_bytes"] = start_memory;
    if (const device::MemoryReading m = device::read_memory(o.device); m.peak_reserved_bytes)
      res.metrics["peak_reserved_memory_bytes"] = {{o.device.str(), *m.peak_reserved_bytes}};
    res.metrics["warnings"] = ctx.warnings();
    auto to_tensor = [](const std::vector<double>& v) {
      return torch::tensor(std::vector<float>(v.begin(), v.end()), torch::kFloat);
    };
    return ValueMap{{"model", model},
                    {"losses", to_tensor(res.losses)},
                    {"val_losses", to_tensor(res.val_losses)},
                    {"metrics", res.metrics},
                    {"grad_scaler_state", res.grad_scaler_state},
                    {"optimizer", opt}};
  });
}

void register_evaluate(NodeRegistry& r) {
  graph::NodeDef d{
      "EvaluateModel",
      "Training",
      "Measure a classification model's accuracy on a dataset.",
      {def::in("model", DataType::kModel, "Trained model"), def::in("dataset", DataType::kDataset, "Labelled data")},
      {def::out("accuracy", DataType::kScalar, "Fraction correct, in [0, 1]"),
       def::out("correct", DataType::kScalar, "Correct predictions"),
       def::out("total", DataType::kScalar, "Samples evaluated")},
      {def::integer("batch_size", 256, "Samples per forward pass", 1), def::device("Where to evaluate")}};
  d.memory_hints.batch_param = "batch_size";
  d.reports_results = true;
  r.add(std::move(d), [](NodeContext& ctx) {
    auto model = ctx.input_as<train::ModelPtr>("model");
    const auto& ds = ctx.input_as<train::DatasetPtr>("dataset");
    if (ds->num_classes == 0)
      NodeContext::fail_input("dataset", "accuracy needs class labels; this dataset has regression targets");
    const c10::Device device = ctx.device();
    train::DataLoaderOptions o;
    o.batch_size = ctx.param_int("batch_size");
    o.shuffle = false;
    train::DataLoader loader(ds, o);
    torch::NoGradGuard no_grad;
    model->to(device);
    model->eval();
    torch::Tensor correct = torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(device));
    const torch::Tensor order = loader.epoch_order(0);
    for (int64_t b = 0; b < loader.num_batches(); ++b) {
      ctx.cancel().throw_if_cancelled();
      train::Batch batch = loader.batch(order, b);
      auto pred = model->forward(batch.inputs.to(device)).argmax(1);
      correct += (pred == batch.targets.to(device)).sum();
    }
    const double c = static_cast<double>(correct.item<int64_t>());
    const double total = static_cast<double>(ds->size());
    return ValueMap{{"accuracy", total > 0 ? c / total : 0.0}, {"correct", c}, {"total", total}};
  });
}

}  // namespace

void nodes::register_training_nodes(NodeRegistry& r) {
  register_loss(r);
  register_optimizer(r);
  register_scheduler(r);
  register_training_loop(r);
  register_evaluate(r);
}

}  // namespace codefy
