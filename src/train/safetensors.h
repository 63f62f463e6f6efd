// safetensors: the weights format of the Hugging Face ecosystem (an 8-byte
// header length, a JSON header, then the raw little-endian tensor bytes).
#pragma once

#include "train/state_dict.h"

#include <string>

namespace codefy::train {

/// The safetensors bytes of `dict`, tensors in dict order. Throws
/// std::invalid_argument for a duplicate or reserved name, or a dtype
/// safetensors cannot hold here.
std::string encode_safetensors(const StateDict& dict);

/// The tensors of safetensors `bytes`, in data order. Throws std::runtime_error
/// naming `source` (a path, or what the bytes came from) for anything
/// truncated, inconsistent or unsupported.
StateDict decode_safetensors(const std::string& bytes, const std::string& source);

}  // namespace codefy::train
