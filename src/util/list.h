// Comma-separated lists users type into params ("2, 3, 4", "king,man").
#pragma once

#include "util/parse.h"

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace codefy::util {

/// The parts of a comma-separated list, each trimmed of spaces and tabs; blank parts are left out.
inline std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    const auto b = part.find_first_not_of(" \t"), e = part.find_last_not_of(" \t");
    if (b != std::string::npos) parts.push_back(part.substr(b, e - b + 1));
  }
  return parts;
}

/// `text` as a comma-separated list of whole numbers (blank parts left out);
/// nullopt when a part is not one.
inline std::optional<std::vector<int64_t>> parse_int_list(const std::string& text) {
  std::vector<int64_t> values;
  for (const auto& part : split_list(text)) {
    const auto v = parse_int(part);
    if (!v) return std::nullopt;
    values.push_back(*v);
  }
  return values;
}

}  // namespace codefy::util
