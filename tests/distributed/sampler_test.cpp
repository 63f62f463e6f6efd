// DistributedSampler's rules in the data loader: every rank the same (seed,
// epoch) order, padded to a multiple of the world, rank r every world-th.
#include "../common/test_util.h"
#include "train/data.h"

#include <torch/torch.h>

#include <map>

namespace codefy::train {
namespace {

DatasetPtr numbered(int64_t n) {
  auto d = std::make_shared<Dataset>();
  d->name = "numbered";
  d->inputs = torch::arange(n, torch::kFloat).unsqueeze(1);
  d->targets = torch::zeros({n}, torch::kLong);
  return d;
}

std::vector<int64_t> as_vector(const torch::Tensor& t) {
  const torch::Tensor c = t.contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

TEST(DistributedSampler, ShardsInterleaveTheSameOrder) {
  DataLoaderOptions o;
  o.batch_size = 4;
  o.seed = 7;
  const DataLoader whole(numbered(10), o);
  const auto full = as_vector(whole.epoch_order(3));
  // PyTorch's DistributedSampler, written out: pad with the order's start to
  // a multiple of 3 (12), rank r takes positions r, r+3, ...
  std::vector<int64_t> padded = full;
  padded.push_back(full[0]);
  padded.push_back(full[1]);
  for (int64_t r = 0; r < 3; ++r) {
    o.num_replicas = 3;
    o.rank = r;
    const DataLoader shard(numbered(10), o);
    EXPECT_EQ(shard.num_samples(), 4);
    EXPECT_EQ(shard.num_batches(), 1);
    std::vector<int64_t> expected;
    for (size_t i = static_cast<size_t>(r); i < padded.size(); i += 3) expected.push_back(padded[i]);
    EXPECT_EQ(as_vector(shard.epoch_order(3)), expected) << "rank " << r;
    // The batch holds those samples (inputs are the sample numbers).
    const Batch b = shard.batch(shard.epoch_order(3), 0);
    EXPECT_EQ(as_vector(b.inputs.squeeze(1).to(torch::kLong)), expected);
  }
}

TEST(DistributedSampler, TwoRanksOfBatch16SeeOneBatchOf32) {
  DataLoaderOptions one;
  one.batch_size = 32;
  one.seed = 11;
  const DataLoader single(numbered(96), one);
  const torch::Tensor order = single.epoch_order(1);
  for (int64_t b = 0; b < single.num_batches(); ++b) {
    auto expected = as_vector(single.batch(order, b).inputs.squeeze(1).to(torch::kLong));
    std::vector<int64_t> got;
    for (int64_t r = 0; r < 2; ++r) {
      DataLoaderOptions o = one;
      o.batch_size = 16;
      o.num_replicas = 2;
      o.rank = r;
      const DataLoader shard(numbered(96), o);
      ASSERT_EQ(shard.num_batches(), single.num_batches());
      const auto part = as_vector(shard.batch(shard.epoch_order(1), b).inputs.squeeze(1).to(torch::kLong));
      got.insert(got.end(), part.begin(), part.end());
    }
    std::sort(expected.begin(), expected.end());
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, expected) << "batch " << b;
  }
}

TEST(DistributedSampler, PadsADatasetSmallerThanTheWorld) {
  DataLoaderOptions o;
  o.shuffle = false;
  o.batch_size = 1;
  o.num_replicas = 5;
  std::map<int64_t, int> seen;
  for (int64_t r = 0; r < 5; ++r) {
    o.rank = r;
    const DataLoader shard(numbered(2), o);
    ASSERT_EQ(shard.num_samples(), 1);
    seen[as_vector(shard.epoch_order(0))[0]]++;
  }
  EXPECT_EQ(seen[0], 3);  // 0 1 | 0 1 0: the order repeated
  EXPECT_EQ(seen[1], 2);
}

TEST(DistributedSampler, RejectsARankOutsideTheWorld) {
  DataLoaderOptions o;
  o.num_replicas = 2;
  o.rank = 2;
  EXPECT_THROW(DataLoader(numbered(4), o), std::invalid_argument);
}

}  // namespace
}  // namespace codefy::train
