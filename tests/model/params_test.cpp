// Layer params: errors name the layer and the parameter, with a message a
// student can act on, and say the location once.
#include "model/params.h"
#include "model/layer_spec_error.h"
#include "spec_builder.h"

#include <gtest/gtest.h>

#include <array>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace codefy::model {
namespace {

using nlohmann::json;

TEST(LayerSpecError, SaysTheLocationOnceThenTheProblem) {
  EXPECT_EQ(std::string(LayerSpecError("c1", "Conv2d", "kernel_size", "expected 3").what()),
            "layer \"c1\" (Conv2d), parameter \"kernel_size\": expected 3");
  EXPECT_EQ(std::string(LayerSpecError("c1", "Conv2d", "", "unknown layer type").what()),
            "layer \"c1\" (Conv2d): unknown layer type");
  EXPECT_EQ(std::string(LayerSpecError("", "Input", "", "two of them").what()), "Input: two of them");
  EXPECT_EQ(std::string(LayerSpecError("", "", "version", "Unsupported").what()), "parameter \"version\": Unsupported");
  // Nothing in particular to blame: the message alone, no empty "layer :" prefix.
  EXPECT_EQ(std::string(LayerSpecError("", "", "", "the layers spec is not valid JSON").what()),
            "the layers spec is not valid JSON");
}

TEST(LayerSpecError, IsACodefyError) {
  static_assert(std::is_base_of_v<Error, LayerSpecError>);
  try {
    build_sequential_model(json("not json"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
  }
}

/// Parameter definitions as the layer catalogue writes them: name and default.
std::vector<graph::ParamDef> defs(const std::vector<std::pair<std::string, json>>& named) {
  std::vector<graph::ParamDef> out;
  for (const auto& [name, value] : named) {
    graph::ParamDef d;
    d.name = name;
    d.default_value = value;
    out.push_back(d);
  }
  return out;
}

TEST(LayerParams, TypedGettersFallBackToTheDefinitionsDefaults) {
  const auto known =
      defs({{"n", 1}, {"k", 3}, {"m", 0.1}, {"p", 7}, {"q", 0.1}, {"b", true}, {"a", "relu"}, {"none", nullptr}});
  const json params = {{"n", 3}, {"k", {2, 5}}, {"m", nullptr}, {"b", false}, {"a", "gelu"}};
  const LayerParams p("c", "Conv2d", &params, known);
  EXPECT_EQ(p.integer("n", 1), 3);
  EXPECT_EQ(p.integer_or_default("p"), 7);                    // absent: the definition's default
  EXPECT_FALSE(p.optional_integer("m").has_value());          // null counts as absent
  EXPECT_FALSE(p.optional_real_or_default("m").has_value());  // ...except where null means None
  EXPECT_EQ(*p.optional_real_or_default("q"), 0.1);
  EXPECT_FALSE(p.optional_real_or_default("none").has_value());  // a default of null: None
  EXPECT_EQ((*p.ints<2>("k", 1)), (std::array<int64_t, 2>{2, 5}));
  EXPECT_EQ((*p.ints_or_default<2>("n", 1)), (std::array<int64_t, 2>{3, 3}));
  EXPECT_FALSE(p.boolean_or_default("b"));
  EXPECT_EQ(p.choice_or_default("a", {"relu", "gelu"}), "gelu");
  EXPECT_THROW(p.find("undeclared"), std::logic_error);  // a bug in the table, not the spec
  EXPECT_THROW(p.integer_or_default("undeclared"), std::logic_error);
  const LayerParams none("c", "ReLU", nullptr, known);
  EXPECT_EQ(none.real_or_default("q"), 0.1);
  EXPECT_TRUE(none.boolean_or_default("b"));
  EXPECT_EQ(none.choice_or_default("a", {"relu", "gelu"}), "relu");
  EXPECT_EQ((*none.ints_or_default<2>("k", 1)), (std::array<int64_t, 2>{3, 3}));
}

TEST(LayerParams, ErrorsNameTheParameter) {
  const auto known = defs({{"n", 1}});
  const json params = {{"n", -2}};
  const LayerParams p("c", "Linear", &params, known);
  expect_spec_error([&] { p.integer("n", 1); }, "c", "n", "must be at least 1, got -2");
  const json typo = {{"N", 1}};
  expect_spec_error([&] { LayerParams("c", "Linear", &typo, known); }, "c", "N", "did you mean \"n\"?");
}

TEST(LayerParams, ExactMessageOfABadParam) {
  try {
    build_sequential_model(single_layer("Linear", {{"in_features", 4.5}, {"out_features", 3}}));
    FAIL() << "expected a LayerSpecError";
  } catch (const LayerSpecError& e) {
    EXPECT_EQ(std::string(e.what()),
              "layer \"l\" (Linear), parameter \"in_features\": expected a whole number >= 1, got the decimal "
              "number 4.5");
  }
}

TEST(LayerParams, UnknownType) {
  expect_build_error(single_layer("Conv3d", json::object()), "l", "", "unknown layer type");
  try {
    build_sequential_model(single_layer("Conv3d", json::object()));
    FAIL() << "expected a LayerSpecError for an unknown layer type";
  } catch (const LayerSpecError& e) {
    EXPECT_EQ(e.layer_type(), "Conv3d");
    EXPECT_EQ(std::string(e.what()), "layer \"l\" (Conv3d): unknown layer type");
  }
}

TEST(LayerParams, MissingRequiredParam) {
  expect_build_error(single_layer("Linear", {{"out_features", 3}}), "l", "in_features",
                     "required parameter is missing");
  expect_build_error(single_layer("AdaptiveAvgPool2d", json::object()), "l", "output_size", "missing");
  expect_build_error(single_layer("Reshape", json::object()), "l", "shape", "missing");
  // No palette default is invented for a parameter PyTorch requires.
  expect_build_error(single_layer("Conv2d", {{"out_channels", 3}, {"kernel_size", 3}}), "l", "in_channels", "missing");
}

TEST(LayerParams, WrongParamType) {
  expect_build_error(single_layer("Conv2d", {{"in_channels", 1}, {"out_channels", 3}, {"kernel_size", "3"}}), "l",
                     "kernel_size", "got the text \"3\"");
  expect_build_error(single_layer("Linear", {{"in_features", 4.5}, {"out_features", 3}}), "l", "in_features",
                     "expected a whole number");
  expect_build_error(single_layer("Linear", {{"in_features", 4}, {"out_features", 3}, {"bias", "yes"}}), "l", "bias",
                     "expected true or false");
  expect_build_error(single_layer("Dropout", {{"p", "0.5"}}), "l", "p", "expected a number");
  expect_build_error(single_layer("Conv2d", {{"in_channels", 1}, {"out_channels", 3}, {"kernel_size", {3, 3, 3}}}), "l",
                     "kernel_size", "a list of 2");
  expect_build_error(single_layer("GELU", {{"approximate", "fast"}}), "l", "approximate", "\"none\", \"tanh\"");
  expect_build_error(single_layer("Linear", json::array({4, 3})), "l", "", "\"params\" must be an object");
}

TEST(LayerParams, ParamOutOfRange) {
  expect_build_error(single_layer("Dropout", {{"p", 1.5}}), "l", "p", "at most 1");
  expect_build_error(single_layer("Linear", {{"in_features", 0}, {"out_features", 3}}), "l", "in_features",
                     "at least 1");
  expect_build_error(
      single_layer("Conv2d", {{"in_channels", 3}, {"out_channels", 4}, {"kernel_size", 3}, {"groups", 2}}), "l",
      "groups", "divisible by groups");
  expect_build_error(single_layer("GroupNorm", {{"num_groups", 3}, {"num_channels", 4}}), "l", "num_groups",
                     "divisible");
  expect_build_error(single_layer("TransformerEncoder", {{"d_model", 10}, {"nhead", 4}}), "l", "nhead", "divisible");
  expect_build_error(single_layer("Embedding", {{"num_embeddings", 5}, {"embedding_dim", 2}, {"padding_idx", 5}}), "l",
                     "padding_idx", "within num_embeddings");
  expect_build_error(single_layer("Reshape", {{"shape", "64,x,7"}}), "l", "shape", "\"x\"");
  expect_build_error(single_layer("Permute", {{"dims", "0,2,2"}}), "l", "dims", "a permutation");
  expect_build_error(single_layer("Permute", {{"dims", "1,0,2"}}), "l", "dims", "batch dimension first");
  expect_build_error(single_layer("Permute", {{"dims", "0,x"}}), "l", "dims", "\"0,x\"");
  expect_build_error(single_layer("Chomp1d", {{"chomp_size", -1}}), "l", "chomp_size", "at least 0");
}

TEST(LayerParams, UnknownParamSuggestsTheRightOne) {
  expect_build_error(single_layer("Linear", {{"in_feature", 4}, {"out_features", 3}}), "l", "in_feature",
                     "did you mean \"in_features\"?");
  expect_build_error(single_layer("Sigmoid", {{"dim", 1}}), "l", "dim", "takes no parameters");
  expect_build_error(single_layer("Add", {{"dim", 1}}), "l", "dim", "takes no parameters");
}

}  // namespace
}  // namespace codefy::model
