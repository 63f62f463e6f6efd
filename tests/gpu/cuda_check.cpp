// GPU checks (tests/gpu/check.sh): the CUDA paths that a CPU-only LibTorch
// compiles away, run against a CUDA LibTorch on a real card. Plain checks,
// no test framework, so it builds where only PyTorch is installed. Prints
// what it sees; exits 1 if any check fails.
#include "device/catalogue.h"
#include "device/memory.h"
#include "engine/oom.h"
#include "train/grad_buffer.h"
#include "train/grad_scaler.h"
#include "train/precision.h"

#include <c10/util/Exception.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++failures;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

using namespace codefy;

void devices() {
  std::printf("\n== device catalogue\n");
  const auto entries = device::device_catalogue(device::system_probe());
  std::printf("%s\n", device::to_json(entries).dump(2).c_str());
  check(entries.size() >= 2 && entries[1].device == "cuda", "the catalogue lists the current CUDA device second");
  if (entries.size() >= 2) {
    check(entries[1].free_bytes.has_value() && entries[1].total_bytes.has_value(),
          "its free/total memory is read (NVML): " + entries[1].label);
    check(contains(entries[1].label, "NVIDIA CUDA · ") && contains(entries[1].label, " GiB"),
          "label " + entries[1].label);
    const auto& p = entries[1].precisions;
    check(std::find(p.begin(), p.end(), "bf16") != p.end(), "bf16 is offered (compute capability >= 8.0)");
  }
  const int cards = device::system_probe().cuda_count();
  check(cards >= 1, "cuda_count() = " + std::to_string(cards));
  check(cards >= 2 ? entries.size() == static_cast<size_t>(2 + cards) : entries.size() == 2,
        "one entry per card only with two or more cards");
  const auto far =
      device::resolve_device("cuda:" + std::to_string(cards), device::DeviceSource{"g", "n", "T", "device"});
  check(far.device.is_cuda() && far.warnings.size() == 1 &&
            contains(far.warnings[0], std::to_string(cards) + " CUDA card"),
        "a missing index falls back to the current card: " + (far.warnings.empty() ? "" : far.warnings[0]));
  const auto plain = device::resolve_device("cuda");
  check(plain.device.is_cuda() && plain.warnings.empty(), "\"cuda\" is the current device: " + plain.device.str());
}

/// A few updates of a small MLP under `precision`; returns {first loss, last loss}.
std::pair<double, double> train_steps(train::Precision precision, bool scaler_on, int steps) {
  const c10::Device dev(c10::kCUDA, 0);
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Linear(256, 512), torch::nn::ReLU(), torch::nn::Linear(512, 10));
  net->to(dev);
  torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(1e-3));
  train::GradBuffer grads(net->parameters());
  train::GradScaler scaler;
  const auto x = torch::randn({128, 256}, dev);
  const auto y = torch::randint(0, 10, {128}, torch::TensorOptions().dtype(torch::kLong).device(dev));
  double first = 0, last = 0;
  for (int s = 0; s < steps; ++s) {
    torch::Tensor loss;
    {
      train::AutocastGuard autocast(precision, dev);
      auto out = net->forward(x);
      if (s == 0)
        check(out.scalar_type() == (precision == train::Precision::kBf16 ? torch::kBFloat16 : torch::kHalf),
              std::string("autocast computes in ") + train::to_string(precision) + " on CUDA");
      loss = torch::nn::functional::cross_entropy(out, y);
    }
    (scaler_on ? scaler.scale(loss) : loss).backward();
    grads.sync();
    if (scaler_on) scaler.unscale(grads.parameters());  // the fused _amp_ op on CUDA
    grads.clip(1.0);
    if (!scaler_on || !scaler.found_inf()) adam.step();
    if (scaler_on) scaler.update();
    grads.zero();
    if (s == 0) first = loss.item<double>();
    last = loss.item<double>();
  }
  check(net->parameters()[0].scalar_type() == torch::kFloat, "parameters stay float32");
  return {first, last};
}

void precisions() {
  std::printf("\n== bf16 / fp16 on CUDA\n");
  const c10::Device dev(c10::kCUDA, 0);
  const auto bf = train::check_precision(train::Precision::kBf16, dev);
  check(bf.used == train::Precision::kBf16 && bf.warning.empty(), "bf16 accepted on this card");
  const auto [b0, b1] = train_steps(train::Precision::kBf16, false, 60);
  check(b1 < b0 * 0.8, "bf16 training lowers the loss: " + std::to_string(b0) + " -> " + std::to_string(b1));
  const auto fp = train::check_precision(train::Precision::kFp16, dev);
  check(fp.used == train::Precision::kFp16, "fp16 accepted");
  const auto [h0, h1] = train_steps(train::Precision::kFp16, true, 60);
  check(h1 < h0 * 0.8, "fp16 + gradient scaler lowers the loss: " + std::to_string(h0) + " -> " + std::to_string(h1));
}

void scaler() {
  std::printf("\n== gradient scaler, fused path\n");
  const c10::Device dev(c10::kCUDA, 0);
  train::GradScalerOptions o;
  o.init_scale = 1024;
  o.growth_interval = 3;
  train::GradScaler s(o);
  auto w = torch::ones({4}, torch::TensorOptions().device(dev)).requires_grad_(true);
  torch::optim::SGD sgd({w}, torch::optim::SGDOptions(0.1));
  s.scale((w * torch::tensor({1.f, 2.f, std::numeric_limits<float>::infinity(), 4.f}, dev)).sum()).backward();
  s.unscale({w});
  check(s.found_inf(), "an inf gradient is found");
  const auto before = w.detach().clone();
  check(!s.step(sgd), "the step is skipped");
  s.update();
  check(torch::equal(before, w.detach()), "weights unchanged");
  check(s.get_scale() == 512, "scale backed off to " + std::to_string(s.get_scale()));
  for (int i = 0; i < 3; ++i) {
    w.mutable_grad() = torch::Tensor();
    s.scale((w * 2).sum()).backward();
    s.unscale({w});
    s.step(sgd);
    s.update();
  }
  check(s.get_scale() == 1024, "scale grew after growth_interval clean steps: " + std::to_string(s.get_scale()));
  check(w.grad().device().is_cuda() && w.grad().allclose(torch::full({4}, 2.0f, dev)), "gradients unscaled in place");
}

void out_of_memory() {
  std::printf("\n== a real CUDA out-of-memory\n");
  const c10::Device dev(c10::kCUDA, 0);
  device::reset_peak(dev);
  const auto before = device::read_memory(dev);
  std::string report;
  try {
    auto keep = torch::empty({1LL << 28}, torch::TensorOptions().device(dev));  // 1 GiB held
    const int64_t total = before.total_bytes.value_or(int64_t{1} << 40);
    auto huge = torch::empty({total}, torch::TensorOptions().device(dev));  // 4x the card
    check(false, "allocating 4x the card succeeded");
  } catch (const c10::OutOfMemoryError& e) {
    const std::string original =
        std::string(e.what_without_backtrace()).substr(0, std::string(e.what_without_backtrace()).find('\n'));
    const auto m = device::read_memory(dev);
    report = oom_report("TrainingLoop", "n7", dev,
                        {"reduce batch_size on the DataLoader node loader (now 64)",
                         "make the model smaller, or shorten the sequence / shrink the image"},
                        oom_memory_line(m, m.live_bytes), original);
    std::printf("%s\n", report.c_str());
  }
  check(contains(report, "Node TrainingLoop (n7) ran out of memory on cuda:0."), "the report names node and device");
  check(contains(report, "CUDA memory on cuda:0: ") && contains(report, "reserved by the caching allocator") &&
            contains(report, "peak this process") && contains(report, "on the card."),
        "the memory line has live, reserved, peak and the card total");
  check(contains(report, "Original error: CUDA out of memory"), "the original error's first line ends it");
  device::release_cached_memory(dev);
  const auto after = device::read_memory(dev);
  check(after.live_bytes <= before.live_bytes + (1 << 20),
        "live bytes back to the level before: " + device::format_bytes(after.live_bytes));
  check(after.reserved_bytes.value_or(0) <= before.reserved_bytes.value_or(0) + (64 << 20),
        "cache emptied: " + device::format_bytes(after.reserved_bytes.value_or(0)) + " reserved");
}

void device_budget() {
  std::printf("\n== a server worker's CUDA memory budget (set_per_process_memory_fraction)\n");
  const c10::Device dev(c10::kCUDA, 0);
  device::release_cached_memory(dev);
  device::set_device_budget(dev, int64_t{1} << 30);  // 1 GiB
  bool refused = false;
  try {
    auto t = torch::empty({int64_t{1} << 29}, torch::TensorOptions().device(dev));  // 2 GiB
  } catch (const c10::OutOfMemoryError&) {
    refused = true;
  }
  check(refused, "2 GiB refused under a 1 GiB budget");
  auto fits = torch::empty({int64_t{1} << 27}, torch::TensorOptions().device(dev));  // 512 MiB
  check(fits.is_cuda(), "512 MiB fits under it");
  const auto total = device::read_memory(dev).total_bytes.value_or(int64_t{1} << 40);
  device::set_device_budget(dev, total);  // back to the whole card
  device::release_cached_memory(dev);
}

}  // namespace

int main() {
  std::printf("LibTorch %s, CUDA available: %s\n", TORCH_VERSION, torch::cuda::is_available() ? "yes" : "no");
  if (!torch::cuda::is_available()) {
    std::printf("FAIL no CUDA device: run this on a machine with a card and a CUDA LibTorch\n");
    return 1;
  }
  devices();
  precisions();
  scaler();
  out_of_memory();
  device_budget();
  std::printf("\n%s: %d failed\n", failures ? "FAILED" : "ALL PASSED", failures);
  return failures ? 1 : 0;
}
