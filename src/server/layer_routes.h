// The layer editor's routes: the layer table as data (GET /api/layers) and
// each layer's output shape for a sample input (POST /api/layers/shapes).
// Shapes are computed on a worker thread of their own, one request at a
// time, so a large model never holds up the I/O threads.
#pragma once

#include "server/routes.h"
#include "server/worker.h"

namespace codefy::server {

/// The layer routes and the thread that traces shapes.
class LayerRoutes {
 public:
  /// Requests waiting for the worker beyond the one it traces; more get 503.
  static constexpr size_t kWaitingMax = 8;

  /// Answers the waiting requests with 503 and joins the worker.
  void shutdown() { worker_.shutdown(); }

  /// Adds GET /api/layers and POST /api/layers/shapes.
  void add_routes(RouteTable& table);

 private:
  void shapes(const Request& r, const Respond& respond);

  Worker worker_{"shape requests", kWaitingMax};
};

}  // namespace codefy::server
