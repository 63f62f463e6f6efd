#include "util/image_size.h"

#include "util/parse.h"
#include "util/text.h"

#include <stdexcept>

namespace codefy::util {

namespace {

uint32_t big_endian32(std::string_view b, size_t at) {
  return uint32_t{static_cast<unsigned char>(b[at])} << 24 | uint32_t{static_cast<unsigned char>(b[at + 1])} << 16 |
         uint32_t{static_cast<unsigned char>(b[at + 2])} << 8 | uint32_t{static_cast<unsigned char>(b[at + 3])};
}

std::string with_commas(int64_t v) {
  std::string digits = std::to_string(v);
  for (int at = static_cast<int>(digits.size()) - 3; at > 0; at -= 3) digits.insert(static_cast<size_t>(at), ",");
  return digits;
}

}  // namespace

std::optional<ImageSize> png_size(std::string_view bytes) {
  // 8 signature bytes, then IHDR: length (4), "IHDR", width (4), height (4).
  static constexpr std::string_view kSignature("\x89PNG\r\n\x1a\n", 8);
  if (bytes.size() < 24 || bytes.substr(0, 8) != kSignature || bytes.substr(12, 4) != "IHDR") return std::nullopt;
  return ImageSize{big_endian32(bytes, 16), big_endian32(bytes, 20)};
}

std::optional<ImageSize> png_size_base64(std::string_view text) {
  if (text.rfind("data:", 0) == 0) {
    const size_t comma = text.find(',');
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  std::string head;  // 24 bytes of header are in the first 32 characters (whitespace aside)
  for (const char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    head += c;
    if (head.size() == 40) break;
  }
  return png_size(base64_decode(head));
}

int64_t max_image_pixels() {
  const std::optional<int64_t> n = env_count("CODEFYUI_MAX_IMAGE_PIXELS", "a whole number of pixels >= 1");
  if (n && *n < 1)
    throw std::invalid_argument("CODEFYUI_MAX_IMAGE_PIXELS must be a whole number of pixels >= 1, got 0");
  return n.value_or(kDefaultMaxImagePixels);
}

std::string image_too_large(const ImageSize& size) {
  const int64_t cap = max_image_pixels();
  if (size.pixels() <= cap) return "";
  return "the image is " + std::to_string(size.width) + " x " + std::to_string(size.height) + " = " +
         with_commas(size.pixels()) + " pixels; at most " + with_commas(cap) +
         " are decoded (CODEFYUI_MAX_IMAGE_PIXELS)";
}

}  // namespace codefy::util
