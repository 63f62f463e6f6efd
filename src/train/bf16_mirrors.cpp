#include "train/bf16_mirrors.h"

#include <ATen/ATen.h>

namespace codefy::train {

bool Bf16Mirrors::fresh(const Entry& e, const at::Tensor& param) const {
  return e.data == param.data_ptr() && e.version == static_cast<int64_t>(param._version()) &&
         e.copy.sizes() == param.sizes();
}

Bf16Mirrors::Entry* Bf16Mirrors::current_entry(const at::Tensor& param) {
  const auto it = entries_.find(param.unsafeGetTensorImpl());
  return it == entries_.end() ? nullptr : &it->second;
}

const at::Tensor& Bf16Mirrors::of(const at::Tensor& param) {
  Entry* e = current_entry(param);
  if (e == nullptr) {
    // Parameters gone since (a model rebuilt) leave with their copies.
    for (auto it = entries_.begin(); it != entries_.end();)
      it = it->second.impl.expired() ? entries_.erase(it) : std::next(it);
    e = &entries_.emplace(param.unsafeGetTensorImpl(), Entry(param)).first->second;
  }
  if (!fresh(*e, param)) {
    at::NoGradGuard no_grad;
    e->copy = param.detach().to(at::kBFloat16, /*non_blocking=*/false, /*copy=*/true, c10::MemoryFormat::Contiguous);
    e->data = param.data_ptr();
    e->version = static_cast<int64_t>(param._version());
    ++casts_;
  }
  return e->copy;
}

std::uint16_t* Bf16Mirrors::target(const at::Tensor& param) {
  Entry* e = current_entry(param);
  if (e == nullptr || !e->copy.defined() || e->copy.numel() != param.numel()) return nullptr;
  return bf16_bits(e->copy);
}

void Bf16Mirrors::written(const at::Tensor& param) {
  if (Entry* e = current_entry(param)) {
    e->data = param.data_ptr();
    e->version = static_cast<int64_t>(param._version());
  }
}

}  // namespace codefy::train
