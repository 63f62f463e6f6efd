// Issue #34, the second attack run, each attack made through the real server:
// wrong-typed WebSocket fields (one message ended the process), shape bombs in
// the layer preview and validation, a PNG decompression bomb, HEAD, overlong
// names, out-of-range integers and a non-list node_ids.
#include "fixture.h"
#include "raw_client.h"
#include "util/image_size.h"

#include <png.h>
#include <zlib.h>

#include <chrono>
#include <cstdlib>
#include <future>

namespace codefy::server::hardening2 {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string contains_text(const json& j, const std::string& key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

// ---- 1. WebSocket messages ------------------------------------------------

class WsFields : public ServerFixture {};

TEST_F(WsFields, AWrongTypedActionIsAnsweredWithAnErrorAndTheServerServesOn) {
  auto ws = open_ws();
  const std::vector<std::pair<std::string, std::string>> attacks = {
      {R"({"action":5})", "\"action\" must be text, got 5"},
      {R"({"action":{}})", "\"action\" must be text, got the object {}"},
      {R"({"action":["execute"]})", "\"action\" must be text, got the list [\"execute\"]"},
      {R"([1,2])", "a message must be a JSON object"},
      {R"("execute")", "a message must be a JSON object"},
      {R"({"action":"explode"})", "Unknown action: explode"},
  };
  for (const auto& [text, said] : attacks) {
    ws->ws.write(net::buffer(text));
    const json answer = ws->next();
    EXPECT_EQ(answer["type"], "error") << text;
    EXPECT_NE(contains_text(answer, "error").find(said), std::string::npos) << text << " -> " << answer;
  }
  expect_alive();
  ws->send({{"action", "clear_cache"}});  // the same connection still takes actions
  EXPECT_EQ(ws->next()["type"], "cache_cleared");
}

TEST_F(WsFields, AnExecuteWithAWrongTypedFieldIsRefusedNamingItAndTheNextOneRuns) {
  auto ws = open_ws();
  const std::vector<std::pair<json, std::string>> attacks = {
      {{{"device", 5}}, "\"device\" must be text, got 5"},
      {{{"graph_id", 7}}, "\"graph_id\" must be text, got 7"},
      {{{"run_id", 7}}, "\"run_id\" must be text, got 7"},
      {{{"record_outputs", "yes"}}, "\"record_outputs\" must be true or false, got the text \"yes\""},
      {{{"verbose", 1}}, "\"verbose\" must be true or false, got 1"},
      {{{"weights_persistent", json::object()}}, "\"weights_persistent\" must be true or false"},
      {{{"example", false}}, "\"example\" must be text, got false"},
      {{{"changed_nodes", "train"}}, "\"changed_nodes\" must be a list of node ids, got the text \"train\""},
      {{{"changed_nodes", {1}}}, "\"changed_nodes\" must list node ids as text, got 1"},
  };
  for (const auto& [fields, said] : attacks) {
    json execute = toy_graph(1, 20);
    execute["action"] = "execute";
    execute.update(fields);
    ws->send(execute);
    const auto messages = ws->until("execution_error");
    EXPECT_EQ(messages.size(), 1u) << "refused before it was queued: " << fields;
    EXPECT_NE(contains_text(messages.back(), "error").find(said), std::string::npos)
        << fields << " -> " << messages.back();
  }
  expect_alive();
  // null stands for "not given": device null runs on the default device.
  json execute = toy_graph(1, 20);
  execute["action"] = "execute";
  execute["device"] = nullptr;
  execute["run_id"] = nullptr;
  ws->send(execute);
  const auto messages = ws->until("execution_complete");
  EXPECT_EQ(statuses(messages)["train"].back(), "completed");
}

/// An Api whose message handler throws what a bug anywhere below it would.
class ThrowingApi : public Api {
 public:
  using Api::Api;
  void connection_message(const std::shared_ptr<Connection>& c, const std::string& text) override {
    if (text == "throw std") throw std::logic_error("a bug below the handler");
    if (text == "throw int") throw 42;
    Api::connection_message(c, text);
  }
};

TEST_F(WsFields, TheLastResortCatchAnswersAnErrorAndKeepsTheConnectionAndTheServer) {
  stop();
  ApiOptions o;
  o.data_dir = dir_.path();
  o.token = "test-token";
  api_ = std::make_unique<ThrowingApi>(o, nodes::builtin());
  ServerOptions so;
  so.port = 0;
  server_ = std::make_unique<HttpServer>(so, *api_);
  port_ = server_->start();
  auto ws = open_ws();
  for (const char* text : {"throw std", "throw int"}) {
    ws->ws.write(net::buffer(std::string(text)));
    const json answer = ws->next();
    EXPECT_EQ(answer["type"], "error") << text;
    EXPECT_NE(contains_text(answer, "error").find("internal error"), std::string::npos) << answer;
  }
  ws->send({{"action", "clear_cache"}});  // the connection reads on
  EXPECT_EQ(ws->next()["type"], "cache_cleared");
  expect_alive();
}

// ---- 3 and 4. Shape bombs -------------------------------------------------

json one_layer_spec(const std::string& type, const json& params) {
  return {
      {"version", 2},
      {"nodes",
       {{{"id", "in"}, {"type", "Input"}, {"ports", {{{"id", "p_x"}, {"name", "x"}}}}},
        {{"id", "pool"}, {"type", type}, {"params", params}},
        {{"id", "out"}, {"type", "Output"}, {"ports", {{{"id", "p_y"}, {"name", "y"}}}}}}},
      {"edges",
       {{{"id", "e1"}, {"source", "in"}, {"target", "pool"}, {"sourceHandle", "p_x"}, {"targetHandle", nullptr}},
        {{"id", "e2"}, {"source", "pool"}, {"target", "out"}, {"sourceHandle", nullptr}, {"targetHandle", "p_y"}}}}};
}

class ShapeBombs : public ServerFixture {};

TEST_F(ShapeBombs, ThePreviewRefusesAHugePoolingOutputOrWorkQuicklyNamingTheLayer) {
  const std::vector<std::pair<json, std::vector<int64_t>>> bombs = {
      {one_layer_spec("AdaptiveAvgPool2d", {{"output_size", {40000, 40000}}}), {1, 1, 1}},
      {one_layer_spec("MaxPool2d", {{"kernel_size", 500}, {"stride", 1}}), {1, 1000, 1000}},
  };
  for (const auto& [spec, shape] : bombs) {
    const auto t0 = Clock::now();
    const Reply r = post("/api/layers/shapes", {{"layers", spec}, {"input_shape", shape}});
    const double took = seconds_since(t0);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json["error"]["node_id"], "pool") << r.body;
    EXPECT_EQ(r.json["error"]["node_type"], spec["nodes"][1]["type"]) << r.body;
    EXPECT_NE(r.json["error"]["message"].get<std::string>().find("the shape preview stops at"), std::string::npos);
    EXPECT_LT(took, 2.0) << r.body;
  }
}

TEST_F(ShapeBombs, AReshapeThatCannotFitIsTheLayersNamedErrorNotA500) {
  const Reply r = post("/api/layers/shapes",
                       {{"layers", one_layer_spec("Reshape", {{"shape", {7}}})}, {"input_shape", {1, 28, 28}}});
  ASSERT_EQ(r.status, 200) << r.body;  // the route's answer for a layer that rejects its input
  EXPECT_EQ(r.json["error"]["node_id"], "pool") << r.body;
  EXPECT_EQ(r.json["error"]["node_type"], "Reshape") << r.body;
  EXPECT_NE(r.json["error"]["message"].get<std::string>().find("failed on input of shape [1, 1, 28, 28]"),
            std::string::npos)
      << r.body;
}

/// A graph that trains a SequentialModel of `spec` on FashionMNIST-shaped samples.
json graph_with_layers(const json& spec) {
  json g = toy_graph(1);
  for (auto& n : g["nodes"])
    if (n["type"] == "SequentialModel") n["data"]["params"]["layers"] = spec.dump();
  return g;
}

TEST_F(ShapeBombs, ValidationOfAGraphHoldingTheBombAnswersQuicklyAndASaveNeverWaitsForIt) {
  json g = graph_with_layers(one_layer_spec("AdaptiveAvgPool2d", {{"output_size", {40000, 40000}}}));
  const auto t0 = Clock::now();
  const Reply v = post("/api/graph/validate", g);
  EXPECT_EQ(v.status, 200) << v.body;
  EXPECT_LT(seconds_since(t0), 2.0);
  // A save is answered while a slow validation (a 10k-node graph) runs: they
  // have a worker each.
  stop();
  configure_ = [](ApiOptions&, ServerOptions& so) { so.body_limit = 32u << 20; };
  start();
  json big = {{"name", "big"}, {"nodes", json::array()}, {"edges", json::array()}};
  const json base = toy_graph(1);
  for (int c = 0; c < 1400; ++c)
    for (json n : base["nodes"]) {
      n["id"] = "c" + std::to_string(c) + "_" + n["id"].get<std::string>();
      n["data"]["note"] = std::string(1500, 'n');
      big["nodes"].push_back(std::move(n));
    }
  const std::string body = big.dump();
  std::atomic<bool> validating{false};
  auto validation = std::async(std::launch::async, [&] {
    validating = true;
    const Reply r = request(http::verb::post, "/api/graph/validate", body);
    validating = false;
    return r;
  });
  while (!validating) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(100ms);  // the big body is being parsed and validated
  const auto t1 = Clock::now();
  const Reply saved = post("/api/graph/save", toy_graph(1));
  const double save_took = seconds_since(t1);
  const bool still_validating = validation.wait_for(0s) != std::future_status::ready;
  EXPECT_EQ(saved.status, 200) << saved.body;
  EXPECT_EQ(validation.get().status, 200);
  std::printf("save took %.3f s while a validation ran (%s when it was answered)\n", save_took,
              still_validating ? "still running" : "already done");
  EXPECT_TRUE(still_validating) << "the save was answered only after the validation: it waited behind it";
}

// ---- 5. PNG decompression bomb --------------------------------------------

/// A PNG chunk: length, type, data, CRC over type and data.
std::string png_chunk(const std::string& type, const std::string& data) {
  std::string out;
  const auto be32 = [&out](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out += static_cast<char>((v >> s) & 0xff);
  };
  be32(static_cast<uint32_t>(data.size()));
  out += type + data;
  const std::string covered = type + data;
  be32(static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(covered.data()), static_cast<uInt>(covered.size()))));
  return out;
}

/// A PNG whose header says width x height RGBA; its pixels are never sent
/// (a check of the header must refuse it before any decoding).
std::string png_header_only(uint32_t width, uint32_t height) {
  std::string ihdr;
  for (uint32_t v : {width, height})
    for (int s = 24; s >= 0; s -= 8) ihdr += static_cast<char>((v >> s) & 0xff);
  ihdr += std::string("\x08\x06\x00\x00\x00", 5);  // 8 bits, RGBA, deflate, no filter, no interlace
  return std::string("\x89PNG\r\n\x1a\n", 8) + png_chunk("IHDR", ihdr) + png_chunk("IEND", "");
}

/// A real PNG of width x height RGB pixels (all grey).
std::string real_png(uint32_t width, uint32_t height) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = width;
  image.height = height;
  image.format = PNG_FORMAT_RGB;
  std::vector<uint8_t> pixels(static_cast<size_t>(width) * height * 3, 128);
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_to_memory(&image, nullptr, &size, 0, pixels.data(), 0, nullptr));
  std::string out(size, '\0');
  EXPECT_TRUE(png_image_write_to_memory(&image, out.data(), &size, 0, pixels.data(), 0, nullptr));
  out.resize(size);
  return out;
}

json node(const std::string& id, const std::string& type, json params = json::object()) {
  return {{"id", id}, {"type", type}, {"position", {{"x", 0}, {"y", 0}}}, {"data", {{"params", std::move(params)}}}};
}

json image_function() {
  return {
      {"name", "img"},
      {"nodes",
       {node("start", "Start"), node("img", "GraphInput", {{"name", "img"}, {"type", "image"}}),
        node("n", "GraphInput", {{"name", "n"}, {"type", "integer"}, {"required", false}, {"default", "1"}}),
        node("out", "GraphOutput", {{"name", "image"}}), node("out_n", "GraphOutput", {{"name", "n"}})}},
      {"edges",
       {{{"id", "t1"}, {"source", "start"}, {"target", "img"}, {"sourceHandle", "trigger"}, {"type", "trigger"}},
        {{"id", "t2"}, {"source", "start"}, {"target", "n"}, {"sourceHandle", "trigger"}, {"type", "trigger"}},
        {{"id", "e1"}, {"source", "img"}, {"target", "out"}, {"sourceHandle", "value"}, {"targetHandle", "value"}},
        {{"id", "e2"}, {"source", "n"}, {"target", "out_n"}, {"sourceHandle", "value"}, {"targetHandle", "value"}}}}};
}

class ImageBombs : public ServerFixture {};

TEST_F(ImageBombs, AnImageInputPastThePixelCapIs422BeforeItIsDecoded) {
  ASSERT_EQ(post("/api/graph/save", image_function()).status, 200);
  const auto t0 = Clock::now();
  const Reply bomb =
      post("/api/graph/run/img", {{"inputs", {{"img", util::base64_encode(png_header_only(20000, 20000))}}}});
  EXPECT_LT(seconds_since(t0), 2.0);
  EXPECT_EQ(bomb.status, 422) << bomb.body;
  EXPECT_EQ(bomb.json["error"]["code"], "invalid_input") << bomb.body;
  EXPECT_EQ(bomb.json["error"]["details"][0]["field"], "inputs.img") << bomb.body;
  const std::string reason = bomb.json["error"]["details"][0].value("reason", "");
  EXPECT_NE(reason.find("20000 x 20000 = 400,000,000 pixels; at most 25,000,000"), std::string::npos) << reason;
  // A data: URL is read the same way; text that is no PNG is refused too.
  const Reply url =
      post("/api/graph/run/img",
           {{"inputs", {{"img", "data:image/png;base64," + util::base64_encode(png_header_only(6000, 6000))}}}});
  EXPECT_EQ(url.status, 422) << url.body;
  const Reply not_png = post("/api/graph/run/img", {{"inputs", {{"img", util::base64_encode("GIF89a.....")}}}});
  EXPECT_EQ(not_png.status, 422) << not_png.body;
  // Under the cap, a real image runs.
  const Reply small = post("/api/graph/run/img", {{"inputs", {{"img", util::base64_encode(real_png(3, 2))}}}});
  ASSERT_EQ(small.status, 200) << small.body;
  EXPECT_EQ(small.json["outputs"]["image"].size(), 3u) << "3 channels";
  expect_alive();
}

TEST_F(ImageBombs, ThePixelCapFollowsCodefyuiMaxImagePixels) {
  ASSERT_EQ(post("/api/graph/save", image_function()).status, 200);
  setenv("CODEFYUI_MAX_IMAGE_PIXELS", "100", 1);
  const Reply over = post("/api/graph/run/img", {{"inputs", {{"img", util::base64_encode(real_png(11, 10))}}}});
  const Reply under = post("/api/graph/run/img", {{"inputs", {{"img", util::base64_encode(real_png(10, 10))}}}});
  unsetenv("CODEFYUI_MAX_IMAGE_PIXELS");
  EXPECT_EQ(over.status, 422) << over.body;
  EXPECT_NE(over.body.find("at most 100 are decoded"), std::string::npos) << over.body;
  EXPECT_EQ(under.status, 200) << under.body;
}

// ---- 6. The smaller ones ---------------------------------------------------

class SmallAttacks : public ServerFixture {};

TEST_F(SmallAttacks, IntegerInputsBeyondTwoToThe53AreRefused) {
  ASSERT_EQ(post("/api/graph/save", image_function()).status, 200);
  const std::string img = util::base64_encode(real_png(1, 1));
  for (const std::string& n : {std::string("1e20"), std::string("9223372036854775808"),
                               std::string("-9007199254740993"), std::string("9007199254740993")}) {
    const Reply r =
        request(http::verb::post, "/api/graph/run/img", "{\"inputs\": {\"img\": \"" + img + "\", \"n\": " + n + "}}");
    EXPECT_EQ(r.status, 422) << n << ": " << r.body;
    EXPECT_NE(r.body.find("2^53"), std::string::npos) << r.body;
  }
  const Reply fine = request(http::verb::post, "/api/graph/run/img",
                             "{\"inputs\": {\"img\": \"" + img + "\", \"n\": 9007199254740992}}");
  ASSERT_EQ(fine.status, 200) << fine.body;
  EXPECT_EQ(fine.json["outputs"]["n"], 9007199254740992.0);
}

TEST_F(SmallAttacks, HeadIsAnsweredAsGetWithoutABody) {
  for (const std::string target : {"/api/health", "/api/nodes"}) {
    RawClient c(port_);
    c.send("HEAD " + target + " HTTP/1.1\r\nHost: " + host() + "\r\nConnection: close\r\n\r\n");
    beast::error_code ec;
    const std::string text = c.read_to_end(ec);
    const RawReply r = parse_reply(text);
    EXPECT_EQ(r.status, 200) << target << ": " << text.substr(0, 200);
    EXPECT_TRUE(r.body.empty()) << target << " sent a body with its HEAD answer";
    const Reply get_reply = get(target);
    ASSERT_TRUE(r.headers.count("content-length")) << target;
    EXPECT_GT(std::stoul(r.headers.at("content-length")), 0u) << target << ": GET's length, not 0";
    EXPECT_EQ(r.headers.at("content-type"), get_reply.headers.at("content-type")) << target;
  }
  // A route that takes no GET still answers 405, and says HEAD where GET is allowed.
  RawClient c(port_);
  c.send("HEAD /api/graph/save HTTP/1.1\r\nHost: " + host() + "\r\nConnection: close\r\n\r\n");
  beast::error_code ec;
  const RawReply r = parse_reply(c.read_to_end(ec));
  EXPECT_EQ(r.status, 405);
  const Reply not_allowed = request(http::verb::delete_, "/api/health");
  EXPECT_EQ(not_allowed.status, 405);
  ASSERT_TRUE(not_allowed.headers.count("allow"));
  EXPECT_EQ(not_allowed.headers.at("allow"), "GET, HEAD");
}

class NameAttacks : public ServerFixture {
 protected:
  Reply upload(const std::string& filename, const std::string& bytes) {
    const std::string boundary = "codefyboundary";
    const std::string body = "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" +
                             filename + "\"\r\nContent-Type: application/octet-stream\r\n\r\n" + bytes + "\r\n--" +
                             boundary + "--\r\n";
    return request(http::verb::post, "/api/models/upload", body,
                   {{"Content-Type", "multipart/form-data; boundary=" + boundary}});
  }
};

TEST_F(NameAttacks, ANameOf253BytesUploadsAndAnOverlongOneIs400WithoutAPath) {
  const std::string longest = std::string(252, 'w') + ".pt";  // 255 bytes: the most a file name may have
  const std::string near = std::string(250, 'w') + ".pt";     // 253 bytes: its temporary's suffix passed 255
  for (const std::string& name : {near, longest}) {
    const Reply r = upload(name, "weights");
    EXPECT_EQ(r.status, 200) << name.size() << " bytes: " << r.body;
    EXPECT_TRUE(fs::exists(dir_.path() / "models" / name)) << name.size();
  }
  const Reply too_long = upload(std::string(254, 'w') + ".pt", "weights");
  EXPECT_EQ(too_long.status, 400) << too_long.body;
  const std::string data_path = dir_.path().string();
  for (const std::string& name : {std::string(300, 'x') + ".pt", std::string(300, 'x')}) {
    const Reply del = request(http::verb::delete_, "/api/models/" + name);
    EXPECT_EQ(del.status, 400) << name.size() << ": " << del.body;
    EXPECT_EQ(del.body.find(data_path), std::string::npos) << "the answer shows the data path: " << del.body;
  }
  for (const std::string& path : {std::string(300, 'x') + ".pt", "a/" + std::string(300, 'x') + ".pt"}) {
    const Reply down = get("/api/models/download/" + path);
    EXPECT_EQ(down.status, 400) << down.body;
    EXPECT_EQ(down.body.find(data_path), std::string::npos) << down.body;
  }
  const Reply gone = request(http::verb::delete_, "/api/models/" + near);
  EXPECT_EQ(gone.status, 200) << gone.body;
  expect_alive();
}

TEST_F(SmallAttacks, ANonListNodeIdsIsRefusedAndResetsNothing) {
  // Two kept modules of graph "g" (a run that keeps its state).
  auto ws = open_ws();
  json execute = toy_graph(1, 20);
  execute["action"] = "execute";
  execute["graph_id"] = "g";
  ws->send(execute);
  ws->until("execution_complete");
  const Reply before = get("/api/execution/state/list?graph_id=g");
  ASSERT_EQ(before.status, 200) << before.body;
  const auto kept = before.json["count"].get<int>();
  ASSERT_GT(kept, 0) << before.body;
  for (const json& ids : {json("train"), json(5), json::object(), json({"train", 5})}) {
    const Reply r = post("/api/execution/state/reset", {{"graph_id", "g"}, {"node_ids", ids}});
    EXPECT_EQ(r.status, 422) << ids << ": " << r.body;
    EXPECT_NE(r.body.find("node_ids"), std::string::npos) << r.body;
  }
  EXPECT_EQ(get("/api/execution/state/list?graph_id=g").json["count"], kept) << "a refused reset evicted state";
  const Reply none = post("/api/execution/state/reset", {{"graph_id", "g"}, {"node_ids", json::array()}});
  EXPECT_EQ(none.json["scope"], "nodes");
  EXPECT_EQ(none.json["evicted"], 0);
}

TEST_F(SmallAttacks, HttpBodiesWithWrongTypedFieldsAre4xxNot500) {
  ASSERT_EQ(post("/api/graph/save", image_function()).status, 200);
  const std::string img = util::base64_encode(real_png(1, 1));
  for (const json& extra : {json{{"device", 5}}, json{{"seed", -1}}, json{{"seed", "7"}},
                            json{{"record_outputs", "yes"}}, json{{"verbose", 3}}}) {
    json body = {{"inputs", {{"img", img}}}};
    body.update(extra);
    const Reply r = post("/api/graph/run/img", body);
    EXPECT_EQ(r.status, 422) << extra << ": " << r.body;
    EXPECT_EQ(r.json["error"]["details"][0]["field"], extra.begin().key()) << r.body;
  }
  json save = toy_graph(1);
  save["file"] = 5;
  EXPECT_EQ(post("/api/graph/save", save).status, 400);
  save = toy_graph(1);
  save["overwrite"] = "no";
  const Reply bad_overwrite = post("/api/graph/save", save);
  EXPECT_EQ(bad_overwrite.status, 400) << bad_overwrite.body;
  EXPECT_NE(bad_overwrite.body.find("\\\"overwrite\\\" must be true or false"), std::string::npos)
      << bad_overwrite.body;
}

}  // namespace
}  // namespace codefy::server::hardening2
