// Visualize's drawing surface on PLplot.
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
#include "plot/canvas.h"

#include <png.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace codefy::plot {
namespace {

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

}  // namespace

PlplotStream::PlplotStream(Canvas& canvas, double text_px) : lock_(plplot_mutex()) {
  plplot_errors().clear();
  plsabort(on_plplot_abort);
  plsexit(on_plplot_exit);
  // Checked first: with an unknown device plinit would ask on stdin for another.
  static const bool available = memcairo_available();
  if (!available) {
    throw std::runtime_error("PLplot's memcairo driver is missing (install the Debian package plplot-driver-cairo)");
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
  plscol0(kLine, 31, 119, 180);     // matplotlib's default blue, #1f77b4
  plscol0(kBarFace, 98, 160, 203);  // #1f77b4 at alpha 0.7 over white, as CodefyUI's hist
  plscol0(kLine2, 255, 127, 14);    // matplotlib's next colours: #ff7f0e, #2ca02c, #d62728
  plscol0(kLine3, 44, 160, 44);
  plscol0(kLine4, 214, 39, 40);
  plscol0(kPaper, 255, 255, 255);
  plscol0(kLegendEdge, 204, 204, 204);
  plcol0(kInk);
}

PlplotStream::~PlplotStream() { close(); }

void PlplotStream::finish() {
  close();
  if (!plplot_errors().empty()) throw std::runtime_error("PLplot: " + plplot_errors());
}

void PlplotStream::close() {
  if (!open_) return;
  open_ = false;
  plend1();
  plsstrm(previous_);
}

std::string plplot_text(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    out += c;
    if (c == '#') out += '#';
  }
  return out;
}

double text_height_px(const Canvas& canvas) {
  const double scale = std::min(canvas.width / 640.0, canvas.height / 480.0);
  const double fits = std::min(0.6 * canvas.width / 13.0, 0.6 * canvas.height / 10.0);
  return std::min(std::clamp(11.0 * scale, 8.0, 22.0), fits);
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

}  // namespace codefy::plot
