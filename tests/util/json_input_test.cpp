// JSON from outside: depth and number limits refuse hostile input before a
// document is built.
#include "util/json_input.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace codefy::util {
namespace {

std::string nested(int levels, const std::string& inner = "1") {
  return std::string(static_cast<size_t>(levels), '[') + inner + std::string(static_cast<size_t>(levels), ']');
}

TEST(JsonInput, DepthCountsArraysAndObjectsButNotBracketsInStrings) {
  EXPECT_EQ(json_depth("1"), 0);
  EXPECT_EQ(json_depth("{\"a\": [1, {\"b\": []}]}"), 4);
  EXPECT_EQ(json_depth("{\"a\": \"[[[[{{{{\"}"), 1);
  EXPECT_EQ(json_depth(R"({"a": "quote \" then [[[ inside"})"), 1);
  EXPECT_EQ(json_depth(R"(["\\", [[]]])"), 3);   // an escaped backslash ends before the quote
  EXPECT_EQ(json_depth(nested(500), 100), 101);  // stops counting past the limit
}

TEST(JsonInput, DeepNestingIsRefusedBeforeParsingAndQuickly) {
  EXPECT_NO_THROW(parse_json(nested(kMaxJsonDepth)));
  EXPECT_THROW(parse_json(nested(kMaxJsonDepth + 1)), JsonInputError);
  // The body that crashed the server: 100k levels inside a graph-shaped object.
  const std::string body = "{\"name\":\"d\",\"nodes\":[],\"edges\":[],\"x\":" + nested(100000) + "}";
  const auto t0 = std::chrono::steady_clock::now();
  try {
    parse_json(body);
    FAIL() << "100k levels were accepted";
  } catch (const JsonInputError& e) {
    EXPECT_NE(std::string(e.what()).find("nested too deeply"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
}

TEST(JsonInput, MalformedTextAndOverflowingNumbersAreBadInputWithoutNlohmannsPrefix) {
  for (const std::string text : {"{\"nodes\": [", "1e400", "{\"a\": -1e999}", ""}) {
    try {
      parse_json(text);
      FAIL() << text << " was accepted";
    } catch (const JsonInputError& e) {
      EXPECT_EQ(std::string(e.what()).find("[json.exception"), std::string::npos) << e.what();
    }
  }
  // An invalid_argument, so callers that answer bad input 400 answer this too.
  EXPECT_THROW(parse_json("1e400"), InputError);  // bad input, under codefy::Error
  EXPECT_EQ(parse_json("{\"a\": [1, 2.5, \"x\"]}")["a"][1].get<double>(), 2.5);
}

TEST(JsonInput, TypedFieldReadersNameTheFieldAndWhatCame) {
  const auto body = nlohmann::json::parse(R"({"lr": 0.5, "epochs": 3, "name": "x", "deep": true, "bad": "3",
                                              "none": null, "neg": -1})");
  EXPECT_EQ(number_field(body, "lr"), 0.5);
  EXPECT_EQ(number_field(body, "epochs"), 3.0);
  EXPECT_EQ(number_field(body, "none"), std::nullopt);
  EXPECT_EQ(number_field(body, "absent"), std::nullopt);
  EXPECT_EQ(string_field(body, "name"), "x");
  EXPECT_EQ(bool_field(body, "deep"), true);
  EXPECT_EQ(uint_field(body, "epochs"), 3u);
  try {
    number_field(body, "bad");
    FAIL() << "a number given as text was taken";
  } catch (const JsonFieldError& e) {
    EXPECT_EQ(e.field(), "bad");
    EXPECT_NE(std::string(e.what()).find("\"bad\" must be a number, got"), std::string::npos) << e.what();
  }
  EXPECT_THROW(uint_field(body, "neg"), JsonFieldError);
  EXPECT_THROW(string_field(body, "lr"), JsonFieldError);
}

}  // namespace
}  // namespace codefy::util
