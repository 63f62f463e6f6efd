// Built with -O3 (CMakeLists.txt) and cloned per instruction set (AVX-512,
// AVX2, baseline) with the best picked when the program loads. Comparisons
// and copies only: every clone gives the same results, bit for bit.
#include "model/window_pool_kernels.h"

#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CODEFY_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CODEFY_CLONES
#endif

namespace codefy::model::pool {
namespace {

// Channels in blocks in GCC's vector types, lowered to the clone's
// instruction set. The comparisons work on four floats (one SSE register):
// GCC splits a wider vector comparison into one per lane when it clones a
// function per instruction set. The backward's selects are bit operations
// and take sixteen channels at a time.
constexpr std::int64_t kLanes = 16;
constexpr std::int64_t kCompareLanes = 4;
typedef float Floats __attribute__((vector_size(4 * kCompareLanes)));
typedef std::int32_t Mask4 __attribute__((vector_size(4 * kCompareLanes)));
typedef std::uint32_t Wide4 __attribute__((vector_size(4 * kCompareLanes)));
typedef std::uint16_t Half4 __attribute__((vector_size(2 * kCompareLanes)));
typedef std::uint8_t Bytes4 __attribute__((vector_size(kCompareLanes)));
typedef std::int32_t Mask32 __attribute__((vector_size(4 * kLanes)));
typedef std::uint32_t Bits32 __attribute__((vector_size(4 * kLanes)));
typedef std::int16_t Mask16 __attribute__((vector_size(2 * kLanes)));
typedef std::uint16_t Bits16 __attribute__((vector_size(2 * kLanes)));
typedef std::uint8_t Bytes __attribute__((vector_size(kLanes)));
typedef std::int8_t Mask8 __attribute__((vector_size(kLanes)));

template <typename V, typename T>
__attribute__((always_inline)) inline V load(const T* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename V, typename T>
__attribute__((always_inline)) inline void store(T* p, const V& v) {
  std::memcpy(p, &v, sizeof v);
}

// Four values as floats; a bfloat16's bits are a float's top half.
__attribute__((always_inline)) inline Floats floats(const float* p) { return load<Floats>(p); }
__attribute__((always_inline)) inline Floats floats(const std::uint16_t* p) {
  const Wide4 wide = __builtin_convertvector(load<Half4>(p), Wide4) << 16;
  return (Floats)wide;  // GCC's vector cast: the same bits
}
// Back, exactly: the floats came from values of that type.
__attribute__((always_inline)) inline void store_floats(float* p, const Floats& v) { store(p, v); }
__attribute__((always_inline)) inline void store_floats(std::uint16_t* p, const Floats& v) {
  const Wide4 wide = (Wide4)v >> 16;
  store(p, __builtin_convertvector(wide, Half4));
}

inline float to_float(float v) { return v; }
inline float to_float(std::uint16_t bits) {
  const std::uint32_t wide = static_cast<std::uint32_t>(bits) << 16;
  float v;
  std::memcpy(&v, &wide, sizeof v);
  return v;
}

// LibTorch's rule: a larger value or a NaN takes the cell.
inline bool takes(float v, float best) { return v > best || v != v; }

template <typename T>
__attribute__((always_inline)) inline void forward_rows(const T* __restrict in, T* __restrict out,
                                                        std::uint8_t* __restrict arg, const WindowDims& d,
                                                        std::int64_t begin, std::int64_t end) {
  const std::int64_t k = d.k, h = d.h, w = d.w, c = d.c, out_h = d.out_h(), out_w = d.out_w();
  const std::int64_t whole = c / kCompareLanes * kCompareLanes;
  for (std::int64_t row = begin; row < end; ++row) {
    const std::int64_t n = row / out_h, oh = row % out_h;
    for (std::int64_t ow = 0; ow < out_w; ++ow) {
      const T* first = in + ((n * h + oh * k) * w + ow * k) * c;  // the window's top-left cell
      T* o = out + (row * out_w + ow) * c;
      std::uint8_t* a = arg + (row * out_w + ow) * c;
      for (std::int64_t c0 = 0; c0 < whole; c0 += kCompareLanes) {
        Floats best = floats(first + c0);
        Mask4 cell = {};
        for (std::int64_t kh = 0; kh < k; ++kh)
          for (std::int64_t kw = kh == 0 ? 1 : 0; kw < k; ++kw) {
            const Floats v = floats(first + (kh * w + kw) * c + c0);
            const Mask4 take = (v > best) | (v != v);
            // Selects as bit operations: GCC's vector ?: becomes one branch per lane.
            best = (Floats)(((Mask4)v & take) | ((Mask4)best & ~take));
            cell = ((Mask4{} + static_cast<std::int32_t>(kh * k + kw)) & take) | (cell & ~take);
          }
        store_floats(o + c0, best);
        store(a + c0, __builtin_convertvector(cell, Bytes4));
      }
      for (std::int64_t i = whole; i < c; ++i) {  // the channels past the last block of four
        float best = to_float(first[i]);
        std::int64_t cell = 0;
        for (std::int64_t kh = 0; kh < k; ++kh)
          for (std::int64_t kw = kh == 0 ? 1 : 0; kw < k; ++kw) {
            const float v = to_float(first[(kh * w + kw) * c + i]);
            if (takes(v, best)) {
              best = v;
              cell = kh * k + kw;
            }
          }
        o[i] = first[(cell / k * w + cell % k) * c + i];
        a[i] = static_cast<std::uint8_t>(cell);
      }
    }
  }
}

// Sixteen gradient values where `a` names `here`, else +0 (all bits clear).
__attribute__((always_inline)) inline void select_block(const float* g, const std::uint8_t* a, std::uint8_t here,
                                                        float* dst) {
  const Mask8 hit = load<Bytes>(a) == here;
  store(dst, load<Bits32>(g) & (Bits32) __builtin_convertvector(hit, Mask32));
}
__attribute__((always_inline)) inline void select_block(const std::uint16_t* g, const std::uint8_t* a,
                                                        std::uint8_t here, std::uint16_t* dst) {
  const Mask8 hit = load<Bytes>(a) == here;
  store(dst, load<Bits16>(g) & (Bits16) __builtin_convertvector(hit, Mask16));
}

template <typename T>
__attribute__((always_inline)) inline void backward_rows(const T* __restrict grad_out,
                                                         const std::uint8_t* __restrict arg, T* __restrict grad_in,
                                                         const WindowDims& d, std::int64_t begin, std::int64_t end) {
  const std::int64_t k = d.k, h = d.h, w = d.w, c = d.c, out_h = d.out_h(), out_w = d.out_w();
  const std::int64_t whole = c / kLanes * kLanes;
  for (std::int64_t row = begin; row < end; ++row) {
    const std::int64_t n = row / out_h, oh = row % out_h;
    // The window's input rows, and after the last output row the rows no window reads.
    const std::int64_t h_end = oh == out_h - 1 ? h : (oh + 1) * k;
    for (std::int64_t y = oh * k; y < h_end; ++y) {
      T* line = grad_in + (n * h + y) * w * c;
      const std::int64_t kh = y - oh * k;
      if (kh >= k) {
        std::memset(static_cast<void*>(line), 0, sizeof(T) * w * c);
        continue;
      }
      for (std::int64_t ow = 0; ow < out_w; ++ow) {
        const T* g = grad_out + (row * out_w + ow) * c;
        const std::uint8_t* a = arg + (row * out_w + ow) * c;
        for (std::int64_t kw = 0; kw < k; ++kw) {
          T* dst = line + (ow * k + kw) * c;
          const auto here = static_cast<std::uint8_t>(kh * k + kw);
          for (std::int64_t c0 = 0; c0 < whole; c0 += kLanes) select_block(g + c0, a + c0, here, dst + c0);
          for (std::int64_t i = whole; i < c; ++i) dst[i] = a[i] == here ? g[i] : T(0);
        }
      }
      if (out_w * k < w) std::memset(static_cast<void*>(line + out_w * k * c), 0, sizeof(T) * (w - out_w * k) * c);
    }
  }
}

}  // namespace

CODEFY_CLONES void max_forward(const float* in, float* out, std::uint8_t* arg, const WindowDims& d, std::int64_t begin,
                               std::int64_t end) {
  forward_rows(in, out, arg, d, begin, end);
}
CODEFY_CLONES void max_forward_bf16(const std::uint16_t* in, std::uint16_t* out, std::uint8_t* arg, const WindowDims& d,
                                    std::int64_t begin, std::int64_t end) {
  forward_rows(in, out, arg, d, begin, end);
}
CODEFY_CLONES void max_backward(const float* grad_out, const std::uint8_t* arg, float* grad_in, const WindowDims& d,
                                std::int64_t begin, std::int64_t end) {
  backward_rows(grad_out, arg, grad_in, d, begin, end);
}
CODEFY_CLONES void max_backward_bf16(const std::uint16_t* grad_out, const std::uint8_t* arg, std::uint16_t* grad_in,
                                     const WindowDims& d, std::int64_t begin, std::int64_t end) {
  backward_rows(grad_out, arg, grad_in, d, begin, end);
}

}  // namespace codefy::model::pool
