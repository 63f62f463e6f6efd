// Visualize's plots: line, histogram, heatmap and image, drawn with PLplot on a canvas.
#include "plot/plot.h"

#include "plot/axes.h"
#include "plot/canvas.h"

#include <torch/torch.h>

#include <plplot.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace codefy::plot {
namespace {

constexpr int64_t kMinSide = 16;
constexpr int64_t kMaxSide = 8192;
constexpr int64_t kMaxBins = 100000;
// Heatmaps larger than this per side are subsampled: PLplot fills one polygon per
// cell, and more cells than pixels only costs time (matplotlib resamples too).
constexpr int64_t kMaxHeatmapCells = 512;

// matplotlib's viridis, sampled every 0.1; PLplot interpolates linearly between.
constexpr int kViridisPoints = 11;
constexpr PLFLT kViridis[kViridisPoints][3] = {
    {0.267004, 0.004874, 0.329415}, {0.282623, 0.140926, 0.457517}, {0.253935, 0.265254, 0.529983},
    {0.206756, 0.371758, 0.553117}, {0.163625, 0.471133, 0.558148}, {0.127568, 0.566949, 0.550556},
    {0.134692, 0.658636, 0.517649}, {0.266941, 0.748751, 0.440573}, {0.477504, 0.821444, 0.318195},
    {0.741388, 0.873449, 0.149561}, {0.993248, 0.906157, 0.143936}};

/// The data as a contiguous CPU double tensor (complex data has no single value to plot).
torch::Tensor as_double(const torch::Tensor& data) {
  if (data.is_complex()) {
    throw std::invalid_argument("Visualize cannot plot complex tensors; take .real() or .abs() first");
  }
  return data.detach().to(torch::kCPU).to(torch::kDouble).contiguous();
}

// ---------------------------------------------------------------------------
// line

/// Series colours, in matplotlib's order; they repeat after the fourth.
PLINT series_colour(size_t i) {
  constexpr PLINT kColours[] = {kLine, kLine2, kLine3, kLine4};
  return kColours[i % (sizeof kColours / sizeof kColours[0])];
}

/// How many x ticks fit the viewport without their labels crowding.
int x_tick_budget(double viewport_px, double text_px, int64_t points) {
  const double digits = static_cast<double>(std::to_string(points).size());
  const double per_tick_px = text_px * (3.0 + 0.6 * digits);
  return static_cast<int>(std::clamp(std::floor(viewport_px / per_tick_px), 2.0, 8.0));
}

/// Draws x's ticks on the bottom and top edges and labels them below, as plbox
/// would if its ticks could start anywhere but at a multiple of the step.
void draw_x_ticks(const LineXAxis& x, const Range& y) {
  // PLplot's default major tick length: 3 mm scaled by the page size.
  PLFLT page_x0, page_x1, page_y0, page_y1;
  plgspa(&page_x0, &page_x1, &page_y0, &page_y1);
  const double tick_mm = 3.0 * 0.5 * ((page_x1 - page_x0) + (page_y1 - page_y0)) / 200.0;
  PLFLT vx0, vx1, vy0, vy1;
  plgvpd(&vx0, &vx1, &vy0, &vy1);
  const double tick = tick_mm / ((vy1 - vy0) * (page_y1 - page_y0)) * (y.hi - y.lo);
  for (const double t : x.ticks) {
    pljoin(t, y.lo, t, y.lo + tick);
    pljoin(t, y.hi, t, y.hi - tick);
    char label[32];
    std::snprintf(label, sizeof label, "%.0f", t);
    plmtex("b", 1.5, (t - x.range.lo) / (x.range.hi - x.range.lo), 0.5, label);
  }
}

void draw_legend(const std::vector<std::string>& names) {
  const auto n = static_cast<PLINT>(names.size());
  std::vector<PLINT> opts(names.size(), PL_LEGEND_LINE), text_colours(names.size(), kInk), line_styles(names.size(), 1);
  std::vector<PLINT> line_colours;
  std::vector<PLFLT> line_widths(names.size(), 1.5);
  std::vector<std::string> texts;
  for (size_t i = 0; i < names.size(); ++i) {
    line_colours.push_back(series_colour(i));
    texts.push_back(plplot_text(names[i]));
  }
  std::vector<const char*> text_ptrs;
  text_ptrs.reserve(texts.size());
  for (const auto& t : texts) text_ptrs.push_back(t.c_str());
  PLFLT width = 0, height = 0;
  plwidth(1.0);
  // Top right inside the axes, where a falling curve leaves room. Box, symbol
  // arrays are not read for line-only entries.
  pllegend(&width, &height, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
           PL_POSITION_TOP | PL_POSITION_RIGHT | PL_POSITION_INSIDE, 0.02, 0.03, 0.08, kPaper, kLegendEdge, 1, 0, 0, n,
           opts.data(), 0.8, 1.0, 2.0, 0.0, text_colours.data(), text_ptrs.data(), nullptr, nullptr, nullptr, nullptr,
           line_colours.data(), line_styles.data(), line_widths.data(), nullptr, nullptr, nullptr, nullptr);
}

/// Draws one series as polylines at x = first, first + 1, ... Non-finite values
/// break the line, as in matplotlib; a lone finite value is drawn as a dot so it
/// does not vanish.
void draw_series(const torch::Tensor& values, double first) {
  const auto* v = values.data_ptr<double>();
  std::vector<PLFLT> xs, ys;
  auto flush = [&] {
    if (xs.size() == 1) {
      plpoin(1, xs.data(), ys.data(), 17);  // 17: a small filled dot
    } else if (xs.size() > 1) {
      plline(static_cast<PLINT>(xs.size()), xs.data(), ys.data());
    }
    xs.clear();
    ys.clear();
  };
  for (int64_t i = 0; i < values.numel(); ++i) {
    if (std::isfinite(v[i])) {
      xs.push_back(first + static_cast<PLFLT>(i));
      ys.push_back(v[i]);
    } else {
      flush();
    }
  }
  flush();
}

/// Every series (flat double tensors) on shared axes; a legend for two or more.
void draw_lines(Canvas& canvas, const std::vector<torch::Tensor>& values, const std::vector<std::string>& names,
                const PlotRequest& request) {
  int64_t points = 1;
  Range data{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(), false};
  for (const auto& v : values) {
    points = std::max(points, v.numel());
    const Range r = finite_range(v.data_ptr<double>(), v.numel());
    if (!r.any) continue;
    data = {std::min(data.lo, r.lo), std::max(data.hi, r.hi), true};
  }
  if (!data.any) data = {0.0, 1.0, false};
  const Range y = axis_range(data, true);

  const double text_px = text_height_px(canvas);
  PlplotStream pl(canvas, text_px);
  plvsta();
  PLFLT vx0, vx1, vy0, vy1;
  plgvpd(&vx0, &vx1, &vy0, &vy1);
  const LineXAxis x = line_x_axis(points, request.x_axis, x_tick_budget((vx1 - vx0) * canvas.width, text_px, points));
  plwind(x.range.lo, x.range.hi, y.lo, y.hi);
  plbox("bc", 0.0, 0, "bcnstv", 0.0, 0);
  draw_x_ticks(x, y);
  pllab(x.label.c_str(), plplot_text(request.y_label).c_str(), plplot_text(request.title).c_str());

  plwidth(1.5);
  for (size_t i = 0; i < values.size(); ++i) {
    plcol0(series_colour(i));
    draw_series(values[i], x.first);
  }
  plcol0(kInk);
  if (values.size() >= 2) draw_legend(names);
  pl.finish();
}

// ---------------------------------------------------------------------------
// histogram

void draw_histogram(Canvas& canvas, const torch::Tensor& values, int64_t bins, const std::string& title) {
  if (bins < 1 || bins > kMaxBins) {
    throw std::invalid_argument("histogram bins must be between 1 and " + std::to_string(kMaxBins) + ", got " +
                                std::to_string(bins));
  }
  const auto finite = values.index({torch::isfinite(values)});
  const Range data = finite_range(finite.data_ptr<double>(), finite.numel());
  // matplotlib bins a constant value over value ± 0.5; axis_range does the same.
  const Range edges = axis_range(data, false);
  std::vector<double> counts(static_cast<size_t>(bins), 0.0);
  if (finite.numel() > 0) {
    // torch::histogram, not histc: histc narrows its range to float, which overflows
    // for values beyond ±3.4e38.
    const auto hist = std::get<0>(torch::histogram(finite, bins, std::vector<double>{edges.lo, edges.hi})).contiguous();
    std::copy_n(hist.data_ptr<double>(), bins, counts.begin());
  }
  const double peak = *std::max_element(counts.begin(), counts.end());
  const Range x = axis_range(edges, true);
  const Range y{0.0, peak > 0 ? peak * 1.05 : 1.0, true};

  PlplotStream pl(canvas, text_height_px(canvas));
  plvsta();
  plwind(x.lo, x.hi, y.lo, y.hi);
  const double width = (edges.hi - edges.lo) / static_cast<double>(bins);
  for (int64_t b = 0; b < bins; ++b) {
    if (counts[b] <= 0) continue;
    const PLFLT x0 = edges.lo + width * static_cast<double>(b);
    const PLFLT x1 = b + 1 == bins ? edges.hi : x0 + width;
    PLFLT bx[5] = {x0, x0, x1, x1, x0};
    PLFLT by[5] = {0.0, counts[b], counts[b], 0.0, 0.0};
    plcol0(kBarFace);
    plfill(4, bx, by);
    plcol0(kInk);  // edgecolor="black", as CodefyUI draws its bars
    plline(5, bx, by);
  }
  plcol0(kInk);
  plbox("bcnst", 0.0, 0, "bcnstv", 0.0, 0);
  pllab("Value", "Frequency", plplot_text(title).c_str());
  pl.finish();
}

// ---------------------------------------------------------------------------
// heatmap

/// Where plimagefr's cell corner (ix, iy) lands: cell (column c, row r) spans
/// c-0.5..c+0.5 and r-0.5..r+0.5 as in imshow, `stride` data cells per drawn cell.
struct CellMap {
  double x_stride = 1.0;
  double y_stride = 1.0;
};

void cell_corner(PLFLT ix, PLFLT iy, PLFLT_NC_SCALAR x, PLFLT_NC_SCALAR y, PLPointer data) {
  const auto* map = static_cast<const CellMap*>(data);
  *x = ix * map->x_stride - 0.5;
  *y = iy * map->y_stride - 0.5;
}

/// Evenly spread indices [0, size) at most `limit` of them (all when size <= limit).
torch::Tensor spread_indices(int64_t size, int64_t limit) {
  if (size <= limit) return torch::arange(size, torch::kLong);
  return torch::floor(torch::arange(limit, torch::kDouble) * (static_cast<double>(size) / limit)).to(torch::kLong);
}

void draw_heatmap(Canvas& canvas, torch::Tensor values, const std::string& title) {
  if (values.dim() <= 1) {
    // Fold 1-D data into a square. CodefyUI pads with zeros; the padding here is
    // NaN, drawn blank, so it cannot be mistaken for data.
    const int64_t n = values.numel();
    const auto side = static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(n))));
    auto square = torch::full({side * side}, std::numeric_limits<double>::quiet_NaN(), torch::kDouble);
    square.narrow(0, 0, n).copy_(values.reshape({-1}));
    values = square.reshape({side, side});
  } else if (values.dim() > 2) {
    values = values.reshape({-1, values.size(-1)});
  }
  const int64_t rows = values.size(0);
  const int64_t cols = values.size(1);
  const Range data = finite_range(values.data_ptr<double>(), values.numel());
  // A constant map gets a range around its value, so the colour bar still has one.
  const Range z = axis_range(data, false);

  const auto row_idx = spread_indices(rows, kMaxHeatmapCells);
  const auto col_idx = spread_indices(cols, kMaxHeatmapCells);
  // plimagefr indexes [x][y], i.e. [column][row].
  const auto grid = values.index_select(0, row_idx).index_select(1, col_idx).t().contiguous();
  const int64_t nx = grid.size(0);
  const int64_t ny = grid.size(1);
  std::vector<const PLFLT*> columns(static_cast<size_t>(nx));
  for (int64_t i = 0; i < nx; ++i) columns[i] = grid.data_ptr<double>() + i * ny;
  CellMap map{static_cast<double>(cols) / nx, static_cast<double>(rows) / ny};

  PlplotStream pl(canvas, text_height_px(canvas));
  PLFLT pos[kViridisPoints], r[kViridisPoints], g[kViridisPoints], b[kViridisPoints];
  for (int i = 0; i < kViridisPoints; ++i) {
    pos[i] = i / static_cast<PLFLT>(kViridisPoints - 1);
    r[i] = kViridis[i][0];
    g[i] = kViridis[i][1];
    b[i] = kViridis[i][2];
  }
  plscmap1n(256);
  plscmap1l(1, kViridisPoints, pos, r, g, b, nullptr);

  // The standard viewport, narrowed on the right for the colour bar and its labels.
  plvsta();
  PLFLT vx0, vx1, vy0, vy1;
  plgvpd(&vx0, &vx1, &vy0, &vy1);
  plvpor(vx0, vx1 - 0.14, vy0, vy1);
  // Row 0 at the top, as imshow draws it.
  plwind(-0.5, cols - 0.5, rows - 0.5, -0.5);
  // Values outside [z.lo, z.hi] (only non-finite ones, by construction) and NaN are
  // not drawn and show the white background.
  plimagefr(columns.data(), static_cast<PLINT>(nx), static_cast<PLINT>(ny), 0.0, 1.0, 0.0, 1.0, z.lo, z.hi, z.lo, z.hi,
            cell_corner, &map);
  plcol0(kInk);
  // Integer ticks only: cells sit at integer indices.
  plbox("bcnt", integer_tick_step(cols, 8), 0, "bcntv", integer_tick_step(rows, 8), 0);
  pllab("Column", "Row", plplot_text(title).c_str());

  PLFLT bar_width = 0, bar_height = 0;
  const PLINT label_opts[1] = {PL_COLORBAR_LABEL_BOTTOM};
  const char* labels[1] = {""};
  const char* axis_opts[1] = {"bcvtm"};
  const PLFLT ticks[1] = {0.0};
  const PLINT sub_ticks[1] = {0};
  const PLINT n_values[1] = {2};
  const PLFLT bar_values[2] = {z.lo, z.hi};
  const PLFLT* bar_rows[1] = {bar_values};
  plcolorbar(&bar_width, &bar_height, PL_COLORBAR_GRADIENT,
             PL_POSITION_RIGHT | PL_POSITION_OUTSIDE | PL_POSITION_VIEWPORT, 0.03, 0.0, 0.04, 1.0, 0, kInk, 0, 0.0, 0.0,
             0, 0.0, 0, label_opts, labels, 1, axis_opts, ticks, sub_ticks, n_values, bar_rows);
  pl.finish();
}

// ---------------------------------------------------------------------------
// image

/// [C,H,W] with C 1 or 3 (alpha dropped), from the shapes Visualize accepts.
torch::Tensor image_chw(const torch::Tensor& data) {
  const auto is_channels = [](int64_t c) { return c == 1 || c == 3 || c == 4; };
  torch::Tensor img;
  if (data.dim() == 2) {
    img = data.unsqueeze(0);
  } else if (data.dim() == 3 && is_channels(data.size(0))) {
    img = data;
  } else if (data.dim() == 3 && is_channels(data.size(2))) {
    img = data.permute({2, 0, 1});  // [H,W,C], as matplotlib also takes
  } else if (data.dim() == 4) {
    const int64_t n = data.size(0);
    // Channel counts other than 1/3/4 show their first channel, as in CodefyUI.
    const auto batch = is_channels(data.size(1)) ? data : data.narrow(1, 0, 1);
    if (n == 1) {
      img = batch[0];
    } else {
      // Tile into a near-square grid with a 1-pixel gap filled with the smallest
      // value, as CodefyUI does.
      const int64_t c = batch.size(1), h = batch.size(2), w = batch.size(3);
      const auto grid_cols = static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(n))));
      const int64_t grid_rows = (n + grid_cols - 1) / grid_cols;
      const auto finite = batch.index({torch::isfinite(batch)});
      const double fill = finite.numel() > 0 ? finite.min().item<double>() : 0.0;
      img = torch::full({c, grid_rows * (h + 1) + 1, grid_cols * (w + 1) + 1}, fill, batch.options());
      for (int64_t i = 0; i < n; ++i) {
        const int64_t y0 = 1 + (i / grid_cols) * (h + 1);
        const int64_t x0 = 1 + (i % grid_cols) * (w + 1);
        img.narrow(1, y0, h).narrow(2, x0, w).copy_(batch[i]);
      }
    }
  } else {
    throw std::invalid_argument("image plots take [H,W], [C,H,W], [H,W,C] or [N,C,H,W] with C 1, 3 or 4; got " +
                                std::to_string(data.dim()) + "-D data of shape " + c10::str(data.sizes()));
  }
  if (img.size(0) == 4) img = img.narrow(0, 0, 3);
  return img;
}

/// Intensities in [0,1] for `img`, whose original dtype was `dtype`.
///
/// Integer data is 8-bit style, 0..255. Float data is meant to be 0..1 and is
/// clipped, as CodefyUI does, with one exception chosen here: data with negative
/// values was normalised (to [-1,1] by Normalize(0.5, 0.5) or a tanh generator, or
/// to zero mean), and clipping would black out half of it, so it is mapped
/// linearly from its min..max instead. Non-finite values are left out of min..max
/// and drawn black (NaN, -inf) or white (+inf).
torch::Tensor image_intensity(torch::Tensor img, c10::ScalarType dtype) {
  if (c10::isIntegralType(dtype, /*includeBool=*/false)) {
    img = img / 255.0;
  } else {
    const auto finite = img.index({torch::isfinite(img)});
    if (finite.numel() > 0) {
      const double lo = finite.min().item<double>();
      const double hi = finite.max().item<double>();
      if (lo < 0.0) img = hi > lo ? (img - lo) / (hi - lo) : torch::full_like(img, 0.5);
    }
  }
  return torch::nan_to_num(img, 0.0, 1.0, 0.0).clamp(0.0, 1.0);
}

void draw_image(Canvas& canvas, const torch::Tensor& values, c10::ScalarType dtype, const std::string& title) {
  auto img = image_intensity(image_chw(values), dtype);
  const int64_t h = img.size(1), w = img.size(2);
  if (h == 0 || w == 0) throw std::invalid_argument("image plots need a non-empty height and width");

  // Fit the picture, aspect kept, below a band for the title.
  const double text_px = text_height_px(canvas);
  const int margin = static_cast<int>(std::lround(text_px));
  const int top = title.empty() ? margin : static_cast<int>(std::lround(text_px * 3.0));
  const int area_w = std::max(1, canvas.width - 2 * margin);
  const int area_h = std::max(1, canvas.height - top - margin);
  const double scale = std::min(area_w / static_cast<double>(w), area_h / static_cast<double>(h));
  const int out_w = std::clamp(static_cast<int>(std::lround(w * scale)), 1, area_w);
  const int out_h = std::clamp(static_cast<int>(std::lround(h * scale)), 1, area_h);
  // Enlarging keeps pixels crisp (nearest, as imshow); shrinking averages (area) so
  // fine detail does not alias.
  namespace F = torch::nn::functional;
  auto opts = F::InterpolateFuncOptions().size(std::vector<int64_t>{out_h, out_w});
  if (scale >= 1.0) {
    opts.mode(torch::kNearest);
  } else {
    opts.mode(torch::kArea);
  }
  auto pixels = F::interpolate(img.unsqueeze(0).to(torch::kFloat), opts)[0];
  if (pixels.size(0) == 1) pixels = pixels.expand({3, out_h, out_w});  // grayscale
  const auto bytes = pixels.mul(255.0).round().clamp(0, 255).to(torch::kUInt8).permute({1, 2, 0}).contiguous();

  const int x0 = margin + (area_w - out_w) / 2;
  const int y0 = top + (area_h - out_h) / 2;
  const auto* src = bytes.data_ptr<uint8_t>();
  for (int row = 0; row < out_h; ++row) {
    std::memcpy(&canvas.rgb[(static_cast<size_t>(y0 + row) * canvas.width + x0) * 3],
                src + static_cast<size_t>(row) * out_w * 3, static_cast<size_t>(out_w) * 3);
  }
  if (title.empty()) return;  // no axes: PLplot has nothing else to draw

  PlplotStream pl(canvas, text_px);
  // The viewport is the picture (PLplot's y grows upwards), so the title sits above it.
  plvpor(x0 / static_cast<double>(canvas.width), (x0 + out_w) / static_cast<double>(canvas.width),
         1.0 - (y0 + out_h) / static_cast<double>(canvas.height), 1.0 - y0 / static_cast<double>(canvas.height));
  plwind(0.0, 1.0, 0.0, 1.0);
  plcol0(kInk);
  plmtex("t", 1.0, 0.5, 0.5, plplot_text(title).c_str());
  pl.finish();
}

}  // namespace

namespace {

void check_not_empty(const torch::Tensor& data) {
  if (!data.defined() || data.numel() == 0) {
    throw std::invalid_argument("Visualize got an empty tensor (" +
                                (data.defined() ? c10::str("shape ", data.sizes()) : std::string("undefined")) +
                                "); there is nothing to plot");
  }
}

void check_size(const PlotRequest& request) {
  if (request.width < kMinSide || request.width > kMaxSide || request.height < kMinSide || request.height > kMaxSide) {
    throw std::invalid_argument("plot size must be between " + std::to_string(kMinSide) + " and " +
                                std::to_string(kMaxSide) + " pixels a side, got " + std::to_string(request.width) +
                                "x" + std::to_string(request.height));
  }
}

}  // namespace

std::string render_png(const torch::Tensor& data, const PlotRequest& request) {
  check_not_empty(data);
  check_size(request);
  const auto& kind = request.kind;
  if (kind != "line" && kind != "histogram" && kind != "heatmap" && kind != "image") {
    throw std::invalid_argument("unknown plot kind \"" + kind + "\"; expected line, histogram, heatmap or image");
  }
  const auto values = as_double(data);
  Canvas canvas(static_cast<int>(request.width), static_cast<int>(request.height));
  if (kind == "line") {
    draw_lines(canvas, {values.reshape({-1})}, {""}, request);
  } else if (kind == "histogram") {
    draw_histogram(canvas, values.reshape({-1}), request.bins, request.title);
  } else if (kind == "heatmap") {
    draw_heatmap(canvas, values, request.title);
  } else {
    draw_image(canvas, values, data.scalar_type(), request.title);
  }
  return encode_png(canvas);
}

std::string render_lines_png(const std::vector<Series>& series, const PlotRequest& request) {
  if (series.empty()) throw std::invalid_argument("a line plot needs at least one series");
  if (request.kind != "line") {
    throw std::invalid_argument("several series are drawn as a line plot, not as \"" + request.kind + "\"");
  }
  check_size(request);
  std::vector<torch::Tensor> values;
  std::vector<std::string> names;
  for (const Series& s : series) {
    check_not_empty(s.values);
    values.push_back(as_double(s.values).reshape({-1}));
    names.push_back(s.name);
  }
  Canvas canvas(static_cast<int>(request.width), static_cast<int>(request.height));
  draw_lines(canvas, values, names, request);
  return encode_png(canvas);
}

}  // namespace codefy::plot
