// CodefyUI's own editor against `codefy serve`: each test replays what that
// client (its vite dev server's proxy, the browser, its ws.ts) sends and
// checks what it reads.
#include "fixture.h"
#include "raw_client.h"

#include <poll.h>
#include <sys/stat.h>

#include <array>
#include <chrono>

namespace codefy::server {
namespace {

using namespace std::chrono_literals;

class ServerCompat : public ServerFixture {
 protected:
  std::string port() const { return std::to_string(port_); }
  /// One request as raw text (no token unless given), its answer read to the end.
  RawReply raw(const std::string& head) {
    RawClient c(port_);
    EXPECT_FALSE(c.send(head));
    beast::error_code ec;
    const std::string text = c.read_to_end(ec);
    EXPECT_EQ(ec, net::error::eof) << head;
    return parse_reply(text);
  }
};

const std::string kVite = "http://localhost:5173";
const std::string kCodefyUIAllowedHeaders =
    "Accept, Accept-Language, Authorization, Content-Language, Content-Type, X-CodefyUI-Token";

TEST_F(ServerCompat, PreflightFromViteDevOriginAnswersAsCodefyUI) {
  // What a browser sends before a cross-origin POST with the token header.
  RawReply ok = raw("OPTIONS /api/graph/save HTTP/1.1\r\nHost: localhost:" + port() + "\r\nOrigin: " + kVite +
                    "\r\nAccess-Control-Request-Method: POST\r\n"
                    "Access-Control-Request-Headers: content-type,x-codefyui-token\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "OK");
  EXPECT_EQ(ok.headers["content-type"], "text/plain; charset=utf-8");
  EXPECT_EQ(ok.headers["access-control-allow-origin"], kVite);
  EXPECT_EQ(ok.headers["access-control-allow-methods"], "GET, POST, PUT, DELETE");
  EXPECT_EQ(ok.headers["access-control-allow-headers"], kCodefyUIAllowedHeaders);
  EXPECT_EQ(ok.headers["access-control-max-age"], "600");
  EXPECT_EQ(ok.headers["vary"], "Origin");
  EXPECT_EQ(ok.headers.count("access-control-allow-credentials"), 0u);  // allow_credentials=False

  for (const std::string origin : {"http://localhost:5174", "http://localhost:3000"})
    EXPECT_EQ(raw("OPTIONS /api/graph/validate HTTP/1.1\r\nHost: 127.0.0.1:" + port() + "\r\nOrigin: " + origin +
                  "\r\nAccess-Control-Request-Method: POST\r\nConnection: close\r\n\r\n")
                  .headers["access-control-allow-origin"],
              origin);

  // What Starlette refuses, with its words: a method or a header it does not allow.
  RawReply patch = raw("OPTIONS /api/graph/save HTTP/1.1\r\nHost: localhost:" + port() + "\r\nOrigin: " + kVite +
                       "\r\nAccess-Control-Request-Method: PATCH\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(patch.status, 400);
  EXPECT_EQ(patch.body, "Disallowed CORS method");
  EXPECT_EQ(patch.headers["access-control-allow-origin"], kVite);
  RawReply header = raw("OPTIONS /api/graph/save HTTP/1.1\r\nHost: localhost:" + port() + "\r\nOrigin: " + kVite +
                        "\r\nAccess-Control-Request-Method: POST\r\n"
                        "Access-Control-Request-Headers: x-codefyui-token, x-other\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(header.status, 400);
  EXPECT_EQ(header.body, "Disallowed CORS headers");

  // Any other origin is still refused, preflight or not.
  RawReply evil = raw("OPTIONS /api/graph/save HTTP/1.1\r\nHost: localhost:" + port() +
                      "\r\nOrigin: http://evil.example\r\nAccess-Control-Request-Method: POST\r\n"
                      "Connection: close\r\n\r\n");
  EXPECT_EQ(evil.status, 403);
  EXPECT_EQ(evil.headers.count("access-control-allow-origin"), 0u);
  // 127.0.0.1:5173 is not in CodefyUI's list either.
  EXPECT_EQ(raw("OPTIONS /api/graph/save HTTP/1.1\r\nHost: localhost:" + port() +
                "\r\nOrigin: http://127.0.0.1:5173\r\nAccess-Control-Request-Method: POST\r\nConnection: close\r\n\r\n")
                .status,
            403);
}

TEST_F(ServerCompat, ViteDevServerRequestsAreServedWithTheCorsHeader) {
  // Through vite's proxy (changeOrigin: Host is the server's, Origin the dev server's).
  Reply proxied = post("/api/graph/validate", toy_graph(1), {{"Host", "localhost:" + port()}, {"Origin", kVite}});
  EXPECT_EQ(proxied.status, 200) << proxied.body;
  EXPECT_EQ(proxied.json["valid"], true);
  EXPECT_EQ(proxied.headers["access-control-allow-origin"], kVite);
  EXPECT_EQ(proxied.headers["vary"], "Origin");
  // Without changeOrigin the Host is the dev server's own, which CodefyUI accepts too.
  Reply own_host = post("/api/graph/validate", toy_graph(1), {{"Host", "localhost:5173"}, {"Origin", kVite}});
  EXPECT_EQ(own_host.status, 200) << own_host.body;
  EXPECT_EQ(get("/api/health", {{"Host", "LOCALHOST:5174"}}).status, 200);  // host names are case-insensitive
  // A refusal carries the header as well, so the editor can read why.
  Reply no_token = request(http::verb::post, "/api/graph/validate", toy_graph(1).dump(),
                           {{"X-CodefyUI-Token", ""}, {"Origin", kVite}});
  EXPECT_EQ(no_token.status, 403);
  EXPECT_EQ(no_token.headers["access-control-allow-origin"], kVite);
  // The server's own editor (same origin) works as before; others are refused.
  EXPECT_EQ(post("/api/graph/validate", toy_graph(1), {{"Origin", "http://127.0.0.1:" + port()}}).status, 200);
  Reply evil = post("/api/graph/validate", toy_graph(1), {{"Origin", "http://evil.example"}});
  EXPECT_EQ(evil.status, 403);
  EXPECT_EQ(evil.json["detail"], "Origin not allowed");
  EXPECT_EQ(evil.headers.count("access-control-allow-origin"), 0u);
  EXPECT_EQ(get("/api/health", {{"Host", "localhost:5175"}}).status, 421);
  // No Origin (curl, scripts): no CORS header.
  EXPECT_EQ(get("/api/health").headers.count("access-control-allow-origin"), 0u);
}

TEST_F(ServerCompat, CorsOriginsSettingReplacesTheDevOrigins) {
  EXPECT_EQ(parse_cors_origins(R"(["http://editor.test:8080", "https://b.test"])"),
            (std::vector<std::string>{"http://editor.test:8080", "https://b.test"}));
  EXPECT_TRUE(parse_cors_origins("[]").empty());
  for (const std::string bad : {"http://a.test,http://b.test", R"("http://a.test")", "[1]"})
    EXPECT_THROW(parse_cors_origins(bad), std::invalid_argument) << bad;
  try {
    parse_cors_origins("http://a.test");
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("CODEFYUI_CORS_ORIGINS"), std::string::npos);
  }

  stop();
  configure_ = [](ApiOptions& o, ServerOptions&) {
    o.cors_origins = parse_cors_origins(R"(["http://editor.test:8080"])");
  };
  start();
  EXPECT_EQ(get("/api/health", {{"Origin", kVite}}).status, 403);  // replaced, not added to
  Reply other = get("/api/health", {{"Origin", "http://editor.test:8080"}});
  EXPECT_EQ(other.status, 200);
  EXPECT_EQ(other.headers["access-control-allow-origin"], "http://editor.test:8080");
  EXPECT_EQ(get("/api/health", {{"Host", "editor.test:8080"}}).status, 200);
  EXPECT_EQ(get("/api/health", {{"Host", "localhost:5173"}}).status, 421);
  EXPECT_EQ(get("/api/health", {{"Origin", "http://127.0.0.1:" + port()}}).status, 200);  // its own editor still
}

TEST_F(ServerCompat, RefusedPostsAnswerBeforeTheBodyAndTheClientReadsTheAnswer) {
  // The client sends the header, waits for the server's answer, then sends
  // the body (as vite's proxy and Python's urllib do), then reads: the answer
  // must still be there, not lost to a reset.
  const std::string big(40 << 10, 'a');
  struct Case {
    std::string name, head;
    size_t body_bytes;
    int status;
  };
  const std::vector<Case> cases = {
      {"no token", "POST /api/graph/validate HTTP/1.1\r\nHost: 127.0.0.1:" + port() + "\r\nContent-Length: 9\r\n\r\n",
       9, 403},
      {"foreign origin",
       "POST /api/graph/validate HTTP/1.1\r\nHost: 127.0.0.1:" + port() +
           "\r\nOrigin: http://evil.example\r\nX-CodefyUI-Token: test-token\r\nContent-Length: 9\r\n\r\n",
       9, 403},
      {"foreign host",
       "POST /api/graph/validate HTTP/1.1\r\nHost: evil.example\r\nX-CodefyUI-Token: test-token\r\n"
       "Content-Length: 9\r\n\r\n",
       9, 421},
      {"header too large",
       "POST /api/graph/validate HTTP/1.1\r\nHost: 127.0.0.1:" + port() + "\r\nX-Big: " + big +
           "\r\nContent-Length: 9\r\n\r\n",
       9, 431},
      {"60 MB over a 1 MB limit",
       "POST /api/graph/validate HTTP/1.1\r\nHost: 127.0.0.1:" + port() +
           "\r\nX-CodefyUI-Token: test-token\r\nContent-Length: " + std::to_string(60 << 20) + "\r\n\r\n",
       60u << 20, 413},
      {"60 MB without a token",
       "POST /api/graph/validate HTTP/1.1\r\nHost: 127.0.0.1:" + port() +
           "\r\nContent-Length: " + std::to_string(60 << 20) + "\r\n\r\n",
       60u << 20, 403},
  };
  for (const auto& c : cases) {
    RawClient client(port_);
    ASSERT_FALSE(client.send(c.head)) << c.name;
    ASSERT_TRUE(client.answered_within(5s)) << c.name << ": no answer before the body";
    // In two pieces, as a proxy piping the body does: the second one goes after the answer has been read.
    EXPECT_FALSE(client.send(std::string(c.body_bytes / 2, '{'))) << c.name << ": the body could not be sent";
    std::this_thread::sleep_for(100ms);
    EXPECT_FALSE(client.send(std::string(c.body_bytes - c.body_bytes / 2, '{'))) << c.name << ": the body's rest";
    beast::error_code ec;
    RawReply reply = parse_reply(client.read_to_end(ec));
    EXPECT_EQ(ec, net::error::eof) << c.name << ": " << ec.message();  // not "connection reset by peer"
    EXPECT_EQ(reply.status, c.status) << c.name;
    EXPECT_TRUE(reply.complete) << c.name << ": " << reply.body;
    EXPECT_EQ(reply.headers["connection"], "close") << c.name;
    EXPECT_FALSE(nlohmann::json::parse(reply.body, nullptr, false).value("detail", "").empty()) << c.name;
  }
  expect_alive();
}

TEST_F(ServerCompat, LingeringAfterARefusalIsBounded) {
  stop();
  configure_ = [](ApiOptions&, ServerOptions& so) {
    so.linger_idle = 400ms;
    so.linger_total = 1500ms;
  };
  start();
  const std::string refused =
      "POST /api/graph/validate HTTP/1.1\r\nHost: 127.0.0.1:" + port() + "\r\nContent-Length: 1000000000\r\n\r\n";
  const std::string kib(1024, 'x');
  {  // a sender that never stops, slowly: cut off after linger_total
    RawClient client(port_);
    ASSERT_FALSE(client.send(refused));
    ASSERT_TRUE(client.answered_within(5s));
    const auto answered = std::chrono::steady_clock::now();
    beast::error_code ec;
    while (!(ec = client.send(kib)) && std::chrono::steady_clock::now() - answered < 10s)
      std::this_thread::sleep_for(50ms);
    const auto lasted = std::chrono::steady_clock::now() - answered;
    EXPECT_TRUE(ec) << "still connected after 10 s";
    EXPECT_GE(lasted, 1000ms) << "it did not linger";
    EXPECT_LT(lasted, 4000ms);
  }
  {  // a sender that goes quiet: cut off after linger_idle
    RawClient client(port_);
    ASSERT_FALSE(client.send(refused));
    ASSERT_TRUE(client.answered_within(5s));
    std::this_thread::sleep_for(900ms);
    beast::error_code ec;
    for (int i = 0; i < 5 && !ec; ++i) {
      ec = client.send(kib);
      std::this_thread::sleep_for(50ms);
    }
    EXPECT_TRUE(ec) << "a quiet client kept its connection past the idle bound";
  }
  stop();
  configure_ = [](ApiOptions&, ServerOptions& so) { so.linger_bytes = 2u << 20; };  // time bounds stay 5 s / 30 s
  start();
  {  // a fast sender: cut off after linger_bytes, long before the time bounds
    RawClient client(port_);
    ASSERT_FALSE(client.send("POST /api/graph/validate HTTP/1.1\r\nHost: 127.0.0.1:" + port() +
                             "\r\nContent-Length: 1000000000\r\n\r\n"));
    ASSERT_TRUE(client.answered_within(5s));
    const auto answered = std::chrono::steady_clock::now();
    const std::string mib(1 << 20, 'x');
    size_t sent = 0;
    beast::error_code ec;
    while (sent < (512u << 20) && !(ec = client.send(mib))) sent += mib.size();
    EXPECT_TRUE(ec) << "512 MB were taken";
    EXPECT_LT(sent, 64u << 20);
    EXPECT_LT(std::chrono::steady_clock::now() - answered, 4s);
  }
  expect_alive();
}

TEST_F(ServerCompat, WebSocketRefusalsAre403AtTheHandshake) {
  // What CodefyUI's ws.ts opens: ws://<page host>/ws/execution?token=..., the
  // browser adding the page's Origin; refused, no upgrade happens at all.
  struct Case {
    std::string host, query, origin;
  };
  for (const auto& c : std::vector<Case>{{"127.0.0.1:" + port(), "", ""},
                                         {"127.0.0.1:" + port(), "?token=stale", kVite},
                                         {"127.0.0.1:" + port(), "?token=test-token", "http://evil.example"},
                                         {"evil.example", "?token=test-token", ""}}) {
    RawClient client(port_);
    ASSERT_FALSE(client.send("GET /ws/execution" + c.query + " HTTP/1.1\r\nHost: " + c.host +
                             "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                             "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" +
                             (c.origin.empty() ? "" : "Origin: " + c.origin + "\r\n") + "\r\n"));
    beast::error_code ec;
    RawReply reply = parse_reply(client.read_to_end(ec));
    EXPECT_EQ(reply.status, 403) << c.host << c.query << " " << c.origin;
    EXPECT_EQ(reply.headers.count("sec-websocket-accept"), 0u);
    EXPECT_TRUE(reply.complete);
  }
  // Through vite's proxy from the dev origin, with the token: it opens and runs.
  auto w = std::make_unique<Ws>();
  w->ws.next_layer().connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port_));
  w->ws.set_option(
      websocket::stream_base::decorator([](websocket::request_type& req) { req.set(http::field::origin, kVite); }));
  w->ws.handshake("localhost:" + port(), "/ws/execution?token=test-token");
  w->send({{"action", "clear_cache"}});
  EXPECT_EQ(w->next()["type"], "cache_cleared");
  expect_alive();
}

TEST_F(ServerCompat, GraphListModifiedIsTheFilesMtimeInUnixSeconds) {
  ASSERT_EQ(post("/api/graph/save",
                 [] {
                   auto g = toy_graph(1);
                   g["name"] = "dated";
                   return g;
                 }())
                .status,
            200);
  ASSERT_EQ(post("/api/graph/save",
                 [] {
                   auto g = toy_graph(1);
                   g["name"] = "fresh";
                   return g;
                 }())
                .status,
            200);
  const fs::path dated = dir_.path() / "graphs" / "dated.json";
  const timespec when[2] = {{1000000000, 250000000}, {1000000000, 250000000}};  // 2001-09-09T01:46:40.25Z
  ASSERT_EQ(::utimensat(AT_FDCWD, dated.c_str(), when, 0), 0);
  Reply list = get("/api/graph/list");
  ASSERT_EQ(list.status, 200);
  ASSERT_EQ(list.json.size(), 2u);
  for (const auto& g : list.json) {
    struct stat st {};
    ASSERT_EQ(::stat((dir_.path() / "graphs" / (g["file"].get<std::string>() + ".json")).c_str(), &st), 0);
    const double real = static_cast<double>(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec * 1e-9;
    EXPECT_NEAR(g["modified"].get<double>(), real, 1e-6) << g["file"];
    if (g["file"] == "dated") {
      EXPECT_NEAR(g["modified"].get<double>(), 1000000000.25, 1e-6);
    }
  }
}

TEST_F(ServerCompat, PluginsAndCodexStatusAnswerAsCodefyUIWithNone) {
  Reply plugins = get("/api/plugins");
  EXPECT_EQ(plugins.status, 200);
  EXPECT_EQ(plugins.json, nlohmann::json::array());
  EXPECT_EQ(get("/api/plugins/generation").json, nlohmann::json({{"generation", 0}}));
  Reply one = get("/api/plugins/vision-pack");
  EXPECT_EQ(one.status, 404);
  EXPECT_EQ(one.json["detail"], "Plugin 'vision-pack' not installed");
  Reply codex = get("/api/llm/codex/status");
  EXPECT_EQ(codex.status, 200);
  EXPECT_EQ(codex.json, nlohmann::json({{"status", "logged_out"}}));
}

}  // namespace
}  // namespace codefy::server
