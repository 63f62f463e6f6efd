#include "server/protocol.h"

#include "engine/run_error.h"
#include "train/progress.h"

#include <string>
#include <utility>
#include <vector>

namespace codefy::server {

namespace {

using nlohmann::json;

/// One field: its name, JSON type(s) and whether every message has it.
struct Field {
  const char* name;
  json type;  ///< a JSON Schema type name or a list of them
  bool required;
};

json message(const char* type, const std::vector<Field>& fields) {
  json properties = {{"type", {{"const", type}}}};
  json required = json::array({"type"});
  for (const Field& f : fields) {
    properties[f.name] = {{"type", f.type}};
    if (f.required) required.push_back(f.name);
  }
  return {{"type", "object"}, {"properties", properties}, {"required", required}};
}

}  // namespace

json protocol_schema() {
  const json text_or_null = json::array({"string", "null"});
  json kinds = json::array();
  for (RunErrorKind k :
       {RunErrorKind::kInvalidGraph, RunErrorKind::kUsage, RunErrorKind::kNodeError, RunErrorKind::kOutOfMemory,
        RunErrorKind::kStopped, RunErrorKind::kDistributed, RunErrorKind::kInternal})
    kinds.push_back(to_string(k));
  json codes = json::array();
  for (RunErrorKind k : {RunErrorKind::kStopped, RunErrorKind::kOutOfMemory, RunErrorKind::kNodeError}) {
    RunError e;
    e.kind = k;
    codes.push_back(e.envelope()["code"]);
  }
  return {
      {"$schema", "https://json-schema.org/draft/2020-12/schema"},
      {"title", "Codefy's run vocabulary as clients see it"},
      {"ws_server_message",
       {{"oneOf",
         {
             message("execution_start", {{"run_id", "string", true}, {"server_run_id", "string", true}}),
             message("execution_complete", {}),
             message("execution_error", {{"error", "string", true}}),
             message("execution_stopped", {}),
             message("cache_cleared", {}),
             message("warning", {{"node_id", text_or_null, true}, {"message", "string", true}}),
             message("error", {{"error", "string", true}}),
             message("node_progress", {{"node_id", "string", true}, {"progress", "object", true}}),
             message("node_status", {{"node_id", "string", true},
                                     {"status", "string", true},
                                     {"error", "string", false},
                                     {"field", "string", false},
                                     {"out_of_memory", "boolean", false},
                                     {"stopped", "boolean", false},
                                     {"progress", "object", false},
                                     {"log", "string", false},
                                     {"image", "string", false},
                                     {"output_summary", json::array({"object", "null"}), false}}),
         }}}},
      {"training_progress", train::progress_schema()},
      {"run_error_kinds", kinds},
      {"envelope_error_codes", codes},
  };
}

namespace {

bool has_type(const json& value, const std::string& type) {
  if (type == "string") return value.is_string();
  if (type == "object") return value.is_object();
  if (type == "boolean") return value.is_boolean();
  if (type == "null") return value.is_null();
  if (type == "number") return value.is_number();
  if (type == "integer") return value.is_number_integer();
  if (type == "array") return value.is_array();
  return false;
}

bool fits(const json& value, const json& type) {
  if (type.is_string()) return has_type(value, type.get<std::string>());
  for (const auto& t : type)
    if (has_type(value, t.get<std::string>())) return true;
  return false;
}

}  // namespace

namespace {

/// `m` against one object schema `s` whose `tag` field (type, event) names it: its required
/// fields there, no field it does not name, each of its type. "" when it fits.
std::string check_object(const json& s, const json& m, const std::string& name, const char* tag) {
  for (const auto& r : s["required"])
    if (!m.contains(r.get<std::string>())) return name + " lacks \"" + r.get<std::string>() + "\"";
  for (auto it = m.begin(); it != m.end(); ++it) {
    if (it.key() == tag) continue;
    const auto p = s["properties"].find(it.key());
    if (p == s["properties"].end()) return name + " has a field the schema does not name: \"" + it.key() + "\"";
    if (!fits(it.value(), (*p)["type"])) return name + "'s \"" + it.key() + "\" is " + it.value().type_name();
  }
  return "";
}

}  // namespace

std::string check_ws_message(const json& schema, const json& m) {
  if (!m.is_object() || !m.contains("type") || !m["type"].is_string()) return "not an object with a type: " + m.dump();
  const std::string type = m["type"];
  for (const auto& s : schema["ws_server_message"]["oneOf"]) {
    if (s["properties"]["type"]["const"] != type) continue;
    if (std::string why = check_object(s, m, type, "type"); !why.empty()) return why;
    // A training loop's progress frames: the event's own schema.
    const auto progress = m.find("progress");
    if (progress == m.end() || !progress->is_object()) return "";
    const std::string event = progress->value("event", "");
    const auto& events = schema["training_progress"];
    if (!events.contains(event)) return "";
    return check_object(events[event], *progress, type + "'s " + event + " progress", "event");
  }
  return "a message type the schema does not name: " + type;
}

}  // namespace codefy::server
