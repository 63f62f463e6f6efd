#include "engine/memory_plan.h"

#include "device/catalogue.h"
#include "device/memory.h"
#include "engine/executor.h"
#include "engine/oom.h"
#include "train/builders.h"
#include "train/model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

namespace codefy {

namespace {

using nlohmann::json;

/// The micro-batches measured first: large enough that a batch-size-
/// dependent kernel choice (CPU bf16 runs Linears of a few rows in fp32)
/// is already the one a real batch gets, small enough to fit nearly
/// anywhere. Halved while they do not fit.
constexpr int64_t kFirstMeasured = 16;

/// A node's param as it runs: its own value, else its definition's default.
json param_of(const graph::NodeDef* def, const graph::NodeSpec& node, const std::string& name) {
  if (auto it = node.params.find(name); it != node.params.end() && !it->is_null()) return *it;
  if (def)
    for (const auto& p : def->params)
      if (p.name == name) return p.default_value;
  return json();
}

int64_t int_of(const json& v, int64_t fallback) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number()) return static_cast<int64_t>(v.get<double>());
  if (v.is_string()) try {
      return std::stoll(v.get<std::string>());
    } catch (const std::exception&) {
    }
  return fallback;
}

/// `id` and every node it depends on (data and trigger edges), and the edges among them.
graph::Graph upstream_of(const graph::Graph& g, const std::string& id) {
  std::set<std::string> keep{id};
  std::vector<std::string> todo{id};
  while (!todo.empty()) {
    const std::string n = todo.back();
    todo.pop_back();
    for (const auto& e : g.edges)
      if (e.target == n && keep.insert(e.source).second) todo.push_back(e.source);
  }
  graph::Graph sub;
  sub.name = g.name;
  sub.description = g.description;
  sub.base_dir = g.base_dir;
  for (const auto& n : g.nodes)
    if (keep.count(n.id)) sub.nodes.push_back(n);
  for (const auto& e : g.edges)
    if (keep.count(e.source) && keep.count(e.target)) sub.edges.push_back(e);
  return sub;
}

int64_t tensor_bytes(const torch::Tensor& t) {
  return t.defined() ? static_cast<int64_t>(t.numel() * t.element_size()) : 0;
}

/// What a device's memory holds, as the planner compares it: the counted
/// peak on the CPU; on CUDA the caching allocator's peak reserved bytes
/// when known (fragmentation then falls inside the margin), else allocated.
int64_t peak_of(const json& metrics, const std::string& device) {
  if (device.rfind("cuda", 0) == 0) {
    const json reserved = metrics.value("peak_reserved_memory_bytes", json::object());
    if (reserved.contains(device)) return reserved[device].get<int64_t>();
  }
  const json peaks = metrics.value("peak_memory_bytes", json::object());
  return peaks.contains(device) ? peaks[device].get<int64_t>() : 0;
}

/// One planned training node and how to measure it.
class NodePlanner {
 public:
  NodePlanner(const graph::Graph& g, const NodeRegistry& registry, const RunSettings& settings, TrainingPlan& plan)
      : g_(g), registry_(registry), settings_(settings), plan_(plan) {}

  /// A peak model for `precision`, from two micro-batches (and the validation pass once).
  PeakModel measure(const std::string& precision) {
    PeakModel m;
    m.precision = precision;
    int64_t small = std::min<int64_t>(kFirstMeasured, std::max<int64_t>(1, samples_ / 2));
    for (;;) {
      std::optional<int64_t> a = peak(precision, small, false);
      if (a && small > 1 && small > samples_ / 2) {  // the first run told the dataset's size: stay within it
        small = std::max<int64_t>(1, samples_ / 2);
        a = peak(precision, small, false);
      }
      const int64_t large = std::max<int64_t>(small + 1, std::min<int64_t>(2 * small, samples_));
      const std::optional<int64_t> b = a ? peak(precision, large, false) : a;
      if (a && b) {
        m.measured = {{small, *a}, {large, *b}};
        break;
      }
      if (small == 1) {
        m.fails_at_one = !a;
        if (a) m.measured = {{1, *a}};
        return m;
      }
      small = std::max<int64_t>(1, small / 2);
    }
    const MeasuredPeak& p1 = m.measured[0];
    const MeasuredPeak& p2 = m.measured[1];
    m.per_sample_bytes = std::max<int64_t>(0, (p2.peak_bytes - p1.peak_bytes) / (p2.micro_batch - p1.micro_batch));
    m.fixed_bytes = p1.peak_bytes - m.per_sample_bytes * p1.micro_batch;
    if (has_validation_) {
      if (const auto with_val = peak(precision, p1.micro_batch, true); with_val && *with_val > p1.peak_bytes)
        m.validation_peak_bytes = *with_val;
    }
    return m;
  }

  /// Reads the graph's own configuration; false when the node's batch is set by no node.
  bool read_configuration(const graph::NodeSpec& node, const graph::NodeDef& def) {
    node_ = &node;
    const BatchSource source = batch_source(registry_, g_, node, def.memory_hints.batch_input);
    if (!source.node) return false;
    batch_node_ = source.node;
    plan_.batch_node_id = source.node->id;
    plan_.batch_node_type = source.node->type;
    plan_.batch_param = source.param;
    plan_.micro_batch = std::max<int64_t>(
        1, int_of(param_of(registry_.find(source.node->type), *source.node, source.param), 1));
    plan_.accumulate_steps = std::max<int64_t>(1, int_of(param_of(&def, node, def.memory_hints.accumulate_param), 1));
    plan_.effective_batch = plan_.micro_batch * plan_.accumulate_steps;
    for (const auto& e : g_.edges)
      if (e.target == node.id && e.kind == graph::EdgeKind::kData && e.target_handle == "val_dataloader")
        has_validation_ = true;
    return true;
  }

  /// The first measurement's facts: the dataset's size (the micro-batch never exceeds it).
  void set_samples(int64_t samples) { samples_ = std::max<int64_t>(2, samples); }

  /// Runs the node once at micro-batch `batch` and returns its peak; empty when it ran out of memory.
  std::optional<int64_t> peak(const std::string& precision, int64_t batch, bool validation) {
    graph::Graph sub = upstream_of(g_, node_->id);
    if (!validation)
      sub.edges.erase(std::remove_if(sub.edges.begin(), sub.edges.end(),
                                     [&](const graph::EdgeSpec& e) {
                                       return e.target == node_->id && e.target_handle == "val_dataloader";
                                     }),
                      sub.edges.end());
    for (auto& n : sub.nodes) {
      if (n.id == batch_node_->id) n.params[plan_.batch_param] = batch;
      const graph::NodeDef* d = registry_.find(n.type);
      if (!d || d->memory_hints.accumulate_param.empty()) continue;
      // Every training node measured or on the way: two optimizer updates, no accumulation.
      n.params["max_steps"] = n.id == node_->id ? 2 : 1;
      n.params["epochs"] = 1;
      n.params[d->memory_hints.accumulate_param] = 1;
      if (n.params.contains("early_stopping_patience")) n.params["early_stopping_patience"] = 0;
      if (n.id == node_->id) {
        n.params[d->memory_hints.precision_param] = precision;
        n.params["strategy"] = "single";
      }
    }
    RunSettings s;
    s.seed = settings_.seed;
    s.threads_forced = true;  // a plan leaves the process's thread count alone
    s.device = settings_.device;
    s.base_dir = settings_.base_dir.empty() ? g_.base_dir : settings_.base_dir;
    s.output_dir = settings_.output_dir;
    s.files = settings_.files;
    s.cancel = settings_.cancel;
    PreparedGraph prepared = prepare(sub, registry_);
    RunResult result;
    try {
      result = Executor(registry_).run(prepared, s);
    } catch (const NodeOOMError&) {
      return std::nullopt;
    }
    const auto& outputs = result.outputs.at(node_->id);
    const json& metrics = std::get<json>(outputs.at("metrics"));
    if (samples_ == std::numeric_limits<int64_t>::max()) set_samples(metrics.value("train_samples", samples_));
    plan_.device = metrics.value("device", plan_.device);
    if (precision == plan_.precision || plan_.parameter_bytes == 0) read_fixed_parts(outputs, metrics);
    return peak_of(metrics, plan_.device.empty() ? "cpu" : plan_.device);
  }

  int64_t samples() const { return samples_; }

 private:
  /// Weights, gradients and the optimizer's state, from the trained node's outputs.
  void read_fixed_parts(const ValueMap& outputs, const json& metrics) {
    const auto* model = std::get_if<train::ModelPtr>(&outputs.at("model"));
    if (!model || !*model) return;
    int64_t params = 0, grads = 0, grads_alive = 0;
    for (const auto& p : (*model)->parameters()) {
      params += tensor_bytes(p);
      if (p.requires_grad()) grads += tensor_bytes(p);
      grads_alive += tensor_bytes(p.grad());
    }
    for (const auto& b : (*model)->buffers()) params += tensor_bytes(b);
    plan_.parameter_bytes = params;
    plan_.gradient_bytes = grads;
    const std::string device = plan_.device.empty() ? "cpu" : plan_.device;
    const json start = metrics.value("start_memory_bytes", json::object());
    const device::MemoryReading now = device::read_memory(c10::Device(device));
    if (now.counted && start.contains(device))  // what training added and kept: the optimizer's state
      plan_.optimizer_state_bytes = std::max<int64_t>(0, now.live_bytes - start[device].get<int64_t>() - grads_alive);
  }

  const graph::Graph& g_;
  const NodeRegistry& registry_;
  const RunSettings& settings_;
  TrainingPlan& plan_;
  const graph::NodeSpec* node_ = nullptr;
  const graph::NodeSpec* batch_node_ = nullptr;
  bool has_validation_ = false;
  int64_t samples_ = std::numeric_limits<int64_t>::max();
};

std::string mib(int64_t bytes) { return device::format_bytes(bytes); }

/// The memory to plan against and where that number came from.
void set_available(TrainingPlan& plan, const PlanOptions& options) {
  if (options.budget_bytes) {
    plan.available_bytes = *options.budget_bytes;
    plan.available_source = options.budget_source;
    return;
  }
  const c10::Device d(plan.device.empty() ? "cpu" : plan.device);
  if (d.is_cpu() && device::cpu_memory().budget_bytes > 0) {
    plan.available_bytes = device::cpu_memory().budget_bytes;
    plan.available_source = "the CPU memory budget (--memory-budget-mb, CODEFYUI_CPU_MEMORY_BUDGET_MB)";
    return;
  }
  for (const auto& e : device::device_catalogue(device::system_probe())) {
    if (c10::Device(e.device) != d && !(d.is_cuda() && e.device == "cuda" && d.index() <= 0)) continue;
    if (!e.free_bytes) break;
    plan.available_bytes = static_cast<int64_t>(*e.free_bytes);
    plan.available_source =
        d.is_cpu() ? "available RAM now (MemAvailable)" : "free memory on " + plan.device + " now";
    return;
  }
  plan.available_bytes = 0;
  plan.available_source = "unknown (no budget set and the device's free memory is unreadable)";
}

bool fits_in(int64_t predicted, const TrainingPlan& plan, double margin) {
  return plan.available_bytes > 0 && static_cast<double>(predicted) * (1.0 + margin) <= plan.available_bytes;
}

/// The largest micro-batch whose predicted peak fits; -1 when nothing grows with it.
int64_t largest_fitting(const PeakModel& m, const TrainingPlan& plan, double margin) {
  if (m.fails_at_one) return 0;
  if (m.measured.size() < 2) return 1;  // 1 ran, 2 ran out of memory
  const double room = plan.available_bytes / (1.0 + margin);
  if (std::max(m.fixed_bytes, m.validation_peak_bytes) > room) return 0;
  if (m.per_sample_bytes <= 0) return -1;
  return static_cast<int64_t>(std::floor((room - static_cast<double>(m.fixed_bytes)) / m.per_sample_bytes));
}

/// Per precision, the (micro-batch, accumulate_steps) pairs that reach
/// `target` exactly and fit, fewest accumulation steps first (at most 4),
/// and the graph's own configuration when it reaches it too.
std::vector<PlanOption> options_for(const std::vector<const PeakModel*>& models, const TrainingPlan& plan,
                                    int64_t target, double margin) {
  std::vector<PlanOption> out;
  for (const PeakModel* m : models) {
    if (m->fails_at_one || m->measured.size() < 2) continue;
    size_t added = 0;
    for (int64_t micro = target; micro >= 1 && added < 4; --micro) {
      if (target % micro != 0) continue;
      PlanOption o{m->precision, micro, target / micro, target, m->predict(micro), false};
      o.fits = fits_in(o.predicted_peak_bytes, plan, margin);
      const bool current = m->precision == plan.precision && micro == plan.micro_batch;
      if (o.fits || current) {
        out.push_back(o);
        if (o.fits) ++added;
      }
    }
  }
  return out;
}

void add_notes(TrainingPlan& plan, double margin) {
  const PeakModel& m = plan.model;
  if (m.fails_at_one) {
    plan.notes.push_back("Even a micro-batch of 1 does not fit in " + mib(plan.available_bytes) +
                         ": the model, its gradients and optimizer state are too large for this device.");
    return;
  }
  const int64_t activations = m.per_sample_bytes * plan.micro_batch;
  if (activations >= m.fixed_bytes)
    plan.notes.push_back("Activation-bound: at micro-batch " + std::to_string(plan.micro_batch) + ", activations (" +
                         mib(activations) + ") outweigh the fixed " + mib(m.fixed_bytes) +
                         "; a smaller micro-batch with more accumulate_steps, or bf16, saves most.");
  else
    plan.notes.push_back("Weight-bound: the fixed " + mib(m.fixed_bytes) +
                         " (weights, gradients, optimizer state, data) outweigh the activations (" + mib(activations) +
                         "); a smaller batch saves little, a smaller model or optimizer state saves more.");
  if (m.validation_peak_bytes > 0)
    plan.notes.push_back("The validation pass peaks at " + mib(m.validation_peak_bytes) +
                         ", which no training micro-batch changes.");
  if (plan.available_bytes > 0 && !plan.fits) {
    std::string n = "Predicted not to fit: " + mib(plan.predicted_peak_bytes) + " with a " +
                    std::to_string(static_cast<int>(std::lround(margin * 100))) + "% margin against " +
                    mib(plan.available_bytes) + ".";
    for (const auto& o : plan.options)
      if (o.fits) {
        n += " Try " + o.precision + ", micro-batch " + std::to_string(o.micro_batch) + " x accumulate_steps " +
             std::to_string(o.accumulate_steps) + " (" + mib(o.predicted_peak_bytes) + ").";
        break;
      }
    plan.notes.push_back(n);
  }
}

json peak_model_json(const PeakModel& m) {
  json measured = json::array();
  for (const auto& p : m.measured) measured.push_back({{"micro_batch", p.micro_batch}, {"peak_bytes", p.peak_bytes}});
  return {{"precision", m.precision},
          {"measured", measured},
          {"fixed_bytes", m.fixed_bytes},
          {"per_sample_bytes", m.per_sample_bytes},
          {"validation_peak_bytes", m.validation_peak_bytes},
          {"fails_at_one", m.fails_at_one}};
}

}  // namespace

int64_t PeakModel::predict(int64_t micro_batch) const {
  return std::max(fixed_bytes + per_sample_bytes * micro_batch, validation_peak_bytes);
}

bool MemoryPlan::fits() const {
  return std::all_of(plans.begin(), plans.end(), [](const TrainingPlan& p) { return p.fits; });
}

json MemoryPlan::to_json() const {
  json list = json::array();
  for (const auto& p : plans) {
    json options = json::array();
    for (const auto& o : p.options)
      options.push_back({{"precision", o.precision},
                         {"micro_batch", o.micro_batch},
                         {"accumulate_steps", o.accumulate_steps},
                         {"effective_batch", o.effective_batch},
                         {"predicted_peak_bytes", o.predicted_peak_bytes},
                         {"fits", o.fits}});
    json others = json::array();
    for (const auto& m : p.other_precisions) others.push_back(peak_model_json(m));
    const int64_t activations = p.model.per_sample_bytes * p.micro_batch;
    list.push_back({{"node_id", p.node_id},
                    {"node_type", p.node_type},
                    {"device", p.device},
                    {"available_bytes", p.available_bytes},
                    {"available_source", p.available_source},
                    {"precision", p.precision},
                    {"micro_batch", p.micro_batch},
                    {"accumulate_steps", p.accumulate_steps},
                    {"effective_batch", p.effective_batch},
                    {"world_size", p.world_size},
                    {"measured", peak_model_json(p.model)["measured"]},
                    {"fixed_bytes", p.model.fixed_bytes},
                    {"per_sample_bytes", p.model.per_sample_bytes},
                    {"validation_peak_bytes", p.model.validation_peak_bytes},
                    {"predicted_peak_bytes", p.predicted_peak_bytes},
                    {"fits", p.fits},
                    {"max_micro_batch", p.max_micro_batch < 0 ? json() : json(p.max_micro_batch)},
                    {"breakdown",
                     {{"parameter_bytes", p.parameter_bytes},
                      {"gradient_bytes", p.gradient_bytes},
                      {"optimizer_state_bytes", p.optimizer_state_bytes},
                      {"other_fixed_bytes", std::max<int64_t>(0, p.model.fixed_bytes - p.parameter_bytes -
                                                                     p.gradient_bytes - p.optimizer_state_bytes)},
                      {"activation_bytes", activations}}},
                    {"batch_source", {{"node_id", p.batch_node_id}, {"node_type", p.batch_node_type},
                                      {"param", p.batch_param}}},
                    {"other_precisions", others},
                    {"options", options},
                    {"notes", p.notes},
                    {"seconds", p.seconds}});
  }
  return {{"graph", graph}, {"plans", list}, {"fits", fits()}};
}

MemoryPlan plan_memory(const graph::Graph& g, const NodeRegistry& registry, const RunSettings& settings,
                       const PlanOptions& options) {
  const PreparedGraph whole = prepare(g, registry);  // the graph is valid, or ValidationError says why
  const graph::Graph& expanded = whole.graph;
  MemoryPlan result;
  result.graph = expanded.name;
  for (const std::string& id : whole.plan.order) {
    const graph::NodeSpec& node = *expanded.node(id);
    const graph::NodeDef* def = registry.find(node.type);
    if (!def || def->memory_hints.batch_input.empty() || def->memory_hints.precision_param.empty() ||
        def->memory_hints.accumulate_param.empty())
      continue;
    const auto started = std::chrono::steady_clock::now();
    TrainingPlan plan;
    plan.node_id = id;
    plan.node_type = node.type;
    NodePlanner planner(expanded, registry, settings, plan);
    if (!planner.read_configuration(node, *def)) continue;
    // The precision it would run with: what the device supports (a CPU runs fp16 as fp32, with a warning).
    const std::string requested = param_of(def, node, def->memory_hints.precision_param).get<std::string>();
    const std::string device_param =
        settings.device.empty() ? param_of(def, node, "device").get<std::string>() : settings.device;
    const c10::Device device = device::resolve_device(device_param.empty() ? "auto" : device_param).device;
    plan.device = device.str();
    std::vector<std::string> precisions{"fp32"};
    for (const auto& e : device::device_catalogue(device::system_probe()))
      if (c10::Device(e.device) == device || (device.is_cuda() && e.device == "cuda"))
        for (const auto& p : e.precisions)
          if (p != "fp32" && (p != "fp16" || device.is_cuda())) precisions.push_back(p);
    plan.precision = std::find(precisions.begin(), precisions.end(), requested) != precisions.end() ? requested : "fp32";
    if (plan.precision != requested)
      plan.notes.push_back(requested + " is not available on " + plan.device + ": the run would train in fp32.");
    const std::string strategy = param_of(def, node, "strategy").is_string()
                                     ? param_of(def, node, "strategy").get<std::string>()
                                     : std::string();
    if (strategy == "ddp")
      plan.notes.push_back("strategy ddp: this is the plan of one rank (each holds the whole model; the batch size "
                           "is per rank, and the effective batch multiplies by the number of ranks).");

    plan.model = planner.measure(plan.precision);
    set_available(plan, options);
    for (const auto& p : precisions)
      if (p != plan.precision) plan.other_precisions.push_back(planner.measure(p));
    plan.predicted_peak_bytes = plan.model.predict(plan.micro_batch);
    plan.fits = !plan.model.fails_at_one && fits_in(plan.predicted_peak_bytes, plan, options.margin) &&
                (plan.model.measured.size() == 2 || plan.micro_batch == 1);
    if (plan.model.measured.size() == 1)
      plan.notes.push_back("A micro-batch of 2 ran out of memory while measuring; 1 is the largest that fits.");
    plan.max_micro_batch = largest_fitting(plan.model, plan, options.margin);
    if (plan.max_micro_batch < 0 || plan.max_micro_batch > planner.samples()) {
      plan.max_micro_batch = planner.samples();
      plan.notes.push_back("The whole training set (" + std::to_string(planner.samples()) +
                           " samples) fits in one micro-batch.");
    }
    std::vector<const PeakModel*> models{&plan.model};
    for (const auto& m : plan.other_precisions) models.push_back(&m);
    const int64_t target = options.target_effective_batch.value_or(plan.effective_batch);
    plan.options = options_for(models, plan, target, options.margin);
    add_notes(plan, options.margin);
    plan.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    result.plans.push_back(std::move(plan));
  }
  if (result.plans.empty())
    throw NothingToPlan("graph \"" + expanded.name +
                        "\" has no training node whose batch size a node sets (a TrainingLoop fed by a DataLoader)");
  return result;
}

}  // namespace codefy
