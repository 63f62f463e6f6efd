#include "train/prefetch.h"

#include <algorithm>
#include <utility>

namespace codefy::train {

BatchPrefetcher::BatchPrefetcher(const DataLoader& loader, torch::Tensor order, int64_t epoch, int64_t workers)
    : loader_(loader),
      order_(std::move(order)),
      epoch_(epoch),
      workers_(std::max<int64_t>(1, workers)),
      batches_(loader.num_batches()),
      depth_(std::max<int64_t>(1, loader.options().prefetch_factor) * std::max<int64_t>(1, workers)) {
  for (int64_t w = 0; w < workers_; ++w) threads_.emplace_back([this, w] { work(w); });
}

BatchPrefetcher::~BatchPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (auto& t : threads_) t.join();
}

void BatchPrefetcher::work(int64_t worker) {
  for (int64_t b = worker; b < batches_; b += workers_) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || b < taken_ + depth_; });
      if (stopping_) return;
    }
    Slot slot;
    try {
      slot.batch = loader_.batch(order_, b, epoch_);
    } catch (...) {
      slot.error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ready_[b] = std::move(slot);
    }
    changed_.notify_all();
  }
}

Batch BatchPrefetcher::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return ready_.count(taken_) > 0; });
  Slot slot = std::move(ready_.at(taken_));
  ready_.erase(taken_);
  ++taken_;
  lock.unlock();
  changed_.notify_all();
  if (slot.error) std::rethrow_exception(slot.error);
  return std::move(*slot.batch);
}

}  // namespace codefy::train
