// Hostile weight files read by ModelLoader in a graph run through the real
// server (issue #13 items 2 and 4): the run fails naming the file, and the
// server goes on answering.
#include "fixture.h"

#include <caffe2/serialize/inline_container.h>

#include <string>

namespace codefy::server {
namespace {

/// torch.save's zip (PyTorchStreamWriter) with `pkl` as data.pkl.
std::string weights_zip_with_pickle(const std::string& pkl) {
  std::string zip;
  caffe2::serialize::PyTorchStreamWriter writer([&zip](const void* buf, size_t size) {
    zip.append(static_cast<const char*>(buf), size);
    return size;
  });
  writer.writeRecord("data.pkl", pkl.data(), pkl.size());
  writer.writeEndOfFile();
  return zip;
}

/// The toy MLP, then ModelLoader reading `path` into it.
nlohmann::json load_graph(const std::string& path) {
  nlohmann::json g = toy_graph(1);
  nlohmann::json out = {{"name", "load"}, {"nodes", nlohmann::json::array()}, {"edges", nlohmann::json::array()}};
  for (const auto& n : g["nodes"])
    if (n["id"] == "start" || n["id"] == "mlp") out["nodes"].push_back(n);
  out["nodes"].push_back({{"id", "ld"}, {"type", "ModelLoader"}, {"data", {{"params", {{"path", path}}}}}});
  out["edges"].push_back({{"source", "start"}, {"sourceHandle", "trigger"}, {"target", "mlp"}, {"type", "trigger"}});
  out["edges"].push_back(
      {{"source", "mlp"}, {"sourceHandle", "model"}, {"target", "ld"}, {"targetHandle", "model"}, {"type", "data"}});
  return out;
}

}  // namespace

// A 2 MB .pt of a million nested lists (it killed the server) fails the run
// with the reader's depth message naming the file; the next run, of a
// million nested tuples, fails the same way on the same connection.
TEST_F(ServerFixture, HardeningNestedPickleInModelLoaderFailsTheRunNotTheServer) {
  const int levels = 1000000;
  const fs::path lists = dir_.path() / "nested_lists.pt";
  testing::write_file(
      lists, weights_zip_with_pickle("\x80\x02" + std::string(levels, ']') + std::string(levels - 1, 'a') + "."));
  const fs::path tuples = dir_.path() / "nested_tuples.pt";
  testing::write_file(tuples, weights_zip_with_pickle("\x80\x02N" + std::string(levels, '\x85') + "."));

  auto ws = open_ws();
  for (const fs::path& path : {lists, tuples}) {
    nlohmann::json msg = load_graph(path.string());
    msg["action"] = "execute";
    ws->send(msg);
    const auto messages = ws->until("execution_error");
    const std::string error = messages.back()["error"].get<std::string>();
    EXPECT_NE(error.find(path.string()), std::string::npos) << error;
    EXPECT_NE(error.find("pickle nests containers more than 1000 levels deep"), std::string::npos) << error;
    EXPECT_EQ(statuses(messages).at("ld").back(), "error");
    expect_alive();
  }
}

}  // namespace codefy::server
