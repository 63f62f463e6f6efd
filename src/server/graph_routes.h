// Graph files under <data-dir>/graphs (CodefyUI's /api/graph save, load,
// list and validate) and the example graphs shipped read-only
// (/api/examples list and load).
#pragma once

#include "server/routes.h"
#include "server/worker.h"

#include <filesystem>
#include <optional>
#include <string>

namespace codefy {
class NodeRegistry;
}

namespace codefy::server {

/// CodefyUI's file stem for a graph name: every character that is not a
/// letter, digit, '-' or '_' becomes '_' (so no '.', '/', '\\': nothing can
/// leave the graphs folder).
std::string sanitize_name(const std::string& name);

/// The folder of example `path` (as /api/examples/list names it) under
/// `examples_dir`; nullopt when there is no such example. Throws
/// std::invalid_argument for a path that is absolute, has "..", or leads out.
std::optional<std::filesystem::path> example_folder(const std::filesystem::path& examples_dir, const std::string& path);

/// The graph file and example routes.
class GraphRoutes {
 public:
  /// Creates `graphs_dir` if it is missing; `examples_dir` empty: no examples.
  GraphRoutes(std::filesystem::path graphs_dir, std::filesystem::path examples_dir, const NodeRegistry& registry);
  /// Adds POST /api/graph/validate, POST /api/graph/save, GET
  /// /api/graph/load/{name}, GET /api/graph/list, GET /api/examples/list and
  /// GET /api/examples/load?path=.
  /// Validations and saves each run on a worker thread of their own (a large
  /// graph never holds up the I/O threads, and a slow validation never holds
  /// up a save); at most this many wait for each.
  static constexpr size_t kWaitingMax = 8;
  void add_routes(RouteTable& table);
  /// Answers the waiting validations and saves with 503 and joins the workers.
  void shutdown() {
    validations_.shutdown();
    saves_.shutdown();
  }

 private:
  Response validate(const Request& r) const;
  Response save(const Request& r) const;
  Response load(const std::string& name) const;
  Response list() const;
  Response examples_list() const;
  Response example_load(const Request& r) const;

  std::filesystem::path graphs_dir_;
  std::filesystem::path examples_dir_;
  const NodeRegistry& registry_;
  Worker validations_{"graph validations", kWaitingMax};
  Worker saves_{"graph saves", kWaitingMax};
};

}  // namespace codefy::server
