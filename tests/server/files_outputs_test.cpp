// Model files, captured run outputs and the node state store through the
// server's HTTP API (CodefyUI's /api/models, /api/execution/outputs and
// /api/execution/state routes), and the inspector's slicing on its own.
#include "fixture.h"
#include "server/multipart.h"
#include "server/outputs.h"

#include <torch/torch.h>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>

namespace codefy::server {
namespace {

std::string form(const std::string& filename, const std::string& data, const std::string& field = "file") {
  return "--XyZ\r\nContent-Disposition: form-data; name=\"" + field + "\"; filename=\"" + filename +
         "\"\r\nContent-Type: application/octet-stream\r\n\r\n" + data + "\r\n--XyZ--\r\n";
}
const std::map<std::string, std::string> kForm = {{"Content-Type", "multipart/form-data; boundary=XyZ"}};

using testing::read_file;

TEST(Multipart, PartsFieldsAndFilenames) {
  const std::string body =
      "preamble\r\n--b\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhello\r\n"
      "--b\r\ncontent-disposition: form-data; name=\"file\"; filename=\"w.pt\"\r\n\r\n"
      "a\r\n--b-not-yet\r\nz\r\n--b--\r\n";
  const auto parts = parse_multipart("multipart/form-data; boundary=\"b\"", body);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].name, "note");
  EXPECT_EQ(parts[0].filename, "");
  EXPECT_EQ(body.substr(parts[0].offset, parts[0].size), "hello");
  EXPECT_EQ(parts[1].filename, "w.pt");
  EXPECT_EQ(body.substr(parts[1].offset, parts[1].size),
            "a\r\n--b-not-yet\r\nz");  // the delimiter is only CRLF--b followed by CRLF or --
  // Spooled to a file and read in pieces of every small size: the same parts.
  testing::TempDir tmp("multipart");
  std::ofstream(tmp.path() / "body", std::ios::binary) << body;
  for (size_t chunk : {1, 2, 3, 5, 7, 64, 1 << 20}) {
    const auto from_file = parse_multipart_file("multipart/form-data; boundary=\"b\"", tmp.path() / "body", chunk);
    ASSERT_EQ(from_file.size(), 2u) << chunk;
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(from_file[i].name, parts[i].name) << chunk;
      EXPECT_EQ(from_file[i].offset, parts[i].offset) << chunk;
      EXPECT_EQ(from_file[i].size, parts[i].size) << chunk;
    }
  }
  EXPECT_THROW(parse_multipart("application/json", body), std::invalid_argument);
  EXPECT_THROW(parse_multipart("multipart/form-data; boundary=b", "--b\r\nno end"), std::invalid_argument);
}

TEST_F(ServerFixture, ModelFilesUploadListDownloadDelete) {
  std::string weights(100000, '\0');
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<char>(i * 31 % 251);
  Reply up = request(http::verb::post, "/api/models/upload", form("mnist.pt", weights), kForm);
  ASSERT_EQ(up.status, 200) << up.body;
  EXPECT_EQ(up.json, (nlohmann::json{{"filename", "mnist.pt"}, {"size", 100000}}));
  EXPECT_EQ(read_file(dir_.path() / "models/mnist.pt"), weights);

  // A browser may send a path; only its last part is kept, inside the models folder.
  ASSERT_EQ(request(http::verb::post, "/api/models/upload", form("../../b.safetensors", "x"), kForm).status, 200);
  EXPECT_TRUE(fs::exists(dir_.path() / "models/b.safetensors"));

  const Reply list = get("/api/models");
  EXPECT_EQ(list.json, (nlohmann::json::array({{{"filename", "b.safetensors"}, {"size", 1}},
                                               {{"filename", "mnist.pt"}, {"size", 100000}}})));

  const Reply down = get("/api/models/download/mnist.pt");
  ASSERT_EQ(down.status, 200);
  EXPECT_EQ(down.body, weights);
  fs::create_directories(dir_.path() / "models/runs/exp1");
  std::ofstream(dir_.path() / "models/runs/exp1/model.pth") << "nested";
  EXPECT_EQ(get("/api/models/download/runs/exp1/model.pth").body, "nested");

  const Reply del = request(http::verb::delete_, "/api/models/mnist.pt");
  EXPECT_EQ(del.json["message"], "Deleted mnist.pt");
  EXPECT_FALSE(fs::exists(dir_.path() / "models/mnist.pt"));
  EXPECT_EQ(get("/api/models/download/mnist.pt").json["detail"], "File not found: mnist.pt");
}

TEST_F(ServerFixture, ModelFileRoutesRefuseWhatTheyShould) {
  std::ofstream(dir_.path() / "secret.pt") << "outside the models folder";
  std::ofstream(dir_.path() / "graphs/g.json") << "{}";
  fs::create_directories(dir_.path() / "models/runs");
  std::ofstream(dir_.path() / "models/notes.txt") << "not weights";

  Reply r = request(http::verb::post, "/api/models/upload", form("tool.exe", "MZ"), kForm);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json["detail"], "Unsupported file type: .exe. Allowed: .bin, .ckpt, .pt, .pth, .safetensors");
  EXPECT_EQ(request(http::verb::post, "/api/models/upload", form("", "x"), kForm).json["detail"],
            "No filename provided");
  EXPECT_EQ(request(http::verb::post, "/api/models/upload", form("a|b.pt", "x"), kForm).status, 400);
  EXPECT_EQ(request(http::verb::post, "/api/models/upload", form("con.pt", "x"), kForm).status, 400);
  EXPECT_EQ(request(http::verb::post, "/api/models/upload", form("w.pt", "x", "other"), kForm).status, 422);
  EXPECT_EQ(request(http::verb::post, "/api/models/upload", "not a form", {{"Content-Type", "text/plain"}}).status,
            400);
  const Reply big = request(http::verb::post, "/api/models/upload", form("big.pt", std::string(300 << 10, 'w')), kForm);
  EXPECT_EQ(big.status, 413);
  EXPECT_EQ(big.json["detail"], "File too large");
  EXPECT_EQ(request(http::verb::post, "/api/models/upload", form("huge.pt", std::string(400 << 10, 'w')), kForm).status,
            413);  // past the body limit (upload limit + 64 KiB of form)
  EXPECT_EQ(request(http::verb::post, "/api/models/upload", form("w.pt", "x"),
                    {{"Content-Type", kForm.begin()->second}, {"X-CodefyUI-Token", "wrong"}})
                .status,
            403);
  // Without the token even an oversized body gets 403, unread (CodefyUI's order: token, then size).
  EXPECT_EQ(request(http::verb::post, "/api/models/upload", form("h.pt", std::string(400 << 10, 'w')),
                    {{"Content-Type", kForm.begin()->second}, {"X-CodefyUI-Token", "wrong"}})
                .status,
            403);

  for (const std::string target : {"/api/models/download/../secret.pt", "/api/models/download/%2e%2e/secret.pt",
                                   "/api/models/download/..%2f..%2fgraphs%2fg.json", "/api/models/download//etc/passwd",
                                   "/api/models/download/%2fetc%2fpasswd"}) {
    const Reply t = get(target);
    EXPECT_TRUE(t.status == 400 || t.status == 404) << target << " " << t.status << " " << t.body;
    EXPECT_EQ(t.body.find("outside the models folder"), std::string::npos) << target;
  }
  EXPECT_EQ(get("/api/models/download/runs").json["detail"], "Not a file");
  EXPECT_EQ(get("/api/models/download/notes.txt").json["detail"], "Not a model file");
  EXPECT_EQ(request(http::verb::delete_, "/api/models/%2e%2e%2fsecret.pt").status, 404);
  EXPECT_EQ(request(http::verb::delete_, "/api/models/..").json["detail"], "Invalid filename");
  EXPECT_TRUE(fs::exists(dir_.path() / "secret.pt"));
  EXPECT_TRUE(fs::exists(dir_.path() / "graphs/g.json"));
  EXPECT_EQ(get("/api/models").json.size(), 0u);  // notes.txt and folders are not listed
  std::vector<std::string> outside;
  for (const auto& e : fs::directory_iterator(dir_.path()))
    if (e.path().filename().string().rfind("runs.db", 0) != 0)  // the run history the server keeps
      outside.push_back(e.path().filename().string());
  std::sort(outside.begin(), outside.end());
  // Nothing written elsewhere; every spooled upload body is gone.
  EXPECT_EQ(outside, (std::vector<std::string>{".uploads", "graphs", "models", "secret.pt"}));
  EXPECT_TRUE(fs::is_empty(dir_.path() / ".uploads"));
  expect_alive();
}

TEST_F(ServerFixture, ARestartKeepsModelFiles) {
  ASSERT_EQ(request(http::verb::post, "/api/models/upload", form("keep.ckpt", "abc"), kForm).status, 200);
  stop();
  start();
  EXPECT_EQ(get("/api/models").json, (nlohmann::json::array({{{"filename", "keep.ckpt"}, {"size", 3}}})));
  EXPECT_EQ(get("/api/models/download/keep.ckpt").body, "abc");
}

TEST(OutputValues, SlicesAsNumpyDoes) {
  const Value t = torch::arange(24, torch::kFloat).reshape({2, 3, 4});
  const auto j = output_values(t, "1,:,0:4:2", 4096);
  EXPECT_EQ(j["type"], "tensor");
  EXPECT_EQ(j["full_shape"], (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(j["dtype"], "torch.float32");
  EXPECT_EQ(j["sliced_shape"], (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(j["values"], nlohmann::json::parse("[[12,14],[16,18],[20,22]]"));
  EXPECT_EQ(j["min"], 12.0);
  EXPECT_EQ(j["max"], 22.0);
  EXPECT_EQ(j["mean"], 17.0);
  EXPECT_EQ(output_values(t, "-1,-1,-1", 4096)["values"], 23.0);
  EXPECT_EQ(output_values(t, "", 4096)["sliced_shape"], (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(output_values(t, "0,::2", 4096)["values"], nlohmann::json::parse("[[0,1,2,3],[8,9,10,11]]"));
  const Value ints = torch::tensor({3, -1, 7}, torch::kLong);
  const auto ji = output_values(ints, ":", 10);
  EXPECT_EQ(ji["dtype"], "torch.int64");
  EXPECT_EQ(ji["min"], -1);
  EXPECT_TRUE(ji["min"].is_number_integer());
  EXPECT_TRUE(output_values(Value(torch::tensor({1.0, std::nan("")})), "", 10)["values"][1].is_null());

  auto status_of = [&](const std::string& slice, int64_t max) {
    try {
      output_values(t, slice, max);
      return 200;
    } catch (const HttpError& e) {
      return e.status();
    }
  };
  EXPECT_EQ(status_of("", 23), 413);  // 24 values
  EXPECT_EQ(status_of("0", 12), 200);
  EXPECT_EQ(status_of("a", 10), 400);
  EXPECT_EQ(status_of("1:2:3:4", 10), 400);
  EXPECT_EQ(status_of("5", 10), 400);  // out of range: the tensor refuses
  EXPECT_EQ(status_of("0,0,0,0", 10), 400);
  try {
    output_values(t, "x", 10);
  } catch (const HttpError& e) {
    EXPECT_STREQ(e.what(), "invalid slice: bad slice piece: 'x'");
  }
}

TEST_F(ServerFixture, RecordedOutputsAreListedSlicedAndCounted) {
  auto ws = open_ws();
  nlohmann::json g = toy_graph(3);
  g["action"] = "execute";
  g["record_outputs"] = true;
  g["run_id"] = "r-1";
  ws->send(g);
  ws->until("execution_complete");

  const Reply rows = get("/api/execution/outputs/r-1");
  ASSERT_EQ(rows.status, 200) << rows.body;
  nlohmann::json losses_row;
  for (const auto& row : rows.json)
    if (row.value("node_id", "") == "train" && row.value("port", "") == "losses") losses_row = row;
  EXPECT_EQ(losses_row["type"], "tensor");
  EXPECT_EQ(losses_row["full_shape"], (std::vector<int64_t>{3}));  // one loss per epoch
  const Reply all = get("/api/execution/outputs/r-1/train/losses");
  ASSERT_EQ(all.status, 200) << all.body;
  EXPECT_EQ(all.json["run_id"], "r-1");
  ASSERT_EQ(all.json["values"].size(), 3u);
  const Reply tail = get("/api/execution/outputs/r-1/train/losses?slice=1:");
  EXPECT_EQ(tail.json["values"], (nlohmann::json{all.json["values"][1], all.json["values"][2]}));
  EXPECT_EQ(get("/api/execution/outputs/r-1/train/losses?max_elements=2").status, 413);
  EXPECT_EQ(get("/api/execution/outputs/r-1/train/losses?max_elements=0").status, 422);
  EXPECT_EQ(get("/api/execution/outputs/r-1/train/losses?slice=q").json["detail"],
            "invalid slice: bad slice piece: 'q'");
  EXPECT_EQ(get("/api/execution/outputs/r-1/mlp/model").json["type"], "model");
  EXPECT_EQ(get("/api/execution/outputs/r-1/train/nothing").json["detail"],
            "output 'train.nothing' not found in run 'r-1'");
  EXPECT_EQ(get("/api/execution/outputs/r-9").json["detail"], "run 'r-9' not found");

  // /api/health counts what the stores hold.
  auto caches = get("/api/health").json["caches"];
  EXPECT_EQ(caches["run_output_store"]["runs"], 1);
  EXPECT_GT(caches["run_output_store"]["bytes"].get<int64_t>(), 0);
  EXPECT_EQ(caches["node_state_store"]["modules"], 1);  // the SequentialModel, kept for the next run
  EXPECT_EQ(caches["node_state_store"]["bytes"], (2 * 16 + 16 + 16 * 2 + 2) * 4);  // its weights, measured once

  EXPECT_EQ(request(http::verb::delete_, "/api/execution/outputs/r-1").json["deleted"], true);
  EXPECT_EQ(get("/api/execution/outputs/r-1").status, 404);
  EXPECT_EQ(get("/api/health").json["caches"]["run_output_store"]["bytes"], 0);
}

TEST_F(ServerFixture, NodeStateCarriesTrainingOverAndCanBeReset) {
  auto ws = open_ws();
  nlohmann::json g = toy_graph(1);
  g["action"] = "execute";
  g["graph_id"] = "tab-1";
  ws->send(g);
  EXPECT_EQ(statuses(ws->until("execution_complete")).at("mlp").back(), "completed");
  ws->send(g);  // the trained module comes back
  EXPECT_EQ(statuses(ws->until("execution_complete")).at("mlp"), (std::vector<std::string>{"cached"}));
  EXPECT_EQ(get("/api/execution/state/list?graph_id=tab-1").json,
            (nlohmann::json{{"graph_id", "tab-1"}, {"count", 1}, {"node_ids", {"mlp"}}}));
  EXPECT_EQ(get("/api/execution/state/list").json, (nlohmann::json{{"total", 1}}));

  const Reply reset = post("/api/execution/state/reset", {{"graph_id", "tab-1"}});
  EXPECT_EQ(reset.json, (nlohmann::json{{"graph_id", "tab-1"}, {"scope", "graph"}, {"evicted", 1}}));
  EXPECT_EQ(get("/api/health").json["caches"]["node_state_store"]["modules"], 0);
  ws->send(g);  // fresh weights again
  EXPECT_EQ(statuses(ws->until("execution_complete")).at("mlp").back(), "completed");

  g["weights_persistent"] = false;  // then nothing is kept or reused
  EXPECT_EQ(post("/api/execution/state/reset", {{"graph_id", "tab-1"}, {"node_ids", {"mlp", "nope"}}}).json["evicted"],
            1);
  ws->send(g);
  EXPECT_EQ(statuses(ws->until("execution_complete")).at("mlp").back(), "completed");
  EXPECT_EQ(get("/api/health").json["caches"]["node_state_store"]["modules"], 0);
  EXPECT_EQ(post("/api/execution/state/reset", nlohmann::json::object()).status, 422);
}

TEST_F(ServerFixture, UploadAnswers100ContinueBeforeTheBody) {
  // curl and Python's requests wait for "100 Continue" before sending a large body.
  net::io_context ioc;
  tcp::socket sock(ioc);
  sock.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port_));
  const std::string body = form("c.pt", "continued");
  const std::string head = "POST /api/models/upload HTTP/1.1\r\nHost: " + host() +
                           "\r\nX-CodefyUI-Token: test-token\r\nContent-Type: " + kForm.begin()->second +
                           "\r\nExpect: 100-continue\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  net::write(sock, net::buffer(head));
  std::string interim;
  net::read_until(sock, net::dynamic_buffer(interim), "\r\n\r\n");
  EXPECT_EQ(interim.rfind("HTTP/1.1 100 Continue\r\n", 0), 0u) << interim;
  net::write(sock, net::buffer(body));
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(sock, buffer, res);
  EXPECT_EQ(res.result_int(), 200) << res.body();
  EXPECT_EQ(read_file(dir_.path() / "models/c.pt"), "continued");
}

TEST_F(ServerFixture, StoresStayWithinTheirCapsUnderUse) {
  stores_.execution_cache = {64 << 10, 100};  // 64 KiB per connection
  stores_.run_output_store = {0, 2};          // byte cap off (0), two runs
  stop();
  start();
  auto ws = open_ws();
  nlohmann::json g =
      toy_graph(1, 6000);  // its dataset: 6000 x 2 floats + 6000 int64 labels = 96 KB, over the cap alone
  g["action"] = "execute";
  g["record_outputs"] = true;
  for (const char* id : {"a", "b", "c"}) {
    g["run_id"] = id;
    ws->send(g);
    const auto s = statuses(ws->until("execution_complete"));
    EXPECT_EQ(s.at("data").back(), "completed") << id;  // never stored, so never served from the cache
    EXPECT_EQ(s.at("loss").back(), std::string(id) == "a" ? "completed" : "cached") << id;
    auto caches = get("/api/health").json["caches"];
    EXPECT_LE(caches["execution_cache"]["bytes"].get<int64_t>(), 64 << 10) << id;
    EXPECT_LE(caches["run_output_store"]["runs"].get<int>(), 2) << id;
  }
  EXPECT_EQ(get("/api/execution/outputs/a").status, 404);  // the least recently used run went
  EXPECT_EQ(get("/api/execution/outputs/b").status, 200);
  EXPECT_EQ(get("/api/execution/outputs/c").status, 200);
  EXPECT_GT(get("/api/health").json["caches"]["run_output_store"]["bytes"].get<int64_t>(), 64 << 10);  // no byte cap
}

TEST_F(ServerFixture, UploadsAreReceivedAFewAtATime) {
  // One upload still arriving holds the only slot: another gets 503; once its
  // client goes away the slot and its spool file are freed.
  net::io_context ioc;
  tcp::socket slow(ioc);
  slow.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port_));
  const std::string head = "POST /api/models/upload HTTP/1.1\r\nHost: " + host() +
                           "\r\nX-CodefyUI-Token: test-token\r\nContent-Type: " + kForm.begin()->second +
                           "\r\nContent-Length: 100000\r\n\r\n--XyZ\r\n";
  net::write(slow, net::buffer(head));
  bool spooling = false;  // wait until the server has taken it in
  for (int i = 0; i < 200 && !spooling; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    spooling = fs::exists(dir_.path() / ".uploads") && !fs::is_empty(dir_.path() / ".uploads");
  }
  ASSERT_TRUE(spooling);
  const Reply busy = request(http::verb::post, "/api/models/upload", form("w.pt", "x"), kForm);
  EXPECT_EQ(busy.status, 503) << busy.body;
  EXPECT_EQ(get("/api/models").status, 200);  // everything else is served meanwhile
  slow.close();
  bool freed = false;
  for (int i = 0; i < 200 && !freed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    freed = fs::is_empty(dir_.path() / ".uploads");
  }
  EXPECT_TRUE(freed);
  EXPECT_EQ(request(http::verb::post, "/api/models/upload", form("w.pt", "x"), kForm).status, 200);
}

TEST_F(ServerFixture, GraphListSkipsUnreadableFilesAndNamesOddOnesByFile) {
  testing::write_file(dir_.path() / "graphs/broken.json", "{not json");
  testing::write_file(dir_.path() / "graphs/numbered.json", R"({"name": 5, "nodes": [], "edges": []})");
  testing::write_file(dir_.path() / "graphs/good.json", R"({"name": "Good one", "nodes": [], "edges": []})");
  const Reply list = get("/api/graph/list");
  ASSERT_EQ(list.status, 200) << list.body;
  ASSERT_EQ(list.json.size(), 2u) << list.body;  // broken.json is skipped
  EXPECT_EQ(list.json[0]["name"], "Good one");
  EXPECT_EQ(list.json[1]["file"], "numbered");
  EXPECT_EQ(list.json[1]["name"], "numbered");  // a name that is not text: the file's
}

}  // namespace
}  // namespace codefy::server
