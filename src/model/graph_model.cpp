// GraphModel's forward pass and description.
#include "model/graph_model.h"

#include "model/bf16_linear.h"
#include "model/layer_spec_error.h"
#include "train/precision.h"

#include <torch/torch.h>

#include <cctype>
#include <sstream>

namespace codefy::model {

using torch::Tensor;

namespace {

std::string shape_of(const Tensor& t) {
  std::ostringstream os;
  os << t.sizes();
  return os.str();
}

/// Multiply-adds per forward below which a Linear is faster in fp32 than in
/// CPU bf16 autocast: oneDNN's bf16 GEMM and the casts around it have a fixed
/// cost that a small product never earns back. Measured forward + backward at
/// 64 rows on one core (AMD EPYC, AVX-512 BF16): 256 -> 10 is 44 us in fp32 and
/// 95 us in bf16, 256 -> 64 (1M) 100 vs 115 us, 256 -> 128 (2M) 176 vs 142 us;
/// on a CPU with AMX the crossing comes earlier, between 0.5M and 1M.
constexpr int64_t kSmallLinear = int64_t{1} << 20;

bool faster_in_fp32(const Tensor& in, int64_t linear_size) {
  if (!in.device().is_cpu() || in.dim() == 0 || in.size(-1) == 0 || !train::cpu_autocast_bf16()) return false;
  return in.numel() / in.size(-1) * linear_size < kSmallLinear;
}

/// Whether a Linear on `in` runs on its weight's kept bf16 copy: under CPU
/// bf16 autocast, with a float32 CPU weight and a float or bf16 input.
bool reads_bf16_copy(const Tensor& in, const Tensor& weight) {
  return in.device().is_cpu() && (in.scalar_type() == torch::kFloat || in.scalar_type() == torch::kBFloat16) &&
         weight.device().is_cpu() && weight.scalar_type() == torch::kFloat && weight.dim() == 2 && in.dim() >= 1 &&
         in.size(-1) == weight.size(1) && train::cpu_autocast_bf16();
}

}  // namespace

GraphModel::GraphModel(const std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>>& modules,
                       std::vector<Step> steps, size_t slots, size_t input_slot, size_t output_slot)
    : train::Model(std::string("SequentialModel")),
      steps_(std::move(steps)),
      slots_(slots),
      input_slot_(input_slot),
      output_slot_(output_slot) {
  layers_ = register_module("layers", torch::nn::ModuleDict(modules));
  std::vector<size_t> last_reader(slots_, steps_.size());
  for (size_t s = 0; s < steps_.size(); ++s)
    for (size_t i : steps_[s].inputs) last_reader[i] = s;
  released_after_.resize(steps_.size());
  for (size_t slot = 0; slot < slots_; ++slot)
    if (last_reader[slot] < steps_.size() && slot != output_slot_) released_after_[last_reader[slot]].push_back(slot);
}

Tensor GraphModel::forward(const Tensor& x) {
  std::vector<Tensor> values(slots_);
  values[input_slot_] = x;
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step& step = steps_[s];
    try {
      if (step.layer) {
        const Tensor& in = values[step.inputs.front()];
        // The same values in another memory layout (bench/RESULTS.md, "step time").
        if (step.channels_last && in.dim() == 4 && in.device().is_cpu()) {
          const Tensor cl = in.contiguous(c10::MemoryFormat::ChannelsLast);
          const Tensor out = step.conv ? conv2d_channels_last(*step.conv, cl) : step.layer(cl);
          values[step.slot] = out.dim() == 4 ? out.contiguous(c10::MemoryFormat::ChannelsLast) : out;
        } else if (step.linear_size > 0 && faster_in_fp32(in, step.linear_size)) {
          train::CpuAutocastOff fp32;
          values[step.slot] = step.layer(in.to(torch::kFloat));
        } else if (step.linear && reads_bf16_copy(in, step.linear->weight)) {
          const auto& l = *step.linear;
          values[step.slot] = bf16_linear(in, l.weight, l.bias, mirrors_.of(l.weight));
        } else {
          values[step.slot] = step.layer(in);
        }
      } else {
        std::vector<Tensor> inputs;
        for (size_t i : step.inputs) inputs.push_back(values[i]);
        values[step.slot] = step.merge(inputs);
      }
    } catch (const c10::OutOfMemoryError&) {
      throw;  // Not a problem with the spec.
    } catch (const c10::Error& e) {
      // Name the layer: LibTorch's message alone doesn't say which one failed.
      std::string shapes;
      for (size_t i : step.inputs) shapes += (shapes.empty() ? "" : ", ") + shape_of(values[i]);
      std::string message = e.msg();
      while (!message.empty() && std::isspace(static_cast<unsigned char>(message.back()))) message.pop_back();
      throw LayerSpecError(step.id, step.type, "",
                           (step.inputs.size() == 1 ? "failed on input of shape " : "failed on inputs of shapes ") +
                               shapes + ": " + message);
    }
    for (size_t slot : released_after_[s]) values[slot] = Tensor();
  }
  // Whoever reads a 4-D output gets the usual layout back.
  const Tensor& out = values[output_slot_];
  if (out.dim() == 4 && !out.is_contiguous() && out.is_contiguous(c10::MemoryFormat::ChannelsLast))
    return out.contiguous();
  return out;
}

std::string GraphModel::describe() const {
  std::string out;
  for (const Step& step : steps_) out += (out.empty() ? "" : "\n") + step.id + ": " + step.description;
  return out;
}

}  // namespace codefy::model
