// TensorBoard event files of the run history (issue #30), read back without
// the writer's code: the TFRecord framing and both masked CRC-32Cs by a
// bitwise CRC of this file's own, the protobuf wire format by a decoder of
// a few lines, and the field numbers as TensorBoard's protos have them.
#include "store/tensorboard.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>

namespace codefy::store {
namespace {

namespace fs = std::filesystem;

fs::path fresh(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("codefy-tb-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

/// CRC-32C bit by bit (reflected polynomial 0x82F63B78).
uint32_t crc32c(const std::string& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

uint32_t masked(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

uint64_t little_endian(const std::string& bytes, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
  return v;
}

/// The records of a TFRecord file, each CRC checked.
std::vector<std::string> read_records(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> records;
  size_t at = 0;
  while (at < file.size()) {
    EXPECT_LE(at + 12, file.size()) << "a truncated record header at " << at;
    if (at + 12 > file.size()) break;
    const std::string length_bytes = file.substr(at, 8);
    const uint64_t length = little_endian(file, at, 8);
    EXPECT_EQ(little_endian(file, at + 8, 4), masked(crc32c(length_bytes))) << "length CRC at " << at;
    EXPECT_LE(at + 12 + length + 4, file.size()) << "a truncated record at " << at;
    if (at + 12 + length + 4 > file.size()) break;
    const std::string data = file.substr(at + 12, length);
    EXPECT_EQ(little_endian(file, at + 12 + length, 4), masked(crc32c(data))) << "data CRC at " << at;
    records.push_back(data);
    at += 12 + length + 4;
  }
  return records;
}

/// One protobuf field as it is on the wire.
struct Field {
  int wire_type = 0;
  uint64_t varint = 0;  ///< wire type 0; and the raw bits of types 1 (64-bit) and 5 (32-bit)
  std::string bytes;    ///< wire type 2
  double as_double() const {
    double d;
    std::memcpy(&d, &varint, sizeof d);
    return d;
  }
  float as_float() const {
    const auto bits = static_cast<uint32_t>(varint);
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
};

/// A message's fields by number, repeated ones in order.
using Fields = std::multimap<int, Field>;

uint64_t read_varint(const std::string& b, size_t& at) {
  uint64_t v = 0;
  for (int shift = 0; at < b.size() && shift < 64; shift += 7) {
    const auto byte = static_cast<unsigned char>(b[at++]);
    v |= uint64_t{byte & 0x7fu} << shift;
    if (!(byte & 0x80)) return v;
  }
  ADD_FAILURE() << "a truncated varint";
  return v;
}

Fields decode(const std::string& b) {
  Fields fields;
  size_t at = 0;
  while (at < b.size()) {
    const uint64_t key = read_varint(b, at);
    Field f;
    f.wire_type = static_cast<int>(key & 7);
    switch (f.wire_type) {
      case 0: f.varint = read_varint(b, at); break;
      case 1: f.varint = little_endian(b, at, 8), at += 8; break;
      case 5: f.varint = little_endian(b, at, 4), at += 4; break;
      case 2: {
        const uint64_t n = read_varint(b, at);
        f.bytes = b.substr(at, n);
        at += n;
        break;
      }
      default: ADD_FAILURE() << "wire type " << f.wire_type; return fields;
    }
    EXPECT_LE(at, b.size()) << "a field runs past its message";
    fields.emplace(static_cast<int>(key >> 3), f);
  }
  return fields;
}

/// The one field `number` (which must be there once) of wire type `wire_type`.
Field one(const Fields& fields, int number, int wire_type) {
  EXPECT_EQ(fields.count(number), 1u) << "field " << number;
  const auto it = fields.find(number);
  if (it == fields.end()) return {};
  EXPECT_EQ(it->second.wire_type, wire_type) << "field " << number;
  return it->second;
}

std::vector<Field> all(const Fields& fields, int number) {
  std::vector<Field> out;
  for (auto [it, end] = fields.equal_range(number); it != end; ++it) out.push_back(it->second);
  return out;
}

// Field numbers of TensorBoard's protos, written out here from the .proto files.
// tensorboard/compat/proto/event.proto
namespace event {
constexpr int kWallTime = 1, kStep = 2, kFileVersion = 3, kSummary = 5;
}
// tensorboard/compat/proto/summary.proto
namespace summary {
constexpr int kValue = 1;                                 // Summary
constexpr int kTag = 1, kSimpleValue = 2, kMetadata = 9;  // Summary.Value
constexpr int kPluginData = 1;                            // SummaryMetadata
constexpr int kPluginName = 1, kContent = 2;              // SummaryMetadata.PluginData
}  // namespace summary
// tensorboard/plugins/hparams/plugin_data.proto and api.proto
namespace hparams {
constexpr int kVersion = 1, kExperiment = 2, kSessionStartInfo = 3, kSessionEndInfo = 4;
constexpr int kTimeCreatedSecs = 3, kHParamInfos = 4, kMetricInfos = 5;  // Experiment
constexpr int kInfoName = 1, kInfoType = 4;                              // HParamInfo
constexpr int kMetricName = 1, kMetricGroup = 1, kMetricTag = 2;         // MetricInfo, MetricName
constexpr int kHParams = 1, kStartTimeSecs = 5;                          // SessionStartInfo
constexpr int kStatus = 1, kEndTimeSecs = 2;                             // SessionEndInfo
constexpr int kDataTypeString = 1, kDataTypeBool = 2, kDataTypeFloat64 = 3;
constexpr int kStatusUnknown = 0, kStatusSuccess = 1, kStatusFailure = 2, kStatusRunning = 3;
}  // namespace hparams
// google/protobuf/struct.proto, Value
namespace value {
constexpr int kNumber = 2, kString = 3, kBool = 4;
}

/// One hparams record: its event's summary value, checked for tag and plugin;
/// returns the HParamsPluginData's fields.
Fields hparams_content(const std::string& record, const std::string& tag, double wall_time) {
  const Fields e = decode(record);
  EXPECT_EQ(one(e, event::kWallTime, 1).as_double(), wall_time) << tag;
  const Fields s = decode(one(e, event::kSummary, 2).bytes);
  const Fields v = decode(one(s, summary::kValue, 2).bytes);
  EXPECT_EQ(one(v, summary::kTag, 2).bytes, tag);
  EXPECT_EQ(v.count(summary::kSimpleValue), 0u) << tag << ": a value with no data, only metadata";
  const Fields m = decode(one(v, summary::kMetadata, 2).bytes);
  const Fields plugin = decode(one(m, summary::kPluginData, 2).bytes);
  EXPECT_EQ(one(plugin, summary::kPluginName, 2).bytes, "hparams") << tag;
  const Fields content = decode(one(plugin, summary::kContent, 2).bytes);
  // Version 0 is proto3's default, so it is not on the wire at all.
  EXPECT_EQ(content.count(hparams::kVersion), 0u) << tag;
  return content;
}

TEST(TensorBoard, Issue30_TheTestsOwnCrc32cMatchesTheStandardCheckValue) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(""), 0u);
}

TEST(TensorBoard, Issue30_AFileIsNamedAsTensorBoardNamesThemAndStartsWithItsVersion) {
  const fs::path dir = fresh("name") / "a" / "b";
  fs::path path;
  {
    EventFileWriter writer(dir, 1733235901.75);
    path = writer.path();
    EXPECT_EQ(path.parent_path(), dir);
  }
  const std::string name = path.filename().string();
  std::smatch m;
  ASSERT_TRUE(std::regex_match(name, m, std::regex(R"(events\.out\.tfevents\.(\d{10})\.(.+)\.(\d+)\.(\d+))"))) << name;
  EXPECT_EQ(m[1], "1733235901");
  EXPECT_EQ(m[3], std::to_string(::getpid()));

  const std::vector<std::string> records = read_records(path);
  ASSERT_EQ(records.size(), 1u);
  const Fields e = decode(records[0]);
  EXPECT_EQ(one(e, event::kWallTime, 1).as_double(), 1733235901.75);
  EXPECT_EQ(one(e, event::kFileVersion, 2).bytes, "brain.Event:2");
  EXPECT_EQ(e.count(event::kSummary), 0u);

  // A second file of this process in the same second gets a name of its own.
  EventFileWriter again(dir, 1733235901.75);
  EXPECT_NE(again.path(), path);
  EXPECT_TRUE(fs::exists(path));
}

TEST(TensorBoard, Issue30_ScalarsAreEventsWithTagStepWallTimeAndAFloatSimpleValue) {
  const fs::path dir = fresh("scalars");
  struct Point {
    std::string tag;
    double value;
    int64_t step;
    double t;
  };
  const std::vector<Point> points = {{"loss", 2.302585, 1, 1733235902.5},
                                     {"loss", 0.6931, 2, 1733235903.25},
                                     {"lr", 1e-3, 2, 1733235903.25},
                                     {"val_accuracy", 0.875, 5000000000LL, 1733235999.0}};
  fs::path path;
  {
    EventFileWriter writer(dir, 1733235901.0);
    for (const Point& p : points) writer.add_scalar(p.tag, p.value, p.step, p.t);
    writer.flush();
    path = writer.path();
    // flush() made them readable while the writer is still open.
    EXPECT_EQ(read_records(path).size(), 1 + points.size());
  }
  const std::vector<std::string> records = read_records(path);
  ASSERT_EQ(records.size(), 1 + points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    SCOPED_TRACE(points[i].tag + " at " + std::to_string(points[i].step));
    const Fields e = decode(records[1 + i]);
    EXPECT_EQ(one(e, event::kWallTime, 1).as_double(), points[i].t);
    EXPECT_EQ(static_cast<int64_t>(one(e, event::kStep, 0).varint), points[i].step);
    EXPECT_EQ(e.count(event::kFileVersion), 0u);
    const Fields s = decode(one(e, event::kSummary, 2).bytes);
    const Fields v = decode(one(s, summary::kValue, 2).bytes);
    EXPECT_EQ(one(v, summary::kTag, 2).bytes, points[i].tag);
    EXPECT_EQ(one(v, summary::kSimpleValue, 5).as_float(), static_cast<float>(points[i].value));
  }
}

TEST(TensorBoard, Issue30_HParamsAreThePluginsThreeRecordsWithValuesMetricTagsAndStatus) {
  const fs::path dir = fresh("hparams");
  const nlohmann::json config = {{"lr", 0.001},      {"epochs", 3},         {"optimizer", "adam"},
                                 {"amsgrad", false}, {"precision", "bf16"}, {"scheduler", nullptr}};
  fs::path path;
  {
    EventFileWriter writer(dir, 1733235901.0);
    writer.add_scalar("val_accuracy", 0.9, 3, 1733235990.0);
    writer.add_hparams(config, {"val_accuracy", "epoch_loss"}, "completed", 1733235901.0, 1733236000.5);
    path = writer.path();
  }
  const std::vector<std::string> records = read_records(path);
  ASSERT_EQ(records.size(), 5u);

  // The experiment: each hparam's name and type, the metric tags, when it was made.
  const Fields experiment =
      decode(one(hparams_content(records[2], "_hparams_/experiment", 1733235901.0), hparams::kExperiment, 2).bytes);
  EXPECT_EQ(one(experiment, hparams::kTimeCreatedSecs, 1).as_double(), 1733235901.0);
  std::map<std::string, int> types;
  for (const Field& f : all(experiment, hparams::kHParamInfos)) {
    const Fields info = decode(f.bytes);
    types[one(info, hparams::kInfoName, 2).bytes] = static_cast<int>(one(info, hparams::kInfoType, 0).varint);
  }
  EXPECT_EQ(types, (std::map<std::string, int>{{"lr", hparams::kDataTypeFloat64},
                                               {"epochs", hparams::kDataTypeFloat64},
                                               {"optimizer", hparams::kDataTypeString},
                                               {"amsgrad", hparams::kDataTypeBool},
                                               {"precision", hparams::kDataTypeString}}));
  std::vector<std::string> metric_tags;
  for (const Field& f : all(experiment, hparams::kMetricInfos)) {
    const Fields name = decode(one(decode(f.bytes), hparams::kMetricName, 2).bytes);
    EXPECT_EQ(name.count(hparams::kMetricGroup), 0u) << "the metric is in the session's own run";
    metric_tags.push_back(one(name, hparams::kMetricTag, 2).bytes);
  }
  EXPECT_EQ(metric_tags, (std::vector<std::string>{"val_accuracy", "epoch_loss"}));

  // The session start: the values (a map: entries of key 1, value 2), and when.
  const Fields start = decode(
      one(hparams_content(records[3], "_hparams_/session_start_info", 1733235901.0), hparams::kSessionStartInfo, 2)
          .bytes);
  EXPECT_EQ(one(start, hparams::kStartTimeSecs, 1).as_double(), 1733235901.0);
  std::map<std::string, Fields> values;
  for (const Field& f : all(start, hparams::kHParams)) {
    const Fields entry = decode(f.bytes);
    values[one(entry, 1, 2).bytes] = decode(one(entry, 2, 2).bytes);
  }
  ASSERT_EQ(values.size(), 5u) << "a null hparam is left out";
  EXPECT_EQ(one(values["lr"], value::kNumber, 1).as_double(), 0.001);
  EXPECT_EQ(one(values["epochs"], value::kNumber, 1).as_double(), 3.0);
  EXPECT_EQ(one(values["optimizer"], value::kString, 2).bytes, "adam");
  EXPECT_EQ(one(values["precision"], value::kString, 2).bytes, "bf16");
  // false is proto3's default, yet a oneof member is written even so.
  EXPECT_EQ(one(values["amsgrad"], value::kBool, 0).varint, 0u);

  // The session end: its status and when.
  const Fields end = decode(
      one(hparams_content(records[4], "_hparams_/session_end_info", 1733236000.5), hparams::kSessionEndInfo, 2).bytes);
  EXPECT_EQ(one(end, hparams::kStatus, 0).varint, static_cast<uint64_t>(hparams::kStatusSuccess));
  EXPECT_EQ(one(end, hparams::kEndTimeSecs, 1).as_double(), 1733236000.5);
}

TEST(TensorBoard, Issue30_ARunsStatusMapsToThePluginsStatusAndAnUnknownOneOrANestedHParamIsRefused) {
  const std::vector<std::pair<std::string, int>> cases = {
      {"failed", hparams::kStatusFailure},
      {"interrupted", hparams::kStatusFailure},
      {"stopped", hparams::kStatusUnknown},
      {"running", hparams::kStatusRunning},
  };
  const fs::path dir = fresh("status");
  for (const auto& [status, expected] : cases) {
    SCOPED_TRACE(status);
    fs::path path;
    {
      EventFileWriter writer(dir);
      writer.add_hparams({{"seed", 1}}, {}, status, 10.0, 20.0);
      path = writer.path();
    }
    const std::vector<std::string> records = read_records(path);
    ASSERT_EQ(records.size(), 4u);
    const Fields end =
        decode(one(hparams_content(records[3], "_hparams_/session_end_info", 20.0), hparams::kSessionEndInfo, 2).bytes);
    // STATUS_UNKNOWN is 0, proto3's default: absent on the wire.
    EXPECT_EQ(end.count(hparams::kStatus) ? one(end, hparams::kStatus, 0).varint : 0u, static_cast<uint64_t>(expected));
  }

  EventFileWriter writer(dir);
  EXPECT_THROW(writer.add_hparams({{"seed", 1}}, {}, "finished", 1, 2), TensorBoardError);
  EXPECT_THROW(writer.add_hparams({{"layers", {1, 2}}}, {}, "completed", 1, 2), TensorBoardError);
  EXPECT_THROW(writer.add_hparams({{"optim", {{"lr", 1}}}}, {}, "completed", 1, 2), TensorBoardError);
  EXPECT_THROW(writer.add_hparams(nlohmann::json::array(), {}, "completed", 1, 2), TensorBoardError);
  writer.flush();
  EXPECT_EQ(read_records(writer.path()).size(), 1u) << "a refused call writes nothing";
}

TEST(TensorBoard, Issue30_AFolderThatCannotBeCreatedThrowsNamingThePath) {
  const fs::path dir = fresh("blocked");
  fs::create_directories(dir);
  const fs::path file = dir / "a-file";
  std::ofstream(file) << "not a folder";
  const fs::path under = file / "runs";
  try {
    EventFileWriter writer(under);
    FAIL() << "no error for " << under;
  } catch (const TensorBoardError& e) {
    EXPECT_NE(std::string(e.what()).find(under.string()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace codefy::store
