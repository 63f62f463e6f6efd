// The server on a free loopback port and a Boost.Beast client (HTTP and
// WebSocket) for the server's integration tests.
#pragma once

#include "../common/test_util.h"
#include "engine/node.h"
#include "nodes/library.h"
#include "server/api.h"
#include "server/http_server.h"
#include "util/text.h"

#include <gtest/gtest.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <thread>

namespace codefy::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
namespace fs = std::filesystem;
namespace websocket = beast::websocket;

struct Reply {
  int status = 0;
  /// Mutable so that `reply.json["key"]` on a const Reply uses json's
  /// non-const operator[] (a missing key reads as null and the test fails
  /// cleanly); the const one is undefined behaviour for a missing key.
  mutable nlohmann::json json;
  std::string body;
  std::map<std::string, std::string> headers;  ///< names lower-case
};

class ServerFixture : public ::testing::Test {
 protected:
  void SetUp() override { start(); }
  void TearDown() override { stop(); }

  void start() {
    ApiOptions o;
    o.data_dir = dir_.path();
    o.token = "test-token";
    o.examples_dir = fs::path(CODEFY_SOURCE_DIR) / "examples";
    o.workers = {{"cpu", {"cpu"}},
                 {"cuda:0", {"cuda:0"}}};  // a second queue, so queue independence can be shown on a CPU machine
    o.max_upload_bytes = 256 << 10;
    o.stores = stores_;
    o.web_dir = web_dir_;
    ServerOptions so;
    so.host = "127.0.0.1";
    so.port = 0;
    so.body_limit = 1 << 20;
    so.upload_limit = static_cast<size_t>(o.max_upload_bytes);
    so.spool_dir = dir_.path() / ".uploads";
    so.max_uploads = 1;  // one at a time, so the cap can be shown
    so.read_timeout = std::chrono::milliseconds(1500);
    if (configure_) configure_(o, so);
    api_ = std::make_unique<Api>(o, nodes::builtin());
    server_ = std::make_unique<HttpServer>(so, *api_);
    port_ = server_->start();
  }
  void stop() {
    if (api_) api_->shutdown();
    server_.reset();
    api_.reset();
  }

  std::string host() const { return "127.0.0.1:" + std::to_string(port_); }

  Reply request(http::verb method, const std::string& target, const std::string& body = "",
                std::map<std::string, std::string> headers = {}) {
    net::io_context ioc;
    tcp::resolver resolver(ioc);
    beast::tcp_stream stream(ioc);
    stream.connect(resolver.resolve("127.0.0.1", std::to_string(port_)));
    http::request<http::string_body> req{method, target, 11};
    req.set(http::field::host, host());
    if (method != http::verb::get) req.set("X-CodefyUI-Token", "test-token");
    for (const auto& [k, v] : headers) req.set(k, v);
    req.body() = body;
    req.prepare_payload();
    beast::error_code ec;
    http::write(stream, req, ec);  // a server refusing a big body may close before it is all sent
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 << 20);
    http::read(stream, buffer, parser, ec);
    Reply r;
    if (ec && !parser.is_header_done()) {
      r.status = -1;
      r.body = ec.message();
      return r;
    }
    r.status = parser.get().result_int();
    r.body = parser.get().body();
    for (const auto& f : parser.get()) r.headers[util::lower(std::string(f.name_string()))] = std::string(f.value());
    r.json = nlohmann::json::parse(r.body, nullptr, false);
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    return r;
  }
  Reply get(const std::string& target, std::map<std::string, std::string> headers = {}) {
    return request(http::verb::get, target, "", std::move(headers));
  }
  Reply post(const std::string& target, const nlohmann::json& body, std::map<std::string, std::string> headers = {}) {
    return request(http::verb::post, target, body.dump(), std::move(headers));
  }
  /// A WebSocket client on /ws/execution.
  struct Ws {
    net::io_context ioc;
    websocket::stream<tcp::socket> ws{ioc};
    void send(const nlohmann::json& m) { ws.write(net::buffer(m.dump())); }
    nlohmann::json next() {
      beast::flat_buffer b;
      ws.read(b);
      return nlohmann::json::parse(beast::buffers_to_string(b.data()));
    }
    /// Messages until one of `type` (included).
    std::vector<nlohmann::json> until(const std::string& type) {
      std::vector<nlohmann::json> v;
      do v.push_back(next());
      while (v.back()["type"] != type);
      return v;
    }
  };
  std::unique_ptr<Ws> open_ws(const std::string& query = "?token=test-token", const std::string& origin = "") {
    auto w = std::make_unique<Ws>();
    w->ws.next_layer().connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port_));
    w->ws.set_option(websocket::stream_base::decorator([origin](websocket::request_type& req) {
      if (!origin.empty()) req.set(http::field::origin, origin);
    }));
    w->ws.handshake(host(), "/ws/execution" + query);
    return w;
  }

  void expect_alive() { EXPECT_EQ(get("/api/health").status, 200) << "the server stopped serving"; }

  testing::TempDir dir_{"codefy-http"};
  store::StoreSettings stores_;  ///< the stores' caps at the next start()
  std::unique_ptr<Api> api_;
  std::unique_ptr<HttpServer> server_;
  uint16_t port_ = 0;
  fs::path web_dir_;  ///< the built editor to serve; set before start()
  /// Changes the options of the next start() (a test's own limits or origins).
  std::function<void(ApiOptions&, ServerOptions&)> configure_;
};

inline nlohmann::json toy_graph(int epochs, int samples = 200) {
  return testing::mlp_training_graph("toy", 2, 16, 2, {{"n_samples", samples}}, {{"batch_size", 1}},
                                     {{"type", "SGD"}, {"lr", 0.05}}, {{"epochs", epochs}});
}

/// node id → the statuses it reported, in order.
inline std::map<std::string, std::vector<std::string>> statuses(const std::vector<nlohmann::json>& messages) {
  std::map<std::string, std::vector<std::string>> m;
  for (const auto& x : messages)
    if (x["type"] == "node_status" && x["status"] != "progress") m[x["node_id"]].push_back(x["status"]);
  return m;
}

}  // namespace codefy::server
