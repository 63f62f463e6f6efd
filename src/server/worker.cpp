// The worker thread: a bounded wait list and one job at a time.
#include "server/worker.h"

#include "graph/graph.h"
#include "util/json_input.h"

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <utility>

namespace codefy::server {

Response response_for_current_exception() {
  try {
    throw;
  } catch (const HttpError& e) {
    return Response::error(e.status(), e.what());
  } catch (const util::JsonFieldError& e) {
    return Response::error(400, e.what());
  } catch (const util::JsonInputError& e) {
    return Response::error(400, std::string("malformed JSON: ") + e.what());
  } catch (const InputError& e) {
    return Response::error(400, e.what());
  } catch (const graph::GraphFormatError& e) {
    return Response::error(400, e.what());
  } catch (const std::invalid_argument& e) {
    return Response::error(400, e.what());
  } catch (const std::filesystem::filesystem_error& e) {
    // Its text names the server's own paths: the client learns only what failed.
    return Response::error(500, "file system error: " + e.code().message());
  } catch (const std::exception& e) {
    return Response::error(500, e.what());
  } catch (...) {
    return Response::error(500, "unknown error");
  }
}

Worker::Worker(std::string what, size_t waiting_max)
    : what_(std::move(what)), waiting_max_(waiting_max), thread_([this] { work(); }) {}

Worker::~Worker() { shutdown(); }

void Worker::shutdown() {
  std::deque<Job> left;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
    left.swap(jobs_);
  }
  wake_.notify_all();
  for (auto& job : left) job.respond(Response::error(503, "the server is stopping"));
  if (thread_.joinable()) thread_.join();
}

void Worker::post(std::function<void()> job, Respond respond) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) throw HttpError(503, "the server is stopping");
    if (jobs_.size() >= waiting_max_) throw HttpError(503, "too many " + what_ + " at once; try again");
    jobs_.push_back({std::move(job), std::move(respond)});
  }
  wake_.notify_one();
}

Handler Worker::run_here(ImmediateHandler handler) {
  return [this, handler = std::move(handler)](const Request& r, const PathParams& p, const Respond& respond) {
    post([handler, request = std::make_shared<Request>(r), p, respond] { respond(handler(*request, p)); }, respond);
  };
}

void Worker::work() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    try {
      job.run();
    } catch (...) {
      job.respond(response_for_current_exception());
    }
  }
}

}  // namespace codefy::server
