// The layer catalogue against the layer table, and shape traces against the
// model SequentialModel builds (and against sizes worked out by hand).
#include "model/layer_shapes.h"
#include "device/memory.h"
#include "model/layer_catalog.h"
#include "model/layer_table.h"
#include "spec_builder.h"

#include <torch/torch.h>

#include <chrono>
#include <fstream>

namespace codefy::model {
namespace {

using nlohmann::json;

/// The `layers` spec of the SequentialModel in examples/<name>/graph.json.
json example_spec(const std::string& name) {
  std::ifstream in(std::string(CODEFY_SOURCE_DIR) + "/examples/" + name + "/graph.json");
  const json graph = json::parse(in);
  for (const auto& n : graph["nodes"])
    if (n["type"] == "SequentialModel") return json::parse(n["data"]["params"]["layers"].get<std::string>());
  ADD_FAILURE() << "no SequentialModel in " << name;
  return json();
}

TEST(LayerCatalog, NamesEveryTypeOfTheLayerTableInItsOrder) {
  const auto& catalog = layer_catalog();
  ASSERT_EQ(catalog.size(), layer_defs().size() + merge_defs().size());
  for (size_t i = 0; i < catalog.size(); ++i) {
    const bool merge = i >= layer_defs().size();
    const std::string type = merge ? merge_defs()[i - layer_defs().size()].type : layer_defs()[i].type;
    EXPECT_EQ(catalog[i].type, type);
    EXPECT_EQ(catalog[i].merge, merge) << type;
    EXPECT_FALSE(catalog[i].category.empty()) << type;
    EXPECT_EQ(&layer_param_defs(type), &catalog[i].params) << type;
  }
  EXPECT_THROW(layer_param_defs("NoSuchLayer"), std::logic_error);
}

TEST(LayerCatalog, Issue28_AnAbsentParamBuildsWithTheCataloguesDefaultItsOneDefinition) {
  // Every optional param left out: the built module holds the catalogue's default, read from the
  // catalogue itself (the builders carry no defaults of their own).
  const auto default_of = [](const std::string& type, const std::string& name) {
    for (const auto& p : layer_param_defs(type))
      if (p.name == name) return p.default_value;
    ADD_FAILURE() << type << " has no " << name;
    return json();
  };
  // The one module of type Impl inside a model of a single `type` layer.
  const auto built = [](const std::string& type, const json& params, auto* impl) {
    using Impl = std::remove_pointer_t<decltype(impl)>;
    std::shared_ptr<Impl> found;
    for (const auto& m : build_sequential_model(single_layer(type, params))->modules(/*include_self=*/false))
      if (auto cast = std::dynamic_pointer_cast<Impl>(m)) found = cast;
    EXPECT_TRUE(found) << type;
    return found;
  };
  const auto dropout = built("Dropout", json::object(), static_cast<torch::nn::DropoutImpl*>(nullptr));
  ASSERT_TRUE(dropout);
  EXPECT_EQ(dropout->options.p(), default_of("Dropout", "p").get<double>());

  const auto lstm = built("LSTM", {{"input_size", 4}, {"hidden_size", 3}}, static_cast<torch::nn::LSTMImpl*>(nullptr));
  ASSERT_TRUE(lstm);
  EXPECT_EQ(lstm->options.num_layers(), default_of("LSTM", "num_layers").get<int64_t>());
  EXPECT_EQ(lstm->options.batch_first(), default_of("LSTM", "batch_first").get<bool>());
  EXPECT_EQ(lstm->options.bidirectional(), default_of("LSTM", "bidirectional").get<bool>());

  const auto norm = built("LayerNorm", {{"normalized_shape", 8}}, static_cast<torch::nn::LayerNormImpl*>(nullptr));
  ASSERT_TRUE(norm);
  EXPECT_EQ(norm->options.eps(), default_of("LayerNorm", "eps").get<double>());
  EXPECT_EQ(norm->options.elementwise_affine(), default_of("LayerNorm", "elementwise_affine").get<bool>());
}

TEST(LayerCatalog, EveryLayerBuildsFromItsDefaultsAndFromItsRequiredParamsAlone) {
  for (const auto& info : layer_catalog()) {
    if (info.merge) continue;
    json all = json::object(), required = json::object();
    for (const auto& p : info.params) {
      all[p.name] = p.default_value;
      if (p.required) required[p.name] = p.default_value;
    }
    EXPECT_NO_THROW(build_sequential_model(single_layer(info.type, all))) << info.type << all.dump();
    EXPECT_NO_THROW(build_sequential_model(single_layer(info.type, required))) << info.type << required.dump();
  }
}

TEST(LayerCatalog, JsonHasCodefyUIsParamShape) {
  const json catalog = layer_catalog_json();
  const auto conv = std::find_if(catalog.begin(), catalog.end(), [](const json& e) { return e["type"] == "Conv2d"; });
  ASSERT_NE(conv, catalog.end());
  EXPECT_EQ((*conv)["category"], "Convolution");
  EXPECT_EQ((*conv)["kind"], "layer");
  const json& out = (*conv)["params"][1];
  EXPECT_EQ(out["name"], "out_channels");
  EXPECT_EQ(out["param_type"], "int");
  EXPECT_EQ(out["default"], 32);
  EXPECT_EQ(out["min_value"], 1.0);
  EXPECT_EQ(out["required"], true);
  const json& mode = (*conv)["params"].back();
  EXPECT_EQ(mode["param_type"], "select");
  EXPECT_EQ(mode["options"], json({"zeros", "reflect", "replicate", "circular"}));
  const auto add = std::find_if(catalog.begin(), catalog.end(), [](const json& e) { return e["type"] == "Add"; });
  ASSERT_NE(add, catalog.end());
  EXPECT_EQ((*add)["kind"], "merge");
  EXPECT_EQ((*add)["min_inputs"], 2);
  EXPECT_TRUE((*add)["max_inputs"].is_null());
}

TEST(LayerShapes, FashionMnistCnnMatchesSizesByHandAndTheBuiltModel) {
  const json spec = example_spec("fashion-mnist");
  const ShapeTrace trace = trace_layer_shapes(spec, {1, 28, 28});
  ASSERT_FALSE(trace.error) << trace.error->message;
  // Worked out by hand: 3x3 convolutions with padding 1 keep the size, 2x2 pools halve it.
  const std::vector<std::pair<std::string, std::vector<int64_t>>> expected = {
      {"c1", {1, 16, 28, 28}}, {"b1", {1, 16, 28, 28}}, {"r1", {1, 16, 28, 28}}, {"p1", {1, 16, 14, 14}},
      {"c2", {1, 32, 14, 14}}, {"b2", {1, 32, 14, 14}}, {"r2", {1, 32, 14, 14}}, {"p2", {1, 32, 7, 7}},
      {"f", {1, 1568}},        {"l1", {1, 128}},        {"r3", {1, 128}},        {"l2", {1, 10}}};
  ASSERT_EQ(trace.nodes.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(trace.nodes[i].id, expected[i].first);
    EXPECT_EQ(trace.nodes[i].output_shape, expected[i].second) << expected[i].first;
  }
  // Weights by hand: 16*1*9+16, 2*16, 32*16*9+32, 2*32, 1568*128+128, 128*10+10.
  EXPECT_EQ(trace.nodes[0].parameters, 160);
  EXPECT_EQ(trace.nodes[1].parameters, 32);
  EXPECT_EQ(trace.nodes[4].parameters, 4640);
  EXPECT_EQ(trace.nodes[9].parameters, 200832);
  EXPECT_EQ(trace.parameters, 160 + 32 + 4640 + 64 + 200832 + 1290);

  // The model SequentialModel builds, run forward, agrees.
  auto model = build_sequential_model(spec);
  model->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor y = model->forward(torch::zeros({1, 1, 28, 28}));
  EXPECT_EQ(trace.output_shape, y.sizes().vec());
  int64_t weights = 0;
  for (const auto& p : model->parameters()) weights += p.numel();
  EXPECT_EQ(trace.parameters, weights);
}

TEST(LayerShapes, AShapeMismatchStopsAtTheNodeAndKeepsTheNodesBefore) {
  json spec = example_spec("fashion-mnist");
  for (auto& n : spec["nodes"])
    if (n["id"] == "c2") n["params"]["out_channels"] = 64;  // b2 still expects 32 channels
  const ShapeTrace trace = trace_layer_shapes(spec, {1, 28, 28});
  ASSERT_TRUE(trace.error);
  EXPECT_EQ(trace.error->node_id, "b2");
  EXPECT_EQ(trace.error->node_type, "BatchNorm2d");
  EXPECT_NE(trace.error->message.find("layer \"b2\" (BatchNorm2d)"), std::string::npos) << trace.error->message;
  EXPECT_NE(trace.error->message.find("[1, 64, 14, 14]"), std::string::npos) << trace.error->message;
  ASSERT_EQ(trace.nodes.size(), 5u);  // c1 b1 r1 p1 c2
  EXPECT_EQ(trace.nodes.back().id, "c2");
  EXPECT_EQ(trace.nodes.back().output_shape, (std::vector<int64_t>{1, 64, 14, 14}));
  EXPECT_TRUE(to_json(trace)["output_shape"].is_null());
  EXPECT_EQ(to_json(trace)["error"]["node_id"], "b2");
}

TEST(LayerShapes, ABadParamNamesTheNodeAndTheParam) {
  const ShapeTrace trace =
      trace_layer_shapes(Spec()
                             .layer("a", "ReLU")
                             .layer("c", "Conv2d", {{"in_channels", 1}, {"out_channels", 0}, {"kernel_size", 3}})
                             .chain({"a", "c"})
                             .build(),
                         {1, 8, 8});
  ASSERT_TRUE(trace.error);
  EXPECT_EQ(trace.error->node_id, "c");
  EXPECT_EQ(trace.error->param, "out_channels");
  ASSERT_EQ(trace.nodes.size(), 1u);
  EXPECT_EQ(trace.nodes[0].id, "a");
}

TEST(LayerShapes, WiringErrorsAndBranchesAreTraced) {
  // A residual branch: in -> l -> add(l, in) -> out.
  const json branch = Spec()
                          .layer("l", "Linear", {{"in_features", 4}, {"out_features", 4}})
                          .layer("sum", "Add")
                          .edge("in", "l")
                          .edge("l", "sum")
                          .edge("in", "sum")
                          .edge("sum", "out")
                          .build();
  const ShapeTrace ok = trace_layer_shapes(branch, {4});
  ASSERT_FALSE(ok.error);
  ASSERT_EQ(ok.nodes.size(), 2u);
  EXPECT_EQ(ok.nodes[1].output_shape, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(ok.parameters, 20);

  const json unwired = Spec().layer("l", "ReLU").build();  // no edges at all
  const ShapeTrace bad = trace_layer_shapes(unwired, {4});
  ASSERT_TRUE(bad.error);
  EXPECT_TRUE(bad.nodes.empty());
  EXPECT_FALSE(bad.error->message.empty());
}

TEST(LayerShapes, AnEmbeddingFirstGetsWholeNumbers) {
  const ShapeTrace trace = trace_layer_shapes(
      Spec().layer("e", "Embedding", {{"num_embeddings", 50}, {"embedding_dim", 8}}).chain({"e"}).build(), {12});
  ASSERT_FALSE(trace.error) << trace.error->message;
  EXPECT_EQ(trace.output_shape, (std::vector<int64_t>{1, 12, 8}));
}

TEST(LayerShapes, RefusesRequestsPastTheLimitsAndStopsAtAHugeLayerBeforeBuildingIt) {
  const json relu = single_layer("ReLU", json::object());
  EXPECT_THROW(trace_layer_shapes(relu, {}), ShapeRequestError);
  EXPECT_THROW(trace_layer_shapes(relu, {0, 3}), ShapeRequestError);
  EXPECT_THROW(trace_layer_shapes(relu, {4096, 4097}), ShapeRequestError);  // past 16M elements
  ShapeLimits few;
  few.nodes_max = 2;
  EXPECT_THROW(trace_layer_shapes(relu, {3}, few), ShapeRequestError);  // Input, ReLU, Output

  // 10^12 weights would take 4 TB: refused by the estimate, never allocated.
  const ShapeTrace huge =
      trace_layer_shapes(Spec()
                             .layer("a", "ReLU")
                             .layer("l", "Linear", {{"in_features", 1000000}, {"out_features", 1000000}})
                             .chain({"a", "l"})
                             .build(),
                         {1000000});
  ASSERT_TRUE(huge.error);
  EXPECT_EQ(huge.error->node_id, "l");
  EXPECT_NE(huge.error->message.find("weights"), std::string::npos) << huge.error->message;
  ASSERT_EQ(huge.nodes.size(), 1u);

  // A 1x1 convolution to 4096 channels of a 2048x2048 image: 17 billion outputs.
  const ShapeTrace wide = trace_layer_shapes(
      single_layer("Conv2d", {{"in_channels", 1}, {"out_channels", 4096}, {"kernel_size", 1}}), {1, 2048, 2048});
  ASSERT_TRUE(wide.error);
  EXPECT_EQ(wide.error->node_id, "l");
  EXPECT_NE(wide.error->message.find("output"), std::string::npos) << wide.error->message;
}

// Issue #34 item 6: a Reshape whose sizes cannot hold the input is the
// layer's error, named, not LibTorch's raw text.
TEST(LayerShapes, AReshapeThatCannotFitNamesTheLayer) {
  const ShapeTrace trace = trace_layer_shapes(single_layer("Reshape", {{"shape", {7}}}), {1, 28, 28});
  ASSERT_TRUE(trace.error);
  EXPECT_FALSE(trace.error->over_limit);
  EXPECT_EQ(trace.error->node_id, "l");
  EXPECT_EQ(trace.error->node_type, "Reshape");
  EXPECT_NE(trace.error->message.find("failed on input of shape [1, 1, 28, 28]"), std::string::npos)
      << trace.error->message;
}

/// The largest CPU tensor memory live during `f` (the counting allocator's peak).
template <class F>
int64_t peak_bytes_during(F&& f) {
  EXPECT_TRUE(device::install_counting_allocator());
  device::reset_cpu_peak();
  const int64_t before = device::cpu_memory().live_bytes;
  f();
  return device::cpu_memory().peak_bytes - before;
}

// Issue #34 item 3: the output's size was taken from the input (1 element),
// not from output_size; the trace then allocated 1.6e9 floats (6.4 GB).
TEST(LayerShapes, AdaptivePoolingToAHugeOutputIsRefusedBeforeAnythingIsAllocated) {
  ShapeTrace trace;
  const int64_t peak = peak_bytes_during([&] {
    trace = trace_layer_shapes(single_layer("AdaptiveAvgPool2d", {{"output_size", {40000, 40000}}}), {1, 1, 1});
  });
  ASSERT_TRUE(trace.error);
  EXPECT_TRUE(trace.error->over_limit);
  EXPECT_EQ(trace.error->node_id, "l");
  EXPECT_EQ(trace.error->node_type, "AdaptiveAvgPool2d");
  EXPECT_NE(trace.error->message.find("1,600,000,000 elements"), std::string::npos) << trace.error->message;
  EXPECT_LT(peak, 1 << 20) << "the trace allocated " << peak << " bytes";
  // A whole number and a kept (null) size are read too.
  const ShapeTrace square = trace_layer_shapes(single_layer("AdaptiveAvgPool2d", {{"output_size", 30000}}), {1, 1, 1});
  ASSERT_TRUE(square.error);
  EXPECT_TRUE(square.error->over_limit);
  const ShapeTrace kept =
      trace_layer_shapes(single_layer("AdaptiveAvgPool2d", {{"output_size", {nullptr, 3}}}), {2, 5, 7});
  ASSERT_FALSE(kept.error) << kept.error->message;
  EXPECT_EQ(kept.output_shape, (std::vector<int64_t>{1, 2, 5, 3}));
}

// Item 4: pooling windows were not counted: a 500x500 window at stride 1 over
// 1000x1000 is 6.3e10 comparisons (48 s) and passed an 8e9 cap.
TEST(LayerShapes, APoolingWindowCountsEveryComparisonAgainstTheCap) {
  for (const char* type : {"MaxPool2d", "AvgPool2d"}) {
    const auto t0 = std::chrono::steady_clock::now();
    const ShapeTrace trace =
        trace_layer_shapes(single_layer(type, {{"kernel_size", 500}, {"stride", 1}}), {1, 1000, 1000});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(trace.error) << type;
    EXPECT_TRUE(trace.error->over_limit) << type;
    EXPECT_EQ(trace.error->node_type, type);
    EXPECT_NE(trace.error->message.find("62,750,250,000 multiply-adds"), std::string::npos) << trace.error->message;
    EXPECT_LT(seconds, 1.0) << type;
  }
  // The stride defaults to the kernel: the same window over the same input is
  // 4 outputs and passes.
  const ShapeTrace strided = trace_layer_shapes(single_layer("MaxPool2d", {{"kernel_size", 500}}), {1, 1000, 1000});
  ASSERT_FALSE(strided.error) << strided.error->message;
  EXPECT_EQ(strided.output_shape, (std::vector<int64_t>{1, 1, 2, 2}));
}

// Attention weights are sequence x sequence per head: 60000 tokens of width 1
// pass the multiply-add cap (7.2e9) but would allocate 7.2e9 floats on the way.
TEST(LayerShapes, AttentionsIntermediateWeightsCountAgainstTheCap) {
  ShapeTrace trace;
  const int64_t peak = peak_bytes_during([&] {
    trace = trace_layer_shapes(single_layer("MultiHeadAttention", {{"embed_dim", 1}, {"num_heads", 1}}), {60000, 1});
  });
  ASSERT_TRUE(trace.error);
  EXPECT_TRUE(trace.error->over_limit);
  EXPECT_NE(trace.error->message.find("intermediate elements"), std::string::npos) << trace.error->message;
  EXPECT_LT(peak, 16 << 20);
}

}  // namespace
}  // namespace codefy::model
