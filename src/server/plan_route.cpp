// POST /api/graph/plan: a memory plan of the graph in the body, made on the
// device's run queue like a run (one plan at a time, stoppable as a run).
#include "server/runs.h"

#include "device/catalogue.h"
#include "device/runtime.h"
#include "engine/errors.h"
#include "engine/memory_plan.h"
#include "graph/graph.h"
#include "graph/validate.h"
#include "server/graph_routes.h"
#include "util/json_input.h"

#include <cmath>
#include <string>

namespace codefy::server {

namespace fs = std::filesystem;

void Runs::plan(const Request& r, const Respond& respond) {
  nlohmann::json body = r.json_body();
  if (!body.is_object()) return respond(Response::error(400, "expected a graph JSON object"));
  PlanOptions options;
  std::string device = "auto";
  fs::path base_dir = graphs_dir_;
  try {
    const nlohmann::json po = body.contains("plan_options") ? body["plan_options"] : nlohmann::json::object();
    if (!po.is_object()) throw util::JsonFieldError("plan_options", "\"plan_options\" must be an object");
    if (const auto mb = util::number_field(po, "budget_mb")) {
      if (*mb <= 0 || *mb > 1e9) throw util::JsonFieldError("budget_mb", "\"budget_mb\" must be in (0, 1e9]");
      options.budget_bytes = static_cast<int64_t>(*mb * (1 << 20));
      options.budget_source = "budget_mb";
    }
    if (const auto target = util::number_field(po, "target_effective_batch")) {
      if (*target < 1 || *target > 1e9 || *target != std::floor(*target))
        throw util::JsonFieldError("target_effective_batch", "\"target_effective_batch\" must be a whole number >= 1");
      options.target_effective_batch = static_cast<int64_t>(*target);
    }
    if (const auto margin = util::number_field(po, "margin")) {
      if (*margin < 0 || *margin > 10) throw util::JsonFieldError("margin", "\"margin\" must be in [0, 10]");
      options.margin = *margin;
    }
    device = util::string_field(po, "device").value_or("auto");
    if (const auto example = util::string_field(po, "example")) {
      std::optional<fs::path> folder;
      try {
        folder = example_folder(files_.examples_dir, *example);
      } catch (const std::invalid_argument&) {
      }
      if (!folder) return respond(Response::error(404, "Example not found: " + *example));
      base_dir = *folder;
    }
  } catch (const util::JsonFieldError& e) {
    return respond(Response::error(422, e.what()));
  }
  body.erase("plan_options");
  if (!body.contains("name")) body["name"] = "editor";
  graph::Graph g;
  try {
    g = graph::graph_from_json(body, "request");
  } catch (const graph::GraphFormatError& e) {
    return respond(Response::error(400, e.what()));
  }
  g.base_dir = base_dir;
  try {
    prepare(g, registry_);
  } catch (const graph::ValidationError& e) {
    std::string detail = "graph \"" + g.name + "\" is not valid:";
    for (const auto& i : e.issues()) detail += "\n- " + i.message;
    return respond(Response::error(422, detail));
  }
  const device::DeviceChoice choice = device::resolve_device(device, device::DeviceSource{g.name, "", "", "device"});
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (planning_) return respond(Response::error(503, "a memory plan is already being made; try again when it ends"));
    planning_ = true;
  }
  auto done = [this] {
    std::lock_guard<std::mutex> lock(mutex_);
    planning_ = false;
  };
  const bool pinned = device != "auto";
  auto job = [this, g = std::move(g), options, choice, pinned, respond, done](const CancellationToken& token,
                                                                              const std::string&) {
    device::lower_compute_priority(runner_.run_priority.for_run(choice.device.is_cpu()));
    RunSettings settings;
    if (pinned) settings.device = choice.device.str();  // else each node's own device param, as the editor's runs
    settings.base_dir = g.base_dir;
    settings.files = files_.access;
    settings.cancel = token;
    try {
      nlohmann::json answer = plan_memory(g, registry_, settings, options).to_json();
      answer["warnings"] = choice.warnings;
      done();
      respond(Response::json(200, answer));
    } catch (const Cancelled&) {
      done();
      respond(Response::error(503, "the memory plan was stopped"));
      throw;
    } catch (const InputError& e) {
      done();
      respond(Response::error(422, e.what()));
    } catch (const std::exception& e) {
      done();
      respond(Response::error(500, std::string("the memory plan failed: ") + e.what()));
      throw;
    }
  };
  try {
    queues_.submit(choice.device.str(), std::move(job), [respond, done](const std::string&) {
      done();
      respond(Response::error(503, "the memory plan was stopped before it started"));
    });
  } catch (const QueueFull& e) {
    done();
    return respond(Response::error(503, e.what()));
  } catch (const std::invalid_argument& e) {
    done();
    return respond(Response::error(422, e.what()));
  }
}

}  // namespace codefy::server
