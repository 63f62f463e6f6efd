// A safetensors file (a model upload, a weights param): decode_safetensors
// may refuse it only with std::runtime_error. What it accepts is encoded
// again and must decode to the same tensors.
#include "fuzz/fuzz_targets.h"
#include "train/safetensors.h"

#include <torch/torch.h>

#include <stdexcept>

namespace codefy::fuzz {

void safetensors(std::string_view data) {
  train::StateDict dict;
  try {
    dict = train::decode_safetensors(std::string(data), "fuzz");
  } catch (const std::runtime_error&) {
    return;
  }
  std::string bytes;
  try {
    bytes = train::encode_safetensors(dict);
  } catch (const std::invalid_argument&) {  // a name encode refuses (reserved, duplicate): documented
    return;
  }
  const train::StateDict again = train::decode_safetensors(bytes, "fuzz (re-encoded)");
  check(again.size() == dict.size(), "re-encoded safetensors hold another number of tensors");
  for (size_t i = 0; i < dict.size(); ++i) {
    check(again[i].first == dict[i].first, "re-encoded safetensors: tensor names differ");
    const at::Tensor& a = dict[i].second;
    const at::Tensor& b = again[i].second;
    check(a.scalar_type() == b.scalar_type() && a.sizes() == b.sizes(),
          "re-encoded safetensors: tensor '" + dict[i].first + "' changed dtype or shape");
    // Bytes, not values: NaNs compare unequal.
    check(a.numel() == 0 || std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0,
          "re-encoded safetensors: tensor '" + dict[i].first + "' changed its bytes");
  }
}

}  // namespace codefy::fuzz
