// Augmentation: each step against what it must do to a known image, draws
// that depend on (seed, epoch, sample index) only, and batches prepared
// ahead by worker threads equal to the ones cut on the training thread.
#include "train/augment.h"
#include "train/data.h"
#include "train/prefetch.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace codefy::train {
namespace {

Augmentation chain(const nlohmann::json& steps) { return Augmentation::from_json({{"steps", steps}}); }

/// A [1, H, W] image whose pixels are all different: 1, 2, 3, ...
torch::Tensor ramp(int64_t h, int64_t w) { return torch::arange(1, h * w + 1, torch::kFloat32).view({1, h, w}); }

TEST(Augment, RandomCropIsAWindowOfThePaddedImage) {
  const auto x = ramp(6, 6);
  const auto a = chain({{{"type", "RandomCrop"}, {"size", 6}, {"padding", 2}, {"padding_mode", "constant"}}});
  const auto padded = torch::constant_pad_nd(x, {2, 2, 2, 2}, 0);
  std::set<std::pair<int64_t, int64_t>> offsets;
  for (uint64_t draws = 0; draws < 200; ++draws) {
    const auto y = a.apply(x, draws);
    ASSERT_EQ(y.sizes(), x.sizes());
    bool found = false;
    for (int64_t i = 0; i <= 4 && !found; ++i)
      for (int64_t j = 0; j <= 4 && !found; ++j)
        if (torch::equal(y, padded.narrow(1, i, 6).narrow(2, j, 6))) {
          found = true;
          offsets.insert({i, j});
        }
    ASSERT_TRUE(found) << "crop " << draws << " is no window of the padded image";
  }
  EXPECT_EQ(offsets.size(), 25u) << "every one of the 5 x 5 offsets is drawn";
  // No padding, the full size: the image itself.
  EXPECT_TRUE(torch::equal(chain({{{"type", "RandomCrop"}, {"size", 6}, {"padding", 0}}}).apply(x, 7), x));
}

TEST(Augment, FlipRotationAndNormalizeDoWhatTheySay) {
  const auto x = ramp(5, 5);
  EXPECT_TRUE(torch::equal(chain({{{"type", "RandomHorizontalFlip"}, {"p", 1.0}}}).apply(x, 3), x.flip({-1})));
  EXPECT_TRUE(torch::equal(chain({{{"type", "RandomHorizontalFlip"}, {"p", 0.0}}}).apply(x, 3), x));
  // A rotation about the centre keeps the centre pixel; corners it empties take the fill.
  const auto rotate = chain({{{"type", "RandomRotation"}, {"degrees", 90.0}, {"fill", -1.0}}});
  int filled = 0;
  for (uint64_t draws = 0; draws < 50; ++draws) {
    const auto y = rotate.apply(x, draws);
    EXPECT_EQ(y[0][2][2].item<float>(), x[0][2][2].item<float>());
    if (y[0][0][0].item<float>() == -1.0f) ++filled;
  }
  EXPECT_GT(filled, 0);
  EXPECT_TRUE(torch::equal(chain({{{"type", "RandomRotation"}, {"degrees", 0.0}}}).apply(x, 1), x));
  // Per channel: (x - mean) / std; one value broadcasts.
  const auto rgb = torch::rand({3, 4, 4});
  const auto n = chain({{{"type", "NormalizeTransform"}, {"mean", {0.1, 0.2, 0.3}}, {"std", {0.5, 0.25, 2.0}}}});
  EXPECT_TRUE(torch::allclose(n.apply(rgb, 0)[1], (rgb[1] - 0.2) / 0.25));
  try {
    chain({{{"type", "NormalizeTransform"}, {"mean", {0.1, 0.2}}, {"std", {0.5, 0.5}}}}).apply(rgb, 0);
    ADD_FAILURE() << "two means for three channels were taken";
  } catch (const AugmentationError& e) {
    EXPECT_NE(std::string(e.what()).find("step 1 (NormalizeTransform): mean has 2 values for 3 channel(s)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Augment, MalformedChainsAreRefusedNamingTheStep) {
  for (const auto& [steps, says] : std::vector<std::pair<nlohmann::json, std::string>>{
           {{{{"type", "RandomCrop"}, {"size", 0}}}, "step 1 (RandomCrop): size must be >= 1"},
           {{{{"type", "ToTensorTransform"}}, {{"type", "RandomCrop"}, {"size", 4}, {"padding_mode", "symmetric"}}},
            "step 2 (RandomCrop): padding_mode \"symmetric\""},
           {{{{"type", "NormalizeTransform"}, {"mean", {0.5}}, {"std", {0.0}}}}, "std cannot contain 0"},
           {{{{"type", "Blur"}}}, "step 1 (Blur): not a transform Codefy knows"}}) {
    try {
      chain(steps);
      ADD_FAILURE() << steps.dump() << " was taken";
    } catch (const AugmentationError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  }
  // A crop larger than the padded image says both sizes.
  try {
    chain({{{"type", "RandomCrop"}, {"size", 40}, {"padding", 4}}}).apply(ramp(28, 28), 0);
    ADD_FAILURE();
  } catch (const AugmentationError& e) {
    EXPECT_NE(std::string(e.what()).find("a 40x40 crop does not fit in 28x28 images padded by 4"), std::string::npos)
        << e.what();
  }
}

/// 40 images [1, 8, 8] with their index as label, augmented by crop + flip.
DatasetPtr augmented_images() {
  auto d = std::make_shared<Dataset>();
  d->inputs = torch::rand({40, 1, 8, 8}, at::make_generator<at::CPUGeneratorImpl>(5));
  d->targets = torch::arange(40);
  d->num_classes = 40;
  d->augment = std::make_shared<const Augmentation>(
      chain({{{"type", "RandomCrop"}, {"size", 8}, {"padding", 2}}, {{"type", "RandomHorizontalFlip"}, {"p", 0.5}}}));
  return d;
}

TEST(Augment, DrawsDependOnSeedEpochAndSampleIndexOnly) {
  const auto data = augmented_images();
  DataLoaderOptions o;
  o.batch_size = 8;
  o.seed = 17;
  const DataLoader loader(data, o);
  const auto order = loader.epoch_order(2);
  const Batch a = loader.batch(order, 1, 2), again = loader.batch(order, 1, 2);
  EXPECT_TRUE(torch::equal(a.inputs, again.inputs));
  EXPECT_FALSE(torch::equal(a.inputs, loader.batch(order, 1, 3).inputs)) << "another epoch, the same draws";
  // The same sample in another position of another batch is augmented alike.
  const int64_t sample = a.targets[0].item<int64_t>();
  const auto unshuffled = torch::arange(40);
  const Batch in_order = loader.batch(unshuffled, sample / 8, 2);
  EXPECT_TRUE(torch::equal(a.inputs[0], in_order.inputs[sample % 8]));
  // The loader's seed matters.
  o.seed = 18;
  EXPECT_FALSE(torch::equal(a.inputs, DataLoader(data, o).batch(order, 1, 2).inputs));
}

TEST(Prefetch, WorkersHandOutTheBatchesTheTrainingThreadWouldCut) {
  const auto data = augmented_images();
  DataLoaderOptions o;
  o.batch_size = 3;  // 14 batches, the last one short
  o.seed = 9;
  const DataLoader loader(data, o);
  const auto order = loader.epoch_order(1);
  for (int64_t workers : {1, 2, 3}) {
    BatchPrefetcher ahead(loader, order, 1, workers);
    for (int64_t b = 0; b < loader.num_batches(); ++b) {
      const Batch expected = loader.batch(order, b, 1), got = ahead.next();
      ASSERT_TRUE(torch::equal(got.inputs, expected.inputs)) << workers << " workers, batch " << b;
      ASSERT_TRUE(torch::equal(got.targets, expected.targets)) << workers << " workers, batch " << b;
    }
  }
  // How far ahead the workers run changes nothing in what they hand out;
  // nor does pin_memory (pinned only where LibTorch has CUDA).
  for (int64_t factor : {1, 4}) {
    DataLoaderOptions f = o;
    f.prefetch_factor = factor;
    f.pin_memory = true;
    const DataLoader far(data, f);
    BatchPrefetcher ahead(far, order, 1, 2);
    for (int64_t b = 0; b < far.num_batches(); ++b) {
      const Batch expected = loader.batch(order, b, 1), got = ahead.next();
      ASSERT_TRUE(torch::equal(got.inputs, expected.inputs)) << "prefetch_factor " << factor << ", batch " << b;
      ASSERT_EQ(got.inputs.is_pinned(), pinning_available());
    }
  }
  // Stopped after one batch of the epoch (a Stop mid-epoch): it joins its workers.
  BatchPrefetcher stopped(loader, order, 1, 2);
  stopped.next();
}

}  // namespace
}  // namespace codefy::train
