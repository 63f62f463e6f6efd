#include "store/tensorboard.h"

#include "store/tensorboard_event.pb.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <unistd.h>
#include <boost/crc.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>

namespace codefy::store {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// The hparams plugin's name, tags and data version, as tensorboard/plugins/hparams/metadata.py has them.
constexpr const char* kHParamsPlugin = "hparams";
constexpr const char* kExperimentTag = "_hparams_/experiment";
constexpr const char* kSessionStartTag = "_hparams_/session_start_info";
constexpr const char* kSessionEndTag = "_hparams_/session_end_info";
constexpr int kHParamsVersion = 0;

/// Numbers this process's files, as TensorBoard's writer does, so two writers in one second differ.
std::atomic<int> files_opened{0};

double now_s() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

/// TFRecord's checksum: CRC-32C (Castagnoli), rotated and offset so that a CRC
/// of data holding CRCs does not come out trivially.
uint32_t masked_crc32c(const std::string& bytes) {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(bytes.data(), bytes.size());
  const uint32_t c = crc.checksum();
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

/// Appends `v`'s low `n` bytes, least significant first.
void put_little_endian(std::string& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

/// Map entries in key order, so the same run always gives the same bytes.
std::string serialize(const google::protobuf::MessageLite& message) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    if (!message.SerializeToCodedStream(&coded))
      throw TensorBoardError("tensorboard: a record could not be serialized");
  }
  return out;
}

/// An Event holding one hparams summary: a value with no data, only the plugin's metadata.
tb::Event hparams_event(const char* tag, const tb::HParamsPluginData& data, double wall_time) {
  tb::Event event;
  event.set_wall_time(wall_time);
  event.set_step(0);
  tb::Summary::Value* value = event.mutable_summary()->add_value();
  value->set_tag(tag);
  tb::SummaryMetadata::PluginData* plugin = value->mutable_metadata()->mutable_plugin_data();
  plugin->set_plugin_name(kHParamsPlugin);
  plugin->set_content(serialize(data));
  return event;
}

tb::Status session_status(const std::string& status) {
  if (status == "completed") return tb::STATUS_SUCCESS;
  if (status == "failed" || status == "interrupted") return tb::STATUS_FAILURE;
  if (status == "stopped") return tb::STATUS_UNKNOWN;
  if (status == "running" || status == "queued") return tb::STATUS_RUNNING;
  throw TensorBoardError(
      "tensorboard: a run's status is completed, failed, interrupted, stopped, running or queued, got \"" + status +
      "\"");
}

}  // namespace

EventFileWriter::EventFileWriter(const fs::path& dir, std::optional<double> wall_time) {
  const double created = wall_time.value_or(now_s());
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw TensorBoardError("tensorboard: cannot create the folder " + dir.string() + ": " + ec.message());

  // The name TensorBoard's own writer gives: events.out.tfevents.%010d.<host>.<pid>.<n>.
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%010lld", static_cast<long long>(created));
  path_ = dir / ("events.out.tfevents." + std::string(seconds) + "." + this_host() + "." + std::to_string(::getpid()) +
                 "." + std::to_string(files_opened.fetch_add(1)));
  // "x": never append to or truncate another writer's file.
  file_ = std::fopen(path_.c_str(), "wbx");
  if (!file_) throw TensorBoardError("tensorboard: cannot create " + path_.string() + ": " + std::strerror(errno));

  tb::Event event;
  event.set_wall_time(created);
  event.set_step(0);
  event.set_file_version("brain.Event:2");
  write_record(serialize(event));
}

EventFileWriter::~EventFileWriter() {
  if (file_) std::fclose(file_);
}

void EventFileWriter::add_scalar(const std::string& tag, double value, int64_t step, double wall_time) {
  tb::Event event;
  event.set_wall_time(wall_time);
  event.set_step(step);
  tb::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  write_record(serialize(event));
}

void EventFileWriter::add_hparams(const json& hparams, const std::vector<std::string>& metric_tags,
                                  const std::string& status, double start_time, double end_time) {
  if (!hparams.is_object()) throw TensorBoardError("tensorboard: hparams must be a JSON object");
  const tb::Status end_status = session_status(status);

  // Types and values, as SummaryWriter.add_hparams writes them (bools as bools,
  // as TensorBoard's own hparams API does).
  tb::HParamsPluginData experiment, start, end;
  experiment.set_version(kHParamsVersion);
  start.set_version(kHParamsVersion);
  end.set_version(kHParamsVersion);
  tb::Experiment* exp = experiment.mutable_experiment();
  exp->set_time_created_secs(start_time);
  tb::SessionStartInfo* session = start.mutable_session_start_info();
  session->set_start_time_secs(start_time);
  for (const auto& [name, value] : hparams.items()) {
    if (value.is_null()) continue;
    tb::DataType type = tb::DATA_TYPE_UNSET;
    google::protobuf::Value& held = (*session->mutable_hparams())[name];
    if (value.is_boolean()) {
      held.set_bool_value(value.get<bool>());
      type = tb::DATA_TYPE_BOOL;
    } else if (value.is_number()) {
      held.set_number_value(value.get<double>());
      type = tb::DATA_TYPE_FLOAT64;
    } else if (value.is_string()) {
      held.set_string_value(value.get<std::string>());
      type = tb::DATA_TYPE_STRING;
    } else {
      throw TensorBoardError("tensorboard: hparam \"" + name +
                             "\" is an object or an array; the hparams plugin holds numbers, strings and bools");
    }
    tb::HParamInfo* info = exp->add_hparam_infos();
    info->set_name(name);
    info->set_type(type);
  }
  for (const std::string& tag : metric_tags) exp->add_metric_infos()->mutable_name()->set_tag(tag);
  tb::SessionEndInfo* session_end = end.mutable_session_end_info();
  session_end->set_status(end_status);
  session_end->set_end_time_secs(end_time);

  write_record(serialize(hparams_event(kExperimentTag, experiment, start_time)));
  write_record(serialize(hparams_event(kSessionStartTag, start, start_time)));
  write_record(serialize(hparams_event(kSessionEndTag, end, end_time)));
}

void EventFileWriter::flush() {
  if (std::fflush(file_) != 0)
    throw TensorBoardError("tensorboard: cannot write " + path_.string() + ": " + std::strerror(errno));
}

void EventFileWriter::write_record(const std::string& data) {
  // uint64 length, masked CRC of those 8 bytes, the data, masked CRC of the data; all little endian.
  std::string length;
  put_little_endian(length, data.size(), 8);
  std::string record = length;
  record.reserve(length.size() + 4 + data.size() + 4);
  put_little_endian(record, masked_crc32c(length), 4);
  record += data;
  put_little_endian(record, masked_crc32c(data), 4);
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size())
    throw TensorBoardError("tensorboard: cannot write " + path_.string() + ": " + std::strerror(errno));
}

}  // namespace codefy::store
