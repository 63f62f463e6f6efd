// Visualize's renderer: every kind gives a decodable PNG of the requested size,
// pixels land where the data says, bad data fails cleanly, several series share
// one line plot with a legend.
#include "plot/plot.h"

#include <gtest/gtest.h>
#include <png.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace codefy::plot {
namespace {

/// A decoded PNG: RGB, rows top to bottom.
struct Decoded {
  int width = 0;
  int height = 0;
  std::vector<unsigned char> rgb;

  const unsigned char* at(int x, int y) const { return &rgb[(static_cast<size_t>(y) * width + x) * 3]; }
};

Decoded decode(const std::string& png) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, png.data(), png.size())) {
    ADD_FAILURE() << "not a PNG libpng can read: " << image.message;
    return {};
  }
  image.format = PNG_FORMAT_RGB;
  Decoded out;
  out.width = static_cast<int>(image.width);
  out.height = static_cast<int>(image.height);
  out.rgb.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.rgb.data(), 0, nullptr)) {
    ADD_FAILURE() << "PNG decode failed: " << image.message;
  }
  return out;
}

bool has_png_signature(const std::string& bytes) {
  static const unsigned char kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  return bytes.size() >= 8 && std::memcmp(bytes.data(), kSignature, 8) == 0;
}

/// Width and height straight from the IHDR chunk, independent of libpng.
std::pair<uint32_t, uint32_t> ihdr_size(const std::string& png) {
  auto be32 = [&](size_t at) {
    const auto* p = reinterpret_cast<const unsigned char*>(png.data()) + at;
    return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
  };
  EXPECT_GE(png.size(), 24u);
  EXPECT_EQ(png.substr(12, 4), "IHDR");
  return {be32(16), be32(20)};
}

PlotRequest request(const std::string& kind, const std::string& title = "", int64_t width = 640, int64_t height = 480) {
  PlotRequest r;
  r.kind = kind;
  r.title = title;
  r.width = width;
  r.height = height;
  return r;
}

void expect_valid_png(const std::string& png, int64_t width, int64_t height) {
  ASSERT_TRUE(has_png_signature(png));
  const auto [w, h] = ihdr_size(png);
  EXPECT_EQ(w, width);
  EXPECT_EQ(h, height);
  const auto decoded = decode(png);
  EXPECT_EQ(decoded.width, width);
  EXPECT_EQ(decoded.height, height);
}

/// Writes `png` to <temp dir>/codefy_plots/<name>.png for a person to look at.
void keep(const std::string& name, const std::string& png) {
  const auto dir = std::filesystem::temp_directory_path() / "codefy_plots";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / (name + ".png"), std::ios::binary) << png;
}

/// How many pixels are not white: something was drawn.
int64_t inked_pixels(const Decoded& d) {
  int64_t n = 0;
  for (size_t i = 0; i < d.rgb.size(); i += 3) {
    if (d.rgb[i] != 255 || d.rgb[i + 1] != 255 || d.rgb[i + 2] != 255) ++n;
  }
  return n;
}

TEST(RenderPng, LineIsAPngOfTheRequestedSize) {
  const auto y = torch::sin(torch::linspace(0, 6.28, 200));
  const auto png = render_png(y, request("line", "sin(x), one period"));
  expect_valid_png(png, 640, 480);
  EXPECT_GT(inked_pixels(decode(png)), 1000);
  keep("line", png);
}

TEST(RenderPng, HistogramIsAPngOfTheRequestedSize) {
  torch::manual_seed(0);
  auto req = request("histogram", "Normal samples", 800, 600);
  req.bins = 40;
  const auto png = render_png(torch::randn({2, 5000}), req);
  expect_valid_png(png, 800, 600);
  keep("histogram", png);
}

TEST(RenderPng, HeatmapIsAPngOfTheRequestedSize) {
  const auto grid = torch::arange(0, 48, torch::kFloat).reshape({6, 8}).sin();
  const auto png = render_png(grid, request("heatmap", "sin(i), 6 x 8"));
  expect_valid_png(png, 640, 480);
  keep("heatmap", png);
}

TEST(RenderPng, ImageIsAPngOfTheRequestedSize) {
  const auto rgb = torch::stack({torch::linspace(0, 1, 32).repeat({32, 1}),
                                 torch::linspace(0, 1, 32).unsqueeze(1).repeat({1, 32}), torch::full({32, 32}, 0.5)});
  const auto png = render_png(rgb, request("image", "RGB gradient", 500, 400));
  expect_valid_png(png, 500, 400);
  keep("image", png);
}

TEST(RenderPng, ImageBatchTilesIntoAGrid) {
  torch::manual_seed(1);
  const auto png = render_png(torch::rand({10, 1, 12, 12}), request("image", "batch of 10"));
  expect_valid_png(png, 640, 480);
  keep("image_batch", png);
}

TEST(RenderPng, HeatmapFoldsOneDimensionalDataAndFlattensMore) {
  const auto square = render_png(torch::arange(10, torch::kFloat), request("heatmap", "1-D: 10 values"));
  expect_valid_png(square, 640, 480);
  keep("heatmap_1d", square);
  expect_valid_png(render_png(torch::rand({2, 3, 4}), request("heatmap")), 640, 480);
}

TEST(RenderPng, LargeHeatmapIsSubsampledQuickly) {
  const auto start = std::chrono::steady_clock::now();
  const auto png = render_png(torch::rand({2000, 1500}), request("heatmap", "2000 x 1500"));
  expect_valid_png(png, 640, 480);
  keep("heatmap_large", png);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(RenderPng, DifferentDataGivesDifferentBytes) {
  for (const std::string kind : {"line", "histogram", "heatmap", "image"}) {
    const auto a = render_png(torch::linspace(0, 1, 16).reshape({4, 4}), request(kind));
    const auto b = render_png(torch::linspace(1, 0, 16).reshape({4, 4}).pow(2), request(kind));
    EXPECT_NE(a, b) << kind;
  }
}

TEST(RenderPng, SameInputGivesSameBytes) {
  const auto x = torch::linspace(-1, 1, 50);
  EXPECT_EQ(render_png(x, request("line", "t")), render_png(x, request("line", "t")));
}

TEST(RenderPng, TitleIsDrawn) {
  const auto x = torch::linspace(0, 1, 5);
  EXPECT_NE(render_png(x, request("line", "")), render_png(x, request("line", "A title")));
  EXPECT_NE(render_png(x.reshape({1, 5}), request("image", "")),
            render_png(x.reshape({1, 5}), request("image", "A title")));
}

// Samples the centre of pixel (col,row) of an `n`-pixel-wide square picture that
// the image kind scaled into a canvas: it is drawn centred, as large as fits below
// the title band, so find its edges from the white border instead of assuming them.
struct Placement {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // inclusive bounds of non-white pixels
};

Placement inked_box(const Decoded& d) {
  Placement p{d.width, d.height, -1, -1};
  for (int y = 0; y < d.height; ++y) {
    for (int x = 0; x < d.width; ++x) {
      const auto* px = d.at(x, y);
      if (px[0] == 255 && px[1] == 255 && px[2] == 255) continue;
      p.x0 = std::min(p.x0, x);
      p.y0 = std::min(p.y0, y);
      p.x1 = std::max(p.x1, x);
      p.y1 = std::max(p.y1, y);
    }
  }
  return p;
}

TEST(RenderPng, ImagePixelsLandWhereTheTensorSays) {
  // 4x4 black with one white pixel at row 1, column 2; no title, so the picture is
  // the only ink. Its black area bounds the drawn square.
  auto img = torch::zeros({4, 4});
  img[1][2] = 1.0;
  const auto d = decode(render_png(img, request("image", "", 400, 400)));
  const Placement box = inked_box(d);
  ASSERT_GT(box.x1, box.x0);
  const double cell_w = (box.x1 - box.x0 + 1) / 4.0;
  const double cell_h = (box.y1 - box.y0 + 1) / 4.0;
  EXPECT_NEAR(cell_w, cell_h, 1.0);  // square pixels stay square
  auto sample = [&](int col, int row) {
    return d.at(static_cast<int>(box.x0 + (col + 0.5) * cell_w), static_cast<int>(box.y0 + (row + 0.5) * cell_h));
  };
  for (int row = 0; row < 4; ++row) {
    for (int col = 0; col < 4; ++col) {
      const auto* px = sample(col, row);
      const int expected = row == 1 && col == 2 ? 255 : 0;
      EXPECT_EQ(px[0], expected) << "row " << row << " col " << col;
      EXPECT_EQ(px[1], expected);
      EXPECT_EQ(px[2], expected);
    }
  }
  // The white pixel itself is not part of the inked box: pin the box to black corners.
  EXPECT_EQ(sample(0, 0)[0], 0);
  EXPECT_EQ(sample(3, 3)[0], 0);
}

TEST(RenderPng, ImageRgbChannelsAndShapes) {
  // [3,H,W], [H,W,3], [1,3,H,W] give the same picture: red left half, blue right.
  auto chw = torch::zeros({3, 2, 2});
  chw[0].select(1, 0).fill_(1.0);
  chw[2].select(1, 1).fill_(1.0);
  const auto a = render_png(chw, request("image"));
  EXPECT_EQ(a, render_png(chw.permute({1, 2, 0}).contiguous(), request("image")));
  EXPECT_EQ(a, render_png(chw.unsqueeze(0), request("image")));
  const auto d = decode(a);
  const Placement box = inked_box(d);
  const int mid_y = (box.y0 + box.y1) / 2;
  const auto* left = d.at(box.x0 + (box.x1 - box.x0) / 4, mid_y);
  const auto* right = d.at(box.x1 - (box.x1 - box.x0) / 4, mid_y);
  EXPECT_EQ(left[0], 255);
  EXPECT_EQ(left[2], 0);
  EXPECT_EQ(right[0], 0);
  EXPECT_EQ(right[2], 255);
  // uint8 data is 0..255.
  EXPECT_EQ(a, render_png(chw.mul(255).to(torch::kUInt8), request("image")));
}

TEST(RenderPng, ImageValuesAreClippedOrRescaled) {
  // [0,1] data as is; above 1 clipped; data with negatives (a [-1,1] normalised
  // image) mapped from min..max, so -1 is black and 1 white, not clipped.
  const auto png = render_png(torch::tensor({0.0, 0.5, 1.0}).reshape({1, 3}), request("image"));
  EXPECT_EQ(png, render_png(torch::tensor({0.0, 0.5, 3.0}).reshape({1, 3}), request("image")));
  EXPECT_EQ(png, render_png(torch::tensor({-1.0, 0.0, 1.0}).reshape({1, 3}), request("image")));
  EXPECT_EQ(png, render_png(torch::tensor({-3.0, -2.0, -1.0}).reshape({1, 3}), request("image")));
  EXPECT_NE(png, render_png(torch::tensor({0.0, 0.25, 1.0}).reshape({1, 3}), request("image")));
}

TEST(RenderPng, NonFiniteValuesDoNotCrash) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const auto mixed = torch::tensor({1.0, nan, 2.0, inf, 3.0, -inf, 2.5, 1.5, nan});
  const auto all_bad = torch::tensor({nan, inf, -inf, nan});
  for (const std::string kind : {"line", "histogram", "heatmap", "image"}) {
    const auto data = kind == "image" ? mixed.reshape({3, 3}) : mixed;
    const auto png = render_png(data, request(kind, kind + " with NaN/inf"));
    expect_valid_png(png, 640, 480);
    keep(kind + "_nonfinite", png);
    expect_valid_png(render_png(kind == "image" ? all_bad.reshape({2, 2}) : all_bad, request(kind)), 640, 480);
  }
}

TEST(RenderPng, DegenerateDataStillRenders) {
  for (const std::string kind : {"line", "histogram", "heatmap", "image"}) {
    const auto one = kind == "image" ? torch::ones({1, 1}) : torch::ones({1});
    expect_valid_png(render_png(one, request(kind)), 640, 480);
    expect_valid_png(render_png(torch::full({3, 3}, 7.0), request(kind)), 640, 480);
    expect_valid_png(render_png(torch::tensor({1e300, -1e300, 0.0}, torch::kDouble).reshape({1, 3}), request(kind)),
                     640, 480);
  }
  expect_valid_png(render_png(torch::tensor(3.5), request("line")), 640, 480);
  expect_valid_png(render_png(torch::tensor({true, false, true}), request("histogram")), 640, 480);
  const auto tiny = render_png(torch::arange(100, torch::kLong), request("line", "tiny", 64, 48));
  expect_valid_png(tiny, 64, 48);
  keep("line_tiny", tiny);
  const auto small = render_png(torch::rand({5, 7}), request("heatmap", "small", 240, 180));
  expect_valid_png(small, 240, 180);
  keep("heatmap_small", small);
}

TEST(RenderPng, TitleWithPlplotEscapesAndMarkup) {
  // '#' is PLplot's escape character and <, & are Pango markup: all must show as typed.
  const auto png = render_png(torch::ones({3}), request("line", "#1 <b>bold?</b> & 50% \"q\" ü"));
  expect_valid_png(png, 640, 480);
  keep("line_title_escapes", png);
}

TEST(RenderPng, EmptyTensorThrows) {
  for (const std::string kind : {"line", "histogram", "heatmap", "image"}) {
    try {
      render_png(torch::zeros({0}), request(kind));
      FAIL() << kind << " accepted an empty tensor";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos) << e.what();
    }
    EXPECT_THROW(render_png(torch::zeros({3, 0}), request(kind)), std::invalid_argument);
    EXPECT_THROW(render_png(torch::Tensor(), request(kind)), std::invalid_argument);
  }
}

TEST(RenderPng, BadRequestsThrow) {
  const auto x = torch::ones({4});
  EXPECT_THROW(render_png(x, request("pie")), std::invalid_argument);
  EXPECT_THROW(render_png(x, request("line", "", 0, 480)), std::invalid_argument);
  EXPECT_THROW(render_png(x, request("line", "", 640, 100000)), std::invalid_argument);
  auto bins = request("histogram");
  bins.bins = 0;
  EXPECT_THROW(render_png(x, bins), std::invalid_argument);
  EXPECT_THROW(render_png(torch::ones({5}), request("image")), std::invalid_argument);
  EXPECT_THROW(render_png(torch::ones({2, 5, 5}), request("image")), std::invalid_argument);
  EXPECT_THROW(render_png(torch::ones({1, 1, 1, 2, 2}), request("image")), std::invalid_argument);
  EXPECT_THROW(render_png(torch::ones({3}, torch::kComplexFloat), request("line")), std::invalid_argument);
}

TEST(RenderPng, ConcurrentRendersAgree) {
  const auto x = torch::sin(torch::linspace(0, 20, 300));
  const auto expected = render_png(x, request("line", "concurrent"));
  std::vector<std::string> results(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = render_png(x, request("line", "concurrent")); });
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) EXPECT_EQ(r, expected);
}

/// Pixels within `tolerance` of an RGB colour in every channel.
int64_t pixels_near(const Decoded& d, int r, int g, int b, int tolerance = 40) {
  int64_t n = 0;
  for (size_t i = 0; i < d.rgb.size(); i += 3) {
    if (std::abs(d.rgb[i] - r) <= tolerance && std::abs(d.rgb[i + 1] - g) <= tolerance &&
        std::abs(d.rgb[i + 2] - b) <= tolerance)
      ++n;
  }
  return n;
}

/// A falling loss over `epochs` epochs, ending near `floor`.
torch::Tensor loss_curve(int64_t epochs, double rate, double floor) {
  return 2.3 * torch::exp(-rate * torch::arange(1, epochs + 1, torch::kDouble)) + floor;
}

PlotRequest loss_request(const std::string& title) {
  PlotRequest r = request("line", title);
  r.x_axis = XAxis::kEpoch;
  r.y_label = "Loss";
  return r;
}

TEST(RenderLines, TrainingAndValidationLossSideBySide) {
  const auto train = loss_curve(12, 0.3, 0.1);
  const auto val = loss_curve(12, 0.22, 0.3);
  const auto png =
      render_lines_png({{"training loss", train}, {"validation loss", val}}, loss_request("Loss per epoch"));
  expect_valid_png(png, 640, 480);
  keep("loss_train_val", png);
  const auto d = decode(png);
  // Both series are drawn, each in its colour: matplotlib's blue, then orange.
  EXPECT_GT(pixels_near(d, 31, 119, 180), 300);
  EXPECT_GT(pixels_near(d, 255, 127, 14), 300);

  // One series: no second colour, no legend, the same picture as render_png draws.
  const auto alone = render_lines_png({{"training loss", train}}, loss_request("Loss per epoch"));
  EXPECT_EQ(pixels_near(decode(alone), 255, 127, 14), 0);
  EXPECT_EQ(alone, render_png(train, loss_request("Loss per epoch")));
  keep("loss_train", alone);
}

TEST(RenderLines, EpochAxisDiffersFromIndexAxis) {
  const auto train = loss_curve(2, 0.3, 0.1);
  auto index = request("line", "two epochs");
  EXPECT_NE(render_png(train, index), render_png(train, loss_request("two epochs")));
  keep("loss_two_epochs", render_png(train, loss_request("two epochs")));
}

TEST(RenderLines, SeriesOfDifferentLengthsAndGaps) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto png = render_lines_png({{"a", torch::tensor({1.0, 2.0, nan, 1.5, 1.0})}, {"b", torch::tensor({3.0, 2.0})}},
                                    request("line", "uneven"));
  expect_valid_png(png, 640, 480);
  keep("lines_uneven", png);
}

TEST(RenderLines, BadRequestsThrow) {
  EXPECT_THROW(render_lines_png({}, request("line")), std::invalid_argument);
  EXPECT_THROW(render_lines_png({{"a", torch::ones({3})}}, request("histogram")), std::invalid_argument);
  EXPECT_THROW(render_lines_png({{"a", torch::ones({3})}, {"b", torch::zeros({0})}}, request("line")),
               std::invalid_argument);
  EXPECT_THROW(render_lines_png({{"a", torch::ones({3})}}, request("line", "", 8, 8)), std::invalid_argument);
}

}  // namespace
}  // namespace codefy::plot
