// A thread of its own for work that would hold up the I/O threads (layer
// shape traces, graph validation): jobs run one at a time in the order they
// came, a bounded number wait, and more are refused with 503 at once.
#pragma once

#include "server/routes.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace codefy::server {

/// The answer Api gives for an exception a handler threw (HttpError's
/// status, 400 for bad JSON and graph files, 500 for the rest); call it
/// inside a catch block.
Response response_for_current_exception();

class Worker {
 public:
  /// `what` names the jobs in the 503 answer ("shape requests"); at most
  /// `waiting_max` wait beyond the one running.
  Worker(std::string what, size_t waiting_max);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  /// Answers the waiting jobs with 503, lets the running one finish, joins.
  void shutdown();

  /// Queues `job`, which answers through `respond` (an exception it throws is
  /// answered as Api answers it). Throws HttpError(503) when `waiting_max`
  /// jobs wait already or the worker is stopping.
  void post(std::function<void()> job, Respond respond);

  /// A Handler that answers with `handler` on this worker, with a copy of the
  /// request (the I/O thread is free again at once).
  Handler run_here(ImmediateHandler handler);

 private:
  void work();

  std::string what_;
  size_t waiting_max_;
  std::mutex mutex_;
  std::condition_variable wake_;
  struct Job {
    std::function<void()> run;
    Respond respond;  ///< for the 503 at shutdown and for what run throws
  };
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace codefy::server
