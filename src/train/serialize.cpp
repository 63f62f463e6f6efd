// Weight files: the format chosen by extension on save and by content on load.
#include "train/serialize.h"

#include "train/pickle_reader.h"
#include "util/atomic_file.h"
#include "util/text.h"

#include <torch/serialize.h>
#include <torch/torch.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <system_error>

namespace codefy::train {

namespace fs = std::filesystem;

namespace {

bool has_suffix_ci(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  return std::equal(suffix.rbegin(), suffix.rend(), s.rbegin(),
                    [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
}

}  // namespace

void save_weights(const fs::path& path, const StateDict& dict) {
  if (has_suffix_ci(path.filename().string(), ".safetensors")) {
    const std::string bytes = encode_safetensors(dict);
    util::write_file_atomic(path, bytes);
    return;
  }
  c10::Dict<std::string, at::Tensor> d;
  for (const auto& [name, tensor] : dict) {
    if (d.contains(name)) throw std::invalid_argument("duplicate tensor name '" + name + "'");
    d.insert(name, tensor_for_file(name, tensor));
  }
  std::vector<char> bytes;
  try {
    bytes = torch::pickle_save(c10::IValue(d));
  } catch (const c10::Error& e) {
    throw std::runtime_error("cannot serialise weights for " + path.string() + ": " +
                             util::first_line(e.what_without_backtrace()));
  }
  util::write_file_atomic(path, std::string(bytes.begin(), bytes.end()));
}

bool is_weights_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char head[9] = {};
  if (!in.read(reinterpret_cast<char*>(head), sizeof head)) return false;
  if (head[0] == 'P' && head[1] == 'K' && head[2] == 3 && head[3] == 4) return true;  // zip
  uint64_t header_size = 0;  // safetensors: a little-endian u64, then the JSON header
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | head[i];
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return !ec && head[8] == '{' && header_size >= 2 && header_size <= size - 8;
}

StateDict load_weights(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw std::runtime_error("weights file not found: " + path.string());
  if (!fs::is_regular_file(path, ec)) throw std::runtime_error("weights path is not a file: " + path.string());
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open weights file: " + path.string());
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error("read error in weights file: " + path.string());

  if (bytes.size() >= 4 && bytes.compare(0, 4, "PK\x03\x04") == 0) {
    // torch.save's zip container (also what pickle_save writes).
    try {
      return read_torch_zip(bytes, path.string());
    } catch (const c10::Error& e) {
      throw std::runtime_error("cannot read PyTorch weights file " + path.string() + ": " +
                               util::first_line(e.what_without_backtrace()));
    } catch (const std::exception& e) {
      const std::string why = e.what();
      // Errors about the content already name the path.
      if (why.find(path.string()) != std::string::npos) throw std::runtime_error(why);
      throw std::runtime_error("cannot read PyTorch weights file " + path.string() + ": " + util::first_line(why));
    }
  }
  if (bytes.size() >= 9 && bytes[8] == '{') return decode_safetensors(bytes, path.string());
  if (!bytes.empty() && static_cast<unsigned char>(bytes[0]) == 0x80) {
    throw std::runtime_error("weights file " + path.string() +
                             " uses PyTorch's legacy (pre-1.6) format; re-save it with a current torch.save");
  }
  throw std::runtime_error("not a PyTorch (.pt/.pth) or safetensors weights file: " + path.string());
}

}  // namespace codefy::train
