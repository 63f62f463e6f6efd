// TensorBoard event files read back without the writer's code
// (src/store/tensorboard.cpp): the TFRecord framing and both masked CRC-32Cs
// by a bitwise CRC of this file's own, the protobuf wire format by a decoder
// of a few lines, and the field numbers as TensorBoard's protos have them.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace codefy::testing::tfevents {

/// CRC-32C bit by bit (reflected polynomial 0x82F63B78).
inline uint32_t crc32c(const std::string& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

inline uint32_t masked(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

inline uint64_t little_endian(const std::string& bytes, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
  return v;
}

/// The records of a TFRecord file, each CRC checked.
inline std::vector<std::string> read_records(const std::filesystem::path& path) {
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

inline uint64_t read_varint(const std::string& b, size_t& at) {
  uint64_t v = 0;
  for (int shift = 0; at < b.size() && shift < 64; shift += 7) {
    const auto byte = static_cast<unsigned char>(b[at++]);
    v |= uint64_t{byte & 0x7fu} << shift;
    if (!(byte & 0x80)) return v;
  }
  ADD_FAILURE() << "a truncated varint";
  return v;
}

inline Fields decode(const std::string& b) {
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
inline Field one(const Fields& fields, int number, int wire_type) {
  EXPECT_EQ(fields.count(number), 1u) << "field " << number;
  const auto it = fields.find(number);
  if (it == fields.end()) return {};
  EXPECT_EQ(it->second.wire_type, wire_type) << "field " << number;
  return it->second;
}

inline std::vector<Field> all(const Fields& fields, int number) {
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

/// A scalar of an event file: tag, step, value.
struct Scalar {
  std::string tag;
  int64_t step = 0;
  float value = 0;
  bool operator==(const Scalar& o) const { return tag == o.tag && step == o.step && value == o.value; }
  bool operator<(const Scalar& o) const {
    return tag != o.tag ? tag < o.tag : step != o.step ? step < o.step : value < o.value;
  }
};

/// The scalars of an event file's records, in order.
inline std::vector<Scalar> scalars(const std::vector<std::string>& records) {
  std::vector<Scalar> out;
  for (const auto& r : records) {
    const Fields e = decode(r);
    if (!e.count(event::kSummary)) continue;
    const Fields v = decode(one(decode(one(e, event::kSummary, 2).bytes), summary::kValue, 2).bytes);
    if (!v.count(summary::kSimpleValue)) continue;
    out.push_back({one(v, summary::kTag, 2).bytes,
                   e.count(event::kStep) ? static_cast<int64_t>(one(e, event::kStep, 0).varint) : 0,
                   one(v, summary::kSimpleValue, 5).as_float()});
  }
  return out;
}

}  // namespace codefy::testing::tfevents
