// Adam, AdamW and SGD with momentum whose step() updates each parameter in
// one pass over its memory (train/fused_kernels.h) instead of LibTorch's one
// tensor operation per term: on a 784-256-256-10 MLP, Adam's step drops from
// about 300 to 60 µs per update on one core (bench/RESULTS.md).
//
// They are LibTorch's classes: the same options, the same per-parameter state
// (AdamParamState, SGDParamState), saved and loaded by LibTorch's own
// serialization, and the same results up to the last bit of rounding. The
// single pass covers dense, contiguous float32 CPU tensors; anything else
// (CUDA, other dtypes, amsgrad, SGD without momentum, whose step is already
// one operation) runs LibTorch's own step(). Given the model's bf16 weight
// copies (write_bf16_mirrors), the single pass also writes each updated
// parameter's copy, block by block while the block is in cache.
#pragma once

#include "train/bf16_mirrors.h"

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

namespace codefy::train {

class FusedAdam : public torch::optim::Adam, public WritesBf16Mirrors {
 public:
  using torch::optim::Adam::Adam;
  torch::Tensor step(LossClosure closure = nullptr) override;
  /// Whether the last step() took the single pass (else LibTorch's step).
  bool last_step_fused() const { return last_step_fused_; }

 private:
  bool last_step_fused_ = false;
};

class FusedAdamW : public torch::optim::AdamW, public WritesBf16Mirrors {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;
  /// Whether the last step() took the single pass (else LibTorch's step).
  bool last_step_fused() const { return last_step_fused_; }

 private:
  bool last_step_fused_ = false;
};

class FusedSGD : public torch::optim::SGD, public WritesBf16Mirrors {
 public:
  using torch::optim::SGD::SGD;
  torch::Tensor step(LossClosure closure = nullptr) override;
  /// Whether the last step() took the single pass (else LibTorch's step).
  bool last_step_fused() const { return last_step_fused_; }

 private:
  bool last_step_fused_ = false;
};

}  // namespace codefy::train
