#include "train/grad_buffer.h"

#include <torch/torch.h>

#include <map>
#include <utility>

namespace codefy::train {

namespace {

/// Sum of squares of a gradient as a 0-dim float tensor. For float and
/// double a dot product with itself: one BLAS call, about 3x faster than
/// norm(2) in LibTorch 1.13 on the CPU.
torch::Tensor sum_of_squares(const torch::Tensor& grad) {
  const torch::Tensor g = grad.detach().reshape(-1);
  if (g.scalar_type() == torch::kFloat || g.scalar_type() == torch::kDouble) return torch::dot(g, g).to(torch::kFloat);
  return g.to(torch::kFloat).pow(2).sum();
}

torch::Tensor global_norm(const std::vector<torch::Tensor>& grads) {
  std::vector<torch::Tensor> squares;
  for (const auto& g : grads)
    if (g.defined()) squares.push_back(sum_of_squares(g));
  if (squares.empty()) return torch::zeros({});
  if (squares.size() == 1) return squares.front().sqrt();
  std::vector<torch::Tensor> on_first;  // buffers may live on several devices
  on_first.reserve(squares.size());
  for (auto& s : squares) on_first.push_back(s.to(squares.front().device()));
  return torch::stack(on_first).sum().sqrt();
}

/// As PyTorch 2.x: a clamped coefficient tensor, so no host sync.
void scale_by_clip_coefficient(const std::vector<torch::Tensor>& grads, const torch::Tensor& total, double max_norm) {
  const torch::Tensor coef = (max_norm / (total + 1e-6)).clamp_max(1.0);
  for (const auto& g : grads)
    if (g.defined()) g.mul_(coef.to(g.device()).to(g.scalar_type()));
}

std::vector<torch::Tensor> grads_of(const std::vector<torch::Tensor>& parameters) {
  std::vector<torch::Tensor> grads;
  grads.reserve(parameters.size());
  for (const auto& p : parameters) grads.push_back(p.grad());
  return grads;
}

}  // namespace

torch::Tensor grad_norm(const std::vector<torch::Tensor>& parameters) { return global_norm(grads_of(parameters)); }

torch::Tensor clip_grad_norm(const std::vector<torch::Tensor>& parameters, double max_norm) {
  torch::NoGradGuard no_grad;
  const auto grads = grads_of(parameters);
  torch::Tensor total = global_norm(grads);
  scale_by_clip_coefficient(grads, total, max_norm);
  return total;
}

GradBuffer::GradBuffer(std::vector<torch::Tensor> parameters) : parameters_(std::move(parameters)) {
  torch::NoGradGuard no_grad;
  // Lay the parameters out per (device, dtype), in order.
  std::map<std::pair<std::string, int>, std::vector<size_t>> groups;
  std::vector<std::pair<std::string, int>> order;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const auto key = std::make_pair(parameters_[i].device().str(), static_cast<int>(parameters_[i].scalar_type()));
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(i);
  }
  views_.resize(parameters_.size());
  for (const auto& key : order) {
    const auto& members = groups[key];
    int64_t total = 0;
    for (size_t i : members) total += parameters_[i].numel();
    torch::Tensor buffer = torch::zeros({total}, parameters_[members.front()].options());
    int64_t offset = 0;
    for (size_t i : members) {
      views_[i] = buffer.narrow(0, offset, parameters_[i].numel()).view(parameters_[i].sizes());
      offset += parameters_[i].numel();
    }
    buffers_.push_back(std::move(buffer));
  }
}

void GradBuffer::sync() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const torch::Tensor& g = parameters_[i].grad();
    if (!g.defined() || (g.data_ptr() == views_[i].data_ptr() && g.strides() == views_[i].strides())) continue;
    views_[i].copy_(g);
    parameters_[i].mutable_grad() = views_[i];
  }
}

void GradBuffer::zero() {
  torch::NoGradGuard no_grad;
  for (auto& b : buffers_) b.zero_();
  for (size_t i = 0; i < parameters_.size(); ++i) {  // gradients autograd put elsewhere since the last sync
    const torch::Tensor& g = parameters_[i].grad();
    if (g.defined() && g.data_ptr() != views_[i].data_ptr()) parameters_[i].mutable_grad() = views_[i];
  }
}

torch::Tensor GradBuffer::norm() const { return global_norm(buffers_); }

torch::Tensor GradBuffer::clip(double max_norm) {
  torch::NoGradGuard no_grad;
  torch::Tensor total = norm();
  scale_by_clip_coefficient(buffers_, total, max_norm);
  return total;
}

}  // namespace codefy::train
