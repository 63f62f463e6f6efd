// safetensors encoding and a defensive decoder.
#include "train/safetensors.h"

#include "util/json_input.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string_view>

namespace codefy::train {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors tensor data is little-endian; a big-endian host needs byte swapping");

namespace {

struct DtypeName {
  at::ScalarType type;
  const char* name;
};
constexpr DtypeName kDtypes[] = {
    {at::kDouble, "F64"}, {at::kFloat, "F32"}, {at::kHalf, "F16"}, {at::kBFloat16, "BF16"}, {at::kLong, "I64"},
    {at::kInt, "I32"},    {at::kShort, "I16"}, {at::kChar, "I8"},  {at::kByte, "U8"},       {at::kBool, "BOOL"},
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

}  // namespace

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
    at::Tensor t = tensor_for_file(name, tensor);
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
    util::check_json_depth(std::string_view(bytes.data() + 8, n));
    header = nlohmann::ordered_json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  } catch (const std::exception& e) {  // nlohmann's errors, or nested past the limit
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
      if (*type == at::kBool && t.numel() > 0 && t.view(at::kByte).gt(1).any().item<bool>()) {
        throw fail("bool tensor '" + name + "' holds bytes other than 0 and 1");
      }
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
