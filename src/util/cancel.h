// Cancellation: a token shared by whoever may stop a run and the run itself.
#pragma once

#include "util/errors.h"

#include <atomic>
#include <memory>

namespace codefy {

/// Cheap to copy; all copies share one flag. Checked between nodes and by
/// long nodes between batches.
class CancellationToken {
 public:
  CancellationToken() : flag_(std::make_shared<std::atomic<bool>>(false)) {}
  void cancel() const { flag_->store(true, std::memory_order_relaxed); }
  bool cancelled() const { return flag_->load(std::memory_order_relaxed); }
  void throw_if_cancelled() const {
    if (cancelled()) throw Cancelled();
  }

 private:
  std::shared_ptr<std::atomic<bool>> flag_;
};

}  // namespace codefy
