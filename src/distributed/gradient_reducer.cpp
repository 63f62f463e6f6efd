#include "distributed/gradient_reducer.h"

#include "distributed/process_group.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>

namespace codefy::distributed {

BucketedGradientReducer::BucketedGradientReducer(ProcessGroup& group, int64_t bucket_bytes)
    : group_(group), bucket_bytes_(std::max<int64_t>(bucket_bytes, 1)) {}

void BucketedGradientReducer::reduce(train::GradBuffer& grads) {
  const auto start = std::chrono::steady_clock::now();
  ++updates_;
  group_.set_activity("all-reducing the gradients of update " + std::to_string(updates_));
  // Launch every bucket, then wait for all: Gloo works on them in parallel.
  std::vector<std::shared_ptr<ProcessGroup::Pending>> pending;
  int64_t bytes = 0;
  for (const auto& buffer : grads.buffers()) {
    const int64_t per_bucket = std::max<int64_t>(bucket_bytes_ / static_cast<int64_t>(buffer.element_size()), 1);
    for (int64_t begin = 0; begin < buffer.numel(); begin += per_bucket) {
      const at::Tensor bucket = buffer.slice(0, begin, std::min(begin + per_bucket, buffer.numel()));
      pending.push_back(group_.all_reduce_async(bucket));
      bytes += bucket.numel() * static_cast<int64_t>(buffer.element_size());
    }
  }
  for (const auto& p : pending) group_.wait(p, "the gradient all-reduce of update " + std::to_string(updates_));
  torch::NoGradGuard no_grad;
  for (const auto& buffer : grads.buffers()) buffer.div_(group_.world_size());
  group_.count_reduction(static_cast<int64_t>(pending.size()), bytes,
                         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace codefy::distributed
