#include "util/json_input.h"

namespace codefy::util {

int json_depth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest && (deepest = depth) > limit) return limit + 1;
    } else if (c == ']' || c == '}') {
      --depth;  // unbalanced text is the parser's to report
    }
  }
  return deepest;
}

void check_json_depth(std::string_view text, int max_depth) {
  if (json_depth(text, max_depth) > max_depth)
    throw JsonInputError("JSON nested too deeply (more than " + std::to_string(max_depth) +
                         " levels of arrays and objects)");
}

namespace {

/// nlohmann's message without its "[json.exception.parse_error.101] " prefix.
std::string plain(const nlohmann::json::exception& e) {
  std::string s = e.what();
  if (s.rfind("[json.exception", 0) == 0)
    if (const size_t at = s.find("] "); at != std::string::npos) s = s.substr(at + 2);
  return s;
}

}  // namespace

nlohmann::json parse_json(std::string_view text, int max_depth) {
  check_json_depth(text, max_depth);
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    throw JsonInputError(plain(e));
  } catch (const nlohmann::json::out_of_range& e) {  // 1e400: "number overflow parsing '1e400'"
    throw JsonInputError(plain(e));
  }
}

}  // namespace codefy::util
