// Shared by the weight-file tests: a dict of every dtype, a small module, checks.
#pragma once

#include "../common/test_util.h"
#include "train/serialize.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace codefy::train::weights_test {

/// The file names in `dir`, sorted.
inline std::vector<std::string> names_in(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// The names of a dict, in order.
inline std::vector<std::string> keys_of(const StateDict& dict) {
  std::vector<std::string> keys;
  for (const auto& item : dict) keys.push_back(item.first);
  return keys;
}

/// Expects load_weights(path) to throw std::runtime_error naming the path.
inline void expect_load_error(const std::filesystem::path& path, const std::string& context) {
  try {
    load_weights(path);
    ADD_FAILURE() << "loaded without error: " << context;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << context << ": " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << context << ": not a runtime_error: " << e.what();
  }
}

/// Tensors of every dtype the formats must carry, some of awkward layouts.
inline StateDict mixed_dict() {
  StateDict dict;
  dict.emplace_back("f32", torch::arange(6, torch::kFloat32).reshape({2, 3}).div(7));
  dict.emplace_back("f64", torch::tensor({1.0 / 3.0, -2.5e300}, torch::kFloat64));
  dict.emplace_back("i64", torch::tensor({int64_t{1} << 40, int64_t{-3}}, torch::kInt64));
  dict.emplace_back("bf16", torch::tensor({1.5f, -0.25f, 3.0f}).to(torch::kBFloat16));
  dict.emplace_back("f16", torch::tensor({0.5f, 65504.0f}).to(torch::kFloat16));
  dict.emplace_back("i32", torch::tensor({7, -8}, torch::kInt32));
  dict.emplace_back("u8", torch::tensor({0, 255}, torch::kInt32).to(torch::kUInt8));
  dict.emplace_back("bool", torch::tensor({true, false, true}));
  dict.emplace_back("scalar", torch::tensor(4.25));
  dict.emplace_back("empty", torch::zeros({0, 4}));
  dict.emplace_back("transposed", torch::arange(12, torch::kFloat32).reshape({3, 4}).t());
  dict.emplace_back("slice", torch::arange(100, torch::kFloat32).slice(0, 10, 13));
  auto grad = torch::ones({2}, torch::requires_grad());
  dict.emplace_back("needs.grad", grad * 2);
  return dict;
}

/// `loaded` holds the same names, dtypes, shapes and values as `saved`, contiguous and detached.
inline void expect_same(const StateDict& loaded, const StateDict& saved) {
  ASSERT_EQ(keys_of(loaded), keys_of(saved));
  for (size_t i = 0; i < saved.size(); ++i) {
    const auto& [name, expected] = saved[i];
    const at::Tensor& actual = loaded[i].second;
    EXPECT_EQ(actual.scalar_type(), expected.scalar_type()) << name;
    EXPECT_EQ(actual.sizes(), expected.sizes()) << name;
    EXPECT_TRUE(actual.is_contiguous()) << name;
    EXPECT_FALSE(actual.requires_grad()) << name;
    EXPECT_TRUE(torch::equal(actual, expected.detach())) << name;
  }
}

/// Nested modules with a buffer and a bias-less layer: PyTorch's state_dict order in small.
struct Net : torch::nn::Module {
  Net() {
    features = register_module("features", torch::nn::Sequential(torch::nn::Linear(2, 3), torch::nn::BatchNorm1d(3)));
    head = register_module("head", torch::nn::Linear(torch::nn::LinearOptions(3, 1).bias(false)));
    register_buffer("scale", torch::ones({1}));
  }
  torch::nn::Sequential features{nullptr};
  torch::nn::Linear head{nullptr};
};

}  // namespace codefy::train::weights_test
