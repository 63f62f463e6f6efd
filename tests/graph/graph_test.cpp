// Graph files, presets, plan and validation (R-COMPAT: CodefyUI graph files load).
#include "graph/graph.h"
#include "graph/plan.h"
#include "graph/presets.h"
#include "graph/validate.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>

namespace codefy::graph {
namespace {

/// A tiny catalog for graph-level tests, independent of the real node library.
class FakeCatalog : public NodeCatalog {
 public:
  FakeCatalog() {
    add({"Start", "Control", "", {}, {{"trigger", DataType::kTrigger, "", false}}, {}});
    NodeDef src{"Source", "T", "", {}, {{"out", DataType::kTensor, "", false}}, {}};
    ParamDef n;
    n.name = "n";
    n.type = ParamType::kInt;
    n.default_value = 1;
    n.min_value = 1;
    n.max_value = 10;
    ParamDef mode;
    mode.name = "mode";
    mode.type = ParamType::kSelect;
    mode.default_value = "a";
    mode.options = {"a", "b"};
    ParamDef flag;
    flag.name = "flag";
    flag.type = ParamType::kBool;
    flag.default_value = false;
    src.params = {n, mode, flag};
    add(src);
    add({"Sink", "T", "", {{"in", DataType::kTensor, "", false}, {"opt", DataType::kAny, "", true}}, {}, {}});
    add({"ModelSink", "T", "", {{"model", DataType::kModel, "", false}}, {}, {}});
  }
  const NodeDef* find(const std::string& type) const override {
    auto it = defs_.find(type);
    return it == defs_.end() ? nullptr : &it->second;
  }

 private:
  void add(NodeDef d) { defs_[d.name] = std::move(d); }
  std::map<std::string, NodeDef> defs_;
};

Graph make(const std::string& text) { return parse_graph(text, "test.json"); }

const char* kChain = R"({"name":"chain","nodes":[
  {"id":"s","type":"Start"},
  {"id":"a","type":"Source","data":{"params":{"n":3}}},
  {"id":"b","type":"Sink"},
  {"id":"lonely","type":"Sink"}],
 "edges":[{"id":"t","source":"s","target":"a","sourceHandle":"trigger","type":"trigger"},
          {"id":"e1","source":"a","target":"b","sourceHandle":"out","targetHandle":"in"}]})";

TEST(GraphFile, ParsesNodesEdgesAndTriggers) {
  Graph g = make(kChain);
  EXPECT_EQ(g.name, "chain");
  ASSERT_EQ(g.nodes.size(), 4u);
  EXPECT_EQ(g.node("a")->params.at("n"), 3);
  ASSERT_EQ(g.edges.size(), 2u);
  EXPECT_EQ(g.edges[0].kind, EdgeKind::kTrigger);
  EXPECT_EQ(g.edges[1].kind, EdgeKind::kData);
  EXPECT_EQ(g.edges[1].target_handle, "in");
}

TEST(GraphFile, RoundTripKeepsUnknownKeys) {
  Graph g = make(R"({"name":"x","futureKey":{"a":1},"nodes":[{"id":"s","type":"Start","position":{"x":5,"y":6},
    "data":{"params":{},"label":"hello"},"extra":true}],"edges":[],"segmentGroups":[1,2]})");
  json j = to_json(g);
  EXPECT_EQ(j["futureKey"]["a"], 1);
  EXPECT_EQ(j["segmentGroups"].size(), 2u);
  EXPECT_EQ(j["nodes"][0]["position"]["x"], 5);
  EXPECT_EQ(j["nodes"][0]["data"]["label"], "hello");
  EXPECT_EQ(j["nodes"][0]["extra"], true);
  // Twice through gives the same JSON.
  EXPECT_EQ(to_json(graph_from_json(j, "again")), j);
}

TEST(GraphFile, SaveIsAtomicAndReloads) {
  auto dir = std::filesystem::temp_directory_path() / "codefy_graph_test";
  std::filesystem::create_directories(dir);
  auto path = dir / "g.json";
  Graph g = make(kChain);
  save_graph_file(g, path);
  Graph back = load_graph_file(path);
  EXPECT_EQ(to_json(back), to_json(g));
  EXPECT_EQ(back.base_dir, std::filesystem::absolute(dir));
  for (const auto& e : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

TEST(GraphFile, FormatErrorsNameTheProblem) {
  EXPECT_THROW(make("{not json"), GraphFormatError);
  EXPECT_THROW(make("[1,2]"), GraphFormatError);
  EXPECT_THROW(make(R"({"nodes":{}})"), GraphFormatError);
  try {
    make(R"({"nodes":[{"id":"a","type":"Start"},{"id":"a","type":"Start"}]})");
    FAIL();
  } catch (const GraphFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("\"a\""), std::string::npos);
  }
  EXPECT_THROW(make(R"({"nodes":[{"type":"Start"}]})"), GraphFormatError);
  EXPECT_THROW(load_graph_file("/nonexistent/graph.json"), GraphFormatError);
}

TEST(GraphFile, EveryErrorOfThisLayerIsACodefyError) {
  // One hierarchy: a caller (the server, the CLI) catches codefy::Error for all of them.
  EXPECT_THROW(make("{not json"), codefy::Error);
  EXPECT_THROW(save_graph_file(make(R"({"nodes":[]})"), "/proc/no/such/dir/graph.json"), codefy::Error);
  EXPECT_THROW(throw ValidationError({}), codefy::Error);
}

TEST(Plan, OnlyReachableNodesRunInTopologicalOrder) {
  Plan p = make_plan(make(kChain));
  EXPECT_EQ(p.order, (std::vector<std::string>{"s", "a", "b"}));
  EXPECT_FALSE(p.contains("lonely"));
  EXPECT_TRUE(p.cyclic.empty());
}

TEST(Plan, UpstreamProducersOfReachableNodesRun) {
  // Start triggers the sink; its producer has no trigger but feeds it.
  Plan p = make_plan(make(R"({"nodes":[{"id":"s","type":"Start"},{"id":"b","type":"Sink"},{"id":"a","type":"Source"}],
    "edges":[{"source":"s","target":"b","type":"trigger"},{"source":"a","target":"b","sourceHandle":"out","targetHandle":"in"}]})"));
  EXPECT_EQ(p.order, (std::vector<std::string>{"s", "a", "b"}));
}

TEST(Plan, StableOrderByFilePosition) {
  Plan p = make_plan(make(R"({"nodes":[{"id":"s","type":"Start"},{"id":"z","type":"Source"},{"id":"y","type":"Source"},
    {"id":"x","type":"Sink"}],"edges":[{"source":"s","target":"z","type":"trigger"},{"source":"s","target":"y","type":"trigger"},
    {"source":"z","target":"x","sourceHandle":"out","targetHandle":"in"},{"source":"y","target":"x","sourceHandle":"out","targetHandle":"opt"}]})"));
  EXPECT_EQ(p.order, (std::vector<std::string>{"s", "z", "y", "x"}));
}

TEST(Plan, CyclesAreReported) {
  Plan p = make_plan(make(R"({"nodes":[{"id":"s","type":"Start"},{"id":"a","type":"Sink"},{"id":"b","type":"Sink"}],
    "edges":[{"source":"s","target":"a","type":"trigger"},{"source":"a","target":"b","sourceHandle":"x","targetHandle":"in"},
    {"source":"b","target":"a","sourceHandle":"x","targetHandle":"in"}]})"));
  EXPECT_EQ(p.cyclic, (std::vector<std::string>{"a", "b"}));
}

TEST(Types, CodefyUICompatibilityRules) {
  EXPECT_TRUE(is_compatible(DataType::kTensor, DataType::kTensor));
  EXPECT_TRUE(is_compatible(DataType::kTensor, DataType::kAny));
  EXPECT_TRUE(is_compatible(DataType::kAny, DataType::kModel));
  EXPECT_TRUE(is_compatible(DataType::kImage, DataType::kTensor));
  EXPECT_FALSE(is_compatible(DataType::kTensor, DataType::kImage));
  EXPECT_FALSE(is_compatible(DataType::kScalar, DataType::kTensor));
  EXPECT_FALSE(is_compatible(DataType::kModel, DataType::kOptimizer));
  EXPECT_FALSE(is_compatible(DataType::kTrigger, DataType::kAny));
  EXPECT_FALSE(is_compatible(DataType::kAny, DataType::kTrigger));
  EXPECT_TRUE(is_compatible(DataType::kTrigger, DataType::kTrigger));
  for (auto t : {DataType::kTensor, DataType::kModel, DataType::kLossFn, DataType::kTransform})
    EXPECT_EQ(data_type_from_string(to_string(t)), t);
}

struct BadCase {
  const char* name;
  const char* graph;
  const char* node_id;
  const char* field;
  const char* message;
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class Validation : public ::testing::TestWithParam<BadCase> {};

TEST_P(Validation, ReportsTheSpecificProblem) {
  const BadCase& c = GetParam();
  FakeCatalog catalog;
  auto issues = validate(make(c.graph), catalog);
  ASSERT_FALSE(issues.empty()) << c.name;
  bool found = false;
  for (const auto& i : issues) {
    if (i.node_id == c.node_id && i.field.find(c.field) != std::string::npos &&
        i.message.find(c.message) != std::string::npos) {
      found = true;
      EXPECT_EQ(i.graph, "bad");
      EXPECT_NE(i.to_string().find("graph \"bad\""), std::string::npos);
    }
  }
  std::string all;
  for (const auto& i : issues) all += i.to_string() + "\n";
  EXPECT_TRUE(found) << c.name << ": got\n" << all;
}

#define START R"({"id":"s","type":"Start"})"
#define TRIG(t) R"({"source":"s","target":")" t R"(","type":"trigger"})"

INSTANTIATE_TEST_SUITE_P(
    BadGraphs, Validation,
    ::testing::Values(
        BadCase{"no_start", R"({"name":"bad","nodes":[{"id":"a","type":"Source"}],"edges":[]})", "", "",
                "no Start node"},
        BadCase{"unknown_type",
                R"({"name":"bad","nodes":[)" START R"(,{"id":"a","type":"Bogus"}],"edges":[)" TRIG("a") "]}", "a", "",
                "unknown node type \"Bogus\""},
        BadCase{"edge_missing_source",
                R"({"name":"bad","nodes":[)" START R"(,{"id":"b","type":"Sink"}],"edges":[)" TRIG(
                    "b") R"(,{"id":"e9","source":"ghost","target":"b","sourceHandle":"out","targetHandle":"in"}]})",
                "b", "edge e9", "source node \"ghost\" does not exist"},
        BadCase{"bad_output_port",
                R"({"name":"bad","nodes":[)" START
                R"(,{"id":"a","type":"Source"},{"id":"b","type":"Sink"}],"edges":[)" TRIG(
                    "a") R"(,{"id":"e1","source":"a","target":"b","sourceHandle":"nope","targetHandle":"in"}]})",
                "a", "output \"nope\"", "does not have"},
        BadCase{"bad_input_port",
                R"({"name":"bad","nodes":[)" START
                R"(,{"id":"a","type":"Source"},{"id":"b","type":"Sink"}],"edges":[)" TRIG(
                    "a") R"(,{"id":"e1","source":"a","target":"b","sourceHandle":"out","targetHandle":"nope"}]})",
                "b", "input \"nope\"", "does not have"},
        BadCase{"type_mismatch",
                R"({"name":"bad","nodes":[)" START
                R"(,{"id":"a","type":"Source"},{"id":"m","type":"ModelSink"}],"edges":[)" TRIG(
                    "a") R"(,{"id":"e1","source":"a","target":"m","sourceHandle":"out","targetHandle":"model"}]})",
                "m", "input \"model\"", "type mismatch: MODEL expected"},
        BadCase{"missing_required_input",
                R"({"name":"bad","nodes":[)" START R"(,{"id":"b","type":"Sink"}],"edges":[)" TRIG("b") "]}", "b",
                "input \"in\"", "required input is not connected"},
        BadCase{
            "two_edges_one_input",
            R"({"name":"bad","nodes":[)" START
            R"(,{"id":"a","type":"Source"},{"id":"a2","type":"Source"},{"id":"b","type":"Sink"}],"edges":[)" TRIG("a") "," TRIG(
                "a2") R"(,{"source":"a","target":"b","sourceHandle":"out","targetHandle":"in"},{"source":"a2","target":"b","sourceHandle":"out","targetHandle":"in"}]})",
            "b", "input \"in\"", "2 edges arrive"},
        BadCase{"int_param_wrong_type",
                R"({"name":"bad","nodes":[)" START
                R"(,{"id":"a","type":"Source","data":{"params":{"n":"three"}}}],"edges":[)" TRIG("a") "]}",
                "a", "param \"n\"", "expected an integer"},
        BadCase{"int_param_fraction",
                R"({"name":"bad","nodes":[)" START
                R"(,{"id":"a","type":"Source","data":{"params":{"n":2.5}}}],"edges":[)" TRIG("a") "]}",
                "a", "param \"n\"", "expected an integer"},
        BadCase{"below_min",
                R"({"name":"bad","nodes":[)" START
                R"(,{"id":"a","type":"Source","data":{"params":{"n":0}}}],"edges":[)" TRIG("a") "]}",
                "a", "param \"n\"", "below the minimum 1"},
        BadCase{"above_max",
                R"({"name":"bad","nodes":[)" START
                R"(,{"id":"a","type":"Source","data":{"params":{"n":11}}}],"edges":[)" TRIG("a") "]}",
                "a", "param \"n\"", "above the maximum 10"},
        BadCase{"not_an_option",
                R"({"name":"bad","nodes":[)" START
                R"(,{"id":"a","type":"Source","data":{"params":{"mode":"c"}}}],"edges":[)" TRIG("a") "]}",
                "a", "param \"mode\"", "\"c\" is not one of the options (a, b)"},
        BadCase{"bool_wrong_type",
                R"({"name":"bad","nodes":[)" START
                R"(,{"id":"a","type":"Source","data":{"params":{"flag":"yes"}}}],"edges":[)" TRIG("a") "]}",
                "a", "param \"flag\"", "expected true or false"},
        BadCase{
            "cycle",
            R"({"name":"bad","nodes":[)" START R"(,{"id":"a","type":"Sink"},{"id":"b","type":"Sink"}],"edges":[)" TRIG(
                "a") R"(,{"source":"a","target":"b","sourceHandle":"x","targetHandle":"in"},{"source":"b","target":"a","sourceHandle":"x","targetHandle":"in"}]})",
            "a", "", "part of a cycle"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

TEST(Validation, NodesThatDoNotRunAreNotValidated) {
  FakeCatalog catalog;
  // "lonely" misses its required input and has an unknown sibling, but neither runs.
  auto issues = validate(make(R"({"name":"ok","nodes":[{"id":"s","type":"Start"},{"id":"a","type":"Source"},
    {"id":"lonely","type":"Sink"},{"id":"odd","type":"Bogus"}],"edges":[{"source":"s","target":"a","type":"trigger"}]})"),
                         catalog);
  EXPECT_TRUE(issues.empty()) << issues.front().to_string();
}

TEST(Validation, CollectsEveryProblemAtOnce) {
  FakeCatalog catalog;
  auto issues = validate(
      make(
          R"({"name":"bad","nodes":[{"id":"s","type":"Start"},{"id":"a","type":"Source","data":{"params":{"n":0,"mode":"z"}}},
    {"id":"b","type":"Sink"}],"edges":[{"source":"s","target":"a","type":"trigger"},{"source":"s","target":"b","type":"trigger"}]})"),
      catalog);
  EXPECT_EQ(issues.size(), 3u);  // n below min, mode not an option, b's input missing
  ValidationError err(issues);
  EXPECT_NE(std::string(err.what()).find("3 problems"), std::string::npos);
}

TEST(Presets, TrainingPipelineExpandsLikeCodefyUI) {
  ASSERT_TRUE(builtin_presets().count("Training Pipeline"));
  std::ifstream in(std::string(CODEFY_SOURCE_DIR) + "/tests/fixtures/codefyui/lenet-mnist-training.json");
  ASSERT_TRUE(in) << "tests/fixtures/codefyui/lenet-mnist-training.json is missing";
  std::stringstream ss;
  ss << in.rdbuf();
  Graph g = expand_presets(parse_graph(ss.str(), "lenet"));
  EXPECT_EQ(g.node("pipeline"), nullptr);
  const NodeSpec* loader = g.node("pipeline__dataloader");
  ASSERT_NE(loader, nullptr);
  EXPECT_EQ(loader->params.at("batch_size"), 64);  // internalParams override the preset's 32
  EXPECT_EQ(loader->preset_id, "pipeline");
  EXPECT_EQ(g.node("pipeline__train_loop")->params.at("device"), "cpu");
  bool model_edge = false, opt_edge = false, losses_edge = false;
  for (const auto& e : g.edges) {
    model_edge |= e.source == "cnn" && e.target == "pipeline__train_loop" && e.target_handle == "model";
    opt_edge |= e.source == "cnn" && e.target == "pipeline__optimizer" && e.target_handle == "model";
    losses_edge |= e.source == "pipeline__train_loop" && e.source_handle == "losses" && e.target == "viz";
  }
  EXPECT_TRUE(model_edge);
  EXPECT_TRUE(opt_edge);
  EXPECT_TRUE(losses_edge);
  Plan p = make_plan(g);
  for (const char* id : {"pipeline__dataset", "pipeline__loss", "pipeline__train_loop", "viz", "p_model"})
    EXPECT_TRUE(p.contains(id)) << id;
  auto pos = [&](const std::string& id) { return std::find(p.order.begin(), p.order.end(), id) - p.order.begin(); };
  EXPECT_LT(pos("pipeline__dataset"), pos("pipeline__dataloader"));
  EXPECT_LT(pos("pipeline__optimizer"), pos("pipeline__train_loop"));
}

}  // namespace
}  // namespace codefy::graph
