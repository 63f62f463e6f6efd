// What /ws/execution really sends fits the schema `codefy protocol --json`
// prints (and the editor's types are checked against): a run that trains,
// one that fails in a node, a Stop, a cache clear and a refused action.
#include "server/protocol.h"
#include "fixture.h"

namespace codefy::server {
namespace {

using nlohmann::json;

class Protocol : public ServerFixture {};

TEST_F(Protocol, EveryMessageARunSendsFitsTheSchema) {
  const json schema = protocol_schema();
  auto ws = open_ws();
  std::vector<json> seen;
  json train = toy_graph(2, 40);
  train["action"] = "execute";
  ws->send(train);
  for (auto& m : ws->until("execution_complete")) seen.push_back(std::move(m));
  // A node that fails (a Reshape that cannot fit), with a warning-free run.
  json bad = {{"action", "execute"},
              {"name", "bad"},
              {"nodes",
               {{{"id", "start"}, {"type", "Start"}},
                {{"id", "t"}, {"type", "TensorCreate"}, {"data", {{"params", {{"shape", "2,3"}, {"fill", "ones"}}}}}},
                {{"id", "r"}, {"type", "Reshape"}, {"data", {{"params", {{"shape", "4,-1"}}}}}}}},
              {"edges",
               {{{"source", "start"}, {"target", "t"}, {"sourceHandle", "trigger"}, {"type", "trigger"}},
                {{"source", "t"}, {"target", "r"}, {"sourceHandle", "tensor"}, {"targetHandle", "tensor"}}}}};
  ws->send(bad);
  for (auto& m : ws->until("execution_error")) seen.push_back(std::move(m));
  ws->send({{"action", "stop"}});
  seen.push_back(ws->next());
  ws->send({{"action", "clear_cache"}});
  seen.push_back(ws->next());
  ws->send({{"action", 5}});
  seen.push_back(ws->next());
  std::set<std::string> types;
  for (const json& m : seen) {
    EXPECT_EQ(check_ws_message(schema, m), "") << m.dump().substr(0, 300);
    types.insert(m.value("type", ""));
  }
  for (const char* t : {"execution_start", "node_status", "node_progress", "execution_complete", "execution_error",
                        "execution_stopped", "cache_cleared", "error"})
    EXPECT_TRUE(types.count(t)) << t << " was not seen: the test shows nothing about it";
  std::set<std::string> events;
  for (const json& m : seen)
    if (m.contains("progress") && m["progress"].is_object()) events.insert(m["progress"].value("event", ""));
  for (const char* e : {"config", "batch", "epoch"})
    EXPECT_TRUE(events.count(e)) << "no " << e << " progress was seen: the test shows nothing about its schema";
}

TEST(ProtocolSchema, ACheckFindsWhatDoesNotFit) {
  const json schema = protocol_schema();
  EXPECT_EQ(check_ws_message(schema, {{"type", "execution_error"}, {"error", "x"}}), "");
  EXPECT_NE(check_ws_message(schema, {{"type", "execution_error"}}), "");
  EXPECT_NE(check_ws_message(schema, {{"type", "execution_error"}, {"error", 5}}), "");
  EXPECT_NE(check_ws_message(schema, {{"type", "node_status"}, {"node_id", "n"}, {"status", "ok"}, {"extra", 1}}), "");
  EXPECT_NE(check_ws_message(schema, {{"type", "surprise"}}), "");
  EXPECT_EQ(schema["run_error_kinds"].size(), 7u);
  // A training loop's progress inside a frame is checked against its event's schema.
  const json batch = {{"event", "batch"}, {"batch", 1}, {"total_batches", 4}, {"loss", 0.5}};
  EXPECT_EQ(check_ws_message(schema, {{"type", "node_progress"}, {"node_id", "t"}, {"progress", batch}}), "");
  json wrong = batch;
  wrong["loss"] = "0.5";
  EXPECT_NE(check_ws_message(schema, {{"type", "node_progress"}, {"node_id", "t"}, {"progress", wrong}}), "");
  json unnamed = batch;
  unnamed["surprise"] = 1;
  EXPECT_NE(check_ws_message(schema, {{"type", "node_progress"}, {"node_id", "t"}, {"progress", unnamed}}), "");
  EXPECT_NE(check_ws_message(schema, {{"type", "node_status"},
                                      {"node_id", "t"},
                                      {"status", "progress"},
                                      {"progress", {{"event", "epoch"}, {"epoch", 1}}}}),
            "");  // an epoch without its loss
}

}  // namespace
}  // namespace codefy::server
