// The drawing surface of Visualize's renderer: an RGB canvas that PLplot draws
// on through its memcairo driver, and its encoding to PNG.
#pragma once

#include <plplot.h>

#include <mutex>
#include <string>
#include <vector>

namespace codefy::plot {

/// The memcairo driver works at 72 dots per inch; PLplot sizes text in mm.
constexpr double kMmPerPixel = 25.4 / 72.0;

/// cmap0 slots every new stream sets.
enum Colour : PLINT {
  kInk = 1,         ///< black: axes, labels, text
  kLine = 2,        ///< matplotlib's first line colour, blue #1f77b4
  kBarFace = 3,     ///< histogram bars: #1f77b4 at alpha 0.7 over white
  kLine2 = 4,       ///< matplotlib's second line colour, orange #ff7f0e
  kLine3 = 5,       ///< matplotlib's third line colour, green #2ca02c
  kLine4 = 6,       ///< matplotlib's fourth line colour, red #d62728
  kPaper = 7,       ///< white: the legend's background
  kLegendEdge = 8,  ///< light grey: the legend's frame, as matplotlib's
};

/// A white RGB canvas, 3 bytes a pixel, rows top to bottom: what memcairo draws on.
struct Canvas {
  int width = 0;
  int height = 0;
  std::vector<unsigned char> rgb;

  Canvas(int w, int h) : width(w), height(h), rgb(static_cast<size_t>(w) * h * 3, 255) {}
};

/// One PLplot stream drawing on a canvas, holding the process-wide PLplot
/// lock for its life: PLplot keeps its state (stream table, current stream,
/// error handlers) in globals. Between construction and finish() the usual
/// PLplot calls draw on the canvas; text is `text_px` pixels high.
class PlplotStream {
 public:
  /// Throws std::runtime_error when the memcairo driver is missing or PLplot has no free stream.
  PlplotStream(Canvas& canvas, double text_px);
  PlplotStream(const PlplotStream&) = delete;
  PlplotStream& operator=(const PlplotStream&) = delete;
  ~PlplotStream();

  /// Ends the stream (memcairo copies its picture into the canvas here) and
  /// throws std::runtime_error with what PLplot reported meanwhile.
  void finish();

 private:
  void close();

  std::lock_guard<std::mutex> lock_;
  PLINT previous_ = 0;
  PLINT stream_ = -1;
  bool open_ = false;
  PLINT error_code_ = 0;
  char error_message_[1024] = {};  // plsError's buffer: PLplot copies at most 160 bytes
};

/// `text` for PLplot, which treats '#' as its escape character; everything else
/// goes to the driver as plain text (the cairo driver escapes Pango markup itself).
std::string plplot_text(const std::string& text);

/// Text height in pixels: about matplotlib's 10 pt at 640x480, scaled with the
/// canvas but kept readable on small ones and modest on large ones. On tiny
/// canvases it shrinks further so plvsta's margins (8 + 5 text heights across,
/// 5 + 5 down) leave room for the plot: PLplot refuses a viewport that does not fit.
double text_height_px(const Canvas& canvas);

/// The canvas as PNG bytes (libpng, in memory). Throws std::runtime_error when encoding fails.
std::string encode_png(const Canvas& canvas);

}  // namespace codefy::plot
