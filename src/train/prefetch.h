// Batches of one epoch prepared ahead of training on worker threads
// (DataLoader num_workers): the same batches, in the same order, as the
// training thread would cut itself.
#pragma once

#include "train/data.h"

#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace codefy::train {

class BatchPrefetcher {
 public:
  /// Starts `workers` threads on the batches of `order` (epoch `epoch` of
  /// `loader`): worker w cuts batches w, w + workers, ...; at most
  /// prefetch_factor x workers batches (the loader's option) are ready or in
  /// the making ahead of the one taken.
  BatchPrefetcher(const DataLoader& loader, torch::Tensor order, int64_t epoch, int64_t workers);
  /// Stops the workers (a batch being cut is finished and dropped) and joins them.
  ~BatchPrefetcher();
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  /// The next batch in order; waits for it. Rethrows what cutting it threw.
  Batch next();

 private:
  struct Slot {
    std::optional<Batch> batch;
    std::exception_ptr error;
  };
  void work(int64_t worker);

  const DataLoader& loader_;
  torch::Tensor order_;
  int64_t epoch_, workers_, batches_, depth_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<int64_t, Slot> ready_;  ///< by batch index
  int64_t taken_ = 0;              ///< batches handed out so far
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace codefy::train
