// safetensors: the reference layout, foreign files, and corrupt headers that fail cleanly.
#include "train/safetensors.h"
#include "weights_fixtures.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using codefy::testing::read_file;
using codefy::testing::TempDir;
using codefy::testing::write_file;
using namespace codefy::train;
using namespace codefy::train::weights_test;

TEST(Safetensors, Layout) {
  StateDict dict = {{"b", torch::tensor({1.0f, 2.0f})}, {"a", torch::tensor({int64_t{3}})}};
  const std::string bytes = encode_safetensors(dict);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  EXPECT_EQ(n % 8, 0u);
  ASSERT_EQ(bytes.size(), 8 + n + 8 + 8);
  auto header = nlohmann::json::parse(bytes.substr(8, n));
  EXPECT_EQ(header["b"]["dtype"], "F32");
  EXPECT_EQ(header["b"]["shape"], nlohmann::json::array({2}));
  EXPECT_EQ(header["b"]["data_offsets"], nlohmann::json::array({0, 8}));
  EXPECT_EQ(header["a"]["dtype"], "I64");
  EXPECT_EQ(header["a"]["data_offsets"], nlohmann::json::array({8, 16}));
  EXPECT_EQ(header["__metadata__"]["format"], "pt");
  float first;
  std::memcpy(&first, bytes.data() + 8 + n, 4);
  EXPECT_EQ(first, 1.0f);
  // The file order is kept on reading.
  EXPECT_EQ(keys_of(decode_safetensors(bytes, "mem")), (std::vector<std::string>{"b", "a"}));

  // A file written elsewhere: keys out of data order, no metadata, no padding.
  std::string json =
      R"({"z":{"dtype":"BF16","shape":[1],"data_offsets":[2,4]},"y":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})";
  std::string foreign;
  for (int i = 0; i < 8; ++i) foreign.push_back(static_cast<char>((json.size() >> (8 * i)) & 0xff));
  foreign += json;
  foreign += std::string("\x01\x02\x80\x3f", 4);  // u8 {1, 2}, bf16 1.0
  StateDict decoded = decode_safetensors(foreign, "foreign");
  ASSERT_EQ(keys_of(decoded), (std::vector<std::string>{"y", "z"}));
  EXPECT_EQ(decoded[1].second.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(decoded[1].second.to(torch::kFloat32).item<float>(), 1.0f);
  EXPECT_EQ(decoded[0].second[1].item<int64_t>(), 2);

  // Encoding refuses what it cannot store.
  EXPECT_ANY_THROW(encode_safetensors({{"c", torch::zeros({2}, torch::kComplexFloat)}}));
  EXPECT_ANY_THROW(encode_safetensors({{"u", at::Tensor()}}));
  EXPECT_ANY_THROW(encode_safetensors({{"d", torch::zeros({1})}, {"d", torch::zeros({1})}}));
}

TEST(Safetensors, CorruptFilesNeverCrash) {
  TempDir tmp;
  const std::string original = encode_safetensors(mixed_dict());
  const fs::path path = tmp.path() / "fuzz.safetensors";
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t{static_cast<unsigned char>(original[i])} << (8 * i);
  for (size_t pos = 0; pos < 8 + n; ++pos) {
    std::string mutated = original;
    mutated[pos] = static_cast<char>(mutated[pos] ^ 0x11);
    write_file(path, mutated);
    try {
      load_weights(path);
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    } catch (...) {
      ADD_FAILURE() << "not a runtime_error at byte " << pos;
    }
  }
  // A bool that is neither 0 nor 1 is refused (reading it would be undefined).
  std::string bad_bool = encode_safetensors({{"b", torch::tensor({true, false})}});
  bad_bool[bad_bool.size() - 1] = 7;
  write_file(path, bad_bool);
  expect_load_error(path, "bool byte 7");
}
