// JSON from outside (HTTP bodies, WebSocket messages, graph files, layer
// specs, file headers) parsed with limits: nesting deeper than a graph ever
// needs is refused before anything is built (a 200 KB body of 100k nested
// brackets would otherwise build a document whose copy and destruction
// recurse past the stack), and a number out of range is bad input like any
// other malformed JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <string_view>

namespace codefy::util {

/// Deepest nesting of arrays and objects accepted: far above any graph,
/// layer spec or weight-file header (they need under 10).
inline constexpr int kMaxJsonDepth = 128;

/// JSON input refused: not JSON, nested too deeply, or a number out of range.
/// An invalid_argument, so every caller's "bad input" handling answers it.
class JsonInputError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// How deeply `text` nests arrays and objects (brackets inside strings do not
/// count); stops counting once past `limit` and returns limit + 1.
int json_depth(std::string_view text, int limit = kMaxJsonDepth);

/// Throws JsonInputError when `text` nests deeper than `max_depth`.
void check_json_depth(std::string_view text, int max_depth = kMaxJsonDepth);

/// `text` parsed; throws JsonInputError (with nlohmann's position, without its
/// "[json.exception...]" prefix) for anything that is not acceptable JSON.
nlohmann::json parse_json(std::string_view text, int max_depth = kMaxJsonDepth);

}  // namespace codefy::util
