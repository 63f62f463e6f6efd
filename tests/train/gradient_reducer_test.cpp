// The seam where data-parallel training plugs in, through the whole loop: the
// reducer is told which micro-batch ends each window, reduces once per update
// (short windows and skipped updates included), sees the window's summed,
// still-scaled gradients, and what it does is what the update applies.
#include "tiny_training.h"
#include "train/builders.h"
#include "train/trainer.h"
#include "train/update.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <string>

namespace codefy::train {
namespace {

using namespace fixtures;

/// Logs the calls ("m" for a micro-batch, "M" for the last of its window,
/// "R" for reduce) and keeps copies of the gradients each reduce() saw.
class RecordingReducer : public GradientReducer {
 public:
  void begin_micro_batch(bool last_in_window) override { log += last_in_window ? "M" : "m"; }
  void reduce(GradBuffer& grads) override {
    log += "R";
    std::vector<torch::Tensor> g;
    for (const auto& p : grads.parameters()) g.push_back(p.grad().clone());
    seen.push_back(std::move(g));
  }
  std::string log;
  std::vector<std::vector<torch::Tensor>> seen;
};

/// Halves every gradient, as averaging over two processes would halve a sum.
class GradientHalver : public GradientReducer {
 public:
  void reduce(GradBuffer& grads) override {
    for (const auto& buffer : grads.buffers()) buffer.mul_(0.5);
  }
};

/// Batches of 1 with N = 4, SGD at lr 0.1, the given reducer and loss.
TrainResult train_with(const std::shared_ptr<TinyNet>& net, const DatasetPtr& data, int64_t epochs,
                       std::shared_ptr<GradientReducer> reducer, const LossFunction& loss, bool grad_scaler = false) {
  DataLoader loader = tiny_loader(data, 1);
  auto opt = tiny_optimizer(net, "SGD", 0.1);
  TrainOptions o;
  o.epochs = epochs;
  o.accumulate_steps = 4;
  o.gradient_reducer = std::move(reducer);
  o.force_grad_scaler = grad_scaler;
  o.grad_scaler_state = {{"scale", 1024.0},
                         {"growth_factor", 2.0},
                         {"backoff_factor", 0.5},
                         {"growth_interval", 2000},
                         {"_growth_tracker", 0}};
  return train_model(*net, loader, nullptr, *opt, loss, nullptr, o, {});
}

TEST(GradientReducer, ReducesOncePerUpdateAndKnowsTheLastMicroBatchOfEachWindow) {
  // 10 batches, N = 4: windows of 4, 4 and a short 2 in each of 2 epochs.
  auto reducer = std::make_shared<RecordingReducer>();
  auto r = train_with(tiny_net(), tiny_data(10), 2, reducer, *make_loss("CrossEntropyLoss"));
  const std::string epoch =
      "mmmMR"
      "mmmMR"
      "mMR";
  EXPECT_EQ(reducer->log, epoch + epoch);
  EXPECT_EQ(reducer->seen.size(), 6u);
  EXPECT_EQ(r.metrics["total_steps"], 6);

  // A skipped update is still reduced (every process must take part), once.
  auto poisoned = std::make_shared<Dataset>(*tiny_data(10));
  poisoned->inputs = poisoned->inputs.clone();
  poisoned->inputs[5][0] = std::numeric_limits<float>::quiet_NaN();  // the second window
  auto counting = std::make_shared<RecordingReducer>();
  auto rs = train_with(tiny_net(), poisoned, 1, counting, *make_loss("CrossEntropyLoss"));
  EXPECT_EQ(rs.metrics["total_steps"], 2);
  EXPECT_EQ(rs.metrics["skipped_steps"], 1);
  EXPECT_EQ(counting->seen.size(), 3u);
}

TEST(GradientReducer, SeesTheWindowsSummedGradientsBeforeUnscaling) {
  // By hand: the first window's gradient is Σ over samples 0-3 of grad(loss_i / 4) at the initial weights.
  auto data = tiny_data(10);
  auto ref = tiny_net();
  for (int64_t i = 0; i < 4; ++i)
    (torch::nn::functional::cross_entropy(ref->forward(data->inputs.slice(0, i, i + 1)),
                                          data->targets.slice(0, i, i + 1)) /
     4.0)
        .backward();
  for (const bool grad_scaler : {false, true}) {
    SCOPED_TRACE(grad_scaler ? "with a gradient scaler at 1024" : "fp32");
    auto reducer = std::make_shared<RecordingReducer>();
    train_with(tiny_net(), data, 1, reducer, *make_loss("CrossEntropyLoss"), grad_scaler);
    ASSERT_EQ(reducer->seen.size(), 3u);
    const double scale = grad_scaler ? 1024.0 : 1.0;
    for (size_t i = 0; i < ref->parameters().size(); ++i)
      expect_tensors_close(reducer->seen[0][i], ref->parameters()[i].grad() * scale, "param " + std::to_string(i));
  }
}

TEST(GradientReducer, HalvingTheGradientsIsHalvingTheLoss) {
  auto data = tiny_data(10);
  auto ce = make_loss("CrossEntropyLoss");
  LossFunction half_ce{"HalfCrossEntropy",
                       [ce](const torch::Tensor& p, const torch::Tensor& t) { return (*ce)(p, t) * 0.5; }};

  // By hand: per window, SGD on Σ grad(0.5 · loss_i / 4), the short last window divided by 4 too.
  auto ref = tiny_net();
  auto window = [&](int64_t from, int64_t to) {
    for (auto& p : ref->parameters()) p.mutable_grad() = torch::Tensor();
    for (int64_t i = from; i < to; ++i)
      (torch::nn::functional::cross_entropy(ref->forward(data->inputs.slice(0, i, i + 1)),
                                            data->targets.slice(0, i, i + 1)) *
       0.5 / 4.0)
          .backward();
    torch::NoGradGuard no_grad;
    for (auto& p : ref->parameters()) p.sub_(0.1 * p.grad());
  };
  for (int epoch = 0; epoch < 2; ++epoch) {
    window(0, 4);
    window(4, 8);
    window(8, 10);
  }

  for (const bool grad_scaler : {false, true}) {
    SCOPED_TRACE(grad_scaler ? "with a gradient scaler at 1024" : "fp32");
    auto halved = tiny_net(), half_loss = tiny_net();
    train_with(halved, data, 2, std::make_shared<GradientHalver>(), *ce, grad_scaler);
    train_with(half_loss, data, 2, nullptr, half_ce, grad_scaler);
    for (size_t i = 0; i < ref->parameters().size(); ++i) {
      expect_tensors_close(halved->parameters()[i], half_loss->parameters()[i],
                           "vs half loss, param " + std::to_string(i));
      expect_tensors_close(halved->parameters()[i], ref->parameters()[i], "vs by hand, param " + std::to_string(i));
    }
  }
}

}  // namespace
}  // namespace codefy::train
