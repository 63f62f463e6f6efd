// Max pooling over non-overlapping square windows (stride = kernel size, no
// padding, no dilation) of channels-last arrays, forward and backward, in
// float and bfloat16. LibTorch 1.13's CPU max pooling converts bfloat16 one
// value at a time and zero-fills the whole input gradient before scattering
// into it; these loops read and write each value once, vectorized over the
// channels. No LibTorch here; model/window_pool.h wraps them as a layer.
#pragma once

#include <cstdint>

namespace codefy::model::pool {

/// The shape of one pooling: input [n, h, w, c] (channels-last), window k×k,
/// output [n, out_h, out_w, c] with out_h = h / k, out_w = w / k (rows and
/// columns past the last whole window are not read).
struct WindowDims {
  std::int64_t n = 0, h = 0, w = 0, c = 0, k = 1;
  std::int64_t out_h() const { return h / k; }
  std::int64_t out_w() const { return w / k; }
  /// Output rows: n × out_h; the functions below take a range of them.
  std::int64_t rows() const { return n * out_h(); }
};

/// Largest window side these functions take: a window's cells are numbered
/// in one byte (row-major, 0 .. k*k-1).
constexpr std::int64_t kMaxWindow = 15;

/// Forward over output rows [begin, end): each output value is its window's
/// maximum, `arg` the cell it came from: the first maximum in row-major order,
/// or the last NaN (what LibTorch's max pooling picks). `bf16` arrays hold
/// bfloat16 bit patterns.
void max_forward(const float* in, float* out, std::uint8_t* arg, const WindowDims& d, std::int64_t begin,
                 std::int64_t end);
void max_forward_bf16(const std::uint16_t* in, std::uint16_t* out, std::uint8_t* arg, const WindowDims& d,
                      std::int64_t begin, std::int64_t end);

/// Backward over output rows [begin, end): writes every input-gradient value
/// those rows' windows cover, and for the last row of each image the rows and
/// columns past the last whole window, so no zero-fill is needed first: the
/// gradient goes to the cell `arg` names, every other cell gets 0.
void max_backward(const float* grad_out, const std::uint8_t* arg, float* grad_in, const WindowDims& d,
                  std::int64_t begin, std::int64_t end);
void max_backward_bf16(const std::uint16_t* grad_out, const std::uint8_t* arg, std::uint16_t* grad_in,
                       const WindowDims& d, std::int64_t begin, std::int64_t end);

}  // namespace codefy::model::pool
