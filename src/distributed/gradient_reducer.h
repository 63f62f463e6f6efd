// DDP's gradient all-reduce over the trainer's flat gradient buffer.
#pragma once

#include "train/update.h"

#include <cstdint>

namespace codefy::distributed {

class ProcessGroup;

/// Averages the window's gradients over the ranks once per update: each flat
/// gradient buffer is cut into buckets of at most `bucket_bytes`, every
/// bucket's all-reduce is launched, then all are awaited and the buffers
/// divided by the world size. It runs after the window's last backward pass
/// (the trainer's reduce() seam), so the first N-1 micro-batches of a window
/// never communicate (DDP's no_sync); it does not overlap the backward pass:
/// on the CPU both compete for the same cores, and Gloo's ring over loopback
/// costs little next to the backward pass (bench/RESULTS.md).
class BucketedGradientReducer : public train::GradientReducer {
 public:
  BucketedGradientReducer(ProcessGroup& group, int64_t bucket_bytes);
  void reduce(train::GradBuffer& grads) override;

 private:
  ProcessGroup& group_;
  int64_t bucket_bytes_;
  int64_t updates_ = 0;
};

}  // namespace codefy::distributed
