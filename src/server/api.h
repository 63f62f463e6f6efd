// The HTTP API, free of sockets: a request in, a response out (possibly
// later, from a run queue's thread), answered from a route table that the
// parts below fill. http_server.cpp feeds it from Beast.
#pragma once

#include "server/http_message.h"
#include "server/http_server.h"
#include "server/routes.h"
#include "server/run_queue.h"
#include "store/lru.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace codefy {
class NodeRegistry;
}

namespace codefy::server {

class GraphRoutes;
class Inspector;
class LayerRoutes;
class ModelFiles;
class Runs;
class StaticFiles;
class WsExecution;
struct Connection;

/// CodefyUI's default CORS_ORIGINS: its vite dev server (5173, 5174 when that
/// port is taken) and a CRA-style dev server (3000).
std::vector<std::string> codefyui_dev_origins();
/// CODEFYUI_CORS_ORIGINS's value as CodefyUI reads it (pydantic: a JSON array
/// of strings, e.g. ["http://localhost:5173"]). Throws std::invalid_argument
/// naming the variable for anything else.
std::vector<std::string> parse_cors_origins(const std::string& value);

struct ApiOptions {
  std::filesystem::path data_dir;
  /// Every run also written for TensorBoard under this folder (<dir>/<run id>); empty: not.
  std::filesystem::path tensorboard_dir;
  /// Example graphs (`<category>/<name>/graph.json`), served read-only; empty: none.
  std::filesystem::path examples_dir;
  /// Folders nodes may read and write besides the data folder (`--allow-path`).
  std::vector<std::filesystem::path> allowed_paths;
  /// Read-only data sets nodes may read (Debian's packaged MNIST and Fashion-MNIST).
  std::filesystem::path datasets_dir = "/usr/share/datasets";
  /// The built editor (web/dist), served at `/`; empty: `/` says how to build it.
  std::filesystem::path web_dir;
  /// Host header values accepted (DNS-rebinding protection), e.g. "127.0.0.1:8000".
  std::vector<std::string> allowed_hosts;
  /// WebSocket/browser Origin values accepted, e.g. "http://127.0.0.1:8000".
  std::vector<std::string> allowed_origins;
  /// Other editors' origins allowed to call the API from the browser (CORS),
  /// CodefyUI's CORS_ORIGINS: by default its dev servers' origins. Their
  /// host:port is accepted as Host too, as CodefyUI does.
  std::vector<std::string> cors_origins = codefyui_dev_origins();
  /// The session token mutating requests must carry in X-CodefyUI-Token.
  std::string token;
  /// Run queues: one per worker; by default one worker per device.
  std::vector<WorkerSpec> workers = {{"cpu", {"cpu"}}};
  /// How runs start ddp ranks and at which priority they compute.
  RunnerSettings runner;
  /// Runs that may wait in each worker's queue (`--max-queued-runs`); one
  /// more is refused with 503 (0: no limit).
  size_t max_queued_runs = RunQueues::kDefaultWaitingMax;
  /// Largest model file an upload may bring (CodefyUI's CODEFYUI_MAX_UPLOAD_SIZE).
  int64_t max_upload_bytes = kDefaultUploadBytesMax;
  store::StoreSettings stores;
};

class Api {
 public:
  Api(ApiOptions options, const NodeRegistry& registry);
  virtual ~Api();
  /// Stops the runs (running ones answer "stopped"; queued ones never start)
  /// and joins their threads. Call before the HTTP server goes, so no answer
  /// is posted to a dead server.
  void shutdown();

  /// Answers a request, now or later (runs answer when they end). `respond`
  /// is called exactly once, from any thread.
  void handle(const Request& request, const Respond& respond);
  /// Whether the route for `method` on `path` takes its body spooled to disk
  /// (an upload); the server asks once it has the header.
  bool streams_body(const std::string& method, const std::string& path) const;

  /// Checks done before any route (Host, token for mutating methods); empty when fine.
  std::optional<Response> check_access(const Request& request) const;
  /// Allows the Host and Origin values of this server (loopback names and the
  /// bound host, with the port). Call before serving.
  void listen_on(const std::string& host, uint16_t port);
  bool origin_allowed(const std::string& origin) const;
  bool host_allowed(const std::string& host) const;
  /// A CORS preflight (OPTIONS with Origin and Access-Control-Request-Method)
  /// answered as CodefyUI's CORSMiddleware does; empty for any other request.
  std::optional<Response> preflight(const Request& request) const;
  /// Adds Access-Control-Allow-Origin (and Vary: Origin) to an answer to a
  /// request from an allowed origin, so a cross-origin editor can read it.
  void add_cors_headers(const Request& request, Response& response) const;

  /// GET /api/health's answer: version, nodes, run queues, and each store against its caps.
  nlohmann::json health() const;

  /// WebSocket /ws/execution (CodefyUI's protocol v1): a connection opens
  /// with its own execution cache, receives actions (execute, stop,
  /// clear_cache) and is closed (its run stopped, its cache freed).
  std::shared_ptr<Connection> open_connection(std::function<void(std::string)> send);
  /// One message from the client. Virtual only so a test can make it throw
  /// and show that the server's last-resort catch holds.
  virtual void connection_message(const std::shared_ptr<Connection>& c, const std::string& text);
  void close_connection(const std::shared_ptr<Connection>& c);
  /// The WebSocket handshake's check: "" when fine, else the reason. The
  /// server refuses the upgrade with HTTP 403, as CodefyUI's server does
  /// (its close codes 4003/4401 before accepting become a 403 handshake).
  std::string check_websocket(const Request& request) const;
  const ApiOptions& options() const { return options_; }
  /// How many temporaries of interrupted writes (`*.tmp.<pid>.<n>`) the start removed from the data folder.
  size_t stale_temp_files_removed() const { return stale_temp_files_removed_; }

 private:
  void add_server_routes();

  ApiOptions options_;
  const NodeRegistry& registry_;
  std::string boot_id_;
  size_t stale_temp_files_removed_ = 0;
  // Declared in the order they are built: each may use those before it.
  std::unique_ptr<Inspector> inspector_;
  std::unique_ptr<Runs> runs_;
  std::unique_ptr<WsExecution> ws_;
  std::unique_ptr<GraphRoutes> graphs_;
  std::unique_ptr<ModelFiles> models_;
  std::unique_ptr<StaticFiles> web_;
  std::unique_ptr<LayerRoutes> layers_;
  RouteTable routes_;
};

}  // namespace codefy::server
