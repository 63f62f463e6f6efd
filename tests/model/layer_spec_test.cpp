// The v2 spec's steps: parse reads the JSON, connect orders and checks the
// wiring, and each says what is wrong with a spec and where.
#include "model/layer_spec.h"
#include "spec_builder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace codefy::model {
namespace {

using nlohmann::json;

/// A residual block listed out of order: in -> a -> add <- in, add -> out, with "add" listed first.
json residual_spec() {
  return Spec()
      .layer("add", "Add")
      .layer("a", "Linear", {{"in_features", 4}, {"out_features", 4}})
      .layer("cat", "Concat", {{"dim", 1}})
      .edge("in", "a")
      .edge("a", "add")
      .edge("in", "add")
      .edge("add", "cat")
      .edge("cat", "out")
      .build();
}

TEST(LayerSpec, ParseKeepsNodeAndEdgeOrderAndResolvesEnds) {
  const LayerGraph g = parse_layer_spec(residual_spec());
  ASSERT_EQ(g.nodes.size(), 5u);
  EXPECT_EQ(g.nodes[0].id, "in");
  EXPECT_EQ(g.nodes[1].id, "add");
  EXPECT_EQ(g.nodes[2].type, "Linear");
  EXPECT_EQ(g.nodes[2].params["out_features"], 4);
  EXPECT_EQ(g.input, 0u);
  EXPECT_EQ(g.output, 4u);
  ASSERT_EQ(g.nodes[0].ports.size(), 1u);
  EXPECT_EQ(g.nodes[0].ports[0].id, "p_x");
  EXPECT_EQ(g.nodes[4].ports[0].name, "y");
  ASSERT_EQ(g.edges.size(), 5u);
  EXPECT_EQ(g.edges[0].label, "edge \"e1\" (in -> a)");
  EXPECT_EQ(g.edges[0].source, 0u);
  EXPECT_EQ(g.edges[0].target, 2u);
  EXPECT_EQ(g.edges[0].source_handle, "p_x");
  EXPECT_FALSE(g.edges[1].source_handle.has_value());
  EXPECT_EQ(g.edges[4].target_handle, "p_y");
  // The JSON string CodefyUI stores reads the same.
  EXPECT_EQ(parse_layer_spec(json(residual_spec().dump())).edges[2].label, g.edges[2].label);
}

TEST(LayerSpec, ParseSaysNothingAboutTypesOrWiring) {
  // An unknown type and a layer with no input are for the later steps.
  const json spec = Spec().layer("x", "Conv9d").layer("a", "ReLU").edge("in", "a").edge("a", "out").build();
  const LayerGraph g = parse_layer_spec(spec);
  EXPECT_EQ(g.nodes[1].type, "Conv9d");
  EXPECT_TRUE(g.nodes[3].params.is_null());  // the Output has no params
  expect_spec_error([&] { build_layers(g); }, "x", "", "unknown layer type");
}

TEST(LayerSpec, ConnectOrdersTopologicallyWithInputsInEdgeOrder) {
  const LayerGraph g = parse_layer_spec(residual_spec());
  const Wiring w = connect_layers(g);
  EXPECT_EQ(w.order, (std::vector<size_t>{2, 1, 3}));   // a, add, cat
  EXPECT_EQ(w.inputs[1], (std::vector<size_t>{2, 0}));  // add reads a, then in (edge-list order)
  EXPECT_EQ(w.inputs[2], (std::vector<size_t>{0}));
  EXPECT_EQ(w.inputs[3], (std::vector<size_t>{1}));
  EXPECT_TRUE(w.inputs[4].empty());  // the Output's source is output_source, not an input
  EXPECT_EQ(w.output_source, 3u);
}

TEST(LayerSpec, BuildMakesModulesForLayersOnly) {
  const LayerGraph g = parse_layer_spec(residual_spec());
  const std::vector<BuiltNode> built = build_layers(g);
  ASSERT_EQ(built.size(), g.nodes.size());
  EXPECT_FALSE(built[0].module || built[0].layer || built[0].merge);  // Input
  EXPECT_FALSE(built[4].module || built[4].layer || built[4].merge);  // Output
  EXPECT_TRUE(built[1].merge);
  EXPECT_FALSE(built[1].module);
  EXPECT_EQ(built[1].description, "");
  EXPECT_TRUE(built[2].module && built[2].layer);
  EXPECT_EQ(built[2].description, "Linear(in_features=4, out_features=4, bias=true)");
  EXPECT_EQ(built[3].description, ", dim=1");
}

TEST(LayerSpec, StepsTogetherMakeTheModel) {
  auto model = build_sequential_model(residual_spec());
  EXPECT_EQ(model->describe(),
            "a: Linear(in_features=4, out_features=4, bias=true)\nadd: Add(a, in)\ncat: Concat(add, dim=1)");
}

TEST(LayerSpec, Cycle) {
  const json spec = Spec()
                        .layer("a", "ReLU")
                        .layer("b", "Tanh")
                        .layer("m", "Add")
                        .edge("in", "m")
                        .edge("b", "m")
                        .edge("m", "a")
                        .edge("a", "b")
                        .edge("b", "out")
                        .build();
  expect_build_error(spec, "a", "", "Graph contains a cycle (a -> b -> m -> a)");
}

TEST(LayerSpec, MissingOutput) {
  const json spec = Spec().layer("l", "ReLU").edge("in", "l").build(/*with_output=*/false);
  expect_build_error(spec, "", "", "no Output node");
}

TEST(LayerSpec, PlainLayerWithTwoInputs) {
  const json spec = Spec()
                        .layer("a", "ReLU")
                        .layer("b", "Tanh")
                        .layer("c", "Linear", {{"in_features", 4}, {"out_features", 2}})
                        .edge("in", "a")
                        .edge("in", "b")
                        .edge("a", "c")
                        .edge("b", "c")
                        .edge("c", "out")
                        .build();
  expect_build_error(spec, "c", "", "has 2 inputs (from \"a\", \"b\") but takes exactly one");
}

TEST(LayerSpec, LayerWithoutInput) {
  const json spec = Spec().layer("a", "ReLU").layer("b", "ReLU").chain({"a"}).edge("b", "a").build();
  expect_build_error(spec, "a", "", "has 2 inputs");
  const json lonely = Spec().layer("a", "ReLU").layer("b", "ReLU").chain({"a"}).build();
  expect_build_error(lonely, "b", "", "has no input");
}

TEST(LayerSpec, MergeInputCounts) {
  const json one = Spec().layer("m", "Add").chain({"m"}).build();
  expect_build_error(one, "m", "", "needs at least 2");
  const json three =
      Spec().layer("m", "Subtract").edge("in", "m").edge("in", "m").edge("in", "m").edge("m", "out").build();
  expect_build_error(three, "m", "", "needs exactly 2");
}

TEST(LayerSpec, UnsupportedVersion) {
  json spec = single_layer("ReLU", json::object());
  spec["version"] = 1;
  expect_build_error(spec, "", "version", "Unsupported graph spec version: 1");
  spec.erase("version");
  expect_build_error(spec, "", "version", "Unsupported graph spec version");
  expect_build_error(json("{}"), "", "version", "Unsupported graph spec version");
}

TEST(LayerSpec, MalformedJsonString) {
  expect_build_error(json(R"({"version": 2, "nodes": [)"), "", "", "not valid JSON");
  expect_build_error(json(R"([1, 2])"), "", "", "must be a JSON object");
}

TEST(LayerSpec, DotInNodeId) {
  const json spec = Spec().layer("conv.1", "ReLU").chain({"conv.1"}).build();
  expect_build_error(spec, "conv.1", "", "rename it, e.g. to \"conv_1\"");
}

TEST(LayerSpec, DuplicateNodeId) {
  const json spec = Spec().layer("a", "ReLU").layer("a", "Tanh").chain({"a"}).build();
  expect_build_error(spec, "a", "", "ids must be unique");
}

TEST(LayerSpec, PortsAndHandles) {
  json two_ports = single_layer("ReLU", json::object());
  two_ports["nodes"][0]["ports"].push_back({{"id", "p_z"}, {"name", "z"}});
  expect_build_error(two_ports, "in", "ports", "exactly one port");

  json no_handle = single_layer("ReLU", json::object());
  no_handle["edges"][0]["sourceHandle"] = nullptr;
  expect_build_error(no_handle, "in", "sourceHandle", "the Input port id \"p_x\"");

  json wrong_target = single_layer("ReLU", json::object());
  wrong_target["edges"][1]["targetHandle"] = "p_q";
  expect_build_error(wrong_target, "out", "targetHandle", "got \"p_q\"");

  const json unused = Spec().layer("a", "ReLU").edge("a", "out").build();
  expect_build_error(unused, "in", "", "Input port 'x' is unused");

  const json dangling = Spec().layer("a", "ReLU").chain({"a"}).edge("a", "ghost").build();
  expect_build_error(dangling, "", "", "goes to \"ghost\", which is not a node");

  const json no_output_edge = Spec().layer("a", "ReLU").edge("in", "a").build();
  expect_build_error(no_output_edge, "out", "", "has no incoming edge");

  const json two_output_edges = Spec().layer("a", "ReLU").chain({"a"}).edge("in", "out").build();
  expect_build_error(two_output_edges, "out", "", "more than one incoming edge");
}

}  // namespace
}  // namespace codefy::model
