#include "train/model.h"

#include <ATen/record_function.h>

#include <cstring>
#include <memory>

namespace codefy::train {

int64_t count_parameters(const torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters())
    if (p.requires_grad()) n += p.numel();
  return n;
}

namespace {

/// What the counting callbacks add to, on the counting thread only.
thread_local double counted_multiply_adds = 0;

std::vector<int64_t> sizes_of(const c10::IValue& v) {
  if (!v.isTensor()) return {};
  const auto s = v.toTensor().sizes();
  return {s.begin(), s.end()};
}

int64_t product(const std::vector<int64_t>& v, size_t from = 0) {
  int64_t p = 1;
  for (size_t i = from; i < v.size(); ++i) p *= v[i];
  return p;
}

/// Matrix products: counted as they start, from their operands' sizes.
std::unique_ptr<at::ObserverContext> count_product(const at::RecordFunction& fn) {
  const char* name = fn.name();
  const auto in = fn.inputs();
  if (std::strcmp(name, "aten::addmm") == 0 && in.size() >= 3) {
    const auto a = sizes_of(in[1]), b = sizes_of(in[2]);
    if (a.size() == 2 && b.size() == 2) counted_multiply_adds += static_cast<double>(a[0] * a[1] * b[1]);
  } else if (std::strcmp(name, "aten::mm") == 0 && in.size() >= 2) {
    const auto a = sizes_of(in[0]), b = sizes_of(in[1]);
    if (a.size() == 2 && b.size() == 2) counted_multiply_adds += static_cast<double>(a[0] * a[1] * b[1]);
  } else if (std::strcmp(name, "aten::bmm") == 0 && in.size() >= 2) {
    const auto a = sizes_of(in[0]), b = sizes_of(in[1]);
    if (a.size() == 3 && b.size() == 3) counted_multiply_adds += static_cast<double>(a[0] * a[1] * a[2] * b[2]);
  }
  return nullptr;
}

/// Convolutions: counted as they end, from the output's size (each output
/// element takes in_channels/groups x kernel multiply-adds; a transposed one:
/// each input element, out_channels/groups x kernel).
void count_convolution(const at::RecordFunction& fn, at::ObserverContext*) {
  if (std::strcmp(fn.name(), "aten::_convolution") != 0) return;
  const auto in = fn.inputs();
  if (in.size() < 7 || fn.outputs().empty()) return;
  const auto input = sizes_of(in[0]), weight = sizes_of(in[1]), output = sizes_of(fn.outputs()[0]);
  if (weight.size() < 3) return;
  const bool transposed = in[6].isBool() && in[6].toBool();
  const int64_t per_element = weight[1] * product(weight, 2);
  counted_multiply_adds += static_cast<double>((transposed ? product(input) : product(output)) * per_element);
}

}  // namespace

double forward_multiply_adds(Model& model, const torch::Tensor& batch) {
  const bool was_training = model.is_training();
  model.eval();
  counted_multiply_adds = 0;
  at::RecordFunctionGuard record(true);
  const auto handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback(count_product, count_convolution).needsInputs(true).needsOutputs(true));
  // One sample, its count times the batch: every counted product grows
  // linearly with the batch, and a whole batch's forward would hold its
  // activations (in fp32, whatever the run's precision) at the top of the
  // training node's memory peak.
  const int64_t samples = batch.dim() > 0 ? batch.size(0) : 1;
  try {
    torch::NoGradGuard no_grad;
    model.forward(samples > 1 ? batch.narrow(0, 0, 1) : batch);
  } catch (...) {
    at::removeCallback(handle);
    model.train(was_training);
    throw;
  }
  at::removeCallback(handle);
  model.train(was_training);
  return counted_multiply_adds * static_cast<double>(samples);
}

}  // namespace codefy::train
