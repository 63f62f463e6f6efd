// The training loop's accumulation, clipping, max_steps, precision, seeding
// and cancellation rules, checked against references computed another way.
#include "train/trainer.h"
#include "tiny_training.h"
#include "train/accumulation.h"
#include "train/builders.h"
#include "train/data.h"
#include "train/serialize.h"
#include "util/errors.h"
#include "util/random.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <iostream>

namespace codefy::train {
namespace {

using namespace fixtures;

TrainResult train(const std::shared_ptr<TinyNet>& net, const DatasetPtr& data, int64_t batch, int64_t accumulate,
                  const std::string& opt_type, double clip = 0.0, int64_t epochs = 1, int64_t max_steps = 0) {
  DataLoader loader = tiny_loader(data, batch);
  auto opt = tiny_optimizer(net, opt_type, 0.1);
  auto loss = make_loss("CrossEntropyLoss");
  TrainOptions o;
  o.epochs = epochs;
  o.accumulate_steps = accumulate;
  o.grad_clip_norm = clip;
  o.max_steps = max_steps;
  return train_model(*net, loader, nullptr, *opt, *loss, nullptr, o, {});
}

/// The full-batch gradient of the mean loss over all samples, computed in one
/// pass on a copy of the initial weights: no accumulation involved.
std::vector<torch::Tensor> full_batch_gradient(const DatasetPtr& data) {
  auto net = tiny_net();
  auto out = net->forward(data->inputs);
  torch::nn::functional::cross_entropy(out, data->targets).backward();
  std::vector<torch::Tensor> g;
  for (auto& p : net->parameters()) g.push_back(p.grad().clone());
  return g;
}

struct Case {
  std::string optimizer;
  double clip;
};

class AccumulationExactness : public ::testing::TestWithParam<Case> {};

TEST_P(AccumulationExactness, Batch8Times4EqualsBatch32ByHand) {
  const auto [opt_type, clip] = GetParam();
  auto data = tiny_data(32);
  // Reference: initial weights minus one hand-computed update of the full-batch gradient.
  auto g = full_batch_gradient(data);
  if (clip > 0) {
    double norm = 0;
    for (const auto& t : g) norm += t.pow(2).sum().item<double>();
    norm = std::sqrt(norm);
    const double coef = std::min(1.0, clip / (norm + 1e-6));
    for (auto& t : g) t.mul_(coef);
  }
  auto init = tiny_net();
  std::vector<torch::Tensor> expected;
  const double lr = 0.1;
  for (size_t i = 0; i < g.size(); ++i) {
    const auto w = init->parameters()[i].detach();
    if (opt_type == "SGD") {
      expected.push_back(w - lr * g[i]);
    } else {  // Adam's first step: m̂ = g, v̂ = g², so the step is lr·g/(|g| + eps)
      expected.push_back(w - lr * g[i] / (g[i].abs() + 1e-8));
    }
  }
  auto net = tiny_net();
  auto r = train(net, data, 8, 4, opt_type, clip);
  EXPECT_EQ(r.metrics["total_steps"], 1);
  EXPECT_EQ(r.metrics["total_batches"], 4);
  for (size_t i = 0; i < expected.size(); ++i)
    expect_tensors_close(net->parameters()[i], expected[i], "param " + std::to_string(i));

  // And against the engine's own batch-32 run, over several updates.
  auto acc = tiny_net(), big = tiny_net();
  train(acc, data, 8, 4, opt_type, clip, 3);
  train(big, data, 32, 1, opt_type, clip, 3);
  for (size_t i = 0; i < expected.size(); ++i)
    expect_tensors_close(acc->parameters()[i], big->parameters()[i], "3 updates, param " + std::to_string(i));
}

INSTANTIATE_TEST_SUITE_P(Optimizers, AccumulationExactness,
                         ::testing::Values(Case{"SGD", 0.0}, Case{"SGD", 0.05}, Case{"Adam", 0.0}, Case{"Adam", 0.05}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return i.param.optimizer + (i.param.clip > 0 ? "_clipped" : "");
                         });

TEST(Accumulation, ShortLastWindowIsAppliedAndDividedByN) {
  // 10 batches of 1, N = 4: updates after batches 4, 8 and 10; the last one
  // carries 2 gradients divided by 4, not by 2.
  auto data = tiny_data(10);
  auto ref = tiny_net();
  const double lr = 0.1;
  auto step = [&](int64_t from, int64_t to) {
    for (auto& p : ref->parameters()) p.mutable_grad() = torch::Tensor();
    for (int64_t i = from; i < to; ++i) {
      auto out = ref->forward(data->inputs.slice(0, i, i + 1));
      (torch::nn::functional::cross_entropy(out, data->targets.slice(0, i, i + 1)) / 4.0).backward();
    }
    torch::NoGradGuard no_grad;
    for (auto& p : ref->parameters()) p.sub_(lr * p.grad());
  };
  step(0, 4);
  step(4, 8);
  step(8, 10);
  auto net = tiny_net();
  auto r = train(net, data, 1, 4, "SGD");
  EXPECT_EQ(r.metrics["total_steps"], 3);
  EXPECT_EQ(r.metrics["total_batches"], 10);
  for (size_t i = 0; i < ref->parameters().size(); ++i)
    expect_tensors_close(net->parameters()[i], ref->parameters()[i], "param " + std::to_string(i));
}

TEST(Accumulation, WindowArithmetic) {
  AccumulationWindow w(10, 4);
  std::vector<int64_t> ends;
  for (int64_t b = 0; b < 10; ++b)
    if (w.ends_update(b)) ends.push_back(b + 1);
  EXPECT_EQ(ends, (std::vector<int64_t>{4, 8, 10}));
  EXPECT_EQ(w.updates_per_epoch(), 3);
  EXPECT_EQ(AccumulationWindow(8, 1).updates_per_epoch(), 8);
  EXPECT_THROW(AccumulationWindow(8, 0), std::invalid_argument);
}

TEST(Accumulation, CountersAndMaxStepsCountUpdates) {
  auto data = tiny_data(40);
  // N = 1: one update per batch.
  auto r1 = train(tiny_net(), data, 8, 1, "SGD", 0.0, 2);
  EXPECT_EQ(r1.metrics["total_steps"], 10);
  EXPECT_EQ(r1.metrics["total_batches"], 10);
  EXPECT_EQ(r1.metrics["effective_batch_size"], 8);
  // N = 4 with 5 batches per epoch: windows of 4 and 1 per epoch.
  auto r4 = train(tiny_net(), data, 8, 4, "SGD", 0.0, 2);
  EXPECT_EQ(r4.metrics["total_steps"], 4);
  EXPECT_EQ(r4.metrics["total_batches"], 10);
  EXPECT_EQ(r4.metrics["effective_batch_size"], 32);
  // max_steps counts updates, not batches: with N = 2 and 5 batches
  // per epoch the windows are {1,2} {3,4} {5}, so 3 updates take 5 batches...
  auto rm = train(tiny_net(), data, 8, 2, "SGD", 0.0, 100, 3);
  EXPECT_EQ(rm.metrics["total_steps"], 3);
  EXPECT_EQ(rm.metrics["total_batches"], 5);
  EXPECT_TRUE(rm.metrics["stopped_at_max_steps"].get<bool>());
  // ...and 4 updates run into the second epoch: 5 + 2 batches.
  rm = train(tiny_net(), data, 8, 2, "SGD", 0.0, 100, 4);
  EXPECT_EQ(rm.metrics["total_steps"], 4);
  EXPECT_EQ(rm.metrics["total_batches"], 7);
  EXPECT_TRUE(rm.metrics["stopped_at_max_steps"].get<bool>());
}

TEST(Accumulation, ReportedLossIsNotDividedByN) {
  // With SGD at lr 0 the weights never move, so every batch's loss is the
  // same under N = 1 and N = 4: the curves must agree.
  auto data = tiny_data(32);
  auto run = [&](int64_t n) {
    auto net = tiny_net();
    DataLoaderOptions lo;
    lo.batch_size = 8;
    lo.shuffle = false;
    DataLoader loader(data, lo);
    auto opt = tiny_optimizer(net, "SGD", 0.0);
    TrainOptions o;
    o.epochs = 1;
    o.accumulate_steps = n;
    return train_model(*net, loader, nullptr, *opt, *make_loss("CrossEntropyLoss"), nullptr, o, {}).losses[0];
  };
  EXPECT_DOUBLE_EQ(run(1), run(4));
}

TEST(Clipping, SeesTheWholeAccumulatedGradient) {
  // Clipping per micro-batch would let N clipped gradients add up to N x the
  // threshold; clipping at the update keeps the applied step's norm at the threshold.
  auto data = tiny_data(32);
  auto net = tiny_net();
  std::vector<torch::Tensor> before;
  for (auto& p : net->parameters()) before.push_back(p.detach().clone());
  const double clip = 1e-3, lr = 0.1;
  train(net, data, 8, 4, "SGD", clip);
  double step_norm = 0;
  for (size_t i = 0; i < before.size(); ++i)
    step_norm += (net->parameters()[i] - before[i]).pow(2).sum().item<double>();
  step_norm = std::sqrt(step_norm);
  EXPECT_NEAR(step_norm, lr * clip, lr * clip * 1e-3);
}

TEST(GradNorm, NonFiniteUpdatesAreSkippedThenFail) {
  auto data = tiny_data(16);
  auto d = std::make_shared<Dataset>(*data);
  d->inputs = d->inputs.clone();
  d->inputs[0][0] = std::numeric_limits<float>::quiet_NaN();  // batch 1 of every epoch is poisoned
  auto net = tiny_net();
  std::vector<std::string> warnings;
  DataLoaderOptions lo;
  lo.batch_size = 8;
  lo.shuffle = false;
  DataLoader loader(d, lo);
  auto opt = tiny_optimizer(net, "SGD", 0.1);
  TrainOptions o;
  o.epochs = 1;
  TrainHooks hooks;
  hooks.warn = [&](const std::string& w) { warnings.push_back(w); };
  auto r = train_model(*net, loader, nullptr, *opt, *make_loss("CrossEntropyLoss"), nullptr, o, hooks);
  EXPECT_EQ(r.metrics["skipped_steps"], 1);
  EXPECT_EQ(r.metrics["total_steps"], 1);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("not finite"), std::string::npos);
  for (auto& p : net->parameters()) EXPECT_TRUE(torch::isfinite(p).all().item<bool>());
  // Every batch poisoned: the run fails after max_consecutive_skips instead of producing NaN.
  d->inputs[8][0] = std::numeric_limits<float>::quiet_NaN();
  o.epochs = 10;
  o.max_consecutive_skips = 3;
  EXPECT_THROW(train_model(*net, loader, nullptr, *opt, *make_loss("CrossEntropyLoss"), nullptr, o, hooks),
               std::runtime_error);
}

TEST(Precision, Bf16RunsOnCpuAndFp16FallsBackWithAReason) {
  auto data = tiny_data(32);
  DataLoaderOptions lo;
  lo.batch_size = 8;
  DataLoader loader(data, lo);
  for (const auto& [req, used] : {std::pair{Precision::kBf16, "bf16"}, std::pair{Precision::kFp16, "fp32"}}) {
    auto net = tiny_net();
    auto opt = tiny_optimizer(net, "Adam", 0.01);
    TrainOptions o;
    o.epochs = 2;
    o.precision = req;
    std::vector<std::string> warnings;
    TrainHooks hooks;
    hooks.warn = [&](const std::string& w) { warnings.push_back(w); };
    auto r = train_model(*net, loader, &loader, *opt, *make_loss("CrossEntropyLoss"), nullptr, o, hooks);
    EXPECT_EQ(r.metrics["precision"], used);
    // Parameters stay float32 in every mode.
    for (auto& p : net->parameters()) EXPECT_EQ(p.scalar_type(), torch::kFloat);
    EXPECT_TRUE(std::isfinite(r.losses.back()));
    if (req == Precision::kFp16 && TORCH_VERSION_MAJOR < 2) {
      EXPECT_EQ(r.metrics["precision_requested"], "fp16");
      ASSERT_EQ(warnings.size(), 1u);
      EXPECT_NE(warnings[0].find("float16 on CUDA only"), std::string::npos);
      EXPECT_EQ(r.metrics["precision_reason"], warnings[0]);  // the reason rides beside the names
    } else if (req == Precision::kBf16) {
      EXPECT_FALSE(r.metrics.contains("precision_reason"));
    }
  }
}

TEST(Precision, AutocastGuardLowersMatmulsAndRestores) {
  auto a = torch::randn({4, 4}), b = torch::randn({4, 4});
  {
    AutocastGuard g(Precision::kBf16, c10::Device(c10::kCPU));
    EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kBFloat16);
  }
  EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kFloat);
  {
    AutocastGuard g(Precision::kFp32, c10::Device(c10::kCPU));
    EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kFloat);
  }
}

/// The inline mixing the loop used before util::splitmix64 existed: seed +
/// C·(epoch + 1), then splitmix64's finaliser.
uint64_t inline_epoch_mix(uint64_t seed, int64_t epoch) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(epoch + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

TEST(EpochSeed, SplitMix64OfSeedPlusCTimesEpochIsTheOldMixing) {
  // util::splitmix64 adds C itself, so splitmix64(seed + C·epoch) is the old value.
  for (uint64_t seed : {0ULL, 1ULL, 42ULL, 0x0123456789abcdefULL, ~0ULL})
    for (int64_t epoch : {0, 1, 2, 7, 1000})
      EXPECT_EQ(util::splitmix64(seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(epoch)),
                inline_epoch_mix(seed, epoch))
          << "seed " << seed << ", epoch " << epoch;
  // splitmix64's first output from state 0, as published with the algorithm.
  EXPECT_EQ(util::splitmix64(0), 0xe220a8397b1dcdafULL);
}

/// A TinyNet that records the CPU generator's seed at every forward.
class SeedRecordingNet : public TinyNet {
 public:
  torch::Tensor forward(const torch::Tensor& x) override {
    seeds.push_back(at::detail::getDefaultCPUGenerator().current_seed());
    return TinyNet::forward(x);
  }
  std::vector<uint64_t> seeds;
};

TEST(EpochSeed, EachEpochSeedsLibTorchFromSeedAndEpochAlsoWhenResumed) {
  auto data = tiny_data(8);
  DataLoader loader = tiny_loader(data, 8);  // one forward per epoch
  auto run = [&](uint64_t seed, int64_t start_epoch) {
    torch::manual_seed(3);
    auto net = std::make_shared<SeedRecordingNet>();
    auto opt = tiny_optimizer(net, "SGD", 0.1);
    TrainOptions o;
    o.epochs = 3;
    o.seed = seed;
    o.start_epoch = start_epoch;
    train_model(*net, loader, nullptr, *opt, *make_loss("CrossEntropyLoss"), nullptr, o, {});
    return net->seeds;
  };
  constexpr uint64_t kLow63 = 0x7fffffffffffffffULL;
  const auto seeds = run(42, 0);
  ASSERT_EQ(seeds.size(), 3u);
  for (int64_t e = 0; e < 3; ++e) EXPECT_EQ(seeds[e], inline_epoch_mix(42, e) & kLow63) << "epoch " << e;
  EXPECT_EQ(run(42, 2), std::vector<uint64_t>{seeds[2]});
  // By hand: seed 0, epoch 0 is splitmix64(0) with the top bit cleared.
  EXPECT_EQ(run(0, 0).front(), 0x6220a8397b1dcdafULL);
}

TEST(Cancellation, StopDropsThePendingWindowAndThrowsCancelled) {
  // 10 batches of 1, N = 4: the stop is seen before micro-batch 7, after one
  // update (batches 1-4) and with micro-batches 5 and 6 accumulated.
  auto data = tiny_data(10);
  DataLoader loader = tiny_loader(data, 1);
  auto net = tiny_net();
  auto opt = tiny_optimizer(net, "SGD", 0.1);
  TrainOptions o;
  o.epochs = 1;
  o.accumulate_steps = 4;
  int polls = 0;
  TrainHooks hooks;
  hooks.should_stop = [&] { return ++polls > 6; };
  EXPECT_THROW(train_model(*net, loader, nullptr, *opt, *make_loss("CrossEntropyLoss"), nullptr, o, hooks),
               codefy::Cancelled);
  EXPECT_EQ(polls, 7);
  auto one_update = tiny_net();
  EXPECT_EQ(train(one_update, data, 1, 4, "SGD", 0.0, 1, 1).metrics["total_steps"], 1);
  for (size_t i = 0; i < one_update->parameters().size(); ++i) {
    EXPECT_TRUE(torch::equal(net->parameters()[i], one_update->parameters()[i])) << "param " << i;
    const torch::Tensor& g = net->parameters()[i].grad();
    EXPECT_TRUE(!g.defined() || g.abs().sum().item<double>() == 0.0) << "gradients of the dropped window left behind";
  }
}

}  // namespace
}  // namespace codefy::train

namespace codefy::train {
namespace {

TEST(GradScalerInLoop, InfInOneMicroBatchSkipsTheUpdateAndTheScheduler) {
  // 4 batches, N = 2: two updates per epoch. Batch 3 is poisoned, so the
  // second window's update is skipped, the scale backs off, its gradients are
  // cleared, and the per-update scheduler does not step.
  auto data = tiny_data(16);
  auto poisoned = std::make_shared<Dataset>(*data);
  poisoned->inputs = data->inputs.clone();
  poisoned->inputs[8][0] = std::numeric_limits<float>::infinity();
  DataLoaderOptions lo;
  lo.batch_size = 4;
  lo.shuffle = false;
  DataLoader loader(poisoned, lo);
  auto net = tiny_net();
  auto opt = tiny_optimizer(net, "SGD", 0.1);
  SchedulerOptions so;
  so.type = "LinearWarmup";
  so.warmup_steps = 100;
  Scheduler sched(*opt->optimizer, so);
  TrainOptions o;
  o.epochs = 1;
  o.accumulate_steps = 2;
  o.force_grad_scaler = true;
  o.grad_scaler_state = {{"scale", 1024.0},
                         {"growth_factor", 2.0},
                         {"backoff_factor", 0.5},
                         {"growth_interval", 2000},
                         {"_growth_tracker", 0}};
  auto r = train_model(*net, loader, nullptr, *opt, *make_loss("CrossEntropyLoss"), &sched, o, {});
  EXPECT_EQ(r.metrics["total_steps"], 1);
  EXPECT_EQ(r.metrics["skipped_steps"], 1);
  EXPECT_EQ(r.grad_scaler_state["scale"], 512.0);
  EXPECT_EQ(r.grad_scaler_state["_growth_tracker"], 0);
  EXPECT_EQ(sched.state()["updates"], 1) << sched.state().dump();
  for (auto& p : net->parameters()) {
    EXPECT_TRUE(torch::isfinite(p).all().item<bool>());
    EXPECT_FALSE(p.grad().defined() && p.grad().abs().sum().item<double>() > 0) << "gradients left behind";
  }
  // Without the scaler the same update is skipped by the finite-norm check.
  auto net2 = tiny_net();
  auto opt2 = tiny_optimizer(net2, "SGD", 0.1);
  o.force_grad_scaler = false;
  auto r2 = train_model(*net2, loader, nullptr, *opt2, *make_loss("CrossEntropyLoss"), nullptr, o, {});
  EXPECT_EQ(r2.metrics["skipped_steps"], 1);
  EXPECT_TRUE(r2.grad_scaler_state.is_null());
}

TEST(GradScalerInLoop, Bf16UsesNoScaler) {
  auto data = tiny_data(16);
  DataLoaderOptions lo;
  lo.batch_size = 4;
  DataLoader loader(data, lo);
  auto net = tiny_net();
  auto opt = tiny_optimizer(net, "SGD", 0.1);
  TrainOptions o;
  o.epochs = 1;
  o.precision = Precision::kBf16;
  auto r = train_model(*net, loader, nullptr, *opt, *make_loss("CrossEntropyLoss"), nullptr, o, {});
  EXPECT_EQ(r.metrics["precision"], "bf16");
  EXPECT_TRUE(r.grad_scaler_state.is_null());
  EXPECT_FALSE(r.metrics.contains("grad_scale"));
}

/// Accuracy of `net` on `data` by hand: argmax of the outputs of the whole
/// set in one forward pass, compared with the targets.
double argmax_accuracy(TinyNet& net, const DatasetPtr& data) {
  torch::NoGradGuard no_grad;
  net.eval();
  const torch::Tensor predicted = net.forward(data->inputs).argmax(1);
  return predicted.eq(data->targets).sum().item<double>() / static_cast<double>(data->size());
}

TEST(ValidationAccuracy, MatchesArgmaxOverTheValidationSetEveryEpoch) {
  // Validation batches of 7 over 30 samples: the last batch is short, so a
  // mean of per-batch accuracies would differ from correct / total.
  auto train_data = tiny_data(64);
  auto val_data = std::make_shared<Dataset>();
  {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(29);
    val_data->inputs = torch::randn({30, 4}, gen);
    val_data->targets = torch::randint(0, 2, {30}, gen);
    val_data->num_classes = 2;
  }
  for (const std::string loss_type : {"CrossEntropyLoss", "NLLLoss"}) {
    auto net = tiny_net();
    DataLoader loader = tiny_loader(train_data, 8);
    DataLoader val_loader = tiny_loader(val_data, 7);
    auto opt = tiny_optimizer(net, "SGD", 0.5);
    TrainOptions o;
    o.epochs = 3;
    std::vector<nlohmann::json> epochs;
    std::vector<double> by_hand;
    TrainHooks hooks;
    hooks.progress = [&](const nlohmann::json& e) {
      if (e["event"] != "epoch") return;
      epochs.push_back(e);
      by_hand.push_back(argmax_accuracy(*net, val_data));  // the weights the epoch's validation saw
      net->train();
    };
    auto r = train_model(*net, loader, &val_loader, *opt, *make_loss(loss_type), nullptr, o, hooks);
    ASSERT_EQ(epochs.size(), 3u) << loss_type;
    ASSERT_EQ(r.val_accuracies.size(), 3u) << loss_type;
    for (size_t i = 0; i < epochs.size(); ++i) {
      ASSERT_TRUE(epochs[i].contains("val_accuracy")) << loss_type;
      EXPECT_DOUBLE_EQ(epochs[i]["val_accuracy"].get<double>(), by_hand[i]) << loss_type << " epoch " << i + 1;
      EXPECT_DOUBLE_EQ(r.val_accuracies[i], by_hand[i]);
    }
    EXPECT_EQ(epochs.back()["val_accuracies"].size(), 3u);
    EXPECT_EQ(r.metrics["val_accuracies"].get<std::vector<double>>(), r.val_accuracies);
    EXPECT_DOUBLE_EQ(r.metrics["final_val_accuracy"].get<double>(), by_hand.back());
  }
  // The loss is what it was before accuracy joined the pass: the mean of the batch losses.
  auto net = tiny_net();
  DataLoader val_loader = tiny_loader(val_data, 7);
  const Evaluation ev = evaluate(*net, val_loader, *make_loss("CrossEntropyLoss"), c10::Device(c10::kCPU));
  double sum = 0.0;
  {
    torch::NoGradGuard no_grad;
    for (int64_t b = 0; b < 5; ++b) {
      const auto idx = torch::arange(b * 7, std::min<int64_t>(30, (b + 1) * 7));
      sum += torch::nn::functional::cross_entropy(net->forward(val_data->inputs.index_select(0, idx)),
                                                  val_data->targets.index_select(0, idx))
                 .item<double>();
    }
  }
  EXPECT_NEAR(ev.loss, sum / 5.0, 1e-6);
  EXPECT_DOUBLE_EQ(*ev.accuracy, argmax_accuracy(*net, val_data));
}

TEST(ValidationAccuracy, AbsentForRegressionAndIgnoredTargetsAreLeftOut) {
  auto data = tiny_data(20);
  auto net = tiny_net();
  DataLoader loader = tiny_loader(data, 5);
  // A regression loss has no accuracy: none in the event, an empty list and null in the metrics.
  auto reg = std::make_shared<Dataset>();
  reg->inputs = data->inputs;
  reg->targets = torch::randn({20, 2});
  DataLoader reg_loader = tiny_loader(reg, 5);
  auto opt = tiny_optimizer(net, "SGD", 0.1);
  TrainOptions o;
  o.epochs = 1;
  bool saw_accuracy = false;
  TrainHooks hooks;
  hooks.progress = [&](const nlohmann::json& e) { saw_accuracy |= e.contains("val_accuracy"); };
  auto r = train_model(*net, reg_loader, &reg_loader, *opt, *make_loss("MSELoss"), nullptr, o, hooks);
  EXPECT_FALSE(saw_accuracy);
  EXPECT_TRUE(r.val_accuracies.empty());
  EXPECT_TRUE(r.metrics["val_accuracies"].empty());
  EXPECT_TRUE(r.metrics["final_val_accuracy"].is_null());
  EXPECT_FALSE(evaluate(*net, reg_loader, *make_loss("MSELoss"), c10::Device(c10::kCPU)).accuracy.has_value());

  // Targets at ignore_index (-100) count neither as right nor as wrong.
  auto ignored = std::make_shared<Dataset>();
  ignored->inputs = data->inputs;
  ignored->targets = data->targets.clone();
  ignored->targets.slice(0, 0, 10).fill_(-100);
  ignored->num_classes = 2;
  DataLoader ignored_loader = tiny_loader(ignored, 5);
  auto rest = std::make_shared<Dataset>();
  rest->inputs = data->inputs.slice(0, 10);
  rest->targets = data->targets.slice(0, 10);
  const Evaluation ev = evaluate(*net, ignored_loader, *make_loss("CrossEntropyLoss"), c10::Device(c10::kCPU));
  ASSERT_TRUE(ev.accuracy.has_value());
  EXPECT_DOUBLE_EQ(*ev.accuracy, argmax_accuracy(*net, rest));
}

}  // namespace
}  // namespace codefy::train

namespace codefy::train {
namespace {

/// 32 → 64 → 64 → 4 with ReLUs: every matrix product runs in bf16 under autocast.
class Mlp : public Model {
 public:
  Mlp() : Model("Mlp") {
    a_ = register_module("a", torch::nn::Linear(32, 64));
    b_ = register_module("b", torch::nn::Linear(64, 64));
    c_ = register_module("c", torch::nn::Linear(64, 4));
  }
  torch::Tensor forward(const torch::Tensor& x) override { return c_(torch::relu(b_(torch::relu(a_(x))))); }

 private:
  torch::nn::Linear a_{nullptr}, b_{nullptr}, c_{nullptr};
};

/// Classes from a fixed random linear teacher over noisy inputs: learnable, not trivially.
DatasetPtr teacher_data(int64_t n, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto teacher_gen = at::make_generator<at::CPUGeneratorImpl>(99);
  const torch::Tensor teacher = torch::randn({32, 4}, teacher_gen);
  auto d = std::make_shared<Dataset>();
  d->inputs = torch::randn({n, 32}, gen);
  d->targets = (torch::matmul(d->inputs, teacher) + 0.5 * torch::randn({n, 4}, gen)).argmax(1);
  d->num_classes = 4;
  return d;
}

TrainResult train_in(Precision precision) {
  DataLoaderOptions lo;
  lo.batch_size = 64;
  lo.shuffle = true;
  lo.seed = 5;
  DataLoader train(teacher_data(2048, 1), lo);
  DataLoaderOptions vo;
  vo.batch_size = 256;
  DataLoader val(teacher_data(512, 2), vo);
  torch::manual_seed(4);
  Mlp net;
  OptimizerHandle opt;
  opt.options.type = opt.type = "Adam";
  opt.options.lr = 1e-3;
  opt.optimizer = make_optimizer(net.parameters(), opt.options);
  TrainOptions o;
  o.epochs = 8;
  o.precision = precision;
  o.seed = 5;
  return train_model(net, train, &val, opt, *make_loss("CrossEntropyLoss"), nullptr, o, {});
}

// bf16 rounds every matrix product's inputs to 8 significant bits, so its
// curve is not fp32's to the digit; the claim is that it trains the same:
// each epoch's mean loss within 2% of fp32's (measured: 0.5% at most), the validation accuracy within
// 2 points at the end, and both curves falling by more than half.
TEST(Precision, Bf16TrainsAlongTheFp32Curve) {
  if (!check_precision(Precision::kBf16, c10::Device(c10::kCPU)).warning.empty())
    GTEST_SKIP() << "this LibTorch has no CPU bf16 autocast";
  const TrainResult fp32 = train_in(Precision::kFp32), bf16 = train_in(Precision::kBf16);
  ASSERT_EQ(fp32.losses.size(), 8u);
  ASSERT_EQ(bf16.losses.size(), 8u);
  for (size_t e = 0; e < fp32.losses.size(); ++e) {
    std::cout << "[ curve    ] epoch " << e + 1 << ": fp32 " << fp32.losses[e] << ", bf16 " << bf16.losses[e] << "\n";
    EXPECT_NEAR(bf16.losses[e], fp32.losses[e], 0.02 * fp32.losses[e]) << "epoch " << e + 1;
  }
  EXPECT_LT(fp32.losses.back(), 0.5 * fp32.losses.front());
  EXPECT_LT(bf16.losses.back(), 0.5 * bf16.losses.front());
  std::cout << "[ curve    ] validation accuracy: fp32 " << fp32.val_accuracies.back() << ", bf16 "
            << bf16.val_accuracies.back() << "\n";
  EXPECT_NEAR(bf16.val_accuracies.back(), fp32.val_accuracies.back(), 0.02);
  // Not the same run twice.
  EXPECT_NE(bf16.losses.back(), fp32.losses.back());
}

// Every epoch sends its own figures; the whole history (what CodefyUI's clients chart) rides on the
// first and the last epoch's event and otherwise at most once per progress interval, so a fast run's
// messages stop growing with its length.
TEST(ProgressEvents, EveryEpochReportsButTheHistoryOnlyAsOftenAsTheProgressInterval) {
  auto data = tiny_data(20);
  for (const double interval : {3600.0, 0.0}) {
    auto net = tiny_net();
    DataLoader loader = tiny_loader(data, 10);
    auto opt = tiny_optimizer(net, "SGD", 0.1);
    TrainOptions o;
    o.epochs = 6;
    o.progress_interval_s = interval;
    std::vector<nlohmann::json> epochs;
    TrainHooks hooks;
    hooks.progress = [&](const nlohmann::json& e) {
      if (e["event"] == "epoch") epochs.push_back(e);
    };
    auto r = train_model(*net, loader, &loader, *opt, *make_loss("CrossEntropyLoss"), nullptr, o, hooks);
    ASSERT_EQ(epochs.size(), 6u);
    for (size_t i = 0; i < epochs.size(); ++i) {
      EXPECT_EQ(epochs[i]["epoch"], i + 1);
      EXPECT_DOUBLE_EQ(epochs[i]["loss"].get<double>(), r.losses[i]);
      EXPECT_DOUBLE_EQ(epochs[i]["val_loss"].get<double>(), r.val_losses[i]);
      const bool history = interval == 0.0 || i == 0 || i + 1 == epochs.size();
      EXPECT_EQ(epochs[i].contains("losses"), history) << "interval " << interval << ", epoch " << i + 1;
      EXPECT_EQ(epochs[i].contains("val_losses"), history) << "interval " << interval << ", epoch " << i + 1;
      EXPECT_EQ(epochs[i].contains("val_accuracies"), history) << "interval " << interval << ", epoch " << i + 1;
      if (history) {
        const auto losses = epochs[i]["losses"].get<std::vector<double>>();
        EXPECT_EQ(losses, std::vector<double>(r.losses.begin(), r.losses.begin() + static_cast<std::ptrdiff_t>(i + 1)));
      }
    }
  }
}

}  // namespace
}  // namespace codefy::train
