#include "train/checkpoint.h"

#include "util/atomic_file.h"
#include "util/json_input.h"

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/torch.h>

#include <fstream>
#include <sstream>

namespace codefy::train {

namespace {

constexpr char kMagic[] = "CODEFY-CHECKPOINT 1\n";
constexpr size_t kMagicSize = sizeof(kMagic) - 1;

void put_part(std::string& out, const std::string& part) {
  uint64_t n = part.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += part;
}

std::string take_part(const std::string& in, size_t& pos, const char* what, const std::string& where) {
  if (in.size() - pos < 8) throw std::runtime_error(where + ": truncated checkpoint (no " + what + " length)");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(in[pos + i])) << (8 * i);
  pos += 8;
  if (n > in.size() - pos) throw std::runtime_error(where + ": truncated checkpoint (" + what + " cut short)");
  std::string part = in.substr(pos, n);
  pos += n;
  return part;
}

}  // namespace

std::string save_optimizer_state(const torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

void load_optimizer_state(torch::optim::Optimizer& optimizer, const std::string& bytes) {
  torch::serialize::InputArchive archive;
  std::istringstream in(bytes);
  archive.load_from(in);
  optimizer.load(archive);
}

void save_checkpoint(const std::filesystem::path& path, const Checkpoint& checkpoint) {
  std::string out(kMagic, kMagicSize);
  put_part(out, checkpoint.meta.dump());
  put_part(out, encode_safetensors(checkpoint.model));
  put_part(out, checkpoint.optimizer_state);
  util::write_file_atomic(path, out);
}

bool is_checkpoint_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::string head(kMagicSize, '\0');
  return f.read(head.data(), static_cast<std::streamsize>(kMagicSize)) && head == std::string(kMagic, kMagicSize);
}

Checkpoint load_checkpoint(const std::filesystem::path& path) {
  const std::string where = path.string();
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(where + ": checkpoint file not found");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string in = ss.str();
  if (in.size() < kMagicSize || in.compare(0, kMagicSize, kMagic) != 0)
    throw std::runtime_error(where + ": not a Codefy checkpoint (written by CheckpointSaver)");
  size_t pos = kMagicSize;
  Checkpoint c;
  try {
    c.meta = util::parse_json(take_part(in, pos, "metadata", where));
  } catch (const util::JsonInputError&) {
    throw std::runtime_error(where + ": damaged checkpoint (metadata is not JSON)");
  }
  c.model = decode_safetensors(take_part(in, pos, "weights", where), where);
  c.optimizer_state = take_part(in, pos, "optimizer state", where);
  if (pos != in.size()) throw std::runtime_error(where + ": damaged checkpoint (trailing bytes)");
  return c;
}

}  // namespace codefy::train
