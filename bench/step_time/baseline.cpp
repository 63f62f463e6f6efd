// The hand-written LibTorch training loop Codefy's TrainingLoop is measured
// against (bench/step_time.sh): what a competent LibTorch user would write for
// the same model, batch, optimizer and precision, with no node engine around
// it. Prints one JSON line: per-epoch seconds, batches and updates per epoch.
// `--gemm` measures the machine's sgemm / bf16 GEMM rate instead.
//
// Links only LibTorch, so nothing of Codefy's can help or hurt it, except
// with `--tuned`: then it does what Codefy's TrainingLoop does for speed
// beyond the textbook loop (Codefy's single-pass Adam, src/train/fused_optim.cpp
// compiled in; channels-last pooling through Codefy's single-pass max pooling,
// src/model/window_pool.cpp; one autocast weight cache per
// accumulation window; the MLP's hidden Linears under bf16 on weight copies
// the optimizer keeps, src/model/bf16_linear.cpp; the one-channel convolution
// computed channels-last, src/model/conv_layout.cpp), so that the difference left to Codefy is the node
// engine's own cost.
#include "model/bf16_linear.h"
#include "model/conv_layout.h"
#include "model/window_pool.h"
#include "train/bf16_mirrors.h"
#include "train/fused_optim.h"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

/// A Linear that runs in fp32 under CPU autocast, as Codefy's SequentialModel
/// runs one this small for its batch (the output layers here).
struct Fp32LinearImpl : torch::nn::Module {
  Fp32LinearImpl(int64_t in, int64_t out) : linear(register_module("linear", torch::nn::Linear(in, out))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    const bool autocast = at::autocast::is_cpu_enabled();
    at::autocast::set_cpu_enabled(false);
    torch::Tensor y = linear(x.to(torch::kFloat));
    at::autocast::set_cpu_enabled(autocast);
    return y;
  }
  torch::nn::Linear linear;
};
TORCH_MODULE(Fp32Linear);

/// A Linear that under CPU bf16 autocast reads its weight's bf16 copy kept
/// in `mirrors` (and written by the single-pass optimizer's update), as
/// Codefy's SequentialModel runs its larger Linears.
struct Bf16CopyLinearImpl : torch::nn::Module {
  Bf16CopyLinearImpl(int64_t in, int64_t out, codefy::train::Bf16Mirrors* mirrors)
      : linear(register_module("linear", torch::nn::Linear(in, out))), mirrors(mirrors) {}
  torch::Tensor forward(const torch::Tensor& x) {
    if (!at::autocast::is_cpu_enabled() || at::autocast::get_autocast_cpu_dtype() != at::kBFloat16) return linear(x);
    return codefy::model::bf16_linear(x, linear->weight, linear->bias, mirrors->of(linear->weight));
  }
  torch::nn::Linear linear;
  codefy::train::Bf16Mirrors* mirrors;
};
TORCH_MODULE(Bf16CopyLinear);

/// A Conv2d computed channels-last (model/conv_layout.h), as Codefy's
/// SequentialModel runs one.
struct ChannelsLastConv2dImpl : torch::nn::Module {
  explicit ChannelsLastConv2dImpl(const torch::nn::Conv2dOptions& o)
      : conv(register_module("conv", torch::nn::Conv2d(o))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    return codefy::model::conv2d_channels_last(*conv, x.contiguous(torch::MemoryFormat::ChannelsLast));
  }
  torch::nn::Conv2d conv;
};
TORCH_MODULE(ChannelsLastConv2d);

torch::nn::Sequential make_model(const std::string& name, bool tuned, codefy::train::Bf16Mirrors* mirrors) {
  namespace nn = torch::nn;
  const auto layout = [tuned](torch::Tensor x) { return tuned ? x.contiguous(torch::MemoryFormat::ChannelsLast) : x; };
  const auto output = [tuned](int64_t in, int64_t out) {
    return tuned ? nn::AnyModule(Fp32Linear(in, out)) : nn::AnyModule(nn::Linear(in, out));
  };
  if (name == "tiny") return nn::Sequential(nn::Linear(32, 64), nn::ReLU(), nn::Linear(64, 10));
  if (name == "mlp") {
    const auto hidden = [&](int64_t in, int64_t out) {
      return tuned ? nn::AnyModule(Bf16CopyLinear(in, out, mirrors)) : nn::AnyModule(nn::Linear(in, out));
    };
    nn::Sequential m;
    m->push_back(hidden(784, 256));
    m->push_back(nn::ReLU());
    m->push_back(hidden(256, 256));
    m->push_back(nn::ReLU());
    m->push_back(output(256, 10));
    return m;
  }
  if (name == "cnn") {
    // Tuned: Codefy's single-pass max pooling over the channels-last activations.
    const auto pool = [tuned] {
      if (!tuned) return nn::AnyModule(nn::MaxPool2d(2));
      return nn::AnyModule(
          nn::Functional([](const torch::Tensor& x) { return codefy::model::window_max_pool2d(x, 2); }));
    };
    // Tuned: the one-channel convolution computed channels-last, as SequentialModel does.
    nn::Sequential m;
    if (tuned)
      m->push_back(ChannelsLastConv2d(nn::Conv2dOptions(1, 16, 3).padding(1)));
    else
      m->push_back(nn::Conv2d(nn::Conv2dOptions(1, 16, 3).padding(1)));
    m->push_back(nn::Functional(layout));
    m->push_back(nn::ReLU());
    m->push_back(pool());
    m->push_back(nn::Conv2d(nn::Conv2dOptions(16, 32, 3).padding(1)));
    m->push_back(nn::ReLU());
    m->push_back(pool());
    m->push_back(nn::Flatten());
    m->push_back(output(32 * 7 * 7, 10));
    return m;
  }
  throw std::invalid_argument("unknown model " + name);
}

std::vector<int64_t> input_shape(const std::string& model, int64_t n) {
  if (model == "tiny") return {n, 32};
  if (model == "mlp") return {n, 784};
  return {n, 1, 28, 28};
}

double gemm_gflops(torch::ScalarType dtype, int64_t size, int reps) {
  auto a = torch::randn({size, size}).to(dtype), b = torch::randn({size, size}).to(dtype);
  auto c = torch::mm(a, b);  // warm-up
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    const auto t = Clock::now();
    c = torch::mm(a, b);
    const double s = std::chrono::duration<double>(Clock::now() - t).count();
    best = std::max(best, 2.0 * static_cast<double>(size * size * size) / s / 1e9);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Hand-written LibTorch training loop (Codefy benchmark baseline)"};
  std::string model_name = "mlp", precision = "fp32";
  int64_t batch = 64, accumulate = 1, samples = 19200, epochs = 4;
  int threads = 0;
  bool gemm = false, log_grad_norm = false, tuned = false;
  app.add_option("--model", model_name)->check(CLI::IsMember({"tiny", "mlp", "cnn"}));
  app.add_option("--batch", batch)->check(CLI::PositiveNumber);
  app.add_option("--accumulate", accumulate)->check(CLI::PositiveNumber);
  app.add_option("--precision", precision)->check(CLI::IsMember({"fp32", "bf16"}));
  app.add_option("--samples", samples)->check(CLI::PositiveNumber);
  app.add_option("--epochs", epochs)->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "intra-op threads (0: LibTorch's default)");
  app.add_flag("--grad-norm", log_grad_norm,
               "also read the gradient norm at every update, the idiomatic LibTorch way (clip_grad_norm_)");
  app.add_flag("--tuned", tuned,
               "do what Codefy does beyond the textbook loop: single-pass Adam, channels-last single-pass pooling, "
               "one autocast cache per accumulation window, the small output Linear in fp32 under bf16, "
               "the larger Linears on bf16 weight copies the optimizer keeps");
  app.add_flag("--gemm", gemm, "measure GEMM GFLOP/s (fp32 and bf16) instead");
  CLI11_PARSE(app, argc, argv);
  if (threads > 0) torch::set_num_threads(threads);

  if (gemm) {
    nlohmann::json j = {{"threads", torch::get_num_threads()},
                        {"fp32_gflops", gemm_gflops(torch::kFloat, 1024, 10)},
                        {"bf16_gflops", gemm_gflops(torch::kBFloat16, 1024, 5)}};
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }

  torch::manual_seed(0);
  codefy::train::Bf16Mirrors mirrors;
  auto model = make_model(model_name, tuned, &mirrors);
  const auto adam = torch::optim::AdamOptions(1e-3);
  std::unique_ptr<torch::optim::Optimizer> optimizer_ptr;
  if (tuned) {
    auto fused = std::make_unique<codefy::train::FusedAdam>(model->parameters(), adam);
    fused->write_bf16_mirrors(&mirrors);
    optimizer_ptr = std::move(fused);
  } else
    optimizer_ptr = std::make_unique<torch::optim::Adam>(model->parameters(), adam);
  torch::optim::Optimizer& optimizer = *optimizer_ptr;
  const torch::Tensor inputs = torch::randn(input_shape(model_name, samples));
  const torch::Tensor targets = torch::randint(0, 10, {samples}, torch::kLong);
  const int64_t batches = (samples + batch - 1) / batch;
  const bool bf16 = precision == "bf16";

  std::vector<double> epoch_seconds;
  double last_loss = 0, grad_norm_sum = 0;
  model->train();
  for (int64_t epoch = 0; epoch < epochs; ++epoch) {
    const auto t = Clock::now();
    const torch::Tensor perm = torch::randperm(samples, torch::kLong);
    double loss_sum = 0;
    optimizer.zero_grad();
    for (int64_t b = 0; b < batches; ++b) {
      const torch::Tensor idx = perm.slice(0, b * batch, std::min((b + 1) * batch, samples));
      const torch::Tensor x = inputs.index_select(0, idx), y = targets.index_select(0, idx);
      torch::Tensor loss;
      if (bf16) {
        at::autocast::set_cpu_enabled(true);
        at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
        // Tuned: the cache of cast weights lives until the window's update.
        if (tuned && b % accumulate == 0) at::autocast::increment_nesting();
        loss = torch::nn::functional::cross_entropy(model->forward(x), y);
        at::autocast::set_cpu_enabled(false);
        if (!tuned) at::autocast::clear_cache();
      } else {
        loss = torch::nn::functional::cross_entropy(model->forward(x), y);
      }
      (accumulate > 1 ? loss / static_cast<double>(accumulate) : loss).backward();
      loss_sum += loss.item<double>();
      if ((b + 1) % accumulate == 0 || b + 1 == batches) {
        if (log_grad_norm)
          grad_norm_sum +=
              torch::nn::utils::clip_grad_norm_(model->parameters(), std::numeric_limits<double>::infinity());
        optimizer.step();
        optimizer.zero_grad();
        if (bf16 && tuned && at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
      }
    }
    last_loss = loss_sum / static_cast<double>(batches);
    epoch_seconds.push_back(std::chrono::duration<double>(Clock::now() - t).count());
  }
  const nlohmann::json j = {{"epoch_seconds", epoch_seconds},
                            {"batches_per_epoch", batches},
                            {"updates_per_epoch", (batches + accumulate - 1) / accumulate},
                            {"threads", torch::get_num_threads()},
                            {"loss", last_loss},
                            {"grad_norm_sum", grad_norm_sum}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
}
