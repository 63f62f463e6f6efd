// Api: the route table built from the server's parts, access checks, the
// server's own routes (health, token bootstrap, nodes, devices), and the
// WebSocket entry points.
#include "server/api.h"

#include "device/catalogue.h"
#include "engine/node.h"
#include "graph/graph.h"
#include "server/graph_routes.h"
#include "server/inspector.h"
#include "server/layer_routes.h"
#include "server/model_files.h"
#include "server/preset_routes.h"
#include "server/runs.h"
#include "server/static_files.h"
#include "server/worker.h"
#include "server/ws_execution.h"
#include "util/atomic_file.h"
#include "util/json_input.h"
#include "util/text.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <sstream>
#include <stdexcept>

namespace codefy::server {

Api::Api(ApiOptions options, const NodeRegistry& registry) : options_(std::move(options)), registry_(registry) {
  const auto graphs_dir = options_.data_dir / "graphs";
  // Saves, uploads and node outputs write a temporary and rename it; one a
  // crash or kill interrupted is invisible to the lists and would stay for good.
  stale_temp_files_removed_ = util::remove_stale_temp_files(options_.data_dir);
  inspector_ = std::make_unique<Inspector>(options_.stores);
  // Nodes read and write inside the data folder and the --allow-path ones;
  // they read the examples and the packaged data sets.
  std::vector<util::FileAccess::Root> roots{{options_.data_dir, true, "the data folder"}};
  if (!options_.examples_dir.empty()) roots.push_back({options_.examples_dir, false, "the examples"});
  if (!options_.datasets_dir.empty()) roots.push_back({options_.datasets_dir, false, "the packaged data sets"});
  for (const auto& dir : options_.allowed_paths) roots.push_back({dir, true, "the allowed folder"});
  RunFiles files{std::make_shared<const util::FileAccess>(std::move(roots)), nullptr, options_.examples_dir,
                 options_.data_dir / "outputs"};
  // The run history, shared with `codefy run`; runs whose process died are
  // marked interrupted as it opens. One that cannot be opened is said once.
  try {
    files.history = std::make_shared<store::RunStore>(options_.data_dir / "runs.db", store::Retention::from_env());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "codefy serve: runs will not be recorded in the run history: %s\n", e.what());
  }
  files.tensorboard_dir = options_.tensorboard_dir;
  runs_ = std::make_unique<Runs>(options_.workers, registry_, *inspector_, graphs_dir, options_.max_queued_runs,
                                 std::move(files), options_.runner);
  ws_ = std::make_unique<WsExecution>(*runs_, registry_, options_.stores.execution_cache, graphs_dir,
                                      options_.examples_dir);
  graphs_ = std::make_unique<GraphRoutes>(graphs_dir, options_.examples_dir, registry_);
  models_ = std::make_unique<ModelFiles>(options_.data_dir / "models", options_.max_upload_bytes);
  web_ = std::make_unique<StaticFiles>(options_.web_dir);
  layers_ = std::make_unique<LayerRoutes>();
  add_server_routes();
  graphs_->add_routes(routes_);
  runs_->add_routes(routes_);
  models_->add_routes(routes_);
  inspector_->add_routes(routes_);
  layers_->add_routes(routes_);
  add_preset_routes(routes_, registry_);
  std::random_device rd;
  char hex[33];
  for (size_t i = 0; i < 16; ++i) std::snprintf(hex + 2 * i, 3, "%02x", rd() & 0xff);
  boot_id_ = hex;
}

Api::~Api() { shutdown(); }

void Api::shutdown() {
  runs_->shutdown();
  layers_->shutdown();
  graphs_->shutdown();
}

void Api::add_server_routes() {
  routes_.add("GET", "/api/health",
              [this](const Request&, const PathParams&) { return Response::json(200, health()); });
  routes_.add("GET", "/api/auth/bootstrap", [this](const Request& r, const PathParams&) {
    if (!r.from_loopback) return Response::error(403, "the token is only given to loopback clients");
    return Response::json(200, {{"token", options_.token}});
  });
  // The node list is fixed once the registry is built: made once, answered as it is.
  nlohmann::json node_list = nlohmann::json::array();
  for (const auto* t : registry_.list()) node_list.push_back(graph::to_json(t->def));
  routes_.add("GET", "/api/nodes",
              [answer = Response::json(200, node_list)](const Request&, const PathParams&) { return answer; });
  routes_.add("GET", "/api/types",
              [](const Request&, const PathParams&) { return Response::json(200, graph::type_rules_json()); });
  routes_.add("GET", "/api/nodes/{name}", [this](const Request&, const PathParams& p) {
    const std::string& name = p.at("name");
    const auto* t = registry_.get(name);
    if (!t) return Response::error(404, "Node '" + name + "' not found");
    return Response::json(200, graph::to_json(t->def));
  });
  // CodefyUI's editor asks for these; Codefy has no plugins and no ChatGPT
  // sign-in, so they answer as CodefyUI does when there are none.
  routes_.add("GET", "/api/plugins",
              [](const Request&, const PathParams&) { return Response::json(200, nlohmann::json::array()); });
  routes_.add("GET", "/api/plugins/generation", [](const Request&, const PathParams&) {
    return Response::json(200, {{"generation", 0}});
  });
  routes_.add("GET", "/api/plugins/{id}", [](const Request&, const PathParams& p) {
    return Response::error(404, "Plugin '" + p.at("id") + "' not installed");
  });
  routes_.add("GET", "/api/llm/codex/status", [](const Request&, const PathParams&) {
    return Response::json(200, {{"status", "logged_out"}});
  });
  routes_.add("GET", "/api/system/devices", [](const Request&, const PathParams&) {
    // Memory is read now, at request time.
    nlohmann::json devices = device::to_json(device::device_catalogue(device::system_probe()));
    std::string fallback = "cpu";
    for (auto& d : devices) {  // CodefyUI's keys next to Codefy's
      d["value"] = d["device"];
      d["detail"] = d.value("name", "");
      d["available"] = true;
      if (d["device"] == "cuda" || (fallback == "cpu" && d["device"] == "mps")) fallback = d["device"];
    }
    return Response::json(200, {{"default", fallback}, {"devices", devices}});
  });
}

void Api::handle(const Request& r, const Respond& respond) {
  try {
    if (auto denied = check_access(r)) return respond(*denied);
    if (auto answer = preflight(r)) return respond(*answer);
    const RouteMatch match = routes_.match(r.method, r.path);
    if (!match.route) {
      // The editor's files answer GETs outside /api and /ws that no route takes.
      if (r.method == "GET" && match.allowed.empty() && StaticFiles::serves(r.path))
        return respond(web_->get(r.path, r.header("accept-encoding")));
      return respond(RouteTable::unrouted(match));
    }
    match.route->handler(r, match.params, respond);
  } catch (...) {
    respond(response_for_current_exception());
  }
}

bool Api::streams_body(const std::string& method, const std::string& path) const {
  return routes_.streams_body_to_disk(method, path);
}

namespace {

/// An origin's host:port ("http://localhost:5173" -> "localhost:5173"), as Python's urlparse(o).netloc.
std::string netloc(const std::string& origin) {
  const size_t scheme = origin.find("://");
  const size_t start = scheme == std::string::npos ? 0 : scheme + 3;
  const size_t end = origin.find_first_of("/?#", start);
  return origin.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// What CodefyUI's CORSMiddleware allows (Starlette adds the CORS-safelisted
// request headers to the allowed ones and sorts them); a preflight may be cached 600 s.
constexpr const char* kCorsMethods[] = {"GET", "POST", "PUT", "DELETE"};
constexpr const char* kCorsHeaders[] = {"Accept",           "Accept-Language", "Authorization",
                                        "Content-Language", "Content-Type",    "X-CodefyUI-Token"};

}  // namespace

std::vector<std::string> codefyui_dev_origins() {
  return {"http://localhost:5173", "http://localhost:5174", "http://localhost:3000"};
}

std::vector<std::string> parse_cors_origins(const std::string& value) {
  const auto j = nlohmann::json::parse(value, nullptr, false);
  const std::string expected =
      "CODEFYUI_CORS_ORIGINS: expected a JSON array of origins, e.g. [\"http://localhost:5173\"], got " + value;
  if (!j.is_array()) throw std::invalid_argument(expected);
  std::vector<std::string> origins;
  for (const auto& o : j) {
    if (!o.is_string()) throw std::invalid_argument(expected);
    origins.push_back(o.get<std::string>());
  }
  return origins;
}

void Api::listen_on(const std::string& host, uint16_t port) {
  const std::string p = ":" + std::to_string(port);
  std::vector<std::string> names = {"127.0.0.1", "localhost", "[::1]"};
  if (std::find(names.begin(), names.end(), host) == names.end() && host != "0.0.0.0" && host != "::")
    names.push_back(host.find(':') != std::string::npos ? "[" + host + "]" : host);
  for (const auto& n : names) {
    options_.allowed_hosts.push_back(n + p);
    options_.allowed_hosts.push_back(n);
    options_.allowed_origins.push_back("http://" + n + p);
  }
  // Another editor's dev server (CodefyUI's vite on :5173) may call in from
  // the browser, or through its proxy with its own Host: both are accepted.
  for (const auto& o : options_.cors_origins) {
    options_.allowed_origins.push_back(o);
    options_.allowed_hosts.push_back(netloc(o));
  }
}

bool Api::host_allowed(const std::string& host) const {
  const std::string h = util::lower(trimmed(host));  // host names are case-insensitive
  if (h.empty()) return false;
  return std::any_of(options_.allowed_hosts.begin(), options_.allowed_hosts.end(),
                     [&](const std::string& a) { return util::lower(a) == h; });
}

bool Api::origin_allowed(const std::string& origin) const {
  return std::find(options_.allowed_origins.begin(), options_.allowed_origins.end(), origin) !=
         options_.allowed_origins.end();
}

std::optional<Response> Api::check_access(const Request& r) const {
  // CodefyUI's answers: 421 for a foreign Host (DNS rebinding), 403 for the token.
  if (!host_allowed(r.header("host"))) return Response::error(421, "Misdirected Request (Host not allowed)");
  const std::string origin = r.header("origin");
  if (!origin.empty() && !origin_allowed(origin)) return Response::error(403, "Origin not allowed");
  const bool mutating = r.method != "GET" && r.method != "HEAD" && r.method != "OPTIONS";
  if (mutating && r.header("x-codefyui-token") != options_.token)
    return Response::error(403, "Missing or invalid X-CodefyUI-Token header");
  return std::nullopt;
}

std::optional<Response> Api::preflight(const Request& r) const {
  const auto requested_method = r.headers.find("access-control-request-method");
  const std::string origin = r.header("origin");
  if (r.method != "OPTIONS" || origin.empty() || requested_method == r.headers.end()) return std::nullopt;
  Response res;
  res.content_type = "text/plain; charset=utf-8";
  res.headers["Vary"] = "Origin";
  std::string methods, headers;
  for (const char* m : kCorsMethods) methods += std::string(methods.empty() ? "" : ", ") + m;
  for (const char* h : kCorsHeaders) headers += std::string(headers.empty() ? "" : ", ") + h;
  res.headers["Access-Control-Allow-Methods"] = methods;
  res.headers["Access-Control-Max-Age"] = "600";
  res.headers["Access-Control-Allow-Headers"] = headers;
  std::vector<std::string> failures;
  if (origin_allowed(origin))
    res.headers["Access-Control-Allow-Origin"] = origin;
  else
    failures.push_back("origin");
  if (std::none_of(std::begin(kCorsMethods), std::end(kCorsMethods),
                   [&](const char* m) { return requested_method->second == m; }))
    failures.push_back("method");
  if (const auto asked = r.headers.find("access-control-request-headers"); asked != r.headers.end()) {
    std::stringstream names(asked->second + ",");  // "" asks for an empty name, which is not allowed
    for (std::string name; std::getline(names, name, ',');) {
      const std::string n = util::lower(trimmed(name));
      if (std::none_of(std::begin(kCorsHeaders), std::end(kCorsHeaders),
                       [&](const char* h) { return util::lower(h) == n; })) {
        failures.push_back("headers");
        break;
      }
    }
  }
  if (failures.empty()) {
    res.body = "OK";
    return res;
  }
  res.status = 400;  // the browser refuses anyway; the text says why
  res.body = "Disallowed CORS " + util::join(failures, ", ");
  return res;
}

void Api::add_cors_headers(const Request& r, Response& res) const {
  const std::string origin = r.header("origin");
  if (origin.empty() || !origin_allowed(origin)) return;
  res.headers["Access-Control-Allow-Origin"] = origin;
  auto& vary = res.headers["Vary"];
  if (vary.find("Origin") == std::string::npos) vary = vary.empty() ? "Origin" : vary + ", Origin";
}

std::string Api::check_websocket(const Request& r) const {
  if (!host_allowed(r.header("host"))) return "Host not allowed";
  const std::string origin = r.header("origin");
  if (!origin.empty() && !origin_allowed(origin)) return "Origin not allowed";
  std::string token = r.header("x-codefyui-token");
  if (token.empty()) {
    auto it = r.query.find("token");
    if (it != r.query.end()) token = it->second;
  }
  if (token != options_.token) return "Missing or invalid session token";
  return "";
}

nlohmann::json Api::health() const {
  nlohmann::json caches = inspector_->health();
  caches["execution_cache"] = ws_->cache_health();
  return {{"status", "ok"},
          {"version", CODEFY_VERSION},
          {"boot_id", boot_id_},
          {"nodes_loaded", registry_.list().size()},
          {"queues", runs_->queues().queues_json()},
          {"caches", caches}};
}

std::shared_ptr<Connection> Api::open_connection(std::function<void(std::string)> send) {
  return ws_->open(std::move(send));
}

void Api::connection_message(const std::shared_ptr<Connection>& c, const std::string& text) { ws_->receive(c, text); }

void Api::close_connection(const std::shared_ptr<Connection>& c) { ws_->close(c); }

}  // namespace codefy::server
