#include "engine/value.h"

#include <torch/torch.h>

#include <sstream>

namespace codefy {

namespace {
template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

std::string shape_string(const torch::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}
}  // namespace

const char* value_kind(const Value& v) {
  return std::visit(Overloaded{
                        [](const std::monostate&) { return "nothing"; },
                        [](const torch::Tensor&) { return "TENSOR"; },
                        [](const double&) { return "SCALAR"; },
                        [](const std::string&) { return "STRING"; },
                        [](const nlohmann::json& j) { return j.is_array() ? "LIST" : "ANY"; },
                        [](const train::ModelPtr&) { return "MODEL"; },
                        [](const train::DatasetPtr&) { return "DATASET"; },
                        [](const train::DataLoaderPtr&) { return "DATALOADER"; },
                        [](const train::OptimizerPtr&) { return "OPTIMIZER"; },
                        [](const train::LossPtr&) { return "LOSS_FN"; },
                        [](const train::SchedulerPtr&) { return "SCHEDULER"; },
                    },
                    v);
}

nlohmann::json summarize(const Value& v) {
  using nlohmann::json;
  return std::visit(
      Overloaded{
          [](const std::monostate&) { return json(nullptr); },
          [](const torch::Tensor& t) {
            json j = {{"type", "TENSOR"}};
            if (!t.defined()) return j;
            j["shape"] = t.sizes().vec();
            j["dtype"] = std::string(c10::toString(t.scalar_type()));
            j["device"] = t.device().str();
            if (t.numel() > 0 && t.numel() <= 8 && t.dim() <= 1) {
              auto c = t.detach().to(torch::kCPU).to(torch::kDouble).contiguous();
              j["values"] = std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
            }
            return j;
          },
          [](const double& d) {
            return json{{"type", "SCALAR"}, {"value", d}};
          },
          [](const std::string& s) {
            return json{{"type", "STRING"}, {"value", s.size() > 200 ? s.substr(0, 200) + "..." : s}};
          },
          [](const json& j) {
            std::string s = j.dump();
            if (s.size() <= 2000) return json{{"type", j.is_array() ? "LIST" : "ANY"}, {"value", j}};
            return json{{"type", j.is_array() ? "LIST" : "ANY"}, {"size", j.size()}};
          },
          [](const train::ModelPtr& m) {
            return json{{"type", "MODEL"}, {"class", m->name()}, {"parameters", train::count_parameters(*m)}};
          },
          [](const train::DatasetPtr& d) {
            return json{{"type", "DATASET"},
                        {"name", d->name},
                        {"samples", d->size()},
                        {"input_shape", d->inputs.sizes().slice(1).vec()},
                        {"num_classes", d->num_classes}};
          },
          [](const train::DataLoaderPtr& l) {
            return json{{"type", "DATALOADER"},
                        {"batch_size", l->options().batch_size},
                        {"batches", l->num_batches()},
                        {"shuffle", l->options().shuffle}};
          },
          [](const train::OptimizerPtr& o) {
            return json{{"type", "OPTIMIZER"}, {"class", o->type}, {"lr", train::get_lr(*o->optimizer)}};
          },
          [](const train::LossPtr& l) {
            return json{{"type", "LOSS_FN"}, {"class", l->type}};
          },
          [](const train::SchedulerPtr& s) {
            return json{{"type", "SCHEDULER"}, {"class", s->options().type}};
          },
      },
      v);
}

nlohmann::json summarize(const ValueMap& values) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [port, value] : values) j[port] = summarize(value);
  return j;
}

std::string to_display_string(const Value& v) {
  if (const auto* t = std::get_if<torch::Tensor>(&v)) {
    if (!t->defined()) return "tensor(undefined)";
    std::ostringstream s;
    if (t->numel() <= 20) {
      s << "tensor(" << t->detach().to(torch::kCPU) << ")";
      return s.str();
    }
    s << "tensor of shape " << shape_string(*t) << ", " << c10::toString(t->scalar_type());
    return s.str();
  }
  if (const auto* d = std::get_if<double>(&v)) {
    std::ostringstream s;
    s << *d;
    return s.str();
  }
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* j = std::get_if<nlohmann::json>(&v)) return j->dump();
  if (const auto* m = std::get_if<train::ModelPtr>(&v)) {
    return (*m)->describe() + "\n(" + std::to_string(train::count_parameters(**m)) + " trainable parameters)";
  }
  return summarize(v).dump();
}

namespace {

/// The tensors an optimizer keeps per parameter (moments, momentum buffers).
void count_optimizer_state(const torch::optim::Optimizer& o, store::StorageCounter& c) {
  for (const auto& [key, state] : o.state()) {
    (void)key;
    const auto* s = state.get();
    if (const auto* a = dynamic_cast<const torch::optim::AdamParamState*>(s)) {
      c.add(a->exp_avg()), c.add(a->exp_avg_sq()), c.add(a->max_exp_avg_sq());
    } else if (const auto* w = dynamic_cast<const torch::optim::AdamWParamState*>(s)) {
      c.add(w->exp_avg()), c.add(w->exp_avg_sq()), c.add(w->max_exp_avg_sq());
    } else if (const auto* m = dynamic_cast<const torch::optim::SGDParamState*>(s)) {
      c.add(m->momentum_buffer());
    } else if (const auto* r = dynamic_cast<const torch::optim::RMSpropParamState*>(s)) {
      c.add(r->square_avg()), c.add(r->momentum_buffer()), c.add(r->grad_avg());
    } else if (const auto* g = dynamic_cast<const torch::optim::AdagradParamState*>(s)) {
      c.add(g->sum());
    }
  }
  for (const auto& group : o.param_groups())
    for (const auto& p : group.params()) c.add(p);
}

}  // namespace

void count_bytes(const Value& v, store::StorageCounter& c) {
  std::visit(Overloaded{
                 [](const std::monostate&) {},
                 [&](const torch::Tensor& t) { c.add(t); },
                 [&](const double&) { c.add_bytes(sizeof(double)); },
                 [&](const std::string& s) { c.add_bytes(static_cast<int64_t>(s.size())); },
                 [&](const nlohmann::json& j) { c.add_bytes(static_cast<int64_t>(j.dump().size())); },
                 [&](const train::ModelPtr& m) {
                   if (m) c.add(*m);
                 },
                 [&](const train::DatasetPtr& d) {
                   if (d) c.add(d->inputs), c.add(d->targets);
                 },
                 [&](const train::DataLoaderPtr& l) {
                   if (l && l->dataset_ptr()) c.add(l->dataset_ptr()->inputs), c.add(l->dataset_ptr()->targets);
                 },
                 [&](const train::OptimizerPtr& o) {
                   if (o && o->optimizer) count_optimizer_state(*o->optimizer, c);
                 },
                 [](const train::LossPtr&) {},
                 [](const train::SchedulerPtr&) {},
             },
             v);
}

int64_t value_bytes(const ValueMap& values) {
  store::StorageCounter c;
  for (const auto& [port, v] : values) {
    (void)port;
    count_bytes(v, c);
  }
  return c.total();
}

}  // namespace codefy
