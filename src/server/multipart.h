// multipart/form-data parsing, of a body in memory or spooled to a file (an
// upload is never held whole in memory): where each part's data lies.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace codefy::server {

/// One part of a multipart/form-data body: where its data lies in the body.
struct FormPart {
  std::string name;
  std::string filename;  ///< empty when the part is not a file
  size_t offset = 0;
  size_t size = 0;
};

/// Parses a multipart/form-data body given its Content-Type header; throws
/// std::invalid_argument when it is not one.
std::vector<FormPart> parse_multipart(const std::string& content_type, std::string_view body);
/// The same over a body spooled to a file, read `chunk` bytes at a time.
std::vector<FormPart> parse_multipart_file(const std::string& content_type, const std::filesystem::path& body,
                                           size_t chunk = 1 << 20);

}  // namespace codefy::server
