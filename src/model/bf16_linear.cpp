#include "model/bf16_linear.h"

#include "train/bf16_mirrors.h"
#include "train/fused_kernels.h"

#include <torch/autograd.h>

#include <cstdint>
#include <vector>

namespace codefy::model {

using torch::Tensor;

namespace {

// Whether the float32 gradient `acc` can take a bf16 gradient of `numel` values added in place.
bool adds_in_place(const Tensor& acc, int64_t numel) {
  return acc.defined() && acc.device().is_cpu() && acc.scalar_type() == torch::kFloat && acc.is_contiguous() &&
         acc.numel() == numel && !torch::GradMode::is_enabled();
}

struct Bf16Linear : torch::autograd::Function<Bf16Linear> {
  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& x, const Tensor& weight,
                        const Tensor& bias, const Tensor& weight_bf16) {
    const int64_t in = weight.size(1), out = weight.size(0);
    const Tensor rows = x.to(torch::kBFloat16).reshape({-1, in});
    const Tensor wt = weight_bf16.t();
    const Tensor y = bias.numel() > 0 ? at::addmm(bias.to(torch::kBFloat16), rows, wt) : at::mm(rows, wt);
    ctx->save_for_backward({rows});
    ctx->saved_data["weight"] = weight;
    ctx->saved_data["weight_bf16"] = weight_bf16;
    ctx->saved_data["x_sizes"] = x.sizes().vec();
    ctx->saved_data["x_dtype"] = static_cast<int64_t>(x.scalar_type());
    std::vector<int64_t> sizes = x.sizes().vec();
    sizes.back() = out;
    return y.view(sizes);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const Tensor rows = ctx->get_saved_variables()[0];
    Tensor weight = ctx->saved_data["weight"].toTensor();
    const Tensor weight_bf16 = ctx->saved_data["weight_bf16"].toTensor();
    const Tensor gy = grads[0].to(torch::kBFloat16).reshape({-1, weight.size(0)});
    Tensor gx, gw, gb;
    if (ctx->needs_input_grad(0))
      gx = gy.mm(weight_bf16)
               .view(ctx->saved_data["x_sizes"].toIntVector())
               .to(static_cast<c10::ScalarType>(ctx->saved_data["x_dtype"].toInt()));
    if (ctx->needs_input_grad(1)) {
      const Tensor g = gy.t().mm(rows);  // [out, in], bf16
      Tensor& acc = weight.mutable_grad();
      if (adds_in_place(acc, g.numel())) {
        train::fused::add_bf16(acc.data_ptr<float>(), train::bf16_bits(g.contiguous()), g.numel());
        acc.unsafeGetTensorImpl()->bump_version();  // written through a raw pointer
      } else {
        gw = g.to(torch::kFloat);
      }
    }
    if (ctx->needs_input_grad(2)) gb = gy.sum(0).to(torch::kFloat);
    return {gx, gw, gb, Tensor()};
  }
};

}  // namespace

Tensor bf16_linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& weight_bf16) {
  // LibTorch 1.13's Function::apply reads every input's device: no bias is an empty one.
  return Bf16Linear::apply(x, weight, bias.defined() ? bias : at::empty({0}, weight.options()), weight_bf16);
}

}  // namespace codefy::model
