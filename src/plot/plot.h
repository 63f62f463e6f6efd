// Visualize's renderer: tensors drawn as a line, histogram, heatmap or image, to PNG.
#pragma once

#include "plot/axes.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace codefy::plot {

/// What to draw.
struct PlotRequest {
  std::string kind = "line";  ///< "line", "histogram", "heatmap", "image"
  std::string title;
  int64_t width = 640;
  int64_t height = 480;
  int64_t bins = 30;              ///< histogram
  XAxis x_axis = XAxis::kIndex;   ///< line: what x counts
  std::string y_label = "Value";  ///< line
};

/// One named line of a line plot.
struct Series {
  std::string name;      ///< its legend entry
  torch::Tensor values;  ///< any shape, flattened
};

/// Renders `data` to PNG bytes of request.width x request.height, drawn with
/// PLplot. line/histogram flatten any shape (non-finite values are skipped);
/// heatmap folds 1-D into a square and reshapes >2-D to (-1, last); image takes
/// [H,W], [C,H,W], [H,W,C] (C 1, 3 or 4) or [N,C,H,W] tiled into a grid. Throws
/// std::invalid_argument for an empty tensor, a bad request or data the kind
/// cannot show, and std::runtime_error when PLplot itself fails. Thread-safe.
std::string render_png(const torch::Tensor& data, const PlotRequest& request);

/// Renders several series as lines on shared axes (request.kind must be
/// "line"), each in its own colour, with a legend when there are two or more:
/// e.g. training and validation loss per epoch. The x axis is laid out by
/// line_x_axis for the longest series. Throws as render_png does, and
/// std::invalid_argument when `series` is empty.
std::string render_lines_png(const std::vector<Series>& series, const PlotRequest& request);

}  // namespace codefy::plot
