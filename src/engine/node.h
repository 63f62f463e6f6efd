// What a node's execute function sees, and the registry of node types.
#pragma once

#include "engine/errors.h"
#include "engine/events.h"
#include "engine/value.h"
#include "graph/plan.h"
#include "graph/types.h"
#include "graph/validate.h"
#include "store/lru.h"
#include "train/data_parallel.h"
#include "util/cancel.h"
#include "util/file_access.h"

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace codefy {

/// Node outputs kept between runs of one editor connection (the execution
/// cache), keyed by what determines them.
using ExecutionCache = store::LruStore<ValueMap>;

/// A node's outputs kept between runs of one graph (the node state store):
/// the modules of persistent_state nodes, with the key of what built them.
struct PersistedState {
  std::string key;  ///< the node's cache key when they were built
  ValueMap outputs;
};
/// Keyed by node_state_key(scope, node id).
using NodeStateStore = store::LruStore<PersistedState>;
std::string node_state_key(const std::string& scope, const std::string& node_id);

/// Settings of one run that nodes may read.
struct RunSettings {
  uint64_t seed = 0;
  /// Teaching nodes record their intermediate steps as extra outputs
  /// (`__step__{i}__{name}`, `__step__{i}__meta`) for the inspector.
  bool verbose = false;
  /// The intra-op thread count was set by the person running it (--threads,
  /// CODEFY_NUM_THREADS); otherwise a CPU TrainingLoop picks it from its
  /// model's size.
  bool threads_forced = false;
  /// Overrides every node's `device` param when not empty (CLI --device).
  std::string device;
  /// Relative file paths in params resolve against this folder.
  std::filesystem::path base_dir;
  /// Where relative output paths resolve instead, when not empty (a run of a
  /// read-only example writes into the data folder); reads look there first.
  std::filesystem::path output_dir;
  /// The folders nodes may read and write; null: any (the command line).
  std::shared_ptr<const util::FileAccess> files;
  CancellationToken cancel;
  Observer* observer = nullptr;
  /// Partial re-execution: a cacheable node whose key (type, params, device,
  /// seed, id, and its inputs' keys) is in the cache is not run again; its
  /// outputs are reused and it reports kCached. Null: no cache.
  ExecutionCache* cache = nullptr;
  /// Nodes that must run even when their key is cached (the client's changed_nodes).
  std::set<std::string> force_rerun;
  /// Where persistent_state nodes keep their modules between runs, under
  /// `state_scope` (the editor's graph id). Null: every run builds fresh ones.
  NodeStateStore* state_store = nullptr;
  std::string state_scope;
  /// The data-parallel world this process is a rank of (`codefy run
  /// --nproc-per-node`, or torchrun's variables); null in a single process.
  /// TrainingLoop with strategy ddp trains with it; only rank 0 writes files.
  std::shared_ptr<train::DataParallel> data_parallel;
};

/// Where an input came from: the output port of another node.
struct InputSource {
  std::string node_id;
  std::string node_type;
  std::string port;
};

/// The call of one node: its inputs, its params (defaults filled in), and
/// the run around it. Accessors throw NodeFailure naming the param or port.
class NodeContext {
 public:
  NodeContext(const NodeRef& node, const graph::NodeDef& def, const nlohmann::json& params, ValueMap inputs,
              const RunSettings& run, std::map<std::string, InputSource> sources = {});

  const NodeRef& node() const { return node_; }
  const nlohmann::json& params() const { return params_; }
  const RunSettings& run() const { return run_; }
  const CancellationToken& cancel() const { return run_.cancel; }
  /// The run asked for teaching nodes' intermediate steps (CodefyUI's verbose mode).
  bool verbose() const { return run_.verbose; }
  /// This node's seed: derived from the run seed and the node id, the one
  /// LibTorch's RNG was seeded with before the node started.
  uint64_t seed() const;

  int64_t param_int(const std::string& name) const;
  double param_float(const std::string& name) const;
  bool param_bool(const std::string& name) const;
  std::string param_string(const std::string& name) const;
  /// A path param to read: relative resolves against the run's base folder
  /// (absolute stays); refused, naming the param, outside the run's folders.
  std::filesystem::path param_path(const std::string& name) const;
  /// A path param to write a `kind` of file to (e.g. "weights file"): refused
  /// outside the run's writable folders, and where it would replace a file
  /// that `is_ours` does not recognise as that kind (or a folder, a link).
  /// `extension`, when given, replaces the path's own first.
  std::filesystem::path output_path(const std::string& name, const std::string& kind,
                                    const std::function<bool(const std::filesystem::path&)>& is_ours,
                                    const std::string& extension = "") const;
  /// `path` (given by param `name`) resolved and checked for reading, as param_path.
  std::filesystem::path readable_path(const std::string& path, const std::string& name) const;
  std::filesystem::path resolve_path(const std::string& path) const;

  bool has_input(const std::string& port) const;
  /// Which node and port feeds input `port`; nullptr when it is not connected.
  const InputSource* input_source(const std::string& port) const;
  const Value& input(const std::string& port) const;
  /// The input as T; NodeFailure when missing or of another kind.
  template <typename T>
  const T& input_as(const std::string& port) const {
    const Value& v = input(port);
    if (const T* p = std::get_if<T>(&v)) return *p;
    fail_input_kind(port, v);
  }
  /// Optional input: nullptr when not connected.
  template <typename T>
  const T* input_if(const std::string& port) const {
    if (!has_input(port)) return nullptr;
    return &input_as<T>(port);
  }

  /// The device string this node should run on: RunSettings::device, else the `device` param, else "auto".
  std::string device_request() const;
  /// device_request() resolved to a usable device; fallback warnings go to the observer.
  c10::Device device() const;

  /// The device device() last resolved to (what an OOM report names), if any.
  std::optional<c10::Device> used_device() const { return used_device_; }

  void progress(const nlohmann::json& event) const;
  /// Sends a warning to the observer and keeps it (warnings() goes into metrics).
  void warn(const std::string& message) const;
  const std::vector<std::string>& warnings() const { return warnings_; }
  void print(const std::string& text) const;

  /// Throws NodeFailure blaming parameter `name`: the message reads
  /// `..., param "name": message` once the executor adds the node's identity.
  [[noreturn]] static void fail_param(const std::string& name, const std::string& message);
  /// The same for an exception a node caught while using the param (a file
  /// it could not read): call it inside that catch block. An out-of-memory
  /// error is not the param's fault and goes on as it is, so the executor
  /// reports it with its advice; a LibTorch error loses its backtrace.
  /// `prefix` goes before the cause's message.
  [[noreturn]] static void fail_param(const std::string& name, const std::exception& cause,
                                      const std::string& prefix = "");
  /// Inside a catch block for `e`: rethrows it when it is an out-of-memory
  /// error (LibTorch's, the CPU budget's, std::bad_alloc); returns otherwise.
  static void rethrow_if_out_of_memory(const std::exception& e);
  /// An exception's message for a person: LibTorch's first line, without its backtrace.
  static std::string describe(const std::exception& e);
  /// Throws NodeFailure blaming input port `port` (`..., input "port": message`).
  [[noreturn]] static void fail_input(const std::string& port, const std::string& message);

 private:
  [[noreturn]] void fail_input_kind(const std::string& port, const Value& got) const;
  const nlohmann::json& param(const std::string& name) const;
  NodeRef node_;
  const graph::NodeDef& def_;
  nlohmann::json params_;
  ValueMap inputs_;
  std::map<std::string, InputSource> sources_;
  const RunSettings& run_;
  mutable std::optional<c10::Device> used_device_;
  mutable std::vector<std::string> warnings_;
};

/// `path` as a node reads it: absolute stays, relative resolves against
/// `base_dir` (the graph's folder) when there is one.
std::filesystem::path resolve_path(const std::string& path, const std::filesystem::path& base_dir);
/// "path|size|mtime" of a file, for Fingerprints; throws when it is missing.
std::string file_stamp(const std::filesystem::path& file);

/// The seed LibTorch's RNG gets before node `node_id` runs in a run seeded `run_seed`.
uint64_t node_seed(uint64_t run_seed, const std::string& node_id);

/// What a node reads from outside the graph (a file's size and modification
/// time), part of its cache key so an edited file is read again. Given the
/// node's params (defaults filled) and the run's base folder; throws when it
/// cannot tell (the node is then not served from the cache).
using Fingerprint = std::function<std::string(const nlohmann::json& params, const std::filesystem::path& base_dir)>;

/// A node type: its definition and what it does.
struct NodeType {
  graph::NodeDef def;
  std::function<ValueMap(NodeContext&)> execute;
  Fingerprint fingerprint;  ///< empty: the node reads nothing outside the graph
};

/// A check of a graph that looks past one param at a time (a layer spec
/// against the sample shape its data will have); given the graph with its
/// presets expanded, its plan and whether to do the costlier checks an
/// explicit validation asks for, returns the problems it finds.
using GraphCheck = std::function<std::vector<graph::Issue>(const graph::Graph&, const graph::Plan&, bool thorough)>;

/// Every node type, built once at start-up and read-only afterwards.
class NodeRegistry : public graph::NodeCatalog {
 public:
  void add(graph::NodeDef def, std::function<ValueMap(NodeContext&)> execute, Fingerprint fingerprint = {});
  /// Adds a check that prepare() runs after validation (see GraphCheck).
  void add_check(GraphCheck check) { checks_.push_back(std::move(check)); }
  /// The problems every added check finds.
  std::vector<graph::Issue> check(const graph::Graph& g, const graph::Plan& plan, bool thorough) const;
  const graph::NodeDef* find(const std::string& type) const override;
  const NodeType* get(const std::string& type) const;
  /// All types, sorted by category then name.
  std::vector<const NodeType*> list() const;

 private:
  std::map<std::string, NodeType> types_;
  std::vector<GraphCheck> checks_;
};

/// Helpers for concise node definitions.
namespace def {
graph::PortDef in(std::string name, graph::DataType type, std::string description, bool optional = false);
graph::PortDef out(std::string name, graph::DataType type, std::string description);
graph::ParamDef integer(std::string name, int64_t value, std::string description,
                        std::optional<double> min = std::nullopt, std::optional<double> max = std::nullopt);
graph::ParamDef number(std::string name, double value, std::string description,
                       std::optional<double> min = std::nullopt, std::optional<double> max = std::nullopt);
graph::ParamDef boolean(std::string name, bool value, std::string description);
graph::ParamDef text(std::string name, std::string value, std::string description);
graph::ParamDef select(std::string name, std::string value, std::vector<std::string> options, std::string description);
graph::ParamDef advanced(graph::ParamDef p);
/// `p` must be given (not empty) for the graph to validate.
graph::ParamDef required(graph::ParamDef p);
/// A file parameter the editor offers from the server's files: `kModelFile`
/// (weights, checkpoints; `/api/models`) or `kDataFile`. Required.
graph::ParamDef file(std::string name, std::string value, std::string description,
                     graph::ParamType kind = graph::ParamType::kModelFile);
/// The `device` parameter every device-aware node has (auto, cpu, cuda, mps).
graph::ParamDef device(std::string description);
/// A Fingerprint of the files named by path params: each one's resolved path,
/// size and modification time (throws when one is missing).
Fingerprint files_fingerprint(std::vector<std::string> path_params);
}  // namespace def

}  // namespace codefy
