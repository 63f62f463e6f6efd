#include "nodes/tensor_checks.h"

#include "util/list.h"

#include <algorithm>

namespace codefy::nodes {

std::string shape_text(c10::IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

torch::Tensor tensor_input(const NodeContext& ctx, const std::string& port) {
  const Value& v = ctx.input(port);
  if (const double* d = std::get_if<double>(&v)) return torch::tensor(static_cast<float>(*d));
  return ctx.input_as<torch::Tensor>(port);
}

std::vector<int64_t> int_list_param(const NodeContext& ctx, const std::string& name) {
  const std::string text = ctx.param_string(name);
  const auto values = util::parse_int_list(text);
  if (!values) NodeContext::fail_param(name, "\"" + text + "\" is not a comma-separated list of whole numbers");
  if (values->empty()) NodeContext::fail_param(name, "needs at least one whole number");
  return *values;
}

std::vector<int64_t> shape_param(const NodeContext& ctx, const std::string& name) {
  std::vector<int64_t> shape = int_list_param(ctx, name);
  double elements = 1;
  for (int64_t d : shape) {
    if (d < 0) NodeContext::fail_param(name, "sizes must be >= 0, got " + shape_text(shape));
    elements *= static_cast<double>(d);
  }
  if (elements >= static_cast<double>(int64_t{1} << 40))
    NodeContext::fail_param(name, "shape " + shape_text(shape) + " has too many elements to create");
  return shape;
}

int64_t dim_param(const NodeContext& ctx, const std::string& name, int64_t rank, c10::IntArrayRef shape,
                  int64_t extra) {
  const int64_t dim = ctx.param_int(name);
  const int64_t n = rank + extra;
  if (n == 0 || dim < -n || dim >= n)
    NodeContext::fail_param(name, "dimension " + std::to_string(dim) + " is out of range for a tensor of shape " +
                                      shape_text(shape) + " (valid: " + std::to_string(-std::max<int64_t>(n, 1)) +
                                      " to " + std::to_string(std::max<int64_t>(n, 1) - 1) + ")");
  return dim < 0 ? dim + n : dim;
}

namespace {

std::string both(const std::string& a_port, c10::IntArrayRef a, const std::string& b_port, c10::IntArrayRef b) {
  return "shapes " + shape_text(a) + " (" + a_port + ") and " + shape_text(b) + " (" + b_port + ")";
}

/// The first dimension (counted from the end, as broadcasting aligns them)
/// where `a` and `b` do not broadcast, or 0 when they do.
int64_t broadcast_conflict(c10::IntArrayRef a, c10::IntArrayRef b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 1; i <= n; ++i) {
    const int64_t x = a[a.size() - i], y = b[b.size() - i];
    if (x != y && x != 1 && y != 1) return static_cast<int64_t>(i);
  }
  return 0;
}

}  // namespace

void check_broadcast(const std::string& a_port, const torch::Tensor& a, const std::string& b_port,
                     const torch::Tensor& b) {
  const auto sa = a.sizes(), sb = b.sizes();
  if (const int64_t i = broadcast_conflict(sa, sb))
    NodeContext::fail_input(b_port, both(a_port, sa, b_port, sb) + " do not broadcast: size " +
                                        std::to_string(sa[sa.size() - i]) + " against " +
                                        std::to_string(sb[sb.size() - i]) + " at dimension -" + std::to_string(i));
}

void check_matmul(const std::string& a_port, const torch::Tensor& a, const std::string& b_port,
                  const torch::Tensor& b) {
  const auto sa = a.sizes(), sb = b.sizes();
  if (sa.empty())
    NodeContext::fail_input(a_port,
                            "matmul needs at least a 1-D tensor, got a 0-d one; " + both(a_port, sa, b_port, sb));
  if (sb.empty())
    NodeContext::fail_input(b_port,
                            "matmul needs at least a 1-D tensor, got a 0-d one; " + both(a_port, sa, b_port, sb));
  const int64_t inner_a = sa.back();
  const int64_t inner_b = sb.size() == 1 ? sb[0] : sb[sb.size() - 2];
  if (inner_a != inner_b)
    NodeContext::fail_input(b_port, both(a_port, sa, b_port, sb) + " cannot be multiplied: " + a_port +
                                        "'s last dimension (" + std::to_string(inner_a) + ") must equal " + b_port +
                                        (sb.size() == 1 ? "'s size (" : "'s second-to-last dimension (") +
                                        std::to_string(inner_b) + ")");
  if (sa.size() > 2 && sb.size() > 2) {
    const auto batch_a = sa.slice(0, sa.size() - 2), batch_b = sb.slice(0, sb.size() - 2);
    if (broadcast_conflict(batch_a, batch_b))
      NodeContext::fail_input(b_port, both(a_port, sa, b_port, sb) + ": batch dimensions " + shape_text(batch_a) +
                                          " and " + shape_text(batch_b) + " do not broadcast");
  }
}

void check_same_shape(const std::string& a_port, const torch::Tensor& a, const std::string& b_port,
                      const torch::Tensor& b) {
  if (a.sizes() != b.sizes())
    NodeContext::fail_input(b_port, both(a_port, a.sizes(), b_port, b.sizes()) + " must be the same");
}

void check_concat(const std::string& a_port, const torch::Tensor& a, const std::string& b_port, const torch::Tensor& b,
                  int64_t dim) {
  const auto sa = a.sizes(), sb = b.sizes();
  if (sa.size() != sb.size())
    NodeContext::fail_input(b_port,
                            both(a_port, sa, b_port, sb) + " have different ranks; concatenation needs the same");
  for (size_t i = 0; i < sa.size(); ++i)
    if (static_cast<int64_t>(i) != dim && sa[i] != sb[i])
      NodeContext::fail_input(b_port, both(a_port, sa, b_port, sb) + " differ at dimension " + std::to_string(i) +
                                          " (" + std::to_string(sa[i]) + " against " + std::to_string(sb[i]) +
                                          "); only dimension " + std::to_string(dim) + " may differ");
}

void check_rank(const std::string& port, const torch::Tensor& t, const std::vector<int64_t>& ranks,
                const std::string& what) {
  for (int64_t r : ranks)
    if (t.dim() == r) return;
  std::string list;
  for (size_t i = 0; i < ranks.size(); ++i)
    list += (i == 0 ? "" : i + 1 == ranks.size() ? " or " : ", ") + std::to_string(ranks[i]) + "-D";
  NodeContext::fail_input(port, "expects a " + list + " tensor" + (what.empty() ? "" : " (" + what + ")") +
                                    ", got shape " + shape_text(t.sizes()));
}

}  // namespace codefy::nodes
