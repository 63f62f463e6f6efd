#include "train/progress.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace codefy::train {

using nlohmann::json;

ProgressKind progress_kind(const json& e) {
  const auto it = e.find("event");
  if (it == e.end() || !it->is_string()) return ProgressKind::kOther;
  const auto& kind = it->get_ref<const std::string&>();
  if (kind == "config") return ProgressKind::kConfig;
  if (kind == "batch") return ProgressKind::kBatch;
  if (kind == "epoch") return ProgressKind::kEpoch;
  return ProgressKind::kOther;
}

namespace {

/// Writes `v` under `key` when it holds a value.
template <typename T>
void put(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

/// Reads `key` into `v` when present and of T's JSON type; throws (caught by from_json) otherwise.
template <typename T>
void get(const json& e, const char* key, std::optional<T>& v) {
  const auto it = e.find(key);
  if (it != e.end() && !it->is_null()) v = it->get<T>();
}

template <typename T>
void get(const json& e, const char* key, T& v) {
  v = e.at(key).get<T>();
}

/// `read(e)` as an optional: an event of another shape (a field missing or of another type) is nullopt.
template <typename T, typename Read>
std::optional<T> parse(const json& e, ProgressKind kind, Read read) {
  if (progress_kind(e) != kind) return std::nullopt;
  try {
    T t;
    read(t);
    return t;
  } catch (const json::exception&) {
    return std::nullopt;
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

}  // namespace

json ConfigProgress::to_json() const { return {{"event", "config"}, {"config", config}}; }

std::optional<ConfigProgress> ConfigProgress::from_json(const json& e) {
  return parse<ConfigProgress>(e, ProgressKind::kConfig, [&](ConfigProgress& c) {
    c.config = e.at("config");
    if (!c.config.is_object()) throw std::invalid_argument("config is not an object");
  });
}

json BatchProgress::to_json() const {
  json j = {{"event", "batch"}};
  put(j, "epoch", epoch);
  put(j, "total_epochs", total_epochs);
  j["batch"] = batch;
  j["total_batches"] = total_batches;
  put(j, "step", step);
  put(j, "loss", loss);
  put(j, "lr", lr);
  put(j, "samples_per_s", samples_per_s);
  put(j, "grad_norm", grad_norm);
  put(j, "timestep", timestep);
  return j;
}

std::optional<BatchProgress> BatchProgress::from_json(const json& e) {
  return parse<BatchProgress>(e, ProgressKind::kBatch, [&](BatchProgress& b) {
    get(e, "batch", b.batch);
    get(e, "total_batches", b.total_batches);
    get(e, "epoch", b.epoch);
    get(e, "total_epochs", b.total_epochs);
    get(e, "step", b.step);
    get(e, "loss", b.loss);
    get(e, "lr", b.lr);
    get(e, "samples_per_s", b.samples_per_s);
    get(e, "grad_norm", b.grad_norm);
    get(e, "timestep", b.timestep);
  });
}

json EpochProgress::to_json() const {
  json j = {{"event", "epoch"}, {"epoch", epoch},    {"total_epochs", total_epochs}, {"loss", loss}, {"lr", lr},
            {"step", step},     {"seconds", seconds}};
  put(j, "grad_norm", grad_norm);
  put(j, "val_loss", val_loss);
  put(j, "val_accuracy", val_accuracy);
  put(j, "patience_counter", patience_counter);
  put(j, "best_epoch", best_epoch);
  put(j, "losses", losses);
  put(j, "val_losses", val_losses);
  put(j, "val_accuracies", val_accuracies);
  if (!peak_memory_bytes.is_null()) j["peak_memory_bytes"] = peak_memory_bytes;
  return j;
}

std::optional<EpochProgress> EpochProgress::from_json(const json& e) {
  return parse<EpochProgress>(e, ProgressKind::kEpoch, [&](EpochProgress& p) {
    get(e, "epoch", p.epoch);
    get(e, "total_epochs", p.total_epochs);
    get(e, "step", p.step);
    get(e, "loss", p.loss);
    get(e, "lr", p.lr);
    get(e, "seconds", p.seconds);
    get(e, "grad_norm", p.grad_norm);
    get(e, "val_loss", p.val_loss);
    get(e, "val_accuracy", p.val_accuracy);
    get(e, "patience_counter", p.patience_counter);
    get(e, "best_epoch", p.best_epoch);
    get(e, "losses", p.losses);
    get(e, "val_losses", p.val_losses);
    get(e, "val_accuracies", p.val_accuracies);
    if (const auto it = e.find("peak_memory_bytes"); it != e.end()) p.peak_memory_bytes = *it;
  });
}

json progress_schema() {
  // One object schema: its properties (name -> JSON Schema type) and which are always there.
  const auto object = [](const char* event, std::vector<std::pair<const char*, json>> fields,
                         std::vector<const char*> required) {
    json properties = {{"event", {{"const", event}}}};
    for (auto& [name, type] : fields) properties[name] = {{"type", std::move(type)}};
    json need = json::array({"event"});
    for (const char* r : required) need.push_back(r);
    return json{{"type", "object"}, {"properties", properties}, {"required", need}};
  };
  const json numbers = {{"type", "array"}, {"items", {{"type", "number"}}}};
  json epoch = object("epoch",
                      {{"epoch", "integer"},
                       {"total_epochs", "integer"},
                       {"step", "integer"},
                       {"loss", "number"},
                       {"lr", "number"},
                       {"seconds", "number"},
                       {"grad_norm", "number"},
                       {"val_loss", "number"},
                       {"val_accuracy", "number"},
                       {"patience_counter", "integer"},
                       {"best_epoch", "integer"},
                       {"losses", "array"},
                       {"val_losses", "array"},
                       {"val_accuracies", "array"},
                       {"peak_memory_bytes", "object"}},
                      {"epoch", "total_epochs", "step", "loss", "lr", "seconds"});
  for (const char* history : {"losses", "val_losses", "val_accuracies"}) epoch["properties"][history] = numbers;
  return {{"config", object("config", {{"config", "object"}}, {"config"})},
          {"batch", object("batch",
                           {{"epoch", "integer"},
                            {"total_epochs", "integer"},
                            {"batch", "integer"},
                            {"total_batches", "integer"},
                            {"step", "integer"},
                            {"loss", "number"},
                            {"lr", "number"},
                            {"samples_per_s", "number"},
                            {"grad_norm", "number"},
                            {"timestep", "integer"}},
                           {"batch", "total_batches"})},
          {"epoch", epoch}};
}

}  // namespace codefy::train
