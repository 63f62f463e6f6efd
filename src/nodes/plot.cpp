// Visualize's renderer on PLplot.
//
// PLplot (Debian's libplplot) draws the axes, ticks, labels, text, lines, bars,
// heatmap cells and colour bar through its "memcairo" driver (Debian's
// plplot-driver-cairo), which renders with cairo into an RGB buffer we own; libpng
// then encodes that buffer to PNG in memory. Nothing touches the file system.
//
// PLplot keeps its state in process-wide globals (the stream table, the current
// stream, the error handlers), so every render takes one mutex for the whole
// PLplot part and uses a stream of its own, created with plmkstrm and ended with
// plend1. Data preparation and PNG encoding happen outside the lock.
#include "nodes/plot.h"

#include <torch/torch.h>

#include <plplot.h>
#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
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
// The memcairo driver works at 72 dots per inch; PLplot sizes text in mm.
constexpr double kMmPerPixel = 25.4 / 72.0;

// cmap0 slots this renderer sets on each new stream.
enum Colour : PLINT { kInk = 1, kLine = 2, kBarFace = 3 };

// matplotlib's viridis, sampled every 0.1; PLplot interpolates linearly between.
constexpr int kViridisPoints = 11;
constexpr PLFLT kViridis[kViridisPoints][3] = {
    {0.267004, 0.004874, 0.329415}, {0.282623, 0.140926, 0.457517}, {0.253935, 0.265254, 0.529983},
    {0.206756, 0.371758, 0.553117}, {0.163625, 0.471133, 0.558148}, {0.127568, 0.566949, 0.550556},
    {0.134692, 0.658636, 0.517649}, {0.266941, 0.748751, 0.440573}, {0.477504, 0.821444, 0.318195},
    {0.741388, 0.873449, 0.149561}, {0.993248, 0.906157, 0.143936}};

/// A white RGB canvas, 3 bytes a pixel, rows top to bottom: what memcairo draws on.
struct Canvas {
  int width = 0;
  int height = 0;
  std::vector<unsigned char> rgb;

  Canvas(int w, int h) : width(w), height(h), rgb(static_cast<size_t>(w) * h * 3, 255) {}
};

// ---------------------------------------------------------------------------
// PLplot session

std::mutex& plplot_mutex() {
  static std::mutex m;
  return m;
}

// PLplot reports recoverable errors through the abort handler (the operation is
// skipped); collected here, under plplot_mutex, and turned into an exception once
// the stream is closed.
std::string& plplot_errors() {
  static std::string errors;
  return errors;
}

void on_plplot_abort(PLCHAR_VECTOR message) {
  auto& errors = plplot_errors();
  if (!errors.empty()) errors += "; ";
  errors += message ? message : "unknown error";
}

// plexit() (fatal: out of memory, a driver that fails to load) calls this and then
// exit()s the process unless the handler does not return. Killing a server over a
// plot is worse than unwinding through PLplot's C frames (x86-64 code carries
// unwind tables), so throw.
int on_plplot_exit(PLCHAR_VECTOR message) {
  throw std::runtime_error(std::string("PLplot failed: ") + (message ? message : "unknown error"));
}

bool memcairo_available() {
  // plgDevs fills caller-owned arrays; 256 entries is far more than any build has.
  std::vector<PLCHAR_VECTOR> menu(256), names(256);
  PLCHAR_VECTOR* menu_ptr = menu.data();
  PLCHAR_VECTOR* names_ptr = names.data();
  int count = static_cast<int>(names.size());
  plgDevs(&menu_ptr, &names_ptr, &count);
  for (int i = 0; i < count; ++i) {
    if (names_ptr[i] && std::strcmp(names_ptr[i], "memcairo") == 0) return true;
  }
  return false;
}

/// One PLplot stream drawing on `canvas`, holding the PLplot lock for its life.
class PlplotStream {
 public:
  PlplotStream(Canvas& canvas, double text_px) : lock_(plplot_mutex()) {
    plplot_errors().clear();
    plsabort(on_plplot_abort);
    plsexit(on_plplot_exit);
    // Checked first: with an unknown device plinit would ask on stdin for another.
    static const bool available = memcairo_available();
    if (!available) {
      throw std::runtime_error(
          "PLplot's memcairo driver is missing (install the Debian package plplot-driver-cairo)");
    }
    plgstrm(&previous_);
    plmkstrm(&stream_);
    if (stream_ < 0) throw std::runtime_error("PLplot has no free stream");
    // With an error buffer PLplot stops printing aborted operations to stderr; the
    // abort handler above still collects every message.
    plsError(&error_code_, error_message_);
    plsdev("memcairo");
    // memcairo starts from the buffer's current pixels, so pixels blitted into the
    // canvas beforehand (images) stay under what PLplot draws.
    plsmem(canvas.width, canvas.height, canvas.rgb.data());
    plinit();
    open_ = true;
    pladv(0);
    plschr(text_px * kMmPerPixel, 1.0);
    plscol0(kInk, 0, 0, 0);
    plscol0(kLine, 31, 119, 180);       // matplotlib's default blue, #1f77b4
    plscol0(kBarFace, 98, 160, 203);    // #1f77b4 at alpha 0.7 over white, as CodefyUI's hist
    plcol0(kInk);
  }

  PlplotStream(const PlplotStream&) = delete;
  PlplotStream& operator=(const PlplotStream&) = delete;

  ~PlplotStream() { close(); }

  /// Ends the stream (memcairo copies its picture into the canvas here) and throws
  /// what PLplot reported meanwhile.
  void finish() {
    close();
    if (!plplot_errors().empty()) throw std::runtime_error("PLplot: " + plplot_errors());
  }

 private:
  void close() {
    if (!open_) return;
    open_ = false;
    plend1();
    plsstrm(previous_);
  }

  std::lock_guard<std::mutex> lock_;
  PLINT previous_ = 0;
  PLINT stream_ = -1;
  bool open_ = false;
  PLINT error_code_ = 0;
  char error_message_[1024] = {};  // plsError's buffer: PLplot copies at most 160 bytes
};

// ---------------------------------------------------------------------------
// Helpers

/// PLplot treats '#' as its escape character; everything else goes to the driver
/// as plain text (the cairo driver escapes Pango markup itself).
std::string plplot_text(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    out += c;
    if (c == '#') out += '#';
  }
  return out;
}

/// Text height in pixels: about matplotlib's 10 pt at 640x480, scaled with the
/// canvas but kept readable on small ones and modest on large ones. On tiny
/// canvases it shrinks further so plvsta's margins (8 + 5 text heights across,
/// 5 + 5 down) leave room for the plot: PLplot refuses a viewport that does not fit.
double text_height_px(const Canvas& canvas) {
  const double scale = std::min(canvas.width / 640.0, canvas.height / 480.0);
  const double fits = std::min(0.6 * canvas.width / 13.0, 0.6 * canvas.height / 10.0);
  return std::min(std::clamp(11.0 * scale, 8.0, 22.0), fits);
}

struct Range {
  double lo = 0.0;
  double hi = 1.0;
  bool any = false;  ///< whether any finite value was seen
};

Range finite_range(const double* values, int64_t n) {
  Range r;
  r.lo = std::numeric_limits<double>::infinity();
  r.hi = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(values[i])) continue;
    r.lo = std::min(r.lo, values[i]);
    r.hi = std::max(r.hi, values[i]);
    r.any = true;
  }
  if (!r.any) {
    r.lo = 0.0;
    r.hi = 1.0;
  }
  return r;
}

/// An axis range PLplot can draw: never empty, never infinite, with matplotlib's
/// 5% margin when `margin` is set.
Range axis_range(Range r, bool margin) {
  if (!(r.hi > r.lo)) {
    const double pad = std::max(0.5, std::abs(r.lo) * 0.05);
    r.lo -= pad;
    r.hi += pad;
  } else if (margin) {
    const double pad = (r.hi - r.lo) * 0.05;
    r.lo -= pad;
    r.hi += pad;
  }
  // Spans beyond double's range (values near ±1e308) would make PLplot's tick
  // arithmetic overflow; shrink to the largest span that still works.
  const double limit = std::numeric_limits<double>::max() / 8;
  r.lo = std::clamp(r.lo, -limit, limit);
  r.hi = std::clamp(r.hi, -limit, limit);
  return r;
}

/// A 1-2-5 integer tick step giving at most about `max_ticks` ticks over `span`.
double integer_tick_step(double span, int max_ticks) {
  for (double magnitude = 1.0;; magnitude *= 10.0) {
    for (double factor : {1.0, 2.0, 5.0}) {
      if (span / (factor * magnitude) <= max_ticks) return factor * magnitude;
    }
  }
}

/// The data as a contiguous CPU double tensor (complex data has no single value to plot).
torch::Tensor as_double(const torch::Tensor& data) {
  if (data.is_complex()) {
    throw std::invalid_argument("Visualize cannot plot complex tensors; take .real() or .abs() first");
  }
  return data.detach().to(torch::kCPU).to(torch::kDouble).contiguous();
}

std::string encode_png(const Canvas& canvas) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(canvas.width);
  image.height = static_cast<png_uint_32>(canvas.height);
  image.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  // First call sizes the output, second writes it.
  if (!png_image_write_to_memory(&image, nullptr, &size, 0, canvas.rgb.data(), 0, nullptr)) {
    throw std::runtime_error(std::string("PNG encoding failed: ") + image.message);
  }
  std::string png(size, '\0');
  if (!png_image_write_to_memory(&image, png.data(), &size, 0, canvas.rgb.data(), 0, nullptr)) {
    throw std::runtime_error(std::string("PNG encoding failed: ") + image.message);
  }
  png.resize(size);
  return png;
}

// ---------------------------------------------------------------------------
// line

void draw_line(Canvas& canvas, const torch::Tensor& values, const std::string& title) {
  const auto* v = values.data_ptr<double>();
  const int64_t n = values.numel();
  const Range x = axis_range({0.0, static_cast<double>(n - 1), true}, true);
  const Range y = axis_range(finite_range(v, n), true);

  PlplotStream pl(canvas, text_height_px(canvas));
  plvsta();
  plwind(x.lo, x.hi, y.lo, y.hi);
  plbox("bcnst", 0.0, 0, "bcnstv", 0.0, 0);
  pllab("Index", "Value", plplot_text(title).c_str());

  // Non-finite values break the line, as in matplotlib; runs of finite values are
  // drawn as polylines and a lone finite value as a dot so it does not vanish.
  plcol0(kLine);
  plwidth(1.5);
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
  for (int64_t i = 0; i < n; ++i) {
    if (std::isfinite(v[i])) {
      xs.push_back(static_cast<PLFLT>(i));
      ys.push_back(v[i]);
    } else {
      flush();
    }
  }
  flush();
  pl.finish();
}

// ---------------------------------------------------------------------------
// histogram

void draw_histogram(Canvas& canvas, const torch::Tensor& values, int64_t bins, const std::string& title) {
  if (bins < 1 || bins > kMaxBins) {
    throw std::invalid_argument("histogram bins must be between 1 and " + std::to_string(kMaxBins) +
                                ", got " + std::to_string(bins));
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
  return torch::floor(torch::arange(limit, torch::kDouble) * (static_cast<double>(size) / limit))
      .to(torch::kLong);
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
  plimagefr(columns.data(), static_cast<PLINT>(nx), static_cast<PLINT>(ny), 0.0, 1.0, 0.0, 1.0, z.lo,
            z.hi, z.lo, z.hi, cell_corner, &map);
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
             PL_POSITION_RIGHT | PL_POSITION_OUTSIDE | PL_POSITION_VIEWPORT, 0.03, 0.0, 0.04, 1.0, 0,
             kInk, 0, 0.0, 0.0, 0, 0.0, 0, label_opts, labels, 1, axis_opts, ticks, sub_ticks, n_values,
             bar_rows);
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
                                std::to_string(data.dim()) + "-D data of shape " +
                                c10::str(data.sizes()));
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

std::string render_png(const torch::Tensor& data, const PlotRequest& request) {
  if (!data.defined() || data.numel() == 0) {
    throw std::invalid_argument("Visualize got an empty tensor (" +
                                (data.defined() ? c10::str("shape ", data.sizes()) : std::string("undefined")) +
                                "); there is nothing to plot");
  }
  if (request.width < kMinSide || request.width > kMaxSide || request.height < kMinSide ||
      request.height > kMaxSide) {
    throw std::invalid_argument("plot size must be between " + std::to_string(kMinSide) + " and " +
                                std::to_string(kMaxSide) + " pixels a side, got " + std::to_string(request.width) +
                                "x" + std::to_string(request.height));
  }
  const auto& kind = request.kind;
  if (kind != "line" && kind != "histogram" && kind != "heatmap" && kind != "image") {
    throw std::invalid_argument("unknown plot kind \"" + kind + "\"; expected line, histogram, heatmap or image");
  }
  const auto values = as_double(data);
  Canvas canvas(static_cast<int>(request.width), static_cast<int>(request.height));
  if (kind == "line") {
    draw_line(canvas, values.reshape({-1}), request.title);
  } else if (kind == "histogram") {
    draw_histogram(canvas, values.reshape({-1}), request.bins, request.title);
  } else if (kind == "heatmap") {
    draw_heatmap(canvas, values, request.title);
  } else {
    draw_image(canvas, values, data.scalar_type(), request.title);
  }
  return encode_png(canvas);
}

std::string base64_encode(const std::string& bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16 |
                       static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8 |
                       static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += kAlphabet[v >> 6 & 63];
    out += kAlphabet[v & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (rest == 2) v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += rest == 2 ? kAlphabet[v >> 6 & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace codefy::plot
