// Reading the weights of Python's zip-format torch.save files.
#pragma once

#include "train/state_dict.h"

#include <string>

namespace codefy::train {

/// The str -> Tensor dict pickled in a torch.save (or torch::pickle_save) zip
/// held in `bytes`, in the dict's order; Python's OrderedDict state_dicts
/// included. Throws std::runtime_error (c10::Error for a damaged zip) for
/// anything else: a pickled module, a checkpoint dict holding non-tensors, a
/// corrupt or truncated file. Messages about the content name `source`.
StateDict read_torch_zip(const std::string& bytes, const std::string& source);

}  // namespace codefy::train
