// The single-pass optimizers against LibTorch's own torch::optim classes,
// which compute the same update one tensor operation at a time: the same
// parameters and state after many steps (to float rounding), the same
// fallbacks, and state LibTorch's classes can load and continue from.
#include "train/fused_optim.h"
#include "train/bf16_mirrors.h"
#include "train/fused_kernels.h"

#include <gtest/gtest.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace codefy::train {
namespace {

// Several shapes; with `large`, one big enough to be split across threads (2^21 elements).
std::vector<torch::Tensor> make_params(torch::Dtype dtype = torch::kFloat, bool large = false) {
  torch::manual_seed(7);
  std::vector<std::vector<int64_t>> shapes = {{256, 784}, {256}, {10, 256}, {3}};
  if (large) shapes.push_back({2048, 1024});
  std::vector<torch::Tensor> ps;
  for (const auto& shape : shapes) ps.push_back(torch::randn(shape).to(dtype).requires_grad_());
  return ps;
}

std::vector<torch::Tensor> clone_params(const std::vector<torch::Tensor>& ps) {
  std::vector<torch::Tensor> out;
  for (const auto& p : ps) out.push_back(p.detach().clone().requires_grad_());
  return out;
}

// Gradients for step `i`, the same for both optimizers; a third of them
// tiny, so the second-moment terms reach small values too.
void set_grads(std::vector<torch::Tensor>& ps, int i) {
  for (size_t k = 0; k < ps.size(); ++k) {
    auto g = torch::randn(ps[k].sizes(), torch::TensorOptions().dtype(ps[k].scalar_type())) *
             ((i + static_cast<int>(k)) % 3 == 0 ? 1e-4 : 1.0);
    ps[k].mutable_grad() = g;
  }
}

struct Runs {
  std::vector<torch::Tensor> initial, fused, reference;
  /// Whether every step of the fused optimizer took its single pass.
  bool all_fused = true;
};

// Runs `steps` updates of `Fused` and of LibTorch's `Reference` on equal
// parameters and gradients.
template <typename Fused, typename Reference, typename Options>
Runs run_both(const Options& options, int steps, torch::Dtype dtype = torch::kFloat, bool large = false) {
  Runs r;
  r.initial = make_params(dtype, large);
  r.fused = clone_params(r.initial);
  r.reference = clone_params(r.initial);
  Fused fused(r.fused, options);
  Reference reference(r.reference, options);
  for (int i = 0; i < steps; ++i) {
    torch::manual_seed(100 + i);
    set_grads(r.fused, i);
    torch::manual_seed(100 + i);
    set_grads(r.reference, i);
    fused.step();
    reference.step();
    r.all_fused = r.all_fused && fused.last_step_fused();
  }
  return r;
}

void expect_close(const Runs& r, double rtol, double atol) {
  EXPECT_TRUE(r.all_fused) << "a step fell back to LibTorch's own";
  ASSERT_EQ(r.fused.size(), r.reference.size());
  for (size_t k = 0; k < r.fused.size(); ++k) {
    const auto a = r.fused[k].detach(), b = r.reference[k].detach();
    const double err = (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
    EXPECT_TRUE(torch::allclose(a, b, rtol, atol))
        << "parameter " << k << " (" << a.sizes() << "): max abs difference " << err;
    // Not merely close because nothing moved.
    EXPECT_GT((a - r.initial[k].detach()).abs().max().item<double>(), 1e-4) << k;
  }
}

void expect_identical(const Runs& r) {
  EXPECT_FALSE(r.all_fused);
  for (size_t k = 0; k < r.fused.size(); ++k) EXPECT_TRUE(torch::equal(r.fused[k], r.reference[k])) << k;
}

// float32 rounding: the single pass and LibTorch's kernels may round a
// product or a fused multiply-add differently, one unit in the last place
// per step at most; after 60 steps that stays far below 1e-5.
constexpr double kRtol = 1e-5, kAtol = 1e-6;

TEST(FusedOptim, AdamMatchesLibTorchAdam) {
  expect_close(run_both<FusedAdam, torch::optim::Adam>(torch::optim::AdamOptions(1e-3), 40, torch::kFloat,
                                                       /*large=*/true),
               kRtol, kAtol);
}

TEST(FusedOptim, AdamWithL2WeightDecayAndOtherBetasMatchesLibTorch) {
  expect_close(run_both<FusedAdam, torch::optim::Adam>(
                   torch::optim::AdamOptions(3e-3).betas({0.8, 0.99}).eps(1e-6).weight_decay(0.05), 60),
               kRtol, kAtol);
}

TEST(FusedOptim, AdamWDecoupledDecayMatchesLibTorchAdamW) {
  expect_close(run_both<FusedAdamW, torch::optim::AdamW>(torch::optim::AdamWOptions(1e-3).weight_decay(0.1), 60), kRtol,
               kAtol);
}

TEST(FusedOptim, AdamWWithoutDecayMatchesLibTorchAdamW) {
  expect_close(run_both<FusedAdamW, torch::optim::AdamW>(torch::optim::AdamWOptions(1e-3).weight_decay(0), 30), kRtol,
               kAtol);
}

TEST(FusedOptim, SgdMomentumVariantsMatchLibTorchSgd) {
  const std::vector<torch::optim::SGDOptions> variants = {
      torch::optim::SGDOptions(0.01).momentum(0.9), torch::optim::SGDOptions(0.01).momentum(0.9).dampening(0.3),
      torch::optim::SGDOptions(0.01).momentum(0.9).nesterov(true),
      torch::optim::SGDOptions(0.01).momentum(0.5).weight_decay(1e-2),
      torch::optim::SGDOptions(0.01).momentum(0.9).nesterov(true).weight_decay(1e-3)};
  for (size_t v = 0; v < variants.size(); ++v) {
    SCOPED_TRACE("variant " + std::to_string(v));
    expect_close(run_both<FusedSGD, torch::optim::SGD>(variants[v], 40, torch::kFloat, /*large=*/v == 0), kRtol, kAtol);
  }
}

// What the single pass does not cover runs LibTorch's own step, so it is
// bit-identical to LibTorch's.
TEST(FusedOptim, AmsgradPlainSgdAndOtherDtypesTakeLibTorchsStepExactly) {
  expect_identical(run_both<FusedAdam, torch::optim::Adam>(torch::optim::AdamOptions(1e-3).amsgrad(true), 10));
  expect_identical(run_both<FusedAdamW, torch::optim::AdamW>(torch::optim::AdamWOptions(1e-3).amsgrad(true), 10));
  expect_identical(run_both<FusedSGD, torch::optim::SGD>(torch::optim::SGDOptions(0.1), 10));
  expect_identical(run_both<FusedAdam, torch::optim::Adam>(torch::optim::AdamOptions(1e-3), 10, torch::kDouble));
  expect_identical(
      run_both<FusedSGD, torch::optim::SGD>(torch::optim::SGDOptions(0.1).momentum(0.9), 10, torch::kBFloat16));
}

TEST(FusedOptim, NonContiguousParameterTakesLibTorchsStep) {
  auto base = torch::randn({64, 32});
  auto a = base.t().contiguous().t().clone().requires_grad_();  // clone keeps the transposed strides
  ASSERT_FALSE(a.is_contiguous());
  auto b = a.detach().clone().requires_grad_();
  FusedAdam fa({a}, torch::optim::AdamOptions(1e-2));
  torch::optim::Adam rb({b}, torch::optim::AdamOptions(1e-2));
  for (int i = 0; i < 5; ++i) {
    auto g = torch::randn({64, 32});
    a.mutable_grad() = g.clone();
    b.mutable_grad() = g.clone();
    fa.step();
    rb.step();
  }
  EXPECT_FALSE(fa.last_step_fused());
  EXPECT_TRUE(torch::equal(a, b));
}

TEST(FusedOptim, ParameterWithoutGradientIsSkippedAndGetsNoState) {
  auto ps = make_params();
  FusedAdam opt(ps, torch::optim::AdamOptions(1e-3));
  const auto before = ps[1].detach().clone();
  torch::manual_seed(1);
  set_grads(ps, 0);
  ps[1].mutable_grad() = torch::Tensor();
  opt.step();
  EXPECT_TRUE(torch::equal(ps[1], before));
  EXPECT_EQ(opt.state().count(c10::guts::to_string(ps[1].unsafeGetTensorImpl())), 0u);
  EXPECT_EQ(opt.state().size(), ps.size() - 1);
}

TEST(FusedOptim, StepBumpsVersionCountersLikeAnInPlaceOperation) {
  auto ps = make_params();
  FusedAdam opt(ps, torch::optim::AdamOptions(1e-3));
  set_grads(ps, 0);
  const auto version = ps[0]._version();
  opt.step();
  EXPECT_GT(ps[0]._version(), version);
}

TEST(FusedOptim, ClosureIsEvaluatedWithGradientsAndItsLossReturned) {
  auto w = torch::ones({4}).requires_grad_();
  FusedAdam opt({w}, torch::optim::AdamOptions(0.1));
  const auto loss = opt.step([&] {
    opt.zero_grad();
    auto l = (w * w).sum();
    l.backward();
    return l;
  });
  EXPECT_FLOAT_EQ(loss.item<float>(), 4.0f);
  EXPECT_LT(w[0].item<float>(), 1.0f);
}

// Saved by the fused class, loaded by LibTorch's (and the reverse): both go
// on exactly as one optimizer that was never interrupted.
TEST(FusedOptim, StateRoundTripsThroughLibTorchsSerialization) {
  auto a = make_params();
  auto b = clone_params(a);
  FusedAdam fa(a, torch::optim::AdamOptions(1e-3).weight_decay(0.01));
  torch::optim::Adam ra(b, torch::optim::AdamOptions(1e-3).weight_decay(0.01));
  for (int i = 0; i < 5; ++i) {
    torch::manual_seed(i);
    set_grads(a, i);
    torch::manual_seed(i);
    set_grads(b, i);
    fa.step();
    ra.step();
  }
  ASSERT_TRUE(fa.last_step_fused());
  std::stringstream saved;
  torch::save(fa, saved);
  auto c = clone_params(a);
  torch::optim::Adam loaded(c, torch::optim::AdamOptions(1e-3).weight_decay(0.01));
  torch::load(loaded, saved);
  for (int i = 5; i < 10; ++i) {
    torch::manual_seed(i);
    set_grads(a, i);
    torch::manual_seed(i);
    set_grads(c, i);
    fa.step();
    loaded.step();
  }
  for (size_t k = 0; k < a.size(); ++k) {
    const auto& sa = static_cast<const torch::optim::AdamParamState&>(
        *fa.state().at(c10::guts::to_string(a[k].unsafeGetTensorImpl())));
    const auto& sc = static_cast<const torch::optim::AdamParamState&>(
        *loaded.state().at(c10::guts::to_string(c[k].unsafeGetTensorImpl())));
    EXPECT_EQ(sa.step(), 10);
    EXPECT_EQ(sc.step(), 10);
    EXPECT_TRUE(torch::allclose(sa.exp_avg_sq(), sc.exp_avg_sq(), kRtol, 1e-12)) << k;
    EXPECT_TRUE(torch::allclose(a[k], c[k], kRtol, kAtol)) << k;
  }
}

// The bf16 copies the optimizers write round as LibTorch's .to(kBFloat16):
// ties to even, infinities kept, NaN to the quiet NaN; and a bf16 gradient
// adds into a float one as its cast would.
TEST(FusedKernels, Bf16RoundingAndAddAreLibTorchs) {
  torch::manual_seed(9);
  torch::Tensor x = torch::cat({torch::randn({4096}) * 1e3, torch::randn({4096}) * 1e-38,  // denormals too
                                torch::tensor({0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1.0f + 1.0f / 256,
                                               1.0f + 3.0f / 256, 3.3895314e38f, -3.3895314e38f})});
  torch::Tensor out = torch::empty({x.numel()}, torch::kBFloat16);
  fused::to_bf16(x.data_ptr<float>(), bf16_bits(out), x.numel());
  const torch::Tensor ref = x.to(torch::kBFloat16);
  const torch::Tensor nan = ref.isnan();
  EXPECT_TRUE(torch::equal(out.isnan(), nan));
  EXPECT_TRUE(torch::equal(out.masked_fill(nan, 0).view(torch::kShort), ref.masked_fill(nan, 0).view(torch::kShort)));

  torch::Tensor acc = torch::randn({x.numel()});
  const torch::Tensor expected = acc + ref.to(torch::kFloat);
  fused::add_bf16(acc.data_ptr<float>(), bf16_bits(ref), ref.numel());
  EXPECT_TRUE(torch::equal(acc.isnan(), expected.isnan()));
  EXPECT_TRUE(torch::equal(acc.nan_to_num(0, 0, 0), expected.nan_to_num(0, 0, 0)));
}

}  // namespace
}  // namespace codefy::train
