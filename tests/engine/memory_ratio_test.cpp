// Peak training memory, compared across precisions and batch shapes: bf16
// keeps about half of fp32's activations, and batch 8 x accumulate 4 holds
// what batch 8 holds, not what batch 32 does. Byte counts come from the
// counting allocator (deterministic, so these are tests and not benchmarks).
// Each model is chosen so activations are most of its training peak, which is
// what the two claims are about: weights, gradients and Adam's state stay in
// fp32 and do not shrink with the batch.
#include "../common/test_support.h"
#include "../model/spec_builder.h"
#include "device/memory.h"

#include <gtest/gtest.h>

#include <iostream>

namespace codefy::testing {
namespace {

struct Shape {
  nlohmann::json layers;  // a v2 layer spec
  int64_t features;       // ToyDataset's n_features (the model's flat input)
  int64_t micro_batch;    // the small batch; the large one is 4x
};

/// Training peak (peak minus what was live when training started) of 3
/// optimizer updates of `shape`'s model with Adam.
int64_t training_peak(const Shape& shape, int64_t batch, int64_t accumulate, const std::string& precision) {
  nlohmann::json g = mlp_training_graph(
      "memory ratios", 1, 1, 1,
      {{"n_samples", 4 * 4 * shape.micro_batch}, {"n_features", shape.features}, {"n_classes", 10}},
      {{"batch_size", batch}, {"shuffle", true}}, {{"type", "Adam"}, {"lr", 1e-3}},
      {{"epochs", 1}, {"max_steps", 3}, {"device", "cpu"}, {"precision", precision}, {"accumulate_steps", accumulate}});
  set_param(g, "mlp", "layers", shape.layers.dump());
  const RunResult r = run_json(g);
  const auto& m = std::get<nlohmann::json>(r.outputs.at("train").at("metrics"));
  EXPECT_EQ(m["precision"], precision);
  EXPECT_EQ(m["total_steps"], 3);
  return m["peak_memory_bytes"]["cpu"].get<int64_t>() - m["start_memory_bytes"]["cpu"].get<int64_t>();
}

void expect_ratios(const Shape& shape) {
  ASSERT_TRUE(device::install_counting_allocator());
  const int64_t b = shape.micro_batch;
  const double fp32 = static_cast<double>(training_peak(shape, 4 * b, 1, "fp32"));
  const double bf16 = static_cast<double>(training_peak(shape, 4 * b, 1, "bf16"));
  const double small = static_cast<double>(training_peak(shape, b, 1, "fp32"));
  const double accumulated = static_cast<double>(training_peak(shape, b, 4, "fp32"));
  ASSERT_GT(fp32, 0);
  ASSERT_GT(small, 0);
  std::cout << "bf16/fp32 " << bf16 / fp32 << ", " << b << "x4/" << 4 * b << " " << accumulated / fp32 << ", " << b
            << "x4/" << b << " " << accumulated / small << "\n";
  EXPECT_LE(bf16 / fp32, 0.6) << "bf16 " << bf16 << " B against fp32 " << fp32 << " B";
  EXPECT_LE(accumulated / fp32, 0.3) << "batch " << b << " x 4: " << accumulated << " B, batch " << 4 * b << ": "
                                     << fp32 << " B";
  EXPECT_LE(accumulated / small, 1.05) << "batch " << b << " x 4: " << accumulated << " B, batch " << b << ": " << small
                                       << " B";
}

TEST(MemoryRatios, Cnn_RPREC_RACC1_Bf16HalvesAndAccumulationHoldsTheMicroBatch) {
  const nlohmann::json conv = {{"in_channels", 32}, {"out_channels", 32}, {"kernel_size", 3}, {"padding", 1}};
  nlohmann::json first = conv;
  first["in_channels"] = 3;
  expect_ratios({model::Spec()
                     .layer("r", "Reshape", {{"shape", "3,48,48"}})
                     .layer("c1", "Conv2d", first)
                     .layer("a1", "ReLU")
                     .layer("c2", "Conv2d", conv)
                     .layer("a2", "ReLU")
                     .layer("p", "AdaptiveAvgPool2d", {{"output_size", 1}})
                     .layer("f", "Flatten")
                     .layer("fc", "Linear", {{"in_features", 32}, {"out_features", 10}})
                     .chain({"r", "c1", "a1", "c2", "a2", "p", "f", "fc"})
                     .build(),
                 3 * 48 * 48, 8});
}

TEST(MemoryRatios, Mlp_RPREC_RACC1_Bf16HalvesAndAccumulationHoldsTheMicroBatch) {
  model::Spec spec;
  std::vector<std::string> chain;
  // Six hidden layers on a narrow input: the fp32 input batch (and its bf16
  // copy for the first layer's weight gradient) does not shrink in bf16.
  int64_t in = 32;
  for (int i = 1; i <= 6; ++i) {
    const std::string n = std::to_string(i);
    spec.layer("l" + n, "Linear", {{"in_features", in}, {"out_features", 128}}).layer("a" + n, "ReLU");
    chain.insert(chain.end(), {"l" + n, "a" + n});
    in = 128;
  }
  spec.layer("head", "Linear", {{"in_features", 128}, {"out_features", 10}});
  chain.push_back("head");
  expect_ratios({spec.chain(chain).build(), 32, 2048});
}

TEST(MemoryRatios, TransformerEncoder_RPREC_RACC1_Bf16HalvesAndAccumulationHoldsTheMicroBatch) {
  expect_ratios({model::Spec()
                     .layer("r", "Reshape", {{"shape", "32,16"}})
                     .layer("embed", "Linear", {{"in_features", 16}, {"out_features", 64}})
                     .layer("enc", "TransformerEncoder",
                            {{"d_model", 64}, {"nhead", 4}, {"num_layers", 2}, {"dim_feedforward", 256}})
                     .layer("f", "Flatten")
                     .layer("head", "Linear", {{"in_features", 32 * 64}, {"out_features", 10}})
                     .chain({"r", "embed", "enc", "f", "head"})
                     .build(),
                 32 * 16, 32});
}

}  // namespace
}  // namespace codefy::testing
