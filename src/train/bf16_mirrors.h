// bfloat16 copies of float32 parameters for CPU bf16 autocast, kept between
// forward passes instead of cast again at every one.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/BFloat16.h>
#include <c10/util/intrusive_ptr.h>

#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace codefy::train {

/// Per float32 CPU parameter, its values rounded to bfloat16. A model's
/// Linear reads the copy (model/bf16_linear.h) where CPU autocast would cast
/// the weight at every forward, and the single-pass optimizers write the copy
/// in the pass that updates the weight (train/fused_optim.h). A copy is cast
/// again whenever its parameter changed since it was written (its version
/// counter or its storage), so whatever else writes a parameter (a
/// checkpoint, a broadcast, the user's own code) is seen. One thread at a
/// time, as the model's forward.
class Bf16Mirrors {
 public:
  /// `param`'s copy, cast from it first if missing or stale.
  const at::Tensor& of(const at::Tensor& param);
  /// For an optimizer about to update `param` in place: its copy's bits, to
  /// be written in the same pass, or nullptr when no copy is kept for it.
  std::uint16_t* target(const at::Tensor& param);
  /// After the optimizer wrote `param` and its copy: the copy is current.
  void written(const at::Tensor& param);
  /// How many times a copy was cast from its parameter (for tests).
  std::size_t casts() const { return casts_; }

 private:
  struct Entry {
    explicit Entry(const at::Tensor& param) : impl(param.getIntrusivePtr()) {}
    // Holds the parameter's TensorImpl allocation, so its address (the key)
    // is never reused for another tensor while the entry lives.
    c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> impl;
    const void* data = nullptr;  ///< the parameter's storage when the copy was written
    int64_t version = -1;        ///< and its version counter
    at::Tensor copy;
  };
  Entry* current_entry(const at::Tensor& param);
  bool fresh(const Entry& e, const at::Tensor& param) const;

  std::unordered_map<const c10::TensorImpl*, Entry> entries_;
  std::size_t casts_ = 0;
};

/// The storage of a contiguous bf16 tensor as the bit patterns the
/// LibTorch-free kernels read and write.
inline std::uint16_t* bf16_bits(const at::Tensor& t) {
  return reinterpret_cast<std::uint16_t*>(t.data_ptr<c10::BFloat16>());
}

/// Optimizers that can write parameters' bf16 copies in their update pass.
class WritesBf16Mirrors {
 public:
  /// Copies to keep current from now on; nullptr: none.
  void write_bf16_mirrors(Bf16Mirrors* mirrors) { mirrors_ = mirrors; }

 protected:
  ~WritesBf16Mirrors() = default;
  Bf16Mirrors* mirrors_ = nullptr;
};

}  // namespace codefy::train
