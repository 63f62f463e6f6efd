#include "train/resume_state.h"

#include <stdexcept>
#include <string>

namespace codefy::train {

namespace {

constexpr const char* kLastEpoch = "last_epoch";
constexpr const char* kTotalSteps = "total_steps";
constexpr const char* kTotalBatches = "total_batches";
constexpr const char* kTrainSeed = "train_seed";
constexpr const char* kDataSeed = "data_seed";
constexpr const char* kSchedulerState = "scheduler_state";
constexpr const char* kGradScalerState = "grad_scaler_state";

const nlohmann::json* find(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

int64_t whole(const nlohmann::json& j, const char* key, int64_t fallback) {
  const nlohmann::json* v = find(j, key);
  if (!v) return fallback;
  if (!v->is_number_integer() || v->get<int64_t>() < 0)
    throw std::invalid_argument(std::string("\"") + key + "\" must be a whole number >= 0, got " + v->dump());
  return v->get<int64_t>();
}

std::optional<uint64_t> seed(const nlohmann::json& j, const char* key) {
  const nlohmann::json* v = find(j, key);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned()) return v->get<uint64_t>();
  if (v->is_number_integer() && v->get<int64_t>() >= 0) return static_cast<uint64_t>(v->get<int64_t>());
  throw std::invalid_argument(std::string("\"") + key + "\" must be a seed (a whole number >= 0), got " + v->dump());
}

}  // namespace

void ResumeState::write_to(nlohmann::json& j) const {
  j[kLastEpoch] = last_epoch;
  j[kTotalSteps] = total_steps;
  j[kTotalBatches] = total_batches;
  if (train_seed) j[kTrainSeed] = *train_seed;
  if (data_seed) j[kDataSeed] = *data_seed;
  if (!scheduler_state.is_null()) j[kSchedulerState] = scheduler_state;
  if (!grad_scaler_state.is_null()) j[kGradScalerState] = grad_scaler_state;
}

nlohmann::json ResumeState::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  write_to(j);
  return j;
}

ResumeState ResumeState::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("a resume state must be a JSON object, got " + j.dump());
  if (!find(j, kLastEpoch)) throw std::invalid_argument("a resume state needs \"last_epoch\"");
  ResumeState r;
  r.last_epoch = whole(j, kLastEpoch, 0);
  r.total_steps = whole(j, kTotalSteps, 0);
  r.total_batches = whole(j, kTotalBatches, 0);
  r.train_seed = seed(j, kTrainSeed);
  r.data_seed = seed(j, kDataSeed);
  if (const nlohmann::json* s = find(j, kSchedulerState)) r.scheduler_state = *s;
  if (const nlohmann::json* s = find(j, kGradScalerState)) r.grad_scaler_state = *s;
  return r;
}

ResumeState ResumeState::from_checkpoint_meta(const nlohmann::json& meta) {
  if (!meta.is_object()) throw std::invalid_argument("a checkpoint's metadata must be a JSON object");
  const nlohmann::json* metrics = find(meta, "metrics");
  nlohmann::json fields = metrics && metrics->is_object() ? *metrics : nlohmann::json::object();
  const nlohmann::json* epoch = find(meta, "epoch");
  fields[kLastEpoch] = epoch ? *epoch : nlohmann::json(0);
  const nlohmann::json* scaler = find(meta, kGradScalerState);
  fields[kGradScalerState] = scaler ? *scaler : nlohmann::json();
  return from_json(fields);
}

}  // namespace codefy::train
