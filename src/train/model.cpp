#include "train/model.h"

namespace codefy::train {

int64_t count_parameters(const torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters())
    if (p.requires_grad()) n += p.numel();
  return n;
}

}  // namespace codefy::train
