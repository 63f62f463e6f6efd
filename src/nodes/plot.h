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

/// Renders `data` to PNG bytes of request.width x request.height, drawn with
/// PLplot. line/histogram flatten any shape (non-finite values are skipped);
/// heatmap folds 1-D into a square and reshapes >2-D to (-1, last); image takes
/// [H,W], [C,H,W], [H,W,C] (C 1, 3 or 4) or [N,C,H,W] tiled into a grid. Throws
/// std::invalid_argument for an empty tensor, a bad request or data the kind
/// cannot show, and std::runtime_error when PLplot itself fails. Thread-safe.
std::string render_png(const torch::Tensor& data, const PlotRequest& request);

/// Standard base64 (RFC 4648) of bytes.
std::string base64_encode(const std::string& bytes);

}  // namespace codefy::plot
