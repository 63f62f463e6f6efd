#include "engine/run_error.h"

#include "engine/errors.h"
#include "graph/graph.h"
#include "graph/validate.h"
#include "util/errors.h"

#include <array>
#include <stdexcept>
#include <utility>

namespace codefy {

namespace {

struct KindName {
  RunErrorKind kind;
  const char* name;
};

constexpr std::array<KindName, 7> kKindNames = {{
    {RunErrorKind::kInvalidGraph, "invalid_graph"},
    {RunErrorKind::kUsage, "usage"},
    {RunErrorKind::kNodeError, "node_error"},
    {RunErrorKind::kOutOfMemory, "out_of_memory"},
    {RunErrorKind::kStopped, "stopped"},
    {RunErrorKind::kDistributed, "distributed"},
    {RunErrorKind::kInternal, "error"},
}};

}  // namespace

const char* to_string(RunErrorKind kind) {
  for (const auto& k : kKindNames)
    if (k.kind == kind) return k.name;
  return "error";
}

std::optional<RunErrorKind> run_error_kind(const std::string& name) {
  for (const auto& k : kKindNames)
    if (name == k.name) return k.kind;
  return std::nullopt;
}

RunError RunError::from_current_exception() {
  RunError r;
  try {
    throw;
  } catch (const Cancelled& e) {
    r.kind = RunErrorKind::kStopped;
    r.message = e.what();
  } catch (const NodeOOMError& e) {
    r.kind = RunErrorKind::kOutOfMemory;
    r.message = e.what();
    r.node_id = e.node_id();
    r.node_type = e.node_type();
    r.device = e.device();
  } catch (const NodeError& e) {
    r.kind = RunErrorKind::kNodeError;
    r.message = e.what();
    r.node_id = e.node_id();
    r.node_type = e.node_type();
    r.field = e.field();
  } catch (const graph::GraphFormatError& e) {
    r.kind = RunErrorKind::kInvalidGraph;
    r.message = e.what();
  } catch (const graph::ValidationError& e) {
    r.kind = RunErrorKind::kInvalidGraph;
    r.message = e.what();
  } catch (const std::exception& e) {
    r.message = e.what();
  } catch (...) {
    r.message = "unknown error";
  }
  return r;
}

ExitCode RunError::exit_code() const {
  switch (kind) {
    case RunErrorKind::kUsage: return kExitUsage;
    case RunErrorKind::kInvalidGraph: return kExitInvalidGraph;
    case RunErrorKind::kOutOfMemory: return kExitOutOfMemory;
    case RunErrorKind::kStopped: return kExitStopped;
    case RunErrorKind::kNodeError:
    case RunErrorKind::kDistributed:
    case RunErrorKind::kInternal: return kExitRuntimeError;
  }
  return kExitRuntimeError;
}

nlohmann::json RunError::to_json() const {
  nlohmann::json j = {{"kind", to_string(kind)}, {"message", message}};
  for (const auto& [key, value] : {std::pair<const char*, const std::string*>{"node_id", &node_id},
                                   {"node_type", &node_type},
                                   {"field", &field},
                                   {"device", &device}})
    if (!value->empty()) j[key] = *value;
  if (rank) j["rank"] = *rank;
  return j;
}

RunError RunError::from_json(const nlohmann::json& j) {
  const auto text = [&j](const char* key) -> std::string {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return "";
    if (!it->is_string()) throw std::invalid_argument(std::string("a run error's \"") + key + "\" must be text");
    return it->get<std::string>();
  };
  if (!j.is_object()) throw std::invalid_argument("a run error must be a JSON object");
  const auto kind = run_error_kind(text("kind"));
  if (!kind) throw std::invalid_argument("a run error's \"kind\" is not one Codefy knows: " + text("kind"));
  RunError r;
  r.kind = *kind;
  r.message = text("message");
  r.node_id = text("node_id");
  r.node_type = text("node_type");
  r.field = text("field");
  r.device = text("device");
  if (const auto it = j.find("rank"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer()) throw std::invalid_argument("a run error's \"rank\" must be a whole number");
    r.rank = it->get<int>();
  }
  return r;
}

nlohmann::json RunError::envelope() const {
  const char* code = kind == RunErrorKind::kStopped       ? "stopped"
                     : kind == RunErrorKind::kOutOfMemory ? "out_of_memory"
                                                          : "execution_error";
  return {{"code", code},
          {"message", message},
          {"node_id", node_id.empty() ? nlohmann::json() : nlohmann::json(node_id)},
          {"details", nullptr}};
}

}  // namespace codefy
