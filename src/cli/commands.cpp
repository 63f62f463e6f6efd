#include "cli/commands.h"

#include "cli/printer.h"
#include "device/catalogue.h"
#include "device/memory.h"
#include "device/runtime.h"
#include "distributed/launcher.h"
#include "distributed/process_group.h"
#include "engine/executor.h"
#include "engine/memory_plan.h"
#include "engine/run_error.h"
#include "engine/run_recorder.h"
#include "graph/validate.h"
#include "model/layer_catalog.h"
#include "nodes/library.h"
#include "server/api.h"
#include "server/http_server.h"
#include "server/protocol.h"
#include "store/run_store.h"
#include "util/atomic_file.h"
#include "util/file_access.h"
#include "util/image_size.h"
#include "util/parse.h"
#include "util/text.h"

#include <pthread.h>
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

namespace codefy::cli {

namespace {

/// The token of the run in progress; the signal thread cancels it.
CancellationToken& current_token() {
  static CancellationToken token;
  return token;
}

/// Writes what a reader wants to keep from a run: each picture a node drew
/// (Visualize's, Forecast's: a base64 PNG output) as a PNG file.
nlohmann::json write_artifacts(const PreparedGraph& prepared, const RunResult& result, const std::string& out_dir,
                               Printer& printer) {
  nlohmann::json written = nlohmann::json::array();
  for (const auto& [id, outputs] : result.outputs) {
    if (!prepared.graph.node(id)) continue;
    const auto image = find_image(outputs);
    if (!image) continue;
    const std::string* b64 = &*image;
    std::filesystem::create_directories(out_dir);
    const auto path = std::filesystem::path(out_dir) / (id + ".png");
    util::write_file_atomic(path, util::base64_decode(*b64));
    if (printer.mode() == Printer::Mode::kJson)
      printer.emit_json({{"event", "artifact"}, {"node_id", id}, {"path", path.string()}});
    else
      std::printf("  %s: wrote %s\n", id.c_str(), path.string().c_str());
    written.push_back({{"node", id}, {"kind", "image"}, {"path", std::filesystem::absolute(path).string()}});
  }
  return written;
}

void print_results(const nlohmann::json& results) {
  for (auto it = results.begin(); it != results.end(); ++it) {
    std::printf("%s:\n", it.key().c_str());
    for (auto m = it.value().begin(); m != it.value().end(); ++m) {
      if (m.key() == "lr_history") continue;
      std::printf("  %-20s %s\n", m.key().c_str(), m.value().dump().c_str());
    }
  }
}

}  // namespace

void install_signal_handling() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // inherited by every thread started later
  std::thread([set] {
    int count = 0;
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      if (++count > 1) std::_Exit(kExitStopped);  // a second Ctrl-C does not wait
      std::fprintf(stderr, "\nstopping after the current batch (press Ctrl-C again to quit now)\n");
      current_token().cancel();
    }
  }).detach();
}

int validate_graph(const std::string& path, bool json) {
  try {
    graph::Graph g = graph::load_graph_file(path);
    prepare(g, nodes::builtin(), Checks::kValidate);
    if (json)
      std::printf("%s\n", nlohmann::json{{"valid", true}, {"issues", nlohmann::json::array()}}.dump().c_str());
    else
      std::printf("%s: valid\n", path.c_str());
    return kExitOk;
  } catch (const graph::ValidationError& e) {
    if (json) {
      std::printf("%s\n", nlohmann::json{{"valid", false}, {"issues", graph::issues_json(e.issues())}}.dump().c_str());
    } else {
      std::fprintf(stderr, "%s\n", e.what());
    }
  } catch (const graph::GraphFormatError& e) {
    if (json)
      std::printf("%s\n", nlohmann::json{{"valid", false}, {"error", e.what()}}.dump().c_str());
    else
      std::fprintf(stderr, "error: %s\n", e.what());
  }
  return kExitInvalidGraph;
}

namespace {

void print_plan(const MemoryPlan& plan) {
  using device::format_bytes;
  for (const TrainingPlan& p : plan.plans) {
    std::printf("Memory plan of %s (%s) in \"%s\" on %s, measured in %.1f s\n", p.node_type.c_str(), p.node_id.c_str(),
                plan.graph.c_str(), p.device.c_str(), p.seconds);
    std::printf("  memory available: %s (%s)\n", format_bytes(p.available_bytes).c_str(), p.available_source.c_str());
    std::printf("  measured, %s:", p.precision.c_str());
    for (const auto& m : p.model.measured)
      std::printf(" micro-batch %lld -> %s;", static_cast<long long>(m.micro_batch),
                  format_bytes(m.peak_bytes).c_str());
    std::printf(
        "\n  fixed %s (weights %s, gradients %s, optimizer state %s, data and workspace the rest) + %s per "
        "sample\n",
        format_bytes(p.model.fixed_bytes).c_str(), format_bytes(p.parameter_bytes).c_str(),
        format_bytes(p.gradient_bytes).c_str(), format_bytes(p.optimizer_state_bytes).c_str(),
        format_bytes(p.model.per_sample_bytes).c_str());
    std::printf(
        "  as it stands: %s, %s.%s %lld x accumulate_steps %lld (effective batch %lld): predicted peak %s, %s\n",
        p.precision.c_str(), p.batch_node_id.c_str(), p.batch_param.c_str(), static_cast<long long>(p.micro_batch),
        static_cast<long long>(p.accumulate_steps), static_cast<long long>(p.effective_batch),
        format_bytes(p.predicted_peak_bytes).c_str(), p.fits ? "fits" : "does NOT fit");
    if (p.max_micro_batch < 0)
      std::printf("  largest micro-batch that fits: any (nothing measured grows with it)\n");
    else
      std::printf("  largest micro-batch that fits: %lld\n", static_cast<long long>(p.max_micro_batch));
    if (!p.options.empty()) {
      std::printf("  options for effective batch %lld:\n    %-9s %11s %10s %14s  %s\n",
                  static_cast<long long>(p.options.front().effective_batch), "precision", "micro-batch", "accumulate",
                  "predicted peak", "fits");
      for (const auto& o : p.options)
        std::printf("    %-9s %11lld %10lld %14s  %s\n", o.precision.c_str(), static_cast<long long>(o.micro_batch),
                    static_cast<long long>(o.accumulate_steps), format_bytes(o.predicted_peak_bytes).c_str(),
                    o.fits ? "yes" : "no");
    }
    for (const auto& n : p.notes) std::printf("  - %s\n", n.c_str());
  }
}

}  // namespace

int plan_graph(const PlanCommand& cmd) {
  try {
    graph::Graph g = graph::load_graph_file(cmd.graph_path);
    if (!cmd.base_dir.empty()) g.base_dir = std::filesystem::absolute(cmd.base_dir);
    PlanOptions options;
    if (cmd.budget_mb > 0) options.budget_bytes = cmd.budget_mb << 20;
    if (cmd.target_effective_batch > 0) options.target_effective_batch = cmd.target_effective_batch;
    options.margin = cmd.margin;
    // Measuring uses no more than the memory it plans for.
    const int64_t limit = cmd.memory_budget_mb >= 0 ? cmd.memory_budget_mb << 20
                          : cmd.budget_mb > 0       ? cmd.budget_mb << 20
                                                    : device::cpu_budget_from_env();
    device::set_cpu_budget(limit);
    RunSettings settings;
    settings.base_dir = g.base_dir;
    settings.cancel = current_token();
    if (!cmd.device.empty())
      settings.device =
          device::resolve_device(cmd.device, device::DeviceSource{g.name, "", "", "--device"}).device.str();
    const MemoryPlan plan = plan_memory(g, nodes::builtin(), settings, options);
    if (cmd.json)
      std::printf("%s\n", plan.to_json().dump().c_str());
    else
      print_plan(plan);
    return plan.fits() ? kExitOk : kExitOutOfMemory;
  } catch (const Cancelled&) {
    std::fprintf(stderr, "stopped\n");
    return kExitStopped;
  } catch (const std::exception&) {
    RunError e = RunError::from_current_exception();
    if (cmd.json)
      std::printf("%s\n", e.to_json().dump().c_str());
    else
      std::fprintf(stderr, "error: %s\n", e.message.c_str());
    return e.exit_code();
  }
}

namespace {

/// Joins the data-parallel world before the graph runs. NCCL (CUDA builds
/// that have it) puts rank r on its machine's card LOCAL_RANK; else Gloo.
void join_world(const distributed::WorldInfo& world, const RunCommand& cmd, RunSettings& settings) {
  distributed::ProcessGroupOptions options;
  const bool cuda = settings.device.rfind("cuda", 0) == 0;
  options.backend = distributed::default_backend(cuda ? "cuda" : "cpu");
  // A card named by --device is kept (the server names each rank's card).
  if (cuda && options.backend == "nccl" && cmd.device.find(':') == std::string::npos)
    settings.device = "cuda:" + std::to_string(world.local_rank);
  settings.data_parallel = std::make_shared<distributed::ProcessGroup>(world, options);
}

/// A warning on stderr, or as a JSON line with --json.
void say_warning(const RunCommand& cmd, Printer& printer, const std::string& message) {
  if (cmd.json)
    printer.emit_json({{"event", "warning"}, {"message", message}});
  else
    std::fprintf(stderr, "warning: %s\n", message.c_str());
}

/// What runs, with what seed, threads and BLAS (a JSON line with --json).
void announce_run(const RunCommand& cmd, Printer& printer, const PreparedGraph& prepared, int threads) {
  const auto blas = device::blas_info();
  if (cmd.json) {
    printer.emit_json({{"event", "execution_start"},
                       {"graph", prepared.graph.name},
                       {"nodes", prepared.plan.order},
                       {"seed", cmd.seed},
                       {"threads", threads},
                       {"blas", blas.name}});
    return;
  }
  std::printf("Running \"%s\" (%zu nodes, seed %llu, %d threads, %s)\n", prepared.graph.name.c_str(),
              prepared.plan.order.size(), static_cast<unsigned long long>(cmd.seed), threads, blas.name.c_str());
  if (blas.is_reference)
    std::printf("warning: the reference BLAS is loaded (%s); training will be slow. Run scripts/setup.sh.\n",
                blas.path.c_str());
}

/// The run's recorder (rank 0 or a lone process) in front of the printer:
/// the run history unless --no-record, and TensorBoard with --tensorboard;
/// null when neither. A store that cannot be opened is said once and the run
/// goes on unrecorded.
std::unique_ptr<RunRecorder> start_recording(const RunCommand& cmd, Printer& printer, const PreparedGraph& prepared,
                                             const nlohmann::json& snapshot, int world_size, int threads) {
  if (cmd.no_record && cmd.tensorboard_dir.empty()) return nullptr;
  auto say = [&cmd, &printer](const std::string& m) { say_warning(cmd, printer, m); };
  std::shared_ptr<store::RunStore> store;
  if (!cmd.no_record) try {
      store = std::make_shared<store::RunStore>(std::filesystem::path(cmd.data_dir) / "runs.db",
                                                store::Retention::from_env());
    } catch (const std::exception& e) {
      say(std::string("this run is not being recorded in the run history: ") + e.what());
    }
  store::RunRecord record = run_record(prepared, nodes::builtin(), snapshot, "cli", cmd.seed, cmd.device, world_size);
  record.threads = threads;
  auto recorder = std::make_unique<RunRecorder>(store, std::move(record), &printer, say);
  if (!cmd.tensorboard_dir.empty()) recorder->write_tensorboard(cmd.tensorboard_dir);
  if (cmd.json && recorder->recording())
    printer.emit_json({{"event", "run_recorded"}, {"run_id", recorder->run_id()}, {"store", store->path().string()}});
  return recorder;
}

/// A run that ended well: its pictures as files, its results printed (a JSON line with --json).
void report_completed(const RunCommand& cmd, const PreparedGraph& prepared, const RunResult& result, Printer& printer,
                      RunRecorder* recorder) {
  const nlohmann::json artifacts = write_artifacts(prepared, result, cmd.out_dir, printer);
  const auto results = results_json(prepared, result, nodes::builtin());
  if (recorder) recorder->finish("completed", std::nullopt, results, peak_memory_json(result, results), artifacts);
  if (cmd.json) {
    nlohmann::json done = {{"event", "execution_complete"},
                           {"status", "ok"},
                           {"seconds", result.seconds},
                           {"results", results},
                           {"peak_cpu_bytes", result.peak_cpu_bytes}};
    if (recorder) done["recording_seconds"] = recorder->busy_seconds();
    printer.emit_json(done);
  } else {
    print_results(results);
    std::printf("Done in %.1f s\n", result.seconds);
    if (recorder && recorder->recording())
      std::printf("Recorded as run %s (codefy runs show %s)\n", recorder->run_id().c_str(), recorder->run_id().c_str());
    if (recorder && !recorder->tensorboard_file().empty())
      std::printf("TensorBoard: %s (tensorboard --logdir %s)\n", recorder->tensorboard_file().c_str(),
                  cmd.tensorboard_dir.c_str());
  }
}

}  // namespace

int run_graph(const RunCommand& cmd) {
  Printer printer(Printer::detect(cmd.json));
  // A rank of a data-parallel world (torchrun's variables): only rank 0
  // reports; the others say only why they failed, naming themselves.
  std::optional<distributed::WorldInfo> world;
  try {
    world = distributed::WorldInfo::from_env();
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return kExitUsage;
  }
  const bool quiet = world && world->rank != 0;
  const std::string who = world && world->world_size > 1 ? "rank " + std::to_string(world->rank) + ": " : "";
  // Every failure is one RunError: rank 0 (or a lone process) prints it (a
  // JSON line with --json); another rank writes it to the report file its
  // launcher named, where the launcher reads why it failed, and says it on stderr.
  auto report_error = [&](RunError error) {
    if (world && world->world_size > 1) error.rank = world->rank;
    const int code = error.exit_code();
    if (quiet) {
      if (const char* report = std::getenv("CODEFY_RANK_REPORT"); report && *report) {
        try {
          util::write_file_atomic(report, error.to_json().dump());
        } catch (const std::exception& e) {
          std::fprintf(stderr, "%scannot write the failure report %s: %s\n", who.c_str(), report, e.what());
        }
      }
      std::fprintf(stderr, "%serror: %s\n", who.c_str(), error.message.c_str());
    } else if (cmd.json) {
      nlohmann::json e = error.to_json();
      e["event"] = "run_error";
      e["exit_code"] = code;
      printer.emit_json(e);
    } else {
      std::fprintf(stderr, "%serror: %s\n", who.c_str(), error.message.c_str());
    }
    return code;
  };
  auto report = [&](RunErrorKind kind, const std::string& message) {
    RunError e;
    e.kind = kind;
    e.message = message;
    return report_error(std::move(e));
  };

  PreparedGraph prepared;
  nlohmann::json snapshot;
  try {
    graph::Graph g = graph::load_graph_file(cmd.graph_path);
    snapshot = g.raw;
    if (!cmd.base_dir.empty()) g.base_dir = std::filesystem::absolute(cmd.base_dir);
    prepared = prepare(g, nodes::builtin());
  } catch (const std::exception&) {
    return report_error(RunError::from_current_exception());
  }

  try {
    const int64_t budget = cmd.memory_budget_mb >= 0 ? cmd.memory_budget_mb << 20 : device::cpu_budget_from_env();
    device::set_cpu_budget(budget);
  } catch (const std::invalid_argument& e) {
    return report(RunErrorKind::kUsage, e.what());
  }
  const int threads = device::configure_threads(cmd.threads);
  if (!quiet) announce_run(cmd, printer, prepared, threads);

  RunSettings settings;
  settings.seed = cmd.seed;
  settings.threads_forced = cmd.threads > 0 || std::getenv("CODEFY_NUM_THREADS") != nullptr;
  if (!cmd.device.empty()) {  // parsed once here, so nodes get a device LibTorch accepts
    const auto choice =
        device::resolve_device(cmd.device, device::DeviceSource{prepared.graph.name, "", "", "--device"});
    for (const auto& w : choice.warnings) say_warning(cmd, printer, w);
    settings.device = choice.device.str();
  }
  settings.base_dir = prepared.graph.base_dir;
  if (!cmd.run_files.empty()) {
    try {
      const auto files = util::read_run_files(cmd.run_files);
      settings.files = files.access;
      settings.output_dir = files.output_dir;
    } catch (const std::exception& e) {
      return report(RunErrorKind::kUsage, "--run-files " + cmd.run_files + ": " + e.what());
    }
  }
  settings.cancel = current_token();
  settings.observer = quiet ? nullptr : &printer;
  std::unique_ptr<RunRecorder> recorder;
  if (!quiet) recorder = start_recording(cmd, printer, prepared, snapshot, world ? world->world_size : 1, threads);
  if (recorder && recorder->active()) settings.observer = recorder.get();
  auto record_end = [&](const std::string& status, const std::optional<RunError>& error) {
    if (recorder)
      recorder->finish(status, error, nlohmann::json::object(), nlohmann::json::object(), nlohmann::json::array());
  };
  if (world) {
    try {
      join_world(*world, cmd, settings);
    } catch (const std::exception& e) {
      RunError error;
      error.kind = RunErrorKind::kDistributed;
      error.message = e.what();
      record_end("failed", error);
      return report_error(std::move(error));
    }
  }
  try {
    const RunResult result = Executor(nodes::builtin()).run(prepared, settings);
    if (!quiet) report_completed(cmd, prepared, result, printer, recorder.get());
    return kExitOk;
  } catch (const Cancelled&) {
    record_end("stopped", std::nullopt);
    if (quiet) {
    } else if (cmd.json) {
      printer.emit_json({{"event", "execution_stopped"}, {"exit_code", kExitStopped}});
    } else {
      std::fprintf(stderr, "stopped\n");
    }
    return kExitStopped;
  } catch (const std::exception&) {
    RunError error = RunError::from_current_exception();
    record_end(error.kind == RunErrorKind::kStopped ? "stopped" : "failed", error);
    return report_error(std::move(error));
  }
}

int launch_run(const RunCommand& cmd) {
  distributed::LaunchOptions o;
  o.nproc_per_node = cmd.nproc_per_node;
  o.nnodes = cmd.nnodes;
  o.node_rank = cmd.node_rank;
  o.master_addr = cmd.master_addr;
  o.master_port = cmd.master_port;
  o.timeout = std::chrono::seconds(cmd.dist_timeout_s);
  // Every rank runs this command without the launcher's flags; the CPUs are
  // shared out among this machine's ranks unless --threads says otherwise.
  const int threads = cmd.threads > 0
                          ? cmd.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / cmd.nproc_per_node);
  o.argv = {
      cmd.program, "run",      cmd.graph_path, "--seed", std::to_string(cmd.seed), "--threads", std::to_string(threads),
      "--out",     cmd.out_dir};
  if (!cmd.device.empty()) o.argv.insert(o.argv.end(), {"--device", cmd.device});
  if (cmd.json) o.argv.push_back("--json");
  if (cmd.memory_budget_mb >= 0)
    o.argv.insert(o.argv.end(), {"--memory-budget-mb", std::to_string(cmd.memory_budget_mb)});
  o.stop_requested = [] { return current_token().cancelled(); };
  o.report = [&cmd](const std::string& line) {
    if (cmd.json)
      std::printf("%s\n", nlohmann::json{{"event", "launcher"}, {"message", line}}.dump().c_str());
    else
      std::fprintf(stderr, "launcher: %s\n", line.c_str());
    std::fflush(stdout);
  };
  std::fflush(stdout);
  distributed::LaunchResult result;
  try {
    result = distributed::launch_ranks(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return kExitRuntimeError;
  }
  if (result.failed_rank < 0) return kExitOk;
  if (current_token().cancelled()) return kExitStopped;
  return result.exit_code > 0 ? result.exit_code : kExitRuntimeError;
}

/// Where the built editor is: beside the program in a checkout (build/codefy
/// -> web/dist) or an install (bin/codefy -> share/codefy/web), else under
/// the working folder. Empty when none has an index.html.
static std::filesystem::path find_web_dir() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe_dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  std::vector<fs::path> candidates;
  if (!ec) candidates = {exe_dir.parent_path() / "web" / "dist", exe_dir.parent_path() / "share" / "codefy" / "web"};
  candidates.push_back(fs::current_path(ec) / "web" / "dist");
  for (const auto& c : candidates)
    if (fs::is_regular_file(c / "index.html", ec)) return c;
  return {};
}

namespace {

/// Workers and memory budgets: CODEFY's CPU budget, then the --config file, then the flags.
struct ServeDevices {
  std::vector<std::string> worker_specs;
  std::map<std::string, int64_t> budget_mb;
};

ServeDevices read_serve_devices(const ServeCommand& cmd) {
  ServeDevices d;
  if (const int64_t cpu = device::cpu_budget_from_env(); cpu > 0) d.budget_mb["cpu"] = cpu >> 20;
  if (!cmd.config.empty()) {
    std::ifstream in(cmd.config);
    const nlohmann::json config = nlohmann::json::parse(in);
    if (auto w = config.find("workers"); w != config.end() && w->is_object())
      for (auto it = w->begin(); it != w->end(); ++it) {
        std::string spec = it.key() + "=";
        for (const auto& dev : it.value()) spec += dev.get<std::string>() + ",";
        d.worker_specs.push_back(spec);
      }
    if (auto b = config.find("memory_budget_mb"); b != config.end() && b->is_object())
      for (auto it = b->begin(); it != b->end(); ++it) d.budget_mb[it.key()] = it.value().get<int64_t>();
  }
  d.worker_specs.insert(d.worker_specs.end(), cmd.workers.begin(), cmd.workers.end());
  for (const auto& b : cmd.budgets) {
    const size_t eq = b.find('=');
    const auto mb = eq == std::string::npos ? std::nullopt : util::parse_int(std::string_view(b).substr(eq + 1));
    if (!mb) throw std::invalid_argument("--device-budget-mb \"" + b + "\": expected DEVICE=MB, e.g. cuda:0=20000");
    d.budget_mb[b.substr(0, eq)] = *mb;
  }
  return d;
}

/// A new session token, also written owner-only to <data dir>/session.token
/// for scripts on this machine (as CodefyUI's), new at every start.
std::string new_session_token(const std::filesystem::path& token_file) {
  std::random_device rd;
  char hex[65];
  for (size_t i = 0; i < 32; ++i) std::snprintf(hex + 2 * i, 3, "%02x", rd() & 0xff);
  util::write_file_atomic(token_file, hex, 0600);
  return hex;
}

/// What CodefyUI's environment variables set: more Host values, other editors' origins, the upload size.
void read_serve_env(server::ApiOptions& options) {
  if (const char* extra = std::getenv("CODEFYUI_EXTRA_ALLOWED_HOSTS"); extra && *extra) {
    std::stringstream hosts(extra);  // e.g. a name this machine is reached by
    for (std::string h; std::getline(hosts, h, ',');)
      if (!h.empty()) options.allowed_hosts.push_back(h);
  }
  // Other editors' origins allowed to call in (CodefyUI's setting and format; default its dev servers).
  if (const char* cors = std::getenv("CODEFYUI_CORS_ORIGINS"); cors && *cors)
    options.cors_origins = server::parse_cors_origins(cors);
  options.max_upload_bytes =
      util::env_count("CODEFYUI_MAX_UPLOAD_SIZE", "a whole number of bytes").value_or(options.max_upload_bytes);
}

/// What the server says as it starts: where, the token, the editor, how runs compute, the workers.
void print_serve_banner(const ServeCommand& cmd, const server::ApiOptions& options, const server::Api& api,
                        uint16_t port, const std::filesystem::path& token_file, device::ComputePriority priority,
                        const std::map<std::string, int64_t>& budget_mb) {
  std::printf("Codefy serving on http://%s:%u (data in %s; Ctrl-C stops)\n", cmd.host.c_str(), port,
              std::filesystem::absolute(cmd.data_dir).string().c_str());
  std::printf("  session token in %s (send it as X-CodefyUI-Token)\n", token_file.string().c_str());
  if (const size_t n = api.stale_temp_files_removed())
    std::printf("  removed %zu temporary file(s) that interrupted writes had left\n", n);
  if (const size_t n = distributed::remove_stale_world_dirs(std::filesystem::temp_directory_path()))
    std::printf("  removed %zu data-parallel folder(s) that a stopped server or launcher had left\n", n);
  if (options.web_dir.empty() || !std::filesystem::is_regular_file(options.web_dir / "index.html"))
    std::printf("  the editor is not built (scripts/build.sh builds web/dist; --web-dir names another)\n");
  else
    std::printf("  editor: http://%s:%u/ (from %s)\n", cmd.host == "0.0.0.0" ? "127.0.0.1" : cmd.host.c_str(), port,
                options.web_dir.string().c_str());
  if (!options.tensorboard_dir.empty())
    std::printf("  runs also written for TensorBoard in %s (tensorboard --logdir %s)\n",
                options.tensorboard_dir.string().c_str(), options.tensorboard_dir.string().c_str());
  using Kind = device::ComputePriority::Kind;
  if (priority.kind == Kind::kAuto)
    std::printf(
        "  runs compute at idle priority on the CPU (on the CPU time nothing else asks for), at nice 10 "
        "on a card (--run-priority)\n");
  else if (priority.kind == Kind::kIdle)
    std::printf("  runs compute at idle priority (--run-priority)\n");
  else if (priority.niceness > 0)
    std::printf("  runs compute at nice %d (--run-priority)\n", priority.niceness);
  if (!options.cors_origins.empty())
    std::printf("  also answers editors at %s (CODEFYUI_CORS_ORIGINS changes the list)\n",
                util::join(options.cors_origins, ", ").c_str());
  for (const auto& w : options.workers) {
    std::string devices;
    for (const auto& d : w.devices) {
      const auto b = budget_mb.find(d);
      devices += (devices.empty() ? "" : ",") + d +
                 (b != budget_mb.end() ? " (budget " + std::to_string(b->second) + " MB)" : "");
    }
    const size_t ranks = w.rank_devices().size();
    std::printf("  worker %s: %s%s\n", w.name.c_str(), devices.c_str(),
                ranks >= 2 ? (" (ddp runs: " + std::to_string(ranks) + " ranks)").c_str() : "");
  }
  std::fflush(stdout);
}

}  // namespace

int serve(const ServeCommand& cmd) {
  device::configure_threads();
  server::ApiOptions options;
  options.data_dir = cmd.data_dir;
  options.tensorboard_dir = cmd.tensorboard_dir;
  options.examples_dir = cmd.examples_dir;
  options.allowed_paths.assign(cmd.allowed_paths.begin(), cmd.allowed_paths.end());
  options.web_dir = cmd.web_dir.empty() ? find_web_dir() : std::filesystem::path(cmd.web_dir);
  try {
    options.stores = store::StoreSettings::from_env();
    util::max_image_pixels();  // a malformed CODEFYUI_MAX_IMAGE_PIXELS stops the start, named
    std::vector<std::string> available = {"cpu"};
    for (int i = 0; i < device::system_probe().cuda_count(); ++i) available.push_back("cuda:" + std::to_string(i));
    const ServeDevices devices = read_serve_devices(cmd);
    options.workers = server::make_workers(devices.worker_specs, available);
    options.runner.dist_timeout = std::chrono::seconds(cmd.dist_timeout_s);
    const auto priority = device::ComputePriority::parse(cmd.run_priority);
    if (!priority)
      throw std::invalid_argument("--run-priority \"" + cmd.run_priority + "\": expected auto, idle or 0-19");
    options.runner.run_priority = *priority;
    options.max_queued_runs = cmd.max_queued_runs;
    for (const auto& [device, mb] : devices.budget_mb) {
      if (std::find(available.begin(), available.end(), device) == available.end())
        throw std::invalid_argument("memory budget for " + device + ": no such device on this machine");
      device::set_device_budget(c10::Device(device), mb << 20);
    }
    const auto token_file = std::filesystem::path(cmd.data_dir) / "session.token";
    options.token = new_session_token(token_file);
    read_serve_env(options);

    server::Api api(options, nodes::builtin());
    server::ServerOptions so;
    so.upload_limit = static_cast<size_t>(options.max_upload_bytes);
    so.spool_dir = std::filesystem::path(cmd.data_dir) / ".uploads";  // upload bodies land here, not in memory
    so.host = cmd.host;
    so.port = cmd.port;
    server::HttpServer http(so, api);
    const uint16_t port = http.start();
    print_serve_banner(cmd, options, api, port, token_file, *priority, devices.budget_mb);
    while (!current_token().cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::printf("stopping: runs end after their current batch\n");
    api.shutdown();  // runs answer "stopped" while the server can still send it
    http.stop();
    return kExitOk;  // ~Api stops the run queues; files on disk were written whole (write-then-rename)
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return kExitRuntimeError;
  }
}

int list_nodes(bool json) {
  const auto types = nodes::builtin().list();
  if (json) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto* t : types) a.push_back(graph::to_json(t->def));
    std::printf("%s\n", a.dump(2).c_str());
    return kExitOk;
  }
  std::string category;
  for (const auto* t : types) {
    if (t->def.category != category) {
      category = t->def.category;
      std::printf("%s\n", category.c_str());
    }
    std::printf("  %-16s %s\n", t->def.name.c_str(), t->def.description.c_str());
  }
  return kExitOk;
}

int print_protocol() {
  std::printf("%s\n", server::protocol_schema().dump(2).c_str());
  return kExitOk;
}

int list_layers(bool json) {
  const nlohmann::json catalog = model::layer_catalog_json();
  if (json) {
    std::printf("%s\n", catalog.dump(2).c_str());
    return kExitOk;
  }
  std::string category;
  for (const auto& t : catalog) {
    if (t["category"] != category) {
      category = t["category"].get<std::string>();
      std::printf("%s\n", category.c_str());
    }
    std::string params;
    for (const auto& p : t["params"]) params += (params.empty() ? "" : " ") + p["name"].get<std::string>();
    std::printf("  %-22s %s\n", t["type"].get<std::string>().c_str(), params.c_str());
  }
  return kExitOk;
}

int show_devices(bool json) {
  device::configure_threads();
  const auto r = device::runtime_report();
  if (json) {
    std::printf("%s\n", r.dump(2).c_str());
    return kExitOk;
  }
  std::printf("LibTorch %s\n", r["libtorch"].get<std::string>().c_str());
  std::printf("Threads  %d (usable CPUs %d; override with --threads or CODEFY_NUM_THREADS)\n", r["threads"].get<int>(),
              r["usable_cpus"].get<int>());
  std::printf("BLAS     %s  %s\n", r["blas"]["name"].get<std::string>().c_str(),
              r["blas"]["path"].get<std::string>().c_str());
  if (!r["blas"]["config"].get<std::string>().empty())
    std::printf("         %s\n", r["blas"]["config"].get<std::string>().c_str());
  std::printf("Devices\n");
  for (const auto& d : r["devices"]) {
    std::string precisions;
    for (const auto& p : d["precisions"]) precisions += (precisions.empty() ? "" : ", ") + p.get<std::string>();
    std::string memory;
    if (d["device"] == "cpu" && d["free_bytes"].is_number() && d["total_bytes"].is_number())
      memory = " · " + device::free_total_gib(d["free_bytes"], d["total_bytes"]) + " RAM available";
    std::printf("  %-8s %s%s  [%s]\n", d["device"].get<std::string>().c_str(), d["label"].get<std::string>().c_str(),
                memory.c_str(), precisions.c_str());
  }
  for (const auto& w : r["warnings"]) std::printf("warning: %s\n", w.get<std::string>().c_str());
  return kExitOk;
}

}  // namespace codefy::cli
