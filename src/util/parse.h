// Numbers from text the user wrote: query strings, flags, environment
// variables, layer specs, params. One parser per kind, so they all accept the
// same things.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace codefy::util {

namespace detail {

/// All of `text` as a T by std::from_chars, with one optional sign; nullopt otherwise.
template <class T>
std::optional<T> parse_all(std::string_view text) {
  // from_chars rejects an explicit plus; strip one, but not in front of a second sign ("+-3").
  if (text.size() > 1 && text.front() == '+' && text[1] != '-') text.remove_prefix(1);
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace detail

/// `text` as a whole number ("12", "-3", "+7"); nullopt unless all of it is one.
inline std::optional<int64_t> parse_int(std::string_view text) { return detail::parse_all<int64_t>(text); }

/// `text` as a number ("0.9", "-1e-3", "+2", "inf"); nullopt unless all of it
/// is one, or when it is out of double's range.
inline std::optional<double> parse_double(std::string_view text) { return detail::parse_all<double>(text); }

/// The environment variable `name` as a whole number >= 0; nullopt when unset
/// or empty. Throws std::invalid_argument naming it ("must be <what>") otherwise.
inline std::optional<int64_t> env_count(const char* name, const std::string& what) {
  const char* env = std::getenv(name);
  if (!env || !*env) return std::nullopt;
  const auto v = parse_int(env);
  if (!v || *v < 0) throw std::invalid_argument(std::string(name) + " must be " + what + ", got \"" + env + "\"");
  return v;
}

}  // namespace codefy::util
