#include "util/json_input.h"

#include <cmath>

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

std::string describe_json(const nlohmann::json& v) {
  using nlohmann::json;
  std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return text;
    case json::value_t::string: return "the text " + text;
    case json::value_t::array: return "the list " + text;
    case json::value_t::object: return "the object " + text;
    case json::value_t::number_float: return "the decimal number " + text;
    default: return text;
  }
}

namespace {

/// The field's value, or nullptr when it is absent or null.
const nlohmann::json* present(const nlohmann::json& object, const std::string& key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

[[noreturn]] void wrong_type(const std::string& key, const char* expected, const nlohmann::json& got) {
  throw JsonFieldError(key, "\"" + key + "\" must be " + expected + ", got " + describe_json(got));
}

}  // namespace

std::optional<std::string> string_field(const nlohmann::json& object, const std::string& key) {
  const nlohmann::json* v = present(object, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) wrong_type(key, "text", *v);
  return v->get<std::string>();
}

std::optional<bool> bool_field(const nlohmann::json& object, const std::string& key) {
  const nlohmann::json* v = present(object, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong_type(key, "true or false", *v);
  return v->get<bool>();
}

std::optional<uint64_t> uint_field(const nlohmann::json& object, const std::string& key) {
  const nlohmann::json* v = present(object, key);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned()) return v->get<uint64_t>();
  wrong_type(key, "a whole number from 0 to 18446744073709551615", *v);
}

std::optional<double> number_field(const nlohmann::json& object, const std::string& key) {
  const nlohmann::json* v = present(object, key);
  if (!v) return std::nullopt;
  if (v->is_number() && std::isfinite(v->get<double>())) return v->get<double>();
  wrong_type(key, "a number", *v);
}

}  // namespace codefy::util
