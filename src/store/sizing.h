// How many bytes values hold: tensor storage, each storage counted
// once however many tensors or views share it; CPU and CUDA bytes summed.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <unordered_set>

namespace torch::nn {
class Module;
}

namespace codefy::store {

class StorageCounter {
 public:
  void add(const at::Tensor& t);
  /// Parameters and buffers of a module and its children.
  void add(const torch::nn::Module& m);
  void add_bytes(int64_t n) { other_ += n; }
  int64_t cpu_bytes() const { return cpu_; }
  int64_t device_bytes() const { return device_; }
  /// Everything, CPU and devices together.
  int64_t total() const { return cpu_ + device_ + other_; }

 private:
  std::unordered_set<const void*> seen_;
  int64_t cpu_ = 0, device_ = 0, other_ = 0;
};

}  // namespace codefy::store
