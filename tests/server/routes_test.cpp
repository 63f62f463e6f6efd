// The route table on its own (patterns, named parts, the tail form, 404 and
// 405 with Allow, which rows stream their body to disk), and the server's
// table as Api answers from it, without a socket.
#include "server/routes.h"
#include "../common/test_util.h"
#include "nodes/library.h"
#include "server/api.h"

#include <gtest/gtest.h>

namespace codefy::server {
namespace {

/// A table whose handlers answer with the route's pattern and its named parts.
RouteTable echo_table() {
  RouteTable t;
  for (const auto& [method, pattern] :
       std::vector<std::pair<std::string, std::string>>{{"GET", "/api/graph/list"},
                                                        {"GET", "/api/graph/load/{name}"},
                                                        {"GET", "/api/execution/outputs/{run_id}"},
                                                        {"DELETE", "/api/execution/outputs/{run_id}"},
                                                        {"GET", "/api/execution/outputs/{run_id}/{node_id}/{port}"},
                                                        {"GET", "/api/models/download/{path...}"},
                                                        {"DELETE", "/api/models/{name}"},
                                                        {"POST", "/api/models/upload"}}) {
    t.add(method, pattern, [pattern = pattern](const Request&, const PathParams& p) {
      return Response::json(200, {{"pattern", pattern}, {"params", p}});
    });
  }
  return t;
}

/// The pattern of the row `method` on `path` goes to, "" when none.
std::string routed_pattern(const RouteTable& t, const std::string& method, const std::string& path) {
  const RouteMatch m = t.match(method, path);
  return m.route ? m.route->pattern : "";
}

TEST(RouteTable, MatchesLiteralsAndNamedParts) {
  const RouteTable t = echo_table();
  const RouteMatch list = t.match("GET", "/api/graph/list");
  ASSERT_NE(list.route, nullptr);
  EXPECT_EQ(list.route->pattern, "/api/graph/list");
  EXPECT_TRUE(list.params.empty());

  const RouteMatch load = t.match("GET", "/api/graph/load/My_toy");
  ASSERT_NE(load.route, nullptr);
  EXPECT_EQ(load.params, (PathParams{{"name", "My_toy"}}));

  const RouteMatch port = t.match("GET", "/api/execution/outputs/r-1/train/losses");
  ASSERT_NE(port.route, nullptr);
  EXPECT_EQ(port.route->pattern, "/api/execution/outputs/{run_id}/{node_id}/{port}");
  EXPECT_EQ(port.params, (PathParams{{"run_id", "r-1"}, {"node_id", "train"}, {"port", "losses"}}));

  // Empty segments change nothing, as the path's segments are what match.
  EXPECT_EQ(t.match("GET", "//api/graph//load/x/").params, (PathParams{{"name", "x"}}));
  // A named part is one whole segment: more or fewer segments do not match.
  EXPECT_EQ(t.match("GET", "/api/graph/load/a/b").route, nullptr);
  EXPECT_EQ(t.match("GET", "/api/graph/load").route, nullptr);
  EXPECT_EQ(t.match("GET", "/api/execution/outputs/r-1/train").route, nullptr);
}

TEST(RouteTable, TailTakesTheRestOfThePath) {
  const RouteTable t = echo_table();
  const RouteMatch one = t.match("GET", "/api/models/download/mnist.pt");
  ASSERT_NE(one.route, nullptr);
  EXPECT_EQ(one.params, (PathParams{{"path", "mnist.pt"}}));
  const RouteMatch nested = t.match("GET", "/api/models/download/runs/exp1/model.pth");
  ASSERT_NE(nested.route, nullptr);
  EXPECT_EQ(nested.params, (PathParams{{"path", "runs/exp1/model.pth"}}));
  // The tail needs at least one segment; the handler judges what it names.
  EXPECT_EQ(t.match("GET", "/api/models/download").route, nullptr);
  EXPECT_EQ(t.match("GET", "/api/models/download//etc/passwd").params, (PathParams{{"path", "etc/passwd"}}));
}

TEST(RouteTable, AnotherMethodOnAKnownPathIs405WithAllow) {
  const RouteTable t = echo_table();
  const RouteMatch post = t.match("POST", "/api/execution/outputs/r-1");
  EXPECT_EQ(post.route, nullptr);
  EXPECT_EQ(post.allowed, (std::vector<std::string>{"DELETE", "GET"}));
  const Response r = RouteTable::unrouted(post);
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(nlohmann::json::parse(r.body), (nlohmann::json{{"detail", "Method Not Allowed"}}));
  EXPECT_EQ(r.headers.at("Allow"), "DELETE, GET, HEAD");
  // The same path with a method it has goes to that method's row.
  const RouteMatch del = t.match("DELETE", "/api/execution/outputs/r-1");
  ASSERT_NE(del.route, nullptr);
  EXPECT_EQ(del.route->method, "DELETE");
  // A literal and a named part on one path, each its own method.
  EXPECT_EQ(routed_pattern(t, "POST", "/api/models/upload"), "/api/models/upload");
  EXPECT_EQ(routed_pattern(t, "DELETE", "/api/models/upload"), "/api/models/{name}");
  EXPECT_EQ(t.match("GET", "/api/models/upload").allowed, (std::vector<std::string>{"DELETE", "POST"}));
}

TEST(RouteTable, UnknownPathIs404InCodefyUIsShape) {
  const RouteTable t = echo_table();
  for (const std::string path : {"/api/nothing/here", "/", "", "/api/graph", "/api/execution/outputs/a/b"}) {
    const RouteMatch m = t.match("GET", path);
    EXPECT_EQ(m.route, nullptr) << path;
    EXPECT_TRUE(m.allowed.empty()) << path;
    const Response r = RouteTable::unrouted(m);
    EXPECT_EQ(r.status, 404) << path;
    EXPECT_EQ(nlohmann::json::parse(r.body), (nlohmann::json{{"detail", "Not Found"}})) << path;
    EXPECT_EQ(r.headers.count("Allow"), 0u) << path;
  }
}

TEST(RouteTable, RowsAreTriedInTheOrderAdded) {
  RouteTable t;
  t.add("GET", "/api/nodes/{name}", [](const Request&, const PathParams&) { return Response::error(200, "named"); });
  t.add("GET", "/api/nodes/Start", [](const Request&, const PathParams&) { return Response::error(200, "literal"); });
  EXPECT_EQ(routed_pattern(t, "GET", "/api/nodes/Start"), "/api/nodes/{name}");
}

TEST(RouteTable, RefusesMalformedPatterns) {
  RouteTable t;
  const auto noop = [](const Request&, const PathParams&) { return Response(); };
  EXPECT_THROW(t.add("GET", "/api/{}", noop), std::invalid_argument);
  EXPECT_THROW(t.add("GET", "/api/{rest...}/more", noop), std::invalid_argument);
  EXPECT_THROW(t.add("GET", "/api/{a}/{a}", noop), std::invalid_argument);
  EXPECT_TRUE(t.routes().empty());
}

TEST(RouteTable, OnlyItsOwnRowStreamsTheBodyToDisk) {
  RouteTable t = echo_table();
  t.add(Route{"PUT", "/api/blobs/{name}", answer_now([](const Request&, const PathParams&) { return Response(); }),
              /*streams_body_to_disk=*/true});
  EXPECT_TRUE(t.streams_body_to_disk("PUT", "/api/blobs/b1"));
  EXPECT_FALSE(t.streams_body_to_disk("GET", "/api/blobs/b1"));
  EXPECT_FALSE(t.streams_body_to_disk("POST", "/api/models/upload"));
  EXPECT_FALSE(t.streams_body_to_disk("PUT", "/api/nothing"));
}

/// The server's own table, asked through Api::handle (answers that come at once).
class ApiRoutes : public ::testing::Test {
 protected:
  ApiRoutes() {
    ApiOptions o;
    o.data_dir = dir_.path();
    o.token = "t";
    o.allowed_hosts = {"test"};
    api_ = std::make_unique<Api>(o, nodes::builtin());
  }
  Response ask(const std::string& method, const std::string& path) {
    Request r;
    r.method = method;
    r.path = path;
    r.headers = {{"host", "test"}, {"x-codefyui-token", "t"}};
    Response answer;
    int answers = 0;
    api_->handle(r, [&](Response res) {
      answer = std::move(res);
      ++answers;
    });
    EXPECT_EQ(answers, 1) << method << " " << path;
    return answer;
  }

  testing::TempDir dir_{"codefy-routes"};
  std::unique_ptr<Api> api_;
};

TEST_F(ApiRoutes, UnknownPathsGet404AndOtherMethods405WithAllow) {
  const Response unknown = ask("GET", "/api/nothing/here");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.body, R"({"detail":"Not Found"})");
  EXPECT_EQ(ask("GET", "/ws/execution").status, 404);  // only as a WebSocket upgrade

  const Response validate = ask("GET", "/api/graph/validate");
  EXPECT_EQ(validate.status, 405);
  EXPECT_EQ(validate.headers.at("Allow"), "POST");
  EXPECT_EQ(ask("DELETE", "/api/health").headers.at("Allow"), "GET, HEAD");
  EXPECT_EQ(ask("POST", "/api/execution/outputs/r-1").headers.at("Allow"), "DELETE, GET, HEAD");
  EXPECT_EQ(ask("GET", "/api/runs/r-1/stop").headers.at("Allow"), "POST");
  EXPECT_EQ(ask("POST", "/api/nodes/Start").headers.at("Allow"), "GET, HEAD");

  EXPECT_EQ(ask("GET", "/api/health").status, 200);
  EXPECT_EQ(ask("GET", "/api/graph/load/nothing").status, 404);
  EXPECT_EQ(ask("GET", "/api/execution/outputs/r-1").status, 404);  // the route, answering an unknown run
}

TEST_F(ApiRoutes, OnlyTheUploadStreamsItsBodyToDisk) {
  EXPECT_TRUE(api_->streams_body("POST", "/api/models/upload"));
  EXPECT_FALSE(api_->streams_body("GET", "/api/models/upload"));
  EXPECT_FALSE(api_->streams_body("DELETE", "/api/models/upload"));
  EXPECT_FALSE(api_->streams_body("POST", "/api/graph/save"));
  EXPECT_FALSE(api_->streams_body("POST", "/api/nothing"));
}

}  // namespace
}  // namespace codefy::server
