// The layer editor's routes: the layer table as data (GET /api/layers) and
// each layer's output shape for a sample input (POST /api/layers/shapes).
// Shapes are computed on a worker thread of their own, one request at a
// time, so a large model never holds up the I/O threads.
#pragma once

#include "server/routes.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace codefy::server {

/// The layer routes and the thread that traces shapes.
class LayerRoutes {
 public:
  /// Requests waiting for the worker beyond the one it traces; more get 503.
  static constexpr size_t kWaitingMax = 8;

  LayerRoutes();
  ~LayerRoutes();
  /// Answers the waiting requests with 503 and joins the worker.
  void shutdown();

  /// Adds GET /api/layers and POST /api/layers/shapes.
  void add_routes(RouteTable& table);

 private:
  void shapes(const Request& r, const Respond& respond);
  void work();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  std::deque<Respond> waiting_;  ///< each job's respond, for shutdown; parallel to jobs_
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace codefy::server
