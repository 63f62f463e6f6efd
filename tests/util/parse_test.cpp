#include "util/parse.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

namespace codefy::util {
namespace {

TEST(ParseInt, AcceptsWholeNumbersWithOneOptionalSign) {
  EXPECT_EQ(parse_int("12"), 12);
  EXPECT_EQ(parse_int("-3"), -3);
  EXPECT_EQ(parse_int("+7"), 7);
  EXPECT_EQ(parse_int("0"), 0);
  EXPECT_EQ(parse_int("9223372036854775807"), INT64_MAX);
}

TEST(ParseInt, RefusesTwoSignsPartsAndOverflow) {
  EXPECT_EQ(parse_int("+-3"), std::nullopt);
  EXPECT_EQ(parse_int("-+3"), std::nullopt);
  EXPECT_EQ(parse_int("++3"), std::nullopt);
  EXPECT_EQ(parse_int("+"), std::nullopt);
  EXPECT_EQ(parse_int(""), std::nullopt);
  EXPECT_EQ(parse_int("3x"), std::nullopt);
  EXPECT_EQ(parse_int(" 3"), std::nullopt);
  EXPECT_EQ(parse_int("1.5"), std::nullopt);
  EXPECT_EQ(parse_int("9223372036854775808"), std::nullopt);
}

TEST(ParseDouble, AcceptsWhatAUserTypesAsANumber) {
  EXPECT_EQ(parse_double("0.9"), 0.9);
  EXPECT_EQ(parse_double("-1e-3"), -1e-3);
  EXPECT_EQ(parse_double("+2"), 2.0);
  EXPECT_EQ(parse_double("3"), 3.0);
  EXPECT_EQ(parse_double(".5"), 0.5);
  EXPECT_TRUE(std::isinf(*parse_double("inf")));
}

TEST(ParseDouble, RefusesPartsSpacesTwoSignsAndOutOfRange) {
  for (const char* bad : {"", "+", "1.5x", " 1", "1 ", "+-1", "1,5", "1e400", "0x"})
    EXPECT_EQ(parse_double(bad), std::nullopt) << bad;
}

TEST(EnvCount, UnsetIsNoneAndBadValuesNameTheVariable) {
  ::unsetenv("CODEFY_TEST_COUNT");
  EXPECT_EQ(env_count("CODEFY_TEST_COUNT", "a size"), std::nullopt);
  ::setenv("CODEFY_TEST_COUNT", "42", 1);
  EXPECT_EQ(env_count("CODEFY_TEST_COUNT", "a size"), 42);
  ::setenv("CODEFY_TEST_COUNT", "-1", 1);
  try {
    env_count("CODEFY_TEST_COUNT", "a size");
    FAIL() << "a negative count was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "CODEFY_TEST_COUNT must be a size, got \"-1\"");
  }
  ::unsetenv("CODEFY_TEST_COUNT");
}

}  // namespace
}  // namespace codefy::util
