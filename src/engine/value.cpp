#include "engine/value.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string_view>

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
                        [](const Image&) { return "IMAGE"; },
                    },
                    v);
}

std::string torch_dtype_name(c10::ScalarType t) {
  switch (t) {
    case c10::kFloat: return "torch.float32";
    case c10::kDouble: return "torch.float64";
    case c10::kHalf: return "torch.float16";
    case c10::kBFloat16: return "torch.bfloat16";
    case c10::kLong: return "torch.int64";
    case c10::kInt: return "torch.int32";
    case c10::kShort: return "torch.int16";
    case c10::kChar: return "torch.int8";
    case c10::kByte: return "torch.uint8";
    case c10::kBool: return "torch.bool";
    default: return std::string("torch.") + c10::toString(t);
  }
}

namespace {

/// A number as JSON: NaN and infinities (which JSON cannot hold) as null.
nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

double round4(double v) { return std::isfinite(v) ? std::round(v * 1e4) / 1e4 : v; }

/// Nested lists of a CPU double tensor's values (whole numbers for integer dtypes).
nlohmann::json nested_values(const double* data, const std::vector<int64_t>& shape, size_t dim, bool integral,
                             int64_t& offset) {
  if (dim == shape.size()) {
    const double v = data[offset++];
    return integral ? nlohmann::json(static_cast<int64_t>(v)) : finite_or_null(v);
  }
  nlohmann::json a = nlohmann::json::array();
  for (int64_t i = 0; i < shape[dim]; ++i) a.push_back(nested_values(data, shape, dim + 1, integral, offset));
  return a;
}

/// The elements min/max/mean are computed over: all of them up to
/// kStatsElementsMax; past that an evenly strided sample of that many (of the
/// flat view when the tensor is contiguous, else of a leading block), so a
/// summary never reads more than kStatsElementsMax elements.
constexpr int64_t kStatsElementsMax = int64_t{1} << 20;

torch::Tensor stats_sample(const torch::Tensor& t, bool& sampled) {
  sampled = t.numel() > kStatsElementsMax;
  if (!sampled) return t;
  if (t.is_contiguous()) {
    const int64_t step = (t.numel() + kStatsElementsMax - 1) / kStatsElementsMax;
    return t.view({-1}).slice(0, 0, t.numel(), step);
  }
  torch::Tensor block = t;
  for (int64_t d = 0; d < block.dim() && block.numel() > kStatsElementsMax; ++d) {
    const int64_t rest = block.numel() / block.size(d);
    block = block.narrow(d, 0, std::max<int64_t>(1, kStatsElementsMax / std::max<int64_t>(rest, 1)));
  }
  return block;
}

/// A tensor as CodefyUI summarizes it: type, shape, dtype (torch.float32),
/// min/max (and mean for floating types, rounded to 4 places), and the values
/// themselves when there are at most 256. Codefy adds the device, and
/// stats_sampled when min/max/mean come from a sample (see stats_sample).
nlohmann::json summarize_tensor(const torch::Tensor& t) {
  nlohmann::json j = {{"type", "tensor"}};
  if (!t.defined()) return j;
  j["shape"] = t.sizes().vec();
  j["dtype"] = torch_dtype_name(t.scalar_type());
  j["device"] = t.device().str();
  const bool floating = c10::isFloatingType(t.scalar_type());
  if (t.numel() > 0 && !c10::isComplexType(t.scalar_type())) {
    bool sampled = false;
    const torch::Tensor s = stats_sample(t.detach(), sampled).to(torch::kDouble);
    const torch::Tensor stats =
        floating ? torch::stack({s.min(), s.max(), s.mean()}) : torch::stack({s.min(), s.max()});
    const torch::Tensor host = stats.to(torch::kCPU).contiguous();
    const double* v = host.data_ptr<double>();
    if (floating) {
      j["min"] = finite_or_null(round4(v[0]));
      j["max"] = finite_or_null(round4(v[1]));
      j["mean"] = finite_or_null(round4(v[2]));
    } else {
      j["min"] = static_cast<int64_t>(v[0]);
      j["max"] = static_cast<int64_t>(v[1]);
    }
    if (sampled) j["stats_sampled"] = true;
    if (t.numel() <= 256) {
      const torch::Tensor c = t.detach().to(torch::kCPU).to(torch::kDouble).contiguous();
      int64_t offset = 0;
      j["values"] = nested_values(c.data_ptr<double>(), c.sizes().vec(), 0, !floating, offset);
    }
  }
  return j;
}

std::string clip(const std::string& s, size_t n) { return s.size() > n ? s.substr(0, n) : s; }

int64_t count_all_parameters(const torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

}  // namespace

nlohmann::json summarize(const Value& v) {
  using nlohmann::json;
  return std::visit(
      Overloaded{
          [](const std::monostate&) { return json(nullptr); },
          [](const torch::Tensor& t) { return summarize_tensor(t); },
          [](const double& d) {
            return json{{"type", "scalar"}, {"value", finite_or_null(d)}};
          },
          [](const std::string& s) {
            return json{{"type", "string"}, {"value", clip(s, 200)}};
          },
          // CodefyUI's summary of an image output is that of its base64 text.
          [](const Image& i) {
            return json{{"type", "string"}, {"value", clip(i.base64_png, 200)}};
          },
          [](const json& j) {
            const std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
            if (j.is_array()) {
              json out = {{"type", "list"}, {"length", j.size()}, {"repr", clip(text, 200)}};
              bool primitive = true;
              for (const auto& x : j) primitive = primitive && !x.is_structured();
              if (j.size() <= 256 && primitive) out["values"] = j;
              return out;
            }
            if (j.is_object()) {
              json out = {{"type", "dict"}, {"repr", clip(text, 200)}};
              // Codefy's addition: a small dict whole (a TrainingLoop's metrics: the editor's run facts).
              if (text.size() <= 4000) out["value"] = j;
              return out;
            }
            return json{{"type", "scalar"}, {"value", j}};
          },
          [](const train::ModelPtr& m) {
            return json{{"type", "model"},
                        {"class", m->name()},
                        {"params", count_all_parameters(*m)},
                        {"trainable", train::count_parameters(*m)}};
          },
          [](const train::DatasetPtr& d) {
            const auto shape = d->inputs.defined() ? d->inputs.sizes().slice(1).vec() : std::vector<int64_t>{};
            std::ostringstream repr;
            repr << d->name << ": " << d->size() << " samples of " << json(shape).dump();
            if (d->num_classes > 0) repr << ", " << d->num_classes << " classes";
            return json{{"type", "dataset"},
                        {"class", d->name},
                        {"samples", d->size()},
                        {"input_shape", shape},
                        {"num_classes", d->num_classes},
                        {"repr", repr.str()}};
          },
          [](const train::DataLoaderPtr& l) {
            const auto& o = l->options();
            const std::string repr = "batch_size " + std::to_string(o.batch_size) + ", " +
                                     std::to_string(l->num_batches()) + " batches" + (o.shuffle ? ", shuffled" : "");
            return json{{"type", "dataloader"},        {"class", "DataLoader"}, {"batch_size", o.batch_size},
                        {"batches", l->num_batches()}, {"shuffle", o.shuffle},  {"repr", repr}};
          },
          [](const train::OptimizerPtr& o) {
            return json{{"type", "optimizer"}, {"class", o->type}, {"lr", train::get_lr(*o->optimizer)}};
          },
          [](const train::LossPtr& l) {
            return json{{"type", "loss_fn"}, {"class", l->type}};
          },
          [](const train::SchedulerPtr& s) {
            return json{{"type", "scheduler"}, {"class", s->options().type}};
          },
      },
      v);
}

nlohmann::json summarize(const ValueMap& values) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [port, value] : values)
    if (!is_step_port(port)) j[port] = summarize(value);
  return j;
}

std::optional<std::string> find_image(const ValueMap& values) {
  for (const auto& [port, v] : values) {
    (void)port;
    if (const auto* image = std::get_if<Image>(&v)) return image->base64_png;
  }
  return std::nullopt;
}

namespace {
constexpr std::string_view kStepPrefix = "__step__";
}  // namespace

std::string step_port(int index, const std::string& name) {
  return std::string(kStepPrefix) + std::to_string(index) + "__" + name;
}

bool is_step_port(const std::string& port) { return port.compare(0, kStepPrefix.size(), kStepPrefix) == 0; }

namespace {

/// One element as PyTorch's repr writes it: "1." for a whole float when
/// every element is whole, else four decimals; "True"; "3".
std::string repr_element(const torch::Tensor& e, bool floating, bool whole) {
  if (e.scalar_type() == torch::kBool) return e.item<bool>() ? "True" : "False";
  if (!floating) return std::to_string(e.item<int64_t>());
  const double d = e.item<double>();
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  if (whole)
    std::snprintf(buf, sizeof buf, "%.0f.", d);
  else
    std::snprintf(buf, sizeof buf, "%.4f", d);
  return buf;
}

void repr_rows(const torch::Tensor& t, bool floating, bool whole, int64_t depth, std::string& out) {
  if (t.dim() == 0) {
    out += repr_element(t, floating, whole);
    return;
  }
  out += "[";
  for (int64_t i = 0; i < t.size(0); ++i) {
    if (i > 0) out += t.dim() > 1 ? ",\n" + std::string(static_cast<size_t>(8 + depth), ' ') : ", ";
    repr_rows(t[i], floating, whole, depth + 1, out);
  }
  out += "]";
}

/// A small tensor as PyTorch prints it: "tensor(0.3979)", "tensor([1., 2.])",
/// rows on lines of their own, the dtype named when it is not a default one.
std::string tensor_repr(const torch::Tensor& tensor) {
  const torch::Tensor t = tensor.detach().to(torch::kCPU);
  const bool floating = c10::isFloatingType(t.scalar_type());
  const torch::Tensor d = floating ? t.to(torch::kFloat64) : t;
  bool whole = floating;
  if (floating && t.numel() > 0) {
    const torch::Tensor finite = d.masked_select(torch::isfinite(d));
    whole = finite.numel() == 0 || torch::equal(finite, finite.round());
  }
  std::string out = "tensor(";
  repr_rows(d, floating, whole, 0, out);
  const auto type = t.scalar_type();
  if (type != torch::kFloat32 && type != torch::kInt64 && type != torch::kBool)
    out += ", dtype=" + torch_dtype_name(type);
  return out + ")";
}

}  // namespace

std::string to_display_string(const Value& v) {
  if (const auto* t = std::get_if<torch::Tensor>(&v)) {
    if (!t->defined()) return "tensor(undefined)";
    if (t->numel() <= 20 && !c10::isComplexType(t->scalar_type())) return tensor_repr(*t);
    std::ostringstream s;
    s << "tensor of shape " << shape_string(*t) << ", " << c10::toString(t->scalar_type());
    return s.str();
  }
  if (const auto* d = std::get_if<double>(&v)) {
    std::ostringstream s;
    s << *d;
    return s.str();
  }
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* i = std::get_if<Image>(&v)) return i->base64_png;
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
                 [&](const Image& i) { c.add_bytes(static_cast<int64_t>(i.base64_png.size())); },
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
