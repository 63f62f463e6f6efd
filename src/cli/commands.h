// The `codefy` subcommands.
#pragma once

#include "engine/run_error.h"  // the exit codes

#include <cstdint>
#include <string>
#include <vector>

namespace codefy::cli {

struct RunCommand {
  std::string graph_path;
  std::string device;
  uint64_t seed = 0;
  bool json = false;
  int threads = 0;
  int64_t memory_budget_mb = -1;  ///< -1: from the environment
  std::string out_dir = "codefy-out";
  /// Relative file paths in params resolve against this folder; empty: the graph file's.
  std::string base_dir;
  /// JSON of the folders the run's nodes may use and where an example's
  /// outputs go (codefy serve writes it for its data-parallel ranks); empty: unconfined.
  std::string run_files;
  /// Data-parallel ranks to start on this machine (0: run here, as a single
  /// process or as a rank torchrun's variables describe).
  int nproc_per_node = 0;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  ///< 0: a free port (one machine)
  /// Seconds a rank waits for the others before failing.
  int dist_timeout_s = 60;
  /// The program's own argv[0], to start the ranks with.
  std::string program;
  /// The run history lives in `<data_dir>/runs.db` (serve's folder by default); no_record: not kept.
  std::string data_dir = "codefy-data";
  bool no_record = false;
  /// Also write the run for TensorBoard under this folder (<dir>/<run id>/events.out.tfevents...); empty: not.
  std::string tensorboard_dir;
};

/// `codefy export`: a trained SequentialModel out as plain PyTorch source or TorchScript.
struct ExportCommand {
  std::string graph_path;  ///< the graph whose SequentialModel's spec to take (or spec_path)
  std::string node_id;     ///< which SequentialModel, when the graph has several
  std::string spec_path;   ///< a layer spec file instead of a graph
  std::string weights_path;
  std::string format;  ///< "pytorch" or "torchscript"
  std::string out_dir;
  bool json = false;
};

struct PlanCommand {
  std::string graph_path;
  std::string device;
  int64_t budget_mb = 0;               ///< 0: the CPU budget in force, else the device's free memory
  int64_t target_effective_batch = 0;  ///< 0: each TrainingLoop's own
  double margin = 0.1;
  int64_t memory_budget_mb = -1;  ///< -1: --budget-mb, else from the environment
  std::string base_dir;
  bool json = false;
};

/// `codefy runs [show ID | delete ID]`: the run history.
struct RunsCommand {
  std::string action = "list";  ///< list, show, delete, compare, export
  std::string id;
  std::vector<std::string> ids;  ///< compare's runs
  std::string csv_path;          ///< export: the series as CSV here
  std::string tensorboard_dir;   ///< export: TensorBoard event files under this folder
  std::string data_dir = "codefy-data";
  std::string graph, status, source;
  size_t limit = 20;
  bool json = false;
};

struct ServeCommand {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;
  std::string data_dir = "codefy-data";
  /// Every run also written for TensorBoard under this folder; empty: not.
  std::string tensorboard_dir;
  std::string examples_dir = "examples";
  /// Folders graphs' nodes may read and write besides the data folder.
  std::vector<std::string> allowed_paths;
  /// The built editor; empty: found beside the program (a checkout's web/dist, an install's share/codefy/web).
  std::string web_dir;
  /// Seconds a ddp run's rank waits for the others.
  int dist_timeout_s = 60;
  /// The priority runs compute at: "auto" (idle on the CPU, nice 10 on a card), "idle"
  /// (SCHED_IDLE) or a nice value (0: the server's own).
  std::string run_priority = "auto";
  /// `NAME=DEVICE[,DEVICE...]`: a worker owning those devices (default: one per device).
  std::vector<std::string> workers;
  /// `DEVICE=MB`: a memory budget for that device (CPU budget, CUDA memory fraction).
  std::vector<std::string> budgets;
  /// JSON file: {"workers": {"NAME": ["cuda:0", ...]}, "memory_budget_mb": {"cpu": 4096}}.
  std::string config;
  /// Runs that may wait in each worker's queue; more are refused with 503 (0: no limit).
  size_t max_queued_runs = 64;
};

/// `codefy run`: one process, or one rank of a data-parallel world when
/// WORLD_SIZE (torchrun's variables) says so.
int run_graph(const RunCommand& cmd);
/// `codefy run --nproc-per-node N`: starts N ranks running run_graph and
/// waits for them; exits with the first failed rank's code.
int launch_run(const RunCommand& cmd);
/// `codefy serve`: the HTTP API until SIGINT/SIGTERM, then stops runs between batches.
int serve(const ServeCommand& cmd);
/// `codefy plan`: the memory plan of each TrainingLoop; exits 0 when the
/// graph as it stands is predicted to fit, kExitOutOfMemory when not.
int plan_graph(const PlanCommand& cmd);
int export_model(const ExportCommand& cmd);
/// `codefy runs`: lists, shows or deletes recorded runs.
int runs_command(const RunsCommand& cmd);
int validate_graph(const std::string& path, bool json);
int list_nodes(bool json);
/// The layer types a SequentialModel's spec takes, with their params (json: GET /api/layers' body).
int list_layers(bool json);
/// `codefy protocol --json`: the run vocabulary as clients see it (server/protocol.h).
int print_protocol();
int show_devices(bool json);

/// Starts the thread that turns SIGINT/SIGTERM into a cancellation of the
/// current run; call first thing in main, before LibTorch starts threads.
void install_signal_handling();

}  // namespace codefy::cli
