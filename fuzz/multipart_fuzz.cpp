// An upload's multipart/form-data body (POST /api/models/upload). Input:
// one byte for the file reader's chunk size (1 to 64, so boundaries fall
// across chunks), the Content-Type header up to the first newline, then the
// body. The body is parsed in memory and from a file; both must agree, part
// for part, or refuse alike with std::invalid_argument, and every part must
// lie inside the body.
#include "fuzz/fuzz_targets.h"
#include "server/multipart.h"

#include <optional>
#include <stdexcept>

namespace codefy::fuzz {

namespace {

std::string describe(const std::optional<std::vector<server::FormPart>>& parts, const std::string& error) {
  if (!parts) return "refused: " + error;
  std::string s = std::to_string(parts->size()) + " parts:";
  for (const auto& p : *parts)
    s += " [" + p.name + "|" + p.filename + "|" + std::to_string(p.offset) + "+" + std::to_string(p.size) + "]";
  return s;
}

}  // namespace

void multipart(std::string_view data) {
  if (data.empty()) return;
  const size_t chunk = static_cast<unsigned char>(data[0]) % 64 + 1;
  data.remove_prefix(1);
  const size_t newline = data.find('\n');
  if (newline == std::string_view::npos) return;
  const std::string content_type(data.substr(0, newline));
  const std::string_view body = data.substr(newline + 1);

  std::optional<std::vector<server::FormPart>> in_memory, from_file;
  std::string memory_error, file_error;
  try {
    in_memory = server::parse_multipart(content_type, body);
  } catch (const std::invalid_argument& e) {
    memory_error = e.what();
  }
  try {
    from_file = server::parse_multipart_file(content_type, file_with(body), chunk);
  } catch (const std::invalid_argument& e) {
    file_error = e.what();
  }
  const auto same = [](const std::vector<server::FormPart>& a, const std::vector<server::FormPart>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].name != b[i].name || a[i].filename != b[i].filename || a[i].offset != b[i].offset ||
          a[i].size != b[i].size)
        return false;
    return true;
  };
  check(in_memory.has_value() == from_file.has_value() && memory_error == file_error &&
            (!in_memory || same(*in_memory, *from_file)),
        "multipart in memory and from a file (chunk " + std::to_string(chunk) +
            ") differ: " + describe(in_memory, memory_error) + " / " + describe(from_file, file_error));
  if (in_memory)
    for (const auto& p : *in_memory)
      check(p.offset <= body.size() && p.size <= body.size() - p.offset, "a part lies outside the body");
}

}  // namespace codefy::fuzz
