#include "model/conv_layout.h"

#include <torch/enum.h>
#include <torch/nn/functional/conv.h>

namespace codefy::model {

using torch::Tensor;

Tensor conv2d_channels_last(torch::nn::Conv2dImpl& conv, const Tensor& x) {
  const Tensor& w = conv.weight;
  const auto& o = conv.options;
  if (x.dim() != 4 || !x.device().is_cpu() || w.dim() != 4 || w.size(1) != 1 || !w.is_contiguous() ||
      !x.is_contiguous(c10::MemoryFormat::ChannelsLast) || torch::enumtype::get_enum_name(o.padding_mode()) != "kZeros")
    return conv.forward(x);
  // [out, 1, kh, kw]'s channels-last strides, over the same elements.
  const Tensor view = w.as_strided(w.sizes(), {w.size(2) * w.size(3), 1, w.size(3), 1});
  namespace F = torch::nn::functional;
  return F::conv2d(x, view,
                   F::Conv2dFuncOptions()
                       .bias(conv.bias)
                       .stride(o.stride())
                       .padding(o.padding())
                       .dilation(o.dilation())
                       .groups(o.groups()));
}

}  // namespace codefy::model
