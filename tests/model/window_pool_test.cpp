// MaxPool2d's single-pass window loops: the same values and gradients as
// LibTorch's max pooling (first maximum wins, a NaN wins), in float and
// bfloat16, on one and two threads, with rows and columns past the last
// window; and the layer takes them only where they apply.
#include "model/window_pool.h"

#include "model/layer_catalog.h"
#include "model/layer_table.h"
#include "model/params.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <tuple>
#include <vector>

namespace codefy::model {
namespace {

using torch::Tensor;

// Values with many ties (small whole numbers), as after a ReLU and in bf16.
Tensor tied_values(std::vector<int64_t> sizes, torch::ScalarType dtype) {
  return torch::randint(-2, 3, sizes).to(dtype).contiguous(c10::MemoryFormat::ChannelsLast);
}

// Equal, element by element, NaN equal to NaN.
bool same(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  const Tensor fa = a.to(torch::kFloat), fb = b.to(torch::kFloat);
  return torch::equal(fa.isnan(), fb.isnan()) && torch::equal(torch::nan_to_num(fa), torch::nan_to_num(fb));
}

// Output and input gradient of LibTorch's max_pool2d (stride k) and of window_max_pool2d.
std::tuple<Tensor, Tensor, Tensor, Tensor> both(const Tensor& x, int64_t k, const Tensor& grad_seed) {
  const Tensor a = x.detach().contiguous().requires_grad_(true);  // NCHW: LibTorch's own kernel
  const Tensor b = x.detach().clone(c10::MemoryFormat::ChannelsLast).requires_grad_(true);
  const Tensor ya = torch::max_pool2d(a, {k, k}, {k, k});
  const Tensor yb = window_max_pool2d(b, k);
  const Tensor g = grad_seed.to(x.scalar_type());
  ya.backward(g.contiguous());
  yb.backward(g.contiguous(c10::MemoryFormat::ChannelsLast));
  return {ya, yb, a.grad(), b.grad()};
}

struct PoolCase {
  std::vector<int64_t> sizes;
  int64_t k;
};

const std::vector<PoolCase> kCases = {
    {{4, 16, 28, 28}, 2},  // the example CNN's first pooling
    {{3, 32, 14, 14}, 2},  // and its second
    {{2, 3, 7, 9}, 2},     // a row and a column past the last window
    {{2, 70, 10, 11}, 3},  // more channels than one pass of the loop holds, remainders
    {{1, 1, 5, 5}, 5},     // one window
    {{2, 5, 8, 8}, 4},
};

void expect_like_libtorch(torch::ScalarType dtype) {
  torch::manual_seed(7);
  for (const PoolCase& c : kCases) {
    SCOPED_TRACE("sizes " + c10::str(c.sizes) + ", k " + std::to_string(c.k));
    const Tensor x = tied_values(c.sizes, dtype);
    const Tensor seed = torch::randn({c.sizes[0], c.sizes[1], c.sizes[2] / c.k, c.sizes[3] / c.k});
    const auto [ya, yb, ga, gb] = both(x, c.k, seed);
    EXPECT_TRUE(yb.is_contiguous(c10::MemoryFormat::ChannelsLast));
    EXPECT_TRUE(same(ya, yb));
    EXPECT_TRUE(same(ga, gb)) << (ga - gb).abs().max();
    // Each gradient value went to exactly one cell: as many nonzeros as LibTorch's.
    EXPECT_EQ(ga.ne(0).sum().item<int64_t>(), gb.ne(0).sum().item<int64_t>());
  }
}

TEST(WindowMaxPool, MatchesLibTorchInFloatWithTies) { expect_like_libtorch(torch::kFloat); }

TEST(WindowMaxPool, MatchesLibTorchInBFloat16WithTies) { expect_like_libtorch(torch::kBFloat16); }

TEST(WindowMaxPool, MatchesLibTorchOnTwoThreads) {
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  torch::manual_seed(3);
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    const Tensor x = torch::randn({64, 32, 28, 28}).to(dtype).contiguous(c10::MemoryFormat::ChannelsLast);
    const auto [ya, yb, ga, gb] = both(x, 2, torch::randn({64, 32, 14, 14}));
    EXPECT_TRUE(same(ya, yb));
    EXPECT_TRUE(same(ga, gb));
  }
  at::set_num_threads(threads);
}

TEST(WindowMaxPool, NaNWinsItsWindowAsInLibTorch) {
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    Tensor x = torch::zeros({1, 2, 4, 4});
    x.index_put_({0, 0, 0, 1}, NAN);  // one NaN in a window of larger values
    x.index_put_({0, 0, 0, 0}, 5.0);
    x.index_put_({0, 1, 2, 2}, NAN);  // two NaNs in one window
    x.index_put_({0, 1, 3, 3}, NAN);
    x = x.to(dtype).contiguous(c10::MemoryFormat::ChannelsLast);
    const auto [ya, yb, ga, gb] = both(x, 2, torch::ones({1, 2, 2, 2}));
    EXPECT_TRUE(same(ya, yb));
    EXPECT_TRUE(std::isnan(yb.index({0, 0, 0, 0}).item<float>()));
    EXPECT_TRUE(same(ga, gb));
  }
}

BuiltLayer max_pool_layer(const nlohmann::json& params) {
  const LayerDef* def = find_layer_def("MaxPool2d");
  return def->build(LayerParams("p", "MaxPool2d", &params, layer_param_defs("MaxPool2d")));
}

std::string backward_name(const Tensor& y) { return y.grad_fn() ? y.grad_fn()->name() : ""; }

TEST(WindowMaxPool, TheLayerTakesItForChannelsLastInputAndStrideEqualToKernel) {
  const BuiltLayer layer = max_pool_layer({{"kernel_size", 2}});
  const Tensor x = torch::randn({2, 3, 8, 8}).requires_grad_(true);
  const Tensor channels_last = x.contiguous(c10::MemoryFormat::ChannelsLast);
  const Tensor fast = layer.forward(channels_last), plain = layer.forward(x);
  EXPECT_NE(backward_name(fast).find("WindowMaxPool"), std::string::npos) << backward_name(fast);
  EXPECT_EQ(backward_name(plain).find("WindowMaxPool"), std::string::npos) << backward_name(plain);
  EXPECT_TRUE(torch::equal(fast, plain));
}

TEST(WindowMaxPool, TheLayerLeavesOtherPoolingsToLibTorch) {
  const Tensor x = torch::randn({2, 3, 9, 9}).contiguous(c10::MemoryFormat::ChannelsLast).requires_grad_(true);
  for (const nlohmann::json& params :
       {nlohmann::json{{"kernel_size", 3}, {"stride", 2}}, nlohmann::json{{"kernel_size", 2}, {"padding", 1}},
        nlohmann::json{{"kernel_size", 2}, {"dilation", 2}},
        nlohmann::json{{"kernel_size", 2}, {"ceil_mode", true}},  // 9 is not whole windows
        nlohmann::json{{"kernel_size", nlohmann::json::array({2, 3})}}}) {
    SCOPED_TRACE(params.dump());
    const Tensor y = max_pool_layer(params).forward(x);
    EXPECT_EQ(backward_name(y).find("WindowMaxPool"), std::string::npos) << backward_name(y);
  }
  // ceil_mode over whole windows is the same pooling.
  const Tensor whole = torch::randn({1, 2, 8, 8}).contiguous(c10::MemoryFormat::ChannelsLast).requires_grad_(true);
  const Tensor y = max_pool_layer({{"kernel_size", 2}, {"ceil_mode", true}}).forward(whole);
  EXPECT_NE(backward_name(y).find("WindowMaxPool"), std::string::npos);
  EXPECT_TRUE(torch::equal(y, torch::max_pool2d(whole, {2, 2}, {2, 2}, {0, 0}, {1, 1}, true)));
}

}  // namespace
}  // namespace codefy::model
