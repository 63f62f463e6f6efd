#include "util/text.h"
#include "util/random.h"

#include <gtest/gtest.h>

#include <set>

namespace codefy::util {
namespace {

TEST(Text, FirstLineLowerJoin) {
  EXPECT_EQ(first_line("one\ntwo"), "one");
  EXPECT_EQ(first_line("only"), "only");
  EXPECT_EQ(first_line(""), "");
  EXPECT_EQ(lower("MiXeD.PT"), "mixed.pt");
  EXPECT_EQ(join({"a", "b", "c"}, ", "), "a, b, c");
  EXPECT_EQ(join({"a"}, ", "), "a");
  EXPECT_EQ(join({}, ", "), "");
}

TEST(Base64, MatchesRfc4648TestVectors) {
  // RFC 4648 section 10.
  const std::pair<const char*, const char*> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(base64_encode(plain), encoded);
    EXPECT_EQ(base64_decode(encoded), plain);
  }
}

TEST(Base64, RoundTripsEveryByteAndSkipsLineBreaks) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  const std::string encoded = base64_encode(bytes);
  EXPECT_EQ(base64_decode(encoded), bytes);
  std::string wrapped;
  for (size_t i = 0; i < encoded.size(); i += 76) wrapped += encoded.substr(i, 76) + "\r\n";
  EXPECT_EQ(base64_decode(wrapped), bytes);
}

TEST(Random, Splitmix64SpreadsNeighbours) {
  // Reference values of splitmix64's output for state 0 and 1 (Vigna's splitmix64.c).
  EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafULL);
  std::set<uint64_t> seen;
  for (uint64_t i = 0; i < 1000; ++i) seen.insert(splitmix64(i));
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_NE(fnv1a("a"), fnv1a("b"));
  EXPECT_EQ(fnv1a(""), 1469598103934665603ULL);
}

}  // namespace
}  // namespace codefy::util
