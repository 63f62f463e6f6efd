// The HTTP API, free of sockets: a request in, a response out (possibly
// later, from a run queue's thread). http_server.cpp feeds it from Beast.
#pragma once

#include "engine/executor.h"
#include "engine/node.h"
#include "server/outputs.h"
#include "server/run_queue.h"
#include "store/lru.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace codefy {
class NodeRegistry;
}

namespace codefy::server {

struct Request {
  std::string method;  ///< "GET", "POST", ...
  std::string path;    ///< without the query string, percent-decoded
  std::map<std::string, std::string> query;
  std::map<std::string, std::string> headers;  ///< names lower-case
  std::string body;
  /// Where a large body (an upload) was spooled instead of `body`; the server removes it after answering.
  std::filesystem::path body_file;
  bool from_loopback = false;
  std::string header(const std::string& lower_name) const;
};

struct Response {
  int status = 200;
  std::string body;
  /// When set, the body is this file's content, streamed from disk (downloads).
  std::filesystem::path file;
  std::string content_type = "application/json";
  std::map<std::string, std::string> headers;
  static Response json(int status, const nlohmann::json& j);
  /// FastAPI's error shape: {"detail": message}.
  static Response error(int status, const std::string& message);
};

using Respond = std::function<void(Response)>;

/// One editor connection (WebSocket /ws/execution): its execution cache and
/// its run. `send` delivers a JSON text frame (thread-safe; dropped once the
/// socket is gone).
struct Connection {
  std::function<void(std::string)> send;
  std::shared_ptr<ExecutionCache> cache;
  std::mutex mutex;
  std::string run_id;           ///< the connection's latest run, "" before the first
  bool active = false;          ///< that run has not sent its final message yet
  bool stop_requested = false;  ///< a stop came for it: its final message is execution_stopped
};

struct ApiOptions {
  std::filesystem::path data_dir;
  /// Example graphs (`<category>/<name>/graph.json`), served read-only; empty: none.
  std::filesystem::path examples_dir;
  /// Host header values accepted (DNS-rebinding protection), e.g. "127.0.0.1:8000".
  std::vector<std::string> allowed_hosts;
  /// WebSocket/browser Origin values accepted, e.g. "http://127.0.0.1:8000".
  std::vector<std::string> allowed_origins;
  /// The session token mutating requests must carry in X-CodefyUI-Token.
  std::string token;
  /// Run queues: one per worker; by default one worker per device.
  std::vector<WorkerSpec> workers = {{"cpu", {"cpu"}}};
  /// Largest model file an upload may bring (CodefyUI's CODEFYUI_MAX_UPLOAD_SIZE).
  int64_t max_upload_bytes = 524288000;
  store::StoreSettings stores;
};

class Api {
 public:
  Api(ApiOptions options, const NodeRegistry& registry);
  ~Api();
  /// Stops the runs (they answer "stopped") and joins their threads. Call
  /// before the HTTP server goes, so no answer is posted to a dead server.
  void shutdown();

  /// Answers a request, now or later (runs answer when they end). `respond`
  /// is called exactly once, from any thread.
  void handle(const Request& request, Respond respond);

  /// Checks done before any route (Host, token for mutating methods); empty when fine.
  std::optional<Response> check_access(const Request& request) const;
  /// Allows the Host and Origin values of this server (loopback names and the
  /// bound host, with the port). Call before serving.
  void listen_on(const std::string& host, uint16_t port);
  bool origin_allowed(const std::string& origin) const;
  bool host_allowed(const std::string& host) const;

  nlohmann::json health() const;

  /// WebSocket /ws/execution (CodefyUI's protocol v1): a connection opens
  /// with its own execution cache, receives actions (execute, stop,
  /// clear_cache) and is closed (its run stopped, its cache freed).
  std::shared_ptr<Connection> open_connection(std::function<void(std::string)> send);
  void connection_message(const std::shared_ptr<Connection>& c, const std::string& text);
  void close_connection(const std::shared_ptr<Connection>& c);
  /// The WebSocket handshake's check: "" when fine, else the reason, with
  /// CodefyUI's close code in `code` (4003 Host/Origin, 4401 token).
  std::string check_websocket(const Request& request, int& code) const;
  RunQueues& queues() { return *queues_; }
  const ApiOptions& options() const { return options_; }

 private:
  struct RunRecord;
  void run_graph(const std::string& name, const nlohmann::json& body, Respond respond);
  Response graph_file_route(const Request& r, const std::string& rest);
  Response examples_list() const;
  /// Keeps a run's outputs for the inspector (run output store, R-MEM).
  void record_outputs(const std::string& run_id, const RunResult& result);
  Response models_route(const Request& r, const std::vector<std::string>& parts);
  Response outputs_route(const Request& r, const std::vector<std::string>& parts);
  Response state_route(const Request& r, const std::vector<std::string>& parts);
  std::filesystem::path models_dir() const;
  Response example_load(const std::string& path) const;
  std::filesystem::path graphs_dir() const;

  ApiOptions options_;
  const NodeRegistry& registry_;
  std::unique_ptr<RunQueues> queues_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<RunRecord>> records_;  ///< by run id
  store::LruStore<RunCapture> run_outputs_;                    ///< R-MEM: the run output store
  NodeStateStore node_state_;                                  ///< R-MEM: the node state store
  std::string boot_id_;
  std::vector<std::weak_ptr<Connection>> connections_;  ///< for /api/health (guarded by mutex_)
};

/// CodefyUI's file stem for a graph name: every character that is not a
/// letter, digit, '-' or '_' becomes '_' (so no '.', '/', '\\': nothing can
/// leave the graphs folder).
std::string sanitize_name(const std::string& name);

/// One part of a multipart/form-data body: where its data lies in the body.
struct FormPart {
  std::string name;
  std::string filename;  ///< empty when the part is not a file
  size_t offset = 0;
  size_t size = 0;
};
/// Parses a multipart/form-data body given its Content-Type header; throws
/// std::invalid_argument when it is not one.
std::vector<FormPart> parse_multipart(const std::string& content_type, std::string_view body);
/// The same over a body spooled to a file, read `chunk` bytes at a time.
std::vector<FormPart> parse_multipart_file(const std::string& content_type, const std::filesystem::path& body,
                                           size_t chunk = 1 << 20);

}  // namespace codefy::server
