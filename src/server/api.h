// The HTTP API, free of sockets: a request in, a response out (possibly
// later, from a run queue's thread). http_server.cpp feeds it from Beast.
#pragma once

#include "server/run_queue.h"
#include "store/lru.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
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
  bool from_loopback = false;
  std::string header(const std::string& lower_name) const;
};

struct Response {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::map<std::string, std::string> headers;
  static Response json(int status, const nlohmann::json& j);
  /// FastAPI's error shape: {"detail": message}.
  static Response error(int status, const std::string& message);
};

using Respond = std::function<void(Response)>;

struct ApiOptions {
  std::filesystem::path data_dir;
  /// Host header values accepted (DNS-rebinding protection), e.g. "127.0.0.1:8000".
  std::vector<std::string> allowed_hosts;
  /// WebSocket/browser Origin values accepted, e.g. "http://127.0.0.1:8000".
  std::vector<std::string> allowed_origins;
  /// The session token mutating requests must carry in X-CodefyUI-Token.
  std::string token;
  /// Run queues: one per device ("cpu", "cuda:0", ...).
  std::vector<std::string> devices = {"cpu"};
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
  RunQueues& queues() { return *queues_; }
  const ApiOptions& options() const { return options_; }

 private:
  struct RunRecord;
  void run_graph(const std::string& name, const nlohmann::json& body, Respond respond);
  Response graph_file_route(const Request& r, const std::string& rest);
  std::filesystem::path graphs_dir() const;

  ApiOptions options_;
  const NodeRegistry& registry_;
  std::unique_ptr<RunQueues> queues_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<RunRecord>> records_;  ///< by run id
  store::LruStore<nlohmann::json> run_outputs_;                ///< R-MEM: the run output store
  std::string boot_id_;                                        ///< new at every start, as CodefyUI's
};

/// CodefyUI's file stem for a graph name: every character that is not a
/// letter, digit, '-' or '_' becomes '_' (so no '.', '/', '\\': nothing can
/// leave the graphs folder).
std::string sanitize_name(const std::string& name);

}  // namespace codefy::server
