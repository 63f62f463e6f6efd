// Small string helpers shared by every layer.
#pragma once

#include <string>
#include <vector>

namespace codefy::util {

/// Up to the first newline (all of `text` when there is none).
std::string first_line(const std::string& text);
/// ASCII lower case.
std::string lower(std::string text);
/// `items` separated by `separator`.
std::string join(const std::vector<std::string>& items, const std::string& separator);

/// Standard base64 (RFC 4648, with padding) of bytes.
std::string base64_encode(const std::string& bytes);
/// The bytes of standard base64 text; whitespace is skipped, decoding stops at
/// the first '=' or character outside the alphabet.
std::string base64_decode(const std::string& text);

}  // namespace codefy::util
