// Visualize's renderer: a tensor drawn as a line, histogram, heatmap or image, to PNG.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

namespace codefy::plot {

/// What to draw.
struct PlotRequest {
  std::string kind = "line";   ///< "line", "histogram", "heatmap", "image"
  std::string title;
  int64_t width = 640;
  int64_t height = 480;
  int64_t bins = 30;           ///< histogram
};

/// Renders `data` (any shape; flattened for line/histogram, last two dims for
/// heatmap, [H,W], [1,H,W] or [3,H,W] for image) to PNG bytes. Throws
/// std::invalid_argument for data the kind cannot show.
std::string render_png(const torch::Tensor& data, const PlotRequest& request);

/// Standard base64 (RFC 4648) of bytes.
std::string base64_encode(const std::string& bytes);

}  // namespace codefy::plot
