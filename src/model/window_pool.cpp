#include "model/window_pool.h"

#include "model/window_pool_kernels.h"
#include "train/bf16_mirrors.h"

#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cstdint>

namespace codefy::model {

using torch::Tensor;

namespace {

pool::WindowDims dims_of(const Tensor& x, int64_t k) {
  // [N, C, H, W] sizes of a channels-last tensor: memory holds [N, H, W, C].
  return pool::WindowDims{x.size(0), x.size(2), x.size(3), x.size(1), k};
}

// Runs `body(begin, end)` over the output rows, on several threads only when
// each gets enough work to pay for waking it.
template <typename Body>
void for_rows(const pool::WindowDims& d, const Body& body) {
  const int64_t per_row = std::max<int64_t>(1, d.out_w() * d.k * d.k * d.c);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / per_row);
  at::parallel_for(0, d.rows(), grain, body);
}

struct WindowMaxPool : torch::autograd::Function<WindowMaxPool> {
  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& x, int64_t k) {
    const pool::WindowDims d = dims_of(x, k);
    const Tensor in = x.contiguous(c10::MemoryFormat::ChannelsLast);
    Tensor out =
        at::empty({d.n, d.c, d.out_h(), d.out_w()}, x.options().memory_format(c10::MemoryFormat::ChannelsLast));
    Tensor arg = at::empty({out.numel()}, x.options().dtype(torch::kByte));
    uint8_t* a = arg.data_ptr<uint8_t>();
    if (x.scalar_type() == torch::kFloat)
      for_rows(
          d, [&](int64_t b, int64_t e) { pool::max_forward(in.data_ptr<float>(), out.data_ptr<float>(), a, d, b, e); });
    else
      for_rows(d, [&](int64_t b, int64_t e) {
        pool::max_forward_bf16(train::bf16_bits(in), train::bf16_bits(out), a, d, b, e);
      });
    ctx->saved_data["arg"] = arg;
    ctx->saved_data["k"] = k;
    ctx->saved_data["sizes"] = x.sizes().vec();
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const Tensor arg = ctx->saved_data["arg"].toTensor();
    const int64_t k = ctx->saved_data["k"].toInt();
    const std::vector<int64_t> sizes = ctx->saved_data["sizes"].toIntVector();
    const Tensor g = grads[0].contiguous(c10::MemoryFormat::ChannelsLast);
    const pool::WindowDims d{sizes[0], sizes[2], sizes[3], sizes[1], k};
    Tensor grad_in = at::empty(sizes, g.options().memory_format(c10::MemoryFormat::ChannelsLast));
    const uint8_t* a = arg.data_ptr<uint8_t>();
    if (g.scalar_type() == torch::kFloat)
      for_rows(d, [&](int64_t b, int64_t e) {
        pool::max_backward(g.data_ptr<float>(), a, grad_in.data_ptr<float>(), d, b, e);
      });
    else
      for_rows(d, [&](int64_t b, int64_t e) {
        pool::max_backward_bf16(train::bf16_bits(g), a, train::bf16_bits(grad_in), d, b, e);
      });
    return {grad_in, Tensor()};
  }
};

}  // namespace

bool window_max_pool_options(const torch::nn::MaxPool2dOptions& o) {
  const auto& k = *o.kernel_size();
  const auto& s = *o.stride();
  const auto& p = *o.padding();
  const auto& dil = *o.dilation();
  return k[0] == k[1] && k[0] >= 1 && k[0] <= pool::kMaxWindow && s[0] == k[0] && s[1] == k[1] && p[0] == 0 &&
         p[1] == 0 && dil[0] == 1 && dil[1] == 1;
}

bool window_max_pool_input(const Tensor& x, int64_t k, bool ceil_mode) {
  if (!x.defined() || x.dim() != 4 || !x.device().is_cpu() || x.layout() != c10::kStrided) return false;
  if (x.scalar_type() != torch::kFloat && x.scalar_type() != torch::kBFloat16) return false;
  if (!x.is_contiguous(c10::MemoryFormat::ChannelsLast) || x.size(0) == 0 || x.size(1) == 0) return false;
  if (x.size(2) < k || x.size(3) < k) return false;  // LibTorch's own error says why
  return !ceil_mode || (x.size(2) % k == 0 && x.size(3) % k == 0);
}

Tensor window_max_pool2d(const Tensor& x, int64_t k) { return WindowMaxPool::apply(x, k); }

}  // namespace codefy::model
