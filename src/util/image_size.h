// An image's size read from its header, and the cap on what may be decoded:
// a PNG of a few kilobytes can declare 20000 x 20000 pixels, gigabytes once
// decoded, so the size is checked before any pixel buffer exists.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace codefy::util {

struct ImageSize {
  uint32_t width = 0, height = 0;
  int64_t pixels() const { return int64_t{width} * int64_t{height}; }
};

/// CodefyUI's default cap (CODEFYUI_MAX_IMAGE_PIXELS): 25 million pixels.
inline constexpr int64_t kDefaultMaxImagePixels = 25'000'000;

/// Width and height from a PNG's header (its signature, then the IHDR chunk),
/// or nullopt when `bytes` does not start as a PNG does.
std::optional<ImageSize> png_size(std::string_view bytes);

/// The same from base64 text (an optional `data:...;base64,` prefix is
/// skipped); only the first few dozen characters are decoded.
std::optional<ImageSize> png_size_base64(std::string_view text);

/// The most pixels one image may have to be decoded: CODEFYUI_MAX_IMAGE_PIXELS
/// when set, else kDefaultMaxImagePixels. Throws std::invalid_argument naming
/// the variable when it is set to anything but a whole number >= 1.
int64_t max_image_pixels();

/// "" when an image of `size` may be decoded, else why not (names the size and the cap).
std::string image_too_large(const ImageSize& size);

}  // namespace codefy::util
