// Convolutions computed in the channels-last layout SequentialModel keeps
// its CPU activations in.
#pragma once

#include <torch/nn/modules/conv.h>
#include <torch/types.h>

namespace codefy::model {

/// `conv` on a channels-last CPU input `x`, computed channels-last. A weight
/// with one input channel per group ([out, 1, kh, kw]: a first layer on
/// grey images, a depthwise convolution) is laid out alike in both memory
/// formats, and oneDNN then computes and returns the contiguous (NCHW)
/// layout, which the channels-last layers after it convert, and their
/// gradient back: two strided copies of the activation per step. Such a
/// weight is handed over as a channels-last view of the same memory; other
/// convolutions run as they are.
torch::Tensor conv2d_channels_last(torch::nn::Conv2dImpl& conv, const torch::Tensor& x);

}  // namespace codefy::model
