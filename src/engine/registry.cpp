#include "engine/node.h"

#include "device/catalogue.h"
#include "device/memory.h"
#include "util/random.h"
#include "util/text.h"

#include <c10/util/Exception.h>

#include <new>

#include <algorithm>

namespace codefy {

NodeError::NodeError(std::string graph, std::string node_id, std::string node_type, std::string field,
                     const std::string& message)
    : Error("graph \"" + graph + "\": node " + node_id + " (" + node_type + ")" + (field.empty() ? "" : ", " + field) +
            ": " + message),
      graph_(std::move(graph)),
      node_id_(std::move(node_id)),
      node_type_(std::move(node_type)),
      field_(std::move(field)),
      detail_(message) {}

const char* to_string(NodeStatus s) {
  switch (s) {
    case NodeStatus::kRunning: return "running";
    case NodeStatus::kCompleted: return "completed";
    case NodeStatus::kCached: return "cached";
    case NodeStatus::kError: return "error";
    case NodeStatus::kSkipped: return "skipped";
  }
  return "error";
}

NodeContext::NodeContext(const NodeRef& node, const graph::NodeDef& def, const nlohmann::json& params, ValueMap inputs,
                         const RunSettings& run, std::map<std::string, InputSource> sources)
    : node_(node), def_(def), params_(params), inputs_(std::move(inputs)), sources_(std::move(sources)), run_(run) {}

void NodeContext::fail_param(const std::string& name, const std::string& message) {
  throw NodeFailure("param \"" + name + "\"", message);
}
void NodeContext::rethrow_if_out_of_memory(const std::exception& e) {
  if (device::is_out_of_memory(e)) throw;
}
std::string NodeContext::describe(const std::exception& e) {
  if (const auto* c = dynamic_cast<const c10::Error*>(&e)) return util::first_line(c->what_without_backtrace());
  return e.what();
}
void NodeContext::fail_param(const std::string& name, const std::exception& cause, const std::string& prefix) {
  rethrow_if_out_of_memory(cause);
  fail_param(name, prefix + describe(cause));
}
void NodeContext::fail_input(const std::string& port, const std::string& message) {
  throw NodeFailure("input \"" + port + "\"", message);
}

uint64_t node_seed(uint64_t run_seed, const std::string& node_id) {
  // The id's FNV-1a hash, made even, steps the seed along splitmix64's sequence.
  return util::splitmix64(run_seed + 0x9e3779b97f4a7c15ULL * (util::fnv1a(node_id) & ~1ULL)) & 0x7fffffffffffffffULL;
}

uint64_t NodeContext::seed() const { return node_seed(run_.seed, node_.id); }

const nlohmann::json& NodeContext::param(const std::string& name) const {
  auto it = params_.find(name);
  if (it == params_.end()) fail_param(name, "is not a parameter of this node type");
  return *it;
}

int64_t NodeContext::param_int(const std::string& name) const {
  const auto& v = param(name);
  if (!v.is_number()) fail_param(name, "expected an integer, got " + v.dump());
  return v.is_number_integer() ? v.get<int64_t>() : static_cast<int64_t>(v.get<double>());
}

double NodeContext::param_float(const std::string& name) const {
  const auto& v = param(name);
  if (!v.is_number()) fail_param(name, "expected a number, got " + v.dump());
  return v.get<double>();
}

bool NodeContext::param_bool(const std::string& name) const {
  const auto& v = param(name);
  if (!v.is_boolean()) fail_param(name, "expected true or false, got " + v.dump());
  return v.get<bool>();
}

std::string NodeContext::param_string(const std::string& name) const {
  const auto& v = param(name);
  if (v.is_null()) return "";
  if (!v.is_string()) fail_param(name, "expected a string, got " + v.dump());
  return v.get<std::string>();
}

std::filesystem::path resolve_path(const std::string& path, const std::filesystem::path& base_dir) {
  std::filesystem::path p(path);
  if (p.is_absolute() || base_dir.empty()) return p.lexically_normal();
  return (base_dir / p).lexically_normal();
}

std::string file_stamp(const std::filesystem::path& file) {
  const auto mtime = std::filesystem::last_write_time(file).time_since_epoch().count();  // throws when missing
  return file.string() + '|' + std::to_string(std::filesystem::file_size(file)) + '|' + std::to_string(mtime);
}

std::filesystem::path NodeContext::resolve_path(const std::string& path) const {
  return codefy::resolve_path(path, run_.base_dir);
}

std::filesystem::path NodeContext::param_path(const std::string& name) const {
  const std::string s = param_string(name);
  if (s.empty()) fail_param(name, "needs a file path");
  return readable_path(s, name);
}

std::filesystem::path NodeContext::readable_path(const std::string& path, const std::string& name) const {
  std::filesystem::path p = resolve_path(path);
  if (!run_.output_dir.empty() && std::filesystem::path(path).is_relative()) {
    // What an earlier run of this read-only graph wrote is read back from where it went.
    std::error_code ec;
    if (auto written = codefy::resolve_path(path, run_.output_dir); std::filesystem::exists(written, ec)) p = written;
  }
  try {
    if (run_.files) run_.files->check_read(p);
  } catch (const util::FileAccessError& e) {
    fail_param(name, e.what());
  }
  return p;
}

std::filesystem::path NodeContext::output_path(const std::string& name, const std::string& kind,
                                               const std::function<bool(const std::filesystem::path&)>& is_ours,
                                               const std::string& extension) const {
  const std::string s = param_string(name);
  if (s.empty()) fail_param(name, "needs a file path");
  std::filesystem::path p = codefy::resolve_path(s, run_.output_dir.empty() ? run_.base_dir : run_.output_dir);
  if (!extension.empty()) p.replace_extension(extension);
  try {
    if (run_.files) run_.files->check_write(p);
    util::check_replaceable(p, kind, is_ours);
  } catch (const util::FileAccessError& e) {
    fail_param(name, e.what());
  }
  return p;
}

bool NodeContext::has_input(const std::string& port) const {
  auto it = inputs_.find(port);
  return it != inputs_.end() && !std::holds_alternative<std::monostate>(it->second);
}

const InputSource* NodeContext::input_source(const std::string& port) const {
  auto it = sources_.find(port);
  return it == sources_.end() ? nullptr : &it->second;
}

const Value& NodeContext::input(const std::string& port) const {
  auto it = inputs_.find(port);
  if (it == inputs_.end()) fail_input(port, "is not connected");
  return it->second;
}

void NodeContext::fail_input_kind(const std::string& port, const Value& got) const {
  const graph::PortDef* p = def_.input(port);
  fail_input(port,
             std::string("expected ") + (p ? graph::to_string(p->type) : "another kind") + ", got " + value_kind(got));
}

std::string NodeContext::device_request() const {
  if (!run_.device.empty()) return run_.device;
  auto it = params_.find("device");
  if (it != params_.end() && it->is_string() && !it->get<std::string>().empty()) return it->get<std::string>();
  return "auto";
}

c10::Device NodeContext::device() const {
  device::DeviceSource source{node_.graph, node_.id, node_.type, run_.device.empty() ? "device" : "--device"};
  auto choice = device::resolve_device(device_request(), source);
  for (const auto& w : choice.warnings) warn(w);
  used_device_ = choice.device;
  return choice.device;
}

void NodeContext::progress(const nlohmann::json& event) const {
  if (run_.observer) run_.observer->on_progress(node_, event);
}
void NodeContext::warn(const std::string& message) const {
  warnings_.push_back(message);
  if (run_.observer) run_.observer->on_warning(node_, message);
}
void NodeContext::print(const std::string& text) const {
  if (run_.observer) run_.observer->on_print(node_, text);
}

void NodeRegistry::add(graph::NodeDef def, std::function<ValueMap(NodeContext&)> execute, Fingerprint fingerprint) {
  const std::string name = def.name;
  types_[name] = NodeType{std::move(def), std::move(execute), std::move(fingerprint)};
}

std::string node_state_key(const std::string& scope, const std::string& node_id) { return scope + '\x1f' + node_id; }

const graph::NodeDef* NodeRegistry::find(const std::string& type) const {
  const NodeType* t = get(type);
  return t ? &t->def : nullptr;
}

const NodeType* NodeRegistry::get(const std::string& type) const {
  auto it = types_.find(type);
  return it == types_.end() ? nullptr : &it->second;
}

std::vector<graph::Issue> NodeRegistry::check(const graph::Graph& g, const graph::Plan& plan, bool thorough) const {
  std::vector<graph::Issue> issues;
  for (const auto& c : checks_)
    for (auto& i : c(g, plan, thorough)) issues.push_back(std::move(i));
  return issues;
}

std::vector<const NodeType*> NodeRegistry::list() const {
  std::vector<const NodeType*> v;
  for (const auto& [name, t] : types_) v.push_back(&t);
  std::stable_sort(v.begin(), v.end(),
                   [](const NodeType* a, const NodeType* b) { return a->def.category < b->def.category; });
  return v;
}

namespace def {

graph::PortDef in(std::string name, graph::DataType type, std::string description, bool optional) {
  return {std::move(name), type, std::move(description), optional};
}
graph::PortDef out(std::string name, graph::DataType type, std::string description) {
  return {std::move(name), type, std::move(description), false};
}
graph::ParamDef integer(std::string name, int64_t value, std::string description, std::optional<double> min,
                        std::optional<double> max) {
  graph::ParamDef p;
  p.name = std::move(name);
  p.type = graph::ParamType::kInt;
  p.default_value = value;
  p.description = std::move(description);
  p.min_value = min;
  p.max_value = max;
  return p;
}
graph::ParamDef number(std::string name, double value, std::string description, std::optional<double> min,
                       std::optional<double> max) {
  graph::ParamDef p = integer(std::move(name), 0, std::move(description), min, max);
  p.type = graph::ParamType::kFloat;
  p.default_value = value;
  return p;
}
graph::ParamDef boolean(std::string name, bool value, std::string description) {
  graph::ParamDef p;
  p.name = std::move(name);
  p.type = graph::ParamType::kBool;
  p.default_value = value;
  p.description = std::move(description);
  return p;
}
graph::ParamDef text(std::string name, std::string value, std::string description) {
  graph::ParamDef p;
  p.name = std::move(name);
  p.type = graph::ParamType::kString;
  p.default_value = std::move(value);
  p.description = std::move(description);
  return p;
}
graph::ParamDef select(std::string name, std::string value, std::vector<std::string> options, std::string description) {
  graph::ParamDef p = text(std::move(name), std::move(value), std::move(description));
  p.type = graph::ParamType::kSelect;
  p.options = std::move(options);
  return p;
}
graph::ParamDef device(std::string description) {
  graph::ParamDef p = select("device", "auto", {"auto", "cpu", "cuda", "mps"}, std::move(description));
  p.open_options = true;  // "cuda:1" and graphs from other machines are parsed at run time
  return p;
}
Fingerprint files_fingerprint(std::vector<std::string> path_params) {
  return [names = std::move(path_params)](const nlohmann::json& params, const std::filesystem::path& base_dir) {
    std::string fp;
    for (const auto& name : names) fp += file_stamp(resolve_path(params.at(name).get<std::string>(), base_dir)) + ';';
    return fp;
  };
}
graph::ParamDef advanced(graph::ParamDef p) {
  p.advanced = true;
  return p;
}
graph::ParamDef required(graph::ParamDef p) {
  p.required = true;
  return p;
}
graph::ParamDef file(std::string name, std::string value, std::string description, graph::ParamType kind) {
  graph::ParamDef p = required(text(std::move(name), std::move(value), std::move(description)));
  p.type = kind;
  return p;
}

}  // namespace def

}  // namespace codefy
