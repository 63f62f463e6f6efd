// Shape checks the tensor nodes share: each refuses, before LibTorch
// allocates anything, with a NodeFailure naming the port (or param) and
// every shape involved, e.g. `input "tensor_b": shapes [2, 3] (tensor_a) and
// [4, 5] (tensor_b) do not broadcast: size 3 against 5 at dimension -1`.
#pragma once

#include "engine/node.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace codefy::nodes {

/// "[2, 3]".
std::string shape_text(c10::IntArrayRef shape);

/// A TENSOR input; a SCALAR (a number) is taken as a 0-d float tensor, as
/// torch.as_tensor would.
torch::Tensor tensor_input(const NodeContext& ctx, const std::string& port);

/// Comma-separated whole numbers from param `name` ("2, 3, 4"); blanks
/// between commas are skipped. Fails naming the param when a part is not a
/// whole number, or when there are none.
std::vector<int64_t> int_list_param(const NodeContext& ctx, const std::string& name);

/// A shape param for a new tensor: whole numbers >= 0 whose product stays
/// below 2^40 elements.
std::vector<int64_t> shape_param(const NodeContext& ctx, const std::string& name);

/// `dim` (param `name`) as an index into a tensor of rank `rank` (negative
/// counts from the end); `extra` is 1 where a new dimension may be inserted
/// (Unsqueeze, Stack). Fails naming the param, the rank and the input shape.
int64_t dim_param(const NodeContext& ctx, const std::string& name, int64_t rank, c10::IntArrayRef shape,
                  int64_t extra = 0);

/// Inputs `a` and `b` must broadcast together (torch.add's rule); fails on `b`.
void check_broadcast(const std::string& a_port, const torch::Tensor& a, const std::string& b_port,
                     const torch::Tensor& b);

/// torch.matmul's rule: both at least 1-D, a's last size equal to b's
/// second-to-last (its only one when 1-D), the batch dimensions broadcasting.
void check_matmul(const std::string& a_port, const torch::Tensor& a, const std::string& b_port, const torch::Tensor& b);

/// The same shape on both (Stack, KLDivergence); fails on `b`.
void check_same_shape(const std::string& a_port, const torch::Tensor& a, const std::string& b_port,
                      const torch::Tensor& b);

/// torch.cat along `dim` (already normalised): same rank, equal sizes but at `dim`.
void check_concat(const std::string& a_port, const torch::Tensor& a, const std::string& b_port, const torch::Tensor& b,
                  int64_t dim);

/// Input `port` has one of the ranks in `ranks` ("expects a 2-D or 3-D tensor, got shape [...]").
void check_rank(const std::string& port, const torch::Tensor& t, const std::vector<int64_t>& ranks,
                const std::string& what = "");

}  // namespace codefy::nodes
