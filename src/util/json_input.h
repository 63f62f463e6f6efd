// JSON from outside (HTTP bodies, WebSocket messages, graph files, layer
// specs, file headers) parsed with limits: nesting deeper than a graph ever
// needs is refused before anything is built (a 200 KB body of 100k nested
// brackets would otherwise build a document whose copy and destruction
// recurse past the stack), and a number out of range is bad input like any
// other malformed JSON.
#pragma once

#include "util/errors.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace codefy::util {

/// Deepest nesting of arrays and objects accepted: far above any graph,
/// layer spec or weight-file header (they need under 10).
inline constexpr int kMaxJsonDepth = 128;

/// JSON input refused: not JSON, nested too deeply, or a number out of range.
class JsonInputError : public InputError {
 public:
  using InputError::InputError;
};

/// How deeply `text` nests arrays and objects (brackets inside strings do not
/// count); stops counting once past `limit` and returns limit + 1.
int json_depth(std::string_view text, int limit = kMaxJsonDepth);

/// Throws JsonInputError when `text` nests deeper than `max_depth`.
void check_json_depth(std::string_view text, int max_depth = kMaxJsonDepth);

/// A field of a message from outside that has the wrong type: its message
/// names the field, the type the protocol gives it and what came instead.
class JsonFieldError : public JsonInputError {
 public:
  JsonFieldError(std::string field, const std::string& message) : JsonInputError(message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

/// A JSON value as a person would read it in an error message ("the text
/// \"3\"", "the list [1,2]"), shortened past 40 characters.
std::string describe_json(const nlohmann::json& v);

/// Typed reads of an optional field of a JSON object from outside (a request
/// body, a WebSocket message). Absent or null: std::nullopt. Present with
/// another type: JsonFieldError ("\"device\" must be text, got 5"). A
/// non-object `object` has no fields. nlohmann's own `value()` throws its
/// type_error for a wrong type, which nothing above expects from bad input.
std::optional<std::string> string_field(const nlohmann::json& object, const std::string& key);
std::optional<bool> bool_field(const nlohmann::json& object, const std::string& key);
/// A whole number from 0 to 2^64 - 1 (a seed); a decimal or negative number is refused.
std::optional<uint64_t> uint_field(const nlohmann::json& object, const std::string& key);
/// A finite number (integer or decimal).
std::optional<double> number_field(const nlohmann::json& object, const std::string& key);

/// `text` parsed; throws JsonInputError (with nlohmann's position, without its
/// "[json.exception...]" prefix) for anything that is not acceptable JSON.
nlohmann::json parse_json(std::string_view text, int max_depth = kMaxJsonDepth);

}  // namespace codefy::util
