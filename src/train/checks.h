// Small helpers the option builders (builders.cpp, schedulers.cpp) share for
// their error messages.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace codefy::train::detail {

/// Throws std::invalid_argument(message) unless `ok`.
inline void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument(message);
}

/// A number as a message shows it (shortest form: 0.1, 1e-05).
inline std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace codefy::train::detail
