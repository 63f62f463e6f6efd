// State dicts: PyTorch's names and order, loading that checks first, tensors as they go to files.
#include "train/state_dict.h"
#include "weights_fixtures.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using codefy::testing::read_file;
using codefy::testing::TempDir;
using codefy::testing::write_file;
using namespace codefy::train;
using namespace codefy::train::weights_test;

TEST(StateDict, PyTorchNamesAndOrder) {
  Net net;  // on the stack: must not need shared_from_this
  StateDict dict = state_dict(net);
  EXPECT_EQ(keys_of(dict),
            (std::vector<std::string>{"scale", "features.0.weight", "features.0.bias", "features.1.weight",
                                      "features.1.bias", "features.1.running_mean", "features.1.running_var",
                                      "features.1.num_batches_tracked", "head.weight"}));
  // Detached aliases: no autograd, same storage as the parameters.
  EXPECT_FALSE(dict[1].second.requires_grad());
  EXPECT_EQ(dict[1].second.data_ptr(), net.features[0]->as<torch::nn::Linear>()->weight.data_ptr());
  EXPECT_EQ(dict[7].second.scalar_type(), torch::kInt64);
}

TEST(StateDict, LoadCopiesValues) {
  torch::manual_seed(0);
  Net a;
  Net b;
  ASSERT_FALSE(torch::equal(state_dict(a)[1].second, state_dict(b)[1].second));
  load_state_dict(b, state_dict(a));
  expect_same(state_dict(b), state_dict(a));
  // The parameters are still leaves that train.
  EXPECT_TRUE(b.head->weight.requires_grad());
  EXPECT_TRUE(b.head->weight.is_leaf());
}

TEST(StateDict, LoadReportsEveryProblemAndChangesNothing) {
  Net net;
  const at::Tensor before = net.head->weight.clone();
  StateDict dict = state_dict(net);
  dict.erase(dict.begin() + 2);                               // features.0.bias missing
  dict.emplace_back("features.2.weight", torch::zeros({1}));  // unexpected
  dict.emplace_back("extra", torch::zeros({1}));              // unexpected
  dict[0].second = torch::zeros({2, 2});                      // scale: shape mismatch
  for (auto& [name, t] : dict) {
    if (name == "head.weight") t = torch::full({1, 3}, 5.0f);  // valid, must not be copied
  }
  try {
    load_state_dict(net, dict);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    for (const char* part : {"missing", "features.0.bias", "unexpected", "features.2.weight", "extra", "shape", "scale",
                             "[2, 2]", "[1]"}) {
      EXPECT_NE(msg.find(part), std::string::npos) << part << " not in: " << msg;
    }
  }
  EXPECT_TRUE(torch::equal(net.head->weight, before));
}

TEST(StateDict, TensorForFileOwnsExactlyItsBytes) {
  const auto base = torch::arange(100, torch::kFloat32);
  const auto slice = tensor_for_file("s", base.slice(0, 10, 13));
  EXPECT_EQ(slice.storage().nbytes(), 3 * sizeof(float));
  EXPECT_TRUE(torch::equal(slice, torch::tensor({10.0f, 11.0f, 12.0f})));
  const auto t = tensor_for_file("t", base.reshape({10, 10}).t());
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_FALSE(tensor_for_file("g", torch::ones({2}, torch::requires_grad())).requires_grad());
  EXPECT_THROW(tensor_for_file("u", at::Tensor()), std::invalid_argument);
  EXPECT_THROW(tensor_for_file("sp", torch::eye(2).to_sparse()), std::invalid_argument);
}
