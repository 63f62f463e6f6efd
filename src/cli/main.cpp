// codefy: train a graph.json, check it, list nodes and devices.
#include "cli/commands.h"
#include "device/memory.h"
#include "device/runtime.h"

#include <CLI/CLI.hpp>

#include <cstdio>

namespace {

using namespace codefy::cli;

/// `codefy run` and its options, filling `run`.
CLI::App* add_run_command(CLI::App& app, RunCommand& run) {
  auto* run_cmd = app.add_subcommand("run", "Validate and train a graph.json");
  run_cmd->add_option("graph", run.graph_path, "Graph file")->required();
  run_cmd->add_option("--device", run.device, "Device for every node: auto, cpu, cuda, cuda:N, mps");
  run_cmd->add_option("--seed", run.seed, "Run seed: same seed and graph, same numbers");
  run_cmd->add_flag("--json", run.json, "One JSON event per line");
  run_cmd->add_option("--threads", run.threads, "LibTorch intra-op threads (default: usable CPUs)");
  run_cmd
      ->add_option("--memory-budget-mb", run.memory_budget_mb,
                   "Refuse CPU tensor memory past this many MiB, as a full GPU would (default: "
                   "CODEFYUI_CPU_MEMORY_BUDGET_MB, else none)")
      ->check(CLI::NonNegativeNumber);
  run_cmd->add_option("--out", run.out_dir, "Folder for the PNGs nodes draw (Visualize, Forecast)")
      ->capture_default_str();
  run_cmd->add_option("--base-dir", run.base_dir,
                      "Folder the graph's relative file paths resolve against (default: the graph file's)");
  run_cmd->add_option("--run-files", run.run_files,
                      "JSON file of the folders nodes may use (written by codefy serve for its data-parallel ranks)");
  run_cmd
      ->add_option("--nproc-per-node", run.nproc_per_node,
                   "Start this many data-parallel ranks of this program on this machine (TrainingLoop strategy ddp)")
      ->check(CLI::Range(1, 1024));
  run_cmd->add_option("--nnodes", run.nnodes, "Machines taking part (each starts --nproc-per-node ranks)")
      ->check(CLI::Range(1, 1 << 16))
      ->capture_default_str();
  run_cmd->add_option("--node-rank", run.node_rank, "This machine's index in [0, --nnodes)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  run_cmd
      ->add_option("--master-addr", run.master_addr,
                   "Several machines: the address of node 0, where rank 0 hosts the rendezvous store (it listens "
                   "there; one machine needs no address or port)")
      ->capture_default_str();
  run_cmd
      ->add_option("--master-port", run.master_port,
                   "Several machines: the rendezvous store's port, the same on every machine (firewall it to them)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  run_cmd->add_option("--data-dir", run.data_dir, "Where the run history is kept (runs.db; serve's data folder)")
      ->capture_default_str();
  run_cmd->add_flag("--no-record", run.no_record, "Do not keep this run in the run history");
  run_cmd->add_option("--tensorboard", run.tensorboard_dir,
                      "DIR: also write the run as TensorBoard reads it, in DIR/<run id> (scalars while it runs, "
                      "hparams and final metrics at its end)");
  run_cmd
      ->add_option("--dist-timeout", run.dist_timeout_s,
                   "Seconds a rank waits for the others (rendezvous, all-reduce) before it fails")
      ->check(CLI::Range(1, 7 * 24 * 3600))
      ->capture_default_str();
  return run_cmd;
}

/// `codefy plan` and its options, filling `plan`.
CLI::App* add_plan_command(CLI::App& app, PlanCommand& plan) {
  auto* cmd = app.add_subcommand(
      "plan",
      "Predict each TrainingLoop's peak memory, the largest micro-batch that fits and the accumulation that "
      "keeps the batch (measures a few real steps; the graph is not changed)");
  cmd->add_option("graph", plan.graph_path, "Graph file")->required();
  cmd->add_option("--device", plan.device, "Device for every node: auto, cpu, cuda, cuda:N, mps");
  cmd->add_option("--budget-mb", plan.budget_mb,
                  "Plan for this many MiB (default: the CPU budget in force, else the device's free memory)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--target-effective-batch", plan.target_effective_batch,
                  "The effective batch the options reach (default: the graph's batch_size x accumulate_steps)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--margin", plan.margin, "Headroom kept free: fits when peak x (1 + margin) is within the memory")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  cmd->add_option("--memory-budget-mb", plan.memory_budget_mb,
                  "Refuse CPU tensor memory past this many MiB while measuring (default: --budget-mb, else "
                  "CODEFYUI_CPU_MEMORY_BUDGET_MB, else none)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--base-dir", plan.base_dir,
                  "Folder the graph's relative file paths resolve against (default: the graph file's)");
  cmd->add_flag("--json", plan.json, "The plan as JSON");
  return cmd;
}

/// `codefy runs` and its sub-commands, filling `runs`.
CLI::App* add_runs_command(CLI::App& app, RunsCommand& runs) {
  auto* cmd = app.add_subcommand(
      "runs", "The run history: recorded runs, newest first (show ID, compare A B, export ID, delete ID)");
  cmd->add_option("--data-dir", runs.data_dir, "Where the run history is kept (runs.db)")->capture_default_str();
  cmd->add_flag("--json", runs.json, "JSON output");
  cmd->add_option("--graph", runs.graph, "Only runs of this graph name");
  cmd->add_option("--status", runs.status,
                  "Only runs with this status (running, completed, failed, stopped, interrupted)");
  cmd->add_option("--source", runs.source, "Only runs from this source (cli, editor, codefyui, api)");
  cmd->add_option("--limit", runs.limit, "How many")->capture_default_str();
  auto* show = cmd->add_subcommand("show", "Everything recorded of one run");
  show->add_option("id", runs.id, "Run id")->required();
  show->callback([&runs] { runs.action = "show"; });
  show->fallthrough();  // --json, --data-dir after the id
  auto* compare = cmd->add_subcommand("compare", "Runs side by side: what differs, then their final metrics");
  compare->add_option("ids", runs.ids, "Two or more run ids")->required()->expected(2, 20);
  compare->callback([&runs] { runs.action = "compare"; });
  compare->fallthrough();
  auto* exp =
      cmd->add_subcommand("export", "Write a run's series as CSV (--csv FILE) or for TensorBoard (--tensorboard DIR)");
  exp->add_option("id", runs.id, "Run id")->required();
  exp->add_option("--csv", runs.csv_path, "The series as CSV: series,step,value,time");
  exp->add_option("--tensorboard", runs.tensorboard_dir, "DIR: an event file in DIR/<run id>, as TensorBoard reads it");
  exp->callback([&runs] { runs.action = "export"; });
  exp->fallthrough();
  auto* del = cmd->add_subcommand("delete", "Delete one run and its series");
  del->add_option("id", runs.id, "Run id")->required();
  del->callback([&runs] { runs.action = "delete"; });
  del->fallthrough();
  return cmd;
}

/// `codefy serve` and its options, filling `serve_opts`.
CLI::App* add_serve_command(CLI::App& app, ServeCommand& serve_opts) {
  auto* serve_cmd = app.add_subcommand("serve", "The HTTP API for the editor and scripts");
  serve_cmd->add_option("--host", serve_opts.host, "Address to listen on")->capture_default_str();
  serve_cmd->add_option("--port", serve_opts.port, "Port (0: any free one)")->capture_default_str();
  serve_cmd->add_option("--data-dir", serve_opts.data_dir, "Saved graphs and model files")->capture_default_str();
  serve_cmd->add_option("--tensorboard", serve_opts.tensorboard_dir,
                        "DIR: also write every run as TensorBoard reads it, in DIR/<run id>");
  serve_cmd->add_option("--examples-dir", serve_opts.examples_dir, "Example graphs to offer")->capture_default_str();
  serve_cmd->add_option("--allow-path", serve_opts.allowed_paths,
                        "DIR: a folder graphs' nodes may read and write besides the data folder (repeatable; "
                        "nodes also read the examples and /usr/share/datasets)");
  serve_cmd->add_option("--web-dir", serve_opts.web_dir,
                        "The built editor to serve at / (default: web/dist of this checkout, or share/codefy/web "
                        "of an install)");
  serve_cmd->add_option("--worker", serve_opts.workers,
                        "NAME=DEVICE[,DEVICE...]: a worker owning those devices, one run at a time (repeatable; "
                        "default: one worker per device). A ddp run on it starts one rank per card; the CPU as "
                        "cpu*N (e.g. cpu2=cpu*2) starts N processes");
  serve_cmd
      ->add_option("--run-priority,--run-niceness", serve_opts.run_priority,
                   "The priority runs compute at, so the server answers quickly meanwhile: auto (idle for runs on "
                   "the CPU, 10 for runs on a card), idle (only CPU time nothing else asks for) or a nice value "
                   "1-19 (0: the server's own)")
      ->check(CLI::Validator(
          [](std::string& v) {
            return codefy::device::ComputePriority::parse(v) ? std::string()
                                                             : "expected auto, idle or a nice value 0-19";
          },
          "auto|idle|0-19"))
      ->capture_default_str();
  serve_cmd
      ->add_option("--dist-timeout", serve_opts.dist_timeout_s,
                   "Seconds a ddp run's rank waits for the others (rendezvous, all-reduce) before it fails")
      ->check(CLI::Range(1, 7 * 24 * 3600))
      ->capture_default_str();
  serve_cmd->add_option("--device-budget-mb", serve_opts.budgets,
                        "DEVICE=MB: memory budget for a device (repeatable; cpu: the allocator's budget, cuda:N: "
                        "the caching allocator's memory fraction)");
  serve_cmd
      ->add_option("--max-queued-runs", serve_opts.max_queued_runs,
                   "Runs that may wait in each worker's queue; one more is refused with 503 (0: no limit)")
      ->capture_default_str();
  serve_cmd
      ->add_option("--config", serve_opts.config,
                   "JSON file with \"workers\" {NAME: [DEVICE...]} and \"memory_budget_mb\" {DEVICE: MB}")
      ->check(CLI::ExistingFile);
  return serve_cmd;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace codefy::cli;
  using codefy::kExitOk;
  using codefy::kExitUsage;
  codefy::device::tune_allocator();
  codefy::device::install_counting_allocator();  // before the first tensor: live/peak bytes, the CPU budget
  install_signal_handling();

  CLI::App app{"Codefy: visual, node-based deep-learning training on LibTorch"};
  app.require_subcommand(1);

  RunCommand run;
  auto* run_cmd = add_run_command(app, run);

  RunsCommand runs;
  auto* runs_cmd = add_runs_command(app, runs);

  PlanCommand plan;
  auto* plan_cmd = add_plan_command(app, plan);

  ExportCommand exp;
  auto* export_cmd = app.add_subcommand(
      "export", "A trained SequentialModel out as plain PyTorch source (model.py + weights.pt) or TorchScript");
  auto* source = export_cmd->add_option("--graph", exp.graph_path, "The graph whose SequentialModel to export");
  export_cmd->add_option("--node", exp.node_id, "Which SequentialModel node, when the graph has several");
  export_cmd->add_option("--spec", exp.spec_path, "A layer spec file (v2 JSON) instead of a graph")->excludes(source);
  export_cmd->add_option("--weights", exp.weights_path, "The trained weights (.pt or .safetensors)")->required();
  export_cmd->add_option("--format", exp.format, "pytorch or torchscript")->required();
  export_cmd->add_option("--out", exp.out_dir, "Folder to write into")->required();
  export_cmd->add_flag("--json", exp.json, "JSON output");

  std::string validate_path;
  bool validate_json = false;
  auto* validate_cmd = app.add_subcommand("validate", "Check a graph.json without running it");
  validate_cmd->add_option("graph", validate_path, "Graph file")->required();
  validate_cmd->add_flag("--json", validate_json, "Issues as JSON");

  bool nodes_json = false;
  auto* nodes_cmd = app.add_subcommand("nodes", "List node types (--json: CodefyUI's /api/nodes shape)");
  nodes_cmd->add_flag("--json", nodes_json, "JSON output");

  bool layers_json = false;
  auto* layers_cmd =
      app.add_subcommand("layers", "List the layer types a SequentialModel's spec takes (--json: /api/layers' shape)");
  layers_cmd->add_flag("--json", layers_json, "JSON output");

  ServeCommand serve_opts;
  auto* protocol_cmd = app.add_subcommand(
      "protocol", "The run vocabulary clients see, as JSON Schema: WebSocket messages, run error kinds and codes");
  protocol_cmd->add_flag("--json", "JSON output (the only form)");
  auto* serve_cmd = add_serve_command(app, serve_opts);

  bool devices_json = false;
  auto* devices_cmd = app.add_subcommand("devices", "Devices, threads and the BLAS in use");
  devices_cmd->alias("doctor");
  devices_cmd->add_flag("--json", devices_json, "JSON output");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  run.program = argc > 0 ? argv[0] : "codefy";
  if (*run_cmd) return run.nproc_per_node > 0 ? launch_run(run) : run_graph(run);
  if (*plan_cmd) return plan_graph(plan);
  if (*export_cmd) {
    if (exp.graph_path.empty() && exp.spec_path.empty()) {
      std::fprintf(stderr, "error: export needs --graph FILE or --spec FILE\n");
      return kExitUsage;
    }
    return export_model(exp);
  }
  if (*runs_cmd) return runs_command(runs);
  if (*validate_cmd) return validate_graph(validate_path, validate_json);
  if (*nodes_cmd) return list_nodes(nodes_json);
  if (*layers_cmd) return list_layers(layers_json);
  if (*protocol_cmd) return print_protocol();
  if (*devices_cmd) return show_devices(devices_json);
  if (*serve_cmd) return serve(serve_opts);
  return kExitUsage;
}
