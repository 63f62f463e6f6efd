// Weight files: PyTorch pickles (torch.load-compatible) and safetensors,
// written atomically, read defensively.
#include "train/serialize.h"

#include <torch/serialize.h>
#include <torch/torch.h>

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace codefy::train {

namespace fs = std::filesystem;

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors and PyTorch tensor data are little-endian; a big-endian host needs byte swapping");

namespace {

/// Parameters then buffers of `module`, then its children, recursively: the
/// order of PyTorch's Module.state_dict(). Does not need shared_from_this,
/// so it works on modules that live on the stack.
void collect(const torch::nn::Module& module, const std::string& prefix, StateDict& out) {
  for (const auto& item : module.named_parameters(/*recurse=*/false)) {
    if (item.value().defined()) out.emplace_back(prefix + item.key(), item.value());
  }
  for (const auto& item : module.named_buffers(/*recurse=*/false)) {
    if (item.value().defined()) out.emplace_back(prefix + item.key(), item.value());
  }
  for (const auto& child : module.named_children()) collect(*child.value(), prefix + child.key() + ".", out);
}

std::string shape_string(at::IntArrayRef sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

/// A tensor as it goes to disk: detached, on the CPU, contiguous and owning
/// exactly its bytes (a slice of a larger tensor would otherwise drag the
/// whole storage into a pickle).
at::Tensor to_disk(const std::string& name, const at::Tensor& t) {
  if (!t.defined()) throw std::invalid_argument("tensor '" + name + "' is undefined");
  if (t.layout() != at::kStrided) throw std::invalid_argument("tensor '" + name + "' is not dense");
  at::Tensor out = t.detach().to(at::kCPU);
  if (!out.is_contiguous() || out.storage_offset() != 0 || out.storage().nbytes() != out.nbytes()) {
    out = out.clone(at::MemoryFormat::Contiguous);
  }
  return out;
}

// --- safetensors dtypes -----------------------------------------------------

struct DtypeName {
  at::ScalarType type;
  const char* name;
};
constexpr DtypeName kDtypes[] = {
    {at::kDouble, "F64"}, {at::kFloat, "F32"}, {at::kHalf, "F16"}, {at::kBFloat16, "BF16"},
    {at::kLong, "I64"},   {at::kInt, "I32"},   {at::kShort, "I16"}, {at::kChar, "I8"},
    {at::kByte, "U8"},    {at::kBool, "BOOL"},
};

const char* safetensors_dtype(const std::string& name, at::ScalarType type) {
  for (const auto& d : kDtypes) {
    if (d.type == type) return d.name;
  }
  throw std::invalid_argument("tensor '" + name + "' has dtype " + std::string(c10::toString(type)) +
                              ", which safetensors cannot store here");
}

std::optional<at::ScalarType> scalar_type_of(const std::string& dtype) {
  for (const auto& d : kDtypes) {
    if (dtype == d.name) return d.type;
  }
  return std::nullopt;
}

// --- files --------------------------------------------------------------------

std::atomic<uint64_t> temp_counter{0};

/// Writes `size` bytes to `fd`, retrying short writes and EINTR.
bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

/// Writes a temp file next to `path` and renames it over `path`, so readers
/// (and a crash) see either the old file or the complete new one.
void write_atomically(const fs::path& path, const char* data, size_t size) {
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) throw std::runtime_error("cannot create folder " + dir.string() + " for " + path.string() + ": " + ec.message());
  }
  // Unique per process and call, matching the "*.tmp.*" ignore pattern.
  const fs::path temp = dir / (path.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                               std::to_string(temp_counter.fetch_add(1)));
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    throw std::runtime_error("cannot write " + path.string() + ": creating " + temp.string() + " failed: " +
                             std::strerror(errno));
  }
  std::string failure;
  if (!write_all(fd, data, size)) {
    failure = std::string("write failed: ") + std::strerror(errno);
  } else if (::fsync(fd) != 0) {
    failure = std::string("fsync failed: ") + std::strerror(errno);
  }
  if (::close(fd) != 0 && failure.empty()) failure = std::string("close failed: ") + std::strerror(errno);
  if (failure.empty()) {
    fs::rename(temp, path, ec);
    if (ec) failure = "rename failed: " + ec.message();
  }
  if (!failure.empty()) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    throw std::runtime_error("cannot write " + path.string() + ": " + failure);
  }
  // Persist the rename itself; best effort, the data is already safe.
  int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

bool has_suffix_ci(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  return std::equal(suffix.rbegin(), suffix.rend(), s.rbegin(),
                    [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

/// Every str→Tensor entry of an unpickled object, or an error naming `path`.
StateDict dict_from_ivalue(const c10::IValue& value, const fs::path& path) {
  if (!value.isGenericDict()) {
    throw std::runtime_error("weights file " + path.string() + " does not hold a dict of tensors (it holds " +
                             value.tagKind() + ")");
  }
  StateDict out;
  for (const auto& entry : value.toGenericDict()) {
    if (!entry.key().isString()) {
      throw std::runtime_error("weights file " + path.string() + " has a non-string key (" + entry.key().tagKind() + ")");
    }
    const std::string key = entry.key().toStringRef();
    if (!entry.value().isTensor()) {
      throw std::runtime_error("weights file " + path.string() + ": entry '" + key + "' is " + entry.value().tagKind() +
                               ", not a tensor (a training checkpoint rather than a state_dict?)");
    }
    out.emplace_back(key, entry.value().toTensor().detach().contiguous());
  }
  return out;
}

}  // namespace

// -----------------------------------------------------------------------------

StateDict state_dict(const torch::nn::Module& module) {
  StateDict out;
  collect(module, "", out);
  // Detached aliases, as in PyTorch: same storage, no autograd history.
  for (auto& item : out) item.second = item.second.detach();
  return out;
}

void load_state_dict(torch::nn::Module& module, const StateDict& dict) {
  StateDict own;
  collect(module, "", own);
  std::map<std::string, const at::Tensor*> given;
  std::vector<std::string> duplicates;
  for (const auto& [name, tensor] : dict) {
    if (!given.emplace(name, &tensor).second) duplicates.push_back(name);
  }

  // Check everything before copying anything: a failed load leaves the
  // module as it was.
  std::vector<std::string> missing, unexpected, mismatched;
  std::set<std::string> own_names;
  for (const auto& [name, target] : own) {
    own_names.insert(name);
    auto it = given.find(name);
    if (it == given.end()) {
      missing.push_back(name);
    } else if (!it->second->defined()) {
      mismatched.push_back(name + " (undefined tensor, expected " + shape_string(target.sizes()) + ")");
    } else if (it->second->sizes() != target.sizes()) {
      mismatched.push_back(name + " (file " + shape_string(it->second->sizes()) + ", model " +
                           shape_string(target.sizes()) + ")");
    }
  }
  for (const auto& [name, tensor] : dict) {
    if (!own_names.count(name)) unexpected.push_back(name);
  }
  if (!missing.empty() || !unexpected.empty() || !mismatched.empty() || !duplicates.empty()) {
    std::string msg = "state_dict does not match the model:";
    auto list = [&msg](const char* what, const std::vector<std::string>& names) {
      if (names.empty()) return;
      msg += std::string("\n  ") + what + ": ";
      for (size_t i = 0; i < names.size(); ++i) msg += (i ? ", " : "") + names[i];
    };
    list("missing keys", missing);
    list("unexpected keys", unexpected);
    list("shape mismatches", mismatched);
    list("duplicate keys", duplicates);
    throw std::runtime_error(msg);
  }

  torch::NoGradGuard no_grad;
  for (auto& [name, target] : own) target.copy_(*given.at(name));
}

void save_weights(const fs::path& path, const StateDict& dict) {
  if (has_suffix_ci(path.filename().string(), ".safetensors")) {
    const std::string bytes = encode_safetensors(dict);
    write_atomically(path, bytes.data(), bytes.size());
    return;
  }
  c10::Dict<std::string, at::Tensor> d;
  for (const auto& [name, tensor] : dict) {
    if (d.contains(name)) throw std::invalid_argument("duplicate tensor name '" + name + "'");
    d.insert(name, to_disk(name, tensor));
  }
  std::vector<char> bytes;
  try {
    bytes = torch::pickle_save(c10::IValue(d));
  } catch (const c10::Error& e) {
    throw std::runtime_error("cannot serialise weights for " + path.string() + ": " +
                             first_line(e.what_without_backtrace()));
  }
  write_atomically(path, bytes.data(), bytes.size());
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
    c10::IValue value;
    try {
      value = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
    } catch (const c10::Error& e) {
      throw std::runtime_error("cannot read PyTorch weights file " + path.string() + ": " +
                               first_line(e.what_without_backtrace()));
    } catch (const std::exception& e) {
      throw std::runtime_error("cannot read PyTorch weights file " + path.string() + ": " + first_line(e.what()));
    }
    return dict_from_ivalue(value, path);
  }
  if (bytes.size() >= 9 && bytes[8] == '{') return decode_safetensors(bytes, path.string());
  if (!bytes.empty() && static_cast<unsigned char>(bytes[0]) == 0x80) {
    throw std::runtime_error("weights file " + path.string() +
                             " uses PyTorch's legacy (pre-1.6) format; re-save it with a current torch.save");
  }
  throw std::runtime_error("not a PyTorch (.pt/.pth) or safetensors weights file: " + path.string());
}

std::string encode_safetensors(const StateDict& dict) {
  // Header order = data order = dict order, so the file mirrors the state_dict.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  header["__metadata__"] = {{"format", "pt"}};
  std::vector<at::Tensor> tensors;
  tensors.reserve(dict.size());
  uint64_t offset = 0;
  for (const auto& [name, tensor] : dict) {
    if (name == "__metadata__") throw std::invalid_argument("'__metadata__' is reserved in safetensors");
    if (header.contains(name)) throw std::invalid_argument("duplicate tensor name '" + name + "'");
    at::Tensor t = to_disk(name, tensor);
    const uint64_t nbytes = t.nbytes();
    header[name] = {{"dtype", safetensors_dtype(name, t.scalar_type())},
                    {"shape", t.sizes().vec()},
                    {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
    tensors.push_back(std::move(t));
  }
  std::string json = header.dump();
  // The reference implementation pads with spaces so the data starts 8-aligned.
  json.append((8 - json.size() % 8) % 8, ' ');

  std::string out;
  out.reserve(8 + json.size() + offset);
  const uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += json;
  for (const at::Tensor& t : tensors) out.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
  return out;
}

StateDict decode_safetensors(const std::string& bytes, const std::string& source) {
  auto fail = [&source](const std::string& why) {
    return std::runtime_error("invalid safetensors file " + source + ": " + why);
  };
  if (bytes.size() < 8) throw fail("shorter than its 8-byte header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  // The reference reader caps the header at 100 MB too.
  if (n > 100'000'000 || n > bytes.size() - 8) throw fail("header length " + std::to_string(n) + " exceeds the file");

  nlohmann::ordered_json header;
  try {
    header = nlohmann::ordered_json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  } catch (const nlohmann::json::exception& e) {
    throw fail(std::string("header is not JSON (") + e.what() + ")");
  }
  if (!header.is_object()) throw fail("header is not a JSON object");
  const uint64_t data_size = bytes.size() - 8 - n;
  const char* data = bytes.data() + 8 + n;

  struct Entry {
    uint64_t begin;
    std::string name;
    at::Tensor tensor;
  };
  std::vector<Entry> entries;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    try {
      const std::string dtype = info.at("dtype").get<std::string>();
      auto type = scalar_type_of(dtype);
      if (!type) throw fail("tensor '" + name + "' has unsupported dtype " + dtype);
      std::vector<int64_t> shape;
      uint64_t numel = 1;
      for (const auto& d : info.at("shape")) {
        const uint64_t dim = d.get<uint64_t>();
        // Overflow guard: no real tensor comes near 2^48 elements.
        if (dim > (uint64_t{1} << 48) || (dim > 0 && numel > (uint64_t{1} << 48) / dim)) {
          throw fail("tensor '" + name + "' is too large");
        }
        numel *= dim;
        shape.push_back(static_cast<int64_t>(dim));
      }
      const auto& offsets = info.at("data_offsets");
      if (!offsets.is_array() || offsets.size() != 2) throw fail("tensor '" + name + "' has bad data_offsets");
      const uint64_t begin = offsets[0].get<uint64_t>();
      const uint64_t end = offsets[1].get<uint64_t>();
      const uint64_t expected = numel * c10::elementSize(*type);
      if (begin > end || end > data_size) {
        throw fail("tensor '" + name + "' data [" + std::to_string(begin) + ", " + std::to_string(end) +
                   ") lies outside the " + std::to_string(data_size) + " data bytes (truncated?)");
      }
      if (end - begin != expected) {
        throw fail("tensor '" + name + "' has " + std::to_string(end - begin) + " bytes, its shape needs " +
                   std::to_string(expected));
      }
      at::Tensor t = torch::empty(shape, at::TensorOptions().dtype(*type));
      if (expected > 0) std::memcpy(t.data_ptr(), data + begin, expected);
      entries.push_back({begin, name, std::move(t)});
    } catch (const nlohmann::json::exception& e) {
      throw fail("bad header entry for '" + name + "' (" + e.what() + ")");
    }
  }
  // Data order is the writer's order (ours: the state_dict order).
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  StateDict out;
  out.reserve(entries.size());
  for (auto& e : entries) out.emplace_back(std::move(e.name), std::move(e.tensor));
  return out;
}

}  // namespace codefy::train
