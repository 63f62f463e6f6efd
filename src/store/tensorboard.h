// A run's history as a TensorBoard event file, which TensorBoard, W&B
// (`sync_tensorboard`) and Aim (`aim convert tensorboard`) all read: TFRecord
// framing (length, data, each with a masked CRC-32C) around protobuf Events,
// scalars as Summary values, and the hparams plugin's three records for the
// configuration and the metrics to tabulate, as
// torch.utils.tensorboard.SummaryWriter.add_hparams writes them.
#pragma once

#include "util/errors.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace codefy::store {

/// An event file cannot be created or written (a folder that cannot be made, a full disk),
/// or add_hparams was given what the plugin cannot hold.
class TensorBoardError : public Error {
 public:
  using Error::Error;
};

/// Writes one event file. Records go through a stdio buffer: flush() (or the
/// destructor) makes them visible to a reader.
class EventFileWriter {
 public:
  /// Creates `dir` (and its parents) and in it a new file named as TensorBoard names
  /// them, `events.out.tfevents.<unix seconds>.<host>.<pid>.<n>` (n counts this
  /// process's files), whose first record is the file version "brain.Event:2".
  /// `wall_time` (Unix seconds) names the file and stamps that record; now when not
  /// given. Throws TensorBoardError naming the path it could not create.
  explicit EventFileWriter(const std::filesystem::path& dir, std::optional<double> wall_time = std::nullopt);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  /// One point of a series: `value` is stored as a float (Summary.Value.simple_value).
  void add_scalar(const std::string& tag, double value, int64_t step, double wall_time);

  /// The hparams plugin's records: the experiment (the hyperparameters' names and
  /// types, and `metric_tags`, the scalar tags the table shows), the session start
  /// (the values, at `start_time`) and the session end (`status` at `end_time`).
  /// `hparams` is a flat JSON object of numbers, strings and bools; a null is left
  /// out. `status` is a run's: "completed" (success), "failed" and "interrupted"
  /// (failure), "stopped" (unknown: the plugin has no "stopped by a person"),
  /// "running" or "queued" (running). Throws TensorBoardError for another status,
  /// or an hparam that is an object or an array.
  void add_hparams(const nlohmann::json& hparams, const std::vector<std::string>& metric_tags,
                   const std::string& status, double start_time, double end_time);

  /// Hands what is buffered to the operating system.
  void flush();

  const std::filesystem::path& path() const { return path_; }

 private:
  /// Frames one serialized Event as a TFRecord and writes it.
  void write_record(const std::string& data);

  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
};

}  // namespace codefy::store
