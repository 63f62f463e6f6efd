// forward_multiply_adds counts a model's matrix products and convolutions
// from LibTorch's own calls: checked against the sizes worked out by hand.
#include "train/model.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace codefy::train {
namespace {

/// conv (1 -> 8 channels, 3x3, padding 1) -> flatten -> linear (8*28*28 -> 10),
/// and a transposed convolution (8 -> 4, 2x2, stride 2) beside them.
class ConvNet : public Model {
 public:
  ConvNet() {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 8, 3).padding(1)));
    up = register_module("up", torch::nn::ConvTranspose2d(torch::nn::ConvTranspose2dOptions(8, 4, 2).stride(2)));
    fc = register_module("fc", torch::nn::Linear(8 * 28 * 28, 10));
    drop = register_module("drop", torch::nn::Dropout(0.5));
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    const torch::Tensor h = conv->forward(x);
    up_out = up->forward(h);  // [B, 4, 56, 56]
    return fc->forward(drop->forward(h.flatten(1)));
  }
  torch::nn::Conv2d conv{nullptr};
  torch::nn::ConvTranspose2d up{nullptr};
  torch::nn::Linear fc{nullptr};
  torch::nn::Dropout drop{nullptr};
  torch::Tensor up_out;
};

TEST(MultiplyAdds, CountsConvolutionsTransposedConvolutionsAndMatrixProducts) {
  ConvNet net;
  net.train();
  const int64_t b = 3;
  const double conv = b * 8.0 * 28 * 28 * (1 * 3 * 3);  // each output element: in_channels x kernel
  const double up = b * 8.0 * 28 * 28 * (4 * 2 * 2);    // each input element: out_channels x kernel
  const double fc = b * (8.0 * 28 * 28) * 10;
  EXPECT_DOUBLE_EQ(forward_multiply_adds(net, torch::zeros({b, 1, 28, 28})), conv + up + fc);
  EXPECT_TRUE(net.is_training()) << "the model's mode was not restored";
  // Nothing is counted outside the call.
  net.forward(torch::zeros({b, 1, 28, 28}));
  EXPECT_DOUBLE_EQ(forward_multiply_adds(net, torch::zeros({1, 1, 28, 28})), (conv + up + fc) / b);
}

/// A batched product through matmul of 3-D tensors (attention's shape).
class Batched : public Model {
 public:
  torch::Tensor forward(const torch::Tensor& x) override { return torch::matmul(x, x.transpose(1, 2)); }
};

TEST(MultiplyAdds, CountsBatchedProducts) {
  Batched m;
  EXPECT_DOUBLE_EQ(forward_multiply_adds(m, torch::zeros({2, 5, 7})), 2.0 * 5 * 7 * 5);
}

}  // namespace
}  // namespace codefy::train
